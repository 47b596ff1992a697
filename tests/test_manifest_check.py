"""The staged release manifest: ``manifest check`` on v0.13.1, the typed Release, rules, C28."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from conftest import RunCli
from ninfer_release.errors import DefinitionError, InputError
from ninfer_release.manifests import Release, check_base_url, load_release, render_release
from ninfer_release.profiles import render_config

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "manifests" / "v0.13.1.yaml"


@pytest.fixture(scope="module")
def release() -> Release:
    return load_release(MANIFEST, env={})


def test_manifest_check_passes_and_prints_each_lane(run_cli: RunCli, release: Release) -> None:
    code, out, err = run_cli("manifest", "check", str(MANIFEST))
    assert (code, err) == (0, "")
    configs = render_release(release)
    for lane_id, lane in release.lanes.items():
        assert f"{lane_id}  {lane.component_tag}" in out
        assert configs[lane_id].bytes_sha256 in out and configs[lane_id].semantic_sha256 in out


def test_manifest_check_json(run_cli: RunCli, release: Release) -> None:
    code, out, _ = run_cli("--json", "manifest", "check", str(MANIFEST))
    assert code == 0
    doc = json.loads(out)
    assert doc["ok"] is True and doc["version"] == "v0.13.1"
    assert [lane["lane"] for lane in doc["lanes"]] == ["rtx3090", "rtx4090", "rtx5090"]
    lane = doc["lanes"][1]
    assert lane["bytes_sha256"] == render_config(release.profile_of("rtx4090")).bytes_sha256


def test_release_holds_the_reference_facts(release: Release) -> None:
    assert (release.product, release.version, release.state) == ("OMP NInfer", "v0.13.1", "candidate")
    assert release.candidate_commit == "92dfb13285994f1527711cf464847f07e44613dd"
    assert release.upstream_base == "64d10fbf9f8e6bfc79ab0570b94674c5b9997929"
    m = release.model
    assert m.as_dict() == {
        "repository": "https://huggingface.co/neroued/Qwen3.8-27B-NInfer",
        "revision": "1cbd84e7221e51186bd7f093a149912d2489625b",
        "artifact": "qwen3_8_27b.ninfer",
        "size": 20437521664,
        "sha256": "81f924d440c27261d820c19a9f8d45794c5aee410f8a68bd358133fa8c0375da",
        "local_name": "qwen3_8_27b-v3.ninfer",
        "container_version": 3,
    }
    assert (release.client.name, release.client.version, release.client.source) == (
        "Oh My Pi",
        "18.12.6",
        "45c35e40",
    )
    assert list(release.lanes) == ["rtx3090", "rtx4090", "rtx5090"]
    l4, l3, l5 = release.lanes["rtx4090"], release.lanes["rtx3090"], release.lanes["rtx5090"]
    assert (l4.component_tag, l4.kind, l4.mode, l4.cuda_arch, l4.cuda_version) == (
        "v0.7.0-qwen38-4090-beta.2",
        "windows-zip",
        "build",
        "sm_89",
        "13.3",
    )
    assert l4.source_commit == l3.source_commit == "7a25cd72f490183e4113f1e84e68e36d653ddd28"
    assert (l3.component_tag, l3.cuda_arch, l3.rollback) == (
        "v0.7.0-qwen38-3090-beta.2",
        "sm_86",
        "not_applicable",
    )
    assert (l5.kind, l5.mode, l5.source_commit, l5.profile_id) == (
        "oci-image",
        "carry",
        "6d4d0a05",
        "qwen38-5090-v0.13.0",
    )
    assert [s.tag for s in release.superseded] == ["v0.7.0-qwen38-4090-beta.1", "v0.7.0-qwen38-3090-beta.1"]
    assert set(release.profiles) == {l3.profile_id, l4.profile_id, l5.profile_id}


def test_carried_5090_record(release: Release) -> None:
    rec = release.lanes["rtx5090"].carried
    assert rec is not None
    assert (rec.server, rec.archive, rec.base_image) == ("9790a004", "52dd3be7", "d4377ed0")
    assert rec.image == (
        "ghcr.io/alphastorm/ninfer-runtime@sha256:"
        "5d10a998a42ba927dd8bbe54d928128e0d97ec7bd55d8dec2846d8681f79a4cd"
    )
    assert rec.image_repository == "ghcr.io/alphastorm/ninfer-runtime"
    assert rec.image_digest.startswith("sha256:5d10a998")
    assert (rec.profile_id, rec.strict_origin_config, rec.checkpoint_mount) == (
        "qwen38-5090-v0.13.0",
        "751d22dc",
        "/checkpoints-v013",
    )


def test_release_is_frozen(release: Release) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.version = "v9"  # type: ignore[misc]
    with pytest.raises(TypeError):
        release.lanes["rtx9090"] = release.lanes["rtx4090"]  # type: ignore[index]


def test_asset_url(release: Release) -> None:
    assert release.asset_url("v0.7.0-qwen38-4090-beta.2", "SHA256SUMS") == (
        "https://github.com/alphastorm/omp-ninfer/releases/download/v0.7.0-qwen38-4090-beta.2/SHA256SUMS"
    )
    with pytest.raises(DefinitionError):
        release.asset_url("v0.7.0-qwen38-4090-beta.2", "../x")
    with pytest.raises(DefinitionError):
        release.asset_url("v0.7.0-qwen38-4090-beta.1", "SHA256SUMS")


def test_source_date_epoch_env_overrides(release: Release) -> None:
    assert release.source_date_epoch == 1795132800
    assert load_release(MANIFEST, env={"SOURCE_DATE_EPOCH": "1700000000"}).source_date_epoch == 1700000000
    with pytest.raises(DefinitionError, match="SOURCE_DATE_EPOCH"):
        load_release(MANIFEST, env={"SOURCE_DATE_EPOCH": "yesterday"})


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://github.com/alphastorm/omp-ninfer/releases/download", True),
        ("https://example.invalid/spdx", True),
        ("https//example.invalid/spdx", False),  # C28: the typo is refused at load time
        ("http://example.invalid/x", False),
        ("https:///x", False),
        ("https://example.invalid/x#frag", False),
        ("https://example.invalid/x?q=1", False),
        ("https://example.invalid/x/", False),
        ("https://user@example.invalid/x", False),
        ("https://example.invalid/a b", False),
        ("example.invalid/x", False),
    ],
)
def test_c28_publication_base_url_must_be_absolute_https(url: str, ok: bool) -> None:
    assert (check_base_url(url) is None) is ok


def test_c28_typo_manifest_is_rejected_at_load(tmp_path: Path) -> None:
    text = MANIFEST.read_text().replace("https://github.com/", "https//github.com/")
    bad = tmp_path / "manifests" / "v0.13.1.yaml"
    bad.parent.mkdir()
    bad.write_text(text)
    with pytest.raises(DefinitionError) as err:
        load_release(bad, env={}, repo_root=REPO)
    assert [(p.field, p.file) for p in err.value.problems] == [("publication_base_url", str(bad))]


def test_missing_manifest_is_exit_4(run_cli: RunCli, tmp_path: Path) -> None:
    code, out, err = run_cli("manifest", "check", str(tmp_path / "v9.yaml"))
    assert (code, out) == (4, "")
    assert err == f"error: {tmp_path / 'v9.yaml'}: no such file\n"
    with pytest.raises(InputError):
        load_release(tmp_path / "v9.yaml", env={})


def test_problems_in_a_named_profile_are_reported_with_the_profile_file(
    tmp_path: Path, run_cli: RunCli
) -> None:
    import shutil

    for sub in ("manifests", "profiles", "releases", "packaging", "containers"):
        shutil.copytree(REPO / sub, tmp_path / sub)
    bad = tmp_path / "profiles" / "qwen38-3090-native-v0.7.0-beta.2.yaml"
    bad.write_text(bad.read_text().replace("host: 127.0.0.1", "host: 10.0.0.1"))
    rec = tmp_path / "releases" / "v0.13.0" / "rtx5090.yaml"
    rec.write_text(
        rec.read_text().replace("checkpoint_mount: /checkpoints-v013", "checkpoint_mount: /checkpoints")
    )
    code, out, err = run_cli("manifest", "check", str(tmp_path / "manifests" / "v0.13.1.yaml"))
    assert (code, out) == (3, "")
    assert err.splitlines() == [
        f"error: {bad}: endpoint.host: 10.0.0.1 is not loopback; the public endpoint is loopback only",
        f"error: {rec}: checkpoint_mount: '/checkpoints' disagrees with '/checkpoints-v013' (lanes.rtx5090)",
    ]
