"""The one strict JSON reader every JSON input goes through (foundation leaf; issue 9).

Python's :mod:`json` is lenient where an input that steers a release must not be: a duplicate key
silently wins, ``NaN``/``Infinity`` parse, a 100,001-digit integer raises a bare ``ValueError``,
deep nesting raises ``RecursionError``, and ``open()`` on a FIFO blocks forever. This module
refuses each of these with a :class:`~ninfer_release.errors.Problem` naming the file (and the key,
or the path of the too-deep value), raised as the caller's error class (exit 4 for an input,
exit 5 for a member of a set being verified).

Rules (docs/reliability.md gives the reason for each value):

* only a regular file is opened — ``O_NONBLOCK`` so a FIFO never blocks — and its size is checked
  against the caller's bound *before* reading (the bound is what that input can legitimately be);
* UTF-8 without BOM (RFC 8259 §8.1), RFC 8259 syntax;
* duplicate object keys refused (RFC 8259 §4 leaves them undefined; YAML inputs refuse them too);
* numbers finite: ``NaN``, ``Infinity`` and overflowing literals such as ``1e999`` refused;
* integers at most :data:`MAX_INT_DIGITS` digits, other number literals at most
  :data:`MAX_NUMBER_CHARS` characters;
* nesting at most :data:`MAX_DEPTH` containers deep.

``true`` is not ``1``: compare a value that must be an integer with :func:`is_int` /
:func:`json_equal`, never with ``==`` alone.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ninfer_release.errors import InputError, NinferError, Problem

#: Containers (objects/arrays) one document may nest. Our deepest legitimate documents (CycloneDX
#: with nested components, OCI indexes) stay below 12; 64 leaves room while staying far below
#: the interpreter's recursion limit (1000), so depth is refused before it can become a crash.
MAX_DEPTH = 64
#: Digits of one JSON integer: 2**64 has 20 digits; no field we read (sizes, epochs, counts,
#: schema numbers) can legitimately be longer.
MAX_INT_DIGITS = 20
#: Characters of one non-integer number literal (a float's shortest repr is at most ~24).
MAX_NUMBER_CHARS = 40

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class _Refused(Exception):
    """A strictness rule broken while decoding; carries the field and message."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(key, f"duplicate key {key!r} (JSON inputs are read strictly)")
            seen.add(key)
    return obj


def _constant(name: str) -> Any:
    raise _Refused("", f"{name} is not a JSON number (only finite numbers are accepted)")


def _int(text: str) -> int:
    digits = len(text) - (text[0] == "-")
    if digits > MAX_INT_DIGITS:
        raise _Refused("", f"an integer of {digits} digits (at most {MAX_INT_DIGITS} accepted)")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _Refused("", f"a number literal of {len(text)} characters (at most {MAX_NUMBER_CHARS})")
    value = float(text)
    if not math.isfinite(value):
        raise _Refused("", f"{text} overflows to a non-finite number")
    return value


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_constant=_constant, parse_int=_int, parse_float=_float, strict=True
)


_CONTAINERS = (dict, list)


def _deeper_than(doc: Any, max_depth: int) -> bool:
    """Whether a container of ``doc`` is nested deeper than ``max_depth`` containers.

    One level at a time, without building the path of every container as :func:`_too_deep`
    does: a third of its cost on a 10k-file SBOM (issue 13). Only a ``True`` needs the path.
    """
    level = [doc] if isinstance(doc, _CONTAINERS) else []
    depth = 1
    while level:
        if depth > max_depth:
            return True
        inner: list[Any] = []
        append = inner.append
        for value in level:
            for child in value.values() if isinstance(value, dict) else value:
                if isinstance(child, _CONTAINERS):
                    append(child)
        level = inner
        depth += 1
    return False


def _too_deep(doc: Any, max_depth: int) -> str | None:
    """The path of the first value nested deeper than ``max_depth`` containers, else ``None``."""
    stack: list[tuple[Any, int, str]] = [(doc, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            continue
        if depth > max_depth:
            return where or "(top level)"
        for key, child in items:
            if isinstance(child, dict | list):
                path = f"{where}[{key}]" if isinstance(key, int) else (f"{where}.{key}" if where else key)
                stack.append((child, depth + 1, path))
    return None


def parse(
    data: bytes, *, source: str, error: type[NinferError] = InputError, max_depth: int = MAX_DEPTH
) -> Any:
    """Decode ``data`` (UTF-8 JSON bytes) strictly; ``source`` names the file in errors.

    Returns the plain value (``dict``/``list``/``str``/``int``/``float``/``bool``/``None``).

    Raises:
        error (default :class:`InputError`, exit 4): not UTF-8, not JSON, a duplicate key,
            a non-finite or over-long number, or nesting deeper than ``max_depth``.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        raise _refuse(error, source, "starts with a UTF-8 BOM; JSON is UTF-8 without BOM (RFC 8259 §8.1)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(error, source, f"not UTF-8 (byte {exc.start})") from None
    try:
        doc = _DECODER.decode(text)
    except _Refused as exc:
        raise _refuse(error, source, exc.message, exc.field) from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise _refuse(error, source, f"not valid JSON: {exc.msg} ({where})") from None
    except RecursionError:
        raise _refuse(error, source, f"nested deeper than {max_depth} levels") from None
    # A document with no more opening brackets than the limit cannot be nested deeper than it.
    if data.count(b"[") + data.count(b"{") > max_depth and _deeper_than(doc, max_depth):
        deep = _too_deep(doc, max_depth)
        if deep is not None:
            raise _refuse(error, source, f"nested deeper than {max_depth} levels", deep)
    return doc


def parse_object(
    data: bytes, *, source: str, error: type[NinferError] = InputError, max_depth: int = MAX_DEPTH
) -> dict[str, Any]:
    """:func:`parse`, and the top level must be a JSON object.

    Raises:
        error: as :func:`parse`, or the top level is not an object.
    """
    doc = parse(data, source=source, error=error, max_depth=max_depth)
    if not isinstance(doc, dict):
        raise _refuse(error, source, "top level must be a JSON object")
    return doc


def _refuse(error: type[NinferError], file: str, message: str, field: str = "") -> NinferError:
    return error(problems=[Problem(file=file, field=field, message=message)])


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_regular(
    path: Path,
    *,
    limit: int,
    source: str | None = None,
    error: type[NinferError] = InputError,
    missing: str = "not found",
    follow_symlinks: bool = True,
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` bytes.

    The file is opened non-blocking (a FIFO never blocks), ``fstat`` must say "regular file" and
    its size must be within ``limit`` before anything is read; reading stops at ``limit + 1``
    bytes so a file growing meanwhile is still refused.

    Raises:
        error (default :class:`InputError`): missing (message ``missing``), a symlink when
            ``follow_symlinks`` is false, not a regular file, larger than ``limit`` bytes, or
            unreadable (the OS reason is named).
    """
    name = source or str(path)
    flags = _OPEN_FLAGS | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _refuse(error, name, missing) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise _refuse(error, name, "must be a regular file, not a symlink") from None
        raise _refuse(error, name, f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(error, name, f"{_kind(st.st_mode)}; only regular files are read")
        if st.st_size > limit:
            raise _refuse(error, name, f"{st.st_size} bytes, larger than its bound of {limit} bytes")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise _refuse(error, name, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise _refuse(error, name, f"grew beyond its bound of {limit} bytes while read")
    return data


def read(
    path: Path,
    *,
    limit: int,
    source: str | None = None,
    error: type[NinferError] = InputError,
    missing: str = "not found",
    follow_symlinks: bool = True,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """:func:`read_regular` then :func:`parse` (``limit`` in bytes).

    Raises:
        error: as :func:`read_regular` and :func:`parse`.
    """
    name = source or str(path)
    data = read_regular(
        path, limit=limit, source=name, error=error, missing=missing, follow_symlinks=follow_symlinks
    )
    return parse(data, source=name, error=error, max_depth=max_depth)


def read_object(
    path: Path,
    *,
    limit: int,
    source: str | None = None,
    error: type[NinferError] = InputError,
    missing: str = "not found",
    follow_symlinks: bool = True,
    max_depth: int = MAX_DEPTH,
) -> dict[str, Any]:
    """:func:`read`, and the top level must be a JSON object.

    Raises:
        error: as :func:`read`, or the top level is not an object.
    """
    name = source or str(path)
    data = read_regular(
        path, limit=limit, source=name, error=error, missing=missing, follow_symlinks=follow_symlinks
    )
    return parse_object(data, source=name, error=error, max_depth=max_depth)


def is_int(value: object) -> bool:
    """``value`` is a JSON integer: an ``int`` that is not a ``bool`` (``true`` is not ``1``)."""
    return isinstance(value, int) and not isinstance(value, bool)


def json_equal(value: object, expected: str | int | bool | None) -> bool:
    """``value == expected`` with JSON types kept apart (``true != 1``, ``1.0 != 1``)."""
    return type(value) is type(expected) and value == expected


def get_int(obj: Mapping[str, Any], key: str) -> int | None:
    """``obj[key]`` when it is a JSON integer (see :func:`is_int`), else ``None``."""
    value = obj.get(key)
    return value if is_int(value) else None
