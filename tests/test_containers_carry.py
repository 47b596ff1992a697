"""Registry access: references pinned by digest, base images from a registry, and carry by digest."""

from __future__ import annotations

import dataclasses
import http.server
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import RunCli, need_tool
from containers_support import RECIPE, RELEASE_EPOCH, REPO, Samples, make_samples, request_for
from ninfer_release.containers import (
    ImageBuildResult,
    build_image,
    carry_image,
    load_recipe,
    parse_base,
    parse_reference,
)
from ninfer_release.errors import ExitCode, InputError, IntegrityError
from ninfer_release.manifests import CarriedImage, load_release

TAG = "v0.7.0-qwen38-5090-beta.2"
REAL_MANIFEST = REPO / "manifests" / "v0.13.1.yaml"


# --- references ------------------------------------------------------------------------------------


def test_reference_needs_a_digest() -> None:
    with pytest.raises(InputError, match="not pinned by digest") as info:
        parse_reference("ghcr.io/alphastorm/ninfer-runtime:v0.7.0")
    assert info.value.exit_code == ExitCode.INPUT
    with pytest.raises(InputError, match="sha256:<64 hex>"):
        parse_reference("ghcr.io/alphastorm/ninfer-runtime@sha256:5d10a998")


def test_reference_forms() -> None:
    d = "sha256:" + "a" * 64
    r = parse_reference(f"ghcr.io/alphastorm/ninfer-runtime:{TAG}@{d}")
    assert (r.registry, r.repository, r.tag, r.digest) == ("ghcr.io", "alphastorm/ninfer-runtime", TAG, d)
    r = parse_reference(f"127.0.0.1:5000/a/b@{d}")
    assert (r.registry, r.repository, r.tag) == ("127.0.0.1:5000", "a/b", None)
    assert parse_reference(f"debian@{d}").repository == "library/debian"
    assert str(r.on("10.0.0.1:1")) == f"10.0.0.1:1/a/b@{d}"


def test_parse_base_layout_and_ref(tmp_path: Path) -> None:
    (tmp_path / "oci-layout").write_text("{}")
    assert parse_base(str(tmp_path)).layout == tmp_path
    loc = parse_base(f"{tmp_path}:busybox-static")
    assert (loc.layout, loc.ref) == (tmp_path, "busybox-static")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InputError, match="not an OCI image layout"):
        parse_base(str(plain))


# --- with a real registry ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Samples:
    return make_samples(tmp_path_factory.mktemp("samples"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, samples: Samples) -> ImageBuildResult:
    out = tmp_path_factory.mktemp("built") / "o"
    return build_image(
        request_for(
            load_recipe(RECIPE),
            inputs=samples.inputs,
            base=str(samples.base),
            out=out,
            epoch=RELEASE_EPOCH,
            rendered=samples.rendered,
        )
    )


def _skopeo_copy(layout: Path, ref_name: str, dest: str) -> None:
    skopeo = need_tool("skopeo")
    subprocess.run(
        [skopeo, "copy", "--dest-tls-verify=false", f"oci:{layout}:{ref_name}", f"docker://{dest}"],
        capture_output=True,
        check=True,
    )


@pytest.fixture(scope="module")
def mirrored(registry: str, built: ImageBuildResult) -> ImageBuildResult:
    """The built image copied (digest kept) to the local registry at the published repository path."""
    _skopeo_copy(built.layout, built.ref_name, f"{registry}/alphastorm/ninfer-runtime:{TAG}")
    return built


def _carried_for(result: ImageBuildResult, **over: str) -> CarriedImage:
    labels = result.labels
    values = {
        "path": Path("releases/v0.13.0/rtx5090.yaml"),
        "release": "v0.13.0",
        "lane": "rtx5090",
        "component_tag": TAG,
        "source": result.revision[:8],
        "server": labels["io.ninfer.binding.server.sha256"][:8],
        "archive": labels["io.ninfer.binding.archive.sha256"][:8],
        "image": f"ghcr.io/alphastorm/ninfer-runtime@{result.manifest_digest}",
        "base_image": result.base_digest.removeprefix("sha256:")[:8],
        "profile_id": "qwen38-5090-v0.13.0",
        "strict_origin_config": "751d22dc",
        "checkpoint_mount": "/checkpoints-v013",
        "model_sha256": "81f924d440c27261d820c19a9f8d45794c5aee410f8a68bd358133fa8c0375da",
    }
    values.update(over)
    return CarriedImage(**values)  # type: ignore[arg-type]


@pytest.mark.registry
def test_base_from_registry_reference_gives_the_same_image(
    tmp_path: Path, registry: str, samples: Samples, built: ImageBuildResult
) -> None:
    """A base pulled by digest from a registry (every blob verified) builds the same manifest digest."""
    _skopeo_copy(samples.base, "busybox-static", f"{registry}/sample/busybox-static:base")
    ref = f"{registry}/sample/busybox-static@{samples.base_digest}"
    result = build_image(
        request_for(load_recipe(RECIPE), inputs=samples.inputs, base=ref, out=tmp_path / "o",
                    epoch=RELEASE_EPOCH, rendered=samples.rendered)
    )  # fmt: skip
    assert result.manifest_digest == built.manifest_digest
    assert result.base_digest == samples.base_digest


@pytest.mark.registry
def test_carry_verifies_every_digest_against_a_mirror(registry: str, mirrored: ImageBuildResult) -> None:
    record = carry_image(_carried_for(mirrored), registry=registry)
    assert record.status == "verified" and record.verified
    assert record.verified_against == registry
    assert record.digest == mirrored.manifest_digest
    kinds = [c.kind for c in record.checked]
    assert kinds == ["manifest", "config", "layer", "layer", "layer", "layer"]
    assert [c.digest for c in record.checked if c.kind == "layer"] == [
        layer.digest for layer in mirrored.layers
    ]
    assert record.config_digest == mirrored.config_digest
    assert dict(record.label_checks) == {
        "server": "match", "archive": "match", "base_image": "match", "source": "match",
        "component_tag": "match", "profile_id": "match", "checkpoint_mount": "match",
    }  # fmt: skip
    doc = json.loads(record.as_bytes())
    assert doc["rebuilt"] is False and doc["mode"] == "carry"


@pytest.mark.registry
def test_carry_label_disagreeing_with_binding_is_integrity_failure(
    registry: str, mirrored: ImageBuildResult
) -> None:
    with pytest.raises(IntegrityError, match=r"io\.ninfer\.binding\.server\.sha256") as info:
        carry_image(_carried_for(mirrored, server="9790a004"), registry=registry)
    assert info.value.exit_code == ExitCode.INTEGRITY


@pytest.mark.registry
def test_carry_digest_not_in_registry_is_integrity_failure(registry: str, mirrored: ImageBuildResult) -> None:
    other = "sha256:" + "5d10a998a42ba927dd8bbe54d928128e0d97ec7bd55d8dec2846d8681f79a4cd"[::-1]
    carried = _carried_for(mirrored, image=f"ghcr.io/alphastorm/ninfer-runtime@{other}")
    with pytest.raises(IntegrityError, match="not found by digest"):
        carry_image(carried, registry=registry)


def test_carry_reference_without_digest_is_refused(built: ImageBuildResult) -> None:
    carried = _carried_for(built, image=f"ghcr.io/alphastorm/ninfer-runtime:{TAG}")
    with pytest.raises(InputError, match="not pinned by digest"):
        carry_image(carried, offline=True)


def test_carry_offline_records_unverified_without_network(built: ImageBuildResult) -> None:
    record = carry_image(_carried_for(built), registry=None, offline=True)
    assert record.status == "unverified" and not record.verified
    assert record.verified_against is None and record.checked == ()
    assert json.loads(record.as_bytes())["status"] == "unverified"


@pytest.fixture
def lying_registry(built: ImageBuildResult) -> Iterator[str]:
    """A registry that answers every manifest request with bytes of another image."""
    body = (built.layout / "index.json").read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        t.join(timeout=10)


def test_carry_digest_mismatch_is_refused(built: ImageBuildResult, lying_registry: str) -> None:
    """A registry serving bytes that do not hash to the digest: refused (exit 5)."""
    with pytest.raises(IntegrityError, match="content has digest") as info:
        carry_image(_carried_for(built), registry=lying_registry)
    assert info.value.exit_code == ExitCode.INTEGRITY


# --- CLI ---------------------------------------------------------------------------------------------


def test_cli_carry_offline_on_the_real_release(run_cli: RunCli) -> None:
    code, stdout, stderr = run_cli(
        "--json", "image", "carry", "rtx5090", "--release", str(REAL_MANIFEST), "--offline"
    )
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert doc["status"] == "unverified"
    assert doc["image"] == (
        "ghcr.io/alphastorm/ninfer-runtime@sha256:5d10a998a42ba927dd8bbe54d928128e0d97ec7bd55d8dec2846d8681f79a4cd"
    )
    assert (
        doc["bindings"]["server"] == "9790a004" and doc["bindings"]["checkpoint_mount"] == "/checkpoints-v013"
    )


def test_cli_carry_refuses_a_built_lane(run_cli: RunCli) -> None:
    code, _, stderr = run_cli("image", "carry", "rtx4090", "--release", str(REAL_MANIFEST), "--offline")
    assert code == ExitCode.INPUT
    assert "only a carried lane can be carried" in stderr


@pytest.mark.registry
def test_cli_carry_real_digest_absent_from_mirror_is_exit_5(registry: str, run_cli: RunCli) -> None:
    code, _, stderr = run_cli(
        "image", "carry", "rtx5090", "--release", str(REAL_MANIFEST), "--registry", registry
    )
    assert code == ExitCode.INTEGRITY
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "5d10a998" in errors[0]


@pytest.mark.registry
def test_cli_carry_verified_against_mirror(
    tmp_path: Path, registry: str, mirrored: ImageBuildResult, run_cli: RunCli
) -> None:
    """A release whose carried record names our mirrored image verifies, and the record is written."""
    root = tmp_path / "repo"
    for d in ("manifests", "profiles", "releases", "packaging", "containers"):
        if (REPO / d).is_dir():
            shutil.copytree(REPO / d, root / d)
    c = _carried_for(mirrored)
    record = root / "releases" / "v0.13.0" / "rtx5090.yaml"
    text = record.read_text()
    for key, value in (("source", c.source), ("server", c.server), ("archive", c.archive), ("image", c.image),
                       ("base_image", c.base_image)):  # fmt: skip
        text = (
            "\n".join(
                f'{key}: "{value}"' if line.startswith(f"{key}:") else line for line in text.splitlines()
            )
            + "\n"
        )
    record.write_text(text)
    manifest = root / "manifests" / "v0.13.1.yaml"
    manifest.write_text(
        manifest.read_text().replace("source_commit: 6d4d0a05", f'source_commit: "{c.source}"')
    )
    assert load_release(manifest, env={}).lanes["rtx5090"].carried is not None
    out = tmp_path / "carry.json"
    code, stdout, stderr = run_cli(
        "--json",
        "image",
        "carry",
        "rtx5090",
        "--release",
        str(manifest),
        "--registry",
        registry,
        "--out",
        str(out),
    )
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert doc["status"] == "verified" and doc["digest"] == mirrored.manifest_digest
    assert json.loads(out.read_bytes())["checked"] == doc["checked"]
    assert dataclasses.asdict(c)["server"] == doc["bindings"]["server"]


@pytest.mark.registry
def test_base_with_docker_schema2_media_types_from_registry(
    tmp_path: Path, registry: str, samples: Samples
) -> None:
    """A base stored as docker schema 2 (as docker push writes it) is read by digest; our image is OCI."""
    skopeo = need_tool("skopeo")
    dest = f"{registry}/sample/busybox-v2s2:base"
    subprocess.run(
        [skopeo, "copy", "--dest-tls-verify=false", "--format", "v2s2", f"oci:{samples.base}:busybox-static",
         f"docker://{dest}"],
        capture_output=True, check=True,
    )  # fmt: skip
    raw = subprocess.run(
        [skopeo, "inspect", "--tls-verify=false", "--raw", f"docker://{dest}"],
        capture_output=True,
        check=True,
    ).stdout
    assert json.loads(raw)["mediaType"] == "application/vnd.docker.distribution.manifest.v2+json"
    import hashlib

    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    from containers_support import parse, small_recipe

    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "engine.cfg").write_bytes(b"x = 1\n")
    base = f"{registry}/sample/busybox-v2s2@{digest}"
    result = build_image(
        request_for(
            parse(small_recipe(digest)), inputs=inputs, base=base, out=tmp_path / "o", epoch=RELEASE_EPOCH
        )
    )
    manifest = json.loads((result.layout / "blobs/sha256" / result.manifest_digest[7:]).read_bytes())
    assert {layer["mediaType"] for layer in manifest["layers"]} == {
        "application/vnd.oci.image.layer.v1.tar+gzip"
    }
    assert result.base_digest == digest
    umoci = need_tool("umoci")
    subprocess.run([umoci, "unpack", "--image", f"{result.layout}:{result.ref_name}", str(tmp_path / "b")],
                   capture_output=True, check=True)  # fmt: skip
    assert (tmp_path / "b/rootfs/opt/engine/engine.cfg").read_bytes() == b"x = 1\n"


@pytest.mark.registry
def test_carry_of_an_index_verifies_every_child(registry: str, mirrored: ImageBuildResult) -> None:
    """An image index: the index, each child manifest, their configs and layers are all checked."""
    import hashlib
    import urllib.request

    child = json.loads((mirrored.layout / "index.json").read_bytes())["manifests"][0]
    child = {k: v for k, v in child.items() if k != "annotations"}
    child["platform"] = {"os": "linux", "architecture": "amd64"}
    index = json.dumps(
        {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [child]},
        separators=(",", ":"),
    ).encode()
    req = urllib.request.Request(
        f"http://{registry}/v2/alphastorm/ninfer-runtime/manifests/index-test",
        data=index,
        method="PUT",
        headers={"Content-Type": "application/vnd.oci.image.index.v1+json"},
    )
    with urllib.request.urlopen(req) as resp:  # noqa: S310
        assert resp.status == 201
    digest = "sha256:" + hashlib.sha256(index).hexdigest()
    carried = _carried_for(mirrored, image=f"ghcr.io/alphastorm/ninfer-runtime@{digest}")
    record = carry_image(carried, registry=registry)
    assert record.verified
    assert [c.kind for c in record.checked][:3] == ["index", "manifest", "config"]
    assert record.checked[1].digest == mirrored.manifest_digest
    assert record.config_digest == mirrored.config_digest


def test_carry_registry_unreachable_is_backend_error(built: ImageBuildResult) -> None:
    import socket

    from ninfer_release.errors import BackendError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(
        BackendError, match=r"registry 127\.0\.0\.1:\d+ unreachable: Connection refused"
    ) as info:
        carry_image(_carried_for(built), registry=f"127.0.0.1:{port}", timeout=5)
    assert info.value.exit_code == ExitCode.BACKEND


def test_cli_carry_offline_and_registry_exclude_each_other(run_cli: RunCli) -> None:
    code, _, stderr = run_cli(
        "image", "carry", "rtx5090", "--release", str(REAL_MANIFEST), "--offline", "--registry", "127.0.0.1:1"
    )
    assert code == ExitCode.USAGE
    assert "exclude each other" in stderr


def test_read_build_result_checks_the_archive(tmp_path: Path, built: ImageBuildResult) -> None:
    from ninfer_release.containers import read_build_result

    out = tmp_path / "copy"
    shutil.copytree(built.out, out)
    again = read_build_result(out)
    assert again.manifest_digest == built.manifest_digest
    assert again.layers == built.layers and again.bound_inputs == built.bound_inputs
    with (out / "image.tar").open("ab") as f:
        f.write(b"\0" * 512)
    with pytest.raises(IntegrityError, match="record says"):
        read_build_result(out)
