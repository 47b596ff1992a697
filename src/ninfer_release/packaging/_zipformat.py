"""Byte layout of the zip records we write (PKWARE APPNOTE 6.3.x; DESIGN.md §5; C11 C15 C16).

Pure functions from field values to bytes, so the header rules are unit-tested without writing
archives. Fixed choices (part of the product's byte format, never taken from the host):

* "version made by" = Unix (3) << 8 | 45 on every OS (C15); "version needed" 10 stored, 20
  deflated, 45 when the entry carries a zip64 extra field;
* general-purpose flags: only bit 11 (UTF-8 name), set exactly when the name is not ASCII (C16);
  no data descriptors (bit 3), no encryption;
* date/time from the source-date epoch clamped to 1980-01-01 (C11); external attributes
  ``reproducible.ZIP_FILE_ATTR`` (regular file 0644) for every member (C15); no directory
  entries (extractors create folders from member paths), so no directory attributes;
* no extra fields and no comments, except the zip64 extended-information field, which is written
  only when a size or offset does not fit in 32 bits, and zip64 end records only when the entry
  count or central directory does not fit (>= 0xFFFF entries, >= 0xFFFFFFFF bytes).
"""

from __future__ import annotations

import struct

from ninfer_release.reproducible import ZIP_CREATE_SYSTEM, ZIP_FILE_ATTR, zip_date_time

LOCAL_SIG = 0x04034B50
CENTRAL_SIG = 0x02014B50
EOCD_SIG = 0x06054B50
ZIP64_EOCD_SIG = 0x06064B50
ZIP64_LOCATOR_SIG = 0x07064B50
ZIP64_EXTRA_ID = 0x0001

LIMIT32 = 0xFFFFFFFF
LIMIT16 = 0xFFFF
FLAG_UTF8 = 0x0800
VERSION_MADE_BY = (ZIP_CREATE_SYSTEM << 8) | 45
STORED = 0
DEFLATED = 8

LOCAL_FMT = struct.Struct("<IHHHHHIIIHH")  # 30 bytes
CENTRAL_FMT = struct.Struct("<IHHHHHHIIIHHHHHII")  # 46 bytes
EOCD_FMT = struct.Struct("<IHHHHIIH")  # 22 bytes
ZIP64_EOCD_FMT = struct.Struct("<IQHHIIQQQQ")  # 56 bytes
ZIP64_LOCATOR_FMT = struct.Struct("<IIQI")  # 20 bytes


def dos_date_time(epoch: int) -> tuple[int, int]:
    """(DOS time, DOS date) for ``epoch``, clamped to 1980-01-01 00:00:00 UTC (C11)."""
    year, month, day, hour, minute, second = zip_date_time(epoch)
    return (hour << 11) | (minute << 5) | (second // 2), ((year - 1980) << 9) | (month << 5) | day


def encode_name(name: str) -> tuple[bytes, int]:
    """UTF-8 bytes of ``name`` and its flags: bit 11 exactly when the name is not ASCII (C16)."""
    raw = name.encode("utf-8")
    return raw, (0 if raw.isascii() else FLAG_UTF8)


def needs_zip64(*, size: int, compressed_size: int, offset: int) -> bool:
    """True when an entry's sizes or local-header offset do not fit the 32-bit fields."""
    return size >= LIMIT32 or compressed_size >= LIMIT32 or offset >= LIMIT32


def version_needed(method: int, zip64: bool) -> int:
    """APPNOTE 4.4.3: 1.0 stored, 2.0 deflated, 4.5 zip64."""
    if zip64:
        return 45
    return 20 if method == DEFLATED else 10


def local_header(
    *, name: str, method: int, crc32: int, size: int, compressed_size: int, epoch: int, zip64: bool
) -> bytes:
    """A local file header. With ``zip64`` both sizes move into a zip64 extra field (APPNOTE 4.5.3).

    ``zip64`` must be the entry's :func:`needs_zip64` so local and central headers agree.
    """
    raw, flags = encode_name(name)
    dostime, dosdate = dos_date_time(epoch)
    sizes64 = size >= LIMIT32 or compressed_size >= LIMIT32
    extra = struct.pack("<HHQQ", ZIP64_EXTRA_ID, 16, size, compressed_size) if sizes64 else b""
    return (
        LOCAL_FMT.pack(
            LOCAL_SIG,
            version_needed(method, zip64),
            flags,
            method,
            dostime,
            dosdate,
            crc32,
            LIMIT32 if sizes64 else compressed_size,
            LIMIT32 if sizes64 else size,
            len(raw),
            len(extra),
        )
        + raw
        + extra
    )


def central_header(
    *, name: str, method: int, crc32: int, size: int, compressed_size: int, offset: int, epoch: int
) -> bytes:
    """A central directory header; overflowing fields go to a zip64 extra field in APPNOTE order."""
    raw, flags = encode_name(name)
    dostime, dosdate = dos_date_time(epoch)
    zip64 = needs_zip64(size=size, compressed_size=compressed_size, offset=offset)
    fields: list[int] = []
    if size >= LIMIT32:
        fields.append(size)
    if compressed_size >= LIMIT32:
        fields.append(compressed_size)
    if offset >= LIMIT32:
        fields.append(offset)
    extra = struct.pack(f"<HH{len(fields)}Q", ZIP64_EXTRA_ID, 8 * len(fields), *fields) if fields else b""
    return (
        CENTRAL_FMT.pack(
            CENTRAL_SIG,
            VERSION_MADE_BY,
            version_needed(method, zip64),
            flags,
            method,
            dostime,
            dosdate,
            crc32,
            min(compressed_size, LIMIT32),
            min(size, LIMIT32),
            len(raw),
            len(extra),
            0,  # comment length
            0,  # disk number start
            0,  # internal attributes
            ZIP_FILE_ATTR,
            min(offset, LIMIT32),
        )
        + raw
        + extra
    )


def end_records(*, count: int, cd_offset: int, cd_size: int) -> bytes:
    """End of central directory, preceded by zip64 end record + locator only when needed."""
    zip64 = count >= LIMIT16 or cd_offset >= LIMIT32 or cd_size >= LIMIT32
    out = b""
    if zip64:
        zip64_offset = cd_offset + cd_size
        out += ZIP64_EOCD_FMT.pack(
            ZIP64_EOCD_SIG,
            ZIP64_EOCD_FMT.size - 12,
            VERSION_MADE_BY,
            45,
            0,
            0,
            count,
            count,
            cd_size,
            cd_offset,
        )
        out += ZIP64_LOCATOR_FMT.pack(ZIP64_LOCATOR_SIG, 0, zip64_offset, 1)
    out += EOCD_FMT.pack(
        EOCD_SIG,
        0,
        0,
        min(count, LIMIT16),
        min(count, LIMIT16),
        min(cd_size, LIMIT32),
        min(cd_offset, LIMIT32),
        0,
    )
    return out
