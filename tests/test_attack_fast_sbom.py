"""Hostile review of verify's library-free SBOM judges (``sbom._spdx_skeleton``, ``sbom._cdx_schema``).

Their contract: "clean" only when the library path (spdx-tools 0.8.5's parser and rules as
``sbom._spdx_validate`` applies them; jsonschema Draft 7 with the strict CycloneDX 1.6 schema and
format checks, ``sbom._cyclonedx._strict_validator``) reports nothing. A document they call clean
that the library rejects is a set ``verify`` used to reject and would now pass. Here:

* ``clean_skeleton`` gives up (``None``), never raises, on an unhashable value where it wants an
  enum name (it used to raise ``TypeError``; its callers caught it, its docstring says it raises
  nothing);
* each value predicate of the skeleton (actors, dates, the namespace, licence expressions) is
  checked against spdx-tools' own functions over an exhaustive small neighbourhood of tricky
  characters, and the evaluator's ``date-time`` against jsonschema's checker;
* the Draft 7 evaluator is compared with jsonschema on instances generated from every definition
  of the bom schema (a fixed seed: the same instances every run), in both directions: its "valid"
  must be jsonschema's, and so must its "invalid", because a wrong "invalid" inside ``oneOf``
  would turn into a wrong "valid" (two matching branches counted as one);
* ``verify`` of the sample set with one SBOM edited and every binding re-sealed (the package's
  SPDX copy, the digests and sizes in the manifest, provenance, route and CycloneDX root, the
  release instance id, SHA256SUMS): a harmless edit still verifies (the re-sealing is complete),
  and each edit the library rejects inside the fast paths' shape still fails.
"""

from __future__ import annotations

import copy
import hashlib
import io
import itertools
import json
import random
import shutil
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_support import cli, release_out, stem
from ninfer_release.sbom import _spdx_skeleton as sk
from ninfer_release.sbom._spdx import hoist_implicit_relationships
from ninfer_release.sbom._spdx_fast import license_texts, split_canonical

Raw = dict[str, Any]
_GOLDEN = Path(__file__).parent / "golden/v0.13.1/rtx4090"
_STEM = "ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64"
LANE = "rtx4090"


def _golden(kind: str) -> Raw:
    raw: Raw = json.loads((_GOLDEN / f"{_STEM}.{kind}.json").read_bytes())
    return raw


def _fast(raw: Raw) -> list[sk.SkeletonPackage] | None:
    """``clean_skeleton`` of a whole document, split as the canonical path splits it."""
    split = split_canonical(hoist_implicit_relationships(copy.deepcopy(raw)))
    assert split is not None
    skeleton, files, contains = split
    sources = list(dict.fromkeys(r["spdxElementId"] for r in contains))
    return sk.clean_skeleton(skeleton, [f["SPDXID"] for f in files], license_texts(files), sources)


# ---------------------------------------------------------------- clean_skeleton raises nothing


def _purpose(value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        raw["packages"][0]["primaryPackagePurpose"] = value

    return edit


def _relationship_type(value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        raw["relationships"][0]["relationshipType"] = value

    return edit


_UNHASHABLE: dict[str, Callable[[Raw], None]] = {
    "purpose list": _purpose(["APPLICATION"]),
    "purpose object": _purpose({}),
    "relationship type list": _relationship_type(["DESCRIBES"]),
    "relationship type object": _relationship_type({"DESCRIBES": 1}),
}


@pytest.mark.parametrize("name", list(_UNHASHABLE))
def test_skeleton_gives_up_on_an_unhashable_enum_value(name: str) -> None:
    raw = _golden("spdx")
    assert _fast(raw) is not None  # control: the untouched document is judged clean
    _UNHASHABLE[name](raw)
    assert _fast(raw) is None  # was: TypeError (unhashable type) out of a "raises nothing" judge


# ---------------------------------------------------------------- value predicates vs spdx-tools

_NAME_CHARS = (
    "a",
    " ",
    "(",
    ")",
    "@",
    ":",
    "\t",
    "\n",
    "\x85",
    "\xa0",
    "\u2028",
    "\u3000",
    "\ufeff",
    "\ud800",
)


def _names(longest: int) -> Iterator[str]:
    for size in range(longest + 1):
        for chars in itertools.product(_NAME_CHARS, repeat=size):
            yield "".join(chars)


def test_an_actor_judged_clean_parses_without_a_message() -> None:
    from spdx_tools.spdx.parser.actor_parser import ActorParser
    from spdx_tools.spdx.validation.actor_validator import validate_actor

    clean = 0
    for kind, name in itertools.product(("Tool", "Organization", "Person", "tool"), _names(3)):
        text = f"{kind}: {name}"
        if sk.is_actor(text, ("Tool", "Organization")):
            clean += 1
            actor = ActorParser.parse_actor(text)  # raises SPDXParsingError if it does not parse
            assert validate_actor(actor, "SPDXRef-DOCUMENT") == [], text
    assert clean > 300  # not vacuous


def _edits(base: str, alphabet: str) -> Iterator[str]:
    """``base`` with one character replaced, inserted or deleted, for each position and character."""
    for i in range(len(base) + 1):
        for c in alphabet:
            yield base[:i] + c + base[i + 1 :]
            yield base[:i] + c + base[i:]
        yield base[:i] + base[i + 1 :]


_DATE_CHARS = "0123456789-T:Z .+tz\n\u0663"


def test_a_date_judged_clean_is_one_spdx_tools_reads() -> None:
    from spdx_tools.spdx.datetime_conversions import datetime_from_str

    clean = 0
    for base in ("2026-11-20T12:34:56Z", "2028-02-29T23:59:59Z", "0001-01-01T00:00:00Z"):
        for text in _edits(base, _DATE_CHARS):
            if sk.is_date(text):
                clean += 1
                datetime_from_str(text)  # raises ValueError if spdx-tools cannot read it
    assert clean > 100


def test_a_namespace_judged_clean_is_an_absolute_uri_for_spdx_tools() -> None:
    from spdx_tools.spdx.validation.uri_validators import validate_uri

    clean = 0
    for scheme in ("http://", "https://", "HTTPS://", "ftp://"):
        for chars in itertools.product("a-./_~%:#?[@ \u00e9", repeat=3):
            text = scheme + "h" + "".join(chars)
            if sk._NAMESPACE.fullmatch(text) is not None:
                clean += 1
                assert validate_uri(text) == [], text
    assert clean > 100


_REFS = (
    "LicenseRef-MIT",
    "LicenseRef-GPL-2.0-or-later",
    "LicenseRef-AND",
    "LicenseRef-with",
    "LicenseRef-LLVM-exception",
    "LicenseRef-.",
    "LicenseRef-0BSD.Apache-2.0",
)


def test_a_licence_expression_judged_clean_gives_no_library_message() -> None:
    from spdx_tools.spdx.model import SpdxNoAssertion, SpdxNone
    from spdx_tools.spdx.parser.jsonlikedict.license_expression_parser import LicenseExpressionParser

    from ninfer_release.sbom._spdx_validate import _Index, _license_texts

    refs = set(_REFS)
    index = _Index(
        all_ids=set(),
        file_ids=set(),
        package_ids=set(),
        snippet_ids=set(),
        external_refs=set(),
        license_refs=refs,
        by_type_origin={},
        by_type_target={},
    )
    tokens = ("MIT", "GPL-2.0-or-later", "Apache-2.0", "NONE", "LicenseRef-Missing", *_REFS)
    clean = 0
    for size in (1, 2, 3):
        for terms in itertools.product(tokens, repeat=size):
            for ops in itertools.product((" AND ", " OR ", " WITH ", " and "), repeat=size - 1):
                text = terms[0] + "".join(op + t for op, t in zip(ops, terms[1:], strict=True))
                if not sk.is_clean_license(text, refs):
                    continue
                clean += 1
                parsed = LicenseExpressionParser.parse_license_expression(text)
                if not isinstance(parsed, SpdxNone | SpdxNoAssertion):
                    assert _license_texts(parsed, index) == [], text
    assert clean > 1000


def test_a_date_time_the_evaluator_accepts_is_one_jsonschema_accepts() -> None:
    from jsonschema import Draft7Validator  # type: ignore[import-untyped]

    from ninfer_release.sbom._cdx_schema import Unsure, _format

    checker, decided = Draft7Validator.FORMAT_CHECKER, 0
    for base in ("2026-11-20T12:34:56Z", "2028-02-29T23:59:59.123456+00:00", "0001-01-01T00:00:00.5Z"):
        for text in _edits(base, _DATE_CHARS):
            try:
                valid = _format(text, "date-time")
            except Unsure:
                continue
            decided += 1
            assert not valid or checker.conforms(text, "date-time"), text
    assert decided > 100


# ---------------------------------------------------------------- the Draft 7 evaluator vs jsonschema

_ATOMS: tuple[Any, ...] = (
    None, True, False, 0, 1, -1, 1.0, 1.5, 10**18, "", "x", " ", "\n", "a\nb", "\ud800", "a@b",
    "2026-11-20T00:00:00Z", "2026-11-20T00:00:00.5+00:00", "2026-13-20T00:00:00Z", "https://example.com/x",
    "http://x y", "urn:uuid:3e671687-395b-41f5-a30f-a58921a69b79",
    "urn:cdx:3e671687-395b-41f5-a30f-a58921a69b79/1#x", "MIT", "SHA-256", "e" * 64, "library", "#x",
)  # fmt: skip


class _Generator:
    """Instances shaped by a schema definition, with a share of wrong types, values and keys."""

    def __init__(self, root: Raw, seed: int) -> None:
        self.root = root
        self.rng = random.Random(seed)  # noqa: S311 - a fixed seed: the same instances on every run (test data, not security)

    def _resolve(self, schema: Any) -> Any:
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            if not ref.startswith("#/"):
                return None
            node: Any = self.root
            for part in ref[2:].split("/"):
                node = node[part]
            schema = node
        return schema

    def atom(self) -> Any:
        if self.rng.random() < 0.8:
            return self.rng.choice(_ATOMS)
        return self.rng.choice([[], {}, [self.rng.choice(_ATOMS)], {"x": 1}])

    def value(self, schema: Any, depth: int = 0) -> Any:
        schema = self._resolve(schema)
        if not isinstance(schema, dict) or depth > 6 or self.rng.random() < 0.08:
            return self.atom()
        for key in ("oneOf", "anyOf", "allOf"):
            if key in schema and self.rng.random() < 0.8:
                branch = self.value(self.rng.choice(schema[key]), depth + 1)
                rest = {k: v for k, v in schema.items() if k != key}
                whole = self.value(rest, depth + 1) if "properties" in rest else None
                if isinstance(branch, dict) and isinstance(whole, dict):
                    return {**whole, **branch}
                return branch
        if "enum" in schema and self.rng.random() < 0.9:
            return self.rng.choice(schema["enum"])
        kind = schema.get("type", "object" if "properties" in schema else None)
        if isinstance(kind, list):
            kind = self.rng.choice(kind)
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, depth)
        choices: dict[Any, list[Any]] = {
            "string": [a for a in _ATOMS if isinstance(a, str)],
            "integer": [0, 1, 5, -1, 1.0, 2.5, True],
            "number": [0, 1.5, -1, 1e10, True],
            "boolean": [True, False, 0],
        }
        return self.rng.choice(choices.get(kind, list(_ATOMS)))

    def _object(self, schema: Raw, depth: int) -> Raw:
        properties = schema.get("properties", {})
        out = {k: self.value(properties.get(k, True), depth + 1) for k in schema.get("required", [])}
        out.update({k: self.value(v, depth + 1) for k, v in properties.items() if self.rng.random() < 0.25})
        if self.rng.random() < 0.05:
            out["zz"] = 1
        return out

    def _array(self, schema: Raw, depth: int) -> list[Any]:
        items = schema.get("items", True)
        n = self.rng.choice([0, 1, 1, 2, 3])
        if isinstance(items, list):
            return [self.value(i, depth + 1) for i in items][:n] + ([1] if self.rng.random() < 0.1 else [])
        out = [self.value(items, depth + 1) for _ in range(n)]
        if out and self.rng.random() < 0.1:
            out.append(out[0])  # uniqueItems
        return out


def test_the_evaluator_gives_jsonschemas_verdict_on_every_definition() -> None:
    """Both directions: a wrong "invalid" is a hole too once ``oneOf`` counts the branches."""
    from ninfer_release.sbom._cdx_schema import Unsure, _Evaluator, load_schema
    from ninfer_release.sbom._cyclonedx import _strict_validator

    root = load_schema("")
    evaluator, validator = _Evaluator(load_schema), _strict_validator()
    generator = _Generator(root, seed=20261202)
    verdicts = {True: 0, False: 0}
    for name in sorted(root["definitions"]):
        schema = {"$ref": f"#/definitions/{name}"}
        judge = validator.evolve(schema=schema)
        for _ in range(12):
            instance = generator.value(schema)
            try:
                mine = evaluator.valid(instance, schema, "")
            except Unsure:
                continue
            errors = [e.message for e in judge.iter_errors(instance)]
            assert mine == (errors == []), (name, instance, errors[:1])
            verdicts[mine] += 1
    assert verdicts[True] > 300 and verdicts[False] > 300  # not vacuous


# ---------------------------------------------------------------- verify of re-sealed sets


def _json_format(data: bytes) -> dict[str, Any] | None:
    doc = json.loads(data)
    for indent, sort_keys, ensure_ascii in itertools.product((2, 4), (True, False), (True, False)):
        options: dict[str, Any] = {"indent": indent, "sort_keys": sort_keys, "ensure_ascii": ensure_ascii}
        if (json.dumps(doc, **options) + "\n").encode() == data:
            return options
    return None


def _resize(node: Any, digest: str, old: int, new: int) -> None:
    if isinstance(node, dict):
        if node.get("sha256") == digest and node.get("size") == old:
            node["size"] = new
        for v in node.values():
            _resize(v, digest, old, new)
    elif isinstance(node, list):
        for v in node:
            _resize(v, digest, old, new)


def _with_member(package: bytes, member: str, body: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(package)) as zin:
        items = [(info, zin.read(info)) for info in zin.infolist()]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zout:
        for info, data in items:
            zout.writestr(info, body if info.filename == member else data)
    return buf.getvalue()


def _rebind(files: dict[str, bytes], name: str, old: bytes) -> None:
    """Every other entry that records ``old``'s SHA-256 (and size) now records ``files[name]``'s."""
    body = files[name]
    d0, d1 = hashlib.sha256(old).hexdigest(), hashlib.sha256(body).hexdigest()
    for other, data in list(files.items()):
        if other in (name, "SHA256SUMS") or other.endswith(".zip"):
            continue
        new = data.replace(d0.encode(), d1.encode())
        if name.endswith(".zip"):  # the release instance id: component tag + package digest prefix
            new = new.replace(f"-{d0[:16]}".encode(), f"-{d1[:16]}".encode())
        if new != data and len(old) != len(body) and other.endswith(".json"):
            options = _json_format(new)
            assert options is not None, other
            doc = json.loads(new)
            _resize(doc, d1, len(old), len(body))
            new = (json.dumps(doc, **options) + "\n").encode()
        files[other] = new


def _resealed(set_dir: Path, kind: str, body: bytes) -> None:
    """Replace the set's ``kind`` SBOM by ``body`` and re-seal everything that binds it."""
    files = {p.name: p.read_bytes() for p in set_dir.iterdir()}
    sealed = dict(files)
    files[f"{_STEM}.{kind}.json"] = body
    if kind == "spdx":
        package = f"{_STEM}.zip"
        files[package] = _with_member(files[package], f"sbom/{_STEM}.spdx.json", body)
    while changed := [n for n in files if n != "SHA256SUMS" and files[n] != sealed[n]]:
        name = changed[0]
        old, sealed[name] = sealed[name], files[name]
        _rebind(files, name, old)
    for name, data in files.items():
        (set_dir / name).write_bytes(data)
    sums = "".join(
        f"{hashlib.sha256(files[n]).hexdigest()}  {n}\n" for n in sorted(files) if n != "SHA256SUMS"
    )
    (set_dir / "SHA256SUMS").write_bytes(sums.encode())


def _dumped(raw: Raw, kind: str) -> bytes:
    return (json.dumps(raw, indent=4 if kind == "spdx" else 2) + "\n").encode()


@pytest.fixture
def copy_set(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    dst = tmp_path / LANE
    shutil.copytree(release_out(tmp_path_factory) / LANE, dst)
    assert stem(LANE) == _STEM
    return dst


def _sbom(set_dir: Path, kind: str) -> Raw:
    raw: Raw = json.loads((set_dir / f"{_STEM}.{kind}.json").read_bytes())
    return raw


@pytest.mark.parametrize("kind", ["spdx", "cdx"])
def test_a_harmless_edit_resealed_still_verifies(copy_set: Path, kind: str) -> None:
    """Control: the re-sealing binds everything, so each failure below is the SBOM's own."""
    raw = _sbom(copy_set, kind)
    if kind == "spdx":
        raw["comment"] += " (edited)"
    else:
        raw["metadata"]["component"]["description"] = "edited"
    _resealed(copy_set, kind, _dumped(raw, kind))
    res = cli("verify", copy_set)
    assert res.code == 0, res.text


def _package(key: str, value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        raw["packages"][0][key] = value

    return edit


def _spdx_tail_source(raw: Raw) -> None:
    raw["relationships"][-1]["spdxElementId"] = "SPDXRef-Nope"


def _spdx_namespace(raw: Raw) -> None:
    raw["documentNamespace"] += "#fragment"


def _spdx_created(raw: Raw) -> None:
    raw["creationInfo"]["created"] = "2026-02-30T00:00:00Z"


def _spdx_no_describes(raw: Raw) -> None:
    raw["relationships"] = [r for r in raw["relationships"] if r["relationshipType"] != "DESCRIBES"]


def _cdx_timestamp(raw: Raw) -> None:
    raw["metadata"]["timestamp"] = "2026-13-20T00:00:00Z"


def _cdx_licence_id_and_name(raw: Raw) -> None:
    raw["metadata"]["component"]["licenses"] = [{"license": {"id": "MIT", "name": "MIT"}}]  # oneOf: both


def _cdx_occurrence_location(raw: Raw) -> None:
    raw["metadata"]["component"]["evidence"]["occurrences"][-1]["location"] = 1


def _cdx_version(raw: Raw) -> None:
    raw["version"] = 0


_REJECTED: dict[str, tuple[str, Callable[[Raw], None], str]] = {
    "spdx unknown licence ref": (
        "spdx",
        _package("licenseConcluded", "MIT AND LicenseRef-Unknown"),
        "SPDX 2.3 invalid",
    ),
    "spdx tail source": ("spdx", _spdx_tail_source, "SPDX 2.3 invalid"),
    "spdx namespace fragment": ("spdx", _spdx_namespace, "SPDX 2.3 invalid"),
    "spdx created 30 February": ("spdx", _spdx_created, "SPDX 2.3 invalid"),
    "spdx no DESCRIBES": ("spdx", _spdx_no_describes, "SPDX 2.3 invalid"),
    "cdx timestamp month 13": ("cdx", _cdx_timestamp, "CycloneDX 1.6 invalid"),
    "cdx licence id and name": ("cdx", _cdx_licence_id_and_name, "CycloneDX 1.6 invalid"),
    "cdx later occurrence location": ("cdx", _cdx_occurrence_location, "CycloneDX 1.6 invalid"),
    "cdx version 0": ("cdx", _cdx_version, "CycloneDX 1.6 invalid"),
}


@pytest.mark.parametrize("name", list(_REJECTED))
def test_a_resealed_set_with_an_sbom_the_library_rejects_fails(copy_set: Path, name: str) -> None:
    kind, edit, says = _REJECTED[name]
    raw = _sbom(copy_set, kind)
    edit(raw)
    _resealed(copy_set, kind, _dumped(raw, kind))
    res = cli("verify", copy_set)
    assert res.code == 5, res.text
    lines = [line for line in res.err.splitlines() if f"{_STEM}.{kind}.json: {says}" in line]
    assert lines, res.err


# ---------------------------------------------------------------- hostile shapes


def _at(path: tuple[str | int, ...], value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        node: Any = raw
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


# Each used to end verify as "internal error: TypeError/AttributeError" (exit 1): the walks after
# the schema (bom-refs, dependencies, compositions, hashes) took the schema's shape for granted.
_WRONG_SHAPES: dict[str, Callable[[Raw], None]] = {
    "components true": _at(("components",), True),
    "components 7": _at(("components",), 7),
    "metadata a string": _at(("metadata",), "x"),
    "metadata a list": _at(("metadata",), [1]),
    "dependencies a string": _at(("dependencies",), "x"),
    "dependencies an object": _at(("dependencies",), {"a": 1}),
    "dependency a number": _at(("dependencies", 0), 7),
    "dependency null": _at(("dependencies", 0), None),
    "dependsOn an object": _at(("dependencies", 0, "dependsOn"), {"a": 1}),
    "dependsOn holds a list": _at(("dependencies", 0, "dependsOn"), [[1]]),
    "compositions 7": _at(("compositions",), 7),
    "root hashes a string": _at(("metadata", "component", "hashes"), "x"),
    "properties an object": _at(("components", 0, "properties"), {"a": 1}),
}


@pytest.mark.parametrize("name", list(_WRONG_SHAPES))
def test_a_cyclonedx_document_of_the_wrong_shape_is_reported_not_raised(name: str) -> None:
    from ninfer_release.sbom._cyclonedx import check_cyclonedx_bytes

    raw = _golden("cdx")
    _WRONG_SHAPES[name](raw)
    check = check_cyclonedx_bytes(_dumped(raw, "cdx"))
    assert check.messages, name
    assert not isinstance(check.hashes.error, (TypeError, AttributeError)), check.hashes.error
    assert not isinstance(check.root_sha256.error, (TypeError, AttributeError)), check.root_sha256.error


@pytest.mark.parametrize(
    "name", ["components true", "metadata a string", "dependencies a string", "compositions 7"]
)
def test_a_resealed_set_with_a_cyclonedx_document_of_the_wrong_shape_fails_naming_it(
    copy_set: Path, name: str
) -> None:
    raw = _sbom(copy_set, "cdx")
    _WRONG_SHAPES[name](raw)
    _resealed(copy_set, "cdx", _dumped(raw, "cdx"))
    res = cli("verify", copy_set)
    assert res.code == 5, res.text
    assert "internal error" not in res.err, res.err
    assert f"{_STEM}.cdx.json" in res.err, res.err
