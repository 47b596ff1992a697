"""The zip writer's early write-back (fdatasync on a helper thread) never changes the bytes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from ninfer_release.packaging import PlanEntry, _zipwrite, compress_members, write_zip


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
