"""``ninfer-release diff OLD NEW``: per lane, what changed between two releases."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flow_support import REPO, cli, ok, release_out, samples

PROFILE = "profiles/qwen38-4090-native-v0.7.0-beta.2.yaml"


def _changed_profile_build(factory: pytest.TempPathFactory) -> Path:
    """v0.13.1 rebuilt from a copy of the repo whose rtx4090 profile serves another port."""
    repo = factory.mktemp("changed-repo")
    for sub in ("manifests", "profiles", "releases", "packaging", "containers", "sbom"):
        shutil.copytree(REPO / sub, repo / sub)
    profile = repo / PROFILE
    profile.write_text(profile.read_text().replace("port: 18082", "port: 18083"))
    out = factory.mktemp("changed") / "out"
    manifest = repo / "manifests" / "v0.13.1.yaml"
    ok(cli("build", "release", manifest, "--inputs", samples(factory), "--out", out, "--offline"))
    return out


def _lane(doc: dict[str, Any], lane: str) -> dict[str, Any]:
    found = next(d for d in doc["lanes"] if d["lane"] == lane)
    assert isinstance(found, dict)
    return found


def test_a_changed_profile_value_names_the_lane_the_config_hash_and_the_route_field(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    old = release_out(tmp_path_factory)
    new = _changed_profile_build(tmp_path_factory)
    result = cli("diff", old / "release-manifest.json", new / "release-manifest.json", "--json")
    ok(result)
    doc = json.loads(result.out)
    assert doc["changed"] is True
    assert {d["lane"]: d["status"] for d in doc["lanes"]} == {
        "rtx3090": "unchanged",
        "rtx4090": "changed",
        "rtx5090": "unchanged",
    }
    lane = _lane(doc, "rtx4090")
    old_manifest = json.loads((old / "release-manifest.json").read_bytes())
    new_manifest = json.loads((new / "release-manifest.json").read_bytes())
    assert lane["config"] == [
        {
            "path": "sha256",
            "old": old_manifest["lanes"]["rtx4090"]["config"]["sha256"],
            "new": new_manifest["lanes"]["rtx4090"]["config"]["sha256"],
        }
    ]
    routes = {c["path"]: (c["old"], c["new"]) for c in lane["route"]}
    assert routes["endpoint.port"] == (18082, 18083)
    assert "install.config_bytes_sha256" in routes
    assert "sha256" in [c["path"] for c in lane["package"]] and lane["model"] == []
    assert lane["sbom"] == {"added": [], "removed": [], "upgraded": []}
    text = cli("diff", old, new)
    ok(text)
    assert "rtx4090: changed" in text.out and "  route endpoint.port: 18082 -> 18083" in text.out
    assert "  config sha256: " in text.out


def test_identical_releases_have_no_differences(tmp_path_factory: pytest.TempPathFactory) -> None:
    out = release_out(tmp_path_factory)
    result = cli("diff", out, out / "release-manifest.json")
    ok(result)
    assert result.out.splitlines()[-1] == "no differences"


def test_manifest_alone_compares_blocks_by_digest_and_says_so(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    old = release_out(tmp_path_factory)
    new = _changed_profile_build(tmp_path_factory)
    lone = tmp_path / "release-manifest.json"
    shutil.copyfile(new / "release-manifest.json", lone)
    doc = json.loads(cli("diff", old / "release-manifest.json", lone, "--json").out)
    lane = _lane(doc, "rtx4090")
    assert [c["path"] for c in lane["route"]] == ["sha256"]
    assert "route: compared by SHA-256 only (its set is not beside the release manifest)" in lane["notes"]


def test_sbom_components_added_removed_upgraded(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    old = release_out(tmp_path_factory) / "rtx4090"
    new = tmp_path / "rtx4090"
    shutil.copytree(old, new)
    cdx_path = next(new.glob("*.cdx.json"))
    cdx = json.loads(cdx_path.read_bytes())
    components = cdx["components"]
    msvc = next(c for c in components if c["name"] == "msvc-runtime")
    msvc["version"] = "14.44.35113"
    components[:] = [c for c in components if c["name"] != "dstorage-stand-in"]
    components.append(
        {"type": "library", "name": "zlib", "version": "1.3.1", "bom-ref": "vendored:zlib@1.3.1"}
    )
    cdx_path.write_text(json.dumps(cdx))
    doc = json.loads(cli("diff", old, new, "--json").out)
    assert _lane(doc, "rtx4090")["sbom"] == {
        "added": ["zlib"],
        "removed": ["dstorage-stand-in"],
        # CycloneDX component versions are purl versions (issue 14): the purl says 14.44.35112.
        "upgraded": [{"path": "msvc-runtime", "old": "14.44.35112", "new": "14.44.35113"}],
    }


def test_diff_of_something_that_is_not_a_release_is_exit_4(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{not json")
    result = cli("diff", tmp_path / "x.json", tmp_path)
    assert result.code == 4 and "x.json" in result.err


def test_diff_reads_the_release_and_component_manifests_as_typed_records(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A release manifest or a set's component manifest with a field its record does not have is
    refused (exit 4) naming the file and the field path, not compared as if it were one."""
    out = release_out(tmp_path_factory)
    doc = json.loads((out / "release-manifest.json").read_bytes())
    doc["lanes"]["rtx4090"]["approved_by"] = "QA"
    forged = tmp_path / "release-manifest.json"
    forged.write_text(json.dumps(doc))
    result = cli("diff", out, forged)
    assert result.code == 4, result.text
    assert f"{forged}: lanes.rtx4090.approved_by: unknown field" in result.err, result.err
    lone = tmp_path / "rtx4090"
    shutil.copytree(out / "rtx4090", lone)
    component = next(lone.glob("*.manifest.json"))
    doc = json.loads(component.read_bytes())
    del doc["release_instance_id"]
    component.write_text(json.dumps(doc))
    result = cli("diff", out, lone)
    assert result.code == 4, result.text
    assert f"{component}: release_instance_id: missing" in result.err, result.err


# --- documented_routes.document_change against the predecessor's route block -----------------


def _repo_with_predecessor(factory: pytest.TempPathFactory, *, declared: str | None) -> Path:
    """A repo copy whose definition names a predecessor holding rtx4090's route block as
    published by the predecessor (the session build's, with another port: a route change)."""
    repo = factory.mktemp("pred-repo")
    for sub in ("manifests", "profiles", "releases", "packaging", "containers", "sbom"):
        shutil.copytree(REPO / sub, repo / sub)
    route = json.loads(next((release_out(factory) / "rtx4090").glob("*.route.json")).read_bytes())
    route["endpoint"]["port"] = 18081
    (repo / "releases" / "pred").mkdir()
    (repo / "releases" / "pred" / "rtx4090.route.json").write_text(json.dumps(route, indent=2) + "\n")
    manifest = repo / "manifests" / "v0.13.1.yaml"
    text = manifest.read_text() + "\npredecessor: releases/pred\n"
    if declared is not None:
        text += f"documented_routes:\n  rtx4090:\n    document_change: {json.dumps(declared)}\n"
    manifest.write_text(text)
    return manifest


def test_a_changed_route_block_without_document_change_is_refused_naming_the_fields(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    manifest = _repo_with_predecessor(tmp_path_factory, declared=None)
    out = tmp_path_factory.mktemp("refused") / "out"
    result = cli(
        "build", "release", manifest, "--inputs", samples(tmp_path_factory), "--out", out, "--offline"
    )
    assert result.code == 3, result.text
    assert result.err.splitlines() == [
        f"error: {manifest}: documented_routes.rtx4090.document_change: missing: lane rtx4090's route "
        "block changed against its predecessor releases/pred/rtx4090.route.json (endpoint.port); "
        "declare how the documentation changed"
    ]
    assert not out.exists()


def test_a_declared_document_change_is_recorded_in_the_release_manifest(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    why = "install guide: the endpoint moved from port 18081 to 18082"
    manifest = _repo_with_predecessor(tmp_path_factory, declared=why)
    out = tmp_path_factory.mktemp("documented") / "out"
    ok(cli("build", "release", manifest, "--inputs", samples(tmp_path_factory), "--out", out, "--offline"))
    lanes = json.loads((out / "release-manifest.json").read_bytes())["lanes"]
    assert lanes["rtx4090"]["documented_routes"] == {
        "predecessor": "releases/pred/rtx4090.route.json",
        "changed": ["endpoint.port"],
        "document_change": why,
    }
    assert "documented_routes" not in lanes["rtx3090"]  # no predecessor block: first of its lineage


def test_documented_routes_must_name_a_lane_and_the_predecessor_must_exist(tmp_path: Path) -> None:
    for sub in ("manifests", "profiles", "releases", "packaging", "containers", "sbom"):
        shutil.copytree(REPO / sub, tmp_path / sub)
    manifest = tmp_path / "manifests" / "v0.13.1.yaml"
    manifest.write_text(
        manifest.read_text()
        + "\npredecessor: releases/nowhere\ndocumented_routes:\n  rtx9090:\n    document_change: x\n"
    )
    result = cli("manifest", "check", manifest)
    assert result.code == 3
    assert result.err.splitlines() == [
        f"error: {manifest}: predecessor: 'releases/nowhere': no such folder under {tmp_path}",
        f"error: {manifest}: documented_routes.rtx9090: no such lane; lanes: rtx3090, rtx4090, rtx5090",
    ]
