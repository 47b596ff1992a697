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


def check_target(target: Path, *, replace_marked: str | None = None) -> bool:
    """Whether :func:`staged_directory` may create ``target`` (False) or replace it (True).

    ``replace_marked`` names a marker file: a ``target`` that is a real directory (not a symlink)
    holding that regular file is one of ours and may be replaced; anything else that exists is refused.

    Raises:
        InputError: ``target`` exists and may not be replaced (exit 4).
    """
    if not (target.exists() or target.is_symlink()):
        return False
    if replace_marked is None:
        raise InputError(f"{target}: already exists; refusing to overwrite (choose a new --out)")
    marker = target / replace_marked
    if target.is_symlink() or not target.is_dir() or marker.is_symlink() or not marker.is_file():
        raise InputError(
            f"{target}: exists and is not an output directory of ninfer-release (no {replace_marked} "
            "in it); refusing to replace it"
        )
    return True


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False if unsupported."""
    import ctypes
    import errno

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _replace_directory(stage: Path, target: Path) -> None:
    """Put ``stage`` at ``target`` and remove the directory that was there.

    Atomic where the kernel swaps directories (``RENAME_EXCHANGE``): ``target`` is always either
    the old or the new directory. Elsewhere two renames leave a moment without ``target``; a
    failure of the second puts the old directory back.
    """
    if _exchange(stage, target):
        shutil.rmtree(stage)  # now the old directory
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    old.rmdir()
    os.rename(target, old)
    try:
        os.rename(stage, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def staged_directory(target: Path, *, replace_marked: str | None = None) -> Iterator[Path]:
    """Yield an empty staging directory that becomes ``target`` when the block succeeds.

    On any exception the staging directory is removed and ``target`` is untouched. With
    ``replace_marked`` (a marker file name, see :func:`check_target`) an existing output
    directory of ours is replaced only once the new one is complete.

    Raises:
        InputError: ``target`` already exists and may not be replaced (never merged).
    """
    replacing = check_target(target, replace_marked=replace_marked)
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
            if replacing:
                _replace_directory(stage, target)
            else:
                os.rename(stage, target)
        except OSError as exc:
            if target.exists() and not replacing:
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
