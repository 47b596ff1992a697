"""The streamed CycloneDX reader's expression for our writer's later evidence occurrences
(``sbom._cdx_stream._OCCURRENCE``; issue 13: CPU per file): an occurrence that matches gives
exactly what decoding it gives, one that does not is decoded as before, and our own document's
occurrences take it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ninfer_release.sbom import _cdx_stream, _spdx_stream
from test_sbom_fast_hostile import _golden

_LIMIT = 1 << 26
_NEVER = re.compile(r"(?!)")
_SHA = "c" * 64
_OCC = (
    '{\n "additionalContext": "sha256:' + _SHA + '",\n "bom-ref": "file:extra/x.txt",\n'
    ' "location": "extra/x.txt"\n}'
)


def _read(data: bytes, tmp_path: Path) -> Any:
    path = tmp_path / "doc.cdx.json"
    path.write_bytes(data)
    got = _cdx_stream.read_streamed(path, limit=_LIMIT)
    return None if got is None else (got.skeleton, got.rest, got.sha256)


def _both(data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    fast = _read(data, tmp_path)
    with monkeypatch.context() as m:
        m.setattr(_cdx_stream, "_OCCURRENCE", _NEVER)
        slow = _read(data, tmp_path)
    return fast, slow


def _with(occ: str) -> bytes:
    """The golden document with ``occ`` as the root's second evidence occurrence."""
    data = _golden("cdx.json").decode()
    at = data.index('"occurrences": [', data.index('"metadata": {'))
    at = data.index("}", at) + 1
    return (data[:at] + ",\n" + occ + data[at:]).encode()


_MUTATIONS: dict[str, Callable[[str], str]] = {
    "as written": lambda o: o,
    "a bom-ref for another location": lambda o: o.replace("file:extra/x", "file:extra/y"),
    "the location listed before": lambda o: o.replace("extra/x.txt", "bin/ninfer-server.exe"),
    "uppercase hex": lambda o: o.replace(_SHA, "C" * 64),
    "short hex": lambda o: o.replace(_SHA, "c" * 63),
    "another context": lambda o: o.replace("sha256:", "sha512:"),
    "an escape": lambda o: o.replace("x.txt", "\\u0078.txt"),
    "an extra key": lambda o: o.replace('"location"', '"line": 1,\n "location"'),
    "a duplicate key": lambda o: o.replace('"location"', '"location": "a",\n "location"'),
    "another order": lambda o: (
        '{"location": "extra/x.txt", "bom-ref": "file:extra/x.txt", '
        '"additionalContext": "sha256:' + _SHA + '"}'
    ),
    "a number": lambda o: o.replace('"extra/x.txt"\n', "1\n"),
    "an empty location": lambda o: o.replace("extra/x.txt", ""),
}


@pytest.mark.parametrize("name", list(_MUTATIONS))
def test_an_occurrence_reads_the_same_with_or_without_the_expression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    fast, slow = _both(_with(_MUTATIONS[name](_OCC)), tmp_path, monkeypatch)
    assert fast == slow


@pytest.mark.parametrize("chunk", [1, 53, 4096])
def test_a_window_cut_reads_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(_spdx_stream, "CHUNK", chunk)
    fast, slow = _both(_with(_OCC), tmp_path, monkeypatch)
    assert fast is not None and fast == slow


def test_our_occurrences_take_the_expression(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the occurrence after a run (the array's last) is decoded (fails when the expression
    does not fit our writer's spelling)."""
    decoded: list[str] = []
    original = _cdx_stream._Reader.occurrence

    def occurrence(self: _cdx_stream._Reader, o: Any) -> None:
        decoded.append(o["location"])
        original(self, o)

    monkeypatch.setattr(_cdx_stream._Reader, "occurrence", occurrence)
    many = ",\n".join(_OCC.replace("x.txt", f"x{i}.txt") for i in range(20))
    got = _read(_with(many), tmp_path)
    assert got is not None and len(got[1]) >= 20
    assert len(decoded) <= 1
