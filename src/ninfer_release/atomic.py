"""Atomic writes (foundation leaf): a file or a directory appears complete or not at all.

Files go through a temp file in the same directory, ``fsync``, then ``os.replace``, and the
directory is synced after the rename. Directories are built under a hidden staging name beside
the target; every file *and every directory* in it is synced (a directory's entries are durable
only once the directory itself is: POSIX ``fsync``), then it is renamed into place and the parent
synced; an existing target is never overwritten. Each staging directory has a sibling lock file
holding its owner's pid and ``flock``: a later run removes stale ones (kill -9 leaves them) and
only those.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ninfer_release.errors import InputError, Problem


def write_bytes(path: Path, data: bytes, *, mode: int = 0o644, overwrite: bool = True) -> None:
    """Write ``data`` to ``path`` atomically with permission bits ``mode``.

    Raises:
        InputError: ``overwrite`` is false and ``path`` exists; or the directory cannot take the
            file (ENOSPC, EROFS, EACCES...: :func:`output_error`, exit 4; nothing is left).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        if exc.errno in OUTPUT_ERRNOS:
            raise output_error(exc, path) from None
        raise
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
        _sync_directory(path.parent)  # the rename itself survives a crash
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in OUTPUT_ERRNOS:
            raise output_error(exc, path) from None
        raise


def _sync_directory(path: Path) -> None:
    """``fsync`` the directory ``path`` (its entries made durable); a file system that cannot sync
    a directory (EINVAL, e.g. some network mounts) is left as it is.

    Raises:
        OSError: it cannot be opened, or the sync failed otherwise (EIO...).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    finally:
        os.close(fd)


def fsync_path(path: Path) -> None:
    """``fsync`` the file or directory at ``path``: its bytes, or a rename inside it, made durable.

    Raises:
        OSError: ``path`` cannot be opened or synced.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def within(path: Path, directory: Path) -> bool:
    """Whether ``path`` is ``directory`` or lies inside it, symlinks resolved (``realpath``; either
    may not exist yet). The one test of "an output would land in (or a removal would take) an
    input": ``sign --out SET``, ``publish SET --to files://SET/pub``, ``build --clean`` of an
    ``OUT`` holding ``--inputs`` (issue 36).
    """
    inner, outer = Path(os.path.realpath(path)), Path(os.path.realpath(directory))
    return inner == outer or outer in inner.parents


def check_target(
    target: Path, *, replace_marked: str | None = None, hint: str = "choose a new --out"
) -> bool:
    """Whether :func:`staged_directory` may create ``target`` (False) or replace it (True).

    ``replace_marked`` names a marker file: a ``target`` that is a real directory (not a symlink)
    holding that regular file is one of ours and may be replaced; anything else that exists is refused.
    ``hint`` ends the refusal of an existing ``target`` when nothing may be replaced (what to do instead).

    Raises:
        InputError: ``target`` exists and may not be replaced (exit 4).
    """
    if not (target.exists() or target.is_symlink()):
        return False
    if replace_marked is None:
        raise InputError(f"{target}: already exists; refusing to overwrite ({hint})")
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


#: ``errno`` values that mean "this output location cannot take the output": an environment
#: fault of the output directory (exit 4 naming it), not an internal error (issue 9).
OUTPUT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG, errno.ENOTDIR}
)
#: Suffix of the lock file beside each staging directory: it holds the owner's pid and an
#: ``flock`` for as long as the owner lives, which is how a later run proves a partial is stale.
LOCK_SUFFIX = ".lock"
_PARTIAL = ".partial"
_OWNER = "ninfer-release partial, pid "


def output_error(exc: OSError, target: Path) -> InputError:
    """The one-line exit-4 error for an OS fault while writing ``target``: the output location the
    user named (never a hidden staging name) and the OS reason, e.g.
    ``out: cannot write: No space left on device``.
    """
    return InputError(problems=[Problem(file=str(target), message=f"cannot write: {exc.strerror or exc}")])


def _relabel(exc: InputError, stage: Path, target: Path) -> InputError:
    """``exc`` with the hidden staging path replaced by ``target`` in every problem's file."""
    prefix = str(stage)
    if not any(p.file.startswith(prefix) for p in exc.problems):
        return exc
    return InputError(
        problems=[
            dataclasses.replace(p, file=str(target) + p.file.removeprefix(prefix))
            if p.file.startswith(prefix)
            else p
            for p in exc.problems
        ]
    )


def _flock_free(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unclaimed(owner: bytes, stage: Path) -> bool:
    """An empty lock of a run killed between creating it and writing its owner line.

    :func:`staged_directory` writes the owner line before it makes the directory, so an empty,
    unlocked lock file has no directory (``stage`` absent) and nothing else to clean. A live run
    whose lock is caught in that same instant only loses the file (it still holds the inode's
    ``flock``, and its directory is never touched, since removal goes by lock files).
    """
    return owner == b"" and not os.path.lexists(stage)


def remove_stale_partials(parent: Path) -> list[Path]:
    """Remove staging directories in ``parent`` left by killed runs; return what was removed.

    Only a directory ``.<name>.<random>.partial`` whose sibling ``<it>.lock`` names an owner pid
    (written by :func:`staged_directory`) and whose ``flock`` can be taken is removed: the kernel
    drops an ``flock`` when its owner dies, even on ``kill -9``, so a free lock proves the owner is
    gone; a live run holds its lock and is never touched. An empty unlocked lock file without a
    directory (a run killed before it wrote its owner line) is removed too. Anything else is left
    alone.
    """
    removed: list[Path] = []
    try:
        locks = sorted(parent.glob(f".*{_PARTIAL}{LOCK_SUFFIX}"))
    except OSError:
        return removed
    for lock in locks:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode) or not _flock_free(fd):
                continue
            stage = lock.with_name(lock.name.removesuffix(LOCK_SUFFIX))
            owner = os.pread(fd, 128, 0)
            if not owner.startswith(_OWNER.encode()) and not _unclaimed(owner, stage):
                continue
            if stage.is_dir() and not stage.is_symlink():
                shutil.rmtree(stage, ignore_errors=True)
                removed.append(stage)
            with contextlib.suppress(OSError):
                lock.unlink()
        finally:
            os.close(fd)
    return removed


@contextlib.contextmanager
def staged_directory(
    target: Path, *, replace_marked: str | None = None, hint: str = "choose a new --out"
) -> Iterator[Path]:
    """Yield an empty staging directory that becomes ``target`` when the block succeeds.

    On any exception the staging directory is removed and ``target`` is untouched. With
    ``replace_marked`` (a marker file name, see :func:`check_target`) an existing output
    directory of ours is replaced only once the new one is complete. Stale staging directories
    of killed runs beside ``target`` are removed first (:func:`remove_stale_partials`).

    Raises:
        InputError: ``target`` already exists and may not be replaced (never merged); or the
            output location cannot be written (ENOSPC, EROFS, EACCES...: :func:`output_error`,
            exit 4).
    """
    replacing = check_target(target, replace_marked=replace_marked, hint=hint)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_partials(target.parent)
        # The lock file comes first: a run killed right after leaves a lock without a directory,
        # which the next run removes too.
        lock_fd, lock_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=_PARTIAL + LOCK_SUFFIX, dir=target.parent
        )
    except OSError as exc:
        raise output_error(exc, target) from None
    lock = stage = Path(lock_name)
    try:
        # Inside the try: a signal from here on removes the lock file (the finally below).
        stage = lock.with_name(lock.name.removesuffix(LOCK_SUFFIX))
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        os.write(lock_fd, f"{_OWNER}{os.getpid()}\n".encode())
        stage.mkdir(mode=0o700)
        yield stage
        # The set is public, and its mode must not depend on the umask.
        directories = [stage, *(p for p in stage.rglob("*") if p.is_dir())]
        for d in directories:
            d.chmod(0o755)
        for p in (stage, *stage.rglob("*")):
            if p.is_file():
                with p.open("rb") as f:
                    os.fsync(f.fileno())
        for d in reversed(directories):  # deepest first: each directory's entries, then its own
            _sync_directory(d)
        try:
            if replacing:
                _replace_directory(stage, target)
            else:
                os.rename(stage, target)
        except OSError as exc:
            if target.exists() and not replacing:
                raise InputError(f"{target}: appeared while building; refusing to overwrite") from exc
            raise
        _sync_directory(target.parent)
    except BaseException as exc:
        shutil.rmtree(stage, ignore_errors=True)
        if isinstance(exc, OSError) and exc.errno in OUTPUT_ERRNOS:
            raise output_error(exc, target) from None
        if isinstance(exc, InputError):
            raise _relabel(exc, stage, target) from None
        raise
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()
        os.close(lock_fd)
