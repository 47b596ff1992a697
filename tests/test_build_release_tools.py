"""``build release`` output checked by independent tools, as a release engineer would (DESIGN.md §4, §10).

One session-wide build (tests/flow_support.py) of manifests/v0.13.1.yaml on the pinned samples.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import need_tool
from flow_support import (
    NATIVE_LANES,
    RELEASE,
    TAGS,
    cli,
    package_sha256,
    receipt,
    release_manifest,
    release_out,
    samples,
    set_names,
    stem,
)

pytestmark = pytest.mark.parametrize("lane", NATIVE_LANES)


@pytest.fixture
def set_dir(tmp_path_factory: pytest.TempPathFactory, lane: str) -> Path:
    return release_out(tmp_path_factory) / lane


def _run(*cmd: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, check=False)


def test_set_is_exactly_the_11_names(set_dir: Path, lane: str) -> None:
    """DESIGN.md §4: exactly 10 entries + SHA256SUMS, nothing else, all regular files."""
    assert sorted(p.name for p in set_dir.iterdir()) == set_names(lane)
    assert all(p.is_file() and not p.is_symlink() for p in set_dir.iterdir())


def test_sha256sums_is_canonical_gnu_text(set_dir: Path, lane: str) -> None:
    """SHA256SUMS: LF only, one trailing LF, sorted by name, lowercase hex, two spaces, entries 1-10."""
    data = (set_dir / "SHA256SUMS").read_bytes()
    assert b"\r" not in data and data.endswith(b"\n") and not data.endswith(b"\n\n")
    lines = data.decode("ascii").splitlines()
    assert all(re.fullmatch(r"[0-9a-f]{64}  [^ ].*", line) for line in lines), lines
    names = [line[66:] for line in lines]
    assert names == sorted(names, key=str.encode)
    assert names == [n for n in set_names(lane) if n != "SHA256SUMS"]


def test_sha256sum_c_accepts_the_set(set_dir: Path) -> None:
    """coreutils ``sha256sum -c`` (and ``--strict``, which refuses any malformed line) passes."""
    tool = need_tool("sha256sum")
    for flags in ([], ["--strict"]):
        res = _run(tool, *flags, "-c", "SHA256SUMS", cwd=set_dir)
        assert res.returncode == 0, res.stdout + res.stderr
        assert res.stdout.count(": OK\n") == 10


def test_unzip_and_7z_test_the_package(set_dir: Path, lane: str) -> None:
    """Info-ZIP ``unzip -t`` and ``7z t`` find no error in the package."""
    package = set_dir / f"{stem(lane)}.zip"
    res = _run(need_tool("unzip"), "-t", package)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "No errors detected" in res.stdout
    res = _run(need_tool("7z"), "t", package)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Everything is Ok" in res.stdout


def test_pyspdxtools_validates_the_spdx_asset(set_dir: Path, lane: str) -> None:
    """spdx-tools' own CLI (``pyspdxtools -i``) parses and validates the SPDX 2.3 asset."""
    tool = Path(sys.executable).parent / "pyspdxtools"
    if not tool.exists():
        tool = Path(need_tool("pyspdxtools"))
    res = _run(tool, "-i", set_dir / f"{stem(lane)}.spdx.json")
    # pyspdxtools prints nothing for a valid document; every issue is an ERROR line and exit 1.
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ERROR" not in res.stdout + res.stderr


def test_cyclonedx_asset_is_strictly_valid_1_6(set_dir: Path, lane: str) -> None:
    """cyclonedx-python-lib's strict JSON schema validator (CycloneDX 1.6) accepts the cdx asset."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    text = (set_dir / f"{stem(lane)}.cdx.json").read_text(encoding="utf-8")
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    assert json.loads(text)["specVersion"] == "1.6"


def test_release_manifest_binds_each_sets_sha256sums(
    tmp_path_factory: pytest.TempPathFactory, set_dir: Path, lane: str
) -> None:
    """DESIGN.md §4: one digest pins everything -- the release manifest binds SHA256SUMS by SHA-256."""
    import hashlib

    entry = release_manifest(tmp_path_factory)["lanes"][lane]
    assert entry["component_tag"] == TAGS[lane]
    assert entry["sha256sums"]["sha256"] == hashlib.sha256((set_dir / "SHA256SUMS").read_bytes()).hexdigest()
    assert entry["qualification"] == "unqualified"
    res = cli("verify", set_dir, "--sums-sha256", entry["sha256sums"]["sha256"])
    assert res.code == 0, res.text
    res = cli("verify", set_dir, "--sums-sha256", "0" * 64)
    assert res.code == 5, res.text
    assert "SHA256SUMS" in res.err


def test_receipt_naming_other_config_bytes_fails_the_build(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, lane: str
) -> None:
    """DESIGN.md §3: a receipt that names other config bytes is refused (exit 5), nothing written."""
    lanes = release_manifest(tmp_path_factory)["lanes"]
    other = "ab" * 32
    assert other != lanes[lane]["config"]["sha256"]
    rdir = tmp_path / "receipts" / lane
    rdir.mkdir(parents=True)
    (rdir / "run-1.json").write_text(json.dumps(receipt(lane, other, package_sha256(lanes[lane]))))
    out = tmp_path / "out"
    res = cli(
        "build",
        "lane",
        lane,
        "--release",
        RELEASE,
        "--inputs",
        samples(tmp_path_factory),
        "--out",
        out,
        "--receipts",
        tmp_path / "receipts",
    )
    assert res.code == 5, res.text
    assert "run-1.json" in res.err and "config_sha256" in res.err and other in res.err
    assert not out.exists()


def test_build_never_overwrites_its_output(tmp_path_factory: pytest.TempPathFactory, lane: str) -> None:
    """``--out`` must be new: building into an existing output is refused (exit 4), bytes untouched."""
    out = release_out(tmp_path_factory)
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    res = cli(
        "build", "lane", lane, "--release", RELEASE, "--inputs", samples(tmp_path_factory), "--out", out
    )
    assert res.code == 4, res.text
    assert "already exists" in res.err
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before


def test_build_lane_json_is_one_document(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, lane: str
) -> None:
    """``--json build lane``: one JSON document on stdout (summary of the lane), logs on stderr only."""
    out = tmp_path / "out"
    res = cli(
        "--json",
        "build",
        "lane",
        lane,
        "--release",
        RELEASE,
        "--inputs",
        samples(tmp_path_factory),
        "--out",
        out,
    )
    assert res.code == 0, res.text
    doc = json.loads(res.out)
    entry = release_manifest(tmp_path_factory)["lanes"][lane]
    assert doc["ok"] is True and doc["lane"] == lane and doc["files"] == 11 and doc["verified"] is True
    assert doc["sha256sums"] == entry["sha256sums"]["sha256"]
    assert doc["config_bytes_sha256"] == entry["config"]["sha256"]
    assert doc["qualification"] == "unqualified"
