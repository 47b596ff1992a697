"""A CycloneDX JSON document read from its file with its root's evidence streamed (issue 13: memory).

Our package documents list every shipped file as an evidence occurrence of ``metadata.component``
(100k files: a 24 MB document, ~100 MB while parsed whole). :func:`read_streamed` reads the file in
1 MiB pieces (hashed as read, with the window of ``sbom._spdx_stream``) and decodes it with the
strict decoder of :mod:`ninfer_release.strictjson` member by member along
``metadata.component.evidence.occurrences``; every other value is decoded whole. Of that array the
first element is kept as it is (the schema check of ``sbom._cdx_fast`` validates the document
with each occurrence list cut to its first entry); each later one must be *clean* and is kept
only as its entry of the hash map (``location`` -> SHA-256):

* exactly the keys ``additionalContext``, ``bom-ref`` and ``location``, all strings, and
  ``sbom._cdx_fast.occurrence_is_clean`` (the strict schema's rule for an occurrence);
* ``bom-ref`` is ``file:<location>`` (what our writer makes) and ``additionalContext`` is
  ``sha256:`` + 64 lowercase hex digits;
* its location is listed by no earlier occurrence of the array.

Anything else (an occurrence that is not clean, a duplicate key, anything the strict decoder
refuses, invalid UTF-8, a BOM, trailing data, a file larger than its bound or growing while read)
makes it return ``None``: the caller reads and checks the whole document as before, so every
message of such a document is the one it always was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import strictjson
from ninfer_release.digests import is_sha256_hex
from ninfer_release.sbom._cdx_fast import occurrence_is_clean
from ninfer_release.sbom._spdx_stream import _S, _W, _Fast, _key, _NotStreamed, _Window, read_window

#: A later occurrence as our writer spells it (keys sorted) and the comma after it: a clean one
#: (module docstring) but for its bom-ref naming its location and the location being new, which
#: :meth:`_Reader.occurrence_match` checks; one that does not match is decoded (issue 13: CPU).
_OCCURRENCE = re.compile(
    r"[ \t\n\r]*\{" + _key("additionalContext") + '"sha256:([0-9a-f]{64})"' + _W + ","
    + _key("bom-ref") + '"file:' + _S[1:] + _W + "," + _key("location") + _S + _W + r"\}" + _W + ","
)  # fmt: skip

#: The members descended into, outermost first; the last one is the streamed array.
_PATH = ("metadata", "component", "evidence", "occurrences")
_OCCURRENCE_KEYS = frozenset({"additionalContext", "bom-ref", "location"})
_CONTEXT = "sha256:"


@dataclass(frozen=True)
class CdxStreamed:
    """What :func:`read_streamed` read: the document with ``metadata.component.evidence.occurrences``
    cut to its first element (``skeleton``), the later occurrences as ``rest`` (location -> SHA-256,
    in document order), the file's SHA-256 and its last two bytes."""

    skeleton: Any
    rest: dict[str, str]
    sha256: str
    tail: bytes


class _Reader:
    """One document, descending along :data:`_PATH`."""

    def __init__(self, window: _Window) -> None:
        self.w = window
        self.rest: dict[str, str] = {}
        self.fast = _Fast(_OCCURRENCE, self.occurrence_match)

    def value(self, depth: int) -> Any:
        """The next value, nested in ``depth`` containers; refused if the whole would be too deep
        (one level stricter than the whole-document parse: not streamed is always safe)."""
        value = self.w.value()
        if strictjson._deeper_than(value, strictjson.MAX_DEPTH - depth - 1):
            raise _NotStreamed
        return value

    def object(self, depth: int, path: tuple[str, ...]) -> dict[str, Any]:
        """The object that comes next (at ``depth``), descending into ``path[0]``."""
        w = self.w
        w.take("{")
        out: dict[str, Any] = {}
        if w.peek() == "}":
            w.pos += 1
            return out
        while True:
            if w.peek() != '"':
                raise _NotStreamed
            key = w.value()
            w.take(":")
            if key in out:
                raise _NotStreamed  # a duplicate key: the whole-file read names it
            nxt = w.peek()
            if path and key == path[0] and len(path) > 1 and nxt == "{":
                out[key] = self.object(depth + 1, path[1:])
            elif path and key == path[0] and len(path) == 1 and nxt == "[":
                out[key] = self.occurrences(depth + 1)
            else:
                out[key] = self.value(depth)
            nxt = w.peek()
            w.pos += 1
            if nxt == "}":
                return out
            if nxt != ",":
                raise _NotStreamed

    def occurrences(self, depth: int) -> list[Any]:
        """The occurrence array (at ``depth``): its first element, the others into ``rest``
        (decoded a window's run at a time, :meth:`_Window.batch`, while the array is evenly
        indented; else one at a time)."""
        w = self.w
        w.take("[")
        if w.peek() == "]":
            w.pos += 1
            return []
        first = w.value()
        if strictjson._deeper_than(first, strictjson.MAX_DEPTH - depth - 1):
            raise _NotStreamed
        batched = True
        while True:
            nxt = w.peek()
            w.pos += 1
            if nxt == "]":
                return [first]
            if nxt != ",":
                raise _NotStreamed
            w.pos = self.fast.run(w.buf, w.pos)
            done = w.batch(self.occurrence) if batched else 0
            if done < 0:
                batched = False
            if done <= 0:
                self.occurrence(w.value())

    def occurrence_match(self, m: re.Match[str]) -> None:
        """:meth:`occurrence` of one :data:`_OCCURRENCE` matched: its keys, their types and the
        ``sha256:`` context hold by the expression; what is left is the bom-ref naming the
        location, and the location being new."""
        sha, ref, location = m.groups()
        if ref != location or location in self.rest:
            raise _NotStreamed
        self.rest[location] = sha

    def occurrence(self, o: Any) -> None:
        """A later occurrence: clean (see the module docstring) and kept as its hash entry."""
        if type(o) is not dict or o.keys() != _OCCURRENCE_KEYS or not occurrence_is_clean(o):
            raise _NotStreamed
        location, ref, context = o["location"], o["bom-ref"], o["additionalContext"]
        if type(context) is not str or not context.startswith(_CONTEXT) or ref != f"file:{location}":
            raise _NotStreamed
        sha = context[len(_CONTEXT) :]
        if not is_sha256_hex(sha) or location in self.rest:
            raise _NotStreamed
        self.rest[location] = sha


def read_streamed(path: Path, *, limit: int) -> CdxStreamed | None:
    """The CycloneDX document in ``path`` read piece by piece (see the module docstring), or
    ``None`` when it is not read this way (the caller then reads it whole and gets every message
    as before). ``limit``: the most bytes it may have."""

    def read(window: _Window) -> tuple[_Reader, dict[str, Any]] | None:
        reader = _Reader(window)
        if window.peek() != "{":
            return None
        skeleton = reader.object(1, _PATH)
        if window.peek() != "":
            return None  # trailing data: the whole-file read names it
        return reader, skeleton

    found = read_window(path, limit, read)
    if found is None:
        return None
    (reader, skeleton), window = found
    return CdxStreamed(
        skeleton=skeleton, rest=reader.rest, sha256=window.sha256.hexdigest(), tail=window.tail
    )
