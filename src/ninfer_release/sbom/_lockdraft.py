"""Draft a ``dependencies.lock.json`` from a staged tree (``ninfer-release lock init``).

Reads every file under the tree's ``bin/`` that is not an engine file (``build-info.json``
``engine_files``, when the document is there): its SHA-256, and for a PE image its version
resource and imports (:func:`read_pe`). Each file is matched to the curated catalog
(``sbom/catalog.json``, entries' ``files`` patterns); what the catalog and the PE image say is
filled in — package, group, supplier, licence, version (by the group's version rule, the one
:func:`check_pe_against_lock` applies), purl — and everything else is an explicit
``"TODO(lock init): …"`` marker saying what to write. A build refuses a lock that still holds a
marker, naming each (``packaging.load_staged_tree``). Nothing is guessed: a version is taken from
the PE image only where the group's rule makes the PE version the package version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import packaging
from ninfer_release.errors import InputError
from ninfer_release.hashing import sha256_file
from ninfer_release.sbom._catalog import CatalogEntry
from ninfer_release.sbom._pe import read_pe, stand_in_marker
from ninfer_release.sbom._purl import canonical_purl
from ninfer_release.sbom._records import REDIST_GROUPS, PeInfo

TODO = f"{packaging.TODO_MARKER}(lock init)"
#: Windows system DLLs a staged tree never ships (an import of one is not a missing file).
SYSTEM_DLLS = frozenset(
    {
        "advapi32.dll",
        "bcrypt.dll",
        "comctl32.dll",
        "comdlg32.dll",
        "crypt32.dll",
        "d3d11.dll",
        "d3d12.dll",
        "dbghelp.dll",
        "dxcore.dll",
        "dxgi.dll",
        "gdi32.dll",
        "iphlpapi.dll",
        "kernel32.dll",
        "msvcrt.dll",
        "ntdll.dll",
        "ole32.dll",
        "oleaut32.dll",
        "psapi.dll",
        "rpcrt4.dll",
        "secur32.dll",
        "setupapi.dll",
        "shell32.dll",
        "shlwapi.dll",
        "ucrtbase.dll",
        "user32.dll",
        "userenv.dll",
        "version.dll",
        "winmm.dll",
        "ws2_32.dll",
    }
)


def _system(dll: str) -> bool:
    # API sets (api-ms-win-*, ext-ms-*) resolve to the OS; the others are in SYSTEM_DLLS.
    return dll.startswith(("api-ms-win-", "ext-ms-")) or dll in SYSTEM_DLLS


@dataclass(frozen=True, kw_only=True)
class DraftedFile:
    """How one staged binary was drafted: the catalog entry it matched and the fields left TODO."""

    file: str
    catalog_entry: str | None
    pe: bool
    todo: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class LockDraft:
    """The draft lock, how each file was drafted, and what the PE imports say is not staged.

    ``missing_imports`` maps an imported DLL name (lowercase) that is neither staged under
    ``bin/`` nor a Windows system DLL to the staged files importing it.
    """

    lock: packaging.DependencyLock
    engine_files: tuple[str, ...]
    files: tuple[DraftedFile, ...]
    missing_imports: Mapping[str, tuple[str, ...]]
    notes: tuple[str, ...]

    @property
    def todo_count(self) -> int:
        """Markers left in the draft (each one a field to fill in)."""
        return sum(len(f.todo) for f in self.files)

    def to_bytes(self) -> bytes:
        """The draft ``dependencies.lock.json`` (schema 1, markers included)."""
        return self.lock.to_bytes()

    def as_json(self) -> dict[str, Any]:
        return {
            "engine_files": list(self.engine_files),
            "files": [
                {"file": f.file, "catalog_entry": f.catalog_entry, "pe": f.pe, "todo": list(f.todo)}
                for f in self.files
            ],
            "todo_count": self.todo_count,
            "missing_imports": {k: list(v) for k, v in sorted(self.missing_imports.items())},
            "notes": list(self.notes),
        }


def _version_from_pe(pe: PeInfo | None, group: str | None, package: str) -> str:
    """The package version the PE image states, by the group's rule, or a marker saying why not."""
    if pe is None:
        return f"{TODO}: version of {package} (not a PE image: nothing to read)"
    if group == "cuda":
        if pe.cuda_version:
            return pe.cuda_version
        return f"{TODO}: version of {package} (its version strings name no CUDA version)"
    if group == "crt":
        # The MSVC runtime wheel names the toolset (14.44.35112), the DLLs the redist build
        # (14.44.35211.0): only major.minor is shared, so the package version is not in the file.
        return (
            f"{TODO}: version of the {package} package "
            f"(PE FileVersion {pe.file_version}; major.minor must agree)"
        )
    if pe.file_version is None:
        return f"{TODO}: version of {package} (the PE image has no version resource)"
    parts = pe.file_version.split(".")
    while len(parts) > 3 and parts[-1] == "0":
        parts.pop()
    return ".".join(parts)


def _choose(catalog: Mapping[str, CatalogEntry], name: str, pe: PeInfo | None) -> CatalogEntry | None:
    """The one catalog entry shipping ``name``; a stand-in image picks the stand-in entry."""
    found = [e for e in catalog.values() if e.kind == "redistributable" and e.ships(name)]
    if len(found) > 1:
        placeholder = pe is not None and stand_in_marker(pe) is not None
        found = [e for e in found if ("stand-in" in e.name) == placeholder]
    return found[0] if len(found) == 1 else None


def _draft_one(
    root: Path, path: Path, catalog: Mapping[str, CatalogEntry]
) -> tuple[packaging.Redistributable, DraftedFile, PeInfo | None]:
    rel = path.relative_to(root).as_posix()
    pe: PeInfo | None
    try:
        pe = read_pe(path)
    except InputError:
        pe = None
    entry = _choose(catalog, path.name, pe)
    strings = pe.version_strings if pe is not None else {}
    if entry is not None:
        group = entry.group or f"{TODO}: group, one of {', '.join(sorted(REDIST_GROUPS))}"
        package, supplier, licence = entry.name, entry.supplier, entry.license
    else:
        group = f"{TODO}: group, one of {', '.join(sorted(REDIST_GROUPS))}"
        package = f"{TODO}: package that ships {path.name}" + (
            f" (PE ProductName {strings['ProductName']!r})" if "ProductName" in strings else ""
        )
        supplier = f"{TODO}: supplier" + (
            f" (PE CompanyName {strings['CompanyName']!r})" if "CompanyName" in strings else ""
        )
        licence = f"{TODO}: SPDX licence expression (LicenseRef-<id> needs sbom/licenses/<id>.txt)"
    version = (
        _version_from_pe(pe, entry.group, entry.name)
        if entry is not None
        else f"{TODO}: version of the package that ships {path.name}"
    )
    if entry is not None and not version.startswith(packaging.TODO_MARKER):
        purl = canonical_purl(entry.purl_type, entry.purl_namespace, entry.name, version)
    elif entry is not None:
        shape = canonical_purl(entry.purl_type, entry.purl_namespace, entry.name).replace("@", "")
        purl = f"{TODO}: purl {shape}@<version>"
    else:
        purl = f"{TODO}: purl, e.g. pkg:<type>/<name>@<version>"
    redist = packaging.Redistributable(
        file=rel,
        group=group,
        package=package,
        version=version,
        purl=purl,
        sha256=sha256_file(path),
        supplier=supplier,
        license=licence,
        stand_in=pe is not None and stand_in_marker(pe) is not None,
    )
    values = {"group": group, "package": package, "version": version, "purl": purl}
    values |= {"supplier": supplier, "license": licence}
    todo = tuple(k for k, v in values.items() if v.startswith(packaging.TODO_MARKER))
    drafted = DraftedFile(file=rel, catalog_entry=entry.name if entry else None, pe=pe is not None, todo=todo)
    return redist, drafted, pe


def draft_lock(root: Path, *, catalog: Mapping[str, CatalogEntry]) -> LockDraft:
    """Draft the lock of the staged tree ``root`` (module docstring); reads every ``bin/`` file once.

    Engine files come from ``root/build-info.json`` when it is there (their imports are read
    too); without it every file under ``bin/`` is drafted as a redistributable (a note says so).
    Vendored sources are compiled into the engine and invisible in its PE image: the draft has
    none, and a note says to list them.

    Raises:
        InputError: ``root/bin/`` is missing, or ``build-info.json`` is there but invalid (exit 4).
    """
    bin_dir = root / "bin"
    if not bin_dir.is_dir():
        raise InputError(f"{root}: no bin/ directory (the engine build's executables and DLLs go there)")
    notes: list[str] = []
    engine: tuple[str, ...] = ()
    if (root / packaging.BUILD_INFO).is_file():
        engine = tuple(e.path for e in packaging.read_build_info(root / packaging.BUILD_INFO).engine_files)
    else:
        notes.append(
            f"no {packaging.BUILD_INFO}: every file under bin/ is drafted as a redistributable; "
            "list the engine's own files in build-info.json engine_files and remove them from the lock"
        )
    notes.append(
        "vendored: none drafted (sources compiled into the engine do not show in its PE image); "
        "list each with name, version, commit, license, purl, source_url, supplier"
    )
    paths = sorted((p for p in bin_dir.rglob("*") if p.is_file()), key=lambda p: p.as_posix().encode())
    redists: list[packaging.Redistributable] = []
    drafted: list[DraftedFile] = []
    images: dict[str, PeInfo] = {}
    for path in paths:
        rel = path.relative_to(root).as_posix()
        if rel in engine:
            try:
                images[rel] = read_pe(path)
            except InputError:
                notes.append(f"{rel}: engine file that is not a PE image; the build refuses it")
            continue
        redist, one, pe = _draft_one(root, path, catalog)
        redists.append(redist)
        drafted.append(one)
        if pe is not None:
            images[rel] = pe
        else:
            notes.append(f"{rel}: not a PE image; is it a redistributable at all?")
    staged = {p.name.lower() for p in paths}
    missing: dict[str, list[str]] = {}
    for rel, pe in sorted(images.items()):
        for dll in pe.all_imports:
            if dll not in staged and not _system(dll):
                missing.setdefault(dll, []).append(rel)
    for dll, users in sorted(missing.items()):
        notes.append(f"{dll}: imported by {', '.join(users)} but not staged under bin/ (nor a Windows DLL)")
    return LockDraft(
        lock=packaging.DependencyLock(vendored=(), redistributables=tuple(redists)),
        engine_files=engine,
        files=tuple(drafted),
        missing_imports={k: tuple(v) for k, v in missing.items()},
        notes=tuple(notes),
    )
