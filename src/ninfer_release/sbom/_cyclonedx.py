"""CycloneDX 1.6 JSON dependency inventory of a lane (cyclonedx-python-lib 11.12).

Components, one per package identity (purl), ``version`` always the purl's version:

* ``vendored:<name>@<version>`` — a vendored source compiled into the engine (type library):
  purl, supplier, licence, source URL as a VCS / source-distribution external reference, commit.
* ``engine:<name>@<version>`` / ``redistributable:<name>@<version>`` — a package whose files are
  shipped: purl, CPE (where ``sbom/catalog.json`` maps vendor and product), supplier, licence,
  and one ``evidence.occurrences`` entry per shipped file (``location`` = the zip path,
  ``additionalContext`` = ``sha256:<hex>``, ``bom-ref`` = ``file:<zip path>``). What each PE file
  says about itself is kept as properties ``ninfer:file:<path>:pe:<Key>`` (raw version strings),
  ``…:pe-file-version``, ``…:pe-machine``, ``…:cuda-version``, ``…:pe-version-resource=none``.
* ``metadata.component`` — the package (the zip): its SHA-256, its licence (every licence inside
  it, ANDed) and an occurrence for every zip member no dependency ships (config, profile, NOTICE,
  licence texts, the SPDX document), so every member appears exactly once.

Dependency graph (between packages): a package depends on the packages whose shipped files its PE
files import or delay-import (Windows loader: same directory first); the engine depends on the
vendored sources compiled into it; the root depends on the engine and on every package no import
reaches. ``compositions``: the root's assemblies are ``complete`` (every zip member listed); a
package's dependencies are ``complete`` when every DLL its files import is shipped, else
``incomplete`` (system DLLs such as ``kernel32.dll`` are not listed); vendored sources ``unknown``.
``metadata.lifecycles`` is ``build``.

Determinism: ``serialNumber`` is ``urn:uuid:`` + UUIDv5(NAMESPACE_URL, serial identity) (C33),
``metadata.timestamp`` is the source-date epoch, every bom-ref is explicit and checked unique here
(the library would silently rename a duplicate), and the output is the library's ``JsonV1Dot6``
text (sorted keys; ``compositions`` added after, which the library does not model) with one LF.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import posixpath
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import strictjson
from ninfer_release.digests import is_sha256_hex
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.jsonbytes import LazyArray, MadeOnRead, dump_indented_into, dumps_indented_bytes
from ninfer_release.reproducible import datetime_utc
from ninfer_release.sbom._cdx_fast import schema_is_clean, schema_is_clean_own
from ninfer_release.sbom._ids import uuid5_url
from ninfer_release.sbom._iri import import_jsonschema_lean, is_iri, is_iri_reference
from ninfer_release.sbom._license import combine_licenses, normalize_license_expression
from ninfer_release.sbom._pe import check_pe_against_lock, pe_component_version, versions_equal
from ninfer_release.sbom._purl import parse_purl
from ninfer_release.sbom._records import (
    DEPENDENCY_KINDS,
    REDIST_GROUPS,
    DependencyRecord,
    Outcome,
    PeInfo,
    ShippedFile,
    attempt,
    stands_in_for,
)
from ninfer_release.sbom._spdx import zip_path_problem

log = logging.getLogger(__name__)
CDX_WHERE = "cyclonedx"
PROP_PATH = "ninfer:path"  # legacy (one component per file, with its hash): verify now refuses such hashes
PROP_STAND_IN = "ninfer:stand-in"
SHA256_CONTEXT = "sha256:"
_PE_SUFFIXES = (".dll", ".exe")
_ARCHIVE = re.compile(r"\.(?:tar\.gz|tgz|tar\.xz|tar\.bz2|zip|tar)$", re.IGNORECASE)


def _is_pe(path: str) -> bool:
    return path.lower().endswith(_PE_SUFFIXES)


def file_bom_ref(path: str) -> str:
    """The bom-ref of a shipped file's evidence occurrence: ``file:<zip path>``."""
    return f"file:{path}"


def vendored_bom_ref(name: str, version: str) -> str:
    """The bom-ref of a vendored source: ``vendored:<name>@<version>``."""
    return f"vendored:{name}@{version}"


def package_bom_ref(dep: DependencyRecord) -> str:
    """The bom-ref of a dependency: ``<kind>:<name>@<version>`` (``vendored:…``, ``engine:…``, …)."""
    return f"{dep.kind}:{dep.name}@{dep.version}"


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
        problems += _file_problems(dep.files, f"{field}.files")
        if dep.purl is not None:
            try:
                parse_purl(dep.purl, where=f"{CDX_WHERE}: {field}")
            except InputError as exc:
                problems.extend(exc.problems)
    return problems


def _file_problems(files: Sequence[ShippedFile], field: str) -> list[Problem]:
    problems: list[Problem] = []
    for f in files:
        if (why := zip_path_problem(f.path)) is not None:
            problems.append(Problem(file=CDX_WHERE, field=f"{field}[{f.path}]", message=why))
        if not is_sha256_hex(f.sha256):
            problems.append(
                Problem(file=CDX_WHERE, field=f"{field}[{f.path}].sha256", message="not 64 lowercase hex")
            )
    return problems


@dataclass(frozen=True, kw_only=True)
class _Imports:
    """What one PE file's imports resolve to."""

    shipped: tuple[str, ...]  # zip paths of the shipped files imported (sorted)
    unshipped: tuple[str, ...]  # imported names no shipped file provides, e.g. system DLLs (sorted)
    problems: tuple[Problem, ...]  # ambiguous names


def _resolve_imports(importer: str, imports: Sequence[str], by_name: Mapping[str, list[str]]) -> _Imports:
    """Shipped files ``importer``'s imports name (lowercased basenames; same directory first),
    the imported names no shipped file provides (system DLLs), and ambiguity problems."""
    found: list[str] = []
    unshipped: list[str] = []
    problems: list[Problem] = []
    here = posixpath.dirname(importer)
    for name in imports:
        candidates = [p for p in by_name.get(name, []) if p != importer]
        if not candidates:
            unshipped.append(name)  # a system DLL (kernel32.dll, api-ms-win-*) or one not shipped
            continue
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
    return _Imports(
        shipped=tuple(sorted(set(found))), unshipped=tuple(sorted(set(unshipped))), problems=tuple(problems)
    )


@dataclass(frozen=True, kw_only=True)
class _Node:
    """One package component: its record, bom-ref, version (the purl's) and shipped files."""

    ref: str
    record: DependencyRecord
    version: str


@dataclass(frozen=True, kw_only=True)
class _Plan:
    """Everything the document says, decided before any library object is built."""

    licences: Mapping[str, str]  # licence text as given → normalized expression
    nodes: tuple[_Node, ...]
    graph: Mapping[str, tuple[str, ...]]  # bom-ref → sorted bom-refs it depends on (root included)
    completeness: Mapping[str, str]  # bom-ref → aggregate of its dependencies
    root_files: tuple[ShippedFile, ...]  # zip members no dependency ships
    root_ref: str
    tool_ref: str
    root_license: str | None


def _normalize_licences(
    dependencies: Sequence[DependencyRecord], component_license: str | None, problems: list[Problem]
) -> dict[str, str]:
    """Licence text as given → normalized expression (C29), once per text; bad ones go to ``problems``."""
    wanted = [(dep.license, f"dependencies[{i}:{dep.name}].license") for i, dep in enumerate(dependencies)]
    wanted.append((component_license, "component_license"))
    out: dict[str, str] = {}
    for text, field in wanted:
        if text is None or text in out:
            continue
        try:
            out[text] = normalize_license_expression(text, where=CDX_WHERE, field=field).expression
        except InputError as exc:
            problems.extend(exc.problems)
    return out


def _purl_version(dep: DependencyRecord) -> str:
    """The component version: the purl's version when the purl names one, else the record's."""
    if dep.purl is not None:
        version = parse_purl(dep.purl).version
        if version:
            return str(version)
    return dep.version


class _Ledger:
    """What :func:`_plan` has seen so far: bom-refs, purls and shipped files by owner, and the
    problems found (``problems``: malformed input, exit 4; ``integrity``: contradictions, exit 5)."""

    def __init__(self) -> None:
        self.owners: dict[str, str] = {}
        self.purls: dict[str, str] = {}
        self.owner_of_file: dict[str, str] = {}
        self.problems: list[Problem] = []
        self.integrity: list[Problem] = []

    def claim(self, ref: str, owner: str) -> None:
        """Take bom-ref ``ref`` for ``owner``; a second owner is a problem (the library would rename it)."""
        if ref in self.owners:
            message = f"bom-ref {ref!r} is also used by {self.owners[ref]}"
            self.integrity.append(Problem(file=CDX_WHERE, field=owner, message=message))
        else:
            self.owners[ref] = owner

    def claim_purl(self, purl: str, owner: str) -> None:
        """One component per package identity: a purl (canonical form) names one record."""
        key = str(parse_purl(purl).to_string())
        if key in self.purls:
            message = f"purl {purl!r} is also the purl of {self.purls[key]}"
            self.integrity.append(Problem(file=CDX_WHERE, field=f"{owner}.purl", message=message))
        self.purls.setdefault(key, owner)

    def claim_file(self, path: str, owner: str) -> None:
        """A shipped file is evidence of one component, under bom-ref ``file:<path>``."""
        if path in self.owner_of_file:
            message = f"also shipped by {self.owner_of_file[path]}; a file is evidence of one component"
            self.integrity.append(Problem(file=path, field=f"{owner}.files", message=message))
        self.owner_of_file.setdefault(path, owner)
        self.claim(file_bom_ref(path), f"{owner}.files[{path}]")

    def check_pe(self, path: str, dep: DependencyRecord, pe_infos: Mapping[str, PeInfo]) -> None:
        """A shipped PE file needs its PE information; a redistributable's must match the lock."""
        if not _is_pe(path):
            return
        pe = pe_infos.get(path)
        if pe is None:
            self.problems.append(
                Problem(file=path, field="pe_infos", message="shipped PE file has no PE information")
            )
            return
        if pe_component_version(pe, group=dep.group) is None:
            log.warning("%s has no usable version resource: its version is left unknown", path)
        if dep.kind == "redistributable":
            _warn_lock_version(path, dep, pe)
            self.integrity += check_pe_against_lock(
                path=path, group=dep.group, lock_version=dep.version, pe=pe, stand_in=dep.stand_in
            )


def _warn_lock_version(path: str, dep: DependencyRecord, pe: PeInfo) -> None:
    """A warning naming both when the lock version is not the file's fixed-info FileVersion where
    the group's rule accepts that (``crt``: only major.minor must agree; issue 35 item 2)."""
    if dep.group == "crt" and pe.file_version and not versions_equal(pe.file_version, dep.version):
        log.warning(
            "%s: lock version %s (package %s) differs from the file's FileVersion %s",
            path,
            dep.version,
            dep.name,
            pe.file_version,
        )


def _check_plan_inputs(
    dependencies: Sequence[DependencyRecord],
    package_files: Sequence[ShippedFile] | None,
    component_license: str | None,
) -> dict[str, str]:
    """The records' own checks; returns the normalized licences (text as given → expression).

    Raises:
        InputError: every malformed record, file or licence at once.
    """
    problems = _check_records(dependencies)
    problems += _file_problems(package_files or (), "package_files")
    licences = _normalize_licences(dependencies, component_license, problems)
    if problems:
        raise InputError(problems=problems)
    return licences


def _claim_nodes(
    dependencies: Sequence[DependencyRecord], pe_infos: Mapping[str, PeInfo], ledger: _Ledger
) -> list[_Node]:
    """One node per record (bom-ref ``vendored:…`` or ``<kind>:…``), its purl and files claimed."""
    nodes: list[_Node] = []
    for i, dep in enumerate(dependencies):
        owner = f"dependencies[{i}:{dep.name}]"
        ref = package_bom_ref(dep) if dep.kind != "vendored" else vendored_bom_ref(dep.name, dep.version)
        ledger.claim(ref, owner)
        if dep.purl is not None:
            ledger.claim_purl(dep.purl, owner)
        nodes.append(_Node(ref=ref, record=dep, version=_purl_version(dep)))
        for f in dep.files:
            ledger.claim_file(f.path, owner)
            ledger.check_pe(f.path, dep, pe_infos)
    return nodes


def _root_files(
    package_files: Sequence[ShippedFile] | None, shipped: Mapping[str, str], ledger: _Ledger
) -> list[ShippedFile]:
    """The package members no dependency ships (path order); every shipped file must be a member."""
    if package_files is None:
        return []
    members = {f.path: f.sha256 for f in package_files}
    for path, sha in sorted(shipped.items()):
        if members.get(path) != sha:
            why = "is not a package member" if path not in members else "has another SHA-256 in the package"
            ledger.integrity.append(Problem(file=path, field="package_files", message=f"shipped file {why}"))
    root_files: list[ShippedFile] = []
    for f in sorted(package_files, key=lambda f: f.path):
        if f.path not in shipped:
            ledger.claim(file_bom_ref(f.path), f"package_files[{f.path}]")
            root_files.append(f)
    return root_files


def _root_targets(nodes: Sequence[_Node], graph: Mapping[str, set[str]]) -> set[str]:
    """What the root depends on: the engine (else the vendored sources) and every package no
    import reaches."""
    refs = [n.ref for n in nodes if n.record.kind != "vendored"]
    engine_refs = {n.ref for n in nodes if n.record.kind == "engine"}
    vendored_refs = {n.ref for n in nodes if n.record.kind == "vendored"}
    top = engine_refs if engine_refs else set(vendored_refs)
    return top | _unreached_roots(top, refs, graph)


def _plan(
    *,
    dependencies: Sequence[DependencyRecord],
    pe_infos: Mapping[str, PeInfo],
    component_license: str | None,
    package_files: Sequence[ShippedFile] | None,
    root_ref: str,
    tool_ref: str,
) -> _Plan:
    """Check the records, assign bom-refs, cross-check PE versions and derive the graph (pure).

    Raises:
        InputError: malformed records, missing PE information, PE information for no shipped file.
        IntegrityError: bom-ref, purl or file clashes, package-member mismatches, PE versions that
            disagree with the lock, ambiguous imports.
    """
    licences = _check_plan_inputs(dependencies, package_files, component_license)
    ledger = _Ledger()
    ledger.claim(root_ref, "metadata.component")
    ledger.claim(tool_ref, "metadata.tools")
    nodes = _claim_nodes(dependencies, pe_infos, ledger)
    shipped = {f.path: f.sha256 for n in nodes for f in n.record.files}
    message = "PE file is not a shipped file of any dependency"
    ledger.problems += [
        Problem(file=path, field="pe_infos", message=message) for path in sorted(set(pe_infos) - set(shipped))
    ]
    root_files = _root_files(package_files, shipped, ledger)
    if ledger.problems:
        raise InputError(problems=ledger.problems)
    package_graph = _package_graph(nodes, pe_infos)
    graph, completeness = package_graph.edges, package_graph.completeness
    ledger.integrity += package_graph.problems
    if ledger.integrity:
        raise IntegrityError(problems=ledger.integrity)
    graph[root_ref] = _root_targets(nodes, graph)
    completeness[root_ref] = "complete" if package_files is not None else "unknown"
    root_license = combine_licenses([licences[d.license] for d in dependencies if d.license is not None])
    return _Plan(
        licences=licences,
        nodes=tuple(nodes),
        graph={ref: tuple(sorted(targets)) for ref, targets in sorted(graph.items())},
        completeness=dict(sorted(completeness.items())),
        root_files=tuple(root_files),
        root_ref=root_ref,
        tool_ref=tool_ref,
        root_license=licences[component_license] if component_license is not None else root_license,
    )


@dataclass(frozen=True, kw_only=True)
class _Graph:
    """Package → packages edges (bom-refs), each package's completeness, ambiguous imports."""

    edges: dict[str, set[str]]
    completeness: dict[str, str]  # bom-ref → complete / incomplete / unknown
    problems: list[Problem]


def _package_graph(nodes: Sequence[_Node], pe_infos: Mapping[str, PeInfo]) -> _Graph:
    """Package → packages edges from the PE import tables, and each package's completeness."""
    owner = {f.path: n.ref for n in nodes for f in n.record.files}
    by_name: dict[str, list[str]] = {}
    for path in owner:
        by_name.setdefault(posixpath.basename(path).lower(), []).append(path)
    vendored = {n.ref for n in nodes if n.record.kind == "vendored"}
    graph: dict[str, set[str]] = {}
    completeness: dict[str, str] = {}
    problems: list[Problem] = []
    for node in nodes:
        if node.record.kind == "vendored":
            graph[node.ref] = set()
            completeness[node.ref] = "unknown"  # what a vendored source needs is not recorded
            continue
        targets: set[str] = set(vendored) if node.record.kind == "engine" else set()
        unshipped: set[str] = set()
        for f in node.record.files:
            pe = pe_infos.get(f.path)
            imports = _resolve_imports(f.path, pe.all_imports if pe else (), by_name)
            problems += imports.problems
            targets.update(owner[t] for t in imports.shipped)
            unshipped.update(imports.unshipped)
        graph[node.ref] = targets - {node.ref}
        completeness[node.ref] = "incomplete" if unshipped else "complete"
    return _Graph(edges=graph, completeness=completeness, problems=problems)


def tool_component(ref: str, *, name: str, version: str, vendor: str) -> Any:
    """``metadata.tools.components[0]``: this tool (type application, made by ``vendor``)."""
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.contact import OrganizationalEntity

    return Component(
        type=ComponentType.APPLICATION,
        name=name,
        version=version,
        bom_ref=ref,
        manufacturer=OrganizationalEntity(name=vendor),
    )


def new_bom(root: Any, *, tool: Any, serial_identity: str, epoch: int, supplier: str) -> Any:
    """A BOM with the 1.6 metadata every document here has (C33, C34): serial ``urn:uuid:`` +
    UUIDv5 of ``serial_identity``, ``timestamp`` = ``epoch`` (seconds), the tool, manufacturer and
    supplier ``supplier``, lifecycle ``build``; ``root`` is ``metadata.component``."""
    from cyclonedx.model.bom import Bom, BomMetaData
    from cyclonedx.model.contact import OrganizationalEntity
    from cyclonedx.model.lifecycle import LifecyclePhase, PredefinedLifecycle
    from cyclonedx.model.tool import ToolRepository

    return Bom(
        serial_number=uuid5_url(serial_identity),
        metadata=BomMetaData(
            component=root,
            timestamp=datetime_utc(epoch),
            tools=ToolRepository(components=[tool]),
            manufacturer=OrganizationalEntity(name=supplier),
            supplier=OrganizationalEntity(name=supplier),
            lifecycles=[PredefinedLifecycle(LifecyclePhase.BUILD)],
        ),
    )


@dataclass(frozen=True, kw_only=True)
class _RootFields:
    """What the caller says about the package (the zip), ``metadata.component``."""

    name: str
    version: str
    purl: str | None
    supplier: str
    authors: Sequence[str]
    description: str | None
    sha256: str | None
    serial_identity: str
    epoch: int


def _lane_root(fields: _RootFields, plan: _Plan, held: _HeldOccurrences | None) -> Any:
    """The package component: purl, supplier, licence, SHA-256, and the members no dependency ships.

    Raises:
        InputError: ``fields.purl`` is not a valid purl.
    """
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.contact import OrganizationalContact, OrganizationalEntity

    return Component(
        type=ComponentType.APPLICATION,
        name=fields.name,
        version=fields.version,
        bom_ref=plan.root_ref,
        purl=parse_purl(fields.purl, where=f"{CDX_WHERE}: component_purl") if fields.purl else None,
        supplier=OrganizationalEntity(name=fields.supplier),
        manufacturer=OrganizationalEntity(name=fields.supplier),
        authors=[OrganizationalContact(name=a) for a in fields.authors],
        licenses=_licence_list(plan.root_license),
        description=fields.description,
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=fields.sha256)] if fields.sha256 else [],
        evidence=_evidence(plan.root_files, held),
    )


def _set_graph(bom: Any, plan: _Plan, everything: Mapping[str, Any]) -> None:
    """``bom.dependencies`` from ``plan.graph``, all at once.

    ``Bom.register_dependency`` scans every registered dependency per call (O(n) each, O(n^2) in
    all). ``plan.graph`` has every component as a key, so this is the set register_dependency would
    build.
    """
    from cyclonedx.model.dependency import Dependency

    bom.dependencies = [
        Dependency(
            ref=everything[ref].bom_ref, dependencies=[Dependency(ref=everything[t].bom_ref) for t in targets]
        )
        for ref, targets in plan.graph.items()
    ]


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
    component_sha256: str | None = None,
    package_files: Sequence[ShippedFile] | None = None,
    into: Path | None = None,
) -> bytes:
    """The CycloneDX 1.6 JSON document (bytes) of a lane's resolved dependencies; with ``into``,
    written to that file as it is rendered, validated from it read piece by piece, and ``b""``
    returned (issue 13: with 100k files a 24 MB document, never held whole nor parsed whole).

    ``dependencies`` are the resolved lock entries plus the engine (one record per package
    identity); ``pe_infos`` maps the zip path of every shipped ``.dll``/``.exe`` to what
    :func:`read_pe` found in it. ``package_files`` (every zip member with its SHA-256) makes the
    root component list the members no dependency ships, so each member is evidence exactly once;
    ``component_sha256`` is the package's own SHA-256 (the zip), ``component_license`` its licence
    (default: every dependency's licence ANDed). ``serial_identity`` gives the serial number
    ``urn:uuid:<UUIDv5(NAMESPACE_URL, identity)>`` (C33); ``epoch`` (seconds) gives
    ``metadata.timestamp``. Metadata uses the 1.6 shapes: ``tools.components``, ``lifecycles``
    (build) and ``authors`` / ``manufacturer`` / ``supplier``, never the deprecated ``author``
    (C34). Shape of components, graph and compositions: see the module docstring. Output is
    validated with the strict CycloneDX 1.6 schema.

    Raises:
        InputError: a record is malformed (kind, group, path, hash, purl, licence), a shipped
            PE file has no entry in ``pe_infos``, or ``pe_infos`` names a file no record ships.
        IntegrityError: a redistributable's PE version disagrees with the lock version (names the
            file and both versions, see :func:`check_pe_against_lock`), two components would share
            a bom-ref or a purl, a file is shipped twice or is not the package member it claims,
            an import is ambiguous, or the schema validator reports anything.
    """
    plan = _plan(
        dependencies=dependencies,
        pe_infos=pe_infos,
        component_license=component_license,
        package_files=package_files,
        root_ref=f"package:{component_name}@{component_version}",
        tool_ref=f"tool:{tool_name}@{tool_version}",
    )
    fields = _RootFields(
        name=component_name,
        version=component_version,
        purl=component_purl,
        supplier=supplier,
        authors=component_authors,
        description=component_description,
        sha256=component_sha256,
        serial_identity=serial_identity,
        epoch=epoch,
    )
    tool = tool_component(plan.tool_ref, name=tool_name, version=tool_version, vendor=tool_vendor)
    compositions = _lane_compositions(plan.root_ref, plan.completeness)
    # The document is handed over without a name here, so it goes once written (issue 13).
    return _written_and_validated(_lane_doc(plan, fields, tool, pe_infos, compositions), into)


def _lane_doc(
    plan: _Plan,
    fields: _RootFields,
    tool: Any,
    pe_infos: Mapping[str, PeInfo],
    compositions: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """:func:`_lane_document` with its occurrences held, else (or on the reference path) without."""
    doc = None if _PER_OCCURRENCE_MODELS else _lane_document(plan, fields, tool, pe_infos, compositions, True)
    if doc is None:  # the reference path, or the library wrote an occurrence otherwise than we would
        doc = _lane_document(plan, fields, tool, pe_infos, compositions, False)
    assert doc is not None
    return doc


def _written_and_validated(doc: dict[str, Any], into: Path | None) -> bytes:
    """The document ``doc`` as bytes (``json.dumps(doc, indent=2)`` + LF), or written to ``into``
    (then ``b""``), validated from the bytes or from the file.

    Raises:
        IntegrityError: the validator reports anything.
    """
    if into is None:
        data = dumps_indented_bytes(doc, indent=2, end="\n")
        del doc
        messages = validate_cyclonedx_bytes(data)
    else:
        data = b""
        with into.open("wb") as sink:
            dump_indented_into(doc, sink, indent=2, end="\n")
        del doc
        messages = validate_cyclonedx_file(into)
    if messages:
        raise IntegrityError(problems=[Problem(file=CDX_WHERE, message=m) for m in messages])
    return data


def validate_cyclonedx_file(path: Path) -> list[str]:
    """:func:`validate_cyclonedx_bytes` of the document in ``path``, read piece by piece with the
    root's later evidence occurrences kept as their hash entries (:func:`check_cyclonedx_file`:
    the same messages), or read whole when it is not one read that way."""
    checked = check_cyclonedx_file(path, limit=path.stat().st_size)
    if checked is not None:
        return checked[0].messages
    return validate_cyclonedx_bytes(path.read_bytes())


# The reference path (tests/test_cdx_fast.py): a library Occurrence per shipped file, as the
# document was built before; the default path's bytes must equal it.
_PER_OCCURRENCE_MODELS = False


def _lane_document(
    plan: _Plan,
    fields: _RootFields,
    tool: Any,
    pe_infos: Mapping[str, PeInfo],
    compositions: Sequence[Mapping[str, Any]],
    hold: bool,
) -> dict[str, Any] | None:
    """The library's document of the plan (plus ``compositions``), parsed, for
    :func:`~ninfer_release.jsonbytes.dumps_indented_bytes` (``indent=2``, one final LF). With
    ``hold``, each evidence list is given to the library with its first occurrence only, and the
    others are added to its JSON output as it wrote the first (:class:`_HeldOccurrences`; made as
    written); ``None`` when the library wrote a first occurrence otherwise than
    :func:`_occurrence_dict` would (caller: do it without)."""
    held = _HeldOccurrences() if hold else None
    components = {node.ref: _package_component(node, pe_infos, plan.licences, held) for node in plan.nodes}
    root = _lane_root(fields, plan, held)
    bom = new_bom(
        root, tool=tool, serial_identity=fields.serial_identity, epoch=fields.epoch, supplier=fields.supplier
    )
    bom.components.update(components.values())
    _set_graph(bom, plan, {**components, plan.root_ref: root})
    doc: dict[str, Any] = json.loads(_json_v1_6()(bom).output_as_string(indent=2))
    if held is not None and not held.put_back(doc):
        return None
    doc["compositions"] = [dict(c) for c in compositions]
    return doc


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


def _lane_compositions(root: str, completeness: Mapping[str, str]) -> list[dict[str, Any]]:
    """The root's ``assemblies`` and every package's ``dependencies``, grouped by completeness."""
    by_aggregate: dict[str, list[str]] = {}
    for ref, aggregate in completeness.items():
        if ref != root:
            by_aggregate.setdefault(aggregate, []).append(ref)
    compositions: list[dict[str, Any]] = [{"aggregate": completeness[root], "assemblies": [root]}]
    compositions += [
        {"aggregate": aggregate, "dependencies": sorted(refs)}
        for aggregate, refs in sorted(by_aggregate.items())
    ]
    return compositions


def with_compositions(text: str, compositions: Sequence[Mapping[str, Any]]) -> bytes:
    """The library's JSON ``text`` with ``compositions`` added, as document bytes (one final LF).

    cyclonedx-python-lib 11 does not model CycloneDX 1.6 ``compositions``, so they are added to
    its output; keys keep the library's order and ASCII escaping (``json.dumps`` defaults).
    """
    return _with_compositions(json.loads(text), compositions)


def _with_compositions(doc: dict[str, Any], compositions: Sequence[Mapping[str, Any]]) -> bytes:
    """:func:`with_compositions` of the parsed library output ``doc``."""
    doc["compositions"] = [dict(c) for c in compositions]
    return dumps_indented_bytes(doc, indent=2, end="\n")  # json.dumps(doc, indent=2) + LF


def _licence_list(expression: str | None) -> list[Any]:
    from cyclonedx.model.license import LicenseExpression

    return [] if expression is None else [LicenseExpression(expression)]


_Triple = tuple[str, str, str]  # (bom-ref, location, additionalContext) of one occurrence
_TRIPLE_KEYS = ("bom-ref", "location", "additionalContext")


def _occurrence_dict(keys: Sequence[str], triple: _Triple) -> dict[str, str]:
    """An occurrence as the library's JSON writer writes it, its keys in the order ``keys``."""
    values = {"bom-ref": triple[0], "location": triple[1], "additionalContext": triple[2]}
    return {k: values[k] for k in keys}


class _HeldOccurrences:
    """Evidence occurrences kept out of the library model: for each evidence list, its first
    occurrence goes to the library and the others are held here, keyed by the first's bom-ref
    (file bom-refs are unique in a document: each member is evidence once, checked by the plan).

    cyclonedx-python-lib builds an ``Occurrence`` (a ``BomRef``, a sorted-set entry) per file and
    serializes each through its reflection-based serializer: ~0.15 ms per file. The library sorts
    the occurrences by ``(bom-ref, location, …, additionalContext)``; so does :meth:`hold`.
    """

    def __init__(self) -> None:
        self.first: dict[str, _Triple] = {}
        self.rest: dict[str, list[ShippedFile]] = {}

    def hold(self, files: Sequence[ShippedFile]) -> _Triple:
        """Sort ``files`` as the library sorts their occurrences, hold all but the first (as the
        files: their strings are made when written, issue 13); return the first's triple.

        The triples ``("file:" + path, path, "sha256:" + digest)`` sort as ``(path, digest)``
        does: a common prefix, then the same location, then the same digest order."""
        ordered = sorted(files, key=lambda f: (f.path, f.sha256))
        first = _triple(ordered[0])
        self.first[first[0]] = first
        self.rest[first[0]] = ordered[1:]
        return first

    def put_back(self, doc: dict[str, Any]) -> bool:
        """Append each held list to its first occurrence in the parsed library output ``doc``, in
        the key order the library wrote that first one; ``False`` (``doc`` then partly changed) if
        a first occurrence is missing or not what :func:`_occurrence_dict` gives for it."""
        metadata = doc.get("metadata") or {}
        found = 0
        for component in [metadata.get("component") or {}, *_walk_components(doc.get("components") or [])]:
            occurrences = (component.get("evidence") or {}).get("occurrences") or []
            ref = occurrences[0].get("bom-ref") if occurrences else None
            if ref not in self.first:
                continue
            keys = list(occurrences[0])
            if len(occurrences) != 1 or occurrences[0] != _occurrence_dict(keys, self.first[ref]):
                return False
            # The dicts _occurrence_dict gives, each key's place in the triple looked up once,
            # made as they are written (issue 13: 100k occurrence dicts never all alive).
            places = [(k, _TRIPLE_KEYS.index(k)) for k in keys]
            evidence = component["evidence"]
            evidence["occurrences"] = LazyArray(
                occurrences, MadeOnRead(self.rest[ref], functools.partial(_occurrence, places=places))
            )
            found += 1
        return found == len(self.first)


def _occurrence(file: ShippedFile, places: Sequence[tuple[str, int]]) -> dict[str, str]:
    """A held occurrence as the dict :meth:`_HeldOccurrences.put_back` writes, made from its file:
    ``places`` are the keys in the library's order with each key's place in the triple
    (:func:`_triple`)."""
    triple = _triple(file)
    return {k: triple[i] for k, i in places}


def _triple(f: ShippedFile) -> _Triple:
    """The occurrence of shipped file ``f``: bom-ref ``file:<path>``, its path, ``sha256:<hex>``."""
    return (file_bom_ref(f.path), f.path, f"{SHA256_CONTEXT}{f.sha256}")


def _evidence(files: Sequence[ShippedFile], held: _HeldOccurrences | None) -> Any:
    """One occurrence per shipped file: the zip path, ``sha256:<hex>``, bom-ref ``file:<path>``
    (all but the first held in ``held`` when given)."""
    from cyclonedx.model.component_evidence import ComponentEvidence, Occurrence

    if not files:
        return None
    triples = [held.hold(files)] if held is not None else [_triple(f) for f in files]
    return ComponentEvidence(
        occurrences=[Occurrence(bom_ref=t[0], location=t[1], additional_context=t[2]) for t in triples]
    )


def _package_component(
    node: _Node, pe_infos: Mapping[str, PeInfo], licences: Mapping[str, str], held: _HeldOccurrences | None
) -> Any:
    from cyclonedx.model import ExternalReference, ExternalReferenceType, Property, XsUri
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.contact import OrganizationalEntity

    dep = node.record
    ext = []
    if dep.source_url:
        archive = _ARCHIVE.search(dep.source_url)
        kind = ExternalReferenceType.SOURCE_DISTRIBUTION if archive else ExternalReferenceType.VCS
        ext.append(ExternalReference(type=kind, url=XsUri(dep.source_url)))
    if dep.homepage:
        ext.append(ExternalReference(type=ExternalReferenceType.WEBSITE, url=XsUri(dep.homepage)))
    values: list[tuple[str, str | None]] = [
        ("ninfer:kind", dep.kind),
        ("ninfer:group", dep.group),
        ("ninfer:commit", dep.commit),
        (PROP_STAND_IN, "true" if dep.stand_in else "false"),
    ]
    if dep.version != node.version:
        values.append(("ninfer:lock-version", dep.version))  # e.g. lock 3.11.3, purl v3.11.3
    for f in sorted(dep.files, key=lambda f: f.path):
        values += _pe_properties(f.path, pe_infos.get(f.path), dep.group)
    exe = any(f.path.lower().endswith(".exe") for f in dep.files)
    return Component(
        type=ComponentType.APPLICATION if exe else ComponentType.LIBRARY,
        name=dep.name,
        version=node.version,
        bom_ref=node.ref,
        purl=parse_purl(dep.purl) if dep.purl else None,
        cpe=dep.cpe,
        supplier=OrganizationalEntity(name=dep.supplier)
        if dep.supplier and dep.supplier != "NOASSERTION"
        else None,
        manufacturer=_manufacturer(dep, pe_infos),
        licenses=_licence_list(licences[dep.license] if dep.license is not None else None),
        description=_description(dep),
        external_references=ext,
        properties=[Property(name=k, value=v) for k, v in values if v],
        evidence=_evidence(dep.files, held),
    )


def _manufacturer(dep: DependencyRecord, pe_infos: Mapping[str, PeInfo]) -> Any:
    """Who made the files, as they say (issue 35 item 2): the one PE ``CompanyName`` all of the
    component's PE files carry, else none (the signer names are per-file properties)."""
    from cyclonedx.model.contact import OrganizationalEntity

    names = {pe_infos[f.path].version_strings.get("CompanyName", "") for f in dep.files if f.path in pe_infos}
    name = names.pop() if len(names) == 1 else ""
    return OrganizationalEntity(name=name) if name else None


def _pe_properties(path: str, pe: PeInfo | None, group: str | None) -> list[tuple[str, str | None]]:
    """What a shipped PE file says about itself, as ``ninfer:file:<path>:…`` properties."""
    if pe is None:
        return []
    prefix = f"ninfer:file:{path}"
    values: list[tuple[str, str | None]] = [
        (f"{prefix}:pe-machine", pe.machine),
        (f"{prefix}:pe-file-version", pe.file_version),
        (f"{prefix}:pe-product-version", pe.product_version),
        (f"{prefix}:cuda-version", pe.cuda_version),
        (f"{prefix}:authenticode-signer", pe.signer),
    ]
    # The raw version strings as read, so a consumer sees what the file says about itself.
    values += [(f"{prefix}:pe:{key}", value) for key, value in sorted(pe.version_strings.items())]
    if pe_component_version(pe, group=group) is None:
        values.append((f"{prefix}:pe-version-resource", "none"))
    return values


def _description(dep: DependencyRecord) -> str | None:
    if dep.stand_in:
        real = stands_in_for(dep.kind, dep.group)
        prefix = f"STAND-IN, not the real {real}: a placeholder file for samples and tests."
        # A description that already says so (the lock's own wording) is not repeated.
        if dep.description and "stand-in" not in dep.description.lower():
            return f"{prefix} {dep.description}"
        return prefix
    return dep.description


def _unreached_roots(top: set[str], refs: Sequence[str], graph: Mapping[str, set[str]]) -> set[str]:
    """Packages no path from ``top`` reaches, reduced to those nothing else unreached depends on.

    A cycle among unreached packages contributes its smallest bom-ref, so the result is
    deterministic and every package ends up reachable from the root.
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
    hashes large files first can overlap that work (hashlib releases the GIL).

    One thread per process: a later call returns the first one (alive or done). The caller must
    join it before its own thread imports spdx-tools, jsonschema or cyclonedx modules: two threads
    importing one package's modules at once can fail in CPython 3.11's import system
    (``KeyError: 'spdx_tools.spdx.model'``, seen in builds that loaded them on this thread while
    writing the SPDX document), and two prewarm threads would race each other the same way.
    """
    with _PREWARM_LOCK:
        if _PREWARM:
            return _PREWARM[0]

    def load() -> None:
        # The imports are the work: spdx-tools' parser, licence list and the element validators
        # the linear validator calls (beartype-decorated models).
        from spdx_tools.common.spdx_licensing import spdx_licensing  # noqa: F401
        from spdx_tools.spdx.parser.jsonlikedict.json_like_dict_parser import JsonLikeDictParser  # noqa: F401

        from ninfer_release.sbom._spdx_validate import prewarm_imports

        prewarm_imports()

        _strict_validator()

    def quiet_load() -> None:
        # Only a head start: a failure here (e.g. the interpreter tearing the import system down
        # after Ctrl-C while this daemon thread imports) is never printed; a real one is raised
        # again, with its message, by the caller's own import on its own thread.
        with contextlib.suppress(BaseException):
            load()

    with _PREWARM_LOCK:
        if not _PREWARM:
            thread = threading.Thread(target=quiet_load, name="ninfer-sbom-prewarm", daemon=True)
            thread.start()
            _PREWARM.append(thread)
        return _PREWARM[0]


def started_prewarm() -> threading.Thread | None:
    """The process's prewarm thread if one was started (:func:`prewarm_validators`), else ``None``:
    a reader that may import the libraries joins it first, without starting one."""
    with _PREWARM_LOCK:
        return _PREWARM[0] if _PREWARM else None


#: The process's prewarm thread, once started (:func:`prewarm_validators`).
_PREWARM: list[threading.Thread] = []
_PREWARM_LOCK = threading.Lock()


def validate_cyclonedx_bytes(data: bytes) -> list[str]:
    """Messages for a CycloneDX 1.6 JSON document (empty = valid).

    Validates against the strict CycloneDX 1.6 JSON schema (the library's, with its format
    checks; see :func:`_strict_validator`), reporting the first schema error as
    ``schema: <json path>: <message>``, and checks what the schema does not: ``specVersion`` 1.6,
    a ``urn:uuid:`` serial number (C33), bom-refs unique across components and evidence
    occurrences (CycloneDX ``refType``; the library would rename a duplicate), every
    ``dependsOn`` naming a known bom-ref, and exactly one final LF.
    """
    try:
        raw = strictjson.parse(data, source=CDX_WHERE, error=IntegrityError)
    except IntegrityError as exc:
        return [str(exc)]
    return _validate_parsed(raw, data)


def _validate_parsed(raw: Any, data: bytes) -> list[str]:
    """:func:`validate_cyclonedx_bytes` of the strictly parsed ``raw`` (``data``: its bytes)."""
    out = _schema_message(raw)
    if not isinstance(raw, dict):
        return [*out, "top level is not a JSON object"]
    out += _header_messages(raw)
    bom_refs = _bom_refs(raw)
    refs = bom_refs.refs
    out += bom_refs.messages
    # A bom-ref is unique in the whole BOM (CycloneDX 1.6 ``refType``), evidence occurrences too.
    duplicates = sorted(r for r, n in Counter([*refs, *_occurrence_refs(raw)]).items() if n > 1)
    out.extend(f"bom-ref {r!r} is used more than once" for r in duplicates)
    out += _dangling_refs(raw, set(refs))
    if not data.endswith(b"\n") or data.endswith(b"\n\n"):
        out.append("document must end with exactly one LF")
    return out


def _schema_message(raw: Any) -> list[str]:
    """The first strict-schema error as ``schema: <json path>: <message>`` (at most 500 chars), or none.

    A document the schema certainly accepts is told apart without jsonschema
    (``sbom._cdx_fast.schema_is_clean_own``) or without descending into every evidence
    occurrence (``sbom._cdx_fast.schema_is_clean``); any other is validated whole by jsonschema.
    """
    if schema_is_clean_own(raw):
        return []  # the strict schema certainly reports nothing (sbom._cdx_schema): no jsonschema
    validator = _strict_validator()
    if schema_is_clean(raw, validator):
        return []
    error = next(iter(validator.iter_errors(raw)), None)
    if error is None:
        return []
    return [f"schema: {error.json_path}: {error.message}"[:500]]


_SERIAL = re.compile(r"^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _header_messages(raw: Mapping[str, Any]) -> list[str]:
    """``specVersion`` must be 1.6 and the serial a lowercase ``urn:uuid`` (C33)."""
    out: list[str] = []
    if raw.get("specVersion") != "1.6":
        out.append(f"specVersion is {raw.get('specVersion')!r}, not '1.6'")
    serial = str(raw.get("serialNumber", ""))
    if not _SERIAL.match(serial):
        out.append(f"serialNumber {serial!r} is not a lowercase urn:uuid")
    return out


@dataclass(frozen=True, kw_only=True)
class _BomRefs:
    """Every bom-ref of a document (``metadata.component``'s, then the components' depth first),
    and one message per component without one."""

    refs: list[str]
    messages: list[str]


def _bom_refs(raw: Mapping[str, Any]) -> _BomRefs:
    """The bom-refs of the parsed document ``raw``."""
    refs: list[str] = []
    out: list[str] = []
    metadata = _object(raw.get("metadata"))
    if isinstance(metadata.get("component"), dict) and "bom-ref" in metadata["component"]:
        refs.append(str(metadata["component"]["bom-ref"]))
    for c in _walk_components(raw.get("components")):
        if "bom-ref" in c:
            refs.append(str(c["bom-ref"]))
        else:
            out.append(f"component {c.get('name')!r} has no bom-ref")
    return _BomRefs(refs=refs, messages=out)


def _occurrence_refs(raw: Mapping[str, Any]) -> list[str]:
    """The bom-refs of every evidence occurrence (``metadata.component``'s, then the components')."""
    metadata = _object(raw.get("metadata"))
    owners = [metadata.get("component"), *_walk_components(raw.get("components"))]
    out: list[str] = []
    for owner in owners:
        evidence = owner.get("evidence") if isinstance(owner, dict) else None
        occurrences = evidence.get("occurrences") if isinstance(evidence, dict) else None
        for o in occurrences if isinstance(occurrences, list) else []:
            if isinstance(o, dict) and "bom-ref" in o:
                out.append(str(o["bom-ref"]))
    return out


def _dangling_refs(raw: Mapping[str, Any], known: set[str]) -> list[str]:
    """One message per ``dependencies`` / ``compositions`` target that names no known bom-ref."""
    out: list[str] = []
    for dep in _objects(raw.get("dependencies")):
        for target in [dep.get("ref"), *_items(dep.get("dependsOn"))]:
            if _unknown(target, known):
                out.append(f"dependency names unknown bom-ref {target!r}")
    for composition in _objects(raw.get("compositions")):
        for target in [*_items(composition.get("assemblies")), *_items(composition.get("dependencies"))]:
            if _unknown(target, known):
                out.append(f"composition names unknown bom-ref {target!r}")
    return out


def _walk_components(components: Any) -> list[dict[str, Any]]:
    """Every component object in ``components`` and their nested ``components``, depth first.

    Any JSON value is taken: what is not a list of objects holds none (the strict schema reports
    it), so a hostile document's shape never raises here.
    """
    found: list[dict[str, Any]] = []
    for c in _objects(components):
        found.append(c)
        found.extend(_walk_components(c.get("components")))
    return found


def _items(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else no items (the strict schema reports the shape)."""
    return value if isinstance(value, list) else []


def _objects(value: Any) -> list[dict[str, Any]]:
    """The JSON objects in ``value`` if it is an array, else none (the strict schema reports it)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (the strict schema reports the shape)."""
    return value if isinstance(value, dict) else {}


def _unknown(target: Any, known: set[str]) -> bool:
    """A ``dependsOn``/``assemblies`` target that names no bom-ref (an array or object names none)."""
    return not isinstance(target, str) or target not in known


def _occurrences(component: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(location, SHA-256 or ``None``) of each evidence occurrence of ``component``."""
    evidence = component.get("evidence")
    found: list[tuple[str, str | None]] = []
    for o in _objects(evidence.get("occurrences")) if isinstance(evidence, dict) else []:
        if not isinstance(o.get("location"), str):
            continue
        context = str(o.get("additionalContext") or "")
        sha = context.removeprefix(SHA256_CONTEXT).lower() if context.startswith(SHA256_CONTEXT) else None
        found.append((o["location"], sha))
    return found


def parse_cyclonedx_hashes(data: bytes) -> dict[str, str]:
    """Shipped zip path → SHA-256 of every file the document lists.

    Files are the evidence occurrences of every component and of ``metadata.component``
    (``location`` = zip path, ``additionalContext`` = ``sha256:<hex>``). The older one-per-file
    shape (a component naming its file by the ``ninfer:path`` property, with its SHA-256 in
    ``hashes``) is not read: only ``metadata.component`` may have ``hashes``.

    Raises:
        IntegrityError: the bytes are not JSON, a path is listed twice, a listed file has no
            SHA-256, or an object but ``metadata.component`` has ``hashes``.
    """
    return _hashes_of(strictjson.parse(data, source=CDX_WHERE, error=IntegrityError))


def _hashes_of(raw: Any) -> dict[str, str]:
    """:func:`parse_cyclonedx_hashes` of the strictly parsed document ``raw``.

    Raises:
        IntegrityError: also for a ``hashes`` anywhere but on ``metadata.component``: our writer
            gives no other object one (:func:`_lane_root`), and a digest nothing compares is one
            a consumer may take (hostile review, 2026-12-04).
    """
    out: dict[str, str] = {}
    problems = [
        Problem(file=CDX_WHERE, field=f"{where}.hashes", message="a hash where ninfer-release writes none")
        for where in _hashes_outside_root(raw, "$")
    ]
    components = _walk_components(raw.get("components") if isinstance(raw, dict) else None)
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    if isinstance(metadata, dict) and isinstance(metadata.get("component"), dict):
        components.append(metadata["component"])
    for c in components:
        for key, sha in _occurrences(c):
            if sha is None or not is_sha256_hex(sha):
                problems.append(Problem(file=CDX_WHERE, field=key, message="listed without a SHA-256"))
                continue
            if key in out:
                problems.append(Problem(file=CDX_WHERE, field=key, message="listed twice"))
            out[key] = sha
    if problems:
        raise IntegrityError(problems=problems)
    return out


#: The one object of a lane's document with ``hashes`` (:func:`_lane_root`: the zip's SHA-256).
_ROOT_PATH = "$.metadata.component"


def _hashes_outside_root(value: Any, where: str) -> Iterator[str]:
    """The JSON path of every object in ``value`` (at path ``where``) that has a ``hashes`` key,
    but ``metadata.component``: a component, a tool, an external reference, at any depth."""
    if isinstance(value, dict):
        if "hashes" in value and where != _ROOT_PATH:
            yield where
        for key, item in value.items():
            if isinstance(item, dict | list):
                yield from _hashes_outside_root(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, dict | list):
                yield from _hashes_outside_root(item, f"{where}[{i}]")


def cyclonedx_root_sha256(data: bytes) -> str | None:
    """The SHA-256 ``metadata.component`` carries (the package's own digest), or ``None``."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return _root_sha256_of(raw)


def _root_sha256_of(raw: Any) -> str | None:
    """:func:`cyclonedx_root_sha256` of the parsed document ``raw``.

    Raises:
        IntegrityError: the root's ``hashes`` are not the one SHA-256 our writer gives it
            (:func:`_lane_root`): another algorithm (a SHA-512 nothing compares) or a second
            SHA-256 (a consumer taking that one reads a digest the zip does not have).
    """
    component = _object(raw.get("metadata")).get("component") if isinstance(raw, dict) else None
    if not isinstance(component, dict):
        return None
    found: str | None = None
    problems: list[Problem] = []
    field = f"{_ROOT_PATH}.hashes"
    for h in _objects(component.get("hashes")):
        alg = h.get("alg")
        if alg != "SHA-256":
            message = f"{alg!r} is not SHA-256, the one hash ninfer-release writes here"
            problems.append(Problem(file=CDX_WHERE, field=field, message=message))
        elif found is not None:
            problems.append(Problem(file=CDX_WHERE, field=field, message="SHA-256 is given more than once"))
        else:
            found = str(h.get("content")).lower()
    if problems:
        raise IntegrityError(problems=problems)
    return found


@dataclass(frozen=True)
class CdxCheck:
    """One strict parse of a CycloneDX document, for a verifier: :func:`validate_cyclonedx_bytes`'s
    ``messages``, and the outcomes of :func:`parse_cyclonedx_hashes` and
    :func:`cyclonedx_root_sha256` for the same bytes, so the document is parsed once (issue 13)."""

    messages: list[str]
    hashes: Outcome[dict[str, str]]
    root_sha256: Outcome[str | None]


def check_cyclonedx_bytes(data: bytes) -> CdxCheck:
    """:func:`validate_cyclonedx_bytes`, :func:`parse_cyclonedx_hashes` and
    :func:`cyclonedx_root_sha256` of ``data`` from one strict parse (the two outcomes are taken
    before validation runs). A document that does not parse strictly gets what each function
    gives for it on its own."""
    try:
        raw = strictjson.parse(data, source=CDX_WHERE, error=IntegrityError)
    except IntegrityError as exc:
        return CdxCheck(
            messages=[str(exc)],
            hashes=attempt(parse_cyclonedx_hashes, data),
            root_sha256=attempt(cyclonedx_root_sha256, data),
        )
    hashes, root = attempt(_hashes_of, raw), attempt(_root_sha256_of, raw)
    return CdxCheck(messages=_validate_parsed(raw, data), hashes=hashes, root_sha256=root)


def check_cyclonedx_file(path: Path, *, limit: int) -> tuple[CdxCheck, str] | None:
    """:func:`check_cyclonedx_bytes` of the document in ``path`` and its SHA-256, read piece by
    piece with the root's later evidence occurrences kept only as their hash entries
    (``sbom._cdx_stream``; issue 13: memory), or ``None`` when the document is not one read that
    way or one whose verdict here could differ (an occurrence's location or bom-ref also used
    elsewhere, a schema error, a hash list that raises): the caller then reads it (within
    ``limit`` bytes) and calls :func:`check_cyclonedx_bytes`, which gives every message of such a
    document. For a document checked here, the messages, the hash map and the root digest are
    those :func:`check_cyclonedx_bytes` gives for its bytes (``tests/test_cdx_stream.py``)."""
    from ninfer_release.sbom._cdx_stream import read_streamed

    streamed = read_streamed(path, limit=limit)
    if streamed is None:
        return None
    raw, rest = streamed.skeleton, streamed.rest
    try:
        if not (schema_is_clean_own(raw) or schema_is_clean(raw, _strict_validator())):
            return None  # the whole path reports jsonschema's own first error
        hashes = _hashes_of(raw)
        bom_refs = _bom_refs(raw)
        occurrence_refs = _occurrence_refs(raw)
    except (IntegrityError, AttributeError, TypeError, KeyError, IndexError, ValueError):
        return None
    used = {*bom_refs.refs, *occurrence_refs}
    if any(location in hashes or file_bom_ref(location) in used for location in rest):
        return None  # listed twice or a bom-ref used twice: the whole path words it
    # What _validate_parsed reports, in its order; the later occurrences add nothing to it.
    out = _header_messages(raw) + bom_refs.messages
    counts = Counter([*bom_refs.refs, *occurrence_refs])
    out.extend(f"bom-ref {r!r} is used more than once" for r in sorted(r for r, n in counts.items() if n > 1))
    out += _dangling_refs(raw, set(bom_refs.refs))
    if not streamed.tail.endswith(b"\n") or streamed.tail.endswith(b"\n\n"):
        out.append("document must end with exactly one LF")
    hashes.update(rest)
    check = CdxCheck(
        messages=out,
        hashes=Outcome(value=hashes, error=None),
        root_sha256=attempt(_root_sha256_of, raw),
    )
    return check, streamed.sha256


def cross_check_cyclonedx(
    data: bytes, members: Mapping[str, str], *, where: str = CDX_WHERE
) -> list[Problem]:
    """Problems between a CycloneDX document and the zip's members (empty = consistent).

    ``members`` maps zip member path → SHA-256. Every file the document lists (evidence
    occurrences, see :func:`parse_cyclonedx_hashes`) must be a member with that SHA-256, and every
    member must be listed (each exactly once: a duplicate raises).

    Raises:
        IntegrityError: the bytes are not JSON, or a listed file has no SHA-256 or is listed twice.
    """
    hashes = parse_cyclonedx_hashes(data)
    problems: list[Problem] = []
    for key in sorted(set(hashes) | set(members)):
        if key not in members:
            problems.append(Problem(file=where, field=key, message="component file is not in the zip"))
        elif key not in hashes:
            problems.append(Problem(file=where, field=key, message="zip member is listed by no component"))
        elif members[key].lower() != hashes[key]:
            problems.append(Problem(file=where, field=key, message="SHA-256 differs from the zip member"))
    return problems
