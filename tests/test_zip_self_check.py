"""The build's self-check (issue 13): ``finish_zip`` reads the archive back once, hashing it whole
while every member is inflated against the digests of the bytes that were compressed; the final
verify of the set reuses that read, so a build reads its zip once after writing it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
from pathlib import Path
from typing import Any

import pytest

import ninfer_release.packaging as packaging
import ninfer_release.packaging._zipwrite as zipwrite
from flow_support import RELEASE, samples
from ninfer_release.errors import IntegrityError
from ninfer_release.packaging import CompressedMember, PlanEntry, ZipLayout, compress_members, finish_zip

EPOCH = 315532800
CHUNK = 64 << 10
FILES = {
    "bin/a.dll": b"MZ" + b"runtime " * 40000,
    "bin/noise.bin": random.Random(7).randbytes(2 * CHUNK + 5),  # noqa: S311 - test data (stored)
    "licenses/MIT.txt": b"MIT licence text\n" * 50,
}


def _laid_out(tmp_path: Path) -> tuple[ZipLayout, list[CompressedMember]]:
    layout = ZipLayout.create(tmp_path)
    entries = [PlanEntry(name=n, data=FILES[n]) for n in sorted(FILES)]
    return layout, compress_members(entries, workdir=tmp_path, chunk_size=CHUNK, layout=layout)


def test_the_digest_of_the_self_check_pass_is_hashlib_over_the_file(tmp_path: Path) -> None:
    layout, members = _laid_out(tmp_path)
    result = finish_zip(layout, members, tmp_path / "p.zip", epoch=EPOCH)
    data = (tmp_path / "p.zip").read_bytes()
    assert result.sha256 == hashlib.sha256(data).hexdigest() and result.size == len(data)
    assert result.scan is not None and result.scan.sha256 == result.sha256
    assert [(d.name, d.size, d.sha256, d.crc32) for d in result.scan.members] == [
        (m.name, m.size, m.sha256, m.crc32) for m in members
    ]
    assert all(d.ok for d in result.scan.members)


def test_out_of_order_members_are_self_checked_too(tmp_path: Path) -> None:
    layout = ZipLayout.create(tmp_path)
    entries = [PlanEntry(name=n, data=FILES[n]) for n in sorted(FILES, reverse=True)]
    members = compress_members(entries, workdir=tmp_path, chunk_size=CHUNK, layout=layout)
    result = finish_zip(layout, members, tmp_path / "p.zip", epoch=EPOCH)
    assert result.sha256 == hashlib.sha256((tmp_path / "p.zip").read_bytes()).hexdigest()
    assert result.scan is not None and all(d.ok for d in result.scan.members)


def _damage_first_member(monkeypatch: pytest.MonkeyPatch) -> None:
    """Damage the first member's stream on disk after it was written, before the self-check."""
    real = zipwrite._fill_local_headers

    def fill_then_damage(layout: ZipLayout, ordered: list[CompressedMember], *, epoch: int) -> list[int]:
        offsets = real(layout, ordered, epoch=epoch)
        first = ordered[0]
        n = min(64, first.compressed_size)  # not one bit: it might be a flush block's padding
        at = first.spool_offset + (first.compressed_size - n) // 2
        data = os.pread(layout.file.fileno(), n, at)
        os.pwrite(layout.file.fileno(), bytes(b ^ 0xFF for b in data), at)
        return offsets

    monkeypatch.setattr(zipwrite, "_fill_local_headers", fill_then_damage)


def test_a_member_damaged_on_disk_fails_and_leaves_no_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout, members = _laid_out(tmp_path)
    _damage_first_member(monkeypatch)
    with pytest.raises(IntegrityError, match=r"bin/a\.dll"):
        finish_zip(layout, members, tmp_path / "p.zip", epoch=EPOCH)
    assert not (tmp_path / "p.zip").exists() and not layout.path.exists()


def test_a_big_member_is_proven_as_it_is_written_and_only_hashed_by_the_self_check(tmp_path: Path) -> None:
    """A member of 256 KiB or more is re-inflated while written (one sequential inflate of what
    was written, compared with the pieces); the self-check binds it by its stored bytes' SHA-256."""
    layout, members = _laid_out(tmp_path)
    by_name = {m.name: m for m in members}
    a = by_name["bin/a.dll"]
    data_at = a.spool_offset
    stream = os.pread(layout.file.fileno(), a.compressed_size, data_at)
    assert a.stream_sha256 == hashlib.sha256(stream).hexdigest()
    assert by_name["licenses/MIT.txt"].stream_sha256 == ""  # small: the self-check inflates it
    result = finish_zip(layout, members, tmp_path / "p.zip", epoch=EPOCH)
    assert result.scan is not None and all(d.ok for d in result.scan.members)


def test_a_deflate_that_does_not_give_the_bytes_back_is_not_proven_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the engine to deflate a piece into a stream of other bytes, the re-inflate would not
    prove it; the self-check then inflates the member and fails the build."""
    import ninfer_release.packaging._compress as compress

    real = compress._deflate_piece

    def wrong(data: bytes, zdict: bytes | None, level: int, final: bool) -> bytes:
        return real(data[:-1] + b"!" if len(data) == CHUNK else data, zdict, level, final)

    monkeypatch.setattr(compress, "_deflate_piece", wrong)
    layout, members = _laid_out(tmp_path)
    assert {m.name: m.stream_sha256 for m in members}["bin/a.dll"] == ""
    with pytest.raises(IntegrityError, match=r"bin/a\.dll"):
        finish_zip(layout, members, tmp_path / "p.zip", epoch=EPOCH)


def test_bytes_other_than_the_compressed_ones_fail(tmp_path: Path) -> None:
    """A stream that inflates cleanly (size and CRC as its header says) to other bytes still fails."""
    layout, members = _laid_out(tmp_path)
    lied = [dataclasses.replace(m, sha256="0" * 64) if m.name == "licenses/MIT.txt" else m for m in members]
    with pytest.raises(IntegrityError, match=r"licenses/MIT\.txt: inflates to \d+ bytes with SHA-256"):
        finish_zip(layout, lied, tmp_path / "p.zip", epoch=EPOCH)
    assert not (tmp_path / "p.zip").exists()


def _count_scans(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    scanned: list[Path] = []
    real = packaging.scan_zip

    def counted(path: Path, **kwargs: Any) -> packaging.ZipScan:
        scanned.append(path)
        return real(path, **kwargs)

    monkeypatch.setattr(zipwrite, "scan_zip", counted)
    monkeypatch.setattr(packaging, "scan_zip", counted)  # what the set's verify calls
    return scanned


def test_a_build_reads_each_zip_once_after_writing_it_and_fails_on_damage(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninfer_release.build import build_lane

    src = samples(tmp_path_factory)
    monkeypatch.setenv("NINFER_DEFLATE_CACHE", "off")
    scanned = _count_scans(monkeypatch)
    build_lane(RELEASE, "rtx4090", inputs=src, out=tmp_path / "ok", env=dict(os.environ), offline=True)
    assert len(scanned) == 1  # the self-check; the final verify of the set reused its read
    (zip_path,) = (tmp_path / "ok" / "rtx4090").glob("*.zip")
    sums = (tmp_path / "ok" / "rtx4090" / "SHA256SUMS").read_text()
    assert f"{hashlib.sha256(zip_path.read_bytes()).hexdigest()}  {zip_path.name}" in sums
    _damage_first_member(monkeypatch)
    with pytest.raises(IntegrityError):
        build_lane(RELEASE, "rtx4090", inputs=src, out=tmp_path / "bad", env=dict(os.environ), offline=True)
    assert not (tmp_path / "bad").exists()


def test_verify_with_the_self_checks_scan_reports_what_it_reports_reading_the_zip(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from flow_support import release_out
    from ninfer_release.releases._verify import verify_set

    directory = release_out(tmp_path_factory) / "rtx4090"
    (zip_path,) = directory.glob("*.zip")
    scan = packaging.scan_zip(zip_path, sha1=True)  # as the build's self-check gives it
    assert verify_set(directory, zip_scan=scan) == verify_set(directory)
    # A scan that took no SHA-1 cannot vouch for the SPDX SHA1s: the set fails, never passes.
    blind = verify_set(directory, zip_scan=packaging.scan_zip(zip_path, sha1=False))
    assert not blind.ok
    assert any(
        "SHA1 of 'NOTICE.txt' cannot be checked: the read of the zip took no SHA-1" in f
        for f in blind.failures
    )
    # The scan is taken as the zip's read: one naming other bytes fails the set, as a read would.
    other = dataclasses.replace(scan, sha256="0" * 64)
    assert not verify_set(directory, zip_scan=other).ok
