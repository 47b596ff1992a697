"""An SPDX JSON document read from its file one array element at a time (issue 13: memory).

A document with 100k files is ~93 MB; read whole, decoded to text and parsed into dicts it held
~500 MB at once during ``verify``. :func:`read_streamed` instead reads the file in 1 MiB pieces
(hashing them as they come), decodes the top-level object's members one by one with the strict
decoder of :mod:`ninfer_release.strictjson` (``raw_decode`` over a bounded window), and keeps
each element of ``files`` and ``relationships`` as a compact row (:class:`CompactRows`: a tuple
of its values whose repeated strings and key orders are shared, ~0.4 KiB per file instead of
~2.5 KiB of dicts) that gives back an equal dict on demand. The rest of the document (the
*skeleton*) is decoded as plain values.

Only the documents the canonical fast path takes (``sbom._spdx_fast``) are read this way: a file
entry that is not canonical, a duplicate top-level key, anything the strict decoder refuses
(duplicate keys, non-finite or over-long numbers, depth), invalid UTF-8, a BOM, trailing data or a
file that grows while read makes it return ``None``, and the caller reads and parses the whole
document as before, so every message of a refused document is the one it always was.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from ninfer_release import strictjson
from ninfer_release.sbom._spdx_fast import file_types, is_canonical_file

#: Bytes read per piece (a value larger than the window doubles it, so the work stays linear).
CHUNK = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
#: Strings that repeat across file entries (shared, not one copy per file).
_SHARED_KEYS = frozenset({"comment", "copyrightText", "licenseConcluded", "algorithm", "relationshipType"})
_RELATIONSHIP_KEYS = frozenset({"spdxElementId", "relationshipType", "relatedSpdxElement"})


class _NotStreamed(Exception):
    """The document is not read this way: the caller reads it whole."""


class _Window:
    """The file's text from the current position on: read piece by piece, hashed as read."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.left = limit + 1
        self.sha256 = hashlib.sha256()
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.tail = b""

    def more(self) -> None:
        """Append the next piece (at least as much as is still unread, so a long value is read
        in O(its size)); at the end of the file, the decoder's last characters."""
        if self.eof:
            raise _NotStreamed
        want = max(CHUNK, len(self.buf) - self.pos)
        chunk = os.read(self.fd, min(self.left, want))
        self.left -= len(chunk)
        if self.left <= 0:
            raise _NotStreamed  # larger than its bound: the whole-file read reports it
        if chunk:
            self.sha256.update(chunk)
            self.tail = (self.tail + chunk)[-2:]
            text = self.decoder.decode(chunk)
        else:
            self.eof = True
            text = self.decoder.decode(b"", final=True)
        self.buf = self.buf[self.pos :] + text
        self.pos = 0

    def peek(self) -> str:
        """The next character after whitespace (``""`` at the end of the file)."""
        while True:
            m = _WS.match(self.buf, self.pos)
            self.pos = m.end() if m else self.pos
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if self.eof:
                return ""
            self.more()

    def take(self, char: str) -> None:
        """Consume ``char`` (after whitespace), else not streamed."""
        if self.peek() != char:
            raise _NotStreamed
        self.pos += 1

    def value(self) -> Any:
        """The next JSON value, decoded strictly (:data:`strictjson._DECODER`)."""
        self.peek()
        while True:
            try:
                obj, end = strictjson._DECODER.raw_decode(self.buf, self.pos)  # the one strict decoder
            except json.JSONDecodeError:
                self.more()  # cut off by the window's end (or invalid: then refused at the end)
                continue
            if end == len(self.buf) and not self.eof:
                self.more()  # a number or literal may go on past the window
                continue
            self.pos = end
            return obj

    def elements(self, each: Callable[[Any], None]) -> None:
        """Each element of the JSON array that comes next, in order."""
        self.take("[")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            each(self.value())
            nxt = self.peek()
            self.pos += 1
            if nxt == "]":
                return
            if nxt != ",":
                raise _NotStreamed


class _Strings:
    """One shared copy of each repeated string (and tuple)."""

    def __init__(self) -> None:
        self.pool: dict[Any, Any] = {}

    def __call__(self, value: Any) -> Any:
        return self.pool.setdefault(value, value)


def _pack_checksum(c: dict[str, Any], share: _Strings) -> tuple[Any, ...]:
    """A canonical checksum (exactly ``algorithm`` and ``checksumValue``) as
    ``(key order, algorithm, value)``."""
    return (share(tuple(c)), share(c["algorithm"]), c["checksumValue"])


def _unpack_checksum(packed: tuple[Any, ...]) -> dict[str, Any]:
    keys, algorithm, value = packed
    if keys[0] == "algorithm":
        return {"algorithm": algorithm, "checksumValue": value}
    return {"checksumValue": value, "algorithm": algorithm}


def _pack_entry(entry: dict[str, Any], share: _Strings) -> tuple[Any, ...]:
    """A canonical file entry as ``(keys, value, …)``: checksums as packed tuples, fileTypes as a
    shared tuple, repeated strings shared."""
    out: list[Any] = [share(tuple(entry))]
    for k, v in entry.items():
        if k == "checksums":
            out.append(tuple(_pack_checksum(c, share) for c in v))
        elif k == "fileTypes":
            out.append(share(tuple(share(t) for t in v)))
        else:
            out.append(share(v) if k in _SHARED_KEYS else v)
    return tuple(out)


def _pack_relationship(rel: Any, share: _Strings, ids: dict[str, str]) -> Any:
    """A relationship of exactly the three keys with string values as ``(keys, value, …)``;
    anything else as it is."""
    if (
        type(rel) is not dict
        or rel.keys() != _RELATIONSHIP_KEYS
        or not all(type(v) is str for v in rel.values())
    ):
        return rel
    return (share(tuple(rel)), *(ids.get(v) or share(v) for v in rel.values()))


def _unpack_row(row: Any) -> Any:
    """The dict a packed row stands for (an unpacked row as it is). Only a file entry has
    ``checksums`` and ``fileTypes`` (a packed relationship has exactly its three keys)."""
    if type(row) is not tuple:
        return row
    out = dict(zip(row[0], row[1:], strict=True))
    sums = out.get("checksums")
    if sums is not None:
        out["checksums"] = [_unpack_checksum(c) for c in sums]
    types = out.get("fileTypes")
    if types is not None:
        out["fileTypes"] = list(types)
    return out


class CompactRows(Sequence[Any]):
    """JSON array elements kept as packed rows; each item is given back as an equal new dict
    (a row that was not packed, as it was). A slice is a view on the same rows."""

    def __init__(self, rows: list[Any], start: int = 0, stop: int | None = None) -> None:
        self._rows = rows
        self._start = start
        self._stop = len(rows) if stop is None else stop

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> CompactRows: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("only contiguous slices")
            return CompactRows(self._rows, self._start + start, self._start + max(start, stop))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return _unpack_row(self._rows[self._start + i])

    def __iter__(self) -> Iterator[Any]:
        for k in range(self._start, self._stop):
            yield _unpack_row(self._rows[k])

    def file_facts(self) -> Iterator[tuple[str, str, tuple[tuple[str, str], ...]]]:
        """``(fileName, SPDXID, ((algorithm, checksumValue), …))`` of each row, a canonical file
        entry (what :func:`read_streamed` keeps), without building its dict."""
        for k in range(self._start, self._stop):
            row = self._rows[k]
            keys = row[0]
            sums = row[1 + keys.index("checksums")]
            yield (
                row[1 + keys.index("fileName")],
                row[1 + keys.index("SPDXID")],
                tuple((c[1], c[2]) for c in sums),
            )


@dataclass(frozen=True)
class Streamed:
    """What :func:`read_streamed` read: the skeleton (every top-level member but ``files`` and
    ``relationships``, in document order, ``relationships`` holding ``None`` in its place), the
    file entries
    (each canonical) and relationships as :class:`CompactRows`, the entries' SPDXIDs, the
    distinct ``licenseConcluded`` texts, the file's SHA-256 and its last two bytes."""

    skeleton: dict[str, Any]
    files: CompactRows
    relationships: CompactRows
    file_ids: Mapping[str, str]
    license_texts: list[str]
    sha256: str
    tail: bytes


class _Reader:
    """The top-level object of one document, member by member."""

    def __init__(self, window: _Window) -> None:
        self.w = window
        self.share = _Strings()
        self.types = file_types()
        self.ids: dict[str, str] = {}
        self.licenses: dict[str, None] = {}
        self.files: list[Any] = []
        self.relationships: list[Any] = []
        self.skeleton: dict[str, Any] = {}
        self.seen: set[str] = set()

    def file(self, entry: Any) -> None:
        if not is_canonical_file(entry, self.types):
            raise _NotStreamed
        row = _pack_entry(entry, self.share)
        spdx_id = row[1 + row[0].index("SPDXID")]
        self.ids[spdx_id] = spdx_id
        if "licenseConcluded" in entry:
            self.licenses.setdefault(entry["licenseConcluded"])
        self.files.append(row)

    def relationship(self, rel: Any) -> None:
        packed = _pack_relationship(rel, self.share, self.ids)
        if packed is rel and strictjson._deeper_than(rel, strictjson.MAX_DEPTH - 2):
            raise _NotStreamed
        self.relationships.append(packed)

    def member(self) -> None:
        if self.w.peek() != '"':
            raise _NotStreamed
        key = self.w.value()
        self.w.take(":")
        if key in self.seen:
            raise _NotStreamed  # a duplicate key: the whole-file read names it
        self.seen.add(key)
        if key == "files" and self.w.peek() == "[":
            self.w.elements(self.file)
            return
        if key == "relationships" and self.w.peek() == "[":
            self.w.elements(self.relationship)
            self.skeleton[key] = None  # its place in the document's order
            return
        value = self.w.value()
        if strictjson._deeper_than(value, strictjson.MAX_DEPTH - 1):
            raise _NotStreamed
        self.skeleton[key] = value

    def document(self) -> None:
        self.w.take("{")
        while True:
            self.member()
            nxt = self.w.peek()
            self.w.pos += 1
            if nxt == "}":
                break
            if nxt != ",":
                raise _NotStreamed
        if self.w.peek() != "" or not self.files or "files" in self.skeleton:
            raise _NotStreamed


def read_streamed(path: Path, *, limit: int) -> Streamed | None:
    """The SPDX document in ``path`` read piece by piece (see the module docstring), or ``None``
    when it is not read this way (the caller then reads it whole and gets every message as
    before). ``limit``: the most bytes it may have."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        window = _Window(fd, limit)
        reader = _Reader(window)
        reader.document()
    except (_NotStreamed, strictjson._Refused, UnicodeDecodeError, RecursionError, OSError):
        return None
    finally:
        os.close(fd)
    return Streamed(
        skeleton=reader.skeleton,
        files=CompactRows(reader.files),
        relationships=CompactRows(reader.relationships),
        file_ids=reader.ids,
        license_texts=list(reader.licenses),
        sha256=window.sha256.hexdigest(),
        tail=window.tail,
    )
