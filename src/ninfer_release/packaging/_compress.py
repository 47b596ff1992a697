"""One read per input byte, both cores: size, CRC-32, SHA-256, SHA-1 and deflate (DESIGN.md §5, §11).

Every member's bytes are cut into fixed ``chunk_size`` pieces by offset alone. Each piece is
deflated independently (raw deflate, fixed level, memLevel 8, default strategy) with the previous
piece's last 32 KiB as preset dictionary, and ends with a sync flush (an empty stored block, byte
aligned), the last piece with ``Z_FINISH``. The concatenation is one valid deflate stream (the
technique of pigz), and because the cut points depend only on offsets, the bytes are the same for
any number of workers. The deflate engine (zlib-ng, :mod:`._zlib`) releases the GIL, so a thread
pool uses every core.

The reading thread hashes each piece as it goes (hashlib and crc32 also release the GIL)
and keeps at most ``2 × workers`` pieces in flight, so memory stays flat (about
``4 × workers × chunk_size``) whatever the file size. Compressed streams go to one spool file
in ``workdir`` (never held in memory); :func:`~ninfer_release.packaging.write_zip` copies them.

Stored or deflated is decided early and from content alone: by the member's *first* piece. If
its deflate output is not smaller than the piece, the member is stored (method 0): its remaining
pieces are never deflated and its raw bytes go to the spool. A member of one piece (up to 4 MiB)
is decided exactly as before (stored iff its whole deflate stream is not smaller than its data);
a larger member is deflated whole once its first 4 MiB shrink, even if a later part does not
(the decision never depends on timing or worker count, so the bytes stay deterministic).

Determinism note: deflate output depends on the deflate implementation and version as well as on
the level; byte-identical rebuilds assume the same engine (``packaging.DEFLATE_ENGINE``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ninfer_release.errors import InputError, Problem
from ninfer_release.hashing import Digests
from ninfer_release.packaging._cache import CachedStream, DeflateCache
from ninfer_release.packaging._recipe import PackagePlan, PlanEntry
from ninfer_release.packaging._zipformat import DEFLATED, LIMIT32, LOCAL_FMT, STORED, encode_name
from ninfer_release.packaging._zlib import engine as zlib
from ninfer_release.packaging._zlib import require_deflate_engine

#: Size of the independently compressed pieces, in bytes. Part of the output byte format:
#: changing it changes every package larger than one piece.
DEFAULT_CHUNK = 4 << 20  # 4 MiB
_WINDOW = 32 << 10  # deflate history window, 32 KiB
_MIN_CHUNK = 64 << 10


@dataclass(frozen=True, kw_only=True)
class CompressedMember:
    """A member ready for the zip: its digests and where its deflate stream lies in the spool.

    ``size`` is the uncompressed size in bytes; ``crc32`` the zip CRC; ``sha256``/``sha1`` lowercase
    hex of the uncompressed bytes; ``method`` 0 (stored) or 8 (deflated); ``compressed_size`` the
    bytes the zip stores (``size`` when stored); the raw deflate stream is ``spool_length`` bytes at
    ``spool_offset`` of ``spool`` (for a stored member: its raw bytes). ``staged_path`` is the
    staged-tree path, ``None`` when generated.
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

    @property
    def digests(self) -> Digests:
        """Size and digests of the uncompressed bytes."""
        return Digests(size=self.size, sha256=self.sha256, sha1=self.sha1)


@dataclass(kw_only=True)
class ZipLayout:
    """An archive laid out in place: the streams go straight into the zip's own temp file.

    Each member's stream is preceded by room for its local header (``reserved``: name →
    (header offset, header length)); :func:`~ninfer_release.packaging.finish_zip` writes the
    headers into that room and the central directory at the end, so no stream is copied. Open it
    with :meth:`create` in the output's folder; ``finish_zip`` (or :meth:`discard`) ends it.
    """

    path: Path
    file: BinaryIO
    position: int = 0
    reserved: dict[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def create(cls, directory: Path) -> ZipLayout:
        """A new, empty layout file in ``directory`` (the folder the zip will be renamed into)."""
        fd, name = tempfile.mkstemp(prefix=".layout-", suffix=".zip.tmp", dir=directory)
        return cls(path=Path(name), file=os.fdopen(fd, "w+b"))

    def reserve(self, name: str, size: int) -> None:
        """Leave room for ``name``'s local header (zip64 sizes when ``size`` needs them)."""
        length = LOCAL_FMT.size + len(encode_name(name)[0]) + (20 if size >= LIMIT32 else 0)
        self.reserved[name] = (self.position, length)
        self.file.write(bytes(length))
        self.position += length

    def discard(self) -> None:
        """Close and delete the layout file (on failure, or after a fallback copy)."""
        self.file.close()
        self.path.unlink(missing_ok=True)


def _entry_size(entry: PlanEntry) -> int:
    if entry.data is not None:
        return len(entry.data)
    try:
        return entry.source.stat().st_size if entry.source is not None else 0
    except OSError:
        return 0  # reading it reports the problem


@dataclass(kw_only=True)
class _State:
    entry: PlanEntry
    sha256: hashlib._Hash = field(default_factory=hashlib.sha256)
    sha1: hashlib._Hash = field(default_factory=lambda: hashlib.sha1(usedforsecurity=False))
    crc: int = 0
    size: int = 0
    offset: int | None = None
    length: int = 0
    method: int | None = None  # decided when the first piece's deflate is done

    def update(self, piece: bytes) -> None:
        """Account for the next piece of the member's bytes (digests, CRC, size)."""
        self.sha256.update(piece)
        self.sha1.update(piece)
        self.crc = zlib.crc32(piece, self.crc)
        self.size += len(piece)


def _deflate_piece(data: bytes, zdict: bytes | None, level: int, final: bool) -> bytes:
    if zdict:
        c = zlib.compressobj(level, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY, zdict)
    else:
        c = zlib.compressobj(level, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    head = c.compress(data)
    return head + c.flush(zlib.Z_FINISH if final else zlib.Z_SYNC_FLUSH)


def _pieces(entry: PlanEntry, chunk_size: int) -> Iterator[tuple[bytes, bool]]:
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
    if entry.source is None:
        raise InputError(
            problems=[
                Problem(file="package plan", field=entry.name, message="generated bytes were not supplied")
            ]
        )
    try:
        with entry.source.open("rb") as f:
            piece = f.read(chunk_size)
            while True:
                nxt = f.read(chunk_size) if len(piece) == chunk_size else b""
                yield piece, not nxt
                if not nxt:
                    return
                piece = nxt
    except OSError as exc:
        raise InputError(
            problems=[
                Problem(
                    file=str(entry.source), field=entry.name, message=f"cannot read: {exc.strerror or exc}"
                )
            ]
        ) from exc


def compress_members(
    entries: PackagePlan | Iterable[PlanEntry],
    *,
    workdir: Path,
    workers: int = 2,
    level: int | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    progress: Callable[[int], None] | None = None,
    cache: DeflateCache | None = None,
    known_sha256: Mapping[str, str] | None = None,
    layout: ZipLayout | None = None,
) -> list[CompressedMember]:
    """Read each entry once; return its digests and deflate stream spooled under ``workdir``.

    ``entries`` is a whole plan or some of its entries (e.g. ``plan.staged_entries`` first, the
    generated ones after the SBOM is built). ``level`` defaults to the plan's deflate level (6).
    ``progress`` is called with each piece's size in input bytes as it is compressed. The result
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
    if isinstance(entries, PackagePlan):
        lvl = entries.deflate_level if level is None else level
        items = list(entries.entries)
    else:
        lvl = 6 if level is None else level
        items = list(entries)
    if workers < 1 or not 0 <= lvl <= 9 or chunk_size < _MIN_CHUNK:
        raise ValueError(f"bad compression settings: workers={workers} level={lvl} chunk_size={chunk_size}")
    require_deflate_engine()
    missing = [e.name for e in items if not e.ready]
    if missing:
        raise InputError(
            problems=[
                Problem(file="package plan", field=n, message="generated bytes were not supplied")
                for n in missing
            ]
        )

    if layout is None:
        fd, spool_name = tempfile.mkstemp(prefix=".members-", suffix=".deflate", dir=workdir)
        spool = Path(spool_name)
        sink: contextlib.AbstractContextManager[BinaryIO] = os.fdopen(fd, "wb")
        position = 0
    else:
        spool = layout.path
        sink = contextlib.nullcontext(layout.file)
        position = layout.position
    done: list[CompressedMember] = []
    pending: deque[tuple[_State, Future[bytes] | None, bytes, bool]] = deque()

    def start_member(out: BinaryIO, state: _State) -> None:
        nonlocal position
        if layout is not None:
            layout.position = position
            layout.reserve(state.entry.name, _entry_size(state.entry))
            position = layout.position
        state.offset = position

    with (
        sink as out,
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="deflate") as pool,
    ):

        def drain_one() -> None:
            nonlocal position
            state, fut, piece, last = pending.popleft()
            blob = fut.result() if fut is not None and state.method != STORED else b""
            if state.method is None:  # the first piece decides, from its content alone
                state.method = STORED if len(blob) >= len(piece) else DEFLATED
            if state.method == STORED:
                if fut is not None:
                    fut.cancel()  # a piece submitted before the decision: its output is not used
                blob = piece
            if state.offset is None:
                start_member(out, state)
            out.write(blob)
            position += len(blob)
            state.length += len(blob)
            if progress is not None and piece:
                progress(len(piece))
            if last:
                done.append(_finish(state, spool))

        try:
            for entry in items:
                hit = _lookup(entry, cache, known_sha256, lvl, chunk_size, workdir)
                if hit is not None:
                    while pending:  # keep the result in input order
                        drain_one()
                    member = _from_cache(entry, hit, known_sha256 or {}, chunk_size, progress)
                    if member is not None and layout is not None:
                        state = _State(entry=entry)
                        start_member(out, state)
                        member = _copy_cached(member, out, spool, position)
                        position += member.spool_length
                    if member is not None:
                        done.append(member)
                        continue
                    hit.path.unlink(missing_ok=True)  # bytes differ from the key: deflate them
                state = _State(entry=entry)
                zdict: bytes | None = None
                for piece, last in _pieces(entry, chunk_size):
                    state.update(piece)
                    while len(pending) >= 2 * workers:
                        drain_one()
                    # A member already decided "stored" deflates nothing more (incompressible data
                    # costs a hash and a copy, not a deflate).
                    fut = (
                        None
                        if state.method == STORED
                        else pool.submit(_deflate_piece, piece, zdict, lvl, last)
                    )
                    pending.append((state, fut, piece, last))
                    zdict = piece[-_WINDOW:] if not last else None
            while pending:
                drain_one()
            out.flush()
            if cache is not None and known_sha256:
                for m in done:
                    key = known_sha256.get(m.staged_path) if m.staged_path else None
                    if m.spool == spool and key == m.sha256:
                        cache.store(
                            m.sha256,
                            level=lvl,
                            chunk_size=chunk_size,
                            spool=spool,
                            offset=m.spool_offset,
                            length=m.spool_length,
                            method=m.method,
                            size=m.size,
                            crc32=m.crc32,
                            sha1=m.sha1,
                        )
        except BaseException:
            for _, fut, _, _ in pending:
                if fut is not None:
                    fut.cancel()
            if layout is None:
                out.close()
                spool.unlink(missing_ok=True)
            raise
    if layout is not None:
        layout.position = position
    return done


def _copy_cached(member: CompressedMember, out: BinaryIO, spool: Path, offset: int) -> CompressedMember:
    """Append a cached member's stream to ``out`` (a layout) at ``offset``: the member as laid out."""
    with member.spool.open("rb") as src:
        shutil.copyfileobj(src, out, 1 << 20)
    member.spool.unlink(missing_ok=True)
    return dataclasses.replace(member, spool=spool, spool_offset=offset)


def _lookup(
    entry: PlanEntry,
    cache: DeflateCache | None,
    known: Mapping[str, str] | None,
    level: int,
    chunk_size: int,
    workdir: Path,
) -> CachedStream | None:
    key = known.get(entry.staged_path) if known and entry.staged_path else None
    if cache is None or key is None or entry.source is None:
        return None
    try:
        size = entry.source.stat().st_size
    except OSError:
        return None  # reading it reports the problem
    return cache.lookup(key, size=size, level=level, chunk_size=chunk_size, workdir=workdir)


def _from_cache(
    entry: PlanEntry,
    hit: CachedStream,
    known: Mapping[str, str],
    chunk_size: int,
    progress: Callable[[int], None] | None,
) -> CompressedMember | None:
    """Read and hash the entry once; the member with the cached stream if the bytes are the key's."""
    state = _State(entry=entry)
    for piece, _ in _pieces(entry, chunk_size):
        state.update(piece)
        if progress is not None and piece:
            progress(len(piece))
    sha256, sha1 = state.sha256.hexdigest(), state.sha1.hexdigest()
    if (sha256, sha1, state.crc, state.size) != (
        known.get(entry.staged_path or ""),
        hit.sha1,
        hit.crc32,
        hit.size,
    ):
        return None
    return CompressedMember(
        name=entry.name,
        staged_path=entry.staged_path,
        size=state.size,
        crc32=state.crc,
        sha256=sha256,
        sha1=sha1,
        method=hit.method,
        compressed_size=state.size if hit.method == STORED else hit.length,
        spool=hit.path,
        spool_offset=0,
        spool_length=hit.length,
    )


def _finish(state: _State, spool: Path) -> CompressedMember:
    stored = state.method == STORED
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
    )
