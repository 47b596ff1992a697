"""What changed between two releases, per lane (``ninfer-release diff OLD NEW``).

Each side is a release manifest (``release-manifest.json``, or a build ``OUT`` directory holding
one; its sets are read from ``OUT/<lane>/`` when they are there) or one native asset set
directory. Per lane: the lane entry's fields (component tag, profile, source, CUDA, qualification
…), the package (zip SHA-256 and size), the config hash, the route block (``<stem>.route.json``,
field by field), the model binding (``<stem>.model.json``, field by field) and the SBOM components
(``<stem>.cdx.json``: added, removed, upgraded by name). A block whose document is not available
on one side (a release manifest without its sets) is compared by its SHA-256 only, and says so.

:func:`route_changes` is the comparison the build uses to require a declared
``document_change`` for a changed route or model-download block.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import strictjson
from ninfer_release.errors import InputError, Problem
from ninfer_release.manifests import ReleaseManifest
from ninfer_release.releases._contract import ENTRY_SUFFIXES, SUMS_NAME, AssetNames, stem_from_names
from ninfer_release.releases._records import ComponentManifest

#: Size bounds (bytes) of what ``diff`` reads: manifests, blocks and SBOMs are small JSON.
MAX_DIFF_DOC_BYTES = 16 << 20
#: Lane-entry keys compared field by field (``entries`` and ``sha256sums`` are covered per file).
_SKIP_FIELDS = ("entries",)


@dataclass(frozen=True, kw_only=True)
class FieldChange:
    """One changed value at a dotted path; ``None`` on a side that has no such field."""

    path: str
    old: Any
    new: Any

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "old": self.old, "new": self.new}


@dataclass(frozen=True, kw_only=True)
class ComponentChanges:
    """SBOM components (CycloneDX, by name) added, removed, or whose version changed."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    upgraded: tuple[FieldChange, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.upgraded)

    def as_json(self) -> dict[str, Any]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "upgraded": [u.as_json() for u in self.upgraded],
        }


@dataclass(frozen=True, kw_only=True)
class LaneDiff:
    """How one lane differs. ``status``: ``added``, ``removed``, ``changed`` or ``unchanged``.

    ``route`` / ``model`` hold field changes of those blocks; when a side's document was not
    available they hold one change at path ``sha256`` (the entry's digest), and ``notes`` says so.
    """

    lane: str
    status: str
    fields: tuple[FieldChange, ...] = ()
    package: tuple[FieldChange, ...] = ()
    config: tuple[FieldChange, ...] = ()
    route: tuple[FieldChange, ...] = ()
    model: tuple[FieldChange, ...] = ()
    sbom: ComponentChanges = ComponentChanges()
    notes: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "lane": self.lane,
            "status": self.status,
            "fields": [c.as_json() for c in self.fields],
            "package": [c.as_json() for c in self.package],
            "config": [c.as_json() for c in self.config],
            "route": [c.as_json() for c in self.route],
            "model": [c.as_json() for c in self.model],
            "sbom": self.sbom.as_json(),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, kw_only=True)
class ReleaseDiff:
    """Every lane's :class:`LaneDiff` (sorted by lane) and the release-level field changes."""

    old: str
    new: str
    release: tuple[FieldChange, ...]
    lanes: tuple[LaneDiff, ...]

    @property
    def changed(self) -> bool:
        return bool(self.release) or any(d.status != "unchanged" for d in self.lanes)

    def as_json(self) -> dict[str, Any]:
        return {
            "old": self.old,
            "new": self.new,
            "changed": self.changed,
            "release": [c.as_json() for c in self.release],
            "lanes": [d.as_json() for d in self.lanes],
        }


@dataclass(frozen=True, kw_only=True)
class _Lane:
    """One side of one lane: its release-manifest entry and the set directory, if available."""

    entry: Mapping[str, Any]
    set_dir: Path | None
    from_set: bool = False  # the entry is a set's component manifest, not a release-manifest entry


@dataclass(frozen=True, kw_only=True)
class _Side:
    release: Mapping[str, Any]
    lanes: Mapping[str, _Lane]


def _read(path: Path) -> Any:
    return strictjson.read(path, limit=MAX_DIFF_DOC_BYTES)


def flatten(doc: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}, "c": [2]}`` → ``{"a.b": 1, "c[0]": 2}`` (leaves only)."""
    if isinstance(doc, Mapping):
        if not doc:
            return {prefix: {}} if prefix else {}
        out: dict[str, Any] = {}
        for k, v in doc.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(doc, list):
        if not doc:
            return {prefix: []}
        out = {}
        for i, v in enumerate(doc):
            out.update(flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: doc}


def field_changes(old: Any, new: Any) -> tuple[FieldChange, ...]:
    """Every leaf path whose value differs between ``old`` and ``new`` (sorted by path)."""
    a, b = flatten(old), flatten(new)
    return tuple(
        FieldChange(path=p, old=a.get(p), new=b.get(p))
        for p in sorted(set(a) | set(b))
        if a.get(p) != b.get(p)
    )


def route_changes(old_route: Any, new_route: Any) -> tuple[FieldChange, ...]:
    """Field changes of a route block (the ``model`` sub-block is the model-download block)."""
    return field_changes(old_route, new_route)


def _set_lane(set_dir: Path) -> tuple[str, _Lane]:
    try:
        stem = stem_from_names(sorted(p.name for p in set_dir.iterdir()))
    except OSError as exc:
        raise InputError(
            problems=[Problem(file=str(set_dir), message=f"cannot list: {exc.strerror}")]
        ) from None
    if stem is None or not (set_dir / SUMS_NAME).is_file():
        raise InputError(
            problems=[
                Problem(file=str(set_dir), message="not a release manifest, a build output or an asset set")
            ]
        )
    path = set_dir / AssetNames(stem=stem).manifest
    doc = _read(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("lane"), str):
        raise InputError(
            problems=[Problem(file=str(set_dir), field="lane", message="component manifest names no lane")]
        )
    manifest = ComponentManifest.parse_doc(doc, source=str(path), error=InputError)
    return manifest.lane, _Lane(entry=manifest.to_json(), set_dir=set_dir, from_set=True)


def _load(location: Path) -> _Side:
    """One side of the diff: a release manifest (parsed as :class:`ReleaseManifest`, its lane
    entries compared as the typed entries render them) or one set (its component manifest parsed
    as :class:`ComponentManifest`). Raises InputError (exit 4) naming the file and field."""
    manifest_path = location / "release-manifest.json" if location.is_dir() else location
    if location.is_dir() and not manifest_path.is_file():
        lane, one = _set_lane(location)
        return _Side(release={}, lanes={lane: one})
    doc = _read(manifest_path)
    if not isinstance(doc, dict) or not isinstance(doc.get("lanes"), dict):
        raise InputError(
            problems=[Problem(file=str(manifest_path), field="lanes", message="not a release manifest")]
        )
    for lane, entry in doc["lanes"].items():
        if not isinstance(entry, dict):
            raise InputError(
                problems=[Problem(file=str(manifest_path), field=f"lanes.{lane}", message="not an object")]
            )
    manifest = ReleaseManifest.parse_doc(doc, source=str(manifest_path), error=InputError)
    lanes: dict[str, _Lane] = {}
    for lane, typed in manifest.lanes.items():
        beside = manifest_path.parent / lane
        set_dir = beside if (beside / SUMS_NAME).is_file() else None
        lanes[lane] = _Lane(entry=typed.to_json(), set_dir=set_dir)
    release = {k: v for k, v in manifest.to_json().items() if k != "lanes"}
    return _Side(release=release, lanes=lanes)


def _entry_digests(entry: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Contract suffix (``.zip``, ``.route.json`` …) → the lane entry's file reference."""
    out: dict[str, Mapping[str, Any]] = {}
    for ref in entry.get("entries") or []:
        if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
            for suffix in ENTRY_SUFFIXES:
                if ref["name"].endswith(suffix):
                    out[suffix] = ref
    return out


def _block(lane: _Lane, suffix: str) -> Any:
    """The set's ``<stem><suffix>`` document, or ``None`` when the set is not available."""
    if lane.set_dir is None:
        return None
    refs = _entry_digests(lane.entry)
    ref = refs.get(suffix)
    if ref is None:
        return None
    path = lane.set_dir / str(ref["name"])
    return _read(path) if path.is_file() else None


def _block_changes(
    old: _Lane, new: _Lane, suffix: str, label: str, notes: list[str]
) -> tuple[FieldChange, ...]:
    a, b = _block(old, suffix), _block(new, suffix)
    if a is not None and b is not None:
        return field_changes(a, b)
    da = _entry_digests(old.entry).get(suffix, {}).get("sha256")
    db = _entry_digests(new.entry).get(suffix, {}).get("sha256")
    if da == db:
        return ()
    notes.append(f"{label}: compared by SHA-256 only (its set is not beside the release manifest)")
    return (FieldChange(path="sha256", old=da, new=db),)


def _components(lane: _Lane) -> dict[str, str | None] | None:
    cdx = _block(lane, ".cdx.json")
    if not isinstance(cdx, dict):
        return None
    out: dict[str, str | None] = {}
    for c in cdx.get("components") or []:
        if isinstance(c, Mapping) and isinstance(c.get("name"), str):
            version = c.get("version")
            out[c["name"]] = version if isinstance(version, str) else None
    return out


def _sbom_changes(old: _Lane, new: _Lane, notes: list[str]) -> ComponentChanges:
    a, b = _components(old), _components(new)
    if a is None or b is None:
        if _entry_digests(old.entry).get(".cdx.json") != _entry_digests(new.entry).get(".cdx.json"):
            notes.append("sbom: components not compared (its set is not beside the release manifest)")
        return ComponentChanges()
    return ComponentChanges(
        added=tuple(sorted(set(b) - set(a))),
        removed=tuple(sorted(set(a) - set(b))),
        upgraded=tuple(
            FieldChange(path=n, old=a[n], new=b[n]) for n in sorted(set(a) & set(b)) if a[n] != b[n]
        ),
    )


def _lane_diff(lane: str, old: _Lane, new: _Lane) -> LaneDiff:
    notes: list[str] = []
    skip: tuple[str, ...] = (*_SKIP_FIELDS, "config")
    if old.from_set != new.from_set:
        # A component manifest and a release-manifest entry hold different keys: compare the shared ones.
        shared = set(old.entry) & set(new.entry)
        skip = (*skip, *(k for k in {*old.entry, *new.entry} if k not in shared))
    fields = field_changes(
        {k: v for k, v in old.entry.items() if k not in skip},
        {k: v for k, v in new.entry.items() if k not in skip},
    )
    package = field_changes(
        {
            k: v
            for k, v in _entry_digests(old.entry).get(".zip", {}).items()
            if k in ("name", "sha256", "size")
        },
        {
            k: v
            for k, v in _entry_digests(new.entry).get(".zip", {}).items()
            if k in ("name", "sha256", "size")
        },
    )
    config = field_changes(old.entry.get("config"), new.entry.get("config"))
    route = _block_changes(old, new, ".route.json", "route", notes)
    model = _block_changes(old, new, ".model.json", "model", notes)
    sbom = _sbom_changes(old, new, notes)
    changed = fields or package or config or route or model or not sbom.empty
    return LaneDiff(
        lane=lane,
        status="changed" if changed else "unchanged",
        fields=fields,
        package=package,
        config=config,
        route=route,
        model=model,
        sbom=sbom,
        notes=tuple(notes),
    )


def diff_releases(old: Path, new: Path) -> ReleaseDiff:
    """Compare two releases (module docstring); pure reading, nothing is written.

    Raises:
        InputError: a side is missing, not a release manifest / build output / asset set, its
            release or component manifest is not that typed record (a field missing, unknown or
            of the wrong type), or one of its documents is not strict JSON or is over
            :data:`MAX_DIFF_DOC_BYTES` (exit 4).
    """
    a, b = _load(old), _load(new)
    names = set(a.lanes) | set(b.lanes)
    if not a.release or not b.release:  # one side is a single set: compare that lane only
        names = set(a.lanes) & set(b.lanes) or names
    lanes: list[LaneDiff] = []
    for lane in sorted(names):
        if lane not in a.lanes:
            lanes.append(LaneDiff(lane=lane, status="added"))
        elif lane not in b.lanes:
            lanes.append(LaneDiff(lane=lane, status="removed"))
        else:
            lanes.append(_lane_diff(lane, a.lanes[lane], b.lanes[lane]))
    release = field_changes(a.release, b.release) if a.release and b.release else ()
    return ReleaseDiff(old=str(old), new=str(new), release=release, lanes=tuple(lanes))
