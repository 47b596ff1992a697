"""The streamed SPDX check (``sbom.check_spdx_file``, ``sbom._spdx_stream``; issue 13: memory)
gives exactly what ``check_spdx_bytes`` gives for the same bytes, or hands the document back
(``None``) to the whole-document path, on the hostile corpus of test_sbom_fast_hostile, with
windows small enough to cut every value, and reads our own documents streamed."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from ninfer_release.sbom import _spdx_stream as stream
from ninfer_release.sbom import check_spdx_bytes, check_spdx_file
from test_sbom_fast_hostile import _SPDX, _SPDX_BYTES, _encode, _golden, _load

_LIMIT = 1 << 26


def _whole(data: bytes) -> Any:
    try:
        check = check_spdx_bytes(data)
    except Exception as exc:  # noqa: BLE001 - a crash is an outcome both must share
        return ("raised", type(exc).__name__, str(exc))
    return (check.messages, check.files.error or check.files.get(), hashlib.sha256(data).hexdigest())


def _streamed(path: Path) -> Any:
    try:
        got = check_spdx_file(path, limit=_LIMIT)
    except Exception as exc:  # noqa: BLE001 - a crash is an outcome both must share
        return ("raised", type(exc).__name__, str(exc))
    if got is None:
        return None
    check, sha256 = got
    return (check.messages, check.files.error or check.files.get(), sha256)


def _same_or_handed_back(tmp_path: Path, data: bytes) -> Any:
    path = tmp_path / "doc.spdx.json"
    path.write_bytes(data)
    got = _streamed(path)
    want = _whole(data)
    if got is not None:
        if isinstance(want[1], Exception):
            assert isinstance(got[1], Exception)
            assert (got[0], type(got[1]), str(got[1]), got[2]) == (
                want[0],
                type(want[1]),
                str(want[1]),
                want[2],
            )
        else:
            assert got == want
    return got


def test_our_document_is_streamed_with_the_whole_path_verdict(tmp_path: Path) -> None:
    got = _same_or_handed_back(tmp_path, _golden("spdx.json"))
    assert got is not None and got[0] == []


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_every_window_cut_gives_the_same_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(stream, "CHUNK", chunk)
    assert _same_or_handed_back(tmp_path, _golden("spdx.json")) is not None


@pytest.mark.parametrize("name", list(_SPDX))
def test_spdx_mutation_streamed_equals_the_whole_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(stream, "CHUNK", 97)
    raw = _load("spdx.json")
    _SPDX[name](raw)
    _same_or_handed_back(tmp_path, _encode(raw))


@pytest.mark.parametrize("name", list(_SPDX_BYTES))
def test_spdx_json_attack_streamed_equals_the_whole_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(stream, "CHUNK", 97)
    _same_or_handed_back(tmp_path, _SPDX_BYTES[name](_golden("spdx.json")))


@pytest.mark.parametrize(
    "attack",
    [
        lambda d: d.replace(b'"files": [', b'"files": [], "files": [', 1),  # a duplicate key
        lambda d: d.replace(
            b'"SPDXID": "SPDXRef-DOCUMENT",', b'"SPDXID": "SPDXRef-DOCUMENT", "SPDXID": "x",', 1
        ),
        lambda d: d.rstrip(b"\n") + b" {}\n",  # trailing data
        lambda d: b"\xef\xbb\xbf" + d,  # a BOM
        lambda d: d.replace(b'"fileName"', b'"fileName": "a", "fileName"', 1),  # duplicate in an entry
        lambda d: d[:-3],  # cut off
    ],
)
def test_a_refused_document_is_handed_back(tmp_path: Path, attack: Any) -> None:
    assert _same_or_handed_back(tmp_path, attack(_golden("spdx.json"))) is None


def test_a_document_larger_than_its_bound_is_handed_back(tmp_path: Path) -> None:
    path = tmp_path / "doc.spdx.json"
    path.write_bytes(_golden("spdx.json"))
    assert check_spdx_file(path, limit=path.stat().st_size - 1) is None
    assert check_spdx_file(path, limit=path.stat().st_size) is not None


def test_compact_rows_give_back_equal_dicts() -> None:
    raw = _load("spdx.json")
    share = stream._Strings()
    rows = stream.CompactRows([stream._pack_entry(e, share) for e in raw["files"]])
    assert list(rows) == raw["files"]
    assert [rows[i] for i in range(len(rows))] == raw["files"]
    assert list(rows[1:]) == raw["files"][1:] and len(rows[1:]) == len(raw["files"]) - 1
    ids = {e["SPDXID"]: e["SPDXID"] for e in raw["files"]}
    rels = stream.CompactRows([stream._pack_relationship(r, share, ids) for r in raw["relationships"]])
    assert list(rels) == raw["relationships"]
    odd = {"spdxElementId": "a", "relationshipType": "CONTAINS", "relatedSpdxElement": 1}
    assert stream._pack_relationship(odd, share, ids) is odd
