"""The package's exact record layout, checked on a zip a consumer was given (DESIGN.md §5, §10).

:func:`~._zipread.read_zip_index` accepts any well-formed, non-overlapping archive, as a reader
must. A package of ours is more than well formed: our writer (:mod:`._zipformat`) lays it out
one way only, so any other layout was not written by it. :func:`layout_problems` rebuilds, from
each central-directory entry's own values, the central and local header bytes the writer makes
for them and compares them byte for byte, and checks that the records tile the file:

* the first local header at offset 0, each member's data followed at once by the next local
  header, the central directory at once after the last member's data (no prepended bytes, no
  gap between members, no local entry the central directory does not list: a streaming
  extractor would read what the central directory hides);
* every local header equal to its central entry (name, flags, method, CRC-32, sizes, version,
  time): a reader that trusts the local header (``unzip`` of a stream, 7-Zip on some fields)
  sees the same member as one that trusts the central directory;
* no extra field but the zip64 one the writer adds exactly when a value does not fit in 32 bits
  (an Info-ZIP Unicode Path field, 0x7075, renames a member for 7-Zip); no comment; the
  external attributes of a regular 0644 file (no symlink, no directory entry), "made by" Unix;
* every member name one the build accepts for a Windows package (``_paths.check_windows_paths``
  without the length budget, which depends on the install root: no case or NFC twins, no
  reserved device name, no component ending in a dot or space, no ``<>:"|?*``);
* the end records right after the central directory (zip64 ones only when needed) and the
  end-of-central-directory record the file's last 22 bytes (no archive comment, nothing after).

Cost: one read of the central directory and one ``pread`` per about 64 KiB of local headers.
"""

from __future__ import annotations

import struct
from pathlib import Path

from ninfer_release.packaging._paths import check_windows_paths
from ninfer_release.packaging._zipformat import (
    CENTRAL_FMT,
    CENTRAL_SIG,
    DEFLATED,
    FLAG_UTF8,
    LIMIT32,
    LOCAL_FMT,
    LOCAL_SIG,
    VERSION_MADE_BY,
    ZIP64_EXTRA_ID,
    encode_name,
    end_records,
    needs_zip64,
    version_needed,
)
from ninfer_release.packaging._zipread import _Headers, _read_central_directory
from ninfer_release.reproducible import ZIP_FILE_ATTR

#: Disk number, internal and external attributes of every central entry the writer makes.
_PLAIN_TAIL = (0, 0, ZIP_FILE_ATTR)
#: At most this many problems are listed; a layout with more is described by the first ones.
MAX_LISTED = 5


def layout_problems(path: Path) -> list[str]:
    """Every way the zip at ``path`` departs from the layout our writer makes (module docstring),
    as one-line messages naming the member; empty when it is that layout exactly. At most
    :data:`MAX_LISTED` are returned.

    Raises:
        IntegrityError: the archive is not a readable zip at all (end records, central directory).
        OSError: the file cannot be read.
    """
    problems: list[str] = []
    with path.open("rb") as f:
        cd = _read_central_directory(f, path)
        data, i, pos = cd.data, 0, 0
        headers = _Headers(f.fileno())
        names: list[str] = []
        for n in range(cd.count):
            if len(problems) >= MAX_LISTED:
                return problems
            if i + CENTRAL_FMT.size > len(data) or CENTRAL_FMT.unpack_from(data, i)[0] != CENTRAL_SIG:
                problems.append(f"central directory entry {n} is not where the previous one ends")
                return problems
            entry = _plain_entry(data, i, pos, headers) or _exact_entry(data, i, pos, headers, problems)
            names.append(entry[0])
            i, pos = entry[1], entry[2]
        if len(problems) >= MAX_LISTED:
            return problems
        for p in check_windows_paths(names, extended_length=True, source=str(path)):
            problems.append(f"member {p.field!r}: {p.message}")
        if i != len(data):
            problems.append(f"central directory holds {len(data) - i} bytes beyond its {cd.count} entries")
        if cd.offset != pos:
            problems.append(f"central directory at offset {cd.offset}, not {pos} where the last member ends")
        records = end_records(count=cd.count, cd_offset=cd.offset, cd_size=len(data))
        f.seek(cd.offset + len(data))
        if f.read(len(records) + 1) != records:
            problems.append(
                "the end records are not the writer's right after the central directory "
                "(an archive comment, appended bytes or other end-record values)"
            )
    return problems[:MAX_LISTED]


def _plain_entry(data: bytes, i: int, pos: int, headers: _Headers) -> tuple[str, int, int] | None:
    """(name, next entry's index, next member's offset) of the central entry at ``data[i:]`` when
    it is the common one — no extra field, no comment, 32-bit values, its local header at
    ``pos`` — and it and its local header are exactly the writer's; else ``None`` (the exact
    path, :func:`_exact_entry`, then names what differs). The same comparison as the exact
    path's on the fields' values, without building the records' bytes (issue 13: ~2 µs
    instead of ~9 per member at 10k members)."""
    fields = CENTRAL_FMT.unpack_from(data, i)
    if fields[11] or fields[12] or fields[16] != pos or fields[8] >= LIMIT32 or fields[9] >= LIMIT32:
        return None
    start = i + CENTRAL_FMT.size
    raw = data[start : start + fields[10]]
    ascii_name = raw.isascii()
    flags = 0 if ascii_name else FLAG_UTF8
    needed = 20 if fields[4] == DEFLATED else 10
    local = headers.at(pos, LOCAL_FMT.size + fields[10])
    if (
        fields[1:5] == (VERSION_MADE_BY, needed, flags, fields[4])
        and fields[13:16] == _PLAIN_TAIL
        and len(local) == LOCAL_FMT.size + fields[10]
        and LOCAL_FMT.unpack_from(local) == (LOCAL_SIG, needed, flags, *fields[4:11], 0)
        and local[LOCAL_FMT.size :] == raw
        and (ascii_name or raw.decode("utf-8", "replace").encode("utf-8") == raw)
    ):
        name = raw.decode("ascii") if ascii_name else raw.decode("utf-8")
        return name, start + fields[10], pos + LOCAL_FMT.size + fields[10] + fields[8]
    return None


def _exact_entry(
    data: bytes, i: int, pos: int, headers: _Headers, problems: list[str]
) -> tuple[str, int, int]:
    """(name, next entry's index, next member's offset) of the central entry at ``data[i:]``,
    its records rebuilt as the writer makes them and compared byte for byte; what differs is
    appended to ``problems``."""
    fields = CENTRAL_FMT.unpack_from(data, i)
    dtime, ddate, crc = fields[5], fields[6], fields[7]
    nlen, xlen, clen = fields[10], fields[11], fields[12]
    j = i + CENTRAL_FMT.size
    raw, extra = data[j : j + nlen], data[j + nlen : j + nlen + xlen]
    size, csize, offset = _real_values(fields, extra)
    name = raw.decode("utf-8", "replace")
    label = f"member {name!r}"
    expected_raw, flags = encode_name(name)
    method = fields[4]
    zip64 = needs_zip64(size=size, compressed_size=csize, offset=offset)
    central = _central(raw, flags, method, dtime, ddate, crc, size, csize, offset, zip64)
    if raw != expected_raw or data[i : j + nlen + xlen + clen] != central:
        problems.append(
            f"{label}: central directory entry is not the one the writer makes for it "
            f"({_central_difference(fields, expected_raw == raw, extra, central, raw)})"
        )
    if offset != pos:
        what = "bytes before it" if offset > pos else "it overlaps the previous member"
        problems.append(f"{label}: local header at offset {offset}, not {pos} ({what})")
    local = _local(raw, flags, method, dtime, ddate, crc, size, csize, zip64)
    if headers.at(offset, len(local)) != local:
        problems.append(f"{label}: local header differs from its central directory entry")
    return name, j + nlen + xlen + clen, offset + len(local) + csize


def _real_values(fields: tuple[int, ...], extra: bytes) -> tuple[int, int, int]:
    """(size, compressed size, offset) with the saturated ones taken from a zip64 extra field."""
    csize, size, offset = fields[8], fields[9], fields[16]
    values = iter(())
    if len(extra) >= 4 and struct.unpack_from("<H", extra)[0] == ZIP64_EXTRA_ID:
        count = struct.unpack_from("<H", extra, 2)[0] // 8
        values = iter(struct.unpack_from(f"<{count}Q", extra, 4)) if len(extra) >= 4 + 8 * count else values
    if size == LIMIT32:
        size = next(values, size)
    if csize == LIMIT32:
        csize = next(values, csize)
    if offset == LIMIT32:
        offset = next(values, offset)
    return size, csize, offset


def _central(
    raw: bytes, flags: int, method: int, dtime: int, ddate: int, crc: int, size: int, csize: int, offset: int,
    zip64: bool,
) -> bytes:  # fmt: skip
    """The central entry ``_zipformat.central_header`` writes for these values (its time fields)."""
    values = [v for v in (size, csize, offset) if v >= LIMIT32]
    extra = struct.pack(f"<HH{len(values)}Q", ZIP64_EXTRA_ID, 8 * len(values), *values) if values else b""
    return (
        CENTRAL_FMT.pack(
            CENTRAL_SIG, VERSION_MADE_BY, version_needed(method, zip64), flags, method, dtime, ddate, crc,
            min(csize, LIMIT32), min(size, LIMIT32), len(raw), len(extra), 0, 0, 0, ZIP_FILE_ATTR,
            min(offset, LIMIT32),
        )
        + raw
        + extra
    )  # fmt: skip


def _central_difference(
    fields: tuple[int, ...], name_ok: bool, extra: bytes, central: bytes, raw: bytes
) -> str:
    """Which part of a central entry departs from the writer's: the first found, in a few words."""
    if not name_ok:
        return "name bytes or UTF-8 flag"
    if fields[15] != ZIP_FILE_ATTR:
        return f"external attributes 0o{fields[15] >> 16:o}, not 0o{ZIP_FILE_ATTR >> 16:o} (regular, 0644)"
    if fields[12]:
        return "a file comment"
    expected_extra = central[CENTRAL_FMT.size + len(raw) :]
    if extra != expected_extra:
        return "an extra field the writer does not add"
    return "version, flags, method or disk fields"


def _local(
    raw: bytes, flags: int, method: int, dtime: int, ddate: int, crc: int, size: int, csize: int, zip64: bool
) -> bytes:
    """The local header ``_zipformat.local_header`` writes for these values (its time fields)."""
    sizes64 = size >= LIMIT32 or csize >= LIMIT32
    extra = struct.pack("<HHQQ", ZIP64_EXTRA_ID, 16, size, csize) if sizes64 else b""
    return (
        LOCAL_FMT.pack(
            LOCAL_SIG, version_needed(method, zip64), flags, method, dtime, ddate, crc,
            LIMIT32 if sizes64 else csize, LIMIT32 if sizes64 else size, len(raw), len(extra),
        )
        + raw
        + extra
    )  # fmt: skip


__all__ = ["MAX_LISTED", "layout_problems"]
