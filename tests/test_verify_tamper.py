"""``verify`` as an installer consumer runs it, on tampered copies of a built set (DESIGN.md §4, §9).

Every failure exits 5 and names the file at fault in a line of its own.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from flow_support import cli, flip_byte, release_out, reseal, set_names, stem

LANE = "rtx4090"
NAMES = set_names(LANE)


@pytest.fixture
def copy(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A private copy of the rtx4090 set (the session build stays untouched)."""
    dst = tmp_path / LANE
    shutil.copytree(release_out(tmp_path_factory) / LANE, dst)
    return dst


def _failure_lines(err: str, location: Path) -> list[str]:
    prefix = f"error: {location}: "
    return [line.removeprefix(prefix) for line in err.splitlines() if line.startswith(prefix)]


def test_untouched_copy_verifies(copy: Path) -> None:
    """Control: the copy itself verifies (exit 0), so every failure below is the tamper's."""
    res = cli("verify", copy)
    assert res.code == 0, res.text
    assert f"{copy}: OK (unqualified draft, not for release; {stem(LANE)}, " in res.out


@pytest.mark.parametrize("name", NAMES)
def test_one_flipped_byte_in_any_file_fails_naming_it(copy: Path, name: str) -> None:
    """XOR 0x01 at the middle byte of any one of the 11 files: exit 5, a failure line names that file."""
    flip_byte(copy / name)
    res = cli("verify", copy)
    assert res.code == 5, res.text
    lines = _failure_lines(res.err, copy)
    assert any(line.startswith(f"{name}: ") for line in lines), lines


@pytest.mark.parametrize("name", NAMES)
def test_flipped_byte_fails_in_json_mode_too(copy: Path, name: str) -> None:
    """``--json verify``: one JSON document on stdout, ``ok: false``, exit 5, the file named."""
    flip_byte(copy / name)
    res = cli("--json", "verify", copy)
    assert res.code == 5, res.text
    doc = json.loads(res.out)
    assert doc["ok"] is False and doc["exit_code"] == 5
    assert any(p.startswith(f"{copy}: {name}: ") for p in doc["problems"]), doc["problems"]


def test_extra_file_fails_naming_it(copy: Path) -> None:
    """An 12th file is not part of the set: exit 5 naming it (and ``sha256sum -c`` alone would miss it)."""
    (copy / "README.txt").write_bytes(b"hello\n")
    res = cli("verify", copy)
    assert res.code == 5, res.text
    assert _failure_lines(res.err, copy) == [
        "README.txt: not part of the asset set (exactly 10 entries + SHA256SUMS)"
    ]


@pytest.mark.parametrize("name", [n for n in NAMES if not n.endswith(".zip")])
def test_missing_file_fails_naming_it(copy: Path, name: str) -> None:
    """Any one of the 11 files removed: exit 5 and a failure line naming the missing file."""
    (copy / name).unlink()
    res = cli("verify", copy)
    assert res.code == 5, res.text
    lines = _failure_lines(res.err, copy)
    assert f"{name}: missing from the set (or not a regular file)" in lines, lines


def test_missing_package_fails(copy: Path) -> None:
    """Without the zip the set has no stem: exit 5 saying the one package is missing."""
    (copy / f"{stem(LANE)}.zip").unlink()
    res = cli("verify", copy)
    assert res.code == 5, res.text
    assert "expected exactly one package '*.zip' in the set" in res.err


def _rewrite_member(package: Path, member: str, data: bytes) -> None:
    """Rewrite ``package`` with ``member`` replaced by ``data`` (every other member kept as is)."""
    with zipfile.ZipFile(package) as zin:
        items = [(info, zin.read(info)) for info in zin.infolist()]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zout:
        for info, body in items:
            zout.writestr(info, data if info.filename == member else body)
    package.write_bytes(buf.getvalue())


def test_zip_config_differing_from_outer_config_is_caught_by_the_cross_binding(copy: Path) -> None:
    """The package's config/ninfer.toml differs from the outer config asset; SHA256SUMS is re-sealed
    so every digest line holds and only the cross-bindings catch it: exit 5 naming the config."""
    s = stem(LANE)
    outer = (copy / f"{s}.config.toml").read_bytes()
    _rewrite_member(copy / f"{s}.zip", "config/ninfer.toml", outer.replace(b"\n", b"\n# edited\n", 1))
    reseal(copy)
    res = cli("verify", copy)
    assert res.code == 5, res.text
    lines = _failure_lines(res.err, copy)
    assert f"{s}.config.toml: differs from the package's config/ninfer.toml" in lines, lines
    # No digest line fails: SHA256SUMS was re-sealed over the tampered zip.
    assert not any("SHA-256 mismatch" in line for line in lines), lines


def test_resealed_outer_config_fails_every_binding(copy: Path) -> None:
    """The outer config edited and SHA256SUMS re-sealed: the zip copy, profile, component manifest,
    qualification and route all still bind the original bytes -- each is named."""
    s = stem(LANE)
    path = copy / f"{s}.config.toml"
    path.write_bytes(path.read_bytes() + b"# edited\n")
    reseal(copy)
    res = cli("verify", copy)
    assert res.code == 5, res.text
    lines = _failure_lines(res.err, copy)
    named = {line.split(": ", 1)[0] for line in lines}
    assert {f"{s}{x}" for x in (".config.toml", ".profile.json", ".manifest.json", ".route.json")} <= named
    assert f"{s}.qualification.json" in named


def test_sha256sums_resealed_after_any_entry_change_still_fails(copy: Path) -> None:
    """Re-sealing SHA256SUMS after changing an entry is not enough: the component manifest and the
    provenance still record the original digests (entries 1-9 / 1-7)."""
    s = stem(LANE)
    path = copy / f"{s}.model.json"
    doc = json.loads(path.read_bytes())
    doc["size"] += 1
    path.write_bytes(json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n")
    reseal(copy)
    res = cli("verify", copy)
    assert res.code == 5, res.text
    named = {line.split(": ", 1)[0] for line in _failure_lines(res.err, copy)}
    assert {f"{s}.manifest.json", f"{s}.provenance.json", f"{s}.route.json"} <= named
