"""Atomic outputs are durable (atomic.py): every file and directory is synced before its rename,
and the directory holding the rename after it — a crash leaves the old state or the whole new one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ninfer_release import atomic


def _record_syncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Each ``os.fsync`` as (path of the descriptor, its kind 'dir' or 'file'), in order."""
    synced: list[tuple[str, str]] = []
    real = os.fsync

    def recording(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        synced.append((path, "dir" if os.path.isdir(path) else "file"))
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return synced


def test_a_staged_directory_syncs_every_file_and_directory_then_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = _record_syncs(monkeypatch)
    target = tmp_path / "out"
    with atomic.staged_directory(target) as stage:
        (stage / "a" / "b").mkdir(parents=True)
        (stage / "a" / "b" / "f.txt").write_bytes(b"x")
        (stage / "top.txt").write_bytes(b"y")
        stage_name = str(stage)
    dirs = [p for p, kind in synced if kind == "dir"]
    # In the stage (before its rename): each file, then each directory deepest first.
    assert {p for p, kind in synced if kind == "file"} >= {f"{stage_name}/a/b/f.txt", f"{stage_name}/top.txt"}
    assert dirs[:3] == [f"{stage_name}/a/b", f"{stage_name}/a", stage_name]
    assert dirs[-1] == str(tmp_path)  # the rename made durable
    assert (target / "a" / "b" / "f.txt").read_bytes() == b"x"


def test_write_bytes_syncs_the_file_then_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = _record_syncs(monkeypatch)
    atomic.write_bytes(tmp_path / "f.json", b"{}\n")
    atomic.write_bytes(tmp_path / "g.json", b"{}\n", overwrite=False)
    kinds = [kind for _, kind in synced]
    assert kinds == ["file", "dir", "file", "dir"]
    assert synced[1][0] == synced[3][0] == str(tmp_path)


def test_a_directory_the_file_system_cannot_sync_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    real = os.fsync

    def no_dir_sync(fd: int) -> None:
        if os.path.isdir(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(errno.EINVAL, "Invalid argument")
        real(fd)

    monkeypatch.setattr(os, "fsync", no_dir_sync)
    atomic.write_bytes(tmp_path / "f.json", b"{}\n")
    with atomic.staged_directory(tmp_path / "out") as stage:
        (stage / "x").write_bytes(b"1")
    assert (tmp_path / "f.json").read_bytes() == b"{}\n" and (tmp_path / "out" / "x").read_bytes() == b"1"


def test_a_failing_directory_sync_fails_and_leaves_no_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    real = os.fsync

    def eio_on_dirs(fd: int) -> None:
        if os.path.isdir(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", eio_on_dirs)
    with pytest.raises(OSError), atomic.staged_directory(tmp_path / "out") as stage:
        (stage / "x").write_bytes(b"1")
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no stage, no lock left
