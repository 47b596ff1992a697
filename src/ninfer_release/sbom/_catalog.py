"""Curated metadata of known dependencies (the repo's ``sbom/catalog.json``).

The lock names each dependency with its supplier, licence and purl; the catalog is the
reviewed record of what those must be for the packages we know (CUDA wheels, the MSVC runtime,
DirectStorage, vendored sources), plus the homepage. :func:`apply_catalog` checks a lock against
it and fills in what the lock leaves out (homepage, supplier, licence, description).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ninfer_release import strictjson
from ninfer_release.errors import InputError, Problem
from ninfer_release.sbom._license import license_text_path, normalize_license_expression
from ninfer_release.sbom._purl import parse_purl
from ninfer_release.sbom._records import DEPENDENCY_KINDS, REDIST_GROUPS, DependencyRecord, PeInfo

log = logging.getLogger(__name__)

CATALOG_FILE = "catalog.json"
_FIELDS = {
    "name",
    "kind",
    "group",
    "supplier",
    "license",
    "purl_type",
    "purl_namespace",
    "homepage",
    "description",
    "files",
    "cpe_vendor",
    "cpe_product",
    "cpe_version",
}
#: Where a CPE's version comes from (``cpe_version``; issue 35 item 2): the package (lock) version,
#: the shipped files' PE FileVersion (trailing ``.0`` dropped), or the CUDA version their version
#: strings name. The version a product's vulnerability records use, chosen per entry.
CPE_VERSION_SOURCES = ("package", "file-version", "cuda-version")
#: CPE 2.3 formatted-string binding (NISTIR 7695 §6.2): these characters stand unquoted in a value.
_CPE_PLAIN = re.compile(r"[A-Za-z0-9._-]")


@dataclass(frozen=True, kw_only=True)
class CatalogEntry:
    """Curated facts about one dependency, keyed by its lock ``name``."""

    name: str
    kind: str
    supplier: str
    license: str
    purl_type: str
    group: str | None = None
    purl_namespace: str | None = None
    homepage: str | None = None
    description: str | None = None
    #: File-name patterns (``fnmatch``, case-insensitive) of the binaries this package ships, e.g.
    #: ``cudart64_*.dll``: how ``lock init`` recognises a staged DLL (empty for vendored sources).
    files: tuple[str, ...] = ()

    def ships(self, file_name: str) -> bool:
        """Whether ``file_name`` (a base name such as ``cudart64_13.dll``) is one of this package's."""
        import fnmatch

        return any(fnmatch.fnmatchcase(file_name.lower(), p.lower()) for p in self.files)

    cpe_vendor: str | None = None
    cpe_product: str | None = None
    #: One of :data:`CPE_VERSION_SOURCES` (default ``package``).
    cpe_version: str = "package"

    def cpe(self, version: str) -> str | None:
        """The CPE 2.3 name of ``version`` of this package, when the catalog maps vendor and product.

        ``cpe:2.3:a:<vendor>:<product>:<version>:*:*:*:*:*:*:*`` with every character other than
        letters, digits, ``.``, ``_`` and ``-`` backslash-quoted (``visual_c++`` →
        ``visual_c\\+\\+``; NISTIR 7695 §6.2). The vendor/product pair is curated against the NVD CPE
        dictionary in ``sbom/catalog.json``; ``version`` is the one ``cpe_version`` names
        (:func:`cpe_version_of`).
        """
        if self.cpe_vendor is None or self.cpe_product is None:
            return None
        parts = [_cpe_quote(p) for p in (self.cpe_vendor, self.cpe_product, version)]
        return "cpe:2.3:a:" + ":".join(parts) + ":*:*:*:*:*:*:*"


def _cpe_quote(value: str) -> str:
    return "".join(c if _CPE_PLAIN.match(c) else f"\\{c}" for c in value.lower())


def _read_catalog(path: Path) -> list[object]:
    """The ``entries`` list of the catalog file ``path`` (``{"schema": 1, "entries": [...]}``).

    Raises:
        InputError: the file is missing, not UTF-8 JSON, or not of that shape.
    """
    where = str(path)
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise InputError(problems=[Problem(file=where, message="missing")]) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(problems=[Problem(file=where, message=f"not UTF-8 JSON: {exc}")]) from None
    if (
        not isinstance(raw, dict)
        or not strictjson.json_equal(raw.get("schema"), 1)
        or not isinstance(raw.get("entries"), list)
    ):
        raise InputError(problems=[Problem(file=where, message="expected {'schema': 1, 'entries': [...]}")])
    return list(raw["entries"])


def _parse_entry(item: object, field: str, problems: list[Problem], where: str) -> CatalogEntry | None:
    """``entries[i]`` as a :class:`CatalogEntry` when its keys and value types are right, else None
    (the problem recorded): known keys only, the five required ones, strings, ``files`` a list of names."""
    if not isinstance(item, dict):
        problems.append(Problem(file=where, field=field, message="not an object"))
        return None
    unknown = sorted(set(item) - _FIELDS)
    if unknown:
        problems.append(Problem(file=where, field=field, message=f"unknown keys {unknown}"))
        return None
    missing = sorted({"name", "kind", "supplier", "license", "purl_type"} - set(item))
    files = item.get("files", [])
    bad = sorted(k for k, v in item.items() if k != "files" and not isinstance(v, str))
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        bad.append("files")
    if missing or bad:
        problems.append(Problem(file=where, field=field, message=f"missing keys {missing}, non-string {bad}"))
        return None
    return CatalogEntry(
        name=item["name"],
        kind=item["kind"],
        supplier=item["supplier"],
        license=item["license"],
        purl_type=item["purl_type"],
        group=item.get("group"),
        purl_namespace=item.get("purl_namespace"),
        homepage=item.get("homepage"),
        description=item.get("description"),
        files=tuple(files),
        cpe_vendor=item.get("cpe_vendor"),
        cpe_product=item.get("cpe_product"),
        cpe_version=item.get("cpe_version", "package"),
    )


def _entry_problems(entry: CatalogEntry, seen: Mapping[str, CatalogEntry], where: str) -> list[Problem]:
    """An entry's own rules: CPE vendor and product together, a known kind and group, listed once."""
    field = f"entries[{entry.name}]"
    problems: list[Problem] = []
    if (entry.cpe_vendor is None) != (entry.cpe_product is None):
        problems.append(Problem(file=where, field=field, message="cpe_vendor and cpe_product go together"))
    if entry.cpe_version not in CPE_VERSION_SOURCES:
        message = f"unknown cpe_version {entry.cpe_version!r}; one of {list(CPE_VERSION_SOURCES)}"
        problems.append(Problem(file=where, field=f"{field}.cpe_version", message=message))
    if entry.kind not in DEPENDENCY_KINDS:
        problems.append(Problem(file=where, field=f"{field}.kind", message=f"unknown kind {entry.kind!r}"))
    if entry.group is not None and entry.group not in REDIST_GROUPS:
        problems.append(Problem(file=where, field=f"{field}.group", message=f"unknown group {entry.group!r}"))
    if entry.name in seen:
        problems.append(Problem(file=where, field=field, message="listed twice"))
    return problems


def _licence_problems(entry: CatalogEntry, sbom_dir: Path, where: str) -> list[Problem]:
    """The entry's licence must be written normalized (C29) and every ``LicenseRef-`` it uses needs
    a text in ``<sbom_dir>/licenses/``."""
    field = f"entries[{entry.name}].license"
    try:
        normalized = normalize_license_expression(entry.license, where=where, field=field)
    except InputError as exc:
        return list(exc.problems)
    problems: list[Problem] = []
    if normalized.expression != entry.license:
        problems.append(Problem(file=where, field=field, message=f"write it as {normalized.expression!r}"))
    for ref in normalized.license_refs:
        if not license_text_path(sbom_dir / "licenses", ref).is_file():
            problems.append(Problem(file=where, field=field, message=f"no text for {ref} in licenses/"))
    return problems


def load_catalog(sbom_dir: Path) -> dict[str, CatalogEntry]:
    """Read ``<sbom_dir>/catalog.json`` into name → entry, checking every entry.

    Each licence must be a valid expression whose ``LicenseRef-`` ids have a text in
    ``<sbom_dir>/licenses/``.

    Raises:
        InputError: the file is missing or not JSON, or entries are malformed (all listed).
    """
    path = sbom_dir / CATALOG_FILE
    where = str(path)
    entries = _read_catalog(path)
    problems: list[Problem] = []
    out: dict[str, CatalogEntry] = {}
    for i, item in enumerate(entries):
        entry = _parse_entry(item, f"entries[{i}]", problems, where)
        if entry is None:
            continue
        problems += _entry_problems(entry, out, where)
        problems += _licence_problems(entry, sbom_dir, where)
        out[entry.name] = entry
    if problems:
        raise InputError(problems=problems)
    return out


def _catalog_mismatches(dep: DependencyRecord, entry: CatalogEntry, *, where: str) -> list[Problem]:
    """Where ``dep`` disagrees with its curated ``entry``: kind, group, supplier, licence, purl type
    and namespace (a field the lock leaves out is not a disagreement)."""
    field = f"{dep.kind}[{dep.name}]"
    problems: list[Problem] = []

    def mismatch(name: str, have: object, want: object) -> None:
        problems.append(
            Problem(file=where, field=f"{field}.{name}", message=f"{have!r} differs from curated {want!r}")
        )

    if dep.kind != entry.kind:
        mismatch("kind", dep.kind, entry.kind)
    if dep.group != entry.group:
        mismatch("group", dep.group, entry.group)
    if dep.supplier is not None and dep.supplier != entry.supplier:
        mismatch("supplier", dep.supplier, entry.supplier)
    if dep.license is not None and dep.license != entry.license:
        mismatch("license", dep.license, entry.license)
    if dep.purl is None:
        return problems
    try:
        purl = parse_purl(dep.purl, where=f"{where}: {field}")
    except InputError as exc:
        return [*problems, *exc.problems]
    if purl.type != entry.purl_type:
        mismatch("purl type", purl.type, entry.purl_type)
    if entry.purl_namespace is not None and purl.namespace != entry.purl_namespace:
        mismatch("purl namespace", purl.namespace, entry.purl_namespace)
    return problems


def cpe_version_of(dep: DependencyRecord, entry: CatalogEntry, pe_infos: Mapping[str, PeInfo]) -> str | None:
    """The version ``entry.cpe_version`` names for ``dep`` (``pe_infos`` by zip path): the package
    version, or the one FileVersion / CUDA version all of ``dep``'s PE files carry (``14.44.35211.0``
    → ``14.44.35211``); ``None`` (no CPE, a warning) when a file has none or two files disagree."""
    if entry.cpe_version == "package":
        return dep.version
    found: set[str | None] = set()
    for f in dep.files:
        pe = pe_infos.get(f.path)
        found.add(
            None
            if pe is None
            else pe.cuda_version
            if entry.cpe_version == "cuda-version"
            else pe.file_version
        )
    versions = {v for v in found if v is not None}
    if None in found or len(versions) != 1:
        log.warning(
            "%s %s: its files name no single %s (%s); no CPE",
            dep.name,
            dep.version,
            entry.cpe_version,
            sorted(versions),
        )
        return None
    parts = versions.pop().split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return ".".join(parts)


def _completed(
    dep: DependencyRecord, entry: CatalogEntry, pe_infos: Mapping[str, PeInfo]
) -> DependencyRecord:
    """``dep`` with what it leaves out (supplier, licence, homepage, description, CPE) from ``entry``;
    the CPE's version is the one ``entry.cpe_version`` names (:func:`cpe_version_of`)."""
    cpe_version = cpe_version_of(dep, entry, pe_infos) if dep.cpe is None and entry.cpe_vendor else None
    return dataclasses.replace(
        dep,
        supplier=dep.supplier or entry.supplier,
        license=dep.license or entry.license,
        homepage=dep.homepage or entry.homepage,
        description=dep.description or entry.description,
        cpe=dep.cpe or (entry.cpe(cpe_version) if cpe_version is not None else None),
    )


def apply_catalog(
    dependencies: Sequence[DependencyRecord],
    catalog: Mapping[str, CatalogEntry],
    *,
    where: str = "dependencies.lock.json",
    require_entry: bool = True,
    pe_infos: Mapping[str, PeInfo] | None = None,
) -> tuple[DependencyRecord, ...]:
    """``dependencies`` checked against the curated ``catalog`` and completed from it.

    For each vendored or redistributable record with a catalog entry: kind, group, supplier,
    licence and purl type/namespace must agree (a missing supplier/licence/homepage/description is
    filled in from the catalog). Engine records are passed through. ``pe_infos`` (by zip path)
    gives the files' versions a ``cpe_version`` other than ``package`` takes.

    Raises:
        InputError: a record disagrees with its entry, or (``require_entry``) has none; every
            problem is listed, naming the record and field.
    """
    problems: list[Problem] = []
    out: list[DependencyRecord] = []
    for dep in dependencies:
        entry = catalog.get(dep.name) if dep.kind != "engine" else None
        if entry is None:
            if dep.kind != "engine" and require_entry:
                problems.append(
                    Problem(
                        file=where,
                        field=f"{dep.kind}[{dep.name}]",
                        message="no curated metadata in sbom/catalog.json",
                    )
                )
            out.append(dep)
            continue
        problems += _catalog_mismatches(dep, entry, where=where)
        out.append(_completed(dep, entry, pe_infos or {}))
    if problems:
        raise InputError(problems=problems)
    return tuple(out)


def check_against_catalog(
    dependencies: Sequence[DependencyRecord], catalog: Mapping[str, CatalogEntry], *, where: str
) -> list[Problem]:
    """The problems :func:`apply_catalog` would raise, as a list (empty = consistent)."""
    try:
        apply_catalog(dependencies, catalog, where=where)
    except InputError as exc:
        return list(exc.problems)
    return []
