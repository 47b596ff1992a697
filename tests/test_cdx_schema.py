"""``sbom._cdx_schema``: "valid" only when the strict CycloneDX 1.6 validator reports no error.

Differential against ``sbom._cyclonedx._strict_validator`` (jsonschema, the bundled schema files,
the validator's format checks): the builder's documents (the golden sample lane and the sample
release) are judged valid without jsonschema and jsonschema agrees; each one-rule mutation is
either not judged valid here or has no schema error; each keyword of the Draft 7 evaluator gives
jsonschema's verdict on small schemas, or gives up.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ninfer_release.sbom import _cdx_schema, check_cyclonedx_bytes, check_cyclonedx_file
from ninfer_release.sbom._cdx_fast import schema_is_clean_own
from ninfer_release.sbom._cyclonedx import _strict_validator

Raw = dict[str, Any]
_GOLDEN = (
    Path(__file__).parent / "golden/v0.13.1/rtx4090/ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64.cdx.json"
)


def _golden() -> Raw:
    raw: Raw = json.loads(_GOLDEN.read_bytes())
    return raw


def _schema_errors(raw: Any) -> list[str]:
    return [e.message for e in _strict_validator().iter_errors(raw)]


def _sound(raw: Any) -> bool:
    """The fast verdicts (the whole document, and its cut skeleton with the occurrence
    predicate), asserted sound: "valid" only if jsonschema reports no error."""
    whole = _cdx_schema.is_valid(raw)
    cut = schema_is_clean_own(raw)
    if whole or cut:
        assert _schema_errors(raw) == []
    return cut


def test_the_golden_document_is_valid_without_jsonschema() -> None:
    raw = _golden()
    assert _cdx_schema.is_valid(raw)
    assert _sound(raw)


def test_the_sample_lanes_documents_are_valid_without_jsonschema(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from flow_support import release_out

    found = sorted(release_out(tmp_path_factory).glob("*/*.cdx.json"))
    assert found
    for path in found:
        assert _sound(json.loads(path.read_bytes())), path


def _at(*path: Any, value: Any = None, drop: bool = False) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        node: Any = raw
        for p in path[:-1]:
            node = node[p]
        if drop:
            del node[path[-1]]
        else:
            node[path[-1]] = value

    return edit


_ROOT = ("metadata", "component")
_C0 = ("components", 0)
_OCC = (*_ROOT, "evidence", "occurrences", 0)

_MUTATIONS: dict[str, Callable[[Raw], None]] = {
    "bomFormat": _at("bomFormat", value="CycloneDx"),
    "specVersion": _at("specVersion", value="1.5"),
    "specVersion number": _at("specVersion", value=1.6),
    "serial": _at("serialNumber", value="urn:uuid:bad"),
    "version 0": _at("version", value=0),
    "version string": _at("version", value="1"),
    "version float": _at("version", value=1.5),
    "version integral float": _at("version", value=1.0),
    "version bool": _at("version", value=True),
    "extra top key": _at("foo", value=1),
    "schema other": _at("$schema", value="http://cyclonedx.org/schema/bom-1.5.schema.json"),
    "timestamp no zone": _at("metadata", "timestamp", value="2026-11-20T00:00:00"),
    "timestamp month 13": _at("metadata", "timestamp", value="2026-13-20T00:00:00Z"),
    "timestamp fraction": _at("metadata", "timestamp", value="2026-11-20T00:00:00.5Z"),
    "timestamp other zone": _at("metadata", "timestamp", value="2026-11-20T00:00:00+01:00"),
    "timestamp lowercase": _at("metadata", "timestamp", value="2026-11-20t00:00:00z"),
    "timestamp text": _at("metadata", "timestamp", value="yesterday"),
    "timestamp number": _at("metadata", "timestamp", value=0),
    "lifecycle phase": _at("metadata", "lifecycles", 0, "phase", value="bild"),
    "lifecycle extra": _at("metadata", "lifecycles", 0, "x", value=1),
    "tool name missing": _at("metadata", "tools", "components", 0, "name", drop=True),
    "tool type": _at("metadata", "tools", "components", 0, "type", value="app"),
    "tools legacy list": _at("metadata", "tools", value=[{"name": "x", "vendor": "y"}]),
    "tools list bad": _at("metadata", "tools", value=[{"name": 1}]),
    "manufacturer url": _at("metadata", "manufacturer", "url", value=["https://exa mple.com"]),
    "manufacturer url ok": _at("metadata", "manufacturer", "url", value=["https://example.com"]),
    "supplier name type": _at("metadata", "supplier", "name", value=1),
    "supplier email": _at("metadata", "supplier", "contact", value=[{"email": "nobody"}]),
    "supplier email ok": _at("metadata", "supplier", "contact", value=[{"email": "a@b.c"}]),
    "root type": _at(*_ROOT, "type", value="app"),
    "root name missing": _at(*_ROOT, "name", drop=True),
    "root bom-ref empty": _at(*_ROOT, "bom-ref", value=""),
    "root hash alg": _at(*_ROOT, "hashes", 0, "alg", value="SHA256"),
    "root hash content": _at(*_ROOT, "hashes", 0, "content", value="xyz"),
    "root hash extra": _at(*_ROOT, "hashes", 0, "x", value=1),
    "root licence two expressions": _at(
        *_ROOT, "licenses", value=[{"expression": "MIT"}, {"expression": "X"}]
    ),
    "root licence id": _at(*_ROOT, "licenses", value=[{"license": {"id": "MIT"}}]),
    "root licence bad id": _at(*_ROOT, "licenses", value=[{"license": {"id": "Not-An-Id"}}]),
    "root licence name": _at(*_ROOT, "licenses", value=[{"license": {"name": "Custom"}}]),
    "root licence both": _at(*_ROOT, "licenses", value=[{"license": {"id": "MIT", "name": "x"}}]),
    "root licence expression type": _at(*_ROOT, "licenses", value=[{"expression": 1}]),
    "root purl type": _at(*_ROOT, "purl", value=1),
    "occurrence line -1": _at(*_OCC, "line", value=-1),
    "occurrence line float": _at(*_OCC, "line", value=1.5),
    "occurrence line integral float": _at(*_OCC, "line", value=1.0),
    "occurrence line bool": _at(*_OCC, "line", value=True),
    "occurrence location missing": _at(*_OCC, "location", drop=True),
    "occurrence extra": _at(*_OCC, "x", value=1),
    "occurrence bom-ref empty": _at(*_OCC, "bom-ref", value=""),
    "component type": _at(*_C0, "type", value="app"),
    "component cpe type": _at(*_C0, "cpe", value=1),
    "component property name type": _at(*_C0, "properties", 0, "name", value=1),
    "component property extra": _at(*_C0, "properties", 0, "x", value=1),
    "component supplier extra": _at(*_C0, "supplier", "x", value=1),
    "component scope": _at(*_C0, "scope", value="needed"),
    "component scope ok": _at(*_C0, "scope", value="required"),
    "component duplicate property": lambda r: r["components"][0]["properties"].append(
        copy.deepcopy(r["components"][0]["properties"][0])
    ),
    "external reference type": _at("components", 2, "externalReferences", 0, "type", value="web"),
    "external reference url": _at(
        "components", 2, "externalReferences", 0, "url", value="http://exa mple.com"
    ),
    "external reference relative": _at("components", 2, "externalReferences", 0, "url", value="a/b"),
    "external reference url type": _at("components", 2, "externalReferences", 0, "url", value=1),
    "dependency ref empty": _at("dependencies", 0, "ref", value=""),
    "dependency dependsOn duplicate": lambda r: r["dependencies"][0]["dependsOn"].append(
        r["dependencies"][0]["dependsOn"][0]
    ),
    "dependency dependsOn type": _at("dependencies", 0, "dependsOn", value="x"),
    "composition aggregate": _at("compositions", 0, "aggregate", value="whole"),
    "composition assemblies duplicate": lambda r: r["compositions"][0]["assemblies"].append(
        r["compositions"][0]["assemblies"][0]
    ),
    "components not a list": _at("components", value={}),
    "nested component bad": _at(*_C0, "components", value=[{"type": "library"}]),
    "nested component ok": _at(*_C0, "components", value=[{"type": "library", "name": "x"}]),
}


@pytest.mark.parametrize("name", list(_MUTATIONS))
def test_a_mutation_is_not_judged_valid_unless_jsonschema_agrees(name: str) -> None:
    raw = _golden()
    _MUTATIONS[name](raw)
    _sound(raw)


def test_most_mutations_are_rejected_and_none_judged_valid() -> None:
    rejected = 0
    for name, mutate in _MUTATIONS.items():
        raw = _golden()
        mutate(raw)
        if _schema_errors(raw):
            rejected += 1
            assert not schema_is_clean_own(raw), name
            assert not _cdx_schema.is_valid(raw), name
    assert rejected >= 45


# ------------------------------------------------------------- the evaluator, keyword by keyword

_CASES: list[tuple[Any, Any]] = [
    ({"type": "integer"}, 1),
    ({"type": "integer"}, 1.0),
    ({"type": "integer"}, 1.5),
    ({"type": "integer"}, True),
    ({"type": "number"}, False),
    ({"type": "number"}, 2.5),
    ({"type": ["string", "null"]}, None),
    ({"type": "boolean"}, 0),
    ({"enum": [1, "a"]}, True),
    ({"enum": [1, "a"]}, 1.0),
    ({"enum": [True]}, 1),
    ({"enum": [{"a": [1]}]}, {"a": [1.0]}),
    ({"const": False}, 0),
    ({"const": "x"}, "x"),
    ({"required": ["a"]}, {"b": 1}),
    ({"required": ["a"]}, []),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"a": "x", "b": 1}),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"a": 1}),
    ({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False}, {"x-a": 1}),
    ({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False}, {"x-a": "1"}),
    ({"patternProperties": {"^x-": {}}, "additionalProperties": {"type": "string"}}, {"y": 1}),
    ({"items": {"type": "string"}}, ["a", 1]),
    ({"items": [{"type": "string"}], "additionalItems": False}, ["a", "b"]),
    ({"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}, ["a", 2]),
    ({"additionalItems": False}, [1, 2]),
    ({"uniqueItems": True}, [1, True]),
    ({"uniqueItems": True}, [1, 1.0]),
    ({"uniqueItems": True}, [{"a": 1}, {"a": 1}]),
    ({"minimum": 0}, -1),
    ({"minimum": 0}, True),
    ({"maximum": 5}, 5.0),
    ({"minLength": 2}, "\U0001f600"),
    ({"maxLength": 1}, "ab"),
    ({"minItems": 1}, []),
    ({"maxItems": 1}, [1, 2]),
    ({"pattern": "b"}, "abc"),
    ({"pattern": "^b"}, "abc"),
    ({"pattern": "^a$"}, "a\n"),
    ({"oneOf": [{"type": "string"}, {"minLength": 1}]}, "a"),
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, 1),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, None),
    ({"allOf": [{"type": "string"}, {"minLength": 2}]}, "a"),
    ({"not": {"type": "string"}}, "a"),
    ({"not": {"type": "string"}}, 1),
    ({"$ref": "#/definitions/s", "type": "integer", "definitions": {"s": {"type": "string"}}}, "a"),
    ({"format": "date-time"}, "2026-11-20T00:00:00Z"),
    ({"format": "date-time"}, "2026-02-30T00:00:00Z"),
    ({"format": "idn-email"}, "nobody"),
    ({"format": "idn-email"}, "a@b"),
    ({"format": "iri-reference"}, "a b"),
    ({"format": "iri-reference"}, "https://example.com/x"),
    ({"format": "date-time"}, 5),
    (True, 1),
    (False, 1),
]


def _jsonschema_valid(schema: Any, instance: Any) -> bool:
    strict = _strict_validator()  # its class (uniqueItems in O(n)) and format checks, this schema
    return not list(type(strict)(schema, format_checker=strict.format_checker).iter_errors(instance))


@pytest.mark.parametrize(("schema", "instance"), _CASES)
def test_each_keyword_gives_jsonschemas_verdict_or_gives_up(schema: Any, instance: Any) -> None:
    ev = _cdx_schema._Evaluator(lambda name: schema)
    try:
        got = ev.valid(instance, schema, "")
    except _cdx_schema.Unsure:
        return
    assert got == _jsonschema_valid(schema, instance)


@pytest.mark.parametrize(
    "schema",
    [{"if": {"type": "string"}}, {"contains": {}}, {"propertyNames": {}}, {"type": "any"}, {"x-unknown": 1}],
)
def test_an_unknown_keyword_makes_it_give_up(schema: Any) -> None:
    with pytest.raises(_cdx_schema.Unsure):
        _cdx_schema._Evaluator(lambda name: schema).valid("a", schema, "")


# ------------------------------------------------------------- end to end


def _write(tmp_path: Path, raw: Raw) -> Path:
    path = tmp_path / "doc.cdx.json"
    path.write_bytes((json.dumps(raw, indent=2) + "\n").encode())
    return path


def test_a_valid_document_the_evaluator_is_unsure_of_still_verifies(tmp_path: Path) -> None:
    raw = _golden()
    raw["metadata"]["timestamp"] = "2026-11-20T01:00:00+01:00"  # RFC 3339, not the canonical form
    assert not schema_is_clean_own(raw)
    path = _write(tmp_path, raw)
    got = check_cyclonedx_file(path, limit=1 << 26)
    assert got is not None and got[0].messages == []
    assert check_cyclonedx_bytes(path.read_bytes()).messages == []


def test_an_invalid_document_fails_with_jsonschemas_message(tmp_path: Path) -> None:
    raw = _golden()
    raw["metadata"]["component"]["type"] = "app"
    path = _write(tmp_path, raw)
    assert check_cyclonedx_file(path, limit=1 << 26) is None  # the whole path words it
    messages = check_cyclonedx_bytes(path.read_bytes()).messages
    assert messages and messages[0].startswith("schema: $.metadata.component.type: 'app' is not one of")
