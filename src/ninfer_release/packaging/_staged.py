"""Loading a staged engine build tree (``docs/staged-inputs.md``; DESIGN.md §3, §6; case C23).

The loader reads only the two small JSON documents and the directory listing (``lstat``): file
contents are read once, later, by :func:`ninfer_release.packaging.compress_members`, which also
hashes them. Checking redistributable hashes against the lock therefore happens on the
compressed members (:func:`check_lock_digests`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import strictjson
from ninfer_release.digests import SHA256_HEX
from ninfer_release.errors import InputError, Problem
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.jsonfields import FieldReader
from ninfer_release.packaging._frozen import FrozenKeyed
from ninfer_release.reproducible import sorted_walk_names

BUILD_INFO = "build-info.json"
LOCK = "dependencies.lock.json"
_COMMIT = re.compile(r"[0-9a-f]{40}")
GROUPS = frozenset({"cuda", "crt", "directstorage", "other"})
#: Upper bound on build-info.json / dependencies.lock.json, in bytes: they are a few KiB; 1 MiB
#: holds thousands of entries (docs/reliability.md).
MAX_DOCUMENT = 1 << 20


@dataclass(frozen=True, kw_only=True)
class EngineFile:
    """A file built from the engine source (``build-info.json`` ``engine_files[]``).

    ``stand_in`` (optional in the JSON, default ``false``) declares a placeholder that is not the
    real engine file (the samples' engine stand-in): SBOMs, NOTICE and route say so.
    ``vendored`` (optional, default none) names the lock's ``vendored[]`` sources the build compiled
    into this file, sorted: the only evidence the SBOMs take for "file contains source" (issue 35).
    ``built_by`` (optional; for a stand-in) says how the file was really built: the script and the
    commit of this repository that holds it (``{"script": "samples/build-standins.sh", "commit":
    "<40 hex>"}``), as ``(script, commit)``.
    """

    path: str
    license: str
    stand_in: bool = False
    vendored: tuple[str, ...] = ()
    built_by: tuple[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class BuildInfo:
    """``build-info.json``: what was built, from which source, with which toolchain."""

    source_commit: str
    cuda_version: str
    cuda_arch: str
    compiler: str
    engine_files: tuple[EngineFile, ...]


@dataclass(frozen=True, kw_only=True)
class VendoredSource:
    """A third-party source tree compiled into the engine (lock ``vendored[]``)."""

    name: str
    version: str
    commit: str
    license: str
    purl: str
    source_url: str
    supplier: str


@dataclass(frozen=True, kw_only=True)
class Redistributable:
    """A third-party binary shipped as-is (lock ``redistributables[]``); ``sha256`` lowercase hex."""

    file: str
    group: str
    package: str
    version: str
    purl: str
    sha256: str
    supplier: str
    license: str
    stand_in: bool


@dataclass(frozen=True, kw_only=True)
class DependencyLock:
    """``dependencies.lock.json``: every vendored source and redistributable file, resolved."""

    vendored: tuple[VendoredSource, ...]
    redistributables: tuple[Redistributable, ...]

    def to_bytes(self) -> bytes:
        """The lock document (schema 1) as stable JSON bytes (sorted keys, LF, trailing newline)."""
        return dumps_stable(
            {
                "schema": 1,
                "vendored": [dataclasses.asdict(v) for v in self.vendored],
                "redistributables": [dataclasses.asdict(r) for r in self.redistributables],
            }
        )

    def redistributable(self, path: str) -> Redistributable | None:
        """The lock entry for staged path ``path``, if any."""
        for r in self.redistributables:
            if r.file == path:
                return r
        return None


class StagedFile(FrozenKeyed):
    """One regular file of the staged tree (immutable).

    ``path`` is relative, ``/``-separated, NFC; ``source`` is the absolute file whose bytes are
    shipped (for a symlink inside the tree: the resolved target, C23), a :class:`~pathlib.Path`
    made when asked, and ``source_file`` the same name as a ``str`` (what the build opens);
    ``size`` is from ``stat`` in bytes; ``link_target`` is the symlink's relative target path, or
    ``None``. Built as ``StagedFile(path=, source=, size=, link_target=)`` (``source`` a path or
    ``str``); equal, with the same hash, when those four are.

    One is kept per staged file through the build (issue 13: memory at 100k files): it has slots,
    holds no ``Path``, and a file whose name in the tree is ``<root>/<path>`` (not a symlink, no
    NFC change) keeps no name of its own: its ``source_file`` is made when asked from the tree's
    root, one string shared by the tree's files (about 0.6 KiB per file before, under 0.2 KiB now with
    its ``path`` and ``size``).
    """

    _FIELDS = ("path", "source", "size", "link_target")
    __slots__ = ("_root", "_source", "link_target", "path", "size")
    path: str
    size: int
    link_target: str | None
    _root: str  # the tree's root and a separator, when ``_source`` is None
    _source: str | None

    def __init__(
        self, *, path: str, source: str | os.PathLike[str], size: int, link_target: str | None = None
    ) -> None:
        self._set(path, size, link_target, "", os.fspath(source))

    @classmethod
    def in_tree(cls, root: str, path: str, size: int) -> StagedFile:
        """The regular file at ``root + path`` (``root``: the tree's absolute root ending in ``/``,
        the same string for each of its files)."""
        new = cls.__new__(cls)
        new._set(path, size, None, root, None)
        return new

    def _set(self, path: str, size: int, link_target: str | None, root: str, source: str | None) -> None:
        setter = object.__setattr__
        setter(self, "path", path)
        setter(self, "size", size)
        setter(self, "link_target", link_target)
        setter(self, "_root", root)
        setter(self, "_source", source)

    @property
    def source_file(self) -> str:
        """The absolute file whose bytes are shipped, as a ``str``."""
        return self._root + self.path if self._source is None else self._source

    @property
    def source(self) -> Path:
        """The absolute file whose bytes are shipped (``source_file`` as a path)."""
        return Path(self.source_file)

    def _key(self) -> tuple[str, str, int, str | None]:
        return (self.path, self.source_file, self.size, self.link_target)


@dataclass(frozen=True, kw_only=True)
class StagedTree:
    """A loaded, cross-checked staged engine build for one lane."""

    root: Path
    lane_id: str
    build_info: BuildInfo
    lock: DependencyLock
    files: tuple[StagedFile, ...]

    def file(self, path: str) -> StagedFile | None:
        """The staged file at relative ``path``, if any."""
        for f in self.files:
            if f.path == path:
                return f
        return None

    def vendored_in(self, engine_path: str) -> tuple[VendoredSource, ...]:
        """The lock's vendored sources ``build-info.json`` says engine file ``engine_path`` contains
        (its ``engine_files[].vendored``; none for any other path), in lock order."""
        return vendored_in(self.build_info, self.lock, engine_path)

    def contained_vendored(self) -> tuple[VendoredSource, ...]:
        """The lock's vendored sources some engine file contains, per ``build-info.json``, in lock
        order: the only vendored sources the SBOMs and NOTICE name (issue 35 item 1)."""
        named = {n for e in self.build_info.engine_files for n in e.vendored}
        return tuple(v for v in self.lock.vendored if v.name in named)


def vendored_in(info: BuildInfo, lock: DependencyLock, engine_path: str) -> tuple[VendoredSource, ...]:
    """What :meth:`StagedTree.vendored_in` gives, from the two documents (``()`` for a path that is
    no engine file)."""
    names = next((set(e.vendored) for e in info.engine_files if e.path == engine_path), set())
    return tuple(v for v in lock.vendored if v.name in names)


#: Field access that collects problems (shared with the samples stage).
_Doc = FieldReader


def _read_json(path: Path, problems: list[Problem]) -> Mapping[str, Any] | None:
    try:
        return strictjson.read_object(
            path, limit=MAX_DOCUMENT, missing="missing from the staged tree", follow_symlinks=False
        )
    except InputError as exc:
        problems.extend(exc.problems)
        return None


def _check_rel_path(doc: _Doc, field: str, value: str) -> str:
    """A path named inside build-info/lock: relative, ``/``-separated, no ``..``."""
    if "\\" in value:
        doc.bad(field, f"{value!r} contains a backslash; staged paths use '/' (C17)")
    elif value.startswith("/") or ".." in value.split("/") or value != os.path.normpath(value):
        doc.bad(field, f"{value!r} is not a normalised relative path inside the staged tree")
    return unicodedata.normalize("NFC", value)


def _flag(doc: _Doc, item: Mapping[str, Any], key: str, where: str) -> bool:
    """An optional JSON boolean (absent = ``False``); anything else is a problem at ``where.key``."""
    value = item.get(key, False)
    if not isinstance(value, bool):
        doc.bad(f"{where}.{key}", f"must be true or false (got {value!r})")
        return False
    return value


def _names(doc: _Doc, item: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """``engine_files[i].vendored``: an optional list of distinct non-empty names, sorted."""
    value = item.get("vendored", [])
    if not isinstance(value, list) or not all(isinstance(n, str) and n for n in value):
        doc.bad(f"{where}.vendored", "must be a list of vendored source names (strings)")
        return ()
    if len(set(value)) != len(value):
        doc.bad(f"{where}.vendored", "names a vendored source twice")
    return tuple(sorted(set(value)))


def _built_by(doc: _Doc, item: Mapping[str, Any], where: str) -> tuple[str, str] | None:
    """``engine_files[i].built_by``: ``{"script": <repo path>, "commit": <40 hex>}`` or absent."""
    value = item.get("built_by")
    if value is None:
        return None
    if not isinstance(value, Mapping):
        doc.bad(f"{where}.built_by", "must be an object {script, commit}")
        return None
    doc.known_keys(value, f"{where}.built_by", ("script", "commit"))
    script = _check_rel_path(doc, f"{where}.built_by.script", doc.text(value, "script", f"{where}.built_by"))
    commit = doc.text(value, "commit", f"{where}.built_by")
    if commit and not _COMMIT.fullmatch(commit):
        doc.bad(f"{where}.built_by.commit", f"{commit!r} is not a full 40-hex commit")
    return (script, commit)


def _parse_build_info(data: Mapping[str, Any], doc: _Doc) -> BuildInfo:
    doc.known_keys(
        data, "", ("schema", "source_commit", "cuda_version", "cuda_arch", "compiler", "engine_files")
    )
    if not strictjson.json_equal(data.get("schema"), 1):
        doc.bad("schema", f"unsupported schema {data.get('schema')!r}; expected 1")
    engine: list[EngineFile] = []
    for i, item in enumerate(doc.items(data, "engine_files")):
        where = f"engine_files[{i}]"
        doc.known_keys(item, where, ("path", "license", "stand_in", "vendored", "built_by"))
        path = _check_rel_path(doc, f"{where}.path", doc.text(item, "path", where))
        stand_in = _flag(doc, item, "stand_in", where)
        engine.append(
            EngineFile(
                path=path,
                license=doc.text(item, "license", where),
                stand_in=stand_in,
                vendored=_names(doc, item, where),
                built_by=_built_by(doc, item, where),
            )
        )
    return BuildInfo(
        source_commit=doc.text(data, "source_commit", ""),
        cuda_version=doc.text(data, "cuda_version", ""),
        cuda_arch=doc.text(data, "cuda_arch", ""),
        compiler=doc.text(data, "compiler", ""),
        engine_files=tuple(engine),
    )


#: How ``lock init`` marks what it could not know (``"TODO(lock init): <what to fill in>"``).
TODO_MARKER = "TODO"


def _todo_fields(value: Any, where: str = "") -> list[tuple[str, str]]:
    """(field path, marker text) of every string value that is still a ``TODO`` marker."""
    if isinstance(value, str):
        return [(where, value)] if value.startswith(TODO_MARKER) else []
    if isinstance(value, Mapping):
        return [t for k, v in value.items() for t in _todo_fields(v, f"{where}.{k}" if where else str(k))]
    if isinstance(value, list):
        return [t for i, v in enumerate(value) for t in _todo_fields(v, f"{where}[{i}]")]
    return []


def _parse_lock(data: Mapping[str, Any], doc: _Doc) -> DependencyLock:
    # A draft from ``lock init`` is not a lock: name every marker left in it, and nothing else.
    todos = _todo_fields(data)
    if todos:
        items = data.get("redistributables")
        files = (
            [i.get("file") if isinstance(i, Mapping) else None for i in items]
            if isinstance(items, list)
            else []
        )

        def which(field: str) -> str:
            m = re.match(r"redistributables\[(\d+)\]", field)
            name = files[int(m.group(1))] if m and int(m.group(1)) < len(files) else None
            return f" of {name}" if isinstance(name, str) else ""

        raise InputError(
            problems=[
                Problem(
                    file=doc.file,
                    field=f,
                    message=f"still a lock init marker{which(f)}: {text!r}; fill it in",
                )
                for f, text in todos
            ]
        )
    doc.known_keys(data, "", ("schema", "vendored", "redistributables"))
    if not strictjson.json_equal(data.get("schema"), 1):
        doc.bad("schema", f"unsupported schema {data.get('schema')!r}; expected 1")
    vendored: list[VendoredSource] = []
    for i, item in enumerate(doc.items(data, "vendored")):
        w = f"vendored[{i}]"
        doc.known_keys(item, w, ("name", "version", "commit", "license", "purl", "source_url", "supplier"))
        vendored.append(
            VendoredSource(
                name=doc.text(item, "name", w),
                version=doc.text(item, "version", w),
                commit=doc.text(item, "commit", w, pattern=_COMMIT),
                license=doc.text(item, "license", w),
                purl=doc.text(item, "purl", w),
                source_url=doc.text(item, "source_url", w),
                supplier=doc.text(item, "supplier", w),
            )
        )
    redist: list[Redistributable] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(doc.items(data, "redistributables")):
        w = f"redistributables[{i}]"
        doc.known_keys(
            item,
            w,
            ("file", "group", "package", "version", "purl", "sha256", "supplier", "license", "stand_in"),
        )
        file = _check_rel_path(doc, f"{w}.file", doc.text(item, "file", w))
        if file in seen:
            doc.bad(f"{w}.file", f"{file!r} is already listed at redistributables[{seen[file]}]")
        seen.setdefault(file, i)
        group = doc.text(item, "group", w)
        if group and group not in GROUPS:
            doc.bad(f"{w}.group", f"{group!r} is not one of {sorted(GROUPS)}")
        stand_in = _flag(doc, item, "stand_in", w)
        redist.append(
            Redistributable(
                file=file,
                group=group,
                package=doc.text(item, "package", w),
                version=doc.text(item, "version", w),
                purl=doc.text(item, "purl", w),
                sha256=doc.text(item, "sha256", w, pattern=SHA256_HEX),
                supplier=doc.text(item, "supplier", w),
                license=doc.text(item, "license", w),
                stand_in=stand_in,
            )
        )
    return DependencyLock(vendored=tuple(vendored), redistributables=tuple(redist))


def _resolve_link(
    root: Path, real_root: Path, rel: str, name: str, problems: list[Problem]
) -> tuple[str, os.stat_result, str] | None:
    """The symlink ``name`` (staged path ``rel``) resolved inside the tree (C23): its target's
    absolute name, ``stat`` and the link's own target text; ``None`` (a problem recorded) when it
    leaves the tree (DESIGN §6), dangles or names a folder."""
    link_target = str(Path(name).readlink())
    resolved = Path(os.path.realpath(name))
    if resolved != real_root and real_root not in resolved.parents:
        why = f"symlink to {link_target!r} leaves the staged tree; refused (DESIGN §6)"
        problems.append(Problem(file=str(root), field=rel, message=why))
        return None
    try:
        st = resolved.stat()
    except FileNotFoundError:
        problems.append(Problem(file=str(root), field=rel, message=f"dangling symlink to {link_target!r}"))
        return None
    if stat.S_ISDIR(st.st_mode):
        why = f"symlink to folder {link_target!r}; only file symlinks are resolved (C23)"
        problems.append(Problem(file=str(root), field=rel, message=why))
        return None
    return str(resolved), st, link_target


def _staged_file(top: str, rel: str, source: str, size: int, link_target: str | None) -> StagedFile:
    """The staged file ``rel`` read from ``source``; without a name of its own when that is
    ``top + rel`` (:meth:`StagedFile.in_tree`, ``top``: the tree's root and ``/``)."""
    if (
        link_target is None
        and len(source) == len(top) + len(rel)
        and source.startswith(top)
        and source.endswith(rel)
    ):
        return StagedFile.in_tree(top, rel, size)
    return StagedFile(path=rel, source=source, size=size, link_target=link_target)


def _list_files(root: Path, problems: list[Problem]) -> list[StagedFile]:
    """Regular files under ``root`` (absolute) in sorted order; in-tree symlinks resolved (C23),
    others refused."""
    real_root = root.resolve()
    files: list[StagedFile] = []
    by_nfc: dict[str, str] = {}
    unlisted: list[OSError] = []
    walked = sorted_walk_names(root, errors=unlisted)
    top = os.fspath(root) + "/"  # one string shared by every file named ``top + path``
    for exc in unlisted:
        where = Path(exc.filename).relative_to(root).as_posix() if exc.filename else ""
        problems.append(
            Problem(file=str(root), field=where, message=f"cannot list directory: {exc.strerror or exc}")
        )
    for rel_raw, name in walked:
        try:
            rel_raw.encode("utf-8")
        except UnicodeEncodeError:
            problems.append(
                Problem(file=str(root), field=repr(rel_raw), message="file name is not valid UTF-8")
            )
            continue
        rel = unicodedata.normalize("NFC", rel_raw)
        st = os.lstat(name)
        link_target: str | None = None
        source = name  # absolute: the walk's names are joined to the absolute ``root``
        if stat.S_ISLNK(st.st_mode):
            link = _resolve_link(root, real_root, rel, name, problems)
            if link is None:
                continue
            source, st, link_target = link
        if stat.S_ISDIR(st.st_mode):
            continue
        if not stat.S_ISREG(st.st_mode):
            problems.append(
                Problem(file=str(root), field=rel, message="not a regular file (device, fifo or socket)")
            )
            continue
        unreadable = _unreadable(source)
        if unreadable:
            problems.append(Problem(file=str(root), field=rel, message=f"cannot read: {unreadable}"))
            continue
        other = by_nfc.setdefault(rel, rel_raw)
        if other != rel_raw:
            problems.append(
                Problem(
                    file=str(root), field=rel, message=f"{rel_raw!r} and {other!r} are the same name in NFC"
                )
            )
            continue
        files.append(_staged_file(top, rel, source, st.st_size, link_target))
    files.sort(key=lambda f: f.path.encode("utf-8"))
    return files


def read_build_info(path: Path) -> BuildInfo:
    """Read and check one ``build-info.json`` on its own (``lock init`` needs its engine files).

    Raises:
        InputError: missing, not strict JSON, or invalid; every problem listed (exit 4).
    """
    problems: list[Problem] = []
    data = _read_json(path, problems)
    info = _parse_build_info(data, _Doc(str(path), problems)) if data is not None else None
    if problems or info is None:
        raise InputError(problems=problems)
    return info


def _unreadable(path: str) -> str:
    """The OS reason ``path`` cannot be opened for reading, or ``""`` (no content is read)."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as exc:
        return exc.strerror or str(exc)
    return ""


def _lane_tree(root: Path, lane_id: str) -> Path:
    """``root`` itself, or ``root/<lane_id>`` when only that holds a ``build-info.json``; absolute.

    Raises:
        InputError: the tree is not a directory (exit 4).
    """
    if not (root / BUILD_INFO).exists() and (root / lane_id / BUILD_INFO).exists():
        root = root / lane_id
    if not root.is_dir():
        raise InputError(
            problems=[Problem(file=str(root), message="staged tree not found (expected a directory)")]
        )
    return root.absolute()


def _check_lane_fields(info: BuildInfo, doc: _Doc, lane_id: str, expected: Mapping[str, str]) -> None:
    """``build-info.json``'s ``source_commit``, ``cuda_arch``, ``cuda_version`` equal ``expected``'s."""
    for field, want in expected.items():
        got = getattr(info, field)
        if got and got != want:
            doc.bad(field, f"{got!r} does not match lane {lane_id}'s {want!r} in the release definition")


def _check_listed_present(
    info: BuildInfo, lock: DependencyLock, present: Collection[str], info_doc: _Doc, lock_doc: _Doc
) -> None:
    """Every engine file and redistributable is in the tree; no file is listed as both."""
    redist = {r.file for r in lock.redistributables}
    for i, e in enumerate(info.engine_files):
        if e.path and e.path not in present:
            info_doc.bad(f"engine_files[{i}].path", f"{e.path!r} is not in the staged tree")
        if e.path in redist:
            info_doc.bad(
                f"engine_files[{i}].path", f"{e.path!r} is also listed as a redistributable in the lock"
            )
    for i, r in enumerate(lock.redistributables):
        if r.file and r.file not in present:
            lock_doc.bad(f"redistributables[{i}].file", f"{r.file!r} is not in the staged tree")
    _check_vendored_claims(info, lock, info_doc)


def _check_vendored_claims(info: BuildInfo, lock: DependencyLock, info_doc: _Doc) -> None:
    """Each ``engine_files[i].vendored`` name is a lock ``vendored[]`` source, and a stand-in names
    none: a placeholder contains no vendored source (issue 35 item 1)."""
    locked = {v.name for v in lock.vendored}
    for i, e in enumerate(info.engine_files):
        for name in e.vendored:
            if name not in locked:
                info_doc.bad(f"engine_files[{i}].vendored", f"{name!r} is not a vendored source of {LOCK}")
        if e.stand_in and e.vendored:
            info_doc.bad(
                f"engine_files[{i}].vendored",
                "a stand-in contains no vendored source; list none (the real engine build lists its own)",
            )


def _unaccounted_binaries(
    root: Path, files: list[StagedFile], info: BuildInfo, lock: DependencyLock
) -> list[Problem]:
    """A problem for each file under ``bin/`` that is neither an engine file nor a redistributable."""
    known = {e.path for e in info.engine_files} | {r.file for r in lock.redistributables}
    return [
        Problem(
            file=str(root), field=f.path, message=f"unaccounted binary: in neither {BUILD_INFO} nor {LOCK}"
        )
        for f in files
        if f.path.startswith("bin/") and f.path not in known
    ]


def load_staged_tree(
    root: Path, *, lane_id: str, source_commit: str, cuda_arch: str, cuda_version: str
) -> StagedTree:
    """Load and cross-check the staged engine build of lane ``lane_id`` (``docs/staged-inputs.md``).

    ``root`` is the lane's tree, or its parent holding ``<lane_id>/``. Reads ``build-info.json`` and
    ``dependencies.lock.json`` (small JSON) and lists every file (no content reads). Symlinks
    inside the tree are resolved: the target's bytes ship under the link's name, never a link
    entry (C23). Every problem is collected and raised at once.

    Checks: both documents well formed (schema 1, known fields, types); ``source_commit``,
    ``cuda_arch``, ``cuda_version`` equal the lane's; every file under ``bin/`` is an engine file or
    a lock redistributable; every engine file and redistributable exists; no symlink leaves the
    tree (DESIGN.md §6); no special files; no two names equal after NFC.

    Raises:
        InputError: the tree or a document is missing or invalid, or any check fails (exit 4);
            mismatches name ``build-info.json`` and the field.
    """
    root = _lane_tree(root, lane_id)
    problems: list[Problem] = []
    info_path, lock_path = root / BUILD_INFO, root / LOCK
    info_doc, lock_doc = _Doc(str(info_path), problems), _Doc(str(lock_path), problems)
    info_data = _read_json(info_path, problems)
    lock_data = _read_json(lock_path, problems)
    info = _parse_build_info(info_data, info_doc) if info_data is not None else None
    lock = _parse_lock(lock_data, lock_doc) if lock_data is not None else None
    files = _list_files(root, problems)
    if info is None or lock is None:
        raise InputError(problems=problems)
    lane = {"source_commit": source_commit, "cuda_arch": cuda_arch, "cuda_version": cuda_version}
    _check_lane_fields(info, info_doc, lane_id, lane)
    _check_listed_present(info, lock, {f.path for f in files}, info_doc, lock_doc)
    problems += _unaccounted_binaries(root, files, info, lock)
    if problems:
        raise InputError(problems=problems)
    return StagedTree(root=root, lane_id=lane_id, build_info=info, lock=lock, files=tuple(files))


def check_lock_digests(staged: StagedTree, sha256_by_path: Mapping[str, str]) -> None:
    """Compare each redistributable's lock SHA-256 with the digest computed while packaging.

    ``sha256_by_path`` maps staged paths (``bin/cudart64_13.dll``) to lowercase hex, e.g. from
    :class:`~ninfer_release.packaging.CompressedMember` ``source_path``/``sha256`` (one read per byte).

    Raises:
        InputError: a redistributable's bytes differ from the lock, or it was not hashed (exit 4,
            ``docs/staged-inputs.md``).
    """
    problems: list[Problem] = []
    lock_file = str(staged.root / LOCK)
    for i, r in enumerate(staged.lock.redistributables):
        got = sha256_by_path.get(r.file)
        if got is None:
            problems.append(
                Problem(
                    file=lock_file, field=f"redistributables[{i}].file", message=f"{r.file!r} was not hashed"
                )
            )
        elif got != r.sha256:
            problems.append(
                Problem(
                    file=lock_file,
                    field=f"redistributables[{i}].sha256",
                    message=f"{r.file!r} has SHA-256 {got}, the lock says {r.sha256}",
                )
            )
    if problems:
        raise InputError(problems=problems)


def check_stand_in_claims(
    staged: StagedTree,
    markers: Mapping[str, tuple[str, str]],
    versioned: Collection[str] = (),
) -> None:
    """Refuse a file whose own version resource says "stand-in" while its input says it is real,
    and one declared a stand-in whose version resource presents it as the real file.

    ``markers`` maps staged paths to the (version-string key, value) that labels the file a
    stand-in (``sbom.stand_in_marker``). Each such file must be declared ``"stand_in": true`` by the
    document that ships it: ``build-info.json`` ``engine_files[i]`` or the lock's
    ``redistributables[i]`` (issue 8 item 5: a placeholder is never presented as the real thing).
    ``versioned`` names the staged PE files that have version strings; one of them without a
    marker that is declared a stand-in is refused too: a real file is never labelled a
    placeholder (a stand-in with no version resource at all stays allowed).

    Raises:
        InputError: one problem per false claim, naming the document, the field and the file (exit 4).
    """
    problems: list[Problem] = []
    claims: list[tuple[str, str, str, bool]] = [
        (str(staged.root / BUILD_INFO), f"engine_files[{i}].stand_in", e.path, e.stand_in)
        for i, e in enumerate(staged.build_info.engine_files)
    ]
    claims += [
        (str(staged.root / LOCK), f"redistributables[{i}].stand_in", r.file, r.stand_in)
        for i, r in enumerate(staged.lock.redistributables)
    ]
    for document, field, path, stand_in in claims:
        marker = markers.get(path)
        if marker is None and stand_in and path in versioned:
            problems.append(
                Problem(
                    file=document,
                    field=field,
                    message=f"{path} is declared a stand-in, but its version resource does not say so "
                    '(it presents the real file); set "stand_in": false, or ship the stand-in',
                )
            )
        if marker is not None and not stand_in:
            key, value = marker
            problems.append(
                Problem(
                    file=document,
                    field=field,
                    message=f"{path}'s version resource says {value!r} ({key}), but it is not declared "
                    'a stand-in; set "stand_in": true',
                )
            )
    if problems:
        raise InputError(problems=problems)
