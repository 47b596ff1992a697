"""``SHA256SUMS`` files: one strict writer, one tolerant-but-honest parser (foundation leaf).

The verifiers (``verify``, ``publish``, the exported stdlib verifier) compare the parsed entries with
the files; this module only reads and writes the file.

The writer emits only the GNU coreutils text form that every common checker accepts
(``sha256sum -c`` 9.x, perl ``shasum -a 256 -c``, BusyBox ``sha256sum -c``)::

    <64 lowercase hex><space><space><name><LF>

sorted by the UTF-8 bytes of the name, ``/`` separators, no ``./`` prefix, no CR, no blank lines,
exactly one trailing LF (DESIGN.md §4, cases C01 C03 C04 C05 C06 C08 C09 C10).

The parser reads what other tools publish: GNU text (``hex␠␠name``), GNU binary (``hex␠*name``),
BSD/``--tag`` (``SHA256 (name) = hex``), uppercase hex, CRLF, a missing final newline, blank lines.
Everything it tolerates is reported as a *warning*; everything that could hide a wrong file is an
*error* and never silently skipped: other algorithms, malformed lines, backslash or escaping paths,
and one file listed under two spellings. Names are taken byte for byte after the separator: inner
and trailing blanks are part of the name, as in GNU coreutils (C08c, C09).

This module imports only :mod:`ninfer_release.errors` and :mod:`ninfer_release.digests`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ninfer_release.digests import is_sha256_hex
from ninfer_release.errors import InputError, Problem

#: Bytes one listed line can legitimately take: the BSD form ``SHA256 (<name>) = <64 hex>`` CRLF
#: is 77 bytes plus the name, and a set's names are at most ~200 bytes (component tag <= 128).
MAX_LINE_BYTES = 512
#: Room for a few comment or blank lines that other tools write.
SLACK_BYTES = 4096


def sums_bound(entries: int) -> int:
    """Largest SHA256SUMS (bytes) that can legitimately list ``entries`` files.

    ``entries * MAX_LINE_BYTES + SLACK_BYTES``: 9,216 bytes for a native set's 10 entries. A bigger
    file is refused before it is read (issue 9: 70 MiB of blank lines once cost 24 GB of RSS).
    """
    return entries * MAX_LINE_BYTES + SLACK_BYTES


#: GNU form: digest, one space, then ' ' (text mode) or '*' (binary mode), then the name.
_GNU = re.compile(rb"^([0-9A-Fa-f]+) ([ *])(.*)$", re.DOTALL)
#: BSD / ``--tag`` form. The name group is greedy so a name containing ") = " still parses.
_TAG = re.compile(rb"^([A-Za-z0-9-]+) \((.*)\) = ([0-9A-Fa-f]+)$", re.DOTALL)
_SHA256_TAGS = frozenset({b"SHA256", b"SHA2-256"})
_UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, kw_only=True)
class SumsEntry:
    """One listed file: the name it is verified under, its digest, and how it was written.

    ``name`` is the canonical name (one leading ``./`` removed); ``spelling`` is the name exactly
    as written in the file; ``sha256`` is lowercase; ``form`` is ``gnu-text``, ``gnu-binary`` or
    ``bsd-tag``; ``line`` is 1-based.
    """

    name: str
    sha256: str
    line: int
    spelling: str
    form: str


@dataclass(frozen=True, kw_only=True)
class ParsedSums:
    """Result of :func:`parse_sha256sums`: usable entries plus every warning and error found."""

    source: str
    entries: tuple[SumsEntry, ...]
    warnings: tuple[Problem, ...]
    errors: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        """True when the file has at least one entry and no errors."""
        return bool(self.entries) and not self.errors

    def as_dict(self) -> dict[str, str]:
        """Canonical name → lowercase digest."""
        return {e.name: e.sha256 for e in self.entries}


def _name_problems(name: str) -> list[str]:
    """Why ``name`` cannot be written to a portable SHA256SUMS line (empty list: fine)."""
    out: list[str] = []
    if not name:
        return ["empty name"]
    if any(c in name for c in "\r\n\x00"):
        out.append("contains CR, LF or NUL")
    if "\\" in name:
        out.append("contains a backslash; use '/' between folders (C10)")
    if name.startswith(("/", "./")):
        out.append("must be relative to the checksum file without a leading '/' or './' (C06)")
    if name != name.strip(" \t"):
        out.append("has leading or trailing blanks (C08)")
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts) and not name.startswith(("/", "./")):
        out.append("has an empty, '.' or '..' path component")
    return out


def render_sha256sums(entries: Mapping[str, str]) -> bytes:
    """Render ``name → hex digest`` as GNU ``sha256sum`` text-mode bytes (C01 C03 C04 C05 C06 C08 C09 C10).

    Output: one ``<64 lowercase hex>␠␠<name>\\n`` line per entry, sorted by the UTF-8 bytes of the
    name; LF only, exactly one trailing LF, no blank lines, no ``./``. Uppercase digests are
    lowercased. An empty mapping renders ``b""``.

    Raises:
        InputError: a name is empty, has CR/LF/NUL, a backslash, a leading ``/`` or ``./``, blanks at
            either end or a ``.``/``..``/empty component, or a digest is not 64 hex characters
            (every problem listed).
    """
    problems: list[Problem] = []
    lines: list[tuple[bytes, bytes]] = []
    for name, digest in entries.items():
        for msg in _name_problems(name):
            problems.append(Problem(file="SHA256SUMS", field=repr(name), message=msg))
        low = digest.lower()
        if not is_sha256_hex(low):
            problems.append(
                Problem(
                    file="SHA256SUMS", field=repr(name), message=f"digest {digest!r} is not 64 hex characters"
                )
            )
        lines.append((name.encode("utf-8"), low.encode("ascii", "replace")))
    if problems:
        raise InputError(problems=problems)
    lines.sort(key=lambda pair: pair[0])
    return b"".join(digest + b"  " + name + b"\n" for name, digest in lines)


def _unescape_gnu(raw: bytes) -> bytes | None:
    """Undo GNU's escaping of a name in a line that starts with ``\\`` (``\\\\``, ``\\n``, ``\\r``)."""
    out = bytearray()
    i = 0
    while i < len(raw):
        b = raw[i]
        if b == 0x5C:  # backslash
            if i + 1 >= len(raw):
                return None
            nxt = raw[i + 1]
            mapped = {0x5C: 0x5C, 0x6E: 0x0A, 0x72: 0x0D}.get(nxt)
            if mapped is None:
                return None
            out.append(mapped)
            i += 2
        else:
            out.append(b)
            i += 1
    return bytes(out)


@dataclass(frozen=True, kw_only=True)
class _ListedLine:
    """One checksum line split: ``form`` (``gnu-text``, ``gnu-binary``, ``bsd-tag``), the hex
    ``digest`` as written (64 characters, any case) and the raw ``name`` bytes (GNU escapes undone)."""

    form: str
    digest: bytes
    name: bytes


def _parse_line(body: bytes) -> _ListedLine | str:
    """Split one line into its form, digest and raw name, or return why it is not a checksum line."""
    escaped = body.startswith(b"\\")
    if escaped:
        body = body[1:]
    m = _TAG.match(body)
    if m is not None and not _GNU.match(body):
        algo, name, digest = m.group(1), m.group(2), m.group(3)
        if algo.upper() not in _SHA256_TAGS:
            return (
                f"algorithm {algo.decode('ascii')} is not SHA-256; a SHA256SUMS file lists SHA-256 "
                f"digests only (C03)"
            )
        form = "bsd-tag"
    else:
        m = _GNU.match(body)
        if m is None:
            return "not a checksum line (expected '<64 hex>  <name>' or 'SHA256 (<name>) = <64 hex>')"
        digest, flag, name = m.group(1), m.group(2), m.group(3)
        form = "gnu-binary" if flag == b"*" else "gnu-text"
    if len(digest) != 64:
        return f"digest has {len(digest)} hex characters; SHA-256 has 64"
    if escaped:
        unescaped = _unescape_gnu(name)
        if unescaped is None:
            return "bad escape sequence in the name"
        name = unescaped
    return _ListedLine(form=form, digest=digest, name=name)


@dataclass(slots=True)
class _Seen:
    """A distinct message's first ``where`` (``line N``) and how many lines gave it."""

    first: str
    count: int


class _Aggregated:
    """Problems keyed by message: one line per distinct message, however many lines repeat it.

    Memory and output stay bounded by the number of *distinct* messages (issue 9: one warning per
    blank line once meant 2 million stderr lines and ~330 bytes of RSS each).
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self._seen: dict[str, _Seen] = {}  # message -> where first, how often

    def add(self, where: str, message: str) -> None:
        """Count ``message`` at ``where`` (remembered only the first time)."""
        slot = self._seen.get(message)
        if slot is None:
            self._seen[message] = _Seen(first=where, count=1)
        else:
            slot.count += 1

    def seen(self) -> list[_Seen]:
        """First place and count per distinct message, in first-seen order."""
        return list(self._seen.values())

    def problems(self) -> list[Problem]:
        """One :class:`Problem` per distinct message; repeats say how many more lines follow."""
        out: list[Problem] = []
        for message, slot in self._seen.items():
            more = f" (and {slot.count - 1} more line(s) like it)" if slot.count > 1 else ""
            out.append(Problem(file=self.source, field=slot.first, message=message + more))
        return out


def _lines(data: bytes) -> Iterator[bytes]:
    """The LF-separated lines of ``data`` one at a time (no list of them is built); a final LF
    ends the last line, it does not start an empty one."""
    start, end = 0, len(data)
    while start < end:
        stop = data.find(b"\n", start)
        if stop < 0:
            yield data[start:]
            return
        yield data[start:stop]
        start = stop + 1


class _SumsReader:
    """One parse of a SHA256SUMS file, line by line: the entries kept and every finding.

    ``by_name`` maps each canonical name to its first entry; ``conflicted`` holds the names listed
    with two spellings or digests (all their entries are dropped at the end, C06); CRLF lines are
    counted apart and reported as one warning.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.warnings = _Aggregated(source)
        self.errors = _Aggregated(source)
        self.crlf = _Aggregated(source)
        self.entries: list[SumsEntry] = []
        self.by_name: dict[str, SumsEntry] = {}
        self.conflicted: set[str] = set()

    def read_line(self, number: int, raw: bytes) -> None:
        """Take line ``number`` (1-based; ``raw`` without its LF): skip, reject or keep it."""
        where = f"line {number}"
        body = raw
        if body.endswith(b"\r"):
            body = body[:-1]
            self.crlf.add(where, "CRLF")
        if body == b"":
            self.warnings.add(where, "blank line ignored (C08)")
        elif body.startswith(b"#"):
            self.warnings.add(where, "comment line ignored")
        else:
            entry = self._entry(where, number, body)
            if entry is not None:
                self._add(where, entry)

    def _entry(self, where: str, number: int, body: bytes) -> SumsEntry | None:
        """The entry a listing line gives, with its tolerated-form warnings; ``None`` on an error."""
        parsed = _parse_line(body)
        if isinstance(parsed, str):
            self.errors.add(where, parsed)
            return None
        form, digest_b, name_b = parsed.form, parsed.digest, parsed.name
        try:
            spelling = name_b.decode("utf-8")
        except UnicodeDecodeError:
            self.errors.add(where, f"name {name_b!r} is not valid UTF-8")
            return None
        digest = digest_b.decode("ascii")
        name = spelling[2:] if spelling.startswith("./") else spelling
        problem = _listed_name_problem(spelling, name)
        if problem:
            self.errors.add(where, problem)
            return None
        if form != "gnu-text":
            self.warnings.add(where, f"{form} form accepted; portable files use '<hex>  <name>' (C03/C04)")
        if digest != digest.lower():
            self.warnings.add(where, "uppercase hex digest accepted (C05)")
        if name != spelling:
            self.warnings.add(where, f"leading './' stripped from {spelling!r} (C06)")
        return SumsEntry(name=name, sha256=digest.lower(), line=number, spelling=spelling, form=form)

    def _add(self, where: str, entry: SumsEntry) -> None:
        """Keep ``entry`` unless its file is listed already: again identically (a warning) or not (C06)."""
        prior = self.by_name.get(entry.name)
        if prior is None:
            self.by_name[entry.name] = entry
            self.entries.append(entry)
        elif prior.spelling == entry.spelling and prior.sha256 == entry.sha256:
            self.warnings.add(where, f"{entry.spelling!r} listed again (as on line {prior.line})")
        else:
            self.errors.add(
                where,
                f"{entry.spelling!r} ({entry.sha256[:12]}…) names the same file as line {prior.line} "
                f"{prior.spelling!r} ({prior.sha256[:12]}…); conflicting entries, refusing to pick one (C06)",
            )
            # Neither entry may decide the outcome, whatever the order: both are dropped.
            self.conflicted.add(entry.name)

    def result(self) -> ParsedSums:
        """The parse: entries not in conflict, the CRLF warning first, then the others, the errors."""
        crlf = [
            Problem(
                file=self.source,
                message=(
                    f"CRLF line endings on {seen.count} line(s) (first: {seen.first}); "
                    "the CR is not part of the name, but the file is not portable: "
                    "perl shasum and BusyBox sha256sum fail on it (C01)"
                ),
            )
            for seen in self.crlf.seen()
        ]
        return ParsedSums(
            source=self.source,
            entries=tuple(e for e in self.entries if e.name not in self.conflicted),
            warnings=(*crlf, *self.warnings.problems()),
            errors=tuple(self.errors.problems()),
        )


def parse_sha256sums(data: bytes, *, source: str) -> ParsedSums:
    """Parse SHA256SUMS bytes leniently in form, strictly in meaning (C01 C03 C04 C05 C06 C08 C09 C10).

    ``source`` names the file in messages (e.g. ``SHA256SUMS`` or a path). Entries keep file order.

    Warnings (the entry still counts): CRLF endings (a lone CR before LF is not part of the name;
    "not portable"), a leading UTF-8 BOM (not part of the first name), blank lines, comment lines,
    the ``*`` binary flag or the BSD tag form, uppercase hex, a ``./`` prefix, a line listed twice
    identically.

    Errors (the entry does not count): a tag naming another algorithm (SHA512, MD5...), a digest
    that is not 64 hex, a malformed line, a name that is not UTF-8, a backslash (non-portable path,
    C10), an absolute or ``..`` path, a second ``./`` after the first, the same file listed under two
    spellings or with two digests (named in the message, whatever the order, C06).

    Raises:
        Nothing: every problem is reported in the result so a verifier can print all of them.
    """
    reader = _SumsReader(source)
    if data.startswith(_UTF8_BOM):
        # Windows tools (PowerShell Out-File, Notepad) write a BOM; it is not part of the first
        # name. Tolerated on read like CRLF, never written (the writer emits none).
        data = data[len(_UTF8_BOM) :]
        reader.warnings.add("line 1", "UTF-8 BOM ignored; the file is not portable (C01)")
    for number, raw in enumerate(_lines(data), start=1):
        reader.read_line(number, raw)
    return reader.result()


def _listed_name_problem(spelling: str, name: str) -> str:
    """Why a listed name cannot be verified safely (empty string: fine)."""
    if "\\" in spelling:
        return f"non-portable path {spelling!r}: backslash separator; checksum files use '/' (C10)"
    if "\x00" in spelling or "\n" in spelling or "\r" in spelling:
        return f"name {spelling!r} contains a control character (CR, LF or NUL)"
    if name == "":
        return "empty name"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return f"absolute path {spelling!r}; names must be relative to the checksum file"
    parts = name.split("/")
    if ".." in parts:
        return f"path {spelling!r} leaves the directory of the checksum file ('..')"
    if name.startswith("./"):
        return f"path {spelling!r}: only one leading './' is accepted"
    if any(p in ("", ".") for p in parts[:-1]) or parts[-1] in ("", "."):
        return f"path {spelling!r} has an empty or '.' component"
    return ""
