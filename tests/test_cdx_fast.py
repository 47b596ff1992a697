"""The occurrence fast path of CycloneDX schema validation (``sbom._cdx_fast``) against jsonschema.

On the golden package document and one-rule mutations of its evidence occurrences (first or
later entry, ``metadata.component`` or a component), ``_schema_message`` must equal the strict
schema run on the whole document, and the fast path may say "clean" only when the schema does.
A schema whose occurrence rule differs disables the fast path.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ninfer_release.sbom import _cdx_fast
from ninfer_release.sbom._cdx_fast import schema_has_the_rule, schema_is_clean
from ninfer_release.sbom._cyclonedx import _schema_message, _strict_validator

Raw = dict[str, Any]
GOLDEN = (
    Path(__file__).parent / "golden/v0.13.1/rtx4090/ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64.cdx.json"
)


def _raw() -> Raw:
    raw: Raw = json.loads(GOLDEN.read_bytes())
    return raw


def _full_schema_message(raw: Any) -> list[str]:
    error = next(iter(_strict_validator().iter_errors(raw)), None)
    return [] if error is None else [f"schema: {error.json_path}: {error.message}"[:500]]


def _meta(raw: Raw, i: int) -> Any:
    return raw["metadata"]["component"]["evidence"]["occurrences"][i]


def _evidence(raw: Raw) -> Raw:
    evidence: Raw = raw["metadata"]["component"]["evidence"]
    return evidence


def _component(raw: Raw) -> Raw:
    found: Raw = next(c for c in raw["components"] if len(c.get("evidence", {}).get("occurrences", [])) > 1)
    return found


def _nest(raw: Raw) -> None:
    _component(raw)["components"] = [copy.deepcopy(_component(raw))]


def _bad_both(raw: Raw) -> None:
    _meta(raw, 5)["line"] = -1
    raw["version"] = "1"


def _set(i: int, key: str, value: Any) -> Callable[[Raw], None]:
    return lambda raw: _meta(raw, i).__setitem__(key, value)


def _drop(i: int, key: str) -> Callable[[Raw], None]:
    return lambda raw: _meta(raw, i).pop(key)


def _replace(i: int, value: Any) -> Callable[[Raw], None]:
    return lambda raw: raw["metadata"]["component"]["evidence"]["occurrences"].__setitem__(i, value)


_MUTATIONS: dict[str, Callable[[Raw], None]] = {
    "clean": lambda raw: None,
    "no location (first)": _drop(0, "location"),
    "no location (later)": _drop(5, "location"),
    "location not a string": _set(5, "location", 7),
    "empty bom-ref": _set(5, "bom-ref", ""),
    "bom-ref not a string": _set(5, "bom-ref", None),
    "no bom-ref": _drop(5, "bom-ref"),
    "context not a string": _set(5, "additionalContext", ["x"]),
    "no context": _drop(5, "additionalContext"),
    "unknown key": _set(5, "path", "x"),
    "line": _set(5, "line", 3),
    "negative line": _set(5, "line", -1),
    "offset true": _set(5, "offset", True),
    "symbol": _set(5, "symbol", "main"),
    "not an object": _replace(5, "bin/a.dll"),
    "null": _replace(5, None),
    "occurrences not a list": lambda raw: _evidence(raw).__setitem__("occurrences", {}),
    "empty occurrences": lambda raw: _evidence(raw).__setitem__("occurrences", []),
    "component: no location": lambda raw: _component(raw)["evidence"]["occurrences"][1].pop("location"),
    "component: unknown key": lambda raw: _component(raw)["evidence"]["occurrences"][1].__setitem__("x", 1),
    "nested component": _nest,
    "nested component, bad occurrence": lambda raw: _component(raw).__setitem__(
        "components", [{**copy.deepcopy(_component(raw)), "evidence": {"occurrences": [{}, {"x": 1}]}}]
    ),
    "bad skeleton": lambda raw: raw["metadata"]["component"].__setitem__("type", "gadget"),
    "bad skeleton and occurrence": lambda raw: _bad_both(raw),
}  # fmt: skip


def _with_many_occurrences(raw: Raw, n: int) -> Raw:
    occurrences = raw["metadata"]["component"]["evidence"]["occurrences"]
    occurrences.extend(
        {"additionalContext": "sha256:" + "0" * 64, "bom-ref": f"file:x/{i}", "location": f"x/{i}"}
        for i in range(n)
    )
    return raw


@pytest.mark.parametrize("name", list(_MUTATIONS))
def test_the_schema_verdict_and_message_are_jsonschemas(name: str) -> None:
    raw = _with_many_occurrences(_raw(), 20)
    _MUTATIONS[name](raw)
    full = _full_schema_message(raw)
    assert _schema_message(raw) == full
    if schema_is_clean(raw, _strict_validator()):
        assert full == []
    valid = {"clean", "no bom-ref", "no context", "line", "symbol", "empty occurrences", "nested component"}
    assert (full == []) == (name in valid)


@pytest.mark.parametrize("name", ["clean", "no bom-ref", "no context", "nested component"])
def test_canonical_documents_skip_the_schema_walk_per_occurrence(name: str) -> None:
    raw = _with_many_occurrences(_raw(), 20)
    _MUTATIONS[name](raw)
    assert schema_is_clean(raw, _strict_validator())


def test_a_changed_occurrence_rule_disables_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = _strict_validator().schema
    assert schema_has_the_rule(schema)
    changed = copy.deepcopy(_cdx_fast.OCCURRENCE_RULE)
    changed["items"]["properties"]["location"]["minLength"] = 1
    monkeypatch.setattr(_cdx_fast, "OCCURRENCE_RULE", changed)
    assert not schema_has_the_rule(schema)
    assert not schema_is_clean(_raw(), _strict_validator())
    altered = copy.deepcopy(schema)
    altered["definitions"]["componentEvidence"]["allOf"] = [{"required": ["identity"]}]
    monkeypatch.undo()
    assert not schema_has_the_rule(altered)


def test_cutting_leaves_the_document_unchanged() -> None:
    raw = _with_many_occurrences(_raw(), 5)
    before = copy.deepcopy(raw)
    skeleton, rest = _cdx_fast.cut_occurrences(raw)
    assert raw == before
    assert len(skeleton["metadata"]["component"]["evidence"]["occurrences"]) == 1
    total = sum(
        len(c.get("evidence", {}).get("occurrences", []))
        for c in [raw["metadata"]["component"], *raw["components"]]
    )
    kept = sum(
        len(c.get("evidence", {}).get("occurrences", []))
        for c in [skeleton["metadata"]["component"], *skeleton["components"]]
    )
    assert kept + len(rest) == total
