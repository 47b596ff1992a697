"""What the two on-disk stores share: the publish lock, the staging directory, verified copies.

Both ``dir://`` (an OCI layout) and ``files://`` (a ``<tag>/<name>`` tree for a web server)
serialise publishers with an exclusive ``fcntl.flock`` on ``ROOT/.ninfer-publish.lock``, so
check-then-write is exact between concurrent publishers on one host. Bytes are staged in
``ROOT/.ninfer-tmp/`` (cleared by whoever takes the lock next, so a killed publisher leaves only
garbage there), verified against the digest and size they were planned with, fsynced and renamed
into place. The flock is advisory and local: it does not protect a store on a network file system
shared between hosts (docs/publishing.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from ninfer_release.errors import IntegrityError, Problem, PublishError
from ninfer_release.releases._publish import Blob

LOCK_NAME = ".ninfer-publish.lock"
TMP_NAME = ".ninfer-tmp"
_CHUNK = 1 << 20  # 1 MiB


@contextlib.contextmanager
def locked_store(root: Path, *, prepare: Callable[[], None] | None = None) -> Iterator[Path]:
    """Hold the store's exclusive lock; yield a fresh, empty staging directory inside ``root``.

    ``prepare`` runs once the lock is held (e.g. to write ``oci-layout`` in a new store). The
    staging directory is removed on success and on any error; after a kill the next holder clears it.

    Raises:
        OSError: ``root`` cannot be created or locked.
        PublishError: ``ROOT/.ninfer-tmp`` is a file or a symlink (exit 7; it is left as it is).
    """
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if prepare is not None:
            prepare()
        staging = root / TMP_NAME
        if staging.is_symlink() or (staging.exists() and not staging.is_dir()):
            # Not a directory a publisher of ours left: never removed, never written through.
            message = "exists and is not the store's staging directory (a file or a symlink); remove it"
            raise PublishError(problems=[Problem(file=str(staging), message=message)])
        # Staging left by a killed publisher is garbage once we hold the lock.
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            yield staging
        finally:
            # Gone on success and on a refusal alike (nothing partial left, issue 9); only a
            # killed publisher leaves it, and the next holder clears it above.
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def write_verified(blob: Blob, dest: Path) -> None:
    """Write ``blob``'s bytes (``data`` or the file at ``path``) to the new file ``dest``.

    The bytes are hashed as they are copied and must be exactly ``blob.digest`` / ``blob.size``
    (a file changed since it was planned is caught); ``dest`` is fsynced and made 0644. On any
    failure ``dest`` is removed.

    Raises:
        IntegrityError: the bytes are not the planned ones (exit 5).
        FileExistsError: ``dest`` exists (never overwritten).
    """
    h = hashlib.sha256()
    size = 0
    try:
        with dest.open("xb") as out:
            if blob.data is not None:
                h.update(blob.data)
                out.write(blob.data)
                size = len(blob.data)
            else:
                assert blob.path is not None
                with blob.path.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        h.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        got = "sha256:" + h.hexdigest()
        if got != blob.digest or size != blob.size:
            raise IntegrityError(
                problems=[
                    Problem(
                        file=str(blob.path or blob.title or blob.digest),
                        message=f"is {size} bytes / {got}, expected {blob.size} bytes / "
                        f"{blob.digest} (changed since it was hashed?)",
                    )
                ]
            )
        dest.chmod(0o644)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            dest.unlink()
        raise
