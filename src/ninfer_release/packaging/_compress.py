"""One read per input byte, both cores: size, CRC-32, SHA-256, SHA-1 and deflate (DESIGN.md §5, §11).

Every member's bytes are cut into fixed ``chunk_size`` pieces by offset alone. Each piece is
deflated independently (raw deflate, fixed level, memLevel 8, default strategy) with the previous
piece's last 32 KiB as preset dictionary, and ends with a sync flush (an empty stored block, byte
aligned), the last piece with ``Z_FINISH``. The concatenation is one valid deflate stream (the
technique of pigz), and because the cut points depend only on offsets, the bytes are the same for
any number of workers. The deflate engine (zlib-ng, :mod:`._zlib`) releases the GIL, so a thread
pool uses every core.

The reading thread reads each piece once; a piece of 256 KiB or more is hashed on two helper
threads in order (SHA-256 and CRC-32 on one, SHA-1 on the other; hashlib and crc32 release the
GIL), a smaller one on the reading thread. At most ``2 × workers`` pieces are in flight (and two
per member on the hash helpers), so memory stays flat (about ``4 × workers × chunk_size``)
whatever the file size. Compressed streams go to one spool file in ``workdir`` (never held in
memory), or straight into the zip's own file (:class:`ZipLayout`).

Stored or deflated is decided early and from content alone, by the rule :func:`_stored`: a
member is stored (method 0) iff the deflate output of its *first* piece (the first
``chunk_size`` bytes, deflated with the member's level; the whole member when it is one piece)
is not smaller than that piece. A pure function of those bytes and the deflate parameters
(level, piece size, engine): it never depends on timing or the worker count, so the bytes stay
deterministic. A stored member's remaining pieces are never deflated and its raw bytes are
written; a larger member is deflated whole once its first 4 MiB shrink, even if a later part
does not. While the first piece's deflate runs, at most ``workers - 1`` further pieces are
deflated speculatively (to keep the workers busy), so an incompressible member costs one or two
4 MiB trial deflates.

In a zip layout, a member of more than one piece or of 256 KiB or more is proven as it is
written (:class:`_Reinflate`: one sequential inflater on a helper thread takes the pieces' deflate
output in order and must give back exactly the pieces), and a deflate-cache hit while its staged
bytes are read (:class:`~._cache.StreamProof`); the self-check then hashes such a member's stored
bytes instead of inflating them again (``CompressedMember.stream_sha256``).

Determinism note: deflate output depends on the deflate implementation and version as well as on
the level; byte-identical rebuilds assume the same engine (``packaging.DEFLATE_ENGINE``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import os
import tempfile
from collections import deque
from collections.abc import Generator, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ninfer_release.errors import InputError, Problem
from ninfer_release.hashing import Digests
from ninfer_release.packaging import _ahead
from ninfer_release.packaging._cache import CacheEntry, DeflateCache, StreamProof, copy_stream
from ninfer_release.packaging._recipe import PackagePlan, PlanEntry
from ninfer_release.packaging._zipformat import DEFLATED, LIMIT32, LOCAL_FMT, STORED, encode_name
from ninfer_release.packaging._zlib import INFLATE_ERRORS, require_deflate_engine
from ninfer_release.packaging._zlib import engine as zlib
from ninfer_release.progress import SILENT, Progress

#: Size of the independently compressed pieces, in bytes. Part of the output byte format:
#: changing it changes every package larger than one piece.
DEFAULT_CHUNK = 4 << 20  # 4 MiB
_WINDOW = 32 << 10  # deflate history window, 32 KiB
#: A whole member at most this big is deflated on the calling thread: handing a 4 KiB deflate
#: (~50 µs) to a worker costs about as much CPU as the deflate itself (issue 13: 10k tiny files).
#: The bytes are the same either way (the same function, the same parameters).
_INLINE_MAX = 16 << 10
_MIN_CHUNK = 64 << 10


@dataclass(frozen=True, kw_only=True, slots=True)
class CompressedMember:
    """A member ready for the zip: its digests and where its deflate stream lies in the spool.

    ``size`` is the uncompressed size in bytes; ``crc32`` the zip CRC; ``sha256``/``sha1`` lowercase
    hex of the uncompressed bytes; ``method`` 0 (stored) or 8 (deflated); ``compressed_size`` the
    bytes the zip stores (``size`` when stored); the raw deflate stream is ``spool_length`` bytes at
    ``spool_offset`` of ``spool`` (for a stored member: its raw bytes). ``staged_path`` is the
    staged-tree path, ``None`` when generated. ``from_cache``: the stream was taken from the
    deflate cache. ``stream_sha256``: for a member laid out in a zip, the SHA-256 of the stream
    bytes that were proven to inflate to exactly the member's bytes while those were read — a cache
    hit's (:class:`~._cache.StreamProof`), or a member of more than one piece or at least 256 KiB
    deflated here, re-inflated as it was written (:class:`_Reinflate`; stored: its bytes' SHA-256);
    the self-check then hashes the member's stored bytes against it instead of inflating them
    (``""``: not proven, the self-check inflates it).
    """

    name: str
    staged_path: str | None
    size: int
    crc32: int
    sha256: str
    sha1: str
    method: int
    compressed_size: int
    spool: Path
    spool_offset: int
    spool_length: int
    from_cache: bool = False
    stream_sha256: str = ""

    @property
    def digests(self) -> Digests:
        """Size and digests of the uncompressed bytes."""
        return Digests(size=self.size, sha256=self.sha256, sha1=self.sha1)


#: Start writing a file back to disk every this many bytes (on a helper thread), so that the
#: final fsync waits for the tail only instead of the whole archive (about 1.1 s per GiB here).
WRITEBACK_EVERY = 64 << 20


class WriteBack:
    """Early write-back of one file being written: ``fdatasync`` on a helper thread every ``every``
    bytes written, one at a time (a new one starts when the last is done). The bytes never change;
    only when they reach the disk."""

    def __init__(self, every: int = WRITEBACK_EVERY) -> None:
        self.every = every
        self._unsynced = 0
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[None] | None = None

    def wrote(self, f: BinaryIO, n: int) -> None:
        """``n`` more bytes were written to ``f``; maybe start writing them back."""
        self._unsynced += n
        if self._unsynced < self.every or (self._pending is not None and not self._pending.done()):
            return
        if self._pending is not None:
            self._pending.result()  # an I/O error surfaces here
        f.flush()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zip-sync")
        self._pending = self._pool.submit(os.fdatasync, f.fileno())
        self._unsynced = 0

    def start_all(self, f: BinaryIO) -> None:
        """Start writing back everything written to ``f`` so far, without waiting for it (after the
        write-back in flight, on the same helper): :meth:`wait` then waits for both. The caller may
        read the file meanwhile (``finish_zip``'s self-check runs while the archive reaches the disk,
        issue 13)."""
        f.flush()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zip-sync")
        self._pending = self._pool.submit(_sync_after, self._pending, f.fileno())
        self._unsynced = 0

    def wait(self) -> None:
        """Wait for the write-back in flight (its error surfaces here) and stop the helper."""
        try:
            if self._pending is not None:
                self._pending.result()
        finally:
            self._pending = None
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None


def _sync_after(earlier: Future[None] | None, fd: int) -> None:
    """``fdatasync(fd)`` once ``earlier`` (run before it by the same one-thread helper) is done; its
    error surfaces here."""
    if earlier is not None:
        earlier.result()
    os.fdatasync(fd)


@dataclass(kw_only=True)
class ZipLayout:
    """An archive laid out in place: the streams go straight into the zip's own temp file.

    Each member's stream is preceded by room for its local header (``reserved``: name → the
    room's byte offset; the room ends where the member's stream starts, at its
    ``CompressedMember.spool_offset``: an int per member, not a record; issue 13);
    :func:`~ninfer_release.packaging.finish_zip` writes the
    headers into that room and the central directory at the end, so no stream is copied. Open it
    with :meth:`create` in the output's folder; ``finish_zip`` (or :meth:`discard`) ends it.
    """

    path: Path
    file: BinaryIO
    position: int = 0
    reserved: dict[str, int] = field(default_factory=dict)
    writeback: WriteBack = field(default_factory=WriteBack)

    @classmethod
    def create(cls, directory: Path) -> ZipLayout:
        """A new, empty layout file in ``directory`` (the folder the zip will be renamed into)."""
        fd, name = tempfile.mkstemp(prefix=".layout-", suffix=".zip.tmp", dir=directory)
        return cls(path=Path(name), file=os.fdopen(fd, "w+b"))

    def reserve(self, name: str, size: int) -> None:
        """Leave room for ``name``'s local header (zip64 sizes when ``size`` needs them)."""
        length = LOCAL_FMT.size + len(encode_name(name)[0]) + (20 if size >= LIMIT32 else 0)
        self.reserved[name] = self.position
        self.file.write(bytes(length))
        self.position += length

    def discard(self) -> None:
        """Close and delete the layout file (on failure, or after a fallback copy)."""
        with contextlib.suppress(OSError):
            self.writeback.wait()
        self.file.close()
        self.path.unlink(missing_ok=True)


def _entry_size(entry: PlanEntry) -> int:
    if entry.data is not None:
        return len(entry.data)
    try:
        return Path(entry.source_file).stat().st_size if entry.source_file is not None else 0
    except OSError:
        return 0  # reading it reports the problem


#: A piece at least this big is hashed on the helper threads (:class:`_Hashers`); a smaller one
#: on the calling thread, where handing it over would cost about as much as hashing it.
_HASH_OFFLOAD = 256 << 10
#: Pieces of one member whose hashing may be outstanding on the helpers (memory stays bounded).
_HASH_BACKLOG = 2


@dataclass(frozen=True, kw_only=True)
class _Hashers:
    """Helper threads that hash big pieces in order: SHA-256 and CRC-32 on one, SHA-1 on the other;
    ``prove`` inflates a deflate-cache hit's stream against the pieces (:class:`~._cache.StreamProof`).

    Each is a one-thread executor, so the pieces of a member are handled in submission order;
    hashlib, crc32 and inflate release the GIL, so the reading thread reads and writes meanwhile.
    """

    sha256: ThreadPoolExecutor
    sha1: ThreadPoolExecutor
    prove: ThreadPoolExecutor


@dataclass(kw_only=True)
class _State:
    entry: PlanEntry
    hashers: _Hashers | None = None
    sha256: hashlib._Hash = field(default_factory=hashlib.sha256)
    sha1: hashlib._Hash = field(default_factory=lambda: hashlib.sha1(usedforsecurity=False))
    crc: int = 0
    size: int = 0
    offset: int | None = None
    length: int = 0
    method: int | None = None  # decided when the first piece's deflate is done
    trial: _InFlight | None = None  # the first piece, whose deflate decides ``method``
    hashing: deque[tuple[Future[None], Future[None]]] = field(default_factory=deque)
    proof: _Reinflate | None = None  # a big member in a layout: its stream proven as it is written

    def update(self, piece: bytes) -> None:
        """Account for the next piece of the member's bytes (digests, CRC, size), in order."""
        self.size += len(piece)
        if self.hashers is None or len(piece) < _HASH_OFFLOAD:
            self.wait()  # what is still on the helpers comes first
            self._sha256_crc(piece)
            self.sha1.update(piece)
            return
        while len(self.hashing) >= _HASH_BACKLOG:
            for fut in self.hashing.popleft():
                fut.result()
        self.hashing.append(
            (
                self.hashers.sha256.submit(self._sha256_crc, piece),
                self.hashers.sha1.submit(self.sha1.update, piece),
            )
        )

    def _sha256_crc(self, piece: bytes) -> None:
        self.sha256.update(piece)
        self.crc = zlib.crc32(piece, self.crc)

    def wait(self) -> _State:
        """Wait until every piece given so far is hashed (an error of a helper surfaces here)."""
        while self.hashing:
            for fut in self.hashing.popleft():
                fut.result()
        return self


class _Reinflate:
    """The proof of a member deflated here, made while it is written (issue 13).

    Each piece's deflate output, as written to the zip, goes with the piece to the ``prove``
    helper, where *one* sequential raw inflater takes the outputs in order and must give back
    exactly the pieces (no assumption about where the pieces meet: it is the inflate any reader
    does); the stream's SHA-256 is taken in order on the ``sha1`` helper. The self-check then only
    hashes the member's stored bytes against it (:class:`~._zipread.ProvenStream`), instead of
    inflating it again in a serial pass after the last deflate. At most :data:`_HASH_BACKLOG`
    pieces wait on each helper (memory bound).
    """

    def __init__(self, hashers: _Hashers) -> None:
        self.hashers = hashers
        self.inflater = zlib.decompressobj(-15)
        self.digest = hashlib.sha256()
        self.failed = False
        self.pending: deque[Future[None]] = deque()

    def feed(self, piece: bytes, blob: bytes) -> None:
        """The next piece of the member and its deflate output, as written."""
        while len(self.pending) >= 2 * _HASH_BACKLOG:
            self.pending.popleft().result()
        self.pending.append(self.hashers.prove.submit(self._check, piece, blob))
        self.pending.append(self.hashers.sha1.submit(self.digest.update, blob))

    def _check(self, piece: bytes, blob: bytes) -> None:
        if self.failed:
            return
        try:
            out = self.inflater.decompress(blob, len(piece) + 1)
            self.failed = out != piece or bool(self.inflater.unconsumed_tail)
        except INFLATE_ERRORS:
            self.failed = True

    def finish(self) -> str:
        """The stream's SHA-256 when it inflated to exactly the pieces and ended there, else ``""``."""
        self.pending.append(self.hashers.prove.submit(self._end))
        while self.pending:
            self.pending.popleft().result()
        return "" if self.failed else self.digest.hexdigest()

    def _end(self) -> None:
        self.failed = self.failed or not (self.inflater.eof and not self.inflater.unused_data)


def _stored(first_piece: bytes, first_stream: bytes) -> bool:
    """The stored-or-deflated rule: stored iff the first piece's deflate output is not smaller.

    A pure function of the member's first ``chunk_size`` bytes and the deflate parameters (level,
    piece size, engine), so it never depends on timing or the worker count (module docstring).
    """
    return len(first_stream) >= len(first_piece)


def _deflate_piece(data: bytes, zdict: bytes | None, level: int, final: bool) -> bytes:
    if zdict:
        c = zlib.compressobj(level, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY, zdict)
    else:
        c = zlib.compressobj(level, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    head = c.compress(data)
    return head + c.flush(zlib.Z_FINISH if final else zlib.Z_SYNC_FLUSH)


def _pieces(entry: PlanEntry, chunk_size: int) -> Generator[tuple[bytes, bool], None, None]:
    """The entry's bytes as (piece, is_last), reading a staged file exactly once."""
    if entry.data is not None:
        view = entry.data
        n = len(view)
        if n == 0:
            yield b"", True
            return
        for start in range(0, n, chunk_size):
            yield view[start : start + chunk_size], start + chunk_size >= n
        return
    if entry.source_file is None:
        raise InputError(
            problems=[
                Problem(file="package plan", field=entry.name, message="generated bytes were not supplied")
            ]
        )
    try:
        # The file by its descriptor (``os.read``): a buffered ``open`` costs an ``fstat``, an
        # ``isatty`` and two objects per file, as much as the 4 KiB deflate (issue 13).
        fd = os.open(entry.source_file, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            # A small first read, then the rest of the piece: reading ``chunk_size`` allocates
            # the whole 4 MiB for a 4 KiB file (issue 13: 10k small files); the pieces are the same.
            piece = _read_up_to(fd, _INLINE_MAX + 1)
            if len(piece) > _INLINE_MAX:
                piece += _read_up_to(fd, chunk_size - len(piece))
            while True:
                nxt = _read_up_to(fd, chunk_size) if len(piece) == chunk_size else b""
                yield piece, not nxt
                if not nxt:
                    return
                piece = nxt
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputError(
            problems=[
                Problem(
                    file=entry.source_file, field=entry.name, message=f"cannot read: {exc.strerror or exc}"
                )
            ]
        ) from exc


def _read_up_to(fd: int, n: int) -> bytes:
    """The next ``n`` bytes of ``fd``, fewer only at its end (what a buffered ``read(n)`` gives)."""
    data = os.read(fd, n)
    if len(data) == n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = os.read(fd, n - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


@dataclass(frozen=True, kw_only=True)
class _Settings:
    """The checked settings of one :func:`compress_members` call.

    ``items`` in input order; ``level`` the deflate level 0-9; ``workers`` ≥ 1 threads;
    ``chunk_size`` ≥ 64 KiB, in bytes.
    """

    items: tuple[PlanEntry, ...]
    level: int
    workers: int
    chunk_size: int


def _settings(
    entries: PackagePlan | Iterable[PlanEntry], *, workers: int, level: int | None, chunk_size: int
) -> _Settings:
    """The entries and the level (the plan's, else 6, unless given), checked.

    Raises:
        ValueError: ``workers`` < 1, ``level`` outside 0-9, ``chunk_size`` < 64 KiB.
    """
    if isinstance(entries, PackagePlan):
        lvl = entries.deflate_level if level is None else level
        items = tuple(entries.entries)
    else:
        lvl = 6 if level is None else level
        items = tuple(entries)
    if workers < 1 or not 0 <= lvl <= 9 or chunk_size < _MIN_CHUNK:
        raise ValueError(f"bad compression settings: workers={workers} level={lvl} chunk_size={chunk_size}")
    return _Settings(items=items, level=lvl, workers=workers, chunk_size=chunk_size)


def _require_ready(items: Iterable[PlanEntry]) -> None:
    """Raises: InputError naming every generated entry whose bytes were not supplied."""
    missing = [e.name for e in items if not e.ready]
    if missing:
        raise InputError(
            problems=[
                Problem(file="package plan", field=n, message="generated bytes were not supplied")
                for n in missing
            ]
        )


@dataclass(frozen=True, kw_only=True)
class _Sink:
    """Where the streams go: ``spool`` (a new spool file, or the layout's file) from ``position``.

    ``opened`` is entered once; for a layout it does not close the layout's file.
    """

    spool: Path
    opened: contextlib.AbstractContextManager[BinaryIO]
    position: int


def _open_sink(workdir: Path, layout: ZipLayout | None) -> _Sink:
    """A fresh spool file ``workdir/.members-*.deflate``, or the layout's own file at its end."""
    if layout is None:
        fd, spool_name = tempfile.mkstemp(prefix=".members-", suffix=".deflate", dir=workdir)
        return _Sink(spool=Path(spool_name), opened=os.fdopen(fd, "wb"), position=0)
    return _Sink(spool=layout.path, opened=contextlib.nullcontext(layout.file), position=layout.position)


@dataclass(frozen=True, slots=True)
class _InFlight:
    """One piece read and (unless the member is stored) submitted to the deflate pool."""

    state: _State
    future: Future[bytes] | None
    piece: bytes
    last: bool


@dataclass(kw_only=True)
class _Pipeline:
    """The executor of one :func:`compress_members` call (mutable, lives inside its ``with``).

    Pieces are read and hashed on the calling thread and deflated on ``pool``; at most
    ``2 × workers`` are in flight (``pending``), and they are written to ``out`` strictly in
    input order, so ``position`` (bytes written to ``spool`` so far) gives each member's offset.
    ``done`` collects the finished members in input order.
    """

    settings: _Settings
    out: BinaryIO
    spool: Path
    position: int
    pool: ThreadPoolExecutor
    layout: ZipLayout | None
    progress: Progress
    cache: DeflateCache | None
    known: Mapping[str, str] | None
    workdir: Path
    hashers: _Hashers | None = None
    pending: deque[_InFlight] = field(default_factory=deque)
    done: list[CompressedMember] = field(default_factory=list)
    cached: set[str] = field(default_factory=set)  # names whose stream came from the cache

    def add(self, entry: PlanEntry) -> None:
        """Take ``entry``'s stream from the cache when its bytes are the key's, else deflate it."""
        s = self.settings
        found = _lookup(entry, self.cache, self.known, s.level, s.chunk_size)
        if found is not None and self._take_cached(entry, found):
            return
        pieces = _pieces(entry, s.chunk_size)
        first = next(pieces)
        if first[1] and len(first[0]) <= _INLINE_MAX:
            pieces.close()  # the member was all read: close its file now
            self._whole(entry, first[0])
            return
        self._deflate(entry, itertools.chain((first,), pieces))

    def _start_member(self, state: _State) -> None:
        """Record where the member's stream starts (after its header's room in a layout)."""
        if self.layout is not None:
            self.layout.position = self.position
            self.layout.reserve(state.entry.name, _entry_size(state.entry))
            self.position = self.layout.position
        state.offset = self.position

    def _take_cached(self, entry: PlanEntry, found: CacheEntry) -> bool:
        """Use the cached stream of ``found``; False when the bytes differ or the entry is corrupt.

        The staged file is read and hashed once (its SHA-256 must be the key, its SHA-1, CRC and
        size the record's). In a layout the stream is proven while the staged bytes are read (one
        sequential inflate compared with them: :class:`~._cache.StreamProof`) and then copied file
        to file into the zip from the same open file (a corrupt entry is deleted and the member
        deflated instead); the self-check binds the zip's bytes to the proven stream by its
        SHA-256. Without a layout the stream is linked and proven by :meth:`DeflateCache.lookup`.
        """
        self.drain()  # keep the result in input order
        assert self.cache is not None  # found comes from it
        if self.layout is not None:
            return self._take_proven(entry, found, self.cache)
        state = _read_and_hash(entry, self.settings.chunk_size, self.progress, self.hashers)
        if not _matches(state, found, self.known or {}):
            return False  # bytes differ from the key: deflate them
        hit = self.cache.lookup(
            found.key,
            size=found.size,
            level=self.settings.level,
            chunk_size=self.settings.chunk_size,
            workdir=self.workdir,
        )
        if hit is None:
            return False
        self.done.append(_cached_member(state, hit.path, 0, found))
        self.cached.add(entry.name)
        return True

    def _take_proven(self, entry: PlanEntry, found: CacheEntry, cache: DeflateCache) -> bool:
        """:meth:`_take_cached` in a layout: read, hash and prove the stream while copying it.

        The copy into the zip runs while the proof's inflate is still going (both read ``src``,
        which stays open); a proof that fails, bytes that are not the key's or a failed copy drop
        what was appended again (:meth:`_roll_back`).
        """
        assert self.layout is not None and self.hashers is not None
        if found.signed:
            return self._take_signed(entry, found, cache)
        src = cache.open_stream(found)
        if src is None:
            return False
        start = self.position
        with src:
            proof = StreamProof(found, src, worker=self.hashers.prove, hasher=self.hashers.sha1)
            try:
                state = _read_and_hash(entry, self.settings.chunk_size, self.progress, self.hashers, proof)
                self._start_member(state)
                copied = _copied(src, self.out, found.length)
                stream_sha256 = proof.finish()
            finally:
                proof.wait()
        matches = _matches(state, found, self.known or {})
        if not (copied and matches and stream_sha256 is not None):
            self._roll_back(start, entry.name)
            if matches and stream_sha256 is None:
                cache.reject(found)  # it does not inflate to the key's bytes
            return False
        cache.touch(found)
        member = _cached_member(state, self.spool, self.position, found)
        self.done.append(dataclasses.replace(member, stream_sha256=stream_sha256))
        self.layout.writeback.wrote(self.out, found.length)
        self.position += found.length
        self.cached.add(entry.name)
        return True

    def _take_signed(self, entry: PlanEntry, found: CacheEntry, cache: DeflateCache) -> bool:
        """:meth:`_take_proven` for a signed entry (``CacheEntry.signed``): no inflate.

        The staged file is read once and SHA-256 hashed (it must be the key and have the
        record's size; its SHA-1 and CRC-32 are the record's, computed from bytes of that
        SHA-256), while the stream is copied into the zip on the idle ``prove`` helper. The
        member carries the record's stream SHA-256, so the self-check hashes the copied bytes
        and a stream that is not the signed one fails it naming the key (the entry is deleted
        and the package built again without it: ``build/_native.py``).
        """
        assert self.layout is not None and self.hashers is not None
        src = cache.open_stream(found)
        if src is None:
            return False
        start = self.position
        with src:
            self._start_member(_State(entry=entry))
            copy = self.hashers.prove.submit(_copied, src, self.out, found.length)
            try:
                sha256, size = _staged_sha256(entry, self.settings.chunk_size, self.progress, self.hashers)
            finally:
                copied = copy.result()
        if not copied or (sha256, size) != ((self.known or {}).get(entry.staged_path or ""), found.size):
            self._roll_back(start, entry.name)
            return False
        cache.touch(found)
        self.done.append(_signed_member(entry, self.spool, self.position, found))
        self.layout.writeback.wrote(self.out, found.length)
        self.position += found.length
        self.cached.add(entry.name)
        return True

    def _roll_back(self, start: int, name: str) -> None:
        """Drop what a member appended to the layout from ``start`` on (its header room included)."""
        assert self.layout is not None
        self.out.seek(start)
        self.out.truncate()
        self.position = self.layout.position = start
        del self.layout.reserved[name]

    def _whole(self, entry: PlanEntry, data: bytes) -> None:
        """A whole member of at most :data:`_INLINE_MAX` bytes, done here in one go.

        The bytes and the record :meth:`_deflate` would give it (one piece deflated on this
        thread with no window, the rule :func:`_stored`, no proof: the self-check inflates it),
        without the per-piece machinery (futures, in-flight records, helper hand-offs), which
        cost several times the 4 KiB deflate itself (issue 13: 10k small files).
        """
        self.drain()  # the members stay in input order
        blob = _deflate_piece(data, None, self.settings.level, True)
        stored = _stored(data, blob)
        if stored:
            blob = data
        if self.layout is not None:
            self.layout.position = self.position
            self.layout.reserve(entry.name, len(data))
            self.position = self.layout.position
        offset = self.position
        self.out.write(blob)
        if self.layout is not None:
            self.layout.writeback.wrote(self.out, len(blob))
        self.position += len(blob)
        if data:
            self.progress.advance(len(data))
        self.done.append(
            CompressedMember(
                name=entry.name,
                staged_path=entry.staged_path,
                size=len(data),
                crc32=zlib.crc32(data),
                sha256=hashlib.sha256(data).hexdigest(),
                sha1=hashlib.sha1(data, usedforsecurity=False).hexdigest(),
                method=STORED if stored else DEFLATED,
                compressed_size=len(blob),
                spool=self.spool,
                spool_offset=offset,
                spool_length=len(blob),
            )
        )

    def _deflate(self, entry: PlanEntry, pieces: Iterator[tuple[bytes, bool]]) -> None:
        """Hash and submit ``entry``'s ``pieces`` (from :func:`_pieces`), each with the previous
        piece's window.

        While the first piece's deflate has not decided the method, only ``workers - 1`` more
        pieces are deflated speculatively (enough to keep the workers busy): incompressible data
        costs one or two trial pieces, not ``2 × workers``. The rule itself is :func:`_stored`.
        """
        s = self.settings
        state = _State(entry=entry, hashers=self.hashers)
        zdict: bytes | None = None
        for index, (piece, last) in enumerate(pieces):
            if index == 0:
                state.proof = self._proof_for(piece, last)
            state.update(piece)
            if state.method is None and index >= s.workers and state.trial is not None:
                _decide(state, state.trial)
            while len(self.pending) >= 2 * s.workers:
                self._drain_one()
            # A member already decided "stored" deflates nothing more (incompressible data
            # costs a hash and a copy, not a deflate).
            fut = None if state.method == STORED else self._submit(piece, zdict, s.level, last)
            item = _InFlight(state, fut, piece, last)
            if index == 0:
                state.trial = item
            self.pending.append(item)
            zdict = piece[-_WINDOW:] if not last else None

    def _proof_for(self, first: bytes, last: bool) -> _Reinflate | None:
        """A :class:`_Reinflate` for a member laid out in the zip whose first piece is ``first``
        (``last``: its only one), when it is big enough for the helper to pay: more than one
        piece, or at least 256 KiB; ``None`` otherwise (the self-check inflates it)."""
        if self.layout is None or self.hashers is None or (last and len(first) < _HASH_OFFLOAD):
            return None
        return _Reinflate(self.hashers)

    def _submit(self, piece: bytes, zdict: bytes | None, level: int, last: bool) -> Future[bytes]:
        """``piece``'s deflate: on a worker, or done here for a whole member of a few KiB."""
        if not (last and zdict is None and len(piece) <= _INLINE_MAX):
            return self.pool.submit(_deflate_piece, piece, zdict, level, last)
        done: Future[bytes] = Future()
        done.set_result(_deflate_piece(piece, zdict, level, last))
        return done

    def _drain_one(self) -> None:
        """Write the oldest piece in flight (its deflate output, or its raw bytes when stored)."""
        item = self.pending.popleft()
        state, fut, piece = item.state, item.future, item.piece
        blob = fut.result() if fut is not None and state.method != STORED else b""
        if state.method is None:  # the first piece decides, from its content alone
            _decide(state, item)
        if state.method == STORED:
            if fut is not None:
                fut.cancel()  # a piece submitted before the decision: its output is not used
            blob = piece
        if state.offset is None:
            self._start_member(state)
        if state.proof is not None and state.method == DEFLATED:
            state.proof.feed(piece, blob)
        self.out.write(blob)
        if self.layout is not None:
            self.layout.writeback.wrote(self.out, len(blob))
        self.position += len(blob)
        state.length += len(blob)
        if piece:
            self.progress.advance(len(piece))
        if item.last:
            self.done.append(_finish(state, self.spool))

    def drain(self) -> None:
        """Write every piece in flight."""
        while self.pending:
            self._drain_one()

    def cancel(self) -> None:
        """Cancel the deflates not started yet (on failure)."""
        for item in self.pending:
            if item.future is not None:
                item.future.cancel()


def _decide(state: _State, first: _InFlight) -> None:
    """Set ``state.method`` from its first piece ``first`` (waits for that piece's deflate)."""
    blob = first.future.result() if first.future is not None else first.piece
    state.method = STORED if _stored(first.piece, blob) else DEFLATED
    state.trial = None


def _store_in_cache(
    cache: DeflateCache | None,
    known: Mapping[str, str] | None,
    members: Iterable[CompressedMember],
    spool: Path,
    settings: _Settings,
) -> None:
    """Store each member deflated into ``spool`` whose bytes have their known SHA-256 (:mod:`._cache`)."""
    if cache is None or not known:
        return
    for m in members:
        key = known.get(m.staged_path) if m.staged_path else None
        if m.spool == spool and key == m.sha256:
            cache.store(
                m.sha256,
                level=settings.level,
                chunk_size=settings.chunk_size,
                spool=spool,
                offset=m.spool_offset,
                length=m.spool_length,
                method=m.method,
                size=m.size,
                crc32=m.crc32,
                sha1=m.sha1,
                proven=m.stream_sha256,
            )


def compress_members(
    entries: PackagePlan | Iterable[PlanEntry],
    *,
    workdir: Path,
    workers: int = 2,
    level: int | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    progress: Progress = SILENT,
    cache: DeflateCache | None = None,
    known_sha256: Mapping[str, str] | None = None,
    layout: ZipLayout | None = None,
) -> list[CompressedMember]:
    """Read each entry once; return its digests and deflate stream spooled under ``workdir``.

    ``entries`` is a whole plan or some of its entries (e.g. ``plan.staged_entries`` first, the
    generated ones after the SBOM is built). ``level`` defaults to the plan's deflate level (6).
    ``progress`` advances by each piece's size in input bytes as it is compressed. The result
    keeps input order; the spool file (``workdir/.members-*.deflate``) must live until
    :func:`write_zip` has run — ``workdir`` is the caller's private temp dir.

    Memory: at most about ``4 × workers × chunk_size`` bytes (32 MiB at the defaults).

    ``cache`` with ``known_sha256`` (staged path → the SHA-256 its bytes must have, e.g. the
    lock's): such a member's deflate stream is taken from the cache when its bytes, read and
    hashed once as always, have that SHA-256 (no deflate), and stored there after it was
    deflated (:mod:`._cache`). The result's bytes are the same with or without a cache.

    ``layout``: write the streams into that archive-to-be instead of a spool, each after room for
    its local header (entries should come in zip order: see :func:`finish_zip`).

    Raises:
        InputError: a staged file cannot be read, or a generated entry has no bytes yet.
        ValueError: ``workers`` < 1, ``level`` outside 0-9, ``chunk_size`` < 64 KiB.
        RuntimeError: the pinned deflate engine (zlib-ng) is not installed.
    """
    settings = _settings(entries, workers=workers, level=level, chunk_size=chunk_size)
    require_deflate_engine()
    _require_ready(settings.items)
    sink = _open_sink(workdir, layout)
    with (
        sink.opened as out,
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="deflate") as pool,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="sha256") as sha256_pool,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="sha1") as sha1_pool,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="prove") as prove_pool,
    ):
        run = _Pipeline(
            settings=settings,
            out=out,
            spool=sink.spool,
            position=sink.position,
            pool=pool,
            layout=layout,
            progress=progress,
            cache=cache,
            known=known_sha256,
            workdir=workdir,
            hashers=_Hashers(sha256=sha256_pool, sha1=sha1_pool, prove=prove_pool),
        )
        try:
            for entry in settings.items:
                run.add(entry)
            run.drain()
            out.flush()
            fresh = [m for m in run.done if m.name not in run.cached]
            _store_in_cache(cache, known_sha256, fresh, sink.spool, settings)
        except BaseException:
            run.cancel()
            if layout is None:
                out.close()
                sink.spool.unlink(missing_ok=True)
            raise
    if layout is not None:
        layout.position = run.position
    return run.done


def _lookup(
    entry: PlanEntry,
    cache: DeflateCache | None,
    known: Mapping[str, str] | None,
    level: int,
    chunk_size: int,
) -> CacheEntry | None:
    """The cache's record for ``entry`` when its SHA-256 is known before reading (unverified)."""
    key = known.get(entry.staged_path) if known and entry.staged_path else None
    if cache is None or key is None or entry.source_file is None:
        return None
    try:
        size = Path(entry.source_file).stat().st_size
    except OSError:
        return None  # reading it reports the problem
    return cache.find(key, size=size, level=level, chunk_size=chunk_size)


def _copied(src: BinaryIO, out: BinaryIO, length: int) -> bool:
    """Append ``length`` bytes of ``src`` (from its start) to ``out`` (:func:`~._cache.copy_stream`)."""
    try:
        copy_stream(src, out, length)
    except OSError:
        return False
    return True


def _read_and_hash(
    entry: PlanEntry,
    chunk_size: int,
    progress: Progress,
    hashers: _Hashers | None,
    proof: StreamProof | None = None,
) -> _State:
    """Read and hash the entry once (size, CRC-32, SHA-256, SHA-1), advancing ``progress``;
    each piece also goes to ``proof`` when given."""
    state = _State(entry=entry, hashers=hashers)
    for piece, _ in _pieces(entry, chunk_size):
        state.update(piece)
        if proof is not None:
            proof.feed(piece)
        if piece:
            progress.advance(len(piece))
    return state.wait()


def _read_and_sha256(
    entry: PlanEntry, chunk_size: int, progress: Progress, hashers: _Hashers
) -> tuple[str, int]:
    """Read the entry once: its SHA-256 (hex, hashed on the ``sha256`` helper) and size in bytes."""
    digest = hashlib.sha256()
    size = 0
    hashing: deque[Future[None]] = deque()
    try:
        for piece, _ in _pieces(entry, chunk_size):
            size += len(piece)
            while len(hashing) >= _HASH_BACKLOG:
                hashing.popleft().result()
            hashing.append(hashers.sha256.submit(digest.update, piece))
            if piece:
                progress.advance(len(piece))
    finally:
        while hashing:
            hashing.popleft().result()
    return digest.hexdigest(), size


def _staged_sha256(
    entry: PlanEntry, chunk_size: int, progress: Progress, hashers: _Hashers
) -> tuple[str, int]:
    """The entry's SHA-256 (hex) and size in bytes: hashed ahead when the file is unchanged since
    (``packaging._ahead``, started by the CLI's ``build``), else read here once."""
    ahead = _ahead.current()
    claimed = ahead.claim(entry.source_file) if ahead and entry.source_file and entry.data is None else None
    if claimed is not None:
        progress.advance(claimed[1])
        return claimed
    return _read_and_sha256(entry, chunk_size, progress, hashers)


def _signed_member(entry: PlanEntry, spool: Path, offset: int, found: CacheEntry) -> CompressedMember:
    """The member whose bytes have ``found``'s key, its stream the signed entry's at ``spool[offset:]``
    (its content digests the record's; the self-check hashes the stream against the record's)."""
    return _hit_member(
        entry,
        spool,
        offset,
        found,
        size=found.size,
        crc32=found.crc32,
        sha256=found.key,
        sha1=found.sha1,
        stream_sha256=found.stream_sha256,
    )


def _matches(state: _State, found: CacheEntry, known: Mapping[str, str]) -> bool:
    """True when the bytes read are the entry's: SHA-256 the known key, SHA-1, CRC and size the record's."""
    return (state.sha256.hexdigest(), state.sha1.hexdigest(), state.crc, state.size) == (
        known.get(state.entry.staged_path or ""),
        found.sha1,
        found.crc32,
        found.size,
    )


def _cached_member(state: _State, spool: Path, offset: int, found: CacheEntry) -> CompressedMember:
    """The member whose bytes were read into ``state``, its stream ``found``'s at ``spool[offset:]``."""
    return _hit_member(
        state.entry,
        spool,
        offset,
        found,
        size=state.size,
        crc32=state.crc,
        sha256=state.sha256.hexdigest(),
        sha1=state.sha1.hexdigest(),
    )


def _hit_member(
    entry: PlanEntry,
    spool: Path,
    offset: int,
    found: CacheEntry,
    *,
    size: int,
    crc32: int,
    sha256: str,
    sha1: str,
    stream_sha256: str = "",
) -> CompressedMember:
    """A deflate-cache hit's member: content ``size``/``crc32``/``sha256``/``sha1``, stream ``found``'s
    (``stream_sha256``: a stream already vouched for, see ``CompressedMember``)."""
    return CompressedMember(
        name=entry.name,
        staged_path=entry.staged_path,
        size=size,
        crc32=crc32,
        sha256=sha256,
        sha1=sha1,
        method=found.method,
        compressed_size=size if found.method == STORED else found.length,
        spool=spool,
        spool_offset=offset,
        spool_length=found.length,
        from_cache=True,
        stream_sha256=stream_sha256,
    )


def _finish(state: _State, spool: Path) -> CompressedMember:
    state.wait()
    stored = state.method == STORED
    proven = ""
    if state.proof is not None:  # a stored member's stream is its bytes: their SHA-256
        proven = state.sha256.hexdigest() if stored else state.proof.finish()
    return CompressedMember(
        name=state.entry.name,
        staged_path=state.entry.staged_path,
        size=state.size,
        crc32=state.crc,
        sha256=state.sha256.hexdigest(),
        sha1=state.sha1.hexdigest(),
        method=STORED if stored else DEFLATED,
        compressed_size=state.size if stored else state.length,
        spool=spool,
        spool_offset=state.offset or 0,
        spool_length=state.length,
        stream_sha256=proven,
    )
