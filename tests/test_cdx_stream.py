"""The streamed CycloneDX check (``sbom.check_cyclonedx_file``, ``sbom._cdx_stream``; issue 13:
memory) gives exactly what ``check_cyclonedx_bytes`` gives for the same bytes, or hands the
document back (``None``) to the whole-document path, on the hostile corpus of
test_sbom_fast_hostile, with windows small enough to cut every value, and reads our own
documents streamed."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from ninfer_release.sbom import _cdx_stream, _spdx_stream, check_cyclonedx_bytes, check_cyclonedx_file
from test_sbom_fast_hostile import _CDX, _CDX_BYTES, _encode, _golden, _load, _occ, _occurrences

_LIMIT = 1 << 26


def _outcome(check: Any) -> Any:
    def value(o: Any) -> Any:
        return ("error", type(o.error).__name__, str(o.error)) if o.error is not None else o.value

    return (check.messages, value(check.hashes), value(check.root_sha256))


def _whole(data: bytes) -> Any:
    try:
        return (*_outcome(check_cyclonedx_bytes(data)), hashlib.sha256(data).hexdigest())
    except Exception as exc:  # noqa: BLE001 - a crash is an outcome both must share
        return ("raised", type(exc).__name__, str(exc))


def _same_or_handed_back(tmp_path: Path, data: bytes) -> Any:
    path = tmp_path / "doc.cdx.json"
    path.write_bytes(data)
    try:
        got = check_cyclonedx_file(path, limit=_LIMIT)
    except Exception as exc:  # noqa: BLE001 - a crash is an outcome both must share
        assert ("raised", type(exc).__name__, str(exc)) == _whole(data)
        return ("raised",)
    if got is None:
        return None
    check, sha256 = got
    streamed = (*_outcome(check), sha256)
    assert streamed == _whole(data)
    return streamed


def test_our_document_is_streamed_with_the_whole_path_verdict(tmp_path: Path) -> None:
    got = _same_or_handed_back(tmp_path, _golden("cdx.json"))
    assert got is not None and got[0] == []
    assert len(got[1]) == len(_occurrences(_load("cdx.json"))) + sum(
        len(c.get("evidence", {}).get("occurrences", [])) for c in _load("cdx.json")["components"]
    )


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_every_window_cut_gives_the_same_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(_spdx_stream, "CHUNK", chunk)
    assert _same_or_handed_back(tmp_path, _golden("cdx.json")) is not None


@pytest.mark.parametrize("name", list(_CDX))
def test_cyclonedx_mutation_streamed_equals_the_whole_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(_spdx_stream, "CHUNK", 97)
    raw = _load("cdx.json")
    _CDX[name](raw)
    _same_or_handed_back(tmp_path, _encode(raw))


@pytest.mark.parametrize("name", list(_CDX_BYTES))
def test_cyclonedx_json_attack_streamed_equals_the_whole_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(_spdx_stream, "CHUNK", 97)
    _same_or_handed_back(tmp_path, _CDX_BYTES[name](_golden("cdx.json")))


def _nested_components(levels: int) -> dict[str, Any]:
    inner: dict[str, Any] = {"type": "library", "name": "n0", "bom-ref": "nested:0"}
    for i in range(1, levels):
        inner = {"type": "library", "name": f"n{i}", "bom-ref": f"nested:{i}", "components": [inner]}
    return inner


def test_nesting_within_the_limit_is_streamed(tmp_path: Path) -> None:
    raw = _load("cdx.json")
    raw["components"].append(_nested_components(20))
    assert _same_or_handed_back(tmp_path, _encode(raw)) is not None


def _shared_location(raw: dict[str, Any]) -> None:
    _occurrences(raw).append(
        {"additionalContext": "sha256:" + "c" * 64, "bom-ref": "file:shared.txt", "location": "shared.txt"}
    )
    owner = next(c for c in raw["components"] if c.get("evidence", {}).get("occurrences"))
    owner["evidence"]["occurrences"].append(
        {"additionalContext": "sha256:" + "d" * 64, "bom-ref": "other:shared", "location": "shared.txt"}
    )


def _later(field: str, value: Any) -> Any:
    return lambda raw: _occ(raw, 3).__setitem__(field, value)


@pytest.mark.parametrize(
    "mutate",
    [
        _later("bom-ref", "file:elsewhere"),  # not file:<location>
        _later("additionalContext", "sha1:" + "a" * 40),
        _later("additionalContext", "sha256:" + "A" * 64),  # upper case: the whole path lowercases
        _later("additionalContext", "sha256:" + "a" * 63),
        _later("location", 7),
        lambda raw: _occ(raw, 3).update({"location": 7, "bom-ref": "file:7"}),  # not a string
        _later("additionalContext", "sha512:" + "a" * 64),  # another algorithm, 64 digits
        # Deeper than the strict reader allows, outside the streamed path (valid to the schema).
        lambda raw: raw["components"].append(_nested_components(40)),
        _shared_location,  # a later location that a component lists under another bom-ref
        _later("line", 3),  # valid, but not the canonical keys
        lambda raw: _occ(raw, 3).pop("bom-ref"),
        lambda raw: _occurrences(raw).append(copy.deepcopy(_occ(raw, 3))),  # listed twice
        # A later location also listed by a component (listed twice across the document).
        lambda raw: _occurrences(raw).append(
            {
                "additionalContext": "sha256:" + "b" * 64,
                "bom-ref": "file:"
                + next(c for c in raw["components"] if c.get("evidence", {}).get("occurrences"))["evidence"][
                    "occurrences"
                ][0]["location"],
                "location": next(c for c in raw["components"] if c.get("evidence", {}).get("occurrences"))[
                    "evidence"
                ]["occurrences"][0]["location"],
            }
        ),
        # A later bom-ref that is a component's bom-ref.
        lambda raw: raw["components"][0].__setitem__("bom-ref", _occ(raw, 4)["bom-ref"]),
        lambda raw: raw["metadata"].__setitem__("x-bad", float("nan")),
    ],
)
def test_what_the_streamed_path_cannot_word_is_handed_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutate: Any
) -> None:
    monkeypatch.setattr(_spdx_stream, "CHUNK", 97)
    raw = _load("cdx.json")
    mutate(raw)
    assert _same_or_handed_back(tmp_path, _encode(raw)) is None


@pytest.mark.parametrize(
    "attack",
    [
        lambda d: d.replace(b'"metadata": {', b'"metadata": {}, "metadata": {', 1),  # duplicate key
        lambda d: d.rstrip(b"\n") + b" {}\n",  # trailing data
        lambda d: b"\xef\xbb\xbf" + d,  # a BOM
        lambda d: d[:-3],  # cut off
        lambda d: b"[" + d.rstrip(b"\n") + b"]\n",  # not an object
    ],
)
def test_a_refused_document_is_handed_back(tmp_path: Path, attack: Any) -> None:
    assert _same_or_handed_back(tmp_path, attack(_golden("cdx.json"))) is None


def test_a_document_larger_than_its_bound_is_handed_back(tmp_path: Path) -> None:
    path = tmp_path / "doc.cdx.json"
    path.write_bytes(_golden("cdx.json"))
    assert check_cyclonedx_file(path, limit=path.stat().st_size - 1) is None
    assert check_cyclonedx_file(path, limit=path.stat().st_size) is not None


def test_a_compact_document_is_read_one_occurrence_at_a_time(tmp_path: Path) -> None:
    """No line structure to batch on: the same verdict, each occurrence decoded alone."""
    data = (json.dumps(_load("cdx.json"), separators=(",", ":")) + "\n").encode()
    assert _same_or_handed_back(tmp_path, data) is not None


def test_a_batch_that_does_not_decode_falls_back_to_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = _spdx_stream._Window.batch

    def counted(self: Any, each: Any) -> int:
        calls.append(1)
        return -1 if len(calls) == 1 else real(self, each)

    monkeypatch.setattr(_spdx_stream._Window, "batch", counted)
    assert _same_or_handed_back(tmp_path, _golden("cdx.json")) is not None
    assert len(calls) == 1  # batching stays off for the rest of the array


def test_the_later_occurrences_are_kept_as_hash_entries_only(tmp_path: Path) -> None:
    path = tmp_path / "doc.cdx.json"
    path.write_bytes(_golden("cdx.json"))
    streamed = _cdx_stream.read_streamed(path, limit=_LIMIT)
    assert streamed is not None
    kept = streamed.skeleton["metadata"]["component"]["evidence"]["occurrences"]
    raw = _load("cdx.json")
    assert kept == _occurrences(raw)[:1]
    assert streamed.rest == {
        o["location"]: o["additionalContext"].removeprefix("sha256:") for o in _occurrences(raw)[1:]
    }


def _dangling(raw: dict[str, Any]) -> None:
    raw["dependencies"][0].setdefault("dependsOn", []).append("vendored:nope@1")


def _bare(raw: dict[str, Any]) -> dict[str, Any]:
    """A component whose evidence is dropped (the golden has none without it since issue 35)."""
    c: dict[str, Any] = raw["components"][-1]
    c.pop("evidence", None)
    return c


def _no_bom_ref(raw: dict[str, Any]) -> None:
    for c in [_bare(raw)]:
        if not c.get("evidence"):
            ref = c.pop("bom-ref")
            for d in raw["dependencies"]:
                d["dependsOn"] = [r for r in d.get("dependsOn", []) if r != ref]
            raw["dependencies"] = [d for d in raw["dependencies"] if d["ref"] != ref]
            for comp in raw.get("compositions", []):
                for key in ("assemblies", "dependencies"):
                    if key in comp:
                        comp[key] = [r for r in comp[key] if r != ref]
            return


def _twin_refs(raw: dict[str, Any]) -> None:
    twin = copy.deepcopy(_bare(raw))
    twin["name"] = "twin"
    raw["components"].append(twin)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_dangling, "dependency names unknown bom-ref 'vendored:nope@1'"),
        (_no_bom_ref, "has no bom-ref"),
        (_twin_refs, "is used more than once"),
        (lambda raw: raw.__setitem__("specVersion", "1.5"), "specVersion is '1.5'"),
    ],
)
def test_skeleton_findings_are_worded_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutate: Any, message: str
) -> None:
    """What the checks beyond the schema find in the rest of the document is reported by the
    streamed path itself, with the whole path's words."""
    monkeypatch.setattr(_spdx_stream, "CHUNK", 97)
    raw = _load("cdx.json")
    mutate(raw)
    got = _same_or_handed_back(tmp_path, _encode(raw))
    assert got is not None, "handed back"
    assert any(message in m for m in got[0]), got[0]
