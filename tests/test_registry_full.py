"""The ``--full`` sample set (its ~480 MiB of cuBLAS DLLs, a ~390 MB zip) published through nginx
with a 1 MiB body cap: only a chunked upload can get through, then ``verify oci://…`` pulls it back
(issue 11 done-when). Slow: it builds the large set; CI runs it (no marker is deselected)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_support import RELEASE, TAGS, ok, registry_namespace, run_nr
from registry_fixtures import LoopbackCA, Proxy, Registry, write_docker_config


@pytest.mark.slow
def test_full_sample_set_through_a_1mib_body_cap(
    capped_proxy: Proxy,
    tls_registry: Registry,
    test_ca: LoopbackCA,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    lane = "rtx4090"
    staged = tmp_path / "staged"
    out = tmp_path / "out"
    ok(run_nr("samples", "fetch", "--full", "--native-only", "--out", staged, timeout=1800))
    ok(
        run_nr(
            "build",
            "lane",
            lane,
            "--release",
            RELEASE,
            "--inputs",
            staged,
            "--out",
            out,
            "--offline",
            timeout=1800,
        )
    )
    set_dir = out / lane
    zips = list(set_dir.glob("*.zip"))
    assert len(zips) == 1 and zips[0].stat().st_size > 300 * 1024 * 1024  # really the large set
    env = {
        "DOCKER_CONFIG": str(write_docker_config(tmp_path / "docker", [capped_proxy.host])),
        "SSL_CERT_FILE": str(test_ca.ca),
        # No chunk size given: the default (1 GiB, one streamed PATCH where nothing caps bodies)
        # is refused (413) and the client halves it until a chunk passes the 1 MiB cap.
    }
    to = f"oci://{capped_proxy.host}/{registry_namespace(tmp_path_factory, 'full')}/{lane}"
    published = run_nr("--json", "publish", set_dir, "--to", to, "--draft", env=env, timeout=1800)
    assert published.returncode == 0, published.stderr
    verified = run_nr("verify", f"{to}:{TAGS[lane]}.draft", env=env, timeout=1800)
    assert verified.returncode == 0, verified.stderr
    assert ": OK" in verified.stdout
