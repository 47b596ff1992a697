"""``build lane rtx5090`` / ``build release`` when the container lane's mode is ``build``.

The repo's v0.13.1 definition carries the 5090 image; these tests use a temporary repo root whose
copy of ``manifests/v0.13.1.yaml`` builds it instead (``mode: build``, a full 40-hex source commit,
no ``carried_from``) and whose 5090 profile is not carried. ``packaging/``, ``containers/``,
``releases/`` and ``sbom/`` are the repo's own (symlinked).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import flow_support
from containers_support import RELEASE_EPOCH, Samples, make_samples
from flow_support import cli, ok
from ninfer_release.build import OUTPUT_MARKER, build_lane
from ninfer_release.containers import make_sample_base_layout, stand_in_commit
from ninfer_release.errors import InputError
from ninfer_release.manifests import ImageLaneEntry
from ninfer_release.sbom import IMAGE_CDX_NAME, IMAGE_SPDX_NAME

REPO = Path(__file__).resolve().parent.parent
#: The sample 5090 inputs' build-info.json names this stand-in commit (containers._samples).
SAMPLE_COMMIT = stand_in_commit("ninfer-release sample rtx5090 stand-in")
IMAGE_OUTPUTS = ["image.json", "image.tar", "layout", IMAGE_CDX_NAME, IMAGE_SPDX_NAME]


def make_build_repo(root: Path, *, source_commit: str = SAMPLE_COMMIT) -> Path:
    """A repo root whose v0.13.1 definition builds the 5090 image; returns the manifest path."""
    root.mkdir(parents=True)
    for name in ("packaging", "containers", "releases", "sbom"):
        (root / name).symlink_to(REPO / name, target_is_directory=True)
    shutil.copytree(REPO / "profiles", root / "profiles")
    prof = root / "profiles" / "qwen38-5090-v0.13.0.yaml"
    text = prof.read_text()
    text, n = re.subn(r"(?m)^carried: true\n", "carried: false\n", text)
    assert n == 1
    text, n = re.subn(r"(?m)^carried_from: .*\n", "", text)
    assert n == 1
    prof.write_text(text)
    (root / "manifests").mkdir()
    text = (REPO / "manifests" / "v0.13.1.yaml").read_text()
    lane_5090 = text.index("  rtx5090:\n")
    head, lane = text[:lane_5090], text[lane_5090:]
    lane, n = re.subn(r"(?m)^    mode: carry.*\n", "    mode: build\n", lane)
    assert n == 1
    lane, n = re.subn(r"(?m)^    source_commit: .*\n", f"    source_commit: {source_commit}\n", lane)
    assert n == 1
    lane, n = re.subn(r"(?m)^    carried_from: .*\n", "", lane)
    assert n == 1
    manifest = root / "manifests" / "v0.13.1.yaml"
    manifest.write_text(head + lane)
    return manifest


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Samples:
    """``S/base-layout`` and ``S/rtx5090`` as ``samples fetch`` lays them out (no native lanes)."""
    return make_samples(tmp_path_factory.mktemp("lane-samples"))


@pytest.fixture(scope="module")
def build_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_build_repo(tmp_path_factory.mktemp("lane-repo") / "repo")


@pytest.fixture(scope="module")
def lane_out(samples: Samples, build_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``build lane rtx5090`` (the CLI) with the default base ``S/base-layout``."""
    out = tmp_path_factory.mktemp("lane-out") / "out"
    ok(
        cli(
            "build",
            "lane",
            "rtx5090",
            "--release",
            build_repo,
            "--inputs",
            samples.inputs.parent,
            "--out",
            out,
        )
    )
    return out


def _json(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_bytes())
    assert isinstance(doc, dict)
    return doc


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_build_lane_rtx5090_in_build_mode_builds_the_image_with_sboms(lane_out: Path) -> None:
    """OUT/rtx5090/ holds the layout, image.tar, image.json and both SBOMs; the lane result beside it."""
    assert sorted(p.name for p in lane_out.iterdir()) == [OUTPUT_MARKER, "rtx5090", "rtx5090.lane.json"]
    assert sorted(p.name for p in (lane_out / "rtx5090").iterdir()) == IMAGE_OUTPUTS


def test_lane_result_records_image_base_and_semantic_config_digest(lane_out: Path) -> None:
    """The lane entry binds the image by digest, its base by digest and the **semantic** config digest."""
    record = _json(lane_out / "rtx5090" / "image.json")
    doc = _json(lane_out / "rtx5090.lane.json")
    entry = doc["entry"]
    assert doc["lane_id"] == "rtx5090"
    assert entry["kind"] == "oci-image" and entry["mode"] == "build"
    assert entry["image"] == "ghcr.io/alphastorm/ninfer-runtime"
    assert entry["image_digest"] == record["manifest"]["digest"]
    assert entry["image_reference"] == record["reference"]
    assert (
        entry["base_digest"]
        == record["base"]["digest"]
        == ("sha256:05b9227bcd087823cea342920a3f19eee7593333f9bfa89494a535a4a1d3a87c")
    )
    assert entry["config"] == {"hash_kind": "semantic", "sha256": record["engine_config"]["semantic_sha256"]}
    assert entry["config"]["sha256"] != record["engine_config"]["bytes_sha256"]
    assert entry["version"] == entry["component_tag"] == "v0.7.0-qwen38-5090-beta.2"
    assert entry["revision"] == entry["source_commit"] == SAMPLE_COMMIT
    assert entry["created"] == "2026-11-20T00:00:00Z"
    assert entry["layers"] == [lay["digest"] for lay in record["layers"]]
    assert entry["bindings"]["server"] == record["labels"]["io.ninfer.binding.server.sha256"]
    assert entry["bindings"]["archive"] == record["labels"]["io.ninfer.binding.archive.sha256"]
    assert entry["stand_in"] is True
    outputs = entry["outputs"]
    for ref in (outputs["archive"], outputs["record"], *outputs["sbom"].values()):
        path = lane_out / ref["path"]
        assert ref["sha256"] == _sha(path) and ref["size"] == path.stat().st_size, ref["path"]
    assert outputs["sbom"]["cyclonedx"]["path"] == f"rtx5090/{IMAGE_CDX_NAME}"
    assert outputs["sbom"]["spdx"]["path"] == f"rtx5090/{IMAGE_SPDX_NAME}"
    assert doc["release"]["source_date_epoch"] == RELEASE_EPOCH


def test_build_lane_image_equals_a_standalone_image_build(
    lane_out: Path, samples: Samples, build_repo: Path, tmp_path: Path
) -> None:
    """The lane builds what ``image build`` builds from the same inputs: same digest, same SBOM bytes."""
    out = tmp_path / "image"
    ok(
        cli(
            "image", "build", REPO / "containers" / "qwen38-5090.yaml", "--inputs", samples.inputs,
            "--base", samples.base, "--out", out, "--release", build_repo,
            "--profile", build_repo.parent.parent / "profiles" / "qwen38-5090-v0.13.0.yaml",
        )
    )  # fmt: skip
    for name in ("image.json", "image.tar", IMAGE_CDX_NAME, IMAGE_SPDX_NAME):
        assert (out / name).read_bytes() == (lane_out / "rtx5090" / name).read_bytes(), name


def test_build_lane_json_summary_and_human_lines(samples: Samples, build_repo: Path, tmp_path: Path) -> None:
    """``--json`` prints the lane entry (image digest, base, semantic config); humans get three lines."""
    res = cli(
        "--json", "build", "lane", "rtx5090", "--release", build_repo, "--inputs", samples.inputs.parent,
        "--out", tmp_path / "j",
    )  # fmt: skip
    ok(res)
    doc = json.loads(res.out)
    entry = _json(tmp_path / "j" / "rtx5090.lane.json")["entry"]
    assert doc["ok"] is True and doc["lane"] == "rtx5090" and doc["mode"] == "build"
    assert doc["image_digest"] == entry["image_digest"]
    assert doc["image_dir"] == str(tmp_path / "j" / "rtx5090")
    res = cli(
        "build", "lane", "rtx5090", "--release", build_repo, "--inputs", samples.inputs.parent,
        "--out", tmp_path / "h",
    )  # fmt: skip
    ok(res)
    assert f"rtx5090: built ghcr.io/alphastorm/ninfer-runtime@{entry['image_digest']}" in res.out
    assert f"config semantic sha256 {entry['config']['sha256']}" in res.out


def test_explicit_base_option(samples: Samples, build_repo: Path, tmp_path: Path) -> None:
    """``--base`` names the base when ``--inputs`` has no ``base-layout/``."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "rtx5090").symlink_to(samples.inputs, target_is_directory=True)
    res = cli(
        "build", "lane", "rtx5090", "--release", build_repo, "--inputs", inputs, "--out", tmp_path / "a"
    )
    assert res.code == 4, res.text
    assert "base-layout" in res.err and "--base" in res.err
    assert not (tmp_path / "a").exists()
    ok(
        cli(
            "build", "lane", "rtx5090", "--release", build_repo, "--inputs", inputs, "--out", tmp_path / "b",
            "--base", samples.base,
        )
    )  # fmt: skip
    assert sorted(p.name for p in (tmp_path / "b" / "rtx5090").iterdir()) == IMAGE_OUTPUTS


def test_base_other_than_the_pinned_digest_fails_integrity(
    samples: Samples, build_repo: Path, tmp_path: Path
) -> None:
    """A base with another digest than the recipe pins is an integrity failure (exit 5), nothing written."""
    other = tmp_path / "other-base"
    make_sample_base_layout(other, epoch=RELEASE_EPOCH + 1)
    res = cli(
        "build", "lane", "rtx5090", "--release", build_repo, "--inputs", samples.inputs.parent,
        "--out", tmp_path / "o", "--base", other,
    )  # fmt: skip
    assert res.code == 5, res.text
    assert "base.digest" in res.err
    assert not (tmp_path / "o").exists()


def test_staged_build_of_another_commit_is_refused(samples: Samples, tmp_path: Path) -> None:
    """build-info.json must name the definition's source commit: evidence is never relabelled (exit 4)."""
    manifest = make_build_repo(tmp_path / "repo", source_commit="7a25cd72f490183e4113f1e84e68e36d653ddd28")
    with pytest.raises(InputError) as err:
        build_lane(manifest, "rtx5090", inputs=samples.inputs.parent, out=tmp_path / "o", env={})
    text = str(err.value)
    assert "build-info.json" in text and "source_commit" in text and "7a25cd72" in text
    assert not (tmp_path / "o").exists()


def test_source_date_epoch_from_env_reaches_the_image_and_sboms(
    samples: Samples, build_repo: Path, tmp_path: Path
) -> None:
    """SOURCE_DATE_EPOCH overrides the definition's epoch for the image and both SBOMs alike."""
    outcome = build_lane(
        build_repo,
        "rtx5090",
        inputs=samples.inputs.parent,
        out=tmp_path / "o",
        env={"SOURCE_DATE_EPOCH": "1795219200"},
    )
    assert isinstance(outcome.result.entry, ImageLaneEntry)
    assert outcome.result.entry.created == "2026-11-21T00:00:00Z"
    cdx = _json(tmp_path / "o" / "rtx5090" / IMAGE_CDX_NAME)
    assert cdx["metadata"]["timestamp"] == "2026-11-21T00:00:00+00:00"
    spdx = _json(tmp_path / "o" / "rtx5090" / IMAGE_SPDX_NAME)
    assert spdx["creationInfo"]["created"] == "2026-11-21T00:00:00Z"


def test_build_release_with_a_built_5090_lane_records_the_image_in_the_release_manifest(
    build_repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``build release`` builds both native sets and the 5090 image; the release manifest records the
    image digest, the base digest and the semantic config digest (and equals ``manifest assemble``)."""
    src = flow_support.samples(tmp_path_factory)  # samples fetch: rtx4090, rtx3090, rtx5090, base-layout
    work = tmp_path_factory.mktemp("release-build")
    out = work / "out"
    ok(cli("build", "release", build_repo, "--inputs", src, "--out", out, "--offline"))
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [OUTPUT_MARKER, "release-manifest.json", "rtx3090", "rtx3090.lane.json", "rtx4090",
         "rtx4090.lane.json", "rtx5090", "rtx5090.lane.json"]
    )  # fmt: skip
    assert sorted(p.name for p in (out / "rtx5090").iterdir()) == IMAGE_OUTPUTS
    manifest = _json(out / "release-manifest.json")
    record = _json(out / "rtx5090" / "image.json")
    lane = manifest["lanes"]["rtx5090"]
    assert lane["mode"] == "build"
    assert lane["image_digest"] == record["manifest"]["digest"]
    assert lane["base_digest"] == record["base"]["digest"]
    assert lane["config"] == {"hash_kind": "semantic", "sha256": record["engine_config"]["semantic_sha256"]}
    assert manifest["definition"]["path"] == "manifests/v0.13.1.yaml"
    assert manifest["definition"]["sha256"] == _sha(build_repo)
    for native in ("rtx4090", "rtx3090"):
        assert manifest["lanes"][native]["config"]["hash_kind"] == "bytes"
    assembled = work / "assembled.json"
    ok(cli("manifest", "assemble", *sorted(out.glob("*.lane.json")), "--out", assembled))
    assert assembled.read_bytes() == (out / "release-manifest.json").read_bytes()
