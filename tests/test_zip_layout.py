"""The zip laid out in place (issue 13): streams written once, straight into the archive's file.

``compress_members(..., layout=)`` + ``finish_zip`` must give exactly ``write_zip``'s bytes, and
copy no stream when the members were compressed in zip order.
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path
from typing import Any

import pytest

import ninfer_release.packaging._zipwrite as zipwrite
from flow_support import RELEASE, samples
from ninfer_release.packaging import (
    DeflateCache,
    PlanEntry,
    ZipLayout,
    compress_members,
    finish_zip,
    write_zip,
)

EPOCH = 315532800
CHUNK = 64 << 10
FILES = {
    "NOTICE.txt": b"notice\n" * 300,
    "bin/a.dll": b"MZ" + b"runtime " * 40000,
    "bin/noise.bin": random.Random(5).randbytes(3 * CHUNK + 11),  # noqa: S311 - test data
    "bin/empty": b"",
    "licenses/MIT.txt": b"MIT licence text\n" * 50,
}


def _entries(names: list[str]) -> list[PlanEntry]:
    return [PlanEntry(name=n, data=FILES[n]) for n in names]


def _spooled(tmp_path: Path) -> bytes:
    work = tmp_path / "spooled"
    work.mkdir()
    members = compress_members(_entries(sorted(FILES)), workdir=work, chunk_size=CHUNK)
    return write_zip(members, work / "p.zip", epoch=EPOCH).path.read_bytes()


def _no_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("write_zip copied the streams")

    monkeypatch.setattr(zipwrite, "write_zip", refuse)


def test_in_zip_order_nothing_is_copied_and_the_bytes_are_write_zips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _spooled(tmp_path)
    _no_copy(monkeypatch)
    layout = ZipLayout.create(tmp_path)
    names = sorted(FILES, key=lambda n: n.encode())
    members = compress_members(_entries(names[:2]), workdir=tmp_path, chunk_size=CHUNK, layout=layout)
    members += compress_members(_entries(names[2:]), workdir=tmp_path, chunk_size=CHUNK, layout=layout)
    rooms_at_self_check: list[int] = []
    real_self_check = zipwrite.self_check

    def spy(*args: Any, **kwargs: Any) -> Any:
        rooms_at_self_check.append(len(layout.reserved))
        return real_self_check(*args, **kwargs)

    monkeypatch.setattr(zipwrite, "self_check", spy)
    result = finish_zip(layout, members, tmp_path / "p.zip", epoch=EPOCH)
    data = (tmp_path / "p.zip").read_bytes()
    assert data == expected
    # The headers' rooms are let go once the headers are written (issue 13: memory).
    assert rooms_at_self_check == [0] and layout.reserved == {}
    assert result.sha256 == hashlib.sha256(data).hexdigest() and result.size == len(data)
    assert not layout.path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.zip", "spooled"]


def test_out_of_order_members_are_copied_with_the_same_bytes(tmp_path: Path) -> None:
    expected = _spooled(tmp_path)
    layout = ZipLayout.create(tmp_path)
    members = compress_members(
        _entries(sorted(FILES, reverse=True)), workdir=tmp_path, chunk_size=CHUNK, layout=layout
    )
    finish_zip(layout, members, tmp_path / "p.zip", epoch=EPOCH)
    assert (tmp_path / "p.zip").read_bytes() == expected
    assert not layout.path.exists() and layout.reserved == {}


def test_cached_streams_are_laid_out_in_place_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    staged = tmp_path / "staged"
    (staged / "bin").mkdir(parents=True)
    (staged / "bin/a.dll").write_bytes(FILES["bin/a.dll"])
    known = {"bin/a.dll": hashlib.sha256(FILES["bin/a.dll"]).hexdigest()}
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    entries = [PlanEntry(name="NOTICE.txt", data=FILES["NOTICE.txt"]),
               PlanEntry(name="bin/a.dll", source=staged / "bin/a.dll", staged_path="bin/a.dll")]  # fmt: skip
    outs = []
    for label in ("cold", "warm"):
        work = tmp_path / label
        work.mkdir()
        layout = ZipLayout.create(work)
        members = compress_members(
            entries, workdir=work, chunk_size=CHUNK, cache=cache, known_sha256=known, layout=layout
        )
        if label == "warm":
            _no_copy(monkeypatch)
        outs.append(finish_zip(layout, members, work / "p.zip", epoch=EPOCH).path.read_bytes())
    assert outs[0] == outs[1]


def test_a_failed_layout_leaves_nothing(tmp_path: Path) -> None:
    layout = ZipLayout.create(tmp_path)
    compress_members(_entries(["NOTICE.txt"]), workdir=tmp_path, layout=layout)
    with pytest.raises(Exception, match="given twice"):
        finish_zip(
            layout,
            compress_members(_entries(["bin/a.dll", "bin/a.dll"]), workdir=tmp_path),
            tmp_path / "p.zip",
            epoch=EPOCH,
        )
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".members-")) == []


def test_build_lane_lays_the_zip_out_in_place(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninfer_release.build import build_release

    src = samples(tmp_path_factory)
    monkeypatch.setenv("NINFER_DEFLATE_CACHE", "off")
    monkeypatch.setattr(zipwrite, "_in_place", lambda *a: False)  # the copying path, for reference
    build_release(RELEASE, inputs=src, out=tmp_path / "copied", env=dict(os.environ), offline=True)
    expected = {p.name: p.read_bytes() for p in (tmp_path / "copied" / "rtx4090").iterdir()}
    monkeypatch.undo()
    monkeypatch.setenv("NINFER_DEFLATE_CACHE", "off")
    _no_copy(monkeypatch)
    build_release(RELEASE, inputs=src, out=tmp_path / "in-place", env=dict(os.environ), offline=True)
    assert {p.name: p.read_bytes() for p in (tmp_path / "in-place" / "rtx4090").iterdir()} == expected
