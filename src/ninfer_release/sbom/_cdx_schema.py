"""The strict CycloneDX 1.6 schema's verdict on a document, without jsonschema when it is sure.

Importing jsonschema and referencing and building the validator (``sbom._cyclonedx.
_strict_validator``) cost ``verify`` ~0.1 s of CPU per run, only to learn that a document our
builder wrote has no schema error. :func:`is_valid` walks the same schema files (the ones bundled
with cyclonedx-python-lib that the validator is built from) with a small Draft 7 evaluator and
answers ``True`` only when jsonschema's ``Draft7Validator`` with the validator's format checks
would report no error. It is *sound, not complete*: every keyword it meets is either one it
implements with jsonschema 4's semantics (listed in :data:`_KEYWORDS`, annotations ignored as
jsonschema ignores them) or it gives up (:class:`Unsure`), and so does a format it does not check
exactly, a ``$ref`` it cannot resolve, an ``$id`` below the root or a number it does not compare
the way Python does; ``False``/``Unsure`` send the caller to jsonschema, so every reported message
is still jsonschema's own. A ``False`` is only ever the exact verdict (it can turn into ``True``
inside ``not`` and ``oneOf``), so a schema's first failing keyword decides it.

Semantics mirrored (jsonschema 4.26 ``_keywords`` / ``_legacy_keywords`` / ``_types``, Draft 7):
a ``$ref`` hides its siblings; ``type`` ``integer`` includes integral floats, ``number`` and
``integer`` exclude booleans; ``pattern`` is ``re.search``; ``enum``/``const``/``uniqueItems``
compare as ``sbom._cyclonedx._frozen`` (``true`` is not ``1``, ``1`` is ``1.0``); ``items`` as a
list is positional with ``additionalItems``; ``additionalProperties`` covers keys neither in
``properties`` nor matching a ``patternProperties`` expression; ``oneOf`` is exactly one,
``anyOf`` at least one, ``allOf`` all; format ``date-time`` is ``True`` only for the canonical
``YYYY-MM-DDTHH:MM:SS[.f](Z|+00:00)`` of a real time (a subset of RFC 3339), ``iri`` /
``iri-reference`` are ``sbom._iri``'s checks (the validator's own), ``idn-email`` is jsonschema's
``"@" in instance``. ``tests/test_cdx_schema.py`` holds the verdicts against the strict validator
on the builder's documents and one-rule mutations.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ninfer_release.sbom._iri import is_iri, is_iri_reference

#: Keywords with no effect on the verdict (jsonschema ignores them).
_ANNOTATIONS = frozenset(
    {
        "title", "description", "examples", "default", "$comment", "meta:enum", "deprecated",
        "$schema", "definitions", "readOnly", "writeOnly",
    }
)  # fmt: skip
_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]{1,6})?(?:Z|\+00:00)"
)
_BASE = "http://cyclonedx.org/schema/"


class Unsure(Exception):
    """The evaluator cannot give jsonschema's exact verdict here."""


def _frozen(value: Any) -> Any:
    from ninfer_release.sbom._cyclonedx import _frozen as frozen

    return frozen(value)


def _is_type(instance: Any, name: str) -> bool:
    """jsonschema's Draft 7 type checker."""
    kind = type(instance)
    if name == "string":
        return kind is str
    if name == "object":
        return kind is dict
    if name == "array":
        return kind is list
    if name == "boolean":
        return kind is bool
    if name == "null":
        return instance is None
    if name == "integer":
        return kind is int or (kind is float and instance.is_integer())
    if name == "number":
        return kind is int or kind is float
    raise Unsure


def _format(instance: Any, name: str) -> bool:
    if type(instance) is not str:
        return True
    if name == "date-time":
        m = _DATE_TIME.fullmatch(instance)
        if m is None:
            raise Unsure  # maybe RFC 3339 all the same
        try:
            year, month, day, hour, minute, second = (int(g) for g in m.groups())
            datetime(year, month, day, hour, minute, second)  # a calendar check only
        except ValueError:
            raise Unsure from None
        return True
    if name == "iri-reference":
        return is_iri_reference(instance)
    if name == "iri":
        return is_iri(instance)
    if name == "idn-email":
        return "@" in instance
    raise Unsure


class _Evaluator:
    """One document's walk over the schema files (``documents``: file name -> parsed schema)."""

    def __init__(self, documents: Callable[[str], Any]) -> None:
        self.documents = documents

    def resolve(self, ref: str, doc: str) -> tuple[Any, str]:
        """The schema ``ref`` names from within file ``doc``; only references from the root file
        are followed (jsonschema resolves those against the root's ``$id``, the registry holding
        the other files under the names the root uses; a reference inside another file would
        resolve against that file's own ``$id``)."""
        if doc != "":
            raise Unsure
        name, _, fragment = ref.partition("#")
        if name:
            if "/" in name or ":" in name:
                raise Unsure
            doc = name
        node = self.documents(doc)
        if fragment:
            if not fragment.startswith("/") or "~" in fragment or "%" in fragment:
                raise Unsure
            for part in fragment[1:].split("/"):
                if type(node) is not dict or part not in node:
                    raise Unsure
                node = node[part]
        return node, doc

    def valid(self, instance: Any, schema: Any, doc: str) -> bool:
        if schema is True:
            return True
        if schema is False:
            return False
        if type(schema) is not dict:
            raise Unsure
        if "$ref" in schema:
            if type(schema["$ref"]) is not str:
                raise Unsure
            target, target_doc = self.resolve(schema["$ref"], doc)
            return self.valid(instance, target, target_doc)
        if "$id" in schema and schema is not self.documents(doc):
            raise Unsure
        for key, value in schema.items():
            if key in _ANNOTATIONS or key == "$id":
                continue
            check = _KEYWORDS.get(key)
            if check is None:
                raise Unsure
            if not check(self, instance, value, schema, doc):
                return False  # exact: each keyword's False is jsonschema's error there
        return True

    def all_valid(self, instance: Any, schemas: Any, doc: str) -> list[bool]:
        if type(schemas) is not list:
            raise Unsure
        return [self.valid(instance, s, doc) for s in schemas]


def _k_type(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    names = value if type(value) is list else [value]
    return any(_is_type(instance, n) for n in names)


def _k_enum(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    key = _frozen(instance)
    return any(_frozen(e) == key for e in value)


def _k_const(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return bool(_frozen(value) == _frozen(instance))


def _k_required(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return type(instance) is not dict or all(k in instance for k in value)


def _k_properties(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    if type(instance) is not dict:
        return True
    return all(ev.valid(instance[k], s, doc) for k, s in value.items() if k in instance)


def _k_pattern_properties(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    if type(instance) is not dict:
        return True
    return all(ev.valid(v, s, doc) for p, s in value.items() for k, v in instance.items() if re.search(p, k))


def _k_additional_properties(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    if type(instance) is not dict:
        return True
    known = schema.get("properties", {})
    patterns = "|".join(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in known and not (patterns and re.search(patterns, k))]
    if value is False:
        return not extras
    return all(ev.valid(instance[k], value, doc) for k in extras)


def _k_items(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    if type(instance) is not list:
        return True
    if type(value) is list:
        return all(ev.valid(item, s, doc) for item, s in zip(instance, value, strict=False))
    return all(ev.valid(item, value, doc) for item in instance)


def _k_additional_items(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    items = schema.get("items", {})
    if type(instance) is not list or type(items) is dict:
        return True  # jsonschema: additionalItems applies only beside an items list
    if type(items) is not list:
        raise Unsure
    rest = instance[len(items) :]
    if value is False:
        return not rest
    return all(ev.valid(item, value, doc) for item in rest)


def _k_unique_items(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    if not value or type(instance) is not list:
        return True
    keys = [_frozen(item) for item in instance]
    return len(set(keys)) == len(keys)


def _number(value: Any) -> Any:
    if type(value) not in (int, float):
        raise Unsure
    return value


def _k_minimum(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return not _is_type(instance, "number") or instance >= _number(value)


def _k_maximum(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return not _is_type(instance, "number") or instance <= _number(value)


def _k_min_length(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return type(instance) is not str or len(instance) >= _number(value)


def _k_max_length(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return type(instance) is not str or len(instance) <= _number(value)


def _k_min_items(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return type(instance) is not list or len(instance) >= _number(value)


def _k_max_items(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return type(instance) is not list or len(instance) <= _number(value)


def _k_pattern(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return type(instance) is not str or re.search(value, instance) is not None


def _k_format(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return _format(instance, value)


def _k_one_of(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return ev.all_valid(instance, value, doc).count(True) == 1


def _k_any_of(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return True in ev.all_valid(instance, value, doc)


def _k_all_of(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return False not in ev.all_valid(instance, value, doc)


def _k_not(ev: _Evaluator, instance: Any, value: Any, schema: Any, doc: str) -> bool:
    return not ev.valid(instance, value, doc)


_Keyword = Callable[[_Evaluator, Any, Any, Any, str], bool]
#: The Draft 7 keywords the evaluator implements; any other (``if``, ``contains``,
#: ``dependencies``, ``propertyNames``, ``multipleOf``, ...) makes it :class:`Unsure`.
_KEYWORDS: dict[str, _Keyword] = {
    "type": _k_type,
    "enum": _k_enum,
    "const": _k_const,
    "required": _k_required,
    "properties": _k_properties,
    "patternProperties": _k_pattern_properties,
    "additionalProperties": _k_additional_properties,
    "items": _k_items,
    "additionalItems": _k_additional_items,
    "uniqueItems": _k_unique_items,
    "minimum": _k_minimum,
    "maximum": _k_maximum,
    "minLength": _k_min_length,
    "maxLength": _k_max_length,
    "minItems": _k_min_items,
    "maxItems": _k_max_items,
    "pattern": _k_pattern,
    "format": _k_format,
    "oneOf": _k_one_of,
    "anyOf": _k_any_of,
    "allOf": _k_all_of,
    "not": _k_not,
}


@functools.cache
def _schema_paths() -> Mapping[str, str]:
    """File name (as the bom schema's ``$ref`` spells it) -> path of the bundled schema file; the
    root is ``""``: the same files ``sbom._cyclonedx._strict_validator`` is built from."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.schema._res import BOM_JSON_STRICT, CRYPTOGRAPHY_DEFS, JSF, SPDX_JSON

    root = BOM_JSON_STRICT[SchemaVersion.V1_6]
    if root is None:
        raise Unsure
    return {
        "": root,
        "spdx.SNAPSHOT.schema.json": SPDX_JSON,
        "cryptography-defs.SNAPSHOT.schema.json": CRYPTOGRAPHY_DEFS,
        "jsf-0.82.SNAPSHOT.schema.json": JSF,
    }


@functools.cache
def load_schema(name: str) -> Any:
    """The parsed schema file ``name`` (``""``: the strict bom-1.6 schema).

    Raises:
        Unsure: no such file is bundled, or the root is not the one the validator uses.
    """
    path = _schema_paths().get(name)
    if path is None:
        raise Unsure
    schema = json.loads(Path(path).read_bytes())
    expected = _BASE + ("bom-1.6.schema.json" if name == "" else name.replace(".SNAPSHOT", ""))
    if type(schema) is not dict or (name == "" and schema.get("$id") != expected):
        raise Unsure
    if schema.get("$schema") != "http://json-schema.org/draft-07/schema#":
        raise Unsure
    return schema


def is_valid(instance: Any) -> bool:
    """``True`` only if the strict CycloneDX 1.6 schema reports no error for ``instance``;
    ``False`` = not sure (run jsonschema). Raises nothing."""
    try:
        return _Evaluator(load_schema).valid(instance, load_schema(""), "")
    except (Unsure, RecursionError, OSError, ValueError, TypeError, re.error):
        return False
