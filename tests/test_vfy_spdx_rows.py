"""The streamed SPDX reader's expressions for our writer's file entries and CONTAINS relationships
(``sbom._spdx_stream._file_pattern`` / ``_CONTAINS``; issue 13: CPU per file): an element that
matches gives exactly what the strict decoder and the per-element checks give for it, one that
does not is decoded as before, and our own documents take the expressions."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ninfer_release.sbom import _spdx_stream as stream
from ninfer_release.sbom._spdx import zip_path_problem
from test_sbom_fast_hostile import _golden

_LIMIT = 1 << 26
_NEVER = re.compile(r"(?!)")

_ENTRY = (
    '{\n "SPDXID": "SPDXRef-File-x-1",\n "checksums": [\n  {\n   "algorithm": "SHA1",\n'
    '   "checksumValue": "' + "a" * 40 + '"\n  },\n  {\n   "algorithm": "SHA256",\n'
    '   "checksumValue": "' + "b" * 64 + '"\n  }\n ],\n "copyrightText": "NOASSERTION",\n'
    ' "fileName": "./extra/x.txt",\n "fileTypes": [\n  "TEXT"\n ],\n'
    ' "licenseConcluded": "NOASSERTION"\n}'
)


def _read(data: bytes, tmp_path: Path) -> Any:
    path = tmp_path / "doc.spdx.json"
    path.write_bytes(data)
    got = stream.read_streamed(path, limit=_LIMIT)
    if got is None:
        return None
    return (got.skeleton, got.file_ids, got.files, got.licenses, got.contains_from, got.sha256)


def _both(data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """What the reader gives with its expressions, and with every element decoded."""
    fast = _read(data, tmp_path)
    with monkeypatch.context() as m:
        m.setattr(stream, "_file_pattern", lambda: _NEVER)
        m.setattr(stream, "_CONTAINS", _NEVER)
        slow = _read(data, tmp_path)
    return fast, slow


def _with_entry(entry: str) -> bytes:
    """The golden document with ``entry`` as a second file entry (and its CONTAINS relationship)."""
    data = _golden("spdx.json").decode()
    at = data.index('"files": [') + len('"files": [')
    data = data[:at] + "\n" + entry + "," + data[at:]
    rel = (
        '{"spdxElementId": "SPDXRef-Package-ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64", '
        '"relatedSpdxElement": "SPDXRef-File-x-1", "relationshipType": "CONTAINS"}, '
    )
    at = data.index('"relationshipType": "CONTAINS"')
    at = data.rindex("{", 0, at)
    return (data[:at] + rel + data[at:]).encode()


_ENTRY_MUTATIONS: dict[str, Callable[[str], str]] = {
    "as written": lambda e: e,
    "a comment": lambda e: e.replace('"copyrightText"', '"comment": "c",\n "copyrightText"'),
    "no optional members": lambda e: re.sub(
        r',\n "(copyrightText|fileTypes|licenseConcluded)"[^\]\n]*(\n  "TEXT"\n \])?', "", e
    ),
    "two file types": lambda e: e.replace('"TEXT"\n', '"TEXT", "BINARY"\n'),
    "an unknown file type": lambda e: e.replace('"TEXT"\n', '"TEXTS"\n'),
    "no file types": lambda e: e.replace('\n  "TEXT"\n ', ""),
    "an escape in the path": lambda e: e.replace("x.txt", "x\\u0041.txt"),
    "an escaped slash": lambda e: e.replace("extra/x", "extra\\/x"),
    "an escape in the licence": lambda e: e.replace('"NOASSERTION"\n}', '"NOASSERTIO\\u004e"\n}'),
    "uppercase hex": lambda e: e.replace("a" * 40, "A" * 40),
    "short hex": lambda e: e.replace("a" * 40, "a" * 39),
    "SHA256 first": lambda e: (
        e.replace('"SHA1"', '"SHAX"').replace('"SHA256"', '"SHA1"').replace('"SHAX"', '"SHA256"')
    ),
    "an empty segment": lambda e: e.replace("extra/x", "extra//x"),
    "a dot segment": lambda e: e.replace("extra/x", "extra/./x"),
    "a dot-dot segment": lambda e: e.replace("extra/x", "extra/../x"),
    "a dot-dot path": lambda e: e.replace("./extra/x.txt", "./.."),
    "an empty path": lambda e: e.replace("./extra/x.txt", "./"),
    "a trailing slash": lambda e: e.replace("x.txt", "x/"),
    "a colon": lambda e: e.replace("x.txt", "x:y.txt"),
    "a star": lambda e: e.replace("x.txt", "x*.txt"),
    "no ./": lambda e: e.replace("./extra", "extra"),
    "an absolute path": lambda e: e.replace("./extra", "/extra"),
    "a duplicate key": lambda e: e.replace('"copyrightText"', '"fileName": "./y",\n "copyrightText"'),
    "an extra key": lambda e: e.replace('"copyrightText"', '"noticeText": "n",\n "copyrightText"'),
    "a bad SPDXID": lambda e: e.replace("SPDXRef-File-x-1", "SPDXRef-File-x_1"),
    "a colon in the SPDXID": lambda e: e.replace("SPDXRef-File-x-1", "SPDXRef-File:x-1"),
    "the SPDXID of another file": lambda e: e.replace("SPDXRef-File-x-1", "SPDXRef-File-NOTICE.txt-b810ebe4"),
    "the path of another file": lambda e: e.replace("./extra/x.txt", "./NOTICE.txt"),
    "a number": lambda e: e.replace('"NOASSERTION"\n}', "1\n}"),
    "a non-ASCII path": lambda e: e.replace("x.txt", "\u00e9.txt"),
    "a tab": lambda e: e.replace("\n", "\t\r\n"),
}


@pytest.mark.parametrize("name", list(_ENTRY_MUTATIONS))
def test_an_entry_reads_the_same_with_or_without_the_expressions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    data = _with_entry(_ENTRY_MUTATIONS[name](_ENTRY))
    fast, slow = _both(data, tmp_path, monkeypatch)
    assert fast == slow


@pytest.mark.parametrize("chunk", [1, 61, 4096])
def test_a_window_cut_reads_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(stream, "CHUNK", chunk)
    fast, slow = _both(_with_entry(_ENTRY), tmp_path, monkeypatch)
    assert fast is not None and fast == slow


@pytest.mark.parametrize(
    "rel",
    [
        '{"spdxElementId": "SPDXRef-DOCUMENT", "relatedSpdxElement": "SPDXRef-File-x-1", '
        '"relationshipType": "CONTAINS"}, ',
        # To no listed file: not the tail, kept as the relationship it is.
        '{"spdxElementId": "SPDXRef-DOCUMENT", "relatedSpdxElement": "SPDXRef-Nope", '
        '"relationshipType": "CONTAINS"}, ',
        '{"spdxElementId": "SPDXRef-DOCUMENT", "relatedSpdxElement": "SPDXRef-File-x-1", '
        '"relationshipType": "CONTAINS", "comment": "c"}, ',
        '{"spdxElementId": "SPDXRef-DOC\\u0055MENT", "relatedSpdxElement": "SPDXRef-File-x-1", '
        '"relationshipType": "CONTAINS"}, ',
    ],
)
def test_a_relationship_reads_the_same_with_or_without_the_expression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rel: str
) -> None:
    data = _with_entry(_ENTRY).decode()
    at = data.rindex("{", 0, data.rindex('"relationshipType": "CONTAINS"'))
    fast, slow = _both((data[:at] + rel + data[at:]).encode(), tmp_path, monkeypatch)
    assert fast == slow


def test_our_entries_take_the_expressions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Our file entries are read by the expression but the last of the array and those whose
    text has an escape (a licence or comment text written as ASCII): fails when the expression
    does not fit our writer's spelling."""
    decoded: list[str] = []
    original = stream._Reader.file

    def file(self: stream._Reader, entry: Any) -> None:
        decoded.append(entry["fileName"])
        original(self, entry)

    monkeypatch.setattr(stream._Reader, "file", file)
    got = _read(_with_entry(_ENTRY), tmp_path)
    assert got is not None
    text = _with_entry(_ENTRY).decode()
    escaped = {
        name
        for name in ("./" + p for p in got[2])
        if "\\" in text[text.rindex("{", 0, text.index(f'"fileName": "{name}"')) : text.index(name)]
        or "\\" in text[text.index(name) : text.index("}", text.index(name))]
    }
    last = "./" + list(got[2])[-1]
    assert set(decoded) <= escaped | {last}
    assert "./extra/x.txt" not in decoded and "./NOTICE.txt" not in decoded
    assert len(decoded) < len(got[2]) - 1


@pytest.mark.parametrize(
    "path",
    ["a", "a/b", "a//b", "/a", "./a", "a/./b", "a/../b", "..", ".", "", "a/", "a/.", "a/..", ".a/b..",
     "a/.../b", "./.", "a/.b/c", "/"],
)  # fmt: skip
def test_segments_clean_is_zip_path_problem(path: str) -> None:
    assert stream._segments_clean(path) == (zip_path_problem(path) is None)
