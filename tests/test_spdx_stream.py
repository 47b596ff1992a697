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


def _contains_from_bad_id_then_describes(raw: dict[str, Any]) -> None:
    """A CONTAINS run (one of them from an unknown id) that is not the tail: DESCRIBES follows."""
    rels = raw["relationships"]
    describes = [r for r in rels if r["relationshipType"] == "DESCRIBES"]
    rest = [r for r in rels if r["relationshipType"] != "DESCRIBES"]
    rest[0]["spdxElementId"] = "SPDXRef-Nope"
    raw["relationships"] = rest + describes


def _relationships_first(raw: dict[str, Any]) -> None:
    files = raw.pop("files")
    relationships = raw.pop("relationships")
    raw["relationships"] = relationships
    raw["files"] = files


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        # The run goes back into the document: its relationships are validated by spdx-tools.
        (_contains_from_bad_id_then_describes, 'did not find the referenced spdx_id "SPDXRef-Nope"'),
        # Relationships decoded before the files are kept whole (none is a CONTAINS tail).
        (_relationships_first, None),
    ],
)
def test_relationships_kept_whole_are_validated_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutate: Any, message: str | None
) -> None:
    monkeypatch.setattr(stream, "CHUNK", 97)
    raw = _load("spdx.json")
    mutate(raw)
    got = _same_or_handed_back(tmp_path, _encode(raw))
    assert got is not None
    if message is None:
        assert got[0] == []
    else:
        assert any(message in m for m in got[0]), got[0]


@pytest.mark.parametrize("value", [None, "x", {}, 1])
def test_relationships_not_a_list_is_the_whole_path_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: Any
) -> None:
    monkeypatch.setattr(stream, "CHUNK", 97)
    raw = _load("spdx.json")
    raw["relationships"] = value
    assert _same_or_handed_back(tmp_path, _encode(raw)) is None


@pytest.mark.parametrize(
    "mutate",
    [
        # A licence text spdx-tools reports (an unknown LicenseRef): decided against the skeleton.
        lambda raw: raw["files"][1].__setitem__("licenseConcluded", "LicenseRef-Nope"),
        # A CONTAINS tail from an id the document does not have.
        lambda raw: raw["relationships"][-1].__setitem__("spdxElementId", "SPDXRef-Nope"),
    ],
)
def test_not_clean_against_the_skeleton_is_handed_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutate: Any
) -> None:
    raw = _load("spdx.json")
    mutate(raw)
    assert _same_or_handed_back(tmp_path, _encode(raw)) is None
