"""Attack on issue 13's staged reads (``_compress._pieces``: ``os.open``/``os.read``, a first read of
at most 16 KiB + 1, a member of at most 16 KiB done in one go).

A staged file that grows, shrinks, is swapped or rewritten while it is read must give a zip
whose member bytes are exactly what the member's record says (its size, CRC, SHA-256: what the
SBOMs and the provenance are made from), in a layout and through a spool: never a record of
one content and bytes of another.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ninfer_release.packaging import PlanEntry, ZipLayout, compress_members, finish_zip, scan_zip, write_zip

EPOCH = 315532800
INLINE = 16 << 10


def _grow(path: Path) -> None:
    with path.open("ab") as f:
        f.write(b"G" * 70000)


def _shrink(path: Path) -> None:
    os.truncate(path, 10)


def _swap(path: Path) -> None:
    other = path.with_name("other")
    other.write_bytes(b"S" * path.stat().st_size)
    os.replace(other, path)


def _rewrite(path: Path) -> None:
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.write(b"R" * size)


CHANGES: dict[str, Callable[[Path], None]] = {
    "grows": _grow,
    "shrinks": _shrink,
    "is-swapped": _swap,
    "is-rewritten": _rewrite,
}


@pytest.mark.parametrize("layout", [True, False], ids=["layout", "spool"])
@pytest.mark.parametrize("size", [INLINE - 1, INLINE, INLINE + 1, 5 << 20])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_file_changed_while_read_gives_a_member_that_is_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, size: int, layout: bool
) -> None:
    staged = tmp_path / "staged"
    staged.mkdir()
    src = staged / "f.bin"
    src.write_bytes(b"a" * size)
    real_read = os.read
    changed: list[bool] = []

    def read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        if not changed and data[:1] == b"a":  # the staged file's first read: change it now
            changed.append(True)
            CHANGES[change](src)
        return data

    monkeypatch.setattr(os, "read", read)
    work = tmp_path / "work"
    work.mkdir()
    entries = [PlanEntry(name="f.bin", source=src, staged_path="f.bin")]
    if layout:
        zl = ZipLayout.create(work)
        members = compress_members(entries, workdir=work, workers=2, layout=zl)
        monkeypatch.setattr(os, "read", real_read)
        out = finish_zip(zl, members, work / "p.zip", epoch=EPOCH).path
    else:
        members = compress_members(entries, workdir=work, workers=2)
        monkeypatch.setattr(os, "read", real_read)
        out = write_zip(members, work / "p.zip", epoch=EPOCH).path
    assert changed == [True]
    (member,) = members
    with zipfile.ZipFile(out) as zf:
        shipped = zf.read("f.bin")
    assert (len(shipped), hashlib.sha256(shipped).hexdigest()) == (member.size, member.sha256)
    (scanned,) = scan_zip(out, sha1=False).members
    assert (scanned.ok, scanned.sha256) == (True, member.sha256)
