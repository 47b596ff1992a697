"""Bounded zip reader for the verifier: index, streamed digests, small members, hostile archives."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from ninfer_release.errors import IntegrityError
from ninfer_release.packaging import (
    iter_member_digests,
    read_member,
    read_zip_index,
    unsafe_name,
)
from zip_support import foreign, ours, patch_central


def test_index_of_our_archive(tmp_path: Path) -> None:
    path = ours(tmp_path, {"b.txt": b"b" * 1000, "a.txt": b"", "é.txt": b"x"})
    index = read_zip_index(path)
    assert [m.name for m in index] == ["a.txt", "b.txt", "é.txt"]
    assert [m.method for m in index] == [0, 8, 0]
    assert [m.flags for m in index] == [0, 0, 0x800]
    assert index[0].header_offset == 0 and index[0].data_offset == 30 + 5
    assert index[1].date_time == (2023, 11, 14, 22, 13, 20)


def test_digests_stream_every_member(tmp_path: Path) -> None:
    files = {"bin/a.dll": b"A", "bin/b.dll": b"B" * 3_000_000, "c.txt": b""}
    got = {d.name: d for d in iter_member_digests(ours(tmp_path, files))}
    for name, data in files.items():
        d = got[name]
        assert d.ok, d.problems
        assert (d.size, d.sha256, d.sha1) == (
            len(data),
            hashlib.sha256(data).hexdigest(),
            hashlib.sha1(data, usedforsecurity=False).hexdigest(),
        )
    assert got["bin/a.dll"].sha1 == "6dcd4ce23d88e2ee9568ba546c007c63d9131c1b"  # SHA1("A"), as in C26


def test_foreign_archive_readable(tmp_path: Path) -> None:
    path = foreign(tmp_path, {"x/y.txt": b"hello" * 100, "z": b"zz"})
    assert [d.ok for d in iter_member_digests(path)] == [True, True]
    assert read_member(path, "x/y.txt", max_bytes=1000) == b"hello" * 100


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("../evil.dll", "'..' in member name"),
        ("/etc/passwd", "absolute member name"),
        ("C:/Windows/x.dll", "absolute member name"),
        ("bin\\engine.exe", "backslash in member name"),
        ("a//b", "empty or '.' component in member name"),
    ],
)
def test_unsafe_names_reported_not_followed(tmp_path: Path, name: str, why: str) -> None:
    path = foreign(tmp_path, {"ok.txt": b"ok", name: b"payload"})
    assert unsafe_name(name) == why
    results = {d.name: d for d in iter_member_digests(path)}
    assert results["ok.txt"].ok
    bad = results[name]
    assert bad.problems == (f"{why}; not read (never used as a path)",)
    assert bad.size == 0  # never inflated
    with pytest.raises(IntegrityError):
        read_member(path, name, max_bytes=100)


def test_ratio_bomb_reported_not_inflated(tmp_path: Path) -> None:
    path = foreign(tmp_path, {"zeros.bin": bytes(10_000_000)})
    (d,) = iter_member_digests(path, max_ratio=100)
    assert not d.ok and d.size == 0
    assert "ratio > 100" in d.problems[0]
    (d,) = iter_member_digests(path)  # within deflate's real limit: fine by default
    assert d.ok


def test_max_total_stops_reading(tmp_path: Path) -> None:
    path = foreign(tmp_path, {"a": b"a" * 1000, "b": b"b" * 1000})
    results = list(iter_member_digests(path, max_total=1500))
    assert results[0].ok
    assert results[1].problems == ("archive declares more than 1500 bytes in total; not inflated",)


def test_size_lie_detected(tmp_path: Path) -> None:
    path = foreign(tmp_path, {"a.txt": b"x" * 5000})
    patch_central(path, 0, usize=10)
    (d,) = iter_member_digests(path)
    assert d.problems == ("cannot be read: inflates past 10 bytes",)


def test_crc_mismatch_detected(tmp_path: Path) -> None:
    path = foreign(tmp_path, {"a.txt": b"x" * 5000})
    patch_central(path, 0, crc=0x12345678)
    (d,) = iter_member_digests(path)
    assert d.problems[0].startswith("CRC-32 ")
    with pytest.raises(IntegrityError, match="does not match its declared size and CRC"):
        read_member(path, "a.txt", max_bytes=10_000)


def test_overlapping_members_refused(tmp_path: Path) -> None:
    """The overlapped-members bomb: a member whose data range covers the next header."""
    path = foreign(tmp_path, {"a.txt": b"a" * 100, "b.txt": b"b" * 100}, method=zipfile.ZIP_STORED)
    first, second = read_zip_index(path)
    patch_central(path, 0, csize=second.header_offset - first.data_offset + 10)
    with pytest.raises(IntegrityError, match="overlap"):
        read_zip_index(path)


def test_offset_to_nowhere_refused(tmp_path: Path) -> None:
    path = foreign(tmp_path, {"a.txt": b"a"})
    patch_central(path, 0, offset=5)
    with pytest.raises(IntegrityError, match="no local header"):
        read_zip_index(path)


def test_not_a_zip_and_truncated(tmp_path: Path) -> None:
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip at all" * 10)
    with pytest.raises(IntegrityError, match="no end-of-central-directory"):
        read_zip_index(junk)
    path = ours(tmp_path, {"a.txt": b"a" * 100})
    data = path.read_bytes()
    path.write_bytes(data[:-10])
    with pytest.raises(IntegrityError):
        read_zip_index(path)


def test_read_member_limits(tmp_path: Path) -> None:
    path = ours(tmp_path, {"config/ninfer.toml": b"[server]\n", "big.bin": b"x" * 10_000})
    assert read_member(path, "config/ninfer.toml", max_bytes=1024) == b"[server]\n"
    with pytest.raises(IntegrityError, match="more than the 1024 allowed"):
        read_member(path, "big.bin", max_bytes=1024)
    with pytest.raises(IntegrityError, match="missing"):
        read_member(path, "nope", max_bytes=1024)


def test_duplicate_member_names_reported(tmp_path: Path) -> None:
    path = tmp_path / "dup.zip"
    with (
        pytest.warns(UserWarning, match="Duplicate name"),
        zipfile.ZipFile(path, "w") as zf,
    ):
        zf.writestr("bin/engine.exe", b"good")
        zf.writestr("bin/engine.exe", b"evil")
    results = list(iter_member_digests(path))
    assert [r.problems for r in results] == [(), ("member name appears more than once in the archive",)]
    with pytest.raises(IntegrityError, match="listed more than once"):
        read_member(path, "bin/engine.exe", max_bytes=100)


def test_read_member_from_an_index_read_once(tmp_path: Path) -> None:
    """The caller's index locates the member; its bytes are still checked (size and CRC)."""
    path = ours(tmp_path, {"config/ninfer.toml": b"[server]\n", "big.bin": b"x" * 10_000})
    index = read_zip_index(path)
    assert read_member(path, "config/ninfer.toml", max_bytes=1024, index=index) == b"[server]\n"
    with pytest.raises(IntegrityError, match="more than the 1024 allowed"):
        read_member(path, "big.bin", max_bytes=1024, index=index)
    with pytest.raises(IntegrityError, match="missing"):
        read_member(path, "nope", max_bytes=1024, index=index)
    at = [m.name for m in index].index("config/ninfer.toml")
    patch_central(path, at, crc=0x12345678)
    with pytest.raises(IntegrityError, match="does not match its declared size and CRC"):
        read_member(path, "config/ninfer.toml", max_bytes=1024, index=read_zip_index(path))


def test_index_reads_local_headers_in_shared_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ``pread`` serves every local header inside it (issue 13: a 10k-member index read
    each header with three calls); the index is the same as member-by-member reading gives."""
    files = {f"f/{i:04d}.txt": bytes([i % 251]) * 100 for i in range(300)}
    path = ours(tmp_path, files)
    reads: list[int] = []
    real = os.pread

    def counted(fd: int, n: int, offset: int) -> bytes:
        reads.append(offset)
        return real(fd, n, offset)

    monkeypatch.setattr(os, "pread", counted)
    index = read_zip_index(path)
    assert len(index) == 300 and 1 <= len(reads) <= 2
    for m in index:
        assert read_member(path, m.name, max_bytes=1000, index=index) == files[m.name]
    assert len({id(m.date_time) for m in index}) == 1  # one shared tuple for one timestamp


def test_a_local_extra_field_longer_than_the_first_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninfer_release.packaging import _zipread

    monkeypatch.setattr(_zipread, "_HEADER_READ", 40)  # the first read stops inside the extra field
    extra = b"\xfe\xca" + (300).to_bytes(2, "little") + bytes(range(256)) + bytes(44)
    path = tmp_path / "x.zip"
    with zipfile.ZipFile(path, "w") as z:
        info = zipfile.ZipInfo("a.txt")
        info.extra = extra
        z.writestr(info, b"hello")
        z.writestr("b.txt", b"world")
    index = read_zip_index(path)
    assert index[0].local_extra == extra and index[0].central_extra == extra
    assert index[0].data_offset == 30 + len("a.txt") + len(extra)
    assert [read_member(path, n, max_bytes=10, index=index) for n in ("a.txt", "b.txt")] == [
        b"hello",
        b"world",
    ]
