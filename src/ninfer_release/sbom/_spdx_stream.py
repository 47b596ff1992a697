"""An SPDX JSON document read from its file one array element at a time (issue 13: memory, CPU).

A document with 100k files is ~93 MB; read whole, decoded to text and parsed into dicts it held
~500 MB at once during ``verify``. :func:`read_streamed` instead reads the file in 1 MiB pieces
(hashing them as they come) and decodes the top-level object's members one by one with the strict
decoder of :mod:`ninfer_release.strictjson` (``raw_decode`` over a bounded window). Each element
of ``files`` is checked as it is decoded and then let go: what is kept of it is its SPDXID and
its entry in the file map (zip path -> (SHA-1, SHA-256)). Of the ``CONTAINS`` relationships to
those files that end ``relationships`` only the distinct ``spdxElementId`` values are kept. The
rest of the document (the *skeleton*) is decoded as plain values.

Only a *clean* document is read this way: every file entry has the canonical shape
(``sbom._spdx_fast.is_canonical_file``) and is one spdx-tools and our own checks give no message
for (an SPDXID our writer makes, a ``./``-relative clean zip path listed once, exactly one SHA-1
and one SHA-256 of lowercase hex, see :meth:`_Reader.file`). A file entry that is not clean, a
duplicate top-level key, anything the strict decoder refuses (duplicate keys, non-finite or
over-long numbers, depth), invalid UTF-8, a BOM, trailing data or a file that grows while read
makes it return ``None``, and the caller reads and parses the whole document as before, so every
message of a refused document is the one it always was. The per-file verdict needs no second
look at the entries: a licence text or a relationship source that is not clean (decided against
the skeleton, ``sbom._spdx._check_streamed``) hands the document back too (:class:`NotClean`).
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ninfer_release import strictjson
from ninfer_release.sbom._ids import SPDX_ID_RE
from ninfer_release.sbom._spdx import zip_path_problem
from ninfer_release.sbom._spdx_fast import file_types, is_canonical_file
from ninfer_release.sbom._spdx_skeleton import SHA1_DIGITS, SHA256_DIGITS

#: Bytes read per piece (a value larger than the window doubles it, so the work stays linear).
CHUNK = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")
_T = TypeVar("_T")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
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

    def batch(self, each: Callable[[Any], None]) -> int:
        """Decode, with one call of the strict decoder, the run of complete array elements that
        starts at the current position and ends in the window, giving each to ``each``: 1 when
        some were (the position is then after the last), 0 when the window holds no such run, -1
        when the run did not decode as one (the caller goes on one element at a time).

        The run ends at the window's last line that closes an object at the first element's
        indentation (``"\\n" + indent + "}"``: a newline is never inside a JSON string, so that
        brace is structure). Decoded as ``"[" + run + "]"``, a run that is not a sequence of whole
        elements cannot decode (a strict prefix of an object is not a JSON value), and one that
        does gives exactly the values one-at-a-time decoding gives. For arrays of small objects
        (CycloneDX occurrences, ~0.2 KiB each) most of their decoding cost is per call.
        """
        if self.peek() != "{":
            return 0
        buf, pos = self.buf, self.pos
        line = buf.rfind("\n", 0, pos)
        if line < 0 or buf[line:pos].strip(" \t\r\n"):
            return 0
        marker = buf[line:pos] + "}"
        cut = buf.rfind(marker, pos)
        if cut < 0:
            return 0
        end = cut + len(marker)
        text = "[" + buf[pos:end] + "]"
        try:
            values, stop = strictjson._DECODER.raw_decode(text)
        except (json.JSONDecodeError, strictjson._Refused, RecursionError):
            return -1
        if stop != len(text):
            return -1
        self.pos = end
        for value in values:
            each(value)
        return 1

    def elements(self, each: Callable[[Any], None], fast: _Fast | None = None) -> None:
        """Each element of the JSON array that comes next, in order. With ``fast``, each run of
        elements its expression matches whole with the comma after them (in the window) is
        given to its handler as those matches instead of being decoded (:class:`_Fast`); the
        element after a run (the last one, or one cut by the window's end) is decoded."""
        self.take("[")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            if fast is not None:
                self.pos = fast.run(self.buf, self.pos)
            each(self.value())
            nxt = self.peek()
            self.pos += 1
            if nxt == "]":
                return
            if nxt != ",":
                raise _NotStreamed


def _hex_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """spdx-tools' ``validate_checksum`` expressions for SHA1 and SHA256 (``algorithm_length``,
    copied as ``sbom._spdx_skeleton.SHA1_DIGITS`` / ``SHA256_DIGITS``), used with ``fullmatch``
    (stricter than the library's ``match``, which lets a final LF pass)."""
    return re.compile(f"[0-9a-f]{{{SHA1_DIGITS}}}"), re.compile(f"[0-9a-f]{{{SHA256_DIGITS}}}")


#: JSON whitespace (RFC 8259 §2) and a JSON string without escapes or control characters: such
#: a string decodes to its text between the quotes exactly (the strict decoder refuses a raw
#: control character, and a window's text is valid UTF-8 without surrogates).
_W = r"[ \t\n\r]*"
_S = r'"([^"\\\x00-\x1f]*)"'


def _key(name: str) -> str:
    """The expression of ``"name":`` with whitespace around it."""
    return _W + '"' + name + '"' + _W + ":" + _W


@dataclass(frozen=True)
class _Fast:
    """An expression that matches one array element whole, and what to do with its match: an
    element that matches is exactly the object whose members the expression spells, in that
    order, with those string values (one key each, so no duplicate); one that does not is
    decoded by the strict decoder as before (:meth:`_Window.elements`)."""

    pattern: re.Pattern[str]
    handle: Callable[[re.Match[str]], None]

    def run(self, buf: str, pos: int) -> int:
        """Hand each element that matches with its comma, from ``pos`` on, to the handler; the
        position after the last one."""
        match, handle = self.pattern.match, self.handle
        m = match(buf, pos)
        while m is not None:
            pos = m.end()
            handle(m)
            m = match(buf, pos)
        return pos


@functools.cache
def _file_pattern() -> re.Pattern[str]:
    """A file entry as our writer spells it (keys sorted): SPDXID matching
    :data:`~ninfer_release.sbom._ids.SPDX_ID_RE` (a subset of spdx-tools' internal-id rule), the
    checksums ``[SHA1, SHA256]`` in lowercase hex of the lengths spdx-tools' ``validate_checksum``
    wants, optional comment and copyrightText, fileName ``./``-relative, optional fileTypes (at
    least one name; each is checked against spdx-tools' FileType names) and licenseConcluded;
    then the comma after the entry."""
    lengths = {"SHA1": SHA1_DIGITS, "SHA256": SHA256_DIGITS}

    def checksum(name: str) -> str:
        digits = str(lengths[name])
        value = '"([0-9a-f]{' + digits + '})"'
        return f'{_W}\\{{{_key("algorithm")}"{name}"{_W},{_key("checksumValue")}{value}{_W}\\}}{_W}'

    name = '"' + r"(SPDXRef-[A-Za-z0-9.-]+)" + '"'
    types = '"[A-Z_]+"' + "(?:" + _W + "," + _W + '"[A-Z_]+")*'
    return re.compile(
        r"[ \t\n\r]*\{" + _key("SPDXID") + name + _W + ","
        + _key("checksums") + r"\[" + checksum("SHA1") + "," + checksum("SHA256") + r"\]" + _W + ","
        + "(?:" + _key("comment") + _S + _W + ",)?"
        + "(?:" + _key("copyrightText") + _S + _W + ",)?"
        + _key("fileName") + r'"\./([^"\\<>:|?*\x00-\x1f]*)"' + _W
        + "(?:," + _key("fileTypes") + r"\[" + _W + "(" + types + ")" + _W + r"\]" + _W + ")?"
        + "(?:," + _key("licenseConcluded") + _S + _W + ")?"
        + r"\}" + _W + ","
    )  # fmt: skip


#: A bare CONTAINS relationship as our writer spells it (and the comma after it).
_CONTAINS = re.compile(
    r"[ \t\n\r]*\{" + _key("spdxElementId") + _S + _W + "," + _key("relatedSpdxElement") + _S + _W
    + "," + _key("relationshipType") + '"CONTAINS"' + _W + r"\}" + _W + ","
)  # fmt: skip
_TYPE_NAME = re.compile(r'"([A-Z_]+)"')


def _segments_clean(path: str) -> bool:
    """``zip_path_problem(path) is None`` for a path without the characters it refuses (what the
    fileName expression of :func:`_file_pattern` lets through): no segment is empty, ``.`` or
    ``..`` (an empty path, a leading ``/`` or ``./`` each make one), found as ``//``, ``/./``
    or ``/../`` in the path between slashes."""
    framed = "/" + path + "/"
    return "//" not in framed and "/./" not in framed and "/../" not in framed


class NotClean(Exception):
    """Raised while checking a streamed document against its skeleton: a licence text or a
    relationship source is not clean; the caller hands the document back to the whole path."""


@dataclass(frozen=True)
class Streamed:
    """What :func:`read_streamed` read of a clean document.

    ``skeleton``: every top-level member but ``files``, in document order, ``relationships``
    holding the relationships before the ``CONTAINS`` tail (as decoded dicts); ``file_ids``: the
    entries' SPDXIDs in document order (each once); ``files``: zip path (``fileName`` without its
    ``./``) -> (SHA-1, SHA-256) in document order; ``licenses``: the distinct ``licenseConcluded``
    texts; ``contains_from``: the distinct ``spdxElementId`` of the tail (each relationship of it
    ``CONTAINS`` a listed file, nothing else); ``sha256``: the file's; ``tail``: its last two bytes.
    """

    skeleton: dict[str, Any]
    file_ids: list[str]
    files: dict[str, tuple[str, str]]
    licenses: list[str]
    contains_from: list[str]
    sha256: str
    tail: bytes


class _Reader:
    """The top-level object of one document, member by member."""

    def __init__(self, window: _Window) -> None:
        self.w = window
        self.types = file_types()
        self.sha1_hex, self.sha256_hex = _hex_patterns()
        #: Each SPDXID -> itself: a tail relationship's target is kept as this very string.
        self.ids: dict[str, str] = {}
        self.type_lists: dict[str, bool] = {}
        self.files: dict[str, tuple[str, str]] = {}
        self.licenses: dict[str, None] = {}
        # The run of CONTAINS relationships to listed files since the last other relationship:
        # (spdxElementId, relatedSpdxElement) each; it is the tail if nothing else follows.
        self.run_from: list[str] = []
        self.run_to: list[str] = []
        self.relationships: list[Any] = []
        self.skeleton: dict[str, Any] = {}
        self.seen: set[str] = set()

    def file(self, entry: Any) -> None:
        """Keep the SPDXID and the file map entry of a clean entry; anything else: not streamed.

        Clean: canonical shape; exactly ``[SHA1, SHA256]`` (either order) with lowercase hex
        values of their length (spdx-tools' ``validate_checksum`` gives no message, our map has
        both); the SPDXID matches :data:`~ninfer_release.sbom._ids.SPDX_ID_RE` whole (implies
        spdx-tools' ``validate_spdx_id`` without a colon) and is
        new; ``fileName`` is ``./`` + a clean zip path (``zip_path_problem``) not listed before.
        """
        if not is_canonical_file(entry, self.types):
            raise _NotStreamed
        sums = entry["checksums"]
        if len(sums) != 2:
            raise _NotStreamed
        first, second = sums
        if first["algorithm"] == "SHA1" and second["algorithm"] == "SHA256":
            sha1, sha256 = first["checksumValue"], second["checksumValue"]
        elif first["algorithm"] == "SHA256" and second["algorithm"] == "SHA1":
            sha1, sha256 = second["checksumValue"], first["checksumValue"]
        else:
            raise _NotStreamed
        spdx_id, name = entry["SPDXID"], entry["fileName"]
        path = name[2:]
        if not (
            self.sha1_hex.fullmatch(sha1)
            and self.sha256_hex.fullmatch(sha256)
            and SPDX_ID_RE.fullmatch(spdx_id)
            and spdx_id not in self.ids
            and name.startswith("./")
            and zip_path_problem(path) is None
            and path not in self.files
        ):
            raise _NotStreamed
        self.ids[spdx_id] = spdx_id
        self.files[path] = (sha1, sha256)
        if "licenseConcluded" in entry:
            self.licenses.setdefault(entry["licenseConcluded"])

    def file_match(self, m: re.Match[str]) -> None:
        """:meth:`file` of an entry :func:`_file_pattern` matched: its shape, checksums and SPDXID
        rules and the path's characters hold by the expression; what is left is the fileTypes
        names, the path's segments and that the SPDXID and the path are new."""
        spdx_id, sha1, sha256, _, _, path, types, license_text = m.groups()
        if types is not None:
            ok = self.type_lists.get(types)
            if ok is None:
                ok = self.type_lists[types] = all(t in self.types for t in _TYPE_NAME.findall(types))
            if not ok:
                raise _NotStreamed
        if spdx_id in self.ids or not _segments_clean(path) or path in self.files:
            raise _NotStreamed
        self.ids[spdx_id] = spdx_id
        self.files[path] = (sha1, sha256)
        if license_text is not None:
            self.licenses.setdefault(license_text)

    def contains_match(self, m: re.Match[str]) -> None:
        """:meth:`relationship` of a bare CONTAINS relationship :data:`_CONTAINS` matched."""
        source, target = m.groups()
        kept = self.ids.get(target)
        if kept is None:
            self.relationship(
                {"spdxElementId": source, "relatedSpdxElement": target, "relationshipType": "CONTAINS"}
            )
            return
        self.run_from.append(sys.intern(source))
        self.run_to.append(kept)

    def relationship(self, rel: Any) -> None:
        if (
            type(rel) is dict
            and rel.keys() == _RELATIONSHIP_KEYS
            and rel["relationshipType"] == "CONTAINS"
            and type(rel["spdxElementId"]) is str
            and type(rel["relatedSpdxElement"]) is str
            and rel["relatedSpdxElement"] in self.ids
        ):
            self.run_from.append(sys.intern(rel["spdxElementId"]))
            self.run_to.append(self.ids[rel["relatedSpdxElement"]])
            return
        if strictjson._deeper_than(rel, strictjson.MAX_DEPTH - 2):
            raise _NotStreamed
        # Not the tail after all: the run goes back into the document as the dicts it was.
        self.relationships.extend(
            {"spdxElementId": a, "relationshipType": "CONTAINS", "relatedSpdxElement": b}
            for a, b in zip(self.run_from, self.run_to, strict=True)
        )
        self.run_from.clear()
        self.run_to.clear()
        self.relationships.append(rel)

    def member(self) -> None:
        if self.w.peek() != '"':
            raise _NotStreamed
        key = self.w.value()
        self.w.take(":")
        if key in self.seen:
            raise _NotStreamed  # a duplicate key: the whole-file read names it
        self.seen.add(key)
        if key == "files" and self.w.peek() == "[":
            self.w.elements(self.file, _Fast(_file_pattern(), self.file_match))
            return
        if key == "relationships" and self.w.peek() == "[":
            self.w.elements(self.relationship, _Fast(_CONTAINS, self.contains_match))
            self.skeleton[key] = self.relationships
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


def read_window(path: Path, limit: int, read: Callable[[_Window], _T | None]) -> tuple[_T, _Window] | None:
    """``read``'s answer for a :class:`_Window` of at most ``limit`` bytes over ``path``, and that
    window (its SHA-256 and tail), or ``None`` when ``path`` cannot be opened, ``read`` answers
    ``None`` or it raises what a document not read this way raises (``_NotStreamed``, a strict-JSON
    refusal, bad UTF-8, too deep, an I/O error); the file is closed either way."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        window = _Window(fd, limit)
        answer = read(window)
    except (_NotStreamed, strictjson._Refused, UnicodeDecodeError, RecursionError, OSError):
        return None
    finally:
        os.close(fd)
    return None if answer is None else (answer, window)


def read_streamed(path: Path, *, limit: int) -> Streamed | None:
    """The SPDX document in ``path`` read piece by piece (see the module docstring), or ``None``
    when it is not read this way (the caller then reads it whole and gets every message as
    before). ``limit``: the most bytes it may have."""

    def read(window: _Window) -> _Reader:
        reader = _Reader(window)
        reader.document()
        return reader

    found = read_window(path, limit, read)
    if found is None:
        return None
    reader, window = found
    return Streamed(
        skeleton=reader.skeleton,
        file_ids=list(reader.ids),
        files=reader.files,
        licenses=list(reader.licenses),
        contains_from=list(dict.fromkeys(reader.run_from)),
        sha256=window.sha256.hexdigest(),
        tail=window.tail,
    )
