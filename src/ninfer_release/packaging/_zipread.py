"""A bounded zip reader for verification: index, streamed digests, small members (DESIGN.md §10).

Nothing is extracted to disk and no member name is ever used as a path. The central directory
is parsed by hand (zip64 included) and every local header is cross-checked against it, so
overlapping members (the "overlapped zip bomb"), sizes beyond the archive and name mismatches
are refused before any byte is inflated. Decompression is streamed with a bounded output per
step and stops at the declared size.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import struct
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NamedTuple, cast

from ninfer_release.errors import IntegrityError, Problem
from ninfer_release.packaging._zipformat import (
    CENTRAL_FMT,
    CENTRAL_SIG,
    DEFLATED,
    EOCD_FMT,
    EOCD_SIG,
    FLAG_UTF8,
    LIMIT16,
    LIMIT32,
    LOCAL_FMT,
    LOCAL_SIG,
    STORED,
    ZIP64_EOCD_FMT,
    ZIP64_EOCD_SIG,
    ZIP64_EXTRA_ID,
    ZIP64_LOCATOR_FMT,
    ZIP64_LOCATOR_SIG,
)
from ninfer_release.packaging._zlib import INFLATE_ERRORS
from ninfer_release.packaging._zlib import engine as zlib

#: Bytes read / inflated per step. 4 MiB rather than 1: each step hands the GIL over once, and
#: fewer hand-overs keep the inflate and hash threads busy while other threads run Python.
_STEP = 4 << 20
#: Refuse central directories beyond this size (bytes); ours are a few KiB.
MAX_CENTRAL_DIRECTORY = 64 << 20
#: Deflate cannot exceed a ratio of about 1032:1, so a larger declared ratio is a lie.
DEFAULT_MAX_RATIO = 1100
DEFAULT_MAX_TOTAL = 64 << 30  # 64 GiB of declared uncompressed data


class ZipMember(NamedTuple):
    """One central-directory entry, cross-checked with its local header (immutable).

    Sizes and offsets are bytes; ``date_time`` is (year, month, day, hour, minute, second);
    ``create_system`` is the high byte of "version made by"; ``external_attr`` the raw 32 bits.
    A named tuple, not a frozen dataclass: one is made per member, and a frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field) was most of reading a 100k-member index;
    a tuple also holds no ``__dict__`` (issue 13). Build one with keywords.
    """

    name: str
    flags: int
    method: int
    crc32: int
    compressed_size: int
    size: int
    header_offset: int
    data_offset: int
    external_attr: int
    create_system: int
    version_made_by: int
    version_needed: int
    date_time: tuple[int, int, int, int, int, int]
    central_extra: bytes
    local_extra: bytes


class MemberDigest(NamedTuple):
    """Digests of one member's decompressed bytes, or why it was not (fully) read (immutable).

    ``problems`` empty means the member inflated to exactly its declared size and CRC. A named
    tuple, not a frozen dataclass: one is made per member, and the dataclass's ``__init__`` (one
    ``object.__setattr__`` per field) cost ~2 µs of a 100k-member scan's ~12 µs per member
    (issue 13). Build one with keywords.
    """

    name: str
    size: int
    sha256: str
    sha1: str
    crc32: int
    method: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when the member was read completely and matched its declared size and CRC."""
        return not self.problems


def _fail(path: Path, message: str) -> IntegrityError:
    return IntegrityError(problems=[Problem(file=str(path), message=message)])


def _read_at(f: BinaryIO, offset: int, n: int) -> bytes:
    f.seek(offset)
    return f.read(n)


def _zip64_fields(extra: bytes, want: list[str]) -> dict[str, int] | None:
    """Values of the zip64 extra field for the fields in ``want`` (APPNOTE order), if present."""
    i = 0
    while i + 4 <= len(extra):
        hid, size = struct.unpack_from("<HH", extra, i)
        body = extra[i + 4 : i + 4 + size]
        if hid == ZIP64_EXTRA_ID:
            if len(body) < 8 * len(want):
                return None
            return {k: struct.unpack_from("<Q", body, 8 * j)[0] for j, k in enumerate(want)}
        i += 4 + size
    return None


def _dos(date: int, time: int) -> tuple[int, int, int, int, int, int]:
    return (1980 + (date >> 9), (date >> 5) & 15, date & 31, time >> 11, (time >> 5) & 63, (time & 31) * 2)


@dataclass(frozen=True, kw_only=True)
class _EndRecords:
    """What the (zip64) end records say: ``count`` entries, the central directory's ``cd_offset``
    and ``cd_size`` in bytes (APPNOTE 4.3.14-4.3.16)."""

    count: int
    cd_offset: int
    cd_size: int


def _end_of_central_directory(f: BinaryIO, path: Path, file_size: int) -> _EndRecords:
    """The entry count, central directory offset and size from the (zip64) end records.

    Raises:
        IntegrityError: no end record, a multi-disk archive, a zip64 locator pointing at garbage,
            or 32-bit fields saturated without a zip64 locator.
    """
    tail_len = min(file_size, EOCD_FMT.size + LIMIT16)
    tail = _read_at(f, file_size - tail_len, tail_len)
    pos = -1
    search = len(tail)
    while True:
        pos = tail.rfind(struct.pack("<I", EOCD_SIG), 0, search)
        if pos < 0:
            raise _fail(path, "not a zip archive: no end-of-central-directory record")
        if pos + EOCD_FMT.size <= len(tail):
            comment_len = struct.unpack_from("<H", tail, pos + 20)[0]
            if pos + EOCD_FMT.size + comment_len == len(tail):
                break
        search = pos
    _, disk, cd_disk, n_disk, n_total, cd_size, cd_offset, _ = EOCD_FMT.unpack_from(tail, pos)
    if disk != 0 or cd_disk != 0 or n_disk != n_total:
        raise _fail(path, "multi-disk archives are not supported")
    eocd_at = file_size - tail_len + pos
    loc_at = eocd_at - ZIP64_LOCATOR_FMT.size
    if loc_at >= 0:
        loc = _read_at(f, loc_at, ZIP64_LOCATOR_FMT.size)
        sig, _, z64_at, _ = ZIP64_LOCATOR_FMT.unpack(loc)
        if sig == ZIP64_LOCATOR_SIG:
            rec = _read_at(f, z64_at, ZIP64_EOCD_FMT.size)
            if len(rec) != ZIP64_EOCD_FMT.size or ZIP64_EOCD_FMT.unpack(rec)[0] != ZIP64_EOCD_SIG:
                raise _fail(path, "zip64 end-of-central-directory locator points at garbage")
            fields = ZIP64_EOCD_FMT.unpack(rec)
            return _EndRecords(count=fields[7], cd_offset=fields[9], cd_size=fields[8])
    if n_total == LIMIT16 or cd_size == LIMIT32 or cd_offset == LIMIT32:
        raise _fail(path, "end record needs zip64 values but there is no zip64 locator")
    return _EndRecords(count=n_total, cd_offset=cd_offset, cd_size=cd_size)


def zip_member_count(f: BinaryIO, path: Path) -> int:
    """How many members the end records of the zip open as ``f`` (named ``path`` in errors)
    claim (APPNOTE 4.3.16, zip64 4.3.14): one read at its end, no entry parsed, nothing checked
    beyond the end records (a claim, for sizing work: :func:`read_zip_index` checks it).

    Raises:
        IntegrityError: no end record, a multi-disk archive, or zip64 values without a locator.
        OSError: the file cannot be read.
    """
    f.seek(0, 2)
    return _end_of_central_directory(f, path, f.tell()).count


@dataclass(frozen=True, kw_only=True)
class _CentralDirectory:
    """The central directory's raw bytes ``data``, read from byte ``offset``; ``count`` entries."""

    count: int
    offset: int
    data: bytes


def _read_central_directory(f: BinaryIO, path: Path) -> _CentralDirectory:
    """The central directory located by the end records, bounded by :data:`MAX_CENTRAL_DIRECTORY`.

    Raises:
        IntegrityError: the end records are malformed or the directory lies outside the archive.
    """
    f.seek(0, 2)
    file_size = f.tell()
    end = _end_of_central_directory(f, path, file_size)
    count, cd_offset, cd_size = end.count, end.cd_offset, end.cd_size
    if cd_size > MAX_CENTRAL_DIRECTORY or cd_offset + cd_size > file_size:
        raise _fail(
            path, f"central directory ({cd_size} bytes at {cd_offset}) is outside the archive or too big"
        )
    return _CentralDirectory(count=count, offset=cd_offset, data=_read_at(f, cd_offset, cd_size))


#: Bytes read at a local header's offset: its fixed part, the name and a typical extra field in
#: one ``pread``; for small members the next headers are in the same read (:class:`_Headers`).
_HEADER_READ = 64 << 10


class _Headers:
    """The bytes at local-header offsets, one ``pread`` of :data:`_HEADER_READ` bytes serving every
    header that lies inside it (a 10k-member zip of small files: ~60 reads instead of 30k)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.start = 0
        self.block = b""

    def at(self, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes at ``offset`` (fewer only at the end of the file)."""
        rel = offset - self.start
        if rel < 0 or rel + n > len(self.block):
            self.start, self.block = offset, os.pread(self.fd, max(n, _HEADER_READ), offset)
            rel = 0
        return self.block[rel : rel + n]


def _members(f: BinaryIO, path: Path, cd: _CentralDirectory) -> list[ZipMember]:
    """The directory's entries in order (APPNOTE 4.3.12; zip64 extra 4.5.3), each cross-checked
    with its local header (4.3.7): same name, data before the central directory.

    The stored name is decoded as UTF-8 when flag bit 11 is set, else as CP437. Entries that share
    a ``date_time`` share one tuple (a reproducible zip has one for all).

    Raises:
        IntegrityError: the directory is truncated, an entry's signature is wrong, an entry needs
            zip64 values that its extra field does not hold, no local header at an entry's offset,
            another name in it, or data running past the member area.
    """
    data, i, cd_offset = cd.data, 0, cd.offset
    unpack_central, central_size = CENTRAL_FMT.unpack_from, CENTRAL_FMT.size
    unpack_local, local_size = LOCAL_FMT.unpack_from, LOCAL_FMT.size
    headers = _Headers(f.fileno())
    times: dict[tuple[int, int], tuple[int, int, int, int, int, int]] = {}
    shared: dict[int, int] = {}
    make = ZipMember._make
    out: list[ZipMember] = []
    for n in range(cd.count):
        if i + central_size > len(data):
            raise _fail(path, f"central directory ends after {n} of {cd.count} entries")
        fields = unpack_central(data, i)
        sig, made_by, needed, flags, method, dtime, ddate, crc, csize, usize = fields[:10]
        nlen, xlen, clen, eattr, offset = fields[10], fields[11], fields[12], fields[15], fields[16]
        if sig != CENTRAL_SIG:
            raise _fail(path, f"central directory entry {n} has a bad signature")
        j = i + central_size
        raw_name, extra = data[j : j + nlen], data[j + nlen : j + nlen + xlen]
        i = j + nlen + xlen + clen
        if usize == LIMIT32 or csize == LIMIT32 or offset == LIMIT32:
            want = [k for k, v in (("size", usize), ("csize", csize), ("offset", offset)) if v == LIMIT32]
            z64 = _zip64_fields(extra, want)
            if z64 is None:
                raise _fail(path, f"entry {n} needs a zip64 extra field but has none")
            usize, csize, offset = z64.get("size", usize), z64.get("csize", csize), z64.get("offset", offset)
        if raw_name.isascii():  # CP437 and UTF-8 both decode ASCII as ASCII (the C codec is fast)
            name = raw_name.decode("ascii")
        else:
            name = raw_name.decode("utf-8", "replace") if flags & FLAG_UTF8 else raw_name.decode("cp437")
        local = headers.at(offset, local_size + nlen + 64)
        if len(local) < local_size or unpack_local(local)[0] != LOCAL_SIG:
            raise _fail(path, f"{name!r}: no local header at offset {offset}")
        lfields = unpack_local(local)
        lnlen, lxlen = lfields[9], lfields[10]
        end = local_size + lnlen + lxlen
        if len(local) < end:
            local = headers.at(offset, end)
        if local[local_size : local_size + lnlen] != raw_name:
            raise _fail(path, f"{name!r}: local header names {local[local_size : local_size + lnlen]!r}")
        data_offset = offset + end
        if data_offset + csize > cd_offset:
            raise _fail(path, f"{name!r}: data ({csize} bytes at {data_offset}) runs past the member area")
        date_time = times.get((ddate, dtime))
        if date_time is None:
            date_time = times[(ddate, dtime)] = _dos(ddate, dtime)
        # In field order, without keywords (a keyword call of a 15-field named tuple was a third
        # of an entry's time; issue 13); the attributes and version most members share: one int.
        out.append(make((
            name, flags, method, crc, csize, usize, offset, data_offset, shared.setdefault(eattr, eattr),
            made_by >> 8, shared.setdefault(made_by, made_by), needed, date_time, bytes(extra),
            local[local_size + lnlen : end],
        )))  # fmt: skip
    return out


def _check_no_overlap(path: Path, members: list[ZipMember]) -> None:
    """Raises: IntegrityError when two members' byte ranges (header to end of data) overlap."""
    end = -1
    for m in members:  # in order and apart (what a writer makes): nothing to sort (issue 13)
        if m.header_offset < end:
            break
        end = m.data_offset + m.compressed_size
    else:
        return
    spans = sorted((m.header_offset, m.data_offset + m.compressed_size, m.name) for m in members)
    for (_, end_a, name_a), (start_b, _, name_b) in itertools.pairwise(spans):
        if start_b < end_a:
            raise _fail(path, f"members {name_a!r} and {name_b!r} overlap (zip bomb or corrupt archive)")


def read_zip_index(path: Path) -> list[ZipMember]:
    """Parse the central directory of the zip at ``path`` and check every local header against it.

    Returns members in central-directory order. Checks: end records (zip64 too), every header
    signature, local name equal to central name, each member's data inside the archive and before
    the central directory, no two members' byte ranges overlapping.

    Raises:
        IntegrityError: the archive is malformed or structurally unsafe (exit 5).
        OSError: the file cannot be read.
    """
    with path.open("rb") as f:
        cd = _read_central_directory(f, path)
        members = _members(f, path, cd)
    _check_no_overlap(path, members)
    return members


_DRIVE = re.compile(r"[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f]")


def unsafe_name(name: str) -> str:
    """Why ``name`` must not be used as an extraction path (empty string: safe)."""
    if "\\" in name:
        return "backslash in member name"
    if name.startswith("/") or _DRIVE.match(name):
        return "absolute member name"
    if _CONTROL.search(name):
        return "control character in member name"
    # A component is what lies between two slashes of the name framed by slashes: ``..`` is
    # "/../" in it, an empty one "//", ``.`` "/./" (without splitting; issue 13: per member).
    framed = f"/{name}/"
    if "/../" in framed:
        return "'..' in member name"
    if "//" in framed or "/./" in framed:
        return "empty or '.' component in member name"
    return ""


def _inflate(f: BinaryIO, m: ZipMember, limit: int) -> Iterator[bytes]:
    """The member's bytes in steps of at most 4 MiB; raises ValueError beyond ``limit`` bytes."""
    f.seek(m.data_offset)
    left = m.compressed_size
    produced = 0
    inflater = zlib.decompressobj(-15) if m.method == DEFLATED else None
    while left:
        block = f.read(min(_STEP, left))
        if not block:
            raise ValueError("archive ends inside the member data")
        left -= len(block)
        if inflater is None:
            produced += len(block)
            if produced > limit:
                raise ValueError(f"holds more than {limit} bytes")
            yield block
            continue
        chunk = inflater.decompress(block, _STEP)
        while True:
            produced += len(chunk)
            if produced > limit:
                raise ValueError(f"inflates past {limit} bytes")
            if chunk:
                yield chunk
            # A full step may leave output pending inside zlib even with no input left.
            if not inflater.unconsumed_tail and len(chunk) < _STEP:
                break
            chunk = inflater.decompress(inflater.unconsumed_tail, _STEP)
    if inflater is not None:
        if not inflater.eof:
            raise ValueError("deflate stream is truncated")
        if inflater.unused_data:
            raise ValueError("data after the end of the deflate stream")


#: The problems of a member with none, shared by every such member of :func:`_archive_checks`
#: (100k members: 5 MB of empty lists otherwise); never appended to.
_NO_PROBLEMS: list[str] = []


def _member_checks(m: ZipMember, *, max_ratio: float) -> list[str]:
    if (
        not m.flags & 0x1
        and (m.method == DEFLATED or (m.method == STORED and m.size == m.compressed_size))
        and m.size <= max(m.compressed_size, 1) * max_ratio
        and not unsafe_name(m.name)
    ):
        return []  # what the checks below find for it (issue 13: most members, at once)
    problems: list[str] = []
    why = unsafe_name(m.name)
    if why:
        problems.append(f"{why}; not read (never used as a path)")
    if m.flags & 0x1:
        problems.append("encrypted member")
    if m.method not in (STORED, DEFLATED):
        problems.append(f"compression method {m.method} is not stored (0) or deflate (8)")
    if m.method == STORED and m.size != m.compressed_size:
        problems.append("stored member with different compressed and uncompressed sizes")
    if m.size > max(m.compressed_size, 1) * max_ratio:
        problems.append(
            f"declares {m.size} bytes from {m.compressed_size} compressed "
            f"(ratio > {max_ratio:g}); not inflated"
        )
    return problems


#: Chunks of at most this many bytes are hashed on the calling thread (:meth:`_Hasher.feed`).
_HASH_INLINE = 64 << 10


class _Hasher:
    """SHA-256 (and optionally SHA-1) and CRC-32 of a member, updated on helper threads.

    One chunk is hashed while the next is inflated (hashlib, crc32 and inflate all release the
    GIL), so a member costs about max(inflate, hash) instead of their sum on two cores; with SHA-1
    the chunk's SHA-256 and its SHA-1 + CRC-32 are two tasks of the pool, so that on a pool of
    several workers neither chain is the sum of the three (issue 13: the member hashes were one
    0.6 s chain beside the 0.65 s inflate of the ``--full`` set). A chunk of at most
    :data:`_HASH_INLINE` bytes is hashed at once instead. Each digest is updated in chunk order:
    :meth:`feed` waits for the previous chunk's tasks before it hands on the next.
    """

    def __init__(self, pool: ThreadPoolExecutor, *, sha1: bool, crc: bool = True) -> None:
        self.pool = pool
        self.sha256 = hashlib.sha256()
        self.sha1 = hashlib.sha1(usedforsecurity=False) if sha1 else None
        self.with_crc = crc
        self.crc = 0
        self.size = 0
        self.pending: list[Future[None]] = []

    def _update(self, chunk: bytes | memoryview) -> None:
        self.sha256.update(chunk)
        self._update_others(chunk)

    def _update_others(self, chunk: bytes | memoryview) -> None:
        if self.sha1 is not None:
            self.sha1.update(chunk)
        if self.with_crc:
            self.crc = zlib.crc32(chunk, self.crc)

    def feed(self, chunk: bytes | memoryview) -> None:
        self.wait()
        self.size += len(chunk)
        if len(chunk) <= _HASH_INLINE:
            # Handing a small chunk to the helper costs more than hashing it here (a Future and
            # two thread switches per member: ~0.05 ms each for 10k small members, issue 13).
            self._update(chunk)
        elif self.sha1 is None:
            self.pending.append(self.pool.submit(self._update, chunk))
        else:
            self.pending.append(self.pool.submit(self.sha256.update, chunk))
            self.pending.append(self.pool.submit(self._update_others, chunk))

    def wait(self) -> None:
        """Wait for every chunk task handed on; the first one's exception is raised here, after
        all of them ended (none still updates this hasher when the caller moves on)."""
        pending, self.pending = self.pending, []
        errors = [e for task in pending if (e := task.exception()) is not None]
        if errors:
            raise errors[0]


def _archive_checks(members: list[ZipMember], *, max_ratio: float, max_total: int) -> list[list[str]]:
    """Per member (central-directory order), why it must not be inflated: unsafe, duplicate, bomb."""
    out: list[list[str]] = []
    total = 0
    # Names in strictly increasing order (what a writer sorting them makes) cannot repeat: no set
    # of every name then (issue 13: 4 MiB at 100k members, while the whole index is alive).
    ordered = all(a.name < b.name for a, b in itertools.pairwise(members))
    seen: set[str] = set()
    for m in members:
        problems = _member_checks(m, max_ratio=max_ratio) or _NO_PROBLEMS
        if not ordered:
            if m.name in seen:
                problems = [*problems]
                # Two entries with one name: extractors disagree on which one wins.
                problems.append("member name appears more than once in the archive")
            seen.add(m.name)
        total += m.size
        if total > max_total:
            problems = [*problems]
            problems.append(f"archive declares more than {max_total} bytes in total; not inflated")
        out.append(problems)
    return out


def iter_member_digests(
    path: Path,
    *,
    max_ratio: float = DEFAULT_MAX_RATIO,
    max_total: int = DEFAULT_MAX_TOTAL,
    sha1: bool = True,
) -> Iterator[MemberDigest]:
    """Stream every member of the zip at ``path`` once, yielding SHA-256/SHA-1/CRC of its bytes.

    Members with an unsafe name (absolute, ``..``, backslash, control characters), encryption,
    an unknown method, or a declared ratio above ``max_ratio`` are reported, not inflated; a name
    listed twice is reported on its second entry. Inflation
    stops at the declared size; a short or long stream or a CRC mismatch is a problem. Once the
    declared sizes reach ``max_total`` bytes the remaining members are reported and not read.
    ``sha1=False`` skips SHA-1 (``MemberDigest.sha1`` is then ``""``): a verifier that compares
    SHA-256 only saves a third of the hashing. Uses two threads (inflate, hash); memory stays at
    about 20 MiB whatever the member sizes.

    Raises:
        IntegrityError: the archive structure is unsafe (see :func:`read_zip_index`).
    """
    members = read_zip_index(path)
    checks = _archive_checks(members, max_ratio=max_ratio, max_total=max_total)
    with path.open("rb") as f, ThreadPoolExecutor(max_workers=1, thread_name_prefix="zip-hash") as pool:
        for m, checked in zip(members, checks, strict=True):
            problems = [*checked]
            h = _Hasher(pool, sha1=sha1)
            if not problems:
                try:
                    for chunk in _inflate(f, m, m.size):
                        h.feed(chunk)
                except INFLATE_ERRORS as exc:
                    problems.append(f"cannot be read: {exc}")
                finally:
                    h.wait()
                if not problems:
                    if h.size != m.size:
                        problems.append(f"inflates to {h.size} bytes, header declares {m.size}")
                    elif h.crc != m.crc32:
                        problems.append(f"CRC-32 {h.crc:08x} does not match the header's {m.crc32:08x}")
            yield MemberDigest(
                name=m.name,
                size=h.size,
                sha256=h.sha256.hexdigest(),
                sha1=h.sha1.hexdigest() if h.sha1 is not None else "",
                crc32=h.crc,
                method=m.method,
                problems=tuple(problems),
            )


@dataclass(frozen=True, kw_only=True)
class FileIdentity:
    """Which file, in which state: device, inode, size (bytes) and mtime (ns) of one stat.

    Any write, truncation or replacement of the file changes it (down to the file system's
    timestamp granularity). Not the ctime: the seal's ``chmod`` of every entry moves it.
    """

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileIdentity:
        """The identity a ``stat``/``fstat`` result gives."""
        return cls(device=st.st_dev, inode=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns)


@dataclass(frozen=True, kw_only=True)
class ZipScan:
    """One read of a zip: its size in bytes and SHA-256, and every member's digests.

    ``members`` is in central-directory order, exactly what :func:`iter_member_digests` yields
    (a tuple from :func:`scan_zip`; the build's self-check keeps a sequence that makes them when
    read, ``packaging.finish_zip``).
    ``identity``: the file read, as it was before and after the read (``None`` when it changed
    during the read): a caller reusing the scan for ``path`` (the build's verify) must first see
    :meth:`describes` it, else the bytes there are not the ones that were scanned.
    """

    size: int
    sha256: str
    members: Sequence[MemberDigest]
    identity: FileIdentity | None = None

    def describes(self, path: Path) -> bool:
        """True when the file at ``path`` is the very file, unchanged, that this scan read."""
        try:
            return self.identity is not None and FileIdentity.of(path.stat()) == self.identity
        except OSError:
            return False


@dataclass(frozen=True, kw_only=True)
class ProvenStream:
    """A member stream whose content the caller has already proven (issue 13).

    The stream bytes with SHA-256 ``stream_sha256`` were inflated by the caller (one sequential
    inflater, its whole output compared byte for byte with the staged bytes) to ``size`` bytes with
    CRC-32 ``crc32`` and SHA-256 ``sha256``, method ``method``. :func:`scan_zip` then proves the
    member *in the zip* by hashing its stored bytes: equal to ``stream_sha256``, the member is those
    very bytes and so inflates to that content; no second inflate is needed. Made for a
    deflate-cache hit (``packaging._cache.StreamProof``) and for a member of at least 256 KiB
    re-inflated as it was written (``packaging._compress._Reinflate``).
    """

    stream_sha256: str
    size: int
    crc32: int
    sha256: str
    method: int


class _MemberStream:
    """Push-style reading of one member: its stored bytes in order in, digests and problems out.

    With ``proven`` the stored bytes are hashed, not inflated (:class:`ProvenStream`).
    """

    def __init__(
        self, m: ZipMember, pool: ThreadPoolExecutor, *, sha1: bool, proven: ProvenStream | None = None
    ) -> None:
        self.m = m
        self.proven = proven
        self.inflater = zlib.decompressobj(-15) if m.method == DEFLATED and proven is None else None
        self.hasher = _Hasher(pool, sha1=sha1 and proven is None, crc=proven is None)
        self.error: str | None = None

    def _emit(self, chunk: bytes | memoryview) -> None:
        limit = self.m.compressed_size if self.proven is not None else self.m.size
        if self.hasher.size + len(chunk) > limit:
            verb = "holds more than" if self.inflater is None else "inflates past"
            raise ValueError(f"{verb} {self.m.size} bytes")
        self.hasher.feed(chunk)

    def feed(self, data: memoryview) -> None:
        if self.error is not None:
            return
        try:
            if self.inflater is None:
                # The view of the read block (immutable bytes, kept alive by the view): a stored
                # member's bytes are hashed where they were read, never copied (1 GiB: ~0.1 s).
                self._emit(data)
                return
            chunk = self.inflater.decompress(data, _STEP)
            while True:
                if chunk:
                    self._emit(chunk)
                # A full step may leave output pending inside zlib even with no input left.
                if not self.inflater.unconsumed_tail and len(chunk) < _STEP:
                    break
                chunk = self.inflater.decompress(self.inflater.unconsumed_tail, _STEP)
        except INFLATE_ERRORS as exc:
            self.error = f"cannot be read: {exc}"

    def finish(self) -> MemberDigest:
        h = self.hasher
        h.wait()
        if self.proven is not None:
            return self._finish_proven(self.proven)
        problems: list[str] = []
        if self.error is not None:
            problems.append(self.error)
        elif self.inflater is not None and not self.inflater.eof:
            problems.append("cannot be read: deflate stream is truncated")
        elif self.inflater is not None and self.inflater.unused_data:
            problems.append("cannot be read: data after the end of the deflate stream")
        elif h.size != self.m.size:
            problems.append(f"inflates to {h.size} bytes, header declares {self.m.size}")
        elif h.crc != self.m.crc32:
            problems.append(f"CRC-32 {h.crc:08x} does not match the header's {self.m.crc32:08x}")
        return _digest(self.m, h, problems)

    def _finish_proven(self, proven: ProvenStream) -> MemberDigest:
        """The proven content's digests when the stored bytes are the proven stream and the
        headers declare that content; else the member's problem."""
        m, h = self.m, self.hasher
        problems: list[str] = []
        if self.error is not None:
            problems.append(self.error)
        elif h.size != m.compressed_size or h.sha256.hexdigest() != proven.stream_sha256:
            problems.append("its stored bytes are not the stream that was proven to inflate to it")
        elif (m.size, m.crc32, m.method) != (proven.size, proven.crc32, proven.method):
            problems.append("its headers do not declare the proven size, CRC-32 and method")
        if problems:
            return MemberDigest(
                name=m.name, size=0, sha256="", sha1="", crc32=0, method=m.method, problems=tuple(problems)
            )
        return MemberDigest(
            name=m.name,
            size=proven.size,
            sha256=proven.sha256,
            sha1="",
            crc32=proven.crc32,
            method=m.method,
            problems=(),
        )


def _new_stream(
    m: ZipMember, pool: ThreadPoolExecutor, sha1: bool, proven: Mapping[str, ProvenStream]
) -> _MemberStream:
    """The stream that reads member ``m`` (hashing its stored bytes when ``proven`` names it)."""
    return _MemberStream(m, pool, sha1=sha1, proven=proven.get(m.name))


def _digest(m: ZipMember, h: _Hasher, problems: list[str]) -> MemberDigest:
    return MemberDigest(
        name=m.name,
        size=h.size,
        sha256=h.sha256.hexdigest(),
        sha1=h.sha1.hexdigest() if h.sha1 is not None else "",
        crc32=h.crc,
        method=m.method,
        problems=tuple(problems),
    )


def _whole(m: ZipMember, data: memoryview, sha1: bool) -> MemberDigest | None:
    """The digests of a member of at most :data:`_HASH_INLINE` bytes whose stored bytes are all of
    ``data``, when it reads cleanly: inflated in one call (bounded to one byte more than declared),
    ending its stream exactly at the end of ``data``, to its declared size and CRC-32. ``None``
    otherwise: its stream (:class:`_MemberStream`) then reads it and words the problem. The same
    digests as the stream gives a clean member, without its objects (issue 13: per-member
    overhead of a zip of many small files)."""
    out: bytes | memoryview = data
    if m.method == DEFLATED:
        inflater = zlib.decompressobj(-15)
        try:
            out = inflater.decompress(data, m.size + 1)
        except INFLATE_ERRORS:
            return None
        if not inflater.eof or inflater.unused_data:
            return None
    crc = zlib.crc32(out)
    if len(out) != m.size or crc != m.crc32:
        return None
    return MemberDigest(
        name=m.name,
        size=m.size,
        sha256=hashlib.sha256(out).hexdigest(),
        sha1=hashlib.sha1(out, usedforsecurity=False).hexdigest() if sha1 else "",
        crc32=crc,
        method=m.method,
        problems=(),
    )


def _live(members: list[ZipMember | None], i: int) -> ZipMember:
    """Entry ``i`` of a scan's member list, which is let go only once handed on."""
    m = members[i]
    if m is None:
        raise AssertionError(f"member {i} is read after it was handed on")  # a scan bug
    return m


class _InOrder:
    """The members' digests handed to ``each`` in central-directory order, each as soon as it
    and every one before it are known (members are read in data order: for a zip written in
    order, nothing waits); a member that is not read (``checks``) gets its digest when its turn
    comes."""

    def __init__(
        self,
        members: list[ZipMember | None],
        checks: list[list[str]],
        new_hasher: Callable[[], _Hasher],
        each: Callable[[MemberDigest], None],
        let_go: bool = False,
    ) -> None:
        self.members = members
        self.checks = checks
        self.new_hasher = new_hasher
        self.each = each
        self.let_go = let_go
        self.ready: dict[int, MemberDigest] = {}
        self.next = 0

    def _hand_on(self, j: int, digest: MemberDigest) -> None:
        self.each(digest)
        if self.let_go:
            self.members[j] = None  # read and handed on: nothing reads its entry again
        self.next += 1

    def put(self, i: int, digest: MemberDigest) -> None:
        self.ready[i] = digest
        while self.next < len(self.members):
            j = self.next
            got = self.ready.pop(j, None)
            if got is None:
                if not self.checks[j]:
                    return
                got = _digest(_live(self.members, j), self.new_hasher(), self.checks[j])
            self._hand_on(j, got)

    def flush(self) -> None:
        """Hand on the members not read at the end of the member list."""
        while self.next < len(self.members):
            j = self.next
            if j in self.ready or not self.checks[j]:
                raise AssertionError(f"member {j} was read but not handed on")  # a scan bug
            self._hand_on(j, _digest(_live(self.members, j), self.new_hasher(), self.checks[j]))


class _Finished:
    """The streams of the members whose data is complete, each finished soon after.

    A stream holds an inflater (~40 KiB of zlib state) and hash objects: keeping one per member
    until the end of the scan cost ~40 KiB per member (400 MiB at 10k members, issue 13). A
    completed stream is finished once :data:`_LAG` later members have completed (streamed or
    read in one call, :meth:`passed`), so the hash of its last chunk still overlaps the next
    members' inflation; memory stays bounded by the lag, and the digests handed on in order do
    not wait behind it for long.
    """

    def __init__(self, out: _InOrder) -> None:
        self.waiting: deque[tuple[int, _MemberStream, int]] = deque()
        self.out = out
        self.completed = 0

    def add(self, i: int, stream: _MemberStream) -> None:
        self.waiting.append((i, stream, self.completed))
        self.passed()

    def passed(self) -> None:
        """One more member completed: finish the streams :data:`_LAG` members have passed."""
        self.completed += 1
        while self.waiting and self.waiting[0][2] + _LAG < self.completed:
            j, oldest, _ = self.waiting.popleft()
            self.out.put(j, oldest.finish())

    def flush(self) -> None:
        while self.waiting:
            j, stream, _ = self.waiting.popleft()
            self.out.put(j, stream.finish())


#: Completed member streams left unfinished at most (see :class:`_Finished`).
_LAG = 8


class _Reading:
    """One front-to-back read of the archive's blocks, feeding each member's stored bytes to its
    reader as they pass (:func:`scan_zip`)."""

    def __init__(
        self,
        members: list[ZipMember | None],
        readable: Sequence[int],
        pool: ThreadPoolExecutor,
        sha1: bool,
        proven: Mapping[str, ProvenStream],
        out: _InOrder,
    ) -> None:
        self.members = members
        self.readable = readable
        self.pool = pool
        self.sha1 = sha1
        self.proven = proven
        self.out = out
        self.streams: dict[int, _MemberStream] = {}
        self.done = _Finished(out)
        self.k = 0  # next entry of ``readable`` whose data is not complete yet

    def block(self, view: memoryview, pos: int) -> None:
        """The block of the archive at byte ``pos``."""
        end = pos + len(view)
        members, readable, streams = self.members, self.readable, self.streams
        while self.k < len(readable):
            i = readable[self.k]
            m = _live(members, i)
            start, stop = m.data_offset, m.data_offset + m.compressed_size
            if start >= end and stop > start:
                return
            stream = streams.get(i)
            if stream is None:
                if stop <= end and start >= pos and m.size <= _HASH_INLINE and m.name not in self.proven:
                    digest = _whole(m, view[start - pos : stop - pos], self.sha1)
                    if digest is not None:
                        self.out.put(i, digest)
                        self.done.passed()
                        self.k += 1
                        continue
                stream = streams[i] = _new_stream(m, self.pool, self.sha1, self.proven)
            lo, hi = max(start, pos), min(stop, end)
            if hi > lo:
                stream.feed(view[lo - pos : hi - pos])
            if stop > end:
                return
            self.done.add(i, streams.pop(i))
            self.k += 1

    def finish(self) -> None:
        """Every member's digest handed on: those the file ended inside of (it shrank under us)
        are reported so."""
        for i in self.readable[self.k :]:
            stream = self.streams.setdefault(
                i, _new_stream(_live(self.members, i), self.pool, self.sha1, self.proven)
            )
            stream.error = stream.error or "cannot be read: archive ends inside the member data"
        self.done.flush()
        for i in sorted(self.streams, key=lambda i: _live(self.members, i).data_offset):
            self.out.put(i, self.streams[i].finish())
        self.out.flush()


def _readable(members: Sequence[ZipMember], checks: Sequence[Sequence[str]]) -> Sequence[int]:
    """The indexes of the members to read (no problem in ``checks``), in data order: all of them
    as a ``range`` when they are all readable and lie in order (what a writer makes: no int and
    no sort per member, issue 13), else sorted by data offset."""
    end = -1
    for m, problems in zip(members, checks, strict=True):
        if problems or m.data_offset < end:
            break
        end = m.data_offset
    else:
        return range(len(members))
    return sorted(
        (i for i, problems in enumerate(checks) if not problems), key=lambda i: members[i].data_offset
    )


def scan_zip(
    path: Path,
    *,
    max_ratio: float = DEFAULT_MAX_RATIO,
    max_total: int = DEFAULT_MAX_TOTAL,
    sha1: bool = True,
    archive_sha256: str | None = None,
    index: Sequence[ZipMember] | None = None,
    proven: Mapping[str, ProvenStream] | None = None,
    each: Callable[[MemberDigest], None] | None = None,
    consume: bool = False,
    layout: bool = False,
) -> ZipScan:
    """Read the zip at ``path`` once, front to back: its own SHA-256 and every member's digests.

    The same member checks and results as :func:`iter_member_digests` (unsafe, duplicate or bomb
    members are reported and not inflated; size, CRC and stream-end checks), but the archive's
    bytes are read a single time in 4 MiB blocks: each block is hashed whole (on a helper thread)
    and the parts of it that are member data are inflated in order and hashed (SHA-256 on a
    second helper, SHA-1 and CRC-32 on a third: :class:`_Hasher`), so a
    verifier needs no second pass for the archive's digest (DESIGN.md §11: every byte read once).
    Memory stays at about 30 MiB whatever the sizes. ``archive_sha256``: the archive's SHA-256
    the caller already established for these very bytes (a download that hashed them as they
    arrived); it is returned as ``sha256`` and the archive is not hashed again. ``index``: what
    :func:`read_zip_index` returned for this very file (the caller read it once for several
    uses); without it the index is read here. ``proven``: member name → :class:`ProvenStream`, the
    streams the caller proved already (the build's deflate-cache hits): such a member's stored
    bytes are hashed instead of inflated, and its digests are the proven content's only if they are
    that stream (else a problem); ``sha1`` is then ``""`` for it. ``each``: every member's
    digests are handed to it, in central-directory order, as soon as they and those before them
    are known, instead of being kept (the scan's ``members`` is then empty; issue 13: memory at
    many members). ``consume``: ``index`` is a list the caller gives up (it holds no member of it
    apart from the list): each entry is set to ``None`` once its member is handed on, so the
    index's memory goes as the scan goes (~0.4 KiB per member). ``layout``: the archive must also
    be laid out exactly as our writer lays a package out (:func:`._ziplayout.layout_problems`:
    headers rebuilt and compared byte for byte, records tiling the file); checked before any
    member is read.

    Raises:
        IntegrityError: the archive structure is unsafe (see :func:`read_zip_index`), or with
            ``layout`` not the package layout (the first problems listed).
        OSError: the file cannot be read.
    """
    if consume and not isinstance(index, list):
        raise TypeError("consume=True needs the index as a list")
    if layout:
        from ninfer_release.packaging._ziplayout import layout_problems

        found = layout_problems(path)
        if found:
            raise _fail(path, "not the package layout: " + "; ".join(found))  # one line: one finding
    if consume and isinstance(index, list):
        full = index
    else:
        full = list(index) if index is not None else read_zip_index(path)
    checks = _archive_checks(full, max_ratio=max_ratio, max_total=max_total)
    readable = _readable(full, checks)
    members = cast("list[ZipMember | None]", full)  # the very list: its entries are let go
    kept: list[MemberDigest] = []
    with (
        path.open("rb", buffering=0) as f,
        ThreadPoolExecutor(max_workers=3, thread_name_prefix="zip-hash") as pool,
    ):
        before = FileIdentity.of(os.fstat(f.fileno()))
        whole = _Hasher(pool, sha1=False, crc=False)
        out = _InOrder(members, checks, lambda: _Hasher(pool, sha1=sha1), each or kept.append, consume)
        reading = _Reading(members, readable, pool, sha1, proven or {}, out)
        pos = 0
        while block := f.read(_STEP):
            if archive_sha256 is None:
                whole.feed(block)
            reading.block(memoryview(block), pos)
            pos += len(block)
        whole.wait()
        reading.finish()
        identity = before if FileIdentity.of(os.fstat(f.fileno())) == before else None
    sha256 = archive_sha256 if archive_sha256 is not None else whole.sha256.hexdigest()
    return ZipScan(size=pos, sha256=sha256, members=tuple(kept), identity=identity)


def read_member(path: Path, name: str, *, max_bytes: int, index: Sequence[ZipMember] | None = None) -> bytes:
    """The bytes of member ``name`` of the zip at ``path``, at most ``max_bytes`` (for configs, SBOMs).

    ``index``: what :func:`read_zip_index` returned for this very file, so that reading a few
    members of a zip with many costs one read of its central directory, not one per member
    (issue 13); without it the index is read here. The member's bytes are checked against its
    declared size and CRC either way.

    Raises:
        IntegrityError: no such member, listed twice, larger than ``max_bytes``, unsafe, or its
            bytes do not match its declared size and CRC.
    """
    listed = index if index is not None else read_zip_index(path)
    members = [m for m in listed if m.name == name]
    if len(members) != 1:
        raise _fail(path, f"member {name!r} is {'missing' if not members else 'listed more than once'}")
    m = members[0]
    if m.size > max_bytes:
        raise _fail(path, f"member {name!r} declares {m.size} bytes, more than the {max_bytes} allowed")
    problems = _member_checks(m, max_ratio=DEFAULT_MAX_RATIO)
    if problems:
        raise IntegrityError(problems=[Problem(file=str(path), field=name, message=p) for p in problems])
    with path.open("rb") as f:
        try:
            data = b"".join(_inflate(f, m, min(m.size, max_bytes)))
        except INFLATE_ERRORS as exc:
            raise _fail(path, f"member {name!r} cannot be read: {exc}") from exc
    if len(data) != m.size or zlib.crc32(data) != m.crc32:
        raise _fail(path, f"member {name!r} does not match its declared size and CRC")
    return data
