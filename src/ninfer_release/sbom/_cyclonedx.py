"""CycloneDX 1.6 JSON dependency inventory of a lane (cyclonedx-python-lib 11.12).

Components, one per resolved dependency:

* ``vendored:<name>@<version>`` — a vendored source (type library): purl, supplier, licence,
  source URL as a VCS / source-distribution external reference, commit as a property.
* ``file:<zip path>`` — every shipped engine or redistributable file: SHA-256, purl, supplier,
  licence, version read from its PE version resource (CUDA DLLs: the CUDA version from the
  version strings), and ``ninfer:*`` properties (``ninfer:path`` is the zip path the verifier
  checks the hash against; ``ninfer:stand-in`` says whether it is a stand-in).

Dependency graph: the package (``metadata.component``) depends on the engine files; each PE file
depends on the shipped files its import and delay-import tables name (Windows loader: same
directory first); engine files depend on the vendored sources compiled into them; shipped
redistributables that no import reaches (loaded by name at run time) hang off the package.

Determinism: ``serialNumber`` is ``urn:uuid:`` + UUIDv5(NAMESPACE_URL, serial identity) (C33),
``metadata.timestamp`` is the source-date epoch, every component has an explicit bom-ref checked
unique here (the library would silently rename a duplicate), and the output is the library's
``JsonV1Dot6`` text (sorted keys) with one final LF.
"""

from __future__ import annotations

import functools
import json
import logging
import posixpath
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.reproducible import datetime_utc
from ninfer_release.sbom._ids import uuid5_url
from ninfer_release.sbom._iri import import_jsonschema_lean, is_iri, is_iri_reference
from ninfer_release.sbom._license import normalize_license_expression
from ninfer_release.sbom._pe import check_pe_against_lock, pe_component_version
from ninfer_release.sbom._purl import parse_purl
from ninfer_release.sbom._records import DEPENDENCY_KINDS, REDIST_GROUPS, DependencyRecord, PeInfo
from ninfer_release.sbom._spdx import zip_path_problem

log = logging.getLogger(__name__)
CDX_WHERE = "cyclonedx"
PROP_PATH = "ninfer:path"
PROP_STAND_IN = "ninfer:stand-in"
_PE_SUFFIXES = (".dll", ".exe")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_ARCHIVE = re.compile(r"\.(?:tar\.gz|tgz|tar\.xz|tar\.bz2|zip|tar)$", re.IGNORECASE)


def _is_pe(path: str) -> bool:
    return path.lower().endswith(_PE_SUFFIXES)


@dataclass(frozen=True, kw_only=True)
class _FileNode:
    path: str
    sha256: str
    record: DependencyRecord
    ref: str


def file_bom_ref(path: str) -> str:
    """The bom-ref of a shipped file: ``file:<zip path>``."""
    return f"file:{path}"


def vendored_bom_ref(name: str, version: str) -> str:
    """The bom-ref of a vendored source: ``vendored:<name>@<version>``."""
    return f"vendored:{name}@{version}"


def _check_records(dependencies: Sequence[DependencyRecord]) -> list[Problem]:
    problems: list[Problem] = []
    for i, dep in enumerate(dependencies):
        field = f"dependencies[{i}:{dep.name}]"
        if dep.kind not in DEPENDENCY_KINDS:
            problems.append(
                Problem(file=CDX_WHERE, field=f"{field}.kind", message=f"unknown kind {dep.kind!r}")
            )
        if dep.group is not None and dep.group not in REDIST_GROUPS:
            problems.append(
                Problem(file=CDX_WHERE, field=f"{field}.group", message=f"unknown group {dep.group!r}")
            )
        if dep.kind == "redistributable" and dep.group is None:
            problems.append(
                Problem(file=CDX_WHERE, field=f"{field}.group", message="redistributable needs a group")
            )
        if dep.kind == "vendored" and dep.files:
            problems.append(
                Problem(file=CDX_WHERE, field=f"{field}.files", message="vendored source ships no files")
            )
        if dep.kind != "vendored" and not dep.files:
            problems.append(Problem(file=CDX_WHERE, field=f"{field}.files", message="no shipped files"))
        for f in dep.files:
            if (why := zip_path_problem(f.path)) is not None:
                problems.append(Problem(file=CDX_WHERE, field=f"{field}.files[{f.path}]", message=why))
            if not _HEX64.match(f.sha256):
                problems.append(
                    Problem(
                        file=CDX_WHERE,
                        field=f"{field}.files[{f.path}].sha256",
                        message="not 64 lowercase hex",
                    )
                )
        if dep.purl is not None:
            try:
                parse_purl(dep.purl, where=f"{CDX_WHERE}: {field}")
            except InputError as exc:
                problems.extend(exc.problems)
    return problems


def _resolve_imports(
    importer: str, imports: Sequence[str], by_name: Mapping[str, list[str]]
) -> tuple[list[str], list[Problem]]:
    """Shipped files that ``importer``'s imports name (lowercased basenames); same directory first."""
    found: list[str] = []
    problems: list[Problem] = []
    here = posixpath.dirname(importer)
    for name in imports:
        candidates = [p for p in by_name.get(name, []) if p != importer]
        if not candidates:
            continue  # a system DLL (kernel32.dll, api-ms-win-*) or one not shipped: not ours to list
        local = [p for p in candidates if posixpath.dirname(p) == here]
        if len(local) == 1:
            found.append(local[0])
        elif len(candidates) == 1:
            found.append(candidates[0])
        else:
            problems.append(
                Problem(
                    file=importer,
                    field="imports",
                    message=f"{name} is ambiguous: shipped as {', '.join(sorted(candidates))}",
                )
            )
    return sorted(set(found)), problems


@dataclass(frozen=True, kw_only=True)
class _Plan:
    """Everything the document says, decided before any library object is built."""

    licences: Mapping[str, str]  # licence text as given → normalized expression
    nodes: tuple[_FileNode, ...]
    vendored: tuple[tuple[str, DependencyRecord], ...]
    graph: Mapping[str, tuple[str, ...]]  # bom-ref → sorted bom-refs it depends on (root included)
    root_ref: str
    tool_ref: str


def _normalize_licences(
    dependencies: Sequence[DependencyRecord], component_license: str | None
) -> tuple[dict[str, str], list[Problem]]:
    wanted = [(dep.license, f"dependencies[{i}:{dep.name}].license") for i, dep in enumerate(dependencies)]
    wanted.append((component_license, "component_license"))
    out: dict[str, str] = {}
    problems: list[Problem] = []
    for text, field in wanted:
        if text is None or text in out:
            continue
        try:
            out[text] = normalize_license_expression(text, where=CDX_WHERE, field=field).expression
        except InputError as exc:
            problems.extend(exc.problems)
    return out, problems


def _plan(
    *,
    dependencies: Sequence[DependencyRecord],
    pe_infos: Mapping[str, PeInfo],
    component_license: str | None,
    root_ref: str,
    tool_ref: str,
) -> _Plan:
    """Check the records, assign bom-refs, cross-check PE versions and derive the graph (pure)."""
    problems = _check_records(dependencies)
    licences, more = _normalize_licences(dependencies, component_license)
    problems += more
    if problems:
        raise InputError(problems=problems)

    nodes: list[_FileNode] = []
    vendored: list[tuple[str, DependencyRecord]] = []
    owners: dict[str, str] = {}
    integrity: list[Problem] = []

    def claim(ref: str, owner: str) -> None:
        if ref in owners:
            message = f"bom-ref {ref!r} is also used by {owners[ref]}"
            integrity.append(Problem(file=CDX_WHERE, field=owner, message=message))
        else:
            owners[ref] = owner

    claim(root_ref, "metadata.component")
    claim(tool_ref, "metadata.tools")
    for i, dep in enumerate(dependencies):
        owner = f"dependencies[{i}:{dep.name}]"
        if dep.kind == "vendored":
            ref = vendored_bom_ref(dep.name, dep.version)
            claim(ref, owner)
            vendored.append((ref, dep))
            continue
        for f in dep.files:
            ref = file_bom_ref(f.path)
            claim(ref, f"{owner}.files[{f.path}]")
            nodes.append(_FileNode(path=f.path, sha256=f.sha256, record=dep, ref=ref))
            pe = pe_infos.get(f.path)
            if not _is_pe(f.path):
                continue
            if pe is None:
                message = "shipped PE file has no PE information"
                problems.append(Problem(file=f.path, field="pe_infos", message=message))
            elif pe_component_version(pe, group=dep.group) is None:
                log.warning("%s has no usable version resource: its version is left unknown", f.path)
            elif dep.kind == "redistributable":
                integrity += check_pe_against_lock(
                    path=f.path, group=dep.group, lock_version=dep.version, pe=pe, stand_in=dep.stand_in
                )
    message = "PE file is not a shipped file of any dependency"
    problems += [
        Problem(file=path, field="pe_infos", message=message)
        for path in sorted(set(pe_infos) - {n.path for n in nodes})
    ]
    if problems:
        raise InputError(problems=problems)

    # Edges from import tables; engine files also depend on the vendored sources compiled into them.
    by_name: dict[str, list[str]] = {}
    for node in nodes:
        by_name.setdefault(posixpath.basename(node.path).lower(), []).append(node.path)
    vendored_refs = [ref for ref, _ in vendored]
    graph: dict[str, set[str]] = {ref: set() for ref in vendored_refs}
    for node in nodes:
        pe = pe_infos.get(node.path)
        targets, more = _resolve_imports(node.path, pe.all_imports if pe else (), by_name)
        integrity += more
        graph[node.ref] = {file_bom_ref(t) for t in targets}
        if node.record.kind == "engine":
            graph[node.ref].update(vendored_refs)
    if integrity:
        raise IntegrityError(problems=integrity)

    # The package depends on the engine files (or, without any, on the vendored sources) and on
    # every shipped file no import reaches (e.g. a DLL loaded by name at run time).
    engine_refs = {n.ref for n in nodes if n.record.kind == "engine"}
    top = engine_refs if engine_refs else set(vendored_refs)
    top |= _unreached_roots(top, [n.ref for n in nodes], graph)
    graph[root_ref] = top
    return _Plan(
        licences=licences,
        nodes=tuple(nodes),
        vendored=tuple(vendored),
        graph={ref: tuple(sorted(targets)) for ref, targets in sorted(graph.items())},
        root_ref=root_ref,
        tool_ref=tool_ref,
    )


def cyclonedx_dependency_inventory(
    *,
    component_name: str,
    component_version: str,
    component_purl: str | None,
    supplier: str,
    dependencies: Sequence[DependencyRecord],
    pe_infos: Mapping[str, PeInfo],
    serial_identity: str,
    epoch: int,
    tool_name: str,
    tool_version: str,
    tool_vendor: str,
    component_authors: Sequence[str] = (),
    component_license: str | None = None,
    component_description: str | None = None,
) -> bytes:
    """The CycloneDX 1.6 JSON document (bytes) of a lane's resolved dependencies.

    ``dependencies`` are the resolved lock entries plus the engine files; ``pe_infos`` maps the
    zip path of every shipped ``.dll``/``.exe`` to what :func:`read_pe` found in it.
    ``serial_identity`` (e.g. ``https://example.invalid/engine/1.0.0-rc.1``) gives the serial
    number ``urn:uuid:<UUIDv5(NAMESPACE_URL, identity)>`` (C33); ``epoch`` (seconds) gives
    ``metadata.timestamp``. Metadata uses the 1.6 shapes: ``tools.components`` (tool
    ``tool_name``/``tool_version`` with ``manufacturer`` ``tool_vendor``) and ``authors`` /
    ``manufacturer`` / ``supplier`` on the component, never the deprecated ``author`` (C34).
    Shape of components and graph: see the module docstring. Output is validated with
    ``JsonStrictValidator(SchemaVersion.V1_6)``.

    Raises:
        InputError: a record is malformed (kind, group, path, hash, purl, licence), a shipped
            PE file has no entry in ``pe_infos``, or ``pe_infos`` names a file no record ships.
        IntegrityError: a redistributable's PE version disagrees with the lock version (names the
            file and both versions, see :func:`check_pe_against_lock`), two components would share
            a bom-ref, an import is ambiguous, or the schema validator reports anything.
    """
    from cyclonedx.model.bom import Bom, BomMetaData
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.contact import OrganizationalContact, OrganizationalEntity
    from cyclonedx.model.dependency import Dependency
    from cyclonedx.model.tool import ToolRepository

    plan = _plan(
        dependencies=dependencies,
        pe_infos=pe_infos,
        component_license=component_license,
        root_ref=f"package:{component_name}@{component_version}",
        tool_ref=f"tool:{tool_name}@{tool_version}",
    )
    components = {ref: _vendored_component(ref, dep, plan.licences) for ref, dep in plan.vendored}
    components.update(
        {node.ref: _file_component(node, pe_infos.get(node.path), plan.licences) for node in plan.nodes}
    )
    root = Component(
        type=ComponentType.APPLICATION,
        name=component_name,
        version=component_version,
        bom_ref=plan.root_ref,
        purl=parse_purl(component_purl, where=f"{CDX_WHERE}: component_purl") if component_purl else None,
        supplier=OrganizationalEntity(name=supplier),
        manufacturer=OrganizationalEntity(name=supplier),
        authors=[OrganizationalContact(name=a) for a in component_authors],
        licenses=_licences(component_license, plan.licences),
        description=component_description,
    )
    tool = Component(
        type=ComponentType.APPLICATION,
        name=tool_name,
        version=tool_version,
        bom_ref=plan.tool_ref,
        manufacturer=OrganizationalEntity(name=tool_vendor),
    )
    bom = Bom(
        serial_number=uuid5_url(serial_identity),
        metadata=BomMetaData(
            component=root,
            timestamp=datetime_utc(epoch),
            tools=ToolRepository(components=[tool]),
            manufacturer=OrganizationalEntity(name=supplier),
            supplier=OrganizationalEntity(name=supplier),
        ),
    )
    bom.components.update(components.values())
    everything = {**components, plan.root_ref: root}
    # The whole graph at once: ``Bom.register_dependency`` scans every registered dependency per
    # call (O(n) each, O(n^2) in all). ``plan.graph`` has every component as a key, so this is
    # the set register_dependency would build.
    bom.dependencies = [
        Dependency(
            ref=everything[ref].bom_ref, dependencies=[Dependency(ref=everything[t].bom_ref) for t in targets]
        )
        for ref, targets in plan.graph.items()
    ]
    text: str = _json_v1_6()(bom).output_as_string(indent=2)
    data = (text.rstrip("\n") + "\n").encode("utf-8")
    messages = validate_cyclonedx_bytes(data)
    if messages:
        raise IntegrityError(problems=[Problem(file=CDX_WHERE, message=m) for m in messages])
    return data


@functools.cache
def _json_v1_6() -> type[Any]:
    """``JsonV1Dot6`` whose ``generate`` skips the library's two quadratic passes.

    The library's ``generate`` first calls ``Bom.validate()`` (``register_dependency`` for every
    component, each a scan of all dependencies) and serializes inside a ``BomRefDiscriminator``
    (a list-membership test per bom-ref). Both are O(n^2) in the number of components and change
    nothing for a plan of this module: every bom-ref is explicit and checked unique by
    :func:`_plan`, and every component already has its dependency entry. The rest of ``generate``
    (the flat-merged graph, the 1.6 view, the schema header) is the library's own code path;
    ``tests/test_cyclonedx.py`` checks the bytes equal the library's ``JsonV1Dot6`` output.
    """
    from cyclonedx.contrib.bom.utils import BomDependencyGraphFlatMerger
    from cyclonedx.output.json import JsonV1Dot6
    from cyclonedx.schema.schema import SCHEMA_VERSIONS

    class LinearJsonV1Dot6(JsonV1Dot6):
        def generate(self, force_regeneration: bool = False) -> None:
            if self.generated and not force_regeneration:
                return
            bom = self.get_bom()
            with BomDependencyGraphFlatMerger(bom):
                view = SCHEMA_VERSIONS[self.schema_version_enum]
                bom_json: dict[str, Any] = json.loads(bom.as_json(view_=view))  # type: ignore[attr-defined]
            bom_json.update(
                {
                    "$schema": self._get_schema_uri(),
                    "bomFormat": "CycloneDX",
                    "specVersion": self.schema_version.to_version(),
                }
            )
            self._bom_json = bom_json
            self.generated = True

    return LinearJsonV1Dot6


def _licences(text: str | None, normalized: Mapping[str, str]) -> list[Any]:
    from cyclonedx.model.license import LicenseExpression

    return [] if text is None else [LicenseExpression(normalized[text])]


def _vendored_component(ref: str, dep: DependencyRecord, licences: Mapping[str, str]) -> Any:
    from cyclonedx.model import ExternalReference, ExternalReferenceType, Property, XsUri
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.contact import OrganizationalEntity

    ext = []
    if dep.source_url:
        archive = _ARCHIVE.search(dep.source_url)
        kind = ExternalReferenceType.SOURCE_DISTRIBUTION if archive else ExternalReferenceType.VCS
        ext.append(ExternalReference(type=kind, url=XsUri(dep.source_url)))
    if dep.homepage:
        ext.append(ExternalReference(type=ExternalReferenceType.WEBSITE, url=XsUri(dep.homepage)))
    props = [Property(name="ninfer:kind", value="vendored")]
    if dep.commit:
        props.append(Property(name="ninfer:commit", value=dep.commit))
    props.append(Property(name=PROP_STAND_IN, value="true" if dep.stand_in else "false"))
    return Component(
        type=ComponentType.LIBRARY,
        name=dep.name,
        version=dep.version,
        bom_ref=ref,
        purl=parse_purl(dep.purl) if dep.purl else None,
        supplier=OrganizationalEntity(name=dep.supplier) if dep.supplier else None,
        licenses=_licences(dep.license, licences),
        description=_description(dep),
        external_references=ext,
        properties=props,
    )


def _file_component(node: _FileNode, pe: PeInfo | None, licences: Mapping[str, str]) -> Any:
    from cyclonedx.model import (
        ExternalReference,
        ExternalReferenceType,
        HashAlgorithm,
        HashType,
        Property,
        XsUri,
    )
    from cyclonedx.model.component import Component
    from cyclonedx.model.contact import OrganizationalEntity

    dep = node.record
    # A PE image carries the version its own resource names, or none at all: never the package's
    # or the component tag in its place (issue 8 item 5). Other files of a dependency: its version.
    version = pe_component_version(pe, group=dep.group) if pe is not None else dep.version
    values = [
        ("ninfer:kind", dep.kind),
        ("ninfer:package", dep.name),
        ("ninfer:package-version", dep.version),
        (PROP_PATH, node.path),
        (PROP_STAND_IN, "true" if dep.stand_in else "false"),
        ("ninfer:group", dep.group),
        ("ninfer:pe-machine", pe.machine if pe else None),
        ("ninfer:pe-file-version", pe.file_version if pe else None),
        ("ninfer:cuda-version", pe.cuda_version if pe else None),
        ("ninfer:commit", dep.commit),
    ]
    if pe is not None:
        # The raw version strings as read, so a consumer sees what the file says about itself.
        prefix = f"ninfer:file:{node.path}:pe"
        values += [(f"{prefix}:{key}", value) for key, value in sorted(pe.version_strings.items())]
        if pe.file_version is None:
            values.append((f"{prefix}-version-resource", "none"))
    ext = []
    if dep.homepage:
        ext.append(ExternalReference(type=ExternalReferenceType.WEBSITE, url=XsUri(dep.homepage)))
    return Component(
        type=_component_type(node.path),
        name=posixpath.basename(node.path),
        version=version,
        bom_ref=node.ref,
        purl=parse_purl(dep.purl) if dep.purl else None,
        supplier=OrganizationalEntity(name=dep.supplier) if dep.supplier else None,
        licenses=_licences(dep.license, licences),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=node.sha256)],
        description=_description(dep),
        external_references=ext,
        properties=[Property(name=k, value=v) for k, v in values if v],
    )


def _component_type(path: str) -> Any:
    from cyclonedx.model.component import ComponentType

    lower = path.lower()
    if lower.endswith(".exe"):
        return ComponentType.APPLICATION
    if lower.endswith(_PE_SUFFIXES):
        return ComponentType.LIBRARY
    return ComponentType.FILE  # a shipped data/licence file of a dependency


def _description(dep: DependencyRecord) -> str | None:
    if dep.stand_in:
        prefix = f"STAND-IN, not the real {dep.name} {dep.version}: a placeholder file for samples and tests."
        # A description that already says so (the lock's own wording) is not repeated.
        if dep.description and "stand-in" not in dep.description.lower():
            return f"{prefix} {dep.description}"
        return prefix
    return dep.description


def _unreached_roots(top: set[str], refs: Sequence[str], graph: Mapping[str, set[str]]) -> set[str]:
    """Files no path from ``top`` reaches, reduced to those nothing else unreached imports.

    A cycle among unreached files contributes its smallest bom-ref, so the result is
    deterministic and every file ends up reachable from the package.
    """
    roots: set[str] = set()
    while True:
        reached = _reachable(top | roots, graph)
        rest = sorted(r for r in refs if r not in reached)
        if not rest:
            return roots
        imported = {t for r in rest for t in graph.get(r, set()) if t != r}
        heads = [r for r in rest if r not in imported]
        roots.update(heads if heads else rest[:1])


def _reachable(start: set[str], graph: Mapping[str, set[str]]) -> set[str]:
    seen = set(start)
    todo = list(start)
    while todo:
        for target in graph.get(todo.pop(), set()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


@functools.cache
def _strict_validator() -> Any:
    """The strict CycloneDX 1.6 JSON schema validator, built once per process.

    The same schema, referenced schemas and Draft 7 rules as the library's
    ``JsonStrictValidator(SchemaVersion.V1_6)`` (files bundled in cyclonedx-python-lib 11.12),
    with jsonschema's format checkers, except that ``iri``/``iri-reference`` are checked by the
    RFC 3987 regular expressions of :mod:`ninfer_release.sbom._iri`: jsonschema's own ones
    compile 39 lark grammars at import (seconds), which would dominate ``verify`` (DESIGN §11).
    """
    import_jsonschema_lean()
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.schema._res import BOM_JSON_STRICT, CRYPTOGRAPHY_DEFS, JSF, SPDX_JSON
    from jsonschema import FormatChecker  # type: ignore[import-untyped]
    from jsonschema.validators import Draft7Validator, extend  # type: ignore[import-untyped]
    from referencing import Registry
    from referencing.jsonschema import DRAFT7

    def load(path: str) -> Any:
        return json.loads(Path(path).read_bytes())

    prefix = "http://cyclonedx.org/schema/"
    registry: Registry[Any] = Registry().with_resources(
        [
            (f"{prefix}spdx.SNAPSHOT.schema.json", DRAFT7.create_resource(load(SPDX_JSON))),
            (
                f"{prefix}cryptography-defs.SNAPSHOT.schema.json",
                DRAFT7.create_resource(load(CRYPTOGRAPHY_DEFS)),
            ),
            (f"{prefix}jsf-0.82.SNAPSHOT.schema.json", DRAFT7.create_resource(load(JSF))),
        ]
    )
    formats = FormatChecker(formats=())
    formats.checkers = dict(Draft7Validator.FORMAT_CHECKER.checkers)
    missing = {"date-time", "idn-email", "uri"} - set(formats.checkers)
    if missing:  # rfc3339-validator / rfc3986-validator come with cyclonedx-python-lib[json-validation]
        raise RuntimeError(
            f"jsonschema has no checker for the formats {sorted(missing)}; validation would be weaker"
        )
    formats.checkers["iri"] = (_checked_str(is_iri), ValueError)
    formats.checkers["iri-reference"] = (_checked_str(is_iri_reference), ValueError)
    schema_path = BOM_JSON_STRICT[SchemaVersion.V1_6]
    assert schema_path is not None, "cyclonedx-python-lib ships the 1.6 strict schema"
    schema = load(schema_path)
    validator = extend(Draft7Validator, {"uniqueItems": _unique_items})
    return validator(schema, registry=registry, format_checker=formats)


def _frozen(value: Any) -> Any:
    """A hashable form of a JSON value with jsonschema's equality (``_utils.equal``).

    ``true`` is not ``1`` and ``false`` is not ``0``; ``1`` equals ``1.0``; objects compare by
    key/value sets and arrays element by element, recursively.
    """
    if value is True or value is False:
        return ("bool", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, dict):
        return ("object", frozenset((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("array", tuple(_frozen(v) for v in value))
    return ("other", value)  # numbers and null: Python equality and hashing agree (1 == 1.0)


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Any:
    """Draft 7 ``uniqueItems`` in O(n) (one hash per item).

    jsonschema's own keyword sorts the items and falls back to comparing every pair when they
    are not sortable (objects are not): O(n^2) over the 10k components of a large package.
    Same verdict and message as jsonschema's ``_keywords.uniqueItems``.
    """
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]

    if unique and validator.is_type(instance, "array"):
        seen: set[Any] = set()
        for item in instance:
            key = _frozen(item)
            if key in seen:
                yield ValidationError(f"{instance!r} has non-unique elements")
                return
            seen.add(key)


def _checked_str(check: Callable[[str], bool]) -> Callable[[object], bool]:
    """A jsonschema format function: non-strings pass (the ``type`` keyword judges them)."""

    def fn(instance: object) -> bool:
        return not isinstance(instance, str) or check(instance)

    return fn


def prewarm_validators() -> threading.Thread:
    """Start (and return) a daemon thread that loads the SBOM validators ahead of use.

    Loading the CycloneDX 1.6 validator (jsonschema, referencing, the schema files; see
    :func:`_strict_validator`) and spdx-tools' parser, validators and licence list take about half
    a second of CPU; a verifier that
    hashes large files first can overlap that work (hashlib releases the GIL). Joining the thread
    is optional: the validators wait for the import lock if they are needed earlier.
    """

    def load() -> None:
        # The imports are the work: spdx-tools' parser, licence list and the element validators
        # the linear validator calls (beartype-decorated models).
        from spdx_tools.common.spdx_licensing import spdx_licensing  # noqa: F401
        from spdx_tools.spdx.parser.jsonlikedict.json_like_dict_parser import JsonLikeDictParser  # noqa: F401

        from ninfer_release.sbom._spdx_validate import prewarm_imports

        prewarm_imports()

        _strict_validator()

    thread = threading.Thread(target=load, name="ninfer-sbom-prewarm", daemon=True)
    thread.start()
    return thread


def validate_cyclonedx_bytes(data: bytes) -> list[str]:
    """Messages for a CycloneDX 1.6 JSON document (empty = valid).

    Validates against the strict CycloneDX 1.6 JSON schema (the library's, with its format
    checks; see :func:`_strict_validator`), reporting the first schema error as
    ``schema: <json path>: <message>``, and checks what the schema does not: ``specVersion`` 1.6,
    a ``urn:uuid:`` serial number (C33), bom-refs unique across components (the library would
    rename a duplicate), every ``dependsOn`` naming a known bom-ref, and exactly one final LF.
    """
    try:
        text = data.decode("utf-8")
        raw = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [f"not UTF-8 JSON: {exc}"]
    out: list[str] = []
    error = next(iter(_strict_validator().iter_errors(raw)), None)
    if error is not None:
        where = error.json_path
        out.append(f"schema: {where}: {error.message}"[:500])
    if not isinstance(raw, dict):
        return [*out, "top level is not a JSON object"]
    if raw.get("specVersion") != "1.6":
        out.append(f"specVersion is {raw.get('specVersion')!r}, not '1.6'")
    serial = str(raw.get("serialNumber", ""))
    if not re.match(r"^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", serial):
        out.append(f"serialNumber {serial!r} is not a lowercase urn:uuid")
    refs: list[str] = []
    metadata = raw.get("metadata") or {}
    if isinstance(metadata.get("component"), dict) and "bom-ref" in metadata["component"]:
        refs.append(str(metadata["component"]["bom-ref"]))
    for c in _walk_components(raw.get("components") or []):
        if "bom-ref" in c:
            refs.append(str(c["bom-ref"]))
        else:
            out.append(f"component {c.get('name')!r} has no bom-ref")
    duplicates = sorted(r for r, n in Counter(refs).items() if n > 1)
    out.extend(f"bom-ref {r!r} is used more than once" for r in duplicates)
    known = set(refs)
    for dep in raw.get("dependencies") or []:
        for target in [dep.get("ref"), *(dep.get("dependsOn") or [])]:
            if target not in known:
                out.append(f"dependency names unknown bom-ref {target!r}")
    if not data.endswith(b"\n") or data.endswith(b"\n\n"):
        out.append("document must end with exactly one LF")
    return out


def _walk_components(components: list[Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for c in components:
        if isinstance(c, dict):
            found.append(c)
            found.extend(_walk_components(c.get("components") or []))
    return found


def parse_cyclonedx_hashes(data: bytes) -> dict[str, str]:
    """Shipped zip path → SHA-256 of every component that records a ``ninfer:path`` property.

    Components without that property but with a SHA-256 are keyed by their bom-ref instead.

    Raises:
        IntegrityError: the bytes are not JSON, a path is listed twice, or a component with a
            path has no SHA-256.
    """
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IntegrityError(problems=[Problem(file=CDX_WHERE, message=f"not UTF-8 JSON: {exc}")]) from None
    out: dict[str, str] = {}
    problems: list[Problem] = []
    for c in _walk_components(raw.get("components") or [] if isinstance(raw, dict) else []):
        props = {
            str(p.get("name")): str(p.get("value")) for p in c.get("properties") or [] if isinstance(p, dict)
        }
        sha = next(
            (str(h.get("content")).lower() for h in c.get("hashes") or [] if h.get("alg") == "SHA-256"),
            None,
        )
        key = props.get(PROP_PATH) or (str(c["bom-ref"]) if sha is not None and "bom-ref" in c else None)
        if key is None:
            continue
        if sha is None:
            problems.append(Problem(file=CDX_WHERE, field=key, message="component has no SHA-256"))
            continue
        if key in out:
            problems.append(Problem(file=CDX_WHERE, field=key, message="listed twice"))
        out[key] = sha
    if problems:
        raise IntegrityError(problems=problems)
    return out


def _props(component: Mapping[str, Any]) -> dict[str, str]:
    return {str(p.get("name")): str(p.get("value")) for p in component.get("properties") or []}


def cross_check_cyclonedx(
    data: bytes, members: Mapping[str, str], *, where: str = CDX_WHERE
) -> list[Problem]:
    """Problems between a CycloneDX document and the zip's members (empty = consistent).

    ``members`` maps zip member path → SHA-256. Every component with a ``ninfer:path`` must name
    a member with that SHA-256; components keyed only by bom-ref are not zip files and are skipped.

    Raises:
        IntegrityError: the bytes are not JSON, or a component with a path has no SHA-256.
    """
    hashes = parse_cyclonedx_hashes(data)
    raw = json.loads(data)
    paths = {_props(c).get(PROP_PATH) for c in _walk_components(raw.get("components") or [])} - {None}
    problems: list[Problem] = []
    for key in sorted(str(p) for p in paths):
        if key not in members:
            problems.append(Problem(file=where, field=key, message="component file is not in the zip"))
        elif members[key].lower() != hashes[key]:
            problems.append(Problem(file=where, field=key, message="SHA-256 differs from the zip member"))
    return problems
