"""``verify`` against a release manifest: one digest pins everything (DESIGN.md §4).

The release manifest binds each lane's ``SHA256SUMS`` by SHA-256; the set is matched to its lane by
component tag (the set's stem), never by the directory name or reference it was read from.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flow_support import cli, qualified_out, release_manifest, release_out
from ninfer_release.releases import verify_location


def _doc(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_bytes())
    assert isinstance(doc, dict)
    return doc


@pytest.fixture
def renamed(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """The rtx4090 set under a directory name that says nothing about its lane or tag."""
    dst = tmp_path / "downloaded"
    shutil.copytree(release_out(tmp_path_factory) / "rtx4090", dst)
    return dst


def test_set_matches_its_release_manifest_whatever_the_directory(
    tmp_path_factory: pytest.TempPathFactory, renamed: Path
) -> None:
    located = verify_location(str(renamed), release_manifest=release_manifest(tmp_path_factory))
    assert located.report.ok, located.report.failures
    assert "SHA256SUMS: matches the release manifest" in located.report.checked


def test_set_of_another_build_is_refused_by_the_release_manifest(
    tmp_path_factory: pytest.TempPathFactory, renamed: Path
) -> None:
    """The unqualified set against the qualified build's manifest: SHA256SUMS is not the bound digest."""
    other = _doc(qualified_out(tmp_path_factory) / "release-manifest.json")
    located = verify_location(str(renamed), release_manifest=other)
    assert not located.report.ok
    assert [f for f in located.report.failures if f.startswith("SHA256SUMS: digest ")], (
        located.report.failures
    )


def test_release_manifest_without_the_lane_is_a_failure(
    tmp_path_factory: pytest.TempPathFactory, renamed: Path
) -> None:
    """A release manifest that binds no lane for this set cannot vouch for it: failure, not a silent pass."""
    doc = release_manifest(tmp_path_factory)
    doc = {**doc, "lanes": {k: v for k, v in doc["lanes"].items() if k != "rtx4090"}}
    located = verify_location(str(renamed), release_manifest=doc)
    assert located.report.failures == (
        "SHA256SUMS: the release manifest binds no set named ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64",
    )


def test_release_manifest_and_explicit_digest_must_agree(
    tmp_path_factory: pytest.TempPathFactory, renamed: Path
) -> None:
    located = verify_location(
        str(renamed), expected_sums_sha256="0" * 64, release_manifest=release_manifest(tmp_path_factory)
    )
    assert any("release manifest binds" in f and "0" * 64 in f for f in located.report.failures)


def test_cli_verify_release_manifest_checks_a_directory_named_anything(
    tmp_path_factory: pytest.TempPathFactory, renamed: Path
) -> None:
    res = cli(
        "verify", renamed, "--release-manifest", qualified_out(tmp_path_factory) / "release-manifest.json"
    )
    assert res.code == 5, res.text
    assert "SHA256SUMS" in res.err
