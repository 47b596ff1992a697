"""Reproducibility rules, in one place (DESIGN.md §5; foundation leaf).

Nothing that reaches an artifact may come from the wall clock, the locale, the umask, the time
zone, the host name or directory order. This module turns the one allowed time source, the
source-date epoch, into the forms each format needs, and fixes the modes and attributes.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Mapping
from pathlib import Path

from ninfer_release.errors import DefinitionError

#: The zip (DOS) date-time format cannot express anything before this instant.
ZIP_EPOCH = 315532800  # 1980-01-01T00:00:00Z

#: Fixed modes: regular files 0644, directories 0755 (C15).
FILE_MODE = 0o644
DIR_MODE = 0o755
S_IFREG = 0o100000
S_IFDIR = 0o040000

#: zip "version made by" host byte: 3 = Unix, fixed on every OS (C15).
ZIP_CREATE_SYSTEM = 3
#: zip external attributes: Unix mode in the high 16 bits; MS-DOS directory bit 0x10.
ZIP_FILE_ATTR = (S_IFREG | FILE_MODE) << 16
ZIP_DIR_ATTR = ((S_IFDIR | DIR_MODE) << 16) | 0x10

#: gzip header OS byte (RFC 1952 §2.3.1): 255 = unknown, fixed on every OS (C24).
GZIP_OS_BYTE = 255


#: Latest source-date epoch accepted: 9999-12-31T23:59:59Z. SPDX and CycloneDX write RFC 3339
#: timestamps, whose years have four digits; later epochs overflow them (and the platform's
#: ``time_t`` soon after), so they are refused as a definition error instead (issue 9).
MAX_EPOCH = 253402300799


def source_date_epoch(default: int, env: Mapping[str, str]) -> int:
    """The source-date epoch in seconds: ``SOURCE_DATE_EPOCH`` from ``env`` if set, else ``default``.

    Raises:
        DefinitionError: ``SOURCE_DATE_EPOCH`` is not a non-negative whole number of seconds, or
            the epoch is after :data:`MAX_EPOCH`.
    """
    raw = env.get("SOURCE_DATE_EPOCH")
    if raw is None or raw == "":
        value = default
    else:
        # ASCII digits only (str.isdigit accepts e.g. superscripts); 12 digits reach MAX_EPOCH.
        if not raw.isascii() or not raw.isdigit() or len(raw) > len(str(MAX_EPOCH)):
            shown = raw if len(raw) <= 40 else f"{raw[:20]}... ({len(raw)} characters)"
            raise DefinitionError(
                f"SOURCE_DATE_EPOCH: {shown!r} is not a whole number of seconds up to {MAX_EPOCH}"
            )
        value = int(raw)
    if value < 0:
        raise DefinitionError(f"source-date epoch {value} is negative")
    if value > MAX_EPOCH:
        raise DefinitionError(f"source-date epoch {value} is after 9999-12-31T23:59:59Z ({MAX_EPOCH})")
    return value


def zip_date_time(epoch: int) -> tuple[int, int, int, int, int, int]:
    """The zip entry date-time for ``epoch`` (UTC), clamped to 1980-01-01 00:00:00 (C11).

    Odd seconds round down: the DOS format stores seconds / 2.
    """
    t = _dt.datetime.fromtimestamp(max(epoch, ZIP_EPOCH), tz=_dt.UTC)
    if t.year > 2107:
        t = _dt.datetime(2107, 12, 31, 23, 59, 58, tzinfo=_dt.UTC)
    return (t.year, t.month, t.day, t.hour, t.minute, t.second - t.second % 2)


def iso8601(epoch: int) -> str:
    """``epoch`` as an RFC 3339 UTC timestamp with a ``Z`` suffix, e.g. ``2023-11-14T22:13:20Z``."""
    return _dt.datetime.fromtimestamp(epoch, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def datetime_utc(epoch: int) -> _dt.datetime:
    """``epoch`` as an aware UTC datetime (for libraries that take datetimes)."""
    return _dt.datetime.fromtimestamp(epoch, tz=_dt.UTC)


def sorted_walk(root: Path, *, errors: list[OSError] | None = None) -> list[Path]:
    """Every file and directory under ``root`` (not following symlinks), sorted by POSIX path.

    The order depends only on the names, never on the file system's directory order. A directory
    that cannot be listed is never skipped silently (issue 9: an unreadable ``licenses/`` once
    shipped a package without licence texts): its :class:`OSError` (``filename`` set) is appended
    to ``errors`` when given, else raised.

    Raises:
        OSError: a directory under ``root`` cannot be listed and ``errors`` is ``None``.
    """
    return [path for _, path in sorted_walk_relative(root, errors=errors)]


def sorted_walk_relative(root: Path, *, errors: list[OSError] | None = None) -> list[tuple[str, Path]]:
    """:func:`sorted_walk` with each path's POSIX path relative to ``root``: ``(relative, path)``.

    The relative paths are cut from the walk's own strings (no ``Path.relative_to`` per entry:
    about half the walk's cost at 10k files, issue 13); they equal
    ``path.relative_to(root).as_posix()``.

    Raises:
        OSError: as :func:`sorted_walk`.
    """
    return [(rel, Path(name)) for rel, name in sorted_walk_names(root, errors=errors)]


def sorted_walk_names(root: Path, *, errors: list[OSError] | None = None) -> list[tuple[str, str]]:
    """:func:`sorted_walk_relative` with each path as the walk's ``str`` (``os.walk``'s directory
    joined with the entry's name): ``(relative, name)``, ``Path(name)`` being the path.

    No ``Path`` per entry (issue 13: a ``Path`` held per staged file was ~0.35 KiB of the
    build's memory at 100k files).

    Raises:
        OSError: as :func:`sorted_walk`.
    """
    found: list[tuple[str, str]] = []
    failed: list[OSError] = [] if errors is None else errors
    top = os.fspath(root)
    prefix = top if top.endswith(os.sep) else top + os.sep
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=failed.append):
        base = dirpath if dirpath.endswith(os.sep) else dirpath + os.sep
        rel = "" if dirpath == top else dirpath.removeprefix(prefix).replace(os.sep, "/") + "/"
        found.extend((rel + d, base + d) for d in dirnames)
        found.extend((rel + f, base + f) for f in filenames)
    if errors is None and failed:
        raise failed[0]
    found.sort(key=lambda item: item[0])
    return found
