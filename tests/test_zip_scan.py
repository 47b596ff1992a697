"""scan_zip: the archive's own SHA-256 and every member's digests from one front-to-back read.

It must give exactly what iter_member_digests gives (same checks, same messages) plus the digest
of the whole file, whatever the archive: ours, foreign, stored, hostile.
"""

from __future__ import annotations

import hashlib
import random
import zipfile
from pathlib import Path

import pytest

from ninfer_release.errors import IntegrityError
from ninfer_release.packaging import (
    iter_member_digests,
    read_zip_index,
    scan_zip,
)
from zip_support import foreign, ours, patch_central


def _same_as_streaming(path: Path, **kwargs: float) -> None:
    scan = scan_zip(path, **kwargs)  # type: ignore[arg-type]
    data = path.read_bytes()
    assert scan.size == len(data)
    assert scan.sha256 == hashlib.sha256(data).hexdigest()
    assert list(scan.members) == list(iter_member_digests(path, **kwargs))  # type: ignore[arg-type]
    # The caller's index, read once for several uses, gives the very same scan (issue 13).
    assert scan_zip(path, index=read_zip_index(path), **kwargs) == scan  # type: ignore[arg-type]


def test_members_spanning_many_read_blocks(tmp_path: Path) -> None:
    """Members of 0 bytes to 11 MiB (several 4 MiB read blocks), some incompressible (stored)."""
    rng = random.Random(7)  # noqa: S311 - incompressible test filler, not security
    files = {
        "NOTICE.txt": b"notice\n" * 100,
        "bin/big.dll": rng.randbytes(3 << 20) + b"\0" * (8 << 20),
        "bin/empty.dll": b"",
        "bin/noise.bin": rng.randbytes(5 << 20),
        "licenses/a.txt": b"x",
    }
    path = ours(tmp_path, files)
    scan = scan_zip(path, sha1=False)
    got = {d.name: d for d in scan.members}
    for name, data in files.items():
        assert got[name].ok, got[name].problems
        assert got[name].sha256 == hashlib.sha256(data).hexdigest()
        assert got[name].sha1 == ""
    assert [m.method for m in scan.members] == [8, 8, 0, 0, 0]
    _same_as_streaming(path)


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_foreign_archives(tmp_path: Path, method: int) -> None:
    _same_as_streaming(foreign(tmp_path, {"x/y.txt": b"hello" * 100, "z": b"zz", "e": b""}, method))


def test_unsafe_bomb_and_total_members_are_reported_not_read(tmp_path: Path) -> None:
    path = foreign(tmp_path, {"ok.txt": b"ok", "../evil.dll": b"payload", "zeros.bin": bytes(1_000_000)})
    _same_as_streaming(path, max_ratio=100)
    _same_as_streaming(path, max_total=500)
    scan = scan_zip(path, max_ratio=100)
    assert [d.ok for d in scan.members] == [True, False, False]
    assert scan.members[1].size == scan.members[2].size == 0


def test_size_and_crc_lies(tmp_path: Path) -> None:
    path = foreign(tmp_path, {"a.txt": b"x" * 5000, "b.txt": b"y" * 5000})
    patch_central(path, 0, usize=10)
    patch_central(path, 1, crc=0x12345678)
    _same_as_streaming(path)
    a, b = scan_zip(path).members
    assert a.problems == ("cannot be read: inflates past 10 bytes",)
    assert b.problems[0].startswith("CRC-32 ")


def test_truncated_deflate_stream(tmp_path: Path) -> None:
    """A member whose declared compressed size cuts its deflate stream short."""
    path = foreign(tmp_path, {"a.txt": bytes(range(256)) * 400, "b.txt": b"b"})
    (first, _) = list(iter_member_digests(path))
    assert first.ok
    csize = zipfile.ZipFile(path).getinfo("a.txt").compress_size
    patch_central(path, 0, csize=csize - 5)
    _same_as_streaming(path)
    assert scan_zip(path).members[0].problems == ("cannot be read: deflate stream is truncated",)


def test_structural_damage_raises(tmp_path: Path) -> None:
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip at all" * 10)
    with pytest.raises(IntegrityError, match="no end-of-central-directory"):
        scan_zip(junk)


def test_a_proven_member_is_bound_by_its_stored_bytes_not_inflated(tmp_path: Path) -> None:
    """``proven``: a member whose stream the caller proved is hashed, not inflated; its digests are
    the proven content's only when its stored bytes are that stream and its headers declare it."""
    from ninfer_release.packaging._zipread import ProvenStream

    path = tmp_path / "p.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.bin", b"proven content " * 5000)
        z.writestr("b.txt", b"other")
    (a, _) = read_zip_index(path)
    stream = path.read_bytes()[a.data_offset : a.data_offset + a.compressed_size]
    content = b"proven content " * 5000
    right = ProvenStream(
        stream_sha256=hashlib.sha256(stream).hexdigest(),
        size=len(content),
        crc32=a.crc32,
        sha256=hashlib.sha256(content).hexdigest(),
        method=8,
    )
    plain = scan_zip(path, sha1=False)
    assert scan_zip(path, sha1=False, proven={"a.bin": right}) == plain
    wrong_stream = ProvenStream(**{**right.__dict__, "stream_sha256": "0" * 64})
    (da, db) = scan_zip(path, sha1=False, proven={"a.bin": wrong_stream}).members
    assert da.problems == ("its stored bytes are not the stream that was proven to inflate to it",)
    assert db == plain.members[1]
    wrong_size = ProvenStream(**{**right.__dict__, "size": len(content) + 1})
    (da, _) = scan_zip(path, sha1=False, proven={"a.bin": wrong_size}).members
    assert da.problems == ("its headers do not declare the proven size, CRC-32 and method",)
