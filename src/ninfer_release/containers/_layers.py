"""Deterministic tar layers and gzip streams (DESIGN.md §5 "Layers"; cases C24, C36).

A layer is a plan (a sorted tuple of :class:`LayerEntry`) written by :func:`write_layer` into a
gzip blob. Every header field that could carry the build machine into the bytes is fixed:

* entries sorted by POSIX path, parents before children, every parent directory present;
* uid/gid 0 — except a directory the recipe gives to the image's user (the checkpoint mount,
  which must be writable by the non-root user the image runs as) — empty user/group names,
  mtime = the source-date epoch, modes 0644/0755;
* POSIX.1-2001 (pax) format but no pax timestamp records — integer mtimes never need one, and
  atime/ctime are never written; a pax record appears only for a path longer than ustar allows;
* gzip member header with MTIME 0, no FNAME (flags 0x00), XFL 0 and OS byte
  :data:`ninfer_release.reproducible.GZIP_OS_BYTE` (RFC 1952 §2.3), whatever the output name.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import sys
import tarfile
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Literal, Protocol, TypeVar, cast

from ninfer_release.errors import InputError, Problem
from ninfer_release.hashing import CHUNK
from ninfer_release.reproducible import DIR_MODE, FILE_MODE, GZIP_OS_BYTE

from ._gunzip import crc32

T = TypeVar("T")

#: Mode of an executable regular file inside a layer.
EXEC_MODE = 0o755
#: The only modes a layer entry may have (anything else is normalised by the recipe loader).
ALLOWED_MODES = frozenset({FILE_MODE, EXEC_MODE})
#: zlib level of every gzip stream we write (fixed: the level changes the bytes).
GZIP_LEVEL = 6

EntryKind = Literal["file", "dir", "symlink"]


class StreamSource(Protocol):
    """The bytes of a file entry that is neither a path nor in memory: a member of a staged archive
    read as a stream (``size`` bytes; :meth:`open` is called once, when the entry is written)."""

    @property
    def size(self) -> int:
        """The entry's size in bytes."""
        ...

    def open(self) -> BinaryIO:
        """A stream of the entry's ``size`` bytes."""
        ...


@dataclass(frozen=True, kw_only=True)
class LayerEntry:
    """One entry of a layer: a regular file, a directory or a symbolic link.

    ``path`` is relative POSIX without a leading slash (``opt/ninfer/bin/ninfer-server``).
    A file's bytes come from ``source`` (a file), ``data`` (in memory) or ``stream`` (a member of
    an archive being read, :class:`StreamSource`). ``uid``/``gid`` are the
    numeric owner written into the tar header (0 unless the entry must be the image user's).
    """

    path: str
    kind: EntryKind
    mode: int = FILE_MODE
    uid: int = 0
    gid: int = 0
    source: Path | None = None
    data: bytes | None = None
    target: str = ""
    origin: str = ""  # where the bytes came from (staged path, archive member), for SBOM records
    stream: StreamSource | None = None


@dataclass(frozen=True, kw_only=True)
class LayerFile:
    """A regular file as written into a layer: path, mode, size in bytes and digests (lowercase hex)."""

    path: str
    mode: int
    size: int
    sha256: str
    sha1: str
    origin: str = ""


@dataclass(frozen=True, kw_only=True)
class LayerBlob:
    """A written layer: ``digest`` of the gzip blob, ``diff_id`` of the uncompressed tar, sizes in bytes."""

    digest: str
    diff_id: str
    size: int
    uncompressed_size: int
    files: tuple[LayerFile, ...] = field(default=())
    symlinks: tuple[tuple[str, str], ...] = field(default=())


def check_layer_path(path: str, *, file: str, field_path: str) -> str:
    """Normalise an in-image path to relative POSIX form, refusing anything that escapes the root.

    ``/opt/x`` and ``opt/x/`` become ``opt/x``. Refused: empty paths, ``..`` components, backslashes,
    NUL or other control characters, and ``.`` components.

    Raises:
        InputError: the path is unsafe; the message names ``file`` and ``field_path``.
    """
    problem = layer_path_problem(path)
    if problem is not None:
        raise InputError(problems=[Problem(file=file, field=field_path, message=problem)])
    return path.strip("/")


def layer_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be an in-image path, or ``None`` when it is safe (see :func:`check_layer_path`)."""
    if not isinstance(path, str) or not path.strip("/"):
        return f"{path!r} is not a path inside the image"
    if "\\" in path:
        return f"{path!r} contains a backslash; use forward slashes"
    if any(ord(c) < 0x20 or c == "\x7f" for c in path):
        return f"{path!r} contains a control character"
    parts = path.strip("/").split("/")
    if ".." in parts:
        return f"{path!r} escapes the image root (..)"
    if any(p in ("", ".") for p in parts):
        return f"{path!r} has an empty or '.' component"
    return None


def symlink_escapes(link_path: str, target: str) -> bool:
    """True when a symlink at ``link_path`` pointing to ``target`` resolves outside the image root.

    Absolute targets are interpreted inside the image root (as a container sees them) and are safe
    unless they climb with ``..`` past the root.
    """
    base = [] if target.startswith("/") else list(PurePosixPath(link_path).parent.parts)
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not base:
                return True
            base.pop()
        else:
            base.append(part)
    return False


def complete_entries(entries: Iterable[LayerEntry]) -> tuple[LayerEntry, ...]:
    """Add every missing parent directory (mode 0755) and sort by path (parents first).

    Raises:
        InputError: two entries share a path, or a path is both a file and a parent directory.
    """
    by_path: dict[str, LayerEntry] = {}
    problems: list[Problem] = []
    for e in entries:
        if e.path in by_path:
            problems.append(Problem(file=e.origin or e.path, message=f"{e.path}: listed twice in one layer"))
            continue
        by_path[e.path] = e
    for e in list(by_path.values()):
        parts = e.path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            existing = by_path.get(parent)
            if existing is None:
                by_path[parent] = LayerEntry(path=parent, kind="dir", mode=DIR_MODE)
            elif existing.kind != "dir":
                problems.append(
                    Problem(
                        file=e.origin or e.path, message=f"{parent}: is a {existing.kind} and a directory"
                    )
                )
    if problems:
        raise InputError(problems=problems)
    return tuple(sorted(by_path.values(), key=lambda e: e.path.split("/")))


class HashingWriter:
    """Wrap a binary output: SHA-256 and count of every byte written (hash while writing, no re-read)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.raw.write(data)
        self.sha256.update(data)
        self.size += len(data)
        return len(data)

    def tell(self) -> int:
        return self.size


#: Bytes written to an output file before the kernel is asked to start writing them to disk.
WRITE_BEHIND = 8 << 20
#: ``sync_file_range(2)`` flag: start the write-back of the range's dirty pages, do not wait.
_SYNC_FILE_RANGE_WRITE = 2


@functools.cache
def _start_writeback() -> Callable[[int, int, int], object] | None:
    """Linux's ``sync_file_range(fd, offset, nbytes, SYNC_FILE_RANGE_WRITE)`` from the C library
    (ctypes releases the GIL around it), or ``None`` where there is none (then no hint is given)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):  # pragma: no cover - a C library without it
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return lambda fd, offset, n: fn(fd, offset, n, _SYNC_FILE_RANGE_WRITE)


#: glibc ``mallopt(3)`` parameters (``malloc.h``): ``M_TRIM_THRESHOLD`` and ``M_MMAP_THRESHOLD``.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: What :func:`retain_freed_memory` sets: allocations up to 32 MiB (glibc's largest allowed
#: mmap threshold) come from the heap, and up to 64 MiB freed at its top are kept, not returned.
MALLOC_SETTINGS = ((_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, 64 << 20))


@functools.cache
def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt(param, value)`` (returns 1 on success), or ``None`` off glibc."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        fn = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - a C library without it (musl)
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int]
    fn.restype = ctypes.c_int
    return cast(Callable[[int, int], int], fn)


@functools.cache
def retain_freed_memory() -> bool:
    """Ask the C library's allocator (glibc) to keep the memory the layer writers free, once per
    process (:data:`MALLOC_SETTINGS`); returns whether it was set (``False`` off glibc).

    The layers pass every byte through short-lived buffers of 1 MiB (inflated pieces, tar
    reads, deflate blocks and their output) on several threads. With glibc's defaults the top of
    each thread's heap is handed back to the kernel whenever 2 MiB lie free there, and the next
    buffers fault those pages in again, zero-filled. On the benchmark's 256 MiB image (issue 13)
    a build took ~89,000 page faults, ~27,000 with these settings, and 0.3-0.6 s less CPU (of
    4.7-5.0 s under load). The cost is memory kept until the process ends (peak RSS 86 -> 121
    MiB there). It changes no byte of any output; a process-wide setting, like the collector
    tuning of the CLI's start-up.
    """
    fn = _mallopt()
    if fn is None:
        return False
    return all(fn(param, value) == 1 for param, value in MALLOC_SETTINGS)


class WriteBehind:
    """A file written from start to end that asks the kernel to start writing what it holds to
    disk every :data:`WRITE_BEHIND` bytes, so the output's final ``fsync`` waits for little more
    than the last piece instead of for the whole file (issue 13: the benchmark's ~100 MB runtime
    layer blob stayed dirty until the layout was complete, and its flush then shared the disk
    with ``image.tar``'s; in a simulation of that order, 0.34-0.49 s of flushing after the layout
    became 0.24-0.34 s).

    With ``evict`` (a file nothing reads back, such as ``image.tar``) the hint is
    ``posix_fadvise(DONTNEED)``, which starts the write-back and lets the pages leave the page
    cache once clean; without it (a layer blob, which ``image.tar`` copies next) the pages stay
    cached: ``sync_file_range(SYNC_FILE_RANGE_WRITE)``, on Linux only. Hints never change the
    bytes; the caller's ``fsync`` is still what makes them durable.
    """

    def __init__(self, raw: BinaryIO, *, evict: bool = False) -> None:
        self.raw = raw
        self.size = 0
        self._hinted = 0
        self._evict = evict

    def write(self, data: bytes | bytearray | memoryview) -> int:
        n = self.raw.write(data)
        self.size += len(data)
        if self.size - self._hinted >= WRITE_BEHIND:
            self._hint()
        return n

    def _hint(self) -> None:
        """Start the write-back of what was written since the last hint."""
        start = self._writeback_function()
        if start is None:
            return
        self.raw.flush()
        start(self.raw.fileno(), self._hinted, self.size - self._hinted)
        self._hinted = self.size

    def _writeback_function(self) -> Callable[[int, int, int], object] | None:
        if self._evict:
            if not hasattr(os, "posix_fadvise"):
                return None
            return lambda fd, offset, n: os.posix_fadvise(fd, offset, n, os.POSIX_FADV_DONTNEED)
        return _start_writeback()

    def flush(self) -> None:
        self.raw.flush()


#: Calls an :class:`Ordered` thread may have queued (each holds up to a 1 MiB piece): bounds memory.
_MAX_QUEUED = 16


class Ordered:
    """One helper thread that runs calls one at a time, in the order they were submitted.

    The layer write hands two of them what must run in stream order but need not run on the
    thread that reads and frames the tar: one the SHA-256/SHA-1 of each file, the other the
    SHA-256 and CRC-32 of the tar stream and the writes and SHA-256 of the gzip bytes. hashlib
    and file I/O release the GIL, so they run on the other core beside the reading thread and
    the deflate workers. At most :data:`_MAX_QUEUED` calls wait; :meth:`submit` blocks beyond
    that. A call that raises re-raises in the submitting thread (at a later :meth:`submit` or
    :meth:`drain`).
    One thread at a time submits to an instance (the layer's thread; the build's thread for the
    flushes), which is what keeps "in submission order" meaningful.
    """

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="layer-ordered")
        self._queued: deque[Future[Any]] = deque()

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Queue ``fn(*args)`` after every call submitted before; returns its future."""
        fut = self._pool.submit(fn, *args)
        self._queued.append(fut)
        while len(self._queued) > _MAX_QUEUED or (self._queued and self._queued[0].done()):
            self._queued.popleft().result()
        return fut

    def drain(self) -> None:
        """Wait for every queued call (re-raising the first failure)."""
        while self._queued:
            self._queued.popleft().result()

    def close(self) -> None:
        """Drop what has not started and stop the thread (also after a failure)."""
        for fut in self._queued:
            fut.cancel()
        self._queued.clear()
        self._pool.shutdown(wait=True)


class HashingReader:
    """Wrap a binary stream: hash (SHA-256, SHA-1) and count every byte read.

    With ``ordered``, the hash updates run on that helper thread (in read order); read the
    digests only after :meth:`Ordered.drain` (or through :meth:`digests`, a future of them).
    """

    def __init__(self, raw: BinaryIO, *, ordered: Ordered | None = None) -> None:
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.sha1 = hashlib.sha1(usedforsecurity=False)
        self.size = 0
        self._ordered = ordered

    def _update(self, chunk: bytes) -> None:
        self.sha256.update(chunk)
        self.sha1.update(chunk)

    def read(self, n: int = -1) -> bytes:
        chunk = self.raw.read(n)
        if self._ordered is None:
            self._update(chunk)
        elif chunk:
            self._ordered.submit(self._update, chunk)
        self.size += len(chunk)
        return chunk

    def hexdigests(self) -> tuple[str, str]:
        """(SHA-256, SHA-1) of what was read, lowercase hex (after every update has run)."""
        return self.sha256.hexdigest(), self.sha1.hexdigest()


#: Uncompressed bytes per independently deflated block (fixed: it shapes the output bytes).
GZIP_BLOCK = 1 << 20
#: Preset dictionary carried from one block to the next (deflate's 32 KiB window).
_WINDOW = 32 * 1024


#: Probes per block for incompressible data: (count, bytes each); see :func:`block_level`.
_PROBES = (3, 8 * 1024)
#: A probe counts as incompressible when level 1 saves less than this fraction of it.
_MIN_SAVING = 0.02


def block_level(data: bytes, level: int) -> int:
    """The deflate level for one block: ``level``, or 0 (stored) when the block is incompressible.

    Three 8 KiB probes (start, middle, end) are compressed at level 1; if none saves 2 %, the
    block is already-compressed or random data and deflating it at ``level`` would only burn CPU
    (zlib's match search costs most on such data) for no gain. A pure function of the bytes, so
    the output stays reproducible.
    """
    count, size = _PROBES
    if len(data) < count * size * 4:
        return level
    step = (len(data) - size) // (count - 1)
    for i in range(count):
        probe = data[i * step : i * step + size]
        # one call: the same raw deflate stream as compressobj(1, DEFLATED, -MAX_WBITS) fed the
        # probe and finished (tested), at half the cost (one state set-up, no Python round trips)
        if len(zlib.compress(probe, 1, -zlib.MAX_WBITS)) < size * (1 - _MIN_SAVING):
            return level
    return 0


def _deflate_block(data: bytes, zdict: bytes, last: bool, level: int) -> bytes:
    level = block_level(data, level)
    if zdict:
        z = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, 9, zlib.Z_DEFAULT_STRATEGY, zdict)
    else:
        z = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, 9, zlib.Z_DEFAULT_STRATEGY)
    return z.compress(data) + z.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)


def default_workers() -> int:
    """Compression threads: the CPUs this process may use, at most 8."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


class GzipSink:
    """A write-only stream that gzips into ``out`` and hashes both sides (C24).

    ``diff_sha256`` covers the uncompressed bytes, ``blob_sha256`` the gzip bytes. The header is
    fixed: ``1f 8b 08 00 00000000 00 <GZIP_OS_BYTE>`` (no FNAME, MTIME 0).

    The deflate stream is cut into :data:`GZIP_BLOCK`-sized blocks, each deflated on its own
    (primed with the previous block's last 32 KiB, ended with a sync flush; the last with
    ``Z_FINISH``) — the pigz technique, so ``workers`` threads compress in parallel; a block
    that probes as incompressible is stored (:func:`block_level`). The bytes depend only on the
    data and the level, never on ``workers`` (tested).

    With more than one worker, the per-block bookkeeping runs on an :class:`Ordered` helper
    thread (``ordered``, else one of its own): the SHA-256 and CRC-32 of each uncompressed block,
    and the write and SHA-256 of each deflated block, in stream order — so the thread that
    frames the tar only buffers, and the digests are still those of exactly the bytes written.
    """

    def __init__(
        self,
        out: BinaryIO,
        *,
        level: int = GZIP_LEVEL,
        workers: int | None = None,
        ordered: Ordered | None = None,
    ) -> None:
        self._out = out
        self._level = level
        self._crc = 0
        self._buf = bytearray()
        self._tail = b""
        self.uncompressed_size = 0
        self.size = 0
        self.diff_sha256 = hashlib.sha256()
        self.blob_sha256 = hashlib.sha256()
        self._workers = workers if workers is not None else default_workers()
        self._pool = (
            ThreadPoolExecutor(self._workers, thread_name_prefix="layer-deflate")
            if self._workers > 1
            else None
        )
        self._owns_ordered = ordered is None and self._pool is not None
        self.ordered = Ordered() if self._owns_ordered else ordered
        self._pending: deque[Future[bytes]] = deque()
        self._emit(gzip_header())

    def _run(self, fn: Callable[[bytes], None], data: bytes) -> None:
        if self.ordered is None:
            fn(data)
        else:
            self.ordered.submit(fn, data)

    def _write_out(self, data: bytes) -> None:
        self._out.write(data)
        self.blob_sha256.update(data)

    def _account(self, block: bytes) -> None:
        self.diff_sha256.update(block)
        self._crc = crc32(block, self._crc)

    def _emit(self, data: bytes) -> None:
        if data:
            self.size += len(data)
            self._run(self._write_out, data)

    def _submit(self, block: bytes, *, last: bool) -> None:
        zdict, self._tail = self._tail, block[-_WINDOW:]
        self._run(self._account, block)
        if self._pool is None:
            self._emit(_deflate_block(block, zdict, last, self._level))
            return
        self._pending.append(self._pool.submit(_deflate_block, block, zdict, last, self._level))
        while len(self._pending) > 2 * self._workers or (len(self._pending) > 1 and self._pending[0].done()):
            self._emit(self._pending.popleft().result())

    def write(self, b: bytes | bytearray | memoryview) -> int:
        # Each block is copied once, from the buffered head and the new bytes together; only what
        # is left over is buffered. (Appending everything to the buffer and cutting blocks off its
        # front copied each byte twice and cost ~1.2 ms per MiB on the thread that frames the tar,
        # 0.23 s of the benchmark's 192 MiB runtime layer; issue 13.)
        view = memoryview(b).cast("B")
        n = len(view)
        self.uncompressed_size += n
        while len(self._buf) + len(view) >= GZIP_BLOCK:
            take = GZIP_BLOCK - len(self._buf)
            block = b"".join((self._buf, view[:take]))
            self._buf.clear()
            view = view[take:]
            self._submit(block, last=False)
        self._buf += view
        return n

    def tell(self) -> int:
        return self.uncompressed_size

    def finish(self) -> None:
        """Deflate the last block, wait for all blocks, write the CRC-32/ISIZE trailer (RFC 1952 §2.3.1)."""
        self._submit(bytes(self._buf), last=True)
        self._buf.clear()
        while self._pending:
            self._emit(self._pending.popleft().result())
        if self.ordered is not None:
            self.ordered.drain()  # the CRC-32 is complete only once every block was accounted
        size = (self.uncompressed_size & 0xFFFFFFFF).to_bytes(4, "little")
        self._emit(self._crc.to_bytes(4, "little") + size)
        if self.ordered is not None:
            self.ordered.drain()
        self.close()

    def close(self) -> None:
        """Stop the compression threads and the helper thread it owns (also after a failure)."""
        if self._pool is not None:
            for fut in self._pending:
                fut.cancel()
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._owns_ordered and self.ordered is not None:
            self.ordered.close()
            self._owns_ordered = False


def gzip_header() -> bytes:
    """The fixed 10-byte gzip member header: deflate, no flags, MTIME 0, XFL 0, fixed OS byte (C24)."""
    return b"\x1f\x8b\x08\x00" + b"\x00\x00\x00\x00" + b"\x00" + bytes([GZIP_OS_BYTE])


def gzip_bytes(data: bytes, *, level: int = GZIP_LEVEL, workers: int | None = None) -> bytes:
    """Gzip ``data`` in memory with the fixed header of :func:`gzip_header` (C24)."""
    buf = io.BytesIO()
    sink = GzipSink(buf, level=level, workers=workers)
    sink.write(data)
    sink.finish()
    return buf.getvalue()


def _tarinfo(entry: LayerEntry, *, epoch: int, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(entry.path)
    info.uid, info.gid = entry.uid, entry.gid
    info.uname = info.gname = ""
    info.mtime = int(epoch)
    info.devmajor = info.devminor = 0
    if entry.kind == "dir":
        info.type = tarfile.DIRTYPE
        info.mode = DIR_MODE
    elif entry.kind == "symlink":
        info.type = tarfile.SYMTYPE
        info.linkname = entry.target
        info.mode = 0o777
    else:
        info.type = tarfile.REGTYPE
        info.mode = entry.mode if entry.mode in ALLOWED_MODES else FILE_MODE
        info.size = size
    return info


def _file_size(entry: LayerEntry) -> int:
    if entry.data is not None:
        return len(entry.data)
    if entry.stream is not None:
        return entry.stream.size
    assert entry.source is not None
    return entry.source.stat().st_size


def _open(entry: LayerEntry) -> BinaryIO:
    if entry.data is not None:
        return io.BytesIO(entry.data)
    if entry.stream is not None:
        return entry.stream.open()
    assert entry.source is not None
    return entry.source.open("rb")


@dataclass(frozen=True, kw_only=True)
class TarContents:
    """What :func:`write_tar` wrote: the files (size, digests) and the symlinks ``(path, target)``."""

    files: tuple[LayerFile, ...]
    symlinks: tuple[tuple[str, str], ...]


#: Files at least this large have their digests computed on the :class:`Ordered` helper thread.
_BACKGROUND_HASH_MIN = 1 << 20


def write_tar(
    entries: Iterable[LayerEntry],
    out: BinaryIO | GzipSink | HashingWriter,
    *,
    epoch: int,
    digests: bool = True,
    ordered: Ordered | None = None,
) -> TarContents:
    """Write ``entries`` (completed and sorted by :func:`complete_entries`) as a tar stream to ``out``.

    Every file is read exactly once: the same read feeds the tar and the per-file digests
    (skipped when ``digests`` is false: the files then carry empty digests). With ``ordered``,
    files of :data:`_BACKGROUND_HASH_MIN` bytes or more are hashed on that helper thread while
    the next piece is read. Returns the files written (with size and digests) and the symlinks
    (path, target).
    """
    files: list[tuple[LayerEntry, tarfile.TarInfo, Future[tuple[str, str]] | tuple[str, str]]] = []
    links: list[tuple[str, str]] = []
    with tarfile.TarFile(
        fileobj=cast(BinaryIO, out), mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8", copybufsize=CHUNK
    ) as tar:
        for entry in entries:
            if entry.kind != "file":
                tar.addfile(_tarinfo(entry, epoch=epoch))
                if entry.kind == "symlink":
                    links.append((entry.path, entry.target))
                continue
            size = _file_size(entry)
            info = _tarinfo(entry, epoch=epoch, size=size)
            if not digests:
                with _open(entry) as raw:
                    tar.addfile(info, raw)
                files.append((entry, info, ("", "")))
                continue
            helper = ordered if size >= _BACKGROUND_HASH_MIN else None
            with _open(entry) as raw:
                reader = HashingReader(raw, ordered=helper)
                tar.addfile(info, cast(BinaryIO, reader))
            if reader.size != size:
                raise InputError(f"{entry.origin or entry.path}: changed size while being read")
            files.append((entry, info, helper.submit(reader.hexdigests) if helper else reader.hexdigests()))
    return TarContents(files=tuple(_layer_file(*f, digests=digests) for f in files), symlinks=tuple(links))


def _layer_file(
    entry: LayerEntry,
    info: tarfile.TarInfo,
    hexdigests: Future[tuple[str, str]] | tuple[str, str],
    *,
    digests: bool,
) -> LayerFile:
    """The :class:`LayerFile` of a written file entry (waits for digests computed in the background)."""
    sha256, sha1 = hexdigests.result() if isinstance(hexdigests, Future) else hexdigests
    origin = entry.origin if digests else ""
    return LayerFile(path=entry.path, mode=info.mode, size=info.size, sha256=sha256, sha1=sha1, origin=origin)


def write_layer(
    entries: Iterable[LayerEntry],
    dest: Path,
    *,
    epoch: int,
    workers: int | None = None,
    in_order: bool = False,
) -> LayerBlob:
    """Write a gzip-compressed layer blob to ``dest``; returns its digest, diff id and file list.

    ``entries`` are completed and sorted here (:func:`complete_entries`), so the bytes depend only
    on the entries' paths, kinds, modes and contents and on ``epoch`` (C36) — not on ``workers``
    (compression threads, default :func:`default_workers`). With ``in_order``, ``entries`` (e.g.
    a generator over a streamed archive) are already what :func:`complete_entries` would give and
    are written as they come.

    Raises:
        InputError: duplicate paths, or a source file changed while being read.
        OSError: ``dest`` cannot be written or a source cannot be read.
    """
    plan = entries if in_order else complete_entries(entries)
    with dest.open("wb") as f:
        sink = GzipSink(cast(BinaryIO, WriteBehind(f)), workers=workers)
        # The files' own digests on a helper thread of their own: beside the sink's stream-order
        # work (diff_id, CRC-32, the blob's writes and SHA-256) that one thread was the longest
        # chain of a large layer (issue 13); the two are independent streams.
        files = Ordered() if sink.ordered is not None else None
        try:
            written = write_tar(plan, sink, epoch=epoch, ordered=files)
            sink.finish()
        finally:
            sink.close()
            if files is not None:
                files.close()
    return LayerBlob(
        digest="sha256:" + sink.blob_sha256.hexdigest(),
        diff_id="sha256:" + sink.diff_sha256.hexdigest(),
        size=sink.size,
        uncompressed_size=sink.uncompressed_size,
        files=written.files,
        symlinks=written.symlinks,
    )
