"""Atomic writes (foundation leaf): a file or a directory appears complete or not at all.

Files go through a temp file in the same directory, ``fsync``, then ``os.replace``. Directories
are built under a hidden staging name beside the target and renamed into place; an existing
target is never overwritten.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ninfer_release.errors import InputError


def write_bytes(path: Path, data: bytes, *, mode: int = 0o644, overwrite: bool = True) -> None:
    """Write ``data`` to ``path`` atomically with permission bits ``mode``.

    Raises:
        InputError: ``overwrite`` is false and ``path`` exists.
        OSError: the directory is not writable.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                # link() fails if the target exists: no window in which another writer is clobbered.
                os.link(tmp, path)
            except FileExistsError:
                raise InputError(f"{path}: already exists; refusing to overwrite") from None
            finally:
                os.unlink(tmp)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def staged_directory(target: Path) -> Iterator[Path]:
    """Yield an empty staging directory that becomes ``target`` when the block succeeds.

    On any exception the staging directory is removed and ``target`` is untouched.

    Raises:
        InputError: ``target`` already exists (never overwritten, never merged).
    """
    if target.exists() or target.is_symlink():
        raise InputError(f"{target}: already exists; refusing to overwrite (choose a new --out)")
    target.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        yield stage
        # mkdtemp makes 0700; the set is public, and its mode must not depend on the umask.
        for d in (stage, *(p for p in stage.rglob("*") if p.is_dir())):
            d.chmod(0o755)
        for p in (stage, *stage.rglob("*")):
            if p.is_file():
                with p.open("rb") as f:
                    os.fsync(f.fileno())
        try:
            os.rename(stage, target)
        except OSError as exc:
            if target.exists():
                raise InputError(f"{target}: appeared while building; refusing to overwrite") from exc
            raise
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
