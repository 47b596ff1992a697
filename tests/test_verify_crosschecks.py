"""Checks that once had no test (issue 9 "Checks no test guards"): each test below fails when the
check it names is deleted from the code (proved once by mutation; see docs/reliability.md).

Verify's cross-checks, each on a resealed copy of the built rtx4090 set so that the digest check
passes and only the cross-check can notice: the outer SPDX vs its copy inside the zip; a DLL of
the zip without a CycloneDX component; the sizes the component manifest records; the route's
model ``store_as`` vs the model entry's ``local_name``. Then the zip writer's two boundaries:
the timestamp clamp at 2107 and zip64 at exactly 0xFFFFFFFF.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from flow_support import cli, release_out, reseal, stem
from ninfer_release import reproducible
from ninfer_release.packaging._zipformat import LIMIT32, needs_zip64

LANE = "rtx4090"
STEM = stem(LANE)


@pytest.fixture
def copy(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    dst = tmp_path / LANE
    shutil.copytree(release_out(tmp_path_factory) / LANE, dst)
    return dst


def _load(path: Path) -> Any:
    return json.loads(path.read_bytes())


def _dump(path: Path, doc: Any, indent: int = 2) -> None:
    path.write_text(
        json.dumps(doc, indent=indent, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def _failures(set_dir: Path) -> list[str]:
    res = cli("verify", set_dir)
    assert res.code == 5, res.text
    prefix = f"error: {set_dir}: "
    return [line.removeprefix(prefix) for line in res.err.splitlines() if line.startswith(prefix)]


def test_outer_spdx_must_equal_its_copy_inside_the_zip(copy: Path) -> None:
    """Same document, other bytes (indent 1): valid SPDX, same file list; only the copy differs."""
    outer = copy / f"{STEM}.spdx.json"
    _dump(outer, _load(outer), indent=1)
    reseal(copy)
    assert f"{STEM}.spdx.json: differs from the copy inside the package" in _failures(copy)


def test_every_dll_of_the_zip_needs_a_cyclonedx_component(copy: Path) -> None:
    """The DLL's evidence occurrence is removed: the CycloneDX document stays valid, lists no
    file the zip lacks, and only the "every member is listed" check can see the hole."""
    cdx_path = copy / f"{STEM}.cdx.json"
    doc = _load(cdx_path)
    dll = "bin/cudart64_13.dll"
    for c in doc["components"]:
        evidence = c.get("evidence") or {}
        kept = [o for o in evidence.get("occurrences", []) if o.get("location") != dll]
        if len(kept) != len(evidence.get("occurrences", [])):
            if kept:
                evidence["occurrences"] = kept
            else:
                del c["evidence"]
    _dump(cdx_path, doc)
    reseal(copy)
    failures = _failures(copy)
    assert f"{STEM}.cdx.json: package member '{dll}' is listed by no component" in failures, failures


def test_component_manifest_sizes_must_match_the_files(copy: Path) -> None:
    """Only the recorded size of the route entry changes (its SHA-256 stays right)."""
    path = copy / f"{STEM}.manifest.json"
    doc = _load(path)
    route = next(e for e in doc["entries"] if e["name"].endswith(".route.json"))
    route["size"] += 1
    _dump(path, doc)
    reseal(copy)
    failures = _failures(copy)
    assert (
        f"{STEM}.manifest.json: size/SHA-256 recorded for '{route['name']}' differ from the file" in failures
    )


def test_route_model_store_as_must_be_the_definitions_local_name(copy: Path) -> None:
    path = copy / f"{STEM}.route.json"
    doc = _load(path)
    doc["model"]["store_as"] = "other-name.ninfer"
    _dump(path, doc)
    reseal(copy)
    assert f"{STEM}.route.json: model binding differs from the model entry" in _failures(copy)


# --- the zip writer's boundaries -----------------------------------------------------------------

Y2107_END = 4354819199  # 2107-12-31T23:59:59Z, the last second a DOS date can hold


def test_zip_time_clamps_at_the_end_of_2107() -> None:
    assert reproducible.zip_date_time(Y2107_END - 1) == (2107, 12, 31, 23, 59, 58)
    assert reproducible.zip_date_time(Y2107_END + 1) == (2107, 12, 31, 23, 59, 58)  # 2108-01-01
    assert reproducible.zip_date_time(Y2107_END + 10 * 365 * 86400) == (2107, 12, 31, 23, 59, 58)


def test_zip_written_after_2107_holds_the_clamped_dos_date(tmp_path: Path) -> None:
    from ninfer_release.packaging import PlanEntry, compress_members, write_zip

    members = compress_members([PlanEntry(name="a.txt", data=b"a")], workdir=tmp_path)
    path = write_zip(members, tmp_path / "late.zip", epoch=Y2107_END + 86400).path
    data = path.read_bytes()
    time_, date = struct.unpack_from("<HH", data, 10)
    assert ((date >> 9) + 1980, (date >> 5) & 0xF, date & 0x1F) == (2107, 12, 31)
    assert (time_ >> 11, (time_ >> 5) & 0x3F, (time_ & 0x1F) * 2) == (23, 59, 58)


@pytest.mark.parametrize("field", ["size", "compressed_size", "offset"])
def test_zip64_from_exactly_0xffffffff(field: str) -> None:
    """APPNOTE 4.4.8/4.5.3: 0xFFFFFFFF in a 32-bit field means "see zip64", so that value itself
    already needs zip64; one less still fits."""
    fits = {"size": 1, "compressed_size": 1, "offset": 0}
    assert LIMIT32 == 0xFFFFFFFF
    assert not needs_zip64(**{**fits, field: 0xFFFFFFFE})
    assert needs_zip64(**{**fits, field: 0xFFFFFFFF})
