"""Assemble a deterministic zip from compressed members, atomically (DESIGN.md §5; C11 C15 C16 C17).

The archive is written to a temp file beside ``out``, fsynced, then renamed over ``out``.
:func:`write_zip` computes its SHA-256 from the bytes as they are written (no second read).
:func:`finish_zip` (the build's path: the streams already lie in the archive's own file) then
proves the archive on disk in one read, the self-check: the file is hashed whole (its SHA-256)
while every member is inflated and checked against the size, CRC-32 and SHA-256 of the bytes
that were compressed (:func:`self_check`); a mismatch removes the archive and fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.jsonbytes import MadeOnRead
from ninfer_release.packaging._compress import (
    WRITEBACK_EVERY,
    CompressedMember,
    WriteBack,
    ZipLayout,
)
from ninfer_release.packaging._zipformat import (
    STORED,
    central_header,
    end_records,
    local_header,
    needs_zip64,
)
from ninfer_release.packaging._zipread import MemberDigest, ProvenStream, ZipScan, read_zip_index, scan_zip
from ninfer_release.packaging._zlib import engine as zlib

_COPY = 1 << 20  # 1 MiB


class SelfCheckError(IntegrityError):
    """The self-check found members of the archive that are not the bytes that were compressed.

    ``stale``: the content SHA-256 (the cache key) of each such member whose stream came from the
    deflate cache: those entries are bad, and a build without them gives the package's bytes.
    """

    def __init__(self, *, problems: Iterable[Problem], stale: Iterable[str] = ()) -> None:
        super().__init__(problems=problems)
        self.stale: tuple[str, ...] = tuple(stale)


@dataclass(frozen=True, kw_only=True)
class ZipEntryDigest:
    """One member as written: ``size`` (bytes, uncompressed), digests, CRC and method (0 or 8)."""

    name: str
    size: int
    compressed_size: int
    sha256: str
    sha1: str
    crc32: int
    method: int


@dataclass(frozen=True, kw_only=True)
class ZipResult:
    """The written archive: path, size in bytes, SHA-256 (lowercase hex) and its members in order.

    ``scan``: what the self-check of :func:`finish_zip` read back from the archive on disk (its
    SHA-256 and every member's digests, all checked); ``None`` from :func:`write_zip`.
    """

    path: Path
    size: int
    sha256: str
    entries: tuple[ZipEntryDigest, ...]
    scan: ZipScan | None = None


#: How often :func:`write_zip` starts writing the archive back to disk (:class:`WriteBack`).
_WRITEBACK_EVERY = WRITEBACK_EVERY


class _Out:
    """A file writer that tracks the position, hashes everything written and syncs as it goes."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.pos = 0
        self.sha256 = hashlib.sha256()
        self._writeback = WriteBack(_WRITEBACK_EVERY)

    def write(self, data: bytes) -> None:
        self.f.write(data)
        self.sha256.update(data)
        self.pos += len(data)
        self._writeback.wrote(self.f, len(data))

    def sync(self) -> None:
        """Flush and fsync everything written (waits for a write-back still running)."""
        self.f.flush()
        self._writeback.wait()
        os.fsync(self.f.fileno())

    def abandon(self) -> None:
        """Stop the write-back helper after a failure (its error, if any, is not the one to report)."""
        with contextlib.suppress(OSError):
            self._writeback.wait()


def _copy_member(m: CompressedMember, src: BinaryIO, out: _Out) -> None:
    """Copy the member's spooled bytes (its deflate stream, or its raw data when stored).

    A stored member's CRC-32 is recomputed from the copied bytes (the spool is our temp file, but
    a damaged one must not yield a zip whose member disagrees with its header).
    """
    crc = 0
    written = 0
    src.seek(m.spool_offset)
    left = m.spool_length
    while left:
        block = src.read(min(_COPY, left))
        if not block:
            break
        left -= len(block)
        if m.method == STORED:
            crc = zlib.crc32(block, crc)
        out.write(block)
        written += len(block)
    if m.method == STORED and crc != m.crc32:
        raise IntegrityError(f"{m.name}: spooled bytes do not reproduce the member (CRC mismatch)")
    if written != m.compressed_size:
        raise IntegrityError(
            f"{m.name}: wrote {written} bytes, expected {m.compressed_size} (spool damaged?)"
        )


def _name_problems(members: list[CompressedMember]) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    for m in members:
        if m.name in seen:
            problems.append(Problem(file="zip", field=m.name, message="member name given twice"))
        seen.add(m.name)
        if "\\" in m.name:
            problems.append(
                Problem(file="zip", field=m.name, message="contains a backslash; zip names use '/' (C17)")
            )
        if len(m.name.encode("utf-8")) > 0xFFFF:
            problems.append(Problem(file="zip", field=m.name[:80], message="name longer than 65535 bytes"))
        parts = m.name.split("/")
        if m.name.startswith("/") or any(p in ("", ".", "..") for p in parts):
            problems.append(Problem(file="zip", field=m.name, message="not a normalised relative path"))
    return problems


def _zip_order(members: Iterable[CompressedMember]) -> list[CompressedMember]:
    """``members`` sorted by the UTF-8 bytes of their names (the zip's order, C16)."""
    return sorted(members, key=lambda m: m.name.encode("utf-8"))


def _check_names(ordered: list[CompressedMember]) -> None:
    """Raises: InputError listing every duplicate or unnormalised member name (C17)."""
    problems = _name_problems(ordered)
    if problems:
        raise InputError(problems=problems)


def _local_header_at(m: CompressedMember, *, offset: int, epoch: int) -> bytes:
    """``m``'s local header for a header at byte ``offset`` (zip64 sizes when needed)."""
    return local_header(
        name=m.name,
        method=m.method,
        crc32=m.crc32,
        size=m.size,
        compressed_size=m.compressed_size,
        epoch=epoch,
        zip64=needs_zip64(size=m.size, compressed_size=m.compressed_size, offset=offset),
    )


def _central_directory(
    ordered: list[CompressedMember], offsets: list[int], *, epoch: int, cd_offset: int
) -> bytes:
    """The central directory of ``ordered`` (local headers at ``offsets``) and the end records."""
    headers = b"".join(
        central_header(
            name=m.name,
            method=m.method,
            crc32=m.crc32,
            size=m.size,
            compressed_size=m.compressed_size,
            offset=offset,
            epoch=epoch,
        )
        for m, offset in zip(ordered, offsets, strict=True)
    )
    return headers + end_records(count=len(ordered), cd_offset=cd_offset, cd_size=len(headers))


def _result(out: Path, *, size: int, sha256: str, ordered: list[CompressedMember]) -> ZipResult:
    """The description of the archive written at ``out``: ``size`` bytes, members in zip order."""
    return ZipResult(
        path=out,
        size=size,
        sha256=sha256,
        entries=tuple(
            ZipEntryDigest(
                name=m.name,
                size=m.size,
                compressed_size=m.compressed_size,
                sha256=m.sha256,
                sha1=m.sha1,
                crc32=m.crc32,
                method=m.method,
            )
            for m in ordered
        ),
    )


def _write_members(ordered: list[CompressedMember], w: _Out, *, epoch: int) -> list[int]:
    """Write each member's local header and copied stream; return the headers' offsets."""
    offsets: list[int] = []
    with contextlib.ExitStack() as spools:
        handles: dict[Path, BinaryIO] = {}
        for m in ordered:
            offsets.append(w.pos)
            w.write(_local_header_at(m, offset=w.pos, epoch=epoch))
            src = handles.get(m.spool)
            if src is None:
                src = handles[m.spool] = spools.enter_context(m.spool.open("rb"))
            _copy_member(m, src, w)
    return offsets


def write_zip(members: Iterable[CompressedMember], out: Path, *, epoch: int) -> ZipResult:
    """Write ``members`` as a deterministic zip at ``out`` (atomic replace) and describe it.

    Members are sorted by the UTF-8 bytes of their names; every member gets the date-time of
    ``epoch`` (clamped to 1980-01-01, C11), create system 3 and ``ZIP_FILE_ATTR`` (C15), bit 11 for
    non-ASCII names (C16); no directory entries, extra fields or comments except zip64 where needed.
    The same members and epoch give the same bytes on any host.

    Raises:
        InputError: two members share a name, or a name is not a normalised ``/`` path (C17).
        IntegrityError: a spooled stream does not reproduce its member.
        OSError: ``out``'s folder is not writable.
    """
    ordered = _zip_order(members)
    _check_names(ordered)
    written = _write_temp(ordered, out, epoch=epoch)
    return _commit(written, out)


def _write_temp(ordered: list[CompressedMember], out: Path, *, epoch: int) -> ZipResult:
    """:func:`write_zip`'s archive, fsynced, in a temp file beside ``out`` (the result's ``path``).

    Raises:
        as :func:`write_zip` (the temp file is removed first).
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            w = _Out(f)
            try:
                offsets = _write_members(ordered, w, epoch=epoch)
                w.write(_central_directory(ordered, offsets, epoch=epoch, cd_offset=w.pos))
                w.sync()
            except BaseException:
                w.abandon()
                raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return _result(tmp, size=w.pos, sha256=w.sha256.hexdigest(), ordered=ordered)


def _commit(written: ZipResult, out: Path) -> ZipResult:
    """Rename the finished temp archive of ``written`` over ``out`` (mode 0644); it is then ``out``.

    Raises:
        OSError: the rename failed (the temp file is removed; ``out`` is as it was).
    """
    try:
        written.path.chmod(0o644)
        written.path.replace(out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            written.path.unlink()
        raise
    return dataclasses.replace(written, path=out)


def _in_place(layout: ZipLayout, ordered: list[CompressedMember]) -> bool:
    """True when the layout holds ``ordered`` exactly in zip order, each right after its header's
    room, which starts where the one before ends and is exactly the header's length."""
    position = 0
    for m in ordered:
        room = layout.reserved.get(m.name)
        header = len(
            local_header(
                name=m.name,
                method=m.method,
                crc32=0,
                size=m.size,
                compressed_size=m.compressed_size,
                epoch=0,
                zip64=False,
            )
        )
        if (
            room != position
            or m.spool != layout.path
            or m.spool_offset != position + header
            or m.spool_length != m.compressed_size
        ):
            return False
        position += header + m.compressed_size
    return position == layout.position


def _fill_local_headers(layout: ZipLayout, ordered: list[CompressedMember], *, epoch: int) -> list[int]:
    """Write each member's local header into its reserved room; return the headers' offsets."""
    offsets: list[int] = []
    for m in ordered:
        offset = layout.reserved[m.name]
        offsets.append(offset)
        os.pwrite(layout.file.fileno(), _local_header_at(m, offset=offset, epoch=epoch), offset)
    return offsets


class _ReadBack:
    """The self-check's comparison, member by member as :func:`scan_zip` hands them on: each
    member of ``ordered`` against its digests as read back, in zip order.

    The scan is given the index to let go as it goes (``consume``), and what is kept of the
    members is what the final verify reads (:attr:`ZipScan.members`, :meth:`digests`): columns of
    the compressed members' own name, size, SHA-256, SHA-1, CRC-32 and method objects, made into
    :class:`MemberDigest` rows when read — not a tuple and equal copies of the strings per member
    (issue 13: ~31 MB at 100k members before, ~4 MB now, held through the final verify). Only
    members that read back as compressed are kept: any other fails the self-check.
    """

    def __init__(self, ordered: list[CompressedMember]) -> None:
        self.ordered = ordered
        self.count = 0
        self.same_names = True
        self.mismatches: list[Problem] = []
        self.columns: tuple[list[str], list[int], list[str], list[str], list[int], list[int]] = (
            [], [], [], [], [], []
        )  # fmt: skip

    def take(self, d: MemberDigest) -> None:
        """The next member's digests as read back (central-directory order)."""
        i, self.count = self.count, self.count + 1
        if i >= len(self.ordered) or d.name != self.ordered[i].name:
            self.same_names = False
            return
        m = self.ordered[i]
        problems = _member_mismatch(m, d)
        if problems:
            self.mismatches += problems
            return
        names, sizes, sha256s, sha1s, crcs, methods = self.columns
        names.append(m.name)
        sizes.append(m.size)
        sha256s.append(m.sha256)
        sha1s.append(m.sha1)
        crcs.append(m.crc32)
        methods.append(m.method)

    def problems(self) -> list[Problem]:
        """Where the archive's members, as read back, differ from the members that were compressed."""
        if not self.same_names or self.count != len(self.ordered):
            return [Problem(file="zip", message="the archive does not list the members that were compressed")]
        return self.mismatches

    def digests(self) -> MadeOnRead[int]:
        """The members' digests as the scan gave them, once every member read back as compressed
        (:meth:`problems` empty). The scan takes no SHA-1: each member's is the compressed
        member's, of the very bytes whose size, CRC-32 and SHA-256 it read back (the SPDX SHA1 the
        final verify compares with it)."""
        names, sizes, sha256s, sha1s, crcs, methods = self.columns
        return MadeOnRead(
            range(len(names)),
            lambda i: MemberDigest._make((names[i], sizes[i], sha256s[i], sha1s[i], crcs[i], methods[i], ())),
        )


def _member_mismatch(m: CompressedMember, d: MemberDigest) -> list[Problem]:
    """Why member ``m``, read back as ``d``, is not the bytes that were compressed (empty: it is)."""
    source = " (its stream came from the deflate cache)" if m.from_cache else ""
    if d.problems:
        return [Problem(file="zip", field=m.name, message=p + source) for p in d.problems]
    if (d.size, d.crc32, d.sha256, d.method) == (m.size, m.crc32, m.sha256, m.method):
        return []
    message = (
        f"inflates to {d.size} bytes with SHA-256 {d.sha256}, not the "
        f"{m.size} bytes with SHA-256 {m.sha256} that were compressed{source}"
    )
    return [Problem(file="zip", field=m.name, message=message)]


def _proven_streams(ordered: Iterable[CompressedMember]) -> dict[str, ProvenStream]:
    """The members whose stream was proven while compressing, by name (``CompressedMember.stream_sha256``)."""
    return {
        m.name: ProvenStream(
            stream_sha256=m.stream_sha256, size=m.size, crc32=m.crc32, sha256=m.sha256, method=m.method
        )
        for m in ordered
        if m.stream_sha256
    }


def self_check(result: ZipResult, members: Iterable[CompressedMember]) -> ZipResult:
    """Prove that the archive of ``result`` on disk holds exactly ``members``, in one read of it.

    :func:`~ninfer_release.packaging.scan_zip` reads the file once, front to back: it hashes it
    whole (the returned result's ``sha256``, unless ``result.sha256`` is already set from the
    writing) and inflates every member, whose size, CRC-32, SHA-256 and method must be those of
    the bytes that were compressed (the staged bytes as read). A member whose stream was already
    proven to inflate to those bytes (``CompressedMember.stream_sha256``: a deflate-cache hit, or a
    member of at least 256 KiB re-inflated as it was written) is not inflated again: its stored
    bytes must have that stream's SHA-256. Each member is compared as the scan hands it on, the
    zip index let go as the scan goes; the result carries the scan, whose ``members`` (SHA-1 not
    taken: ``""``) are made when read from the compressed members' own strings (issue 13: memory
    at 100k members).

    Raises:
        SelfCheckError: a member differs, cannot be inflated, or the archive does not list exactly
            ``members`` (the archive is removed first); ``stale`` names the cache entries among them.
    """
    ordered = _zip_order(members)
    try:
        back = _ReadBack(ordered)
        scan = scan_zip(
            result.path,
            sha1=False,
            archive_sha256=result.sha256 or None,
            proven=_proven_streams(ordered),
            index=read_zip_index(result.path),
            each=back.take,
            consume=True,
            layout=True,
        )
        problems = back.problems()
        if scan.size != result.size:
            problems.append(Problem(file="zip", message=f"{scan.size} bytes on disk, {result.size} written"))
        if problems:
            failed = {p.field for p in problems}
            raise SelfCheckError(
                problems=problems, stale=[m.sha256 for m in ordered if m.from_cache and m.name in failed]
            )
    except BaseException:
        result.path.unlink(missing_ok=True)
        raise
    return dataclasses.replace(
        result, sha256=scan.sha256, scan=dataclasses.replace(scan, members=back.digests())
    )


def _finish_in_place(layout: ZipLayout, ordered: list[CompressedMember], *, epoch: int) -> ZipResult:
    """Write the local headers into their room and the central directory, and start writing the
    rest back to disk (:meth:`WriteBack.start_all`) without waiting: :func:`_durable` ends it.

    The result's ``path`` is the layout's temp file (not renamed yet) and its ``sha256`` is empty:
    the self-check that follows hashes the archive, while its last bytes reach the disk (issue 13:
    on an unchanged rebuild the copied streams' write-back, ~0.4 s of the `--full` lane, was
    waited for before the self-check's 0.6 s read).
    """
    f = layout.file
    offsets = _fill_local_headers(layout, ordered, epoch=epoch)
    f.seek(layout.position)
    tail = _central_directory(ordered, offsets, epoch=epoch, cd_offset=layout.position)
    f.write(tail)
    layout.writeback.start_all(f)
    return _result(layout.path, size=layout.position + len(tail), sha256="", ordered=ordered)


def _durable(layout: ZipLayout) -> None:
    """Wait for the layout's write-back (its error surfaces here), fsync the file and close it."""
    layout.writeback.wait()
    os.fsync(layout.file.fileno())
    layout.file.close()


def finish_zip(
    layout: ZipLayout, members: Iterable[CompressedMember], out: Path, *, epoch: int, entries: bool = True
) -> ZipResult:
    """Turn ``layout`` into the zip of ``members`` at ``out`` (atomic replace): :func:`write_zip`'s bytes.

    When the layout holds the members in zip order (sorted by UTF-8 name, as
    :func:`~ninfer_release.packaging.compress_members` wrote them), only the local headers are
    written into their room and the central directory appended: no stream is copied. Otherwise
    (members compressed out of zip order) the streams are copied by :func:`write_zip`. The layout
    is consumed either way. Then :func:`self_check` reads the archive back once: its SHA-256 and
    the proof that every member inflates to the bytes that were compressed (``ZipResult.scan``).
    The archive is checked in its temp file and renamed over ``out`` only once it passed, so a
    failure leaves an existing ``out`` as it was. ``entries=False``: the result lists no
    ``entries`` (for a caller that reads its size, digest and scan only: not held through the
    self-check, issue 13: 100k records).

    Raises:
        as :func:`write_zip` and :func:`self_check`.
    """
    ordered = _zip_order(members)
    try:
        _check_names(ordered)
        layout.file.flush()
        in_place = _in_place(layout, ordered)
        if in_place:
            written = _finish_in_place(layout, ordered, epoch=epoch)
        else:
            written = _write_temp(ordered, out, epoch=epoch)
            layout.discard()
        # The headers are written: their rooms are not held through the self-check and after
        # (issue 13: ~20 MB at 100k members).
        layout.reserved.clear()
        if not entries:
            written = dataclasses.replace(written, entries=())
        checked = self_check(written, ordered)
        if in_place:
            _durable(layout)  # on disk before the rename, as write_zip's archive is
    except BaseException:
        layout.discard()
        raise
    return _commit(checked, out)
