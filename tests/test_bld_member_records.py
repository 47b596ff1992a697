"""What the build lets go of its per-member records (issue 13: memory at 100k members): the zip's
result without entries, the CycloneDX root's later occurrences held as their files."""

from __future__ import annotations

import gc
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

import ninfer_release.sbom as sbom
import ninfer_release.sbom._cyclonedx as _cyclonedx
from flow_support import RELEASE, samples
from ninfer_release.build import build_lane
from ninfer_release.packaging import CompressedMember, PlanEntry, ZipLayout, compress_members, finish_zip
from ninfer_release.sbom import ShippedFile
from test_cyclonedx import DEPS, make, sha

EPOCH = 315532800
FILES = {"bin/a.dll": b"MZ" + b"runtime " * 4000, "licenses/MIT.txt": b"MIT licence text\n" * 50}


@pytest.mark.parametrize("entries", [True, False])
def test_a_zip_finished_without_entries_is_the_same_zip_and_scan(tmp_path: Path, entries: bool) -> None:
    layout = ZipLayout.create(tmp_path)
    entries_in = [PlanEntry(name=n, data=FILES[n]) for n in sorted(FILES)]
    members = compress_members(entries_in, workdir=tmp_path, layout=layout)
    result = finish_zip(layout, members, tmp_path / "p.zip", epoch=EPOCH, entries=entries)
    data = (tmp_path / "p.zip").read_bytes()
    assert result.sha256 == hashlib.sha256(data).hexdigest() and result.size == len(data)
    assert result.scan is not None and [d.name for d in result.scan.members] == sorted(FILES)
    assert [e.name for e in result.entries] == (sorted(FILES) if entries else [])


# Names whose order differs between plain and UTF-8 byte sorts or around separators.
ODD = ["licenses/x/a.txt", "licenses/x.a.txt", "licenses/x-a.txt", "licenses/X.txt", "licenses/é.txt"]


def test_held_occurrences_are_written_as_the_library_writes_each(monkeypatch: pytest.MonkeyPatch) -> None:
    files = [f for d in DEPS for f in d.files] + [ShippedFile(path=p, sha256=sha(p)) for p in reversed(ODD)]
    held = make(component_sha256=sha("zip"), package_files=files)
    monkeypatch.setattr(_cyclonedx, "_PER_OCCURRENCE_MODELS", True)
    assert held == make(component_sha256=sha("zip"), package_files=files)


def test_no_member_record_is_alive_while_the_cyclonedx_document_is_made(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = samples(tmp_path_factory)
    monkeypatch.setenv("NINFER_DEFLATE_CACHE", "off")
    alive: list[tuple[int, int]] = []
    real = _cyclonedx.cyclonedx_dependency_inventory

    def spy(**kwargs: Any) -> bytes:
        gc.collect()
        objects = gc.get_objects()
        alive.append((sum(isinstance(o, CompressedMember) for o in objects), len(kwargs["package_files"])))
        return real(**kwargs)

    monkeypatch.setattr(sbom, "cyclonedx_dependency_inventory", spy)
    outcome = build_lane(
        RELEASE, "rtx4090", inputs=src, out=tmp_path / "o", env=dict(os.environ), offline=True
    )
    assert outcome.verified is True
    ((members, listed),) = alive
    assert members == 0 and listed > 3
