"""Strict-schema validation of a CycloneDX 1.6 document without walking the schema per occurrence.

Our package documents carry one ``evidence.occurrences`` entry per shipped file (10k files: 10k
entries); jsonschema descends into the ``componentEvidence`` schema for each (``$ref``,
``properties``, ``additionalProperties``, a validator evolved per level: ~0.25 ms per entry). The
rule for one occurrence is small and fixed — CycloneDX 1.6 ``componentEvidence.occurrences.items``:
an object with a string ``location``, only the keys bom-ref (``refType``: a string of at least one
character), location, line, offset (integers >= 0), symbol and additionalContext (strings).

:func:`schema_is_clean` decides that the strict schema reports *no* error for a document: the
schema validates the document with every occurrence list cut to its first entry (so the array
and one item are still checked by the schema itself), and :func:`occurrence_is_clean` checks the
others. It is sound, not complete: it returns ``False`` whenever it is not sure (an occurrence with
another key or type, or a schema whose occurrence rule is not :data:`OCCURRENCE_RULE`), and the
caller then runs the schema on the whole document, so the reported message is always jsonschema's
own. ``tests/test_cdx_fast.py`` holds the verdict equal to the full schema on one-rule mutations.

:func:`schema_is_clean_own` does the same without jsonschema: the cut skeleton is judged by the
small Draft 7 evaluator of ``sbom._cdx_schema`` (sound, not complete), so ``verify`` of a document
our builder wrote imports neither jsonschema nor referencing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The schema fragments the predicate implements (CycloneDX 1.6 strict, bundled with
# cyclonedx-python-lib), without their title/description annotations. Checked against the loaded
# schema on every use: a different schema disables the fast path.
OCCURRENCE_RULE: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["location"],
        "additionalProperties": False,
        "properties": {
            "bom-ref": {"$ref": "#/definitions/refType"},
            "location": {"type": "string"},
            "line": {"type": "integer", "minimum": 0},
            "offset": {"type": "integer", "minimum": 0},
            "symbol": {"type": "string"},
            "additionalContext": {"type": "string"},
        },
    },
}
REF_TYPE_RULE: dict[str, Any] = {"type": "string", "minLength": 1}
_ANNOTATIONS = ("title", "description", "$comment")
_CANONICAL_KEYS = frozenset({"bom-ref", "location", "additionalContext"})


def _bare(fragment: Any) -> Any:
    """A schema fragment without its annotation keywords (recursively)."""
    if isinstance(fragment, dict):
        return {k: _bare(v) for k, v in fragment.items() if k not in _ANNOTATIONS}
    if isinstance(fragment, list):
        return [_bare(v) for v in fragment]
    return fragment


def schema_has_the_rule(schema: Mapping[str, Any]) -> bool:
    """Whether the schema's occurrence and ``refType`` rules are exactly the ones implemented here."""
    definitions = schema.get("definitions", {})
    evidence = definitions.get("componentEvidence", {})
    occurrences = evidence.get("properties", {}).get("occurrences")
    others = set(evidence) - {"type", "additionalProperties", "properties", *_ANNOTATIONS}
    return (
        not others
        and _bare(occurrences) == OCCURRENCE_RULE
        and _bare(definitions.get("refType")) == REF_TYPE_RULE
    )


def occurrence_is_clean(occurrence: Any) -> bool:
    """``True`` only if :data:`OCCURRENCE_RULE`'s ``items`` accepts ``occurrence``: a dict of
    ``location`` (string), optionally ``bom-ref`` (non-empty string) and ``additionalContext``
    (string). Other valid occurrences (line, offset, symbol) return ``False`` (not sure)."""
    if type(occurrence) is not dict or not _CANONICAL_KEYS.issuperset(occurrence):
        return False
    if type(occurrence.get("location")) is not str:
        return False
    ref = occurrence.get("bom-ref", "x")
    return type(ref) is str and len(ref) >= 1 and type(occurrence.get("additionalContext", "")) is str


def _cut(component: Any, rest: list[Any]) -> Any:
    """``component`` with each evidence occurrence list (its own and its nested components')
    cut to the first entry; the others are appended to ``rest``. ``component`` is not modified."""
    if type(component) is not dict:
        return component
    out = component
    evidence = component.get("evidence")
    if (
        type(evidence) is dict
        and type(evidence.get("occurrences")) is list
        and len(evidence["occurrences"]) > 1
    ):
        rest.extend(evidence["occurrences"][1:])
        out = {**component, "evidence": {**evidence, "occurrences": evidence["occurrences"][:1]}}
    nested = component.get("components")
    if type(nested) is list:
        out = {**out, "components": [_cut(c, rest) for c in nested]}
    return out


def cut_occurrences(raw: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """``(skeleton, rest)``: ``raw`` with the occurrence lists of ``metadata.component`` and of the
    components (nested included) cut to their first entry, and the entries cut. ``raw`` is not
    modified; the skeleton shares everything else with it."""
    rest: list[Any] = []
    skeleton = dict(raw)
    metadata = raw.get("metadata")
    if type(metadata) is dict and "component" in metadata:
        skeleton["metadata"] = {**metadata, "component": _cut(metadata["component"], rest)}
    components = raw.get("components")
    if type(components) is list:
        skeleton["components"] = [_cut(c, rest) for c in components]
    return skeleton, rest


def schema_is_clean_own(raw: Any) -> bool:
    """:func:`schema_is_clean` without jsonschema: the skeleton (occurrence lists cut to their
    first entry) judged by ``sbom._cdx_schema.is_valid``, the other occurrences by
    :func:`occurrence_is_clean`. ``False`` = not sure (ask jsonschema). Raises nothing."""
    from ninfer_release.sbom._cdx_schema import Unsure, is_valid, load_schema

    if type(raw) is not dict:
        return False
    try:
        if not schema_has_the_rule(load_schema("")):
            return False
    except (Unsure, OSError, ValueError):
        return False
    skeleton, rest = cut_occurrences(raw)
    return all(occurrence_is_clean(o) for o in rest) and is_valid(skeleton)


def schema_is_clean(raw: Any, validator: Any) -> bool:
    """``True`` only if ``validator`` (the strict CycloneDX 1.6 schema) reports no error for
    ``raw``; ``False`` means "not sure" (run the schema on the whole document). Cost: the schema
    over the document without its occurrences, plus a few dict checks per occurrence."""
    if type(raw) is not dict or not schema_has_the_rule(validator.schema):
        return False
    skeleton, rest = cut_occurrences(raw)
    if not all(occurrence_is_clean(o) for o in rest):
        return False
    return next(iter(validator.iter_errors(skeleton)), None) is None
