"""Daemonless image build: determinism (C36), the docker-loadable archive (C37), bad inputs, records."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import need_tool
from containers_support import (
    C36_CREATED,
    C36_EPOCH,
    COMMIT,
    PROFILE,
    RECIPE,
    RELEASE_EPOCH,
    Samples,
    image_config_of,
    make_samples,
    parse,
    read_blob,
    request_for,
    small_recipe,
)
from ninfer_release.containers import (
    ImageBuildResult,
    build_image,
    image_sbom_records,
    load_recipe,
    make_sample_base_layout,
    plan_image,
    render_inputs,
)
from ninfer_release.errors import ExitCode, InputError, IntegrityError


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Samples:
    return make_samples(tmp_path_factory.mktemp("samples"))


@pytest.fixture(scope="module")
def c36_base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("c36")
    return root / "base", make_sample_base_layout(root / "base", epoch=C36_EPOCH)


def _build5090(
    samples: Samples, out: Path, *, inputs: Path | None = None, base: str | None = None
) -> ImageBuildResult:
    """Build the repo's 5090 recipe on the samples (overriding inputs / base)."""
    req = request_for(
        load_recipe(RECIPE),
        inputs=inputs or samples.inputs,
        base=base or str(samples.base),
        out=out,
        epoch=RELEASE_EPOCH,
        rendered=samples.rendered,
    )
    return build_image(req)


def _c36_build(tmp_path: Path, c36_base: tuple[Path, str], name: str) -> Path:
    base, digest = c36_base
    inputs = tmp_path / "inputs"
    inputs.mkdir(exist_ok=True)
    (inputs / "engine.cfg").write_bytes(b"[engine]\nport = 18082\n")
    recipe = parse(small_recipe(digest))
    out = tmp_path / name
    build_image(request_for(recipe, inputs=inputs, base=str(base), out=out, epoch=C36_EPOCH))
    return out


def test_c36_identical_digests_and_created_from_source_date_epoch(
    tmp_path: Path, c36_base: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """C36: two builds "on different days" give identical config/layer/manifest digests; created = epoch."""
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    a = _c36_build(tmp_path, c36_base, "a")
    monkeypatch.setattr(time, "time", lambda: 1_800_086_400.0 * 1.01)
    b = _c36_build(tmp_path, c36_base, "b")
    ma, ca, da = image_config_of(a / "layout")
    mb, _cb, db = image_config_of(b / "layout")
    assert da == db
    assert ma["config"]["digest"] == mb["config"]["digest"]
    assert [layer["digest"] for layer in ma["layers"]] == [layer["digest"] for layer in mb["layers"]]
    assert ca["created"] == C36_CREATED
    assert ca["history"] and all(h["created"] == C36_CREATED for h in ca["history"])
    assert ca["config"]["Labels"]["org.opencontainers.image.created"] == C36_CREATED
    assert (a / "image.tar").read_bytes() == (b / "image.tar").read_bytes()
    assert (a / "image.json").read_bytes() == (b / "image.json").read_bytes()


def test_c36_source_date_epoch_changes_created_only_through_the_epoch(
    tmp_path: Path, c36_base: tuple[Path, str]
) -> None:
    base, digest = c36_base
    recipe = parse(small_recipe(digest))
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "engine.cfg").write_bytes(b"x")
    plan = plan_image(
        request_for(recipe, inputs=inputs, base=str(base), out=tmp_path / "o", epoch=C36_EPOCH + 1)
    )
    assert plan.created == "2023-11-14T22:13:21Z"


def test_c37_archive_is_an_oci_layout_with_a_docker_manifest(tmp_path: Path, samples: Samples) -> None:
    """C37: oci-layout, index.json → the image manifest directly, blobs/sha256/, manifest.json with tags."""
    out = tmp_path / "o"
    result = _build5090(samples, out)
    with tarfile.open(out / "image.tar") as tar:
        names = tar.getnames()
        index = json.loads(tar.extractfile("index.json").read())  # type: ignore[union-attr]
        docker_manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        layout_marker = json.loads(tar.extractfile("oci-layout").read())  # type: ignore[union-attr]
        for m in tar.getmembers():
            assert (m.uid, m.gid, m.uname, m.gname, m.mtime) == (0, 0, "", "", RELEASE_EPOCH)
    assert layout_marker == {"imageLayoutVersion": "1.0.0"}
    assert {"oci-layout", "index.json", "manifest.json"} <= set(names)
    assert names == sorted(names, key=lambda n: n.split("/"))
    assert [d["mediaType"] for d in index["manifests"]] == ["application/vnd.oci.image.manifest.v1+json"]
    assert index["manifests"][0]["digest"] == result.manifest_digest
    assert (
        index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
        == "v0.7.0-qwen38-5090-beta.2"
    )
    [entry] = docker_manifest
    assert entry["Config"] == "blobs/sha256/" + result.config_digest.removeprefix("sha256:")
    assert entry["Layers"] == [
        "blobs/sha256/" + layer.digest.removeprefix("sha256:") for layer in result.layers
    ]
    assert entry["RepoTags"] == ["ghcr.io/alphastorm/ninfer-runtime:v0.7.0-qwen38-5090-beta.2"]
    assert set(entry["Layers"]) | {entry["Config"]} <= set(names)
    assert all(n.startswith("blobs/sha256/") for n in names if n.startswith("blobs/") and n.count("/") == 2)
    assert result.archive_sha256 == hashlib.sha256((out / "image.tar").read_bytes()).hexdigest()


def test_image_config_labels_ports_user_mount(tmp_path: Path, samples: Samples) -> None:
    """The 5090 image: OCI labels, semantic config digest, port 18082, non-root user, /checkpoints-v013."""
    out = tmp_path / "o"
    _build5090(samples, out)
    manifest, config, _ = image_config_of(out / "layout")
    labels = config["config"]["Labels"]
    assert labels["org.opencontainers.image.version"] == "v0.7.0-qwen38-5090-beta.2"
    assert labels["org.opencontainers.image.revision"] == COMMIT
    assert labels["org.opencontainers.image.source"] == "https://github.com/alphastorm/omp-ninfer"
    assert labels["org.opencontainers.image.created"] == "2026-11-20T00:00:00Z"
    rendered = render_inputs(PROFILE)
    assert labels["io.ninfer.config.semantic-sha256"] == rendered.config_semantic_sha256
    assert rendered.config_semantic_sha256 != rendered.config_bytes_sha256
    server = (samples.inputs / "bin" / "ninfer-server").read_bytes()
    assert labels["io.ninfer.binding.server.sha256"] == hashlib.sha256(server).hexdigest()
    assert config["config"]["ExposedPorts"] == {"18082/tcp": {}}
    assert config["config"]["User"] == "10001:10001"
    assert config["config"]["Volumes"] == {"/checkpoints-v013": {}}
    assert config["config"]["Entrypoint"] == ["/opt/ninfer/bin/ninfer-server"]
    assert manifest["annotations"]["org.opencontainers.image.base.digest"] == samples.base_digest
    _, base_cfg, _ = image_config_of(samples.base)
    assert (
        config["rootfs"]["diff_ids"][:1] == base_cfg["rootfs"]["diff_ids"]
    )  # the base's layer, carried as is
    assert len(config["rootfs"]["diff_ids"]) == len(manifest["layers"]) == 4
    assert config["history"][0] == base_cfg["history"][0]


def test_checkpoint_mount_is_owned_by_the_image_user_and_nothing_else_is(
    tmp_path: Path, samples: Samples
) -> None:
    """Issue 8 §4: ``/checkpoints-v013`` is 10001:10001 0755 in the layer (a volume mounted there
    copies that ownership, so the non-root engine can save checkpoints); every other entry of our
    layers stays uid/gid 0."""
    out = tmp_path / "o"
    _build5090(samples, out)
    manifest, _, _ = image_config_of(out / "layout")
    owners: dict[str, tuple[int, int, int]] = {}
    for layer in manifest["layers"][1:]:  # ours; the first is the base's
        blob = out / "layout" / "blobs" / "sha256" / layer["digest"].removeprefix("sha256:")
        with tarfile.open(blob, mode="r:gz") as tar:
            owners.update({m.name: (m.uid, m.gid, m.mode) for m in tar})
    assert owners.pop("checkpoints-v013") == (10001, 10001, 0o755)
    assert owners and {(uid, gid) for uid, gid, _ in owners.values()} == {(0, 0)}


def test_repo_recipe_pins_the_sample_base_made_with_the_release_epoch(samples: Samples) -> None:
    """The repo recipe's base pin is the sample busybox base (Debian 12 busybox-static, epoch 1795132800)."""
    assert load_recipe(RECIPE).base_digest == samples.base_digest, (
        "busybox-static changed: re-pin containers/qwen38-5090.yaml base.digest to the new sample base digest"
    )


def test_layout_is_accepted_by_skopeo_and_umoci(tmp_path: Path, samples: Samples) -> None:
    """Independent readers: skopeo inspects layout and archive with our digest; umoci unpacks the rootfs."""
    skopeo, umoci = need_tool("skopeo"), need_tool("umoci")
    out = tmp_path / "o"
    result = _build5090(samples, out)
    ref = result.ref_name
    for transport in (f"oci:{out / 'layout'}:{ref}", f"oci-archive:{out / 'image.tar'}"):
        info = json.loads(
            subprocess.run([skopeo, "inspect", transport], capture_output=True, check=True).stdout
        )
        assert info["Digest"] == result.manifest_digest
        assert info["Labels"]["org.opencontainers.image.version"] == "v0.7.0-qwen38-5090-beta.2"
    bundle = tmp_path / "bundle"
    subprocess.run([umoci, "unpack", "--image", f"{out / 'layout'}:{ref}", str(bundle)], capture_output=True,
                   check=True)  # fmt: skip
    rootfs = bundle / "rootfs"
    assert (rootfs / "etc/ninfer/config.toml").read_bytes() == samples.rendered.config
    assert (rootfs / "opt/ninfer/bin/ninfer-server").stat().st_mode & 0o777 == 0o755
    assert (rootfs / "opt/ninfer/runtime/share/ninfer/RUNTIME-VERSION").is_file()
    assert (rootfs / "opt/ninfer/runtime/lib/libninfer-runtime.so.0").is_symlink()
    assert (rootfs / "checkpoints-v013").is_dir()
    assert (rootfs / "bin/busybox").is_file()


def test_sbom_records_list_layers_files_and_components(tmp_path: Path, samples: Samples) -> None:
    result = _build5090(samples, tmp_path / "o")
    rec = image_sbom_records(result)
    assert rec.base_digest == samples.base_digest
    assert [layer.from_base for layer in rec.layers] == [True, False, False, False]
    assert rec.manifest_digest == result.manifest_digest
    kinds = {c.name: c for c in rec.components}
    assert set(kinds) == {"archive", "server", "engine-config", "profile"}
    assert kinds["engine-config"].semantic_sha256 == samples.rendered.config_semantic_sha256
    assert kinds["engine-config"].sha256 == hashlib.sha256(samples.rendered.config).hexdigest()
    paths = {f.path: f for f in rec.added_files}
    server = (samples.inputs / "bin/ninfer-server").read_bytes()
    assert paths["opt/ninfer/bin/ninfer-server"].sha256 == hashlib.sha256(server).hexdigest()
    assert paths["opt/ninfer/bin/ninfer-server"].sha1 == hashlib.sha1(server).hexdigest()  # noqa: S324
    assert "opt/ninfer/runtime/share/ninfer/RUNTIME-VERSION" in paths


# --- bad input: one-line errors, documented exit codes, nothing left behind ----------------------


def _assert_nothing_written(out: Path) -> None:
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]


def test_missing_staged_file_is_exit_4_and_leaves_nothing(tmp_path: Path, samples: Samples) -> None:
    inputs = tmp_path / "in"
    shutil.copytree(samples.inputs, inputs)
    (inputs / "bin" / "ninfer-server").unlink()
    out = tmp_path / "o"
    with pytest.raises(InputError) as info:
        _build5090(samples, out, inputs=inputs)
    assert info.value.exit_code == ExitCode.INPUT
    [problem] = info.value.problems
    assert problem.field == "layers[1].entries[0]" and "ninfer-server does not exist" in problem.message
    _assert_nothing_written(out)


def test_base_given_by_tag_only_is_refused(tmp_path: Path, samples: Samples) -> None:
    out = tmp_path / "o"
    with pytest.raises(InputError, match="not pinned by digest") as info:
        _build5090(samples, out, base="ghcr.io/alphastorm/base:latest")
    assert info.value.exit_code == ExitCode.INPUT
    _assert_nothing_written(out)


def test_base_with_other_digest_than_pinned_is_an_integrity_failure(tmp_path: Path, samples: Samples) -> None:
    other = tmp_path / "other-base"
    make_sample_base_layout(other, epoch=RELEASE_EPOCH + 1)
    out = tmp_path / "o"
    with pytest.raises(IntegrityError, match=r"base\.digest") as info:
        _build5090(samples, out, base=str(other))
    assert info.value.exit_code == ExitCode.INTEGRITY
    _assert_nothing_written(out)


def test_tampered_base_blob_is_an_integrity_failure(tmp_path: Path, samples: Samples) -> None:
    base = tmp_path / "base"
    shutil.copytree(samples.base, base)
    _, _config, digest = image_config_of(base)
    manifest = json.loads(read_blob(base, digest))
    layer = base / "blobs/sha256" / manifest["layers"][0]["digest"].removeprefix("sha256:")
    data = bytearray(layer.read_bytes())
    data[-20] ^= 0xFF
    layer.write_bytes(bytes(data))
    out = tmp_path / "o"
    with pytest.raises(IntegrityError, match="blob has digest") as info:
        _build5090(samples, out, base=str(base))
    assert info.value.exit_code == ExitCode.INTEGRITY
    _assert_nothing_written(out)


def test_archive_member_escaping_the_root_is_refused(tmp_path: Path, samples: Samples) -> None:
    inputs = tmp_path / "in"
    shutil.copytree(samples.inputs, inputs)
    evil = inputs / "runtime" / "ninfer-runtime.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../../etc/cron.d/evil")
        info.size = 1
        import io

        tar.addfile(info, io.BytesIO(b"x"))
    out = tmp_path / "o"
    with pytest.raises(InputError, match="escapes the image root") as err:
        _build5090(samples, out, inputs=inputs)
    assert err.value.exit_code == ExitCode.INPUT
    _assert_nothing_written(out)


def test_staged_symlink_leaving_the_inputs_is_refused(tmp_path: Path, samples: Samples) -> None:
    inputs = tmp_path / "in"
    shutil.copytree(samples.inputs, inputs)
    server = inputs / "bin" / "ninfer-server"
    server.unlink()
    server.symlink_to("/etc/passwd")
    with pytest.raises(InputError, match="resolves outside the inputs dir"):
        _build5090(samples, tmp_path / "o", inputs=inputs)


def test_short_revision_is_refused(tmp_path: Path, samples: Samples) -> None:
    import dataclasses

    req = request_for(
        load_recipe(RECIPE),
        inputs=samples.inputs,
        base=str(samples.base),
        out=tmp_path / "o",
        epoch=RELEASE_EPOCH,
        rendered=samples.rendered,
    )
    with pytest.raises(InputError, match="full 40-hex source commit"):
        build_image(dataclasses.replace(req, revision="6d4d0a05"))


def test_existing_out_dir_is_not_overwritten(tmp_path: Path, samples: Samples) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep").write_text("mine")
    with pytest.raises(InputError, match="already exists"):
        _build5090(samples, out)
    assert (out / "keep").read_text() == "mine"


# --- CLI ------------------------------------------------------------------------------------------


def test_cli_image_build_json(tmp_path: Path, samples: Samples, run_cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "o"
    code, stdout, stderr = run_cli(
        "--json", "image", "build", str(RECIPE), "--inputs", str(samples.inputs.parent), "--base",
        str(samples.base), "--out", str(out), "--source-date-epoch", str(RELEASE_EPOCH),
    )  # fmt: skip
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert doc["ok"] is True
    assert doc["reference"].startswith("ghcr.io/alphastorm/ninfer-runtime@sha256:")
    assert doc["engine_config"]["binding"] == "semantic"
    assert json.loads((out / "image.json").read_bytes())["manifest"]["digest"] == doc["manifest"]["digest"]


def test_cli_image_build_epoch_from_release_manifest(tmp_path: Path, samples: Samples, run_cli) -> None:  # type: ignore[no-untyped-def]
    """Without --source-date-epoch, the release manifest's epoch (SOURCE_DATE_EPOCH overriding) is used."""
    out = tmp_path / "o"
    code, _, stderr = run_cli(
        "image", "build", str(RECIPE), "--inputs", str(samples.inputs), "--base", str(samples.base),
        "--out", str(out), "--release", str(RECIPE.parent.parent / "manifests" / "v0.13.1.yaml"),
        env={"SOURCE_DATE_EPOCH": str(C36_EPOCH)},
    )  # fmt: skip
    assert code == 0, stderr
    _, config, _ = image_config_of(out / "layout")
    assert config["created"] == C36_CREATED


@pytest.mark.parametrize(
    ("base", "code", "needle"),
    [
        ("ghcr.io/alphastorm/base:latest", 4, "not pinned by digest"),
        ("/nonexistent/layout", 4, "no OCI image layout"),
    ],
)
def test_cli_bad_base_one_line_error(  # type: ignore[no-untyped-def]
    tmp_path: Path, samples: Samples, run_cli, base: str, code: int, needle: str
) -> None:
    out = tmp_path / "o"
    rc, _stdout, stderr = run_cli(
        "image", "build", str(RECIPE), "--inputs", str(samples.inputs), "--base", base, "--out", str(out),
        "--source-date-epoch", "1",
    )  # fmt: skip
    assert rc == code
    lines = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and needle in lines[0]
    assert "Traceback" not in stderr
    _assert_nothing_written(out)


def test_sample_layout_step_writes_base_and_inputs(tmp_path: Path) -> None:
    """The ``samples fetch`` hook lays out base-layout/ (pinned by the repo recipe) and rtx5090/."""
    from ninfer_release.containers import SAMPLE_EPOCH, sample_layout_step

    seen: list[str] = []

    class Steps:
        """A :class:`~ninfer_release.progress.Progress` keeping each step's message."""

        def step(self, message: str, total: int | None = None) -> None:
            seen.append(message)

        def advance(self, nbytes: int) -> None:
            return None

    class Ctx:
        progress = Steps()

    sample_layout_step(tmp_path, Ctx())
    assert SAMPLE_EPOCH == RELEASE_EPOCH
    _, _, digest = image_config_of(tmp_path / "base-layout")
    assert digest == load_recipe(RECIPE).base_digest
    assert (tmp_path / "rtx5090" / "bin" / "ninfer-server").stat().st_mode & 0o777 == 0o755
    assert json.loads((tmp_path / "rtx5090" / "build-info.json").read_bytes())["stand_in"] is True
    assert seen and digest in seen[0]


def _big_inputs(tmp_path: Path, samples: Samples) -> Path:
    """The sample inputs with a server and runtime members of several MiB (half random, half text),
    so the layers span many deflate blocks and their files are hashed on the helper thread."""
    import random

    def payload(size: int, seed: int) -> bytes:
        half = size // 2
        return random.Random(seed).randbytes(half)  # noqa: S311 - test filler + (b"runtime text\n" * size)[: size - half]

    inputs = tmp_path / "big-in"
    shutil.copytree(samples.inputs, inputs)
    (inputs / "bin" / "ninfer-server").write_bytes(b"#!/bin/sh\nexit 0\n" + payload(3 << 20, 1))
    with tarfile.open(inputs / "runtime" / "ninfer-runtime.tar.gz", "w:gz") as tar:
        for i in range(2):
            data = payload((2 << 20) + 1000 * i, 10 + i)
            info = tarfile.TarInfo(f"lib/libruntime-{i}.so")
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return inputs


def test_layer_digests_and_file_digests_are_those_of_the_bytes_written(
    tmp_path: Path, samples: Samples
) -> None:
    """The helper threads hash what is written: each layer blob on disk has the recorded digest,
    its inflated tar the recorded diff_id, each file the recorded digests; a corrupted layer blob
    then fails the digest check of any reader of the layout (here: copying it as a base blob)."""
    import gzip

    from ninfer_release.containers._oci import Descriptor, copy_layout_blob

    inputs = _big_inputs(tmp_path, samples)
    result = _build5090(samples, tmp_path / "o", inputs=inputs)
    own = [layer for layer in result.layers if not layer.from_base]
    assert {layer.name for layer in own} == {"runtime", "server", "config"}
    for layer in own:
        blob = read_blob(result.layout, layer.digest)
        assert "sha256:" + hashlib.sha256(blob).hexdigest() == layer.digest and len(blob) == layer.size
        tar_bytes = gzip.decompress(blob)
        assert "sha256:" + hashlib.sha256(tar_bytes).hexdigest() == layer.diff_id
        with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
            for f in layer.files:
                member = tar.extractfile(f.path)
                assert member is not None
                data = member.read()
                assert hashlib.sha256(data).hexdigest() == f.sha256
                assert hashlib.sha1(data, usedforsecurity=False).hexdigest() == f.sha1
    runtime = next(layer for layer in own if layer.name == "runtime")
    path = result.layout / "blobs" / "sha256" / runtime.digest.removeprefix("sha256:")
    corrupted = bytearray(path.read_bytes())
    corrupted[len(corrupted) // 2] ^= 0x01
    path.write_bytes(bytes(corrupted))
    (tmp_path / "copy" / "blobs" / "sha256").mkdir(parents=True)
    desc = Descriptor(media_type=runtime.media_type, digest=runtime.digest, size=runtime.size)
    with pytest.raises(IntegrityError, match="blob has digest"):
        copy_layout_blob(result.layout, tmp_path / "copy", desc, where="built image")


def test_layers_written_at_once_or_one_by_one_give_the_same_image(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninfer_release.containers import _build, _layers

    inputs = _big_inputs(tmp_path, samples)
    together = _build5090(samples, tmp_path / "a", inputs=inputs)
    monkeypatch.setattr(_build, "default_workers", lambda: 1)
    monkeypatch.setattr(_layers, "default_workers", lambda: 1)
    one_by_one = _build5090(samples, tmp_path / "b", inputs=inputs)
    assert one_by_one.manifest_digest == together.manifest_digest
    assert one_by_one.archive_sha256 == together.archive_sha256


@pytest.mark.parametrize("damage", ["truncated", "flipped", "not-gzip-not-tar"])
def test_damaged_runtime_archive_is_exit_4_and_leaves_nothing(
    tmp_path: Path, samples: Samples, damage: str
) -> None:
    inputs = _big_inputs(tmp_path, samples)
    archive = inputs / "runtime" / "ninfer-runtime.tar.gz"
    raw = bytearray(archive.read_bytes())
    if damage == "truncated":
        raw = raw[: len(raw) // 2]
    elif damage == "flipped":
        raw[len(raw) // 3 : len(raw) // 3 + 64] = b"\xff" * 64
    else:
        raw = bytearray(b"PK\x03\x04 not an archive" * 100)
    archive.write_bytes(bytes(raw))
    out = tmp_path / "o"
    with pytest.raises(InputError, match="not a readable tar archive") as err:
        _build5090(samples, out, inputs=inputs)
    assert err.value.exit_code == ExitCode.INPUT
    _assert_nothing_written(out)


def test_a_build_retains_freed_memory_before_its_layers(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The allocator tuning (``_layers.retain_freed_memory``) is asked for before any layer is written."""
    from ninfer_release.containers import _build

    events: list[str] = []
    write_one = _build._write_one_layer

    def retain() -> bool:
        events.append("retain")
        return True

    def layer(*args: Any) -> Any:
        events.append("layer")
        return write_one(*args)

    monkeypatch.setattr(_build, "retain_freed_memory", retain)
    monkeypatch.setattr(_build, "_write_one_layer", layer)
    _build5090(samples, tmp_path / "o")
    assert events[0] == "retain"
    assert events.count("retain") == 1
    assert events.count("layer") == 3


def test_a_builds_index_and_oci_layout_are_left_to_the_staged_directorys_flush(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside the staged output, ``index.json`` and ``oci-layout`` are written without a flush of
    their own (the staged directory flushes every file before it appears); the layout writer's
    default, which the directory store uses, still writes them atomically and flushed."""
    from ninfer_release import atomic
    from ninfer_release.containers import _layout

    flushed: list[str] = []
    real = atomic.write_bytes

    def write_bytes(path: Path, data: bytes, **kw: Any) -> None:
        flushed.append(path.name)
        real(path, data, **kw)

    monkeypatch.setattr(atomic, "write_bytes", write_bytes)
    built = _build5090(samples, tmp_path / "o")
    assert "index.json" not in flushed and "oci-layout" not in flushed
    index = json.loads((tmp_path / "o" / "layout" / "index.json").read_bytes())
    assert [m["digest"] for m in index["manifests"]] == [built.manifest_digest]
    assert (tmp_path / "o" / "layout" / "oci-layout").read_bytes() == _layout.LAYOUT_BYTES
    for name in ("index.json", "oci-layout"):
        assert (tmp_path / "o" / "layout" / name).stat().st_mode & 0o777 == 0o644
    store = tmp_path / "store"
    store.mkdir()
    _layout.write_index(store, _layout.empty_index())
    _layout.write_layout_file(store)
    assert flushed[-2:] == ["index.json", "oci-layout"]


def test_the_layouts_small_files_are_flushed_in_the_background_before_the_build_ends(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Config, manifest, ``index.json`` and ``oci-layout`` go to the background flusher with the
    blobs and ``image.tar``, so the staged directory's final flush finds them clean."""
    from ninfer_release import atomic
    from ninfer_release.containers import _build

    flushed: list[str] = []
    real = atomic.fsync_path

    def fsync_path(path: Path) -> None:
        flushed.append(path.name)
        real(path)

    monkeypatch.setattr(_build, "fsync_path", fsync_path)
    built = _build5090(samples, tmp_path / "o")
    small = {built.config_digest.removeprefix("sha256:"), built.manifest_digest.removeprefix("sha256:")}
    assert small | {"index.json", "oci-layout", "image.tar"} <= set(flushed)
    assert flushed[-1] == "image.tar"  # the archive last: it is written after them
    assert {layer.digest.removeprefix("sha256:") for layer in built.layers if not layer.from_base} <= set(
        flushed
    )


def test_the_sboms_are_written_while_image_tar_is_being_finished(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``build_image_with_sboms`` writes the SBOM files before it waits for ``image.tar``: the
    archive's helper thread here waits for them (it would wait in vain for a build that wrote
    them after the archive)."""
    import threading

    from ninfer_release import atomic, containers
    from ninfer_release.build import _image, build_image_with_sboms

    written = threading.Event()
    real_write, real_finish = atomic.write_bytes, containers.finish_image

    def write_bytes(path: Path, data: bytes, **kw: Any) -> None:
        real_write(path, data, **kw)
        if path.name == "sbom.spdx.json":
            written.set()

    def finish_image(laid: Any, **kw: Any) -> Any:
        assert written.wait(timeout=30), "the SBOMs were not written while image.tar was finished"
        return real_finish(laid, **kw)

    monkeypatch.setattr(_image, "write_bytes", write_bytes)
    monkeypatch.setattr(containers, "finish_image", finish_image)
    request = request_for(
        load_recipe(RECIPE), inputs=samples.inputs, base=str(samples.base), out=tmp_path / "o",
        epoch=RELEASE_EPOCH, rendered=samples.rendered,
    )  # fmt: skip
    build_image_with_sboms(request)
    assert (tmp_path / "o" / "sbom.spdx.json").is_file() and (tmp_path / "o" / "image.tar").is_file()


def test_no_helper_thread_outlives_a_build_or_a_failed_one(tmp_path: Path, samples: Samples) -> None:
    import threading

    def helpers() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith(("layer", "image-archive"))]

    inputs = _big_inputs(tmp_path, samples)
    _build5090(samples, tmp_path / "ok", inputs=inputs)
    assert helpers() == []
    (inputs / "runtime" / "ninfer-runtime.tar.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\0" * 100)
    with pytest.raises(InputError):
        _build5090(samples, tmp_path / "bad", inputs=inputs)
    assert helpers() == []


def _spy_streamed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the layers written in one pass over their archive (``_write_streamed_layer`` hits)."""
    from ninfer_release.containers import _build

    hits: list[str] = []
    real = _build._write_streamed_layer

    def spy(spec, request, tmp):  # type: ignore[no-untyped-def]
        got = real(spec, request, tmp)
        if got is not None:
            hits.append(spec.name)
        return got

    monkeypatch.setattr(_build, "_write_streamed_layer", spy)
    return hits


def test_runtime_layer_streamed_from_its_archive_is_the_layer_written_through_scratch_files(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninfer_release.containers import _build

    inputs = _big_inputs(tmp_path, samples)
    hits = _spy_streamed(monkeypatch)
    streamed = _build5090(samples, tmp_path / "a", inputs=inputs)
    assert hits == ["runtime"]
    monkeypatch.setattr(_build, "_write_streamed_layer", lambda spec, request, tmp: None)
    through_scratch = _build5090(samples, tmp_path / "b", inputs=inputs)
    assert (tmp_path / "a" / "image.json").read_bytes() == (tmp_path / "b" / "image.json").read_bytes()
    assert streamed.manifest_digest == through_scratch.manifest_digest
    assert streamed.bound_inputs == through_scratch.bound_inputs


def test_archive_out_of_layer_order_is_written_through_scratch_files_with_the_same_layer(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch
) -> None:
    def archive(names: list[str]) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for name in names:
                if name.endswith("/"):
                    info = tarfile.TarInfo(name.rstrip("/"))
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                    continue
                data = (name.encode() + b"\n") * 50000
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    layers = {}
    hits = _spy_streamed(monkeypatch)
    orders = {
        "sorted": ["lib/", "lib/a.so", "lib/b.so", "share/x"],
        "unsorted": ["share/x", "lib/b.so", "lib/a.so"],
        "dir-after-files": ["lib/a.so", "lib/b.so", "lib/", "share/x"],
    }
    for label, names in orders.items():
        inputs = tmp_path / f"in-{label}"
        shutil.copytree(samples.inputs, inputs)
        (inputs / "runtime" / "ninfer-runtime.tar.gz").write_bytes(archive(names))
        result = _build5090(samples, tmp_path / label, inputs=inputs)
        layers[label] = next(x for x in result.layers if x.name == "runtime")
    assert hits == ["runtime"]  # only the sorted archive was streamed
    assert layers["unsorted"].digest == layers["sorted"].digest == layers["dir-after-files"].digest
    assert layers["unsorted"].files == layers["sorted"].files
