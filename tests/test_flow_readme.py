"""The README's "Release engineer's flow" and "Installer consumer's flow" run exactly as written.

Each ```sh title="…" block is run line by line in a fresh directory (``manifests`` linked to the
repo's): ``ninfer-release`` lines through the CLI's ``main`` in-process (``$VARS`` expanded, shell
quoting honoured), every other line through ``bash``. The test plays the hardware runs: between the
draft and seal blocks it writes the receipts the README describes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from flow_support import REPO, TAGS, Result, cli, draft_receipt, link_project, registry_namespace
from registry_fixtures import PASSWORD, LoopbackCA, Registry, TokenRegistry, write_docker_config

README = REPO / "README.md"
BLOCK = re.compile(r'^```sh title="([^"]+)"\n(.*?)^```$', re.MULTILINE | re.DOTALL)


def _blocks() -> dict[str, list[str]]:
    text = README.read_text(encoding="utf-8")
    return {title: body.splitlines() for title, body in BLOCK.findall(text)}


def _run_line(line: str, cwd: Path, env: dict[str, str]) -> Result:
    if line.startswith("ninfer-release "):
        expanded = re.sub(r"\$(\w+)", lambda m: env[m.group(1)], line)
        return cli(*shlex.split(expanded)[1:], env=env)
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", line],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    return Result(code=res.returncode, out=res.stdout, err=res.stderr)


def _run_block(lines: list[str], cwd: Path, env: dict[str, str]) -> list[Result]:
    results = []
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        res = _run_line(line, cwd, env)
        assert res.code == 0, f"{line}\n{res.text}"
        results.append(res)
    return results


def test_readme_has_the_two_flows() -> None:
    text = README.read_text(encoding="utf-8")
    assert "## Release engineer's flow" in text and "## Installer consumer's flow" in text
    assert list(_blocks()) == [
        "registry: local",
        "release: build",
        "release: draft",
        "release: receipts",
        "release: seal",
        "release: publish",
        "consumer: verify",
    ]


def test_readme_flows_run_as_written(
    registry: str,
    tls_registry: Registry,
    token_registry: TokenRegistry,
    test_ca: LoopbackCA,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """build -> drafts -> receipts -> seal -> publish -> consumer verify, every command exit 0;
    then the publishing and consumer blocks again, unchanged, against a TLS + htpasswd registry
    and a token-auth registry with the credentials only in ``DOCKER_CONFIG/config.json`` (the CA
    trusted through ``SSL_CERT_FILE``)."""
    blocks = _blocks()
    link_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    # $REGISTRY/omp-ninfer/<lane> lands in a repository namespace of this test's own.
    env = {"REGISTRY": f"{registry}/{registry_namespace(tmp_path_factory, 'readme')}"}

    _run_block(blocks["release: build"], tmp_path, env)
    drafts = _run_block(blocks["release: draft"], tmp_path, env)
    assert all(
        r.out.startswith(("published: ", "already_published: ")) and ".draft " in r.out for r in drafts
    )

    # The hardware runs: one receipt per lane from `receipt new`, naming the config and package
    # bytes of the draft (its SHA256SUMS lines for the .config.toml and the .zip).
    _run_block(blocks["release: receipts"], tmp_path, env)
    for lane in ("rtx4090", "rtx3090"):
        written = json.loads((tmp_path / "receipts" / lane / "run-1.json").read_bytes())
        expected = draft_receipt(tmp_path / "out" / lane)
        assert {k: written[k] for k in ("lane", "config_sha256", "package_sha256", "profile_id")} == {
            k: expected[k] for k in ("lane", "config_sha256", "package_sha256", "profile_id")
        }

    _run_block(blocks["release: seal"], tmp_path, env)
    sealed = json.loads((tmp_path / "sealed" / "release-manifest.json").read_bytes())
    assert {sealed["lanes"][lane]["qualification"] for lane in ("rtx4090", "rtx3090")} == {"qualified"}

    published = _run_block(blocks["release: publish"], tmp_path, env)
    assert [r.out.split(":", 1)[0] for r in published][2:] == ["published", "published"]
    # Publishing is idempotent for the same bytes.
    again = _run_block(blocks["release: publish"], tmp_path, env)
    assert [r.out.split(":", 1)[0] for r in again] == ["already_published"] * 4

    checked = _run_block(blocks["consumer: verify"], tmp_path, env)
    assert f"rtx4090:{TAGS['rtx4090']}: OK" in checked[0].out
    assert checked[2].out.count(": OK\n") == 10

    for host in (tls_registry.host, token_registry.host):
        config = write_docker_config(tmp_path / f"docker-{host.replace(':', '-')}", [host])
        logged_in = {
            "REGISTRY": f"{host}/{registry_namespace(tmp_path_factory, 'readme')}",
            "DOCKER_CONFIG": str(config),
            "SSL_CERT_FILE": str(test_ca.ca),
        }
        drafts = _run_block(blocks["release: draft"], tmp_path, logged_in)
        assert [r.out.split(":", 1)[0] for r in drafts] == ["published", "published"]
        published = _run_block(blocks["release: publish"], tmp_path, logged_in)
        assert [r.out.split(":", 1)[0] for r in published] == ["published", "published"] + [
            "already_published"
        ] * 2
        checked = _run_block(blocks["consumer: verify"], tmp_path, logged_in)
        assert f"rtx4090:{TAGS['rtx4090']}: OK" in checked[0].out
        for result in (*drafts, *published, *checked):
            assert PASSWORD not in result.text


def test_readme_registry_recipe_serves_a_registry(tmp_path: Path) -> None:
    """The "registry: local" block as written (version: 0.1 config, PID file), on a free port."""
    import socket
    import time
    import urllib.request

    from conftest import need_tool

    need_tool("docker-registry")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = "\n".join(_blocks()["registry: local"]).replace("127.0.0.1:5000", f"127.0.0.1:{port}")
    res = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    pid = int((tmp_path / "registry.pid").read_text())
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2) as answer:
                    assert answer.status == 200
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError((tmp_path / "registry.log").read_text()) from None
                time.sleep(0.2)
    finally:
        os.kill(pid, 15)
