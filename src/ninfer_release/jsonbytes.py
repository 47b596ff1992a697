"""Exact JSON bytes (foundation leaf).

Two renderings, never mixed:

* :func:`dumps_stable` — what every JSON asset is written as: UTF-8, two-space indent,
  keys sorted, LF line endings, exactly one trailing newline.
* :func:`canonical_json` — RFC 8785 (JCS) canonical form, what a *semantic* digest hashes.

:func:`dumps_indented` is ``json.dumps(obj, indent=…)`` (the same text, for every input) without
the pure-Python generator chain Python 3.11 uses whenever ``indent`` is given: about 3× faster
on a 10k-file SBOM (issue 13). Both renderings above and the SBOM writers use it.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Callable, Iterator, Sequence
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, BinaryIO, Generic, TypeVar, overload


def dumps_stable(obj: Any) -> bytes:
    """Render ``obj`` as stable, human-readable JSON bytes (sorted keys, LF, trailing newline)."""
    return dumps_indented_bytes(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False, end="\n")


def dump_stable_into(obj: Any, sink: BinaryIO) -> None:
    """:func:`dumps_stable` written into the seekable binary file ``sink`` as it is rendered
    (:func:`dump_indented_into`; :class:`LazyArray` values are written as arrays)."""
    dump_indented_into(obj, sink, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False, end="\n")


class LazyArray:
    """A JSON array whose elements are made as they are written (issue 13: an SBOM's 100k file
    entries are never all alive at once): ``parts`` are sequences written one after the other.
    Only :func:`dumps_indented_bytes` writes it (``json`` cannot); its length is the parts' sum."""

    def __init__(self, *parts: Sequence[Any]) -> None:
        self.parts = parts

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def __iter__(self) -> Iterator[Any]:
        for part in self.parts:
            yield from part


_T = TypeVar("_T")


class MadeOnRead(Sequence[Any], Generic[_T]):
    """A read-only sequence whose ``i``-th element is ``make(items[i])``, made anew on each read
    (issue 13: 100k SBOM entries, occurrences or provenance dependencies are never all alive at
    once); a part of a :class:`LazyArray`, or a sequence of its own."""

    def __init__(self, items: Sequence[_T], make: Callable[[_T], Any]) -> None:
        self.items, self.make = items, make

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self.make(x) for x in self.items[i]]
        return self.make(self.items[i])

    def __iter__(self) -> Iterator[Any]:
        return map(self.make, self.items)


def _plain(obj: Any) -> Any:
    """``obj`` with every :class:`LazyArray` as a list (what :func:`json.dumps` is given)."""
    if isinstance(obj, LazyArray):
        return [_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return (
            [_plain(v) for v in obj]
            if any(isinstance(v, LazyArray | dict | list | tuple) for v in obj)
            else obj
        )
    return obj


#: Pieces of text the writer gathers before it encodes them into the output (~64 KiB).
_PIECES = 2048


def dumps_indented_bytes(
    obj: Any,
    *,
    indent: int,
    sort_keys: bool = False,
    ensure_ascii: bool = True,
    allow_nan: bool = True,
    end: str = "",
) -> bytes:
    """``(dumps_indented(obj, …) + end).encode("utf-8")``, encoded as it is written: the text is
    never whole, only ~64 KiB of it at a time beside the bytes (issue 13: a 93 MB SBOM held its
    pieces, its text, the text plus LF and the bytes at once). :class:`LazyArray` values are
    written as arrays. Anything :func:`dumps_indented` hands to :func:`json.dumps` is handed to it
    here too (with each lazy array made a list), so the result or the exception is json's; a
    string that cannot be UTF-8 raises ``UnicodeEncodeError`` as ``encode`` does.
    """
    sink = io.BytesIO()
    dump_indented_into(
        obj, sink, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=allow_nan, end=end
    )
    return sink.getvalue()


def dump_indented_into(
    obj: Any,
    sink: BinaryIO,
    *,
    indent: int,
    sort_keys: bool = False,
    ensure_ascii: bool = True,
    allow_nan: bool = True,
    end: str = "",
) -> None:
    """:func:`dumps_indented_bytes` written into the seekable binary file ``sink`` from its
    current position, ~64 KiB at a time (issue 13: a 93 MB SBOM never held whole). When the
    value is left to :func:`json.dumps` (see :func:`dumps_indented_bytes`), what was written from
    that position is cut off first, then json's text (or its exception) follows.
    """
    start = sink.tell()
    writer = _Writer(
        " " * indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=allow_nan, sink=sink
    )
    try:
        writer.write(obj, "\n")
    except (_Unsupported, RecursionError, TypeError, ValueError):
        sink.seek(start)
        sink.truncate()
        text = json.dumps(
            _plain(obj), indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=allow_nan
        )
        sink.write((text + end).encode("utf-8"))
        return
    writer.out.append(end)
    writer.spill()


class _Unsupported(Exception):
    """A value :func:`dumps_indented` leaves to :func:`json.dumps` (its result or its error)."""


def dumps_indented(
    obj: Any, *, indent: int, sort_keys: bool = False, ensure_ascii: bool = True, allow_nan: bool = True
) -> str:
    """Exactly ``json.dumps(obj, indent=indent, sort_keys=…, ensure_ascii=…, allow_nan=…)``.

    Values are written as :mod:`json` writes them (``str``, ``int`` and ``float`` subclasses by
    their base type's rules, tuples as arrays, keys ``str``/``int``/``float``/``bool``/``None``
    converted as :mod:`json` converts them); anything else (a type json cannot write, a NaN with
    ``allow_nan=False``, a cycle, keys that do not sort) is handed to :func:`json.dumps` itself,
    so the result or the exception is always json's. Tested against it (``tests/test_jsonbytes.py``).
    """
    writer = _Writer(" " * indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=allow_nan)
    try:
        writer.write(obj, "\n")
    except (_Unsupported, RecursionError, TypeError, ValueError):
        return json.dumps(
            obj, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=allow_nan
        )
    return "".join(writer.out)


class _Writer:
    """The recursive writer of :func:`dumps_indented`: chunks of text appended to ``out``, each
    container written at its ``newline`` (``"\n"`` plus its own indentation)."""

    def __init__(
        self,
        step: str,
        *,
        sort_keys: bool,
        ensure_ascii: bool,
        allow_nan: bool,
        sink: BinaryIO | None = None,
    ) -> None:
        self.step = step
        self.sort_keys = sort_keys
        self.allow_nan = allow_nan
        self.string = encode_basestring_ascii if ensure_ascii else encode_basestring
        self.out: list[str] = []
        #: Where the pieces go, encoded, every :data:`_PIECES` of them (``None``: kept in ``out``).
        self.sink = sink

    def spill(self) -> None:
        """The pieces so far, encoded into the sink (``out`` emptied in place)."""
        if self.sink is not None:
            self.sink.write("".join(self.out).encode("utf-8"))
            self.out.clear()

    def number(self, value: float) -> str:
        """json.encoder's ``floatstr``."""
        if value != value or value in (math.inf, -math.inf):
            if not self.allow_nan:
                raise _Unsupported
            return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
        return float.__repr__(value)

    def scalar(self, value: Any) -> str:
        """A non-container value, checked in json's order (``str``, ``None``, bools, ``int``, ``float``)."""
        if isinstance(value, str):
            return self.string(value)
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if isinstance(value, int):
            return int.__repr__(value)
        if isinstance(value, float):
            return self.number(value)
        raise _Unsupported

    def key(self, k: Any) -> str:
        """An object key: json converts a non-string key to its JSON text, then quotes it."""
        if isinstance(k, str):
            return self.string(k)
        if isinstance(k, float):
            return self.string(self.number(k))
        if k is True or k is False or k is None or isinstance(k, int):
            return self.string(self.scalar(k))
        raise _Unsupported

    def write(self, value: Any, newline: str) -> None:
        if type(value) is str:
            self.out.append(self.string(value))
        elif isinstance(value, list | tuple) or (self.sink is not None and isinstance(value, LazyArray)):
            self.array(value, newline)
        elif isinstance(value, dict):
            self.object(value, newline)
        else:
            self.out.append(self.scalar(value))

    def array(self, values: list[Any] | tuple[Any, ...] | LazyArray, newline: str) -> None:
        out, string = self.out, self.string
        if not values:
            out.append("[]")
            return
        inner = newline + self.step
        separator = "," + inner
        out.append("[" + inner)
        first = True
        for v in values:
            if not first:
                out.append(separator)
            first = False
            if type(v) is str:  # the common case inline (a call less per value)
                out.append(string(v))
            else:
                self.write(v, inner)
                if len(out) > _PIECES and self.sink is not None:
                    self.spill()
        out.append(newline + "]")

    def object(self, obj: dict[Any, Any], newline: str) -> None:
        out, string = self.out, self.string
        if not obj:
            out.append("{}")
            return
        inner = newline + self.step
        separator = "," + inner
        out.append("{" + inner)
        first = True
        for k, v in sorted(obj.items()) if self.sort_keys else obj.items():
            if not first:
                out.append(separator)
            first = False
            name = string(k) if type(k) is str else self.key(k)
            if type(v) is str:  # the common case inline
                out.append(name + ": " + string(v))
            else:
                out.append(name + ": ")
                self.write(v, inner)
        out.append(newline + "}")


def _jcs_number(value: float | int) -> str:
    # RFC 8785 §3.2.2.3: numbers serialise as ECMAScript Number.prototype.toString.
    if isinstance(value, bool):  # pragma: no cover - bools handled by caller
        raise TypeError("bool is not a number")
    if isinstance(value, int):
        if abs(value) > 2**53:
            raise ValueError(f"integer {value} is outside the I-JSON safe range (RFC 8785 §3.2.2.3)")
        return str(value)
    if not math.isfinite(value):
        raise ValueError("NaN and Infinity have no JSON form (RFC 8785 §3.2.2.3)")
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    r = repr(value)  # shortest round-trip form, as ECMAScript requires
    if "e" in r:
        mantissa, exp = r.split("e")
        exp_i = int(exp)
        if -7 < exp_i < 21:
            return format(value, "f").rstrip("0").rstrip(".")
        return f"{mantissa}e{'+' if exp_i > 0 else '-'}{abs(exp_i)}"
    return r


def _jcs(obj: Any) -> str:
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int | float):
        return _jcs_number(obj)
    if isinstance(obj, str):
        return json.dumps(obj, ensure_ascii=False)
    if isinstance(obj, list | tuple):
        return "[" + ",".join(_jcs(v) for v in obj) + "]"
    if isinstance(obj, dict):
        for key in obj:
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {key!r}")
        # RFC 8785 §3.2.3: sort by UTF-16 code units.
        items = sorted(obj.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _jcs(v) for k, v in items) + "}"
    raise TypeError(f"{type(obj).__name__} has no JSON form")


def canonical_json(obj: Any) -> bytes:
    """RFC 8785 (JCS) canonical UTF-8 bytes of a JSON-compatible value.

    Raises:
        TypeError: a value has no JSON form (datetime, bytes, non-string key).
        ValueError: NaN/Infinity, or an integer outside ±2**53.
    """
    return _jcs(obj).encode("utf-8")


def semantic_sha256(obj: Any) -> str:
    """SHA-256 (lowercase hex) of :func:`canonical_json` of ``obj``."""
    return hashlib.sha256(canonical_json(obj)).hexdigest()
