"""The zip writer's early write-back (fdatasync on a helper thread) never changes the bytes."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from ninfer_release.packaging import (
    CompressedMember,
    PlanEntry,
    ZipLayout,
    _zipwrite,
    compress_members,
    write_zip,
)


def _noise(seed: int, size: int) -> bytes:
    """Incompressible, deterministic bytes (SHA-256 in counter mode)."""
    blocks = (hashlib.sha256(f"{seed}:{i}".encode()).digest() for i in range(size // 32 + 1))
    return b"".join(blocks)[:size]


def test_write_back_every_few_kib_gives_the_same_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"bin/{i}.dll": _noise(i, 100_000 + i) for i in range(8)}
    members = compress_members([PlanEntry(name=n, data=d) for n, d in files.items()], workdir=tmp_path)
    plain = write_zip(members, tmp_path / "plain.zip", epoch=0)
    calls: list[int] = []
    real = os.fdatasync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(_zipwrite, "_WRITEBACK_EVERY", 4096)
    monkeypatch.setattr(os, "fdatasync", counted)
    synced = write_zip(members, tmp_path / "synced.zip", epoch=0)
    assert calls  # the write-back path ran (one at a time: a new one starts when the last is done)
    assert synced.path.read_bytes() == plain.path.read_bytes()
    assert synced.sha256 == plain.sha256 == hashlib.sha256(plain.path.read_bytes()).hexdigest()


def test_a_laid_out_zip_is_written_back_while_it_is_compressed_with_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninfer_release.packaging import ZipLayout, finish_zip
    from ninfer_release.packaging._compress import WriteBack

    files = {f"bin/{i}.dll": _noise(i, 100_000 + i) for i in range(8)}
    entries = [PlanEntry(name=n, data=d) for n, d in sorted(files.items())]
    plain = write_zip(compress_members(entries, workdir=tmp_path), tmp_path / "plain.zip", epoch=0)
    calls: list[int] = []
    real = os.fdatasync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counted)
    layout = ZipLayout.create(tmp_path)
    layout.writeback = WriteBack(4096)
    members = compress_members(entries, workdir=tmp_path, layout=layout)
    assert calls  # written back during the compression, before finish_zip's fsync
    laid_out = finish_zip(layout, members, tmp_path / "laid-out.zip", epoch=0)
    assert laid_out.path.read_bytes() == plain.path.read_bytes()
    assert not [t for t in threading.enumerate() if t.name.startswith("zip-sync")]  # helper stopped


def _laid_out_members(tmp_path: Path) -> tuple[ZipLayout, list[CompressedMember]]:

    files = {f"bin/{i}.dll": _noise(i, 100_000 + i) for i in range(4)}
    entries = [PlanEntry(name=n, data=d) for n, d in sorted(files.items())]
    layout = ZipLayout.create(tmp_path)
    return layout, compress_members(entries, workdir=tmp_path, layout=layout)


def _no_trace(tmp_path: Path, out: Path) -> None:
    assert not out.exists()
    assert not list(tmp_path.glob(".layout-*"))  # the temp zip is gone
    assert not [t for t in threading.enumerate() if t.name.startswith("zip-sync")]  # helper stopped


def test_a_failed_final_write_back_renames_nothing_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The self-check runs while the archive's last bytes are written back: the rename still waits
    for that write-back, and its error fails the build with nothing left behind."""
    from ninfer_release.packaging import finish_zip

    layout, members = _laid_out_members(tmp_path)

    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", failing)
    out = tmp_path / "p.zip"
    with pytest.raises(OSError, match="Input/output"):
        finish_zip(layout, members, out, epoch=0)
    _no_trace(tmp_path, out)


def test_a_self_check_failure_during_the_write_back_stops_it_and_renames_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninfer_release.errors import Problem
    from ninfer_release.packaging import SelfCheckError, finish_zip

    layout, members = _laid_out_members(tmp_path)
    release = threading.Event()
    real = os.fdatasync

    def slow(fd: int) -> None:
        release.wait(30)  # still in flight when the self-check fails
        real(fd)

    def failing_check(*args: object, **kwargs: object) -> object:
        release.set()
        raise SelfCheckError(problems=[Problem(file="zip", message="differs")], stale=[])

    monkeypatch.setattr(os, "fdatasync", slow)
    monkeypatch.setattr(_zipwrite, "self_check", failing_check)
    out = tmp_path / "p.zip"
    with pytest.raises(SelfCheckError):
        finish_zip(layout, members, out, epoch=0)
    _no_trace(tmp_path, out)
