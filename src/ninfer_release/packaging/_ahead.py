"""Hash-ahead: the big staged files a warm rebuild only hashes, hashed while the build starts up.

On a rebuild whose deflate-cache record for a redistributable is signed, the staged file is read
for its SHA-256 only (``_compress.Compressor._take_signed``: it must be the lock's; the stream is
copied from the cache). That read is the longest chain of an unchanged rebuild: the `--full`
lane's 433 MB cuBLAS DLL is 0.6 s of SHA-256 on one core here, and it used to start only after
the start-up (imports, the release definition, the plan: ~0.45 s on one core, issue 13).

:func:`start` (called by the CLI's ``build`` before it imports the build) reads the lane's lock
(``dependencies.lock.json``, at most :data:`~._staged.MAX_DOCUMENT` bytes) and hashes, on one helper
thread, largest first, each listed staged file of at least :data:`AHEAD_MIN` bytes whose signed
record the cache holds for the lock's SHA-256 and the file's size (so a cold build reads nothing
here: its files have no record). :meth:`HashAhead.claim` gives the build a file's SHA-256 and size
only when the file is still the one that was hashed: the same device, inode, mode, size, mtime
and ctime (ns) before the read and at the claim (any write or ``utime`` changes the ctime). A file
changed less than :data:`RACY_NS` before its read started is not trusted by its identity (the
"racy git" rule: file times are coarse, one clock tick of several ms, or 1 s on some file systems,
so a second write in the tick of the first would leave them equal); a freshly staged file is read
by the build. The rule compares the file's times with this machine's clock: on a network file
system whose server's clock runs behind by more than :data:`RACY_NS` it cannot tell, so stage on
a local disk (or set ``NINFER_DEFLATE_CACHE=off``) there. Otherwise, or when the file was not
started yet, the build reads the file itself as before; a claim of a file being hashed waits for
it. So each staged byte is still read once, and the digest the build checks against the lock is of
the bytes the file holds.

Nothing here raises: a lock, cache or file that cannot be read means no hash-ahead for it; the
build reports its problems itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ninfer_release.packaging._cache import DeflateCache

#: Files smaller than this (bytes) are left to the build: their read is short.
AHEAD_MIN = 8 << 20
#: A file whose mtime or ctime is this close (ns) to the start of its read is read by the build.
RACY_NS = 2_000_000_000
#: How long :meth:`HashAhead.stop` waits for the helper, in seconds.
STOP_WAIT_S = 10.0
#: Bytes per read. Large, so that the helper takes the GIL rarely while the main thread imports.
_STEP = 16 << 20

_PENDING, _RUNNING, _DONE, _TAKEN = range(4)


@dataclass(frozen=True)
class StatIdentity:
    """What a ``stat`` says of a file's bytes: equal before and after, nothing wrote to it.

    Not ``packaging.FileIdentity``: that one leaves the ctime out on purpose (the seal's ``chmod``
    moves it); here the ctime is what ``utime`` cannot put back. Also what verify's scan started
    ahead is checked against (``releases/_scan_worker.py``)."""

    device: int
    inode: int
    mode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> StatIdentity:
        return cls(st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True)
class _Hashed:
    identity: StatIdentity
    sha256: str
    size: int


class _Job:
    def __init__(self) -> None:
        self.state = _PENDING
        self.result: _Hashed | None = None
        self.done = threading.Event()


class HashAhead:
    """The staged files being hashed ahead of the build (one helper thread, in the given order).

    ``paths``: real paths (``os.path.realpath``) of regular files. :meth:`stop` ends the helper.
    """

    def __init__(self, paths: Sequence[str]) -> None:
        self._lock = threading.Lock()
        self._jobs = {p: _Job() for p in paths}  # a claim takes its job out (duplicates: one)
        self._queue = list(self._jobs.items())
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hash-ahead", daemon=True)
        self._thread.start()

    @property
    def paths(self) -> tuple[str, ...]:
        """The files this hash-ahead was given, in order."""
        return tuple(p for p, _ in self._queue)

    def _run(self) -> None:
        for path, job in self._queue:
            with self._lock:
                if self._stopped.is_set() or job.state != _PENDING:
                    continue
                job.state = _RUNNING
            try:
                job.result = _hash_file(path, self._stopped)
            except Exception:  # noqa: BLE001 - never raises (module docstring): the build reads it
                job.result = None
            finally:
                job.state = _DONE
                job.done.set()

    def claim(self, path: str) -> tuple[str, int] | None:
        """``(sha256 hex, size in bytes)`` of the file at ``path`` when it was hashed ahead and is
        unchanged since (module docstring); ``None`` otherwise (the caller reads it). Each file is
        claimed at most once; a file still being hashed is waited for, one not started is left."""
        key = os.path.realpath(path)
        with self._lock:
            job = self._jobs.pop(key, None)
            if job is None:
                return None
            if job.state == _PENDING:
                job.state = _TAKEN
                return None
        job.done.wait()
        hashed = job.result
        if hashed is None:
            return None
        now = _identity_now(path)
        return (hashed.sha256, hashed.size) if now == hashed.identity else None

    def stop(self) -> None:
        """Stop hashing (a file being read stops at its next step) and wait for the helper, at most
        :data:`STOP_WAIT_S` (a read the kernel blocks in, a hung mount, is left to the daemon thread)."""
        self._stopped.set()
        self._thread.join(STOP_WAIT_S)


def _identity_now(path: str) -> StatIdentity | None:
    """The identity of the file at ``path`` now (following symlinks, as the build opens it)."""
    try:
        return StatIdentity.of(Path(path).stat())
    except OSError:
        return None


def _hash_file(path: str, stopped: threading.Event) -> _Hashed | None:
    """The SHA-256 of the regular file at ``path`` when nothing changed it while it was read."""
    started = time.time_ns()
    # Not blocking: a FIFO or device put in the file's place must not hang the open.
    flags = (
        os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    )
    fd = os.open(path, flags)
    try:
        before = StatIdentity.of(os.fstat(fd))
        if not stat.S_ISREG(before.mode):
            return None
        if started - max(before.mtime_ns, before.ctime_ns) < RACY_NS:
            return None  # changed within a clock tick or two of the read: its times cannot tell
        digest = hashlib.sha256()
        buffer = bytearray(_STEP)
        view = memoryview(buffer)
        size = 0
        while not stopped.is_set():
            n = os.readv(fd, [buffer])  # the GIL is released while the kernel copies
            if n == 0:
                break
            size += n
            if size > before.size:
                return None  # it grew while read
            digest.update(view[:n])  # released while hashing, too
        else:
            return None
        if size != before.size:
            return None  # it shrank while read (a change after ``before`` fails the claim anyway)
        return _Hashed(identity=before, sha256=digest.hexdigest(), size=size)
    finally:
        os.close(fd)


def _lock_of(inputs: Path, lane: str | None) -> list[Path]:
    """The lock files of the lane (``DIR/<lane>/`` or ``DIR`` itself), or of every lane in ``DIR``."""
    from ninfer_release.packaging._staged import LOCK

    if lane is not None:  # the tree ``build._inputs.lane_staged_dir`` picks
        root = inputs / lane if (inputs / lane).is_dir() else inputs
        return [root / LOCK] if (root / LOCK).is_file() else []
    return sorted(inputs.glob(f"*/{LOCK}"))


def _wanted(lock: Path, cache: DeflateCache, levels: Sequence[int], chunk_size: int) -> list[tuple[int, str]]:
    """The staged files of ``lock`` worth hashing ahead (module docstring): (size in bytes, real path)."""
    from ninfer_release.digests import is_sha256_hex
    from ninfer_release.packaging._staged import MAX_DOCUMENT

    with lock.open("rb") as f:
        data = f.read(MAX_DOCUMENT + 1)
    if len(data) > MAX_DOCUMENT:
        return []
    document = json.loads(data)
    listed = document.get("redistributables") if isinstance(document, dict) else None
    if not isinstance(listed, list):
        return []
    root = lock.parent
    out: list[tuple[int, str]] = []
    for item in listed:
        name = item.get("file") if isinstance(item, dict) else None
        sha256 = item.get("sha256") if isinstance(item, dict) else None
        if not (isinstance(name, str) and isinstance(sha256, str) and is_sha256_hex(sha256)):
            continue
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts:
            continue
        path = root / name
        try:
            st = path.stat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size < AHEAD_MIN:
            continue
        for level in levels:
            found = cache.find(sha256, size=st.st_size, level=level, chunk_size=chunk_size)
            if found is not None and found.signed:
                out.append((st.st_size, os.path.realpath(path)))
                break
    return out


_current: HashAhead | None = None


def start(inputs: Path, lane: str | None, env: Mapping[str, str]) -> HashAhead | None:
    """Hash ahead the staged files of ``lane`` (every lane in ``inputs`` when ``None``) that the
    deflate cache of ``env`` holds signed records for; ``None`` when there are none (or no cache).
    The build's compressor claims from it (:func:`current`) until :meth:`HashAhead.stop`."""
    global _current
    try:
        from ninfer_release.packaging._cache import DeflateCache
        from ninfer_release.packaging._compress import DEFAULT_CHUNK

        cache = DeflateCache.from_env(env)
        if cache is None:
            return None
        levels = cache.levels(DEFAULT_CHUNK)
        wanted = [w for lock in _lock_of(inputs, lane) for w in _wanted(lock, cache, levels, DEFAULT_CHUNK)]
        # The largest first: it is the longest chain; a smaller one claimed before its turn is
        # read by the build meanwhile, on the other core.
        paths = [path for _, path in sorted(wanted, key=lambda w: -w[0])]
    except (OSError, ValueError, TypeError, AttributeError, RecursionError):
        return None  # e.g. a lock nested too deep to decode: the build reports it (exit 4)
    if not paths:
        return None
    try:
        _current = HashAhead(paths)
    except RuntimeError:  # no thread can be started: the build reads the files itself
        return None
    return _current


def current() -> HashAhead | None:
    """The hash-ahead of this process's build, if one runs."""
    return _current


def stop() -> None:
    """Stop this process's hash-ahead (if any) and forget it."""
    global _current
    ahead, _current = _current, None
    if ahead is not None:
        ahead.stop()
