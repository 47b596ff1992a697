"""The ``lanes`` of the release definition → validated :class:`Lane` records.

Each lane is read field by field (:func:`_lane_fields`), then the rules of its kind and mode
(:func:`_lane_rules`: a windows-zip lane is built fresh and has a package recipe; a carried lane
names its record); a carried lane's record is loaded and checked (``_carried.py``). Every problem
is collected in the definition's :class:`~ninfer_release.profiles._check.Checker`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ninfer_release.errors import NinferError
from ninfer_release.manifests._carried import CarriedImage, load_carried_record
from ninfer_release.profiles._check import HEX40, SHORT_HEX, Checker
from ninfer_release.profiles._profile import COMPONENT_TAG, CUDA_ARCH, LANE_ID, PROFILE_ID

CUDA_VERSION = re.compile(r"[0-9]+\.[0-9]+")
REL_PATH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)*")
#: A registry repository path (OCI distribution spec grammar), e.g. ``omp-ninfer/rtx4090``.
REPOSITORY = re.compile(r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*")
LaneKind = Literal["windows-zip", "oci-image"]
LaneMode = Literal["build", "carry"]


@dataclass(frozen=True, kw_only=True)
class Lane:
    """One lane of the release: a Windows zip built fresh, or an OCI image (built or carried)."""

    id: str
    component_tag: str
    kind: LaneKind
    mode: LaneMode
    profile_id: str
    source_commit: str
    cuda_arch: str | None
    cuda_version: str | None
    gpu: str
    package_recipe: str | None
    container_recipe: str | None
    carried_from: str | None
    carried: CarriedImage | None
    rollback: str | None
    #: Where this lane's sets are published (ours): a registry repository path such as
    #: ``omp-ninfer/rtx4090``, host-independent. A store whose repository (or directory) path is
    #: it, or ends in ``/`` + it, belongs to this lane; ``None`` when the definition names none.
    publication_repository: str | None = None

    def owns_store_path(self, path: str) -> bool:
        """Whether a store's repository or directory path ``path`` is this lane's repository:
        equal to it or ending in ``/<repository>`` (a registry namespace or store root may precede it)."""
        repo = self.publication_repository
        path = path.rstrip("/")
        return repo is not None and (path == repo or path.endswith("/" + repo))


_LANE_KEYS = ("component_tag", "kind", "mode", "profile", "source_commit", "gpu")


_LANE_OPTIONAL = (
    "cuda_arch",
    "cuda_version",
    "package_recipe",
    "container_recipe",
    "carried_from",
    "rollback",
    "publication_repository",
)


def _lanes(c: Checker, d: dict[str, Any], root_dir: Path) -> list[Lane]:
    """``lanes``: every lane that reads completely (the others' problems are in ``c``)."""
    lanes_map = c.get_mapping(d, "", "lanes")
    if lanes_map is None:
        return []
    if not lanes_map:
        c.add("lanes", "at least one lane is required")
    out: list[Lane] = []
    for lane_id, raw in lanes_map.items():
        f = f"lanes.{lane_id}"
        if not LANE_ID.fullmatch(lane_id):
            c.add(f, f"{lane_id!r} is not a lane id ([a-z0-9-])")
            continue
        ld = c.mapping(raw, f)
        if ld is None:
            continue
        lane = _lane(c, lane_id, ld, root_dir)
        if lane is not None:
            out.append(lane)
    return out


@dataclass(frozen=True, kw_only=True)
class _LaneFields:
    """One lane's fields as read (``None``: missing or invalid, reported)."""

    tag: str | None
    kind: str | None
    mode: str | None
    profile: str | None
    source: str | None
    cuda_arch: str | None
    cuda_version: str | None
    gpu: str | None
    package_recipe: str | None
    container_recipe: str | None
    carried_from: str | None
    rollback: str | None
    repository: str | None

    @property
    def native(self) -> bool:
        return self.kind == "windows-zip"


def _lane_source(c: Checker, ld: dict[str, Any], f: str, mode: str | None) -> str | None:
    """``source_commit``: a hex commit; a fresh build needs the full 40 hex."""
    source = c.get_str(ld, f, "source_commit", pattern=SHORT_HEX, what="a hex commit")
    if source is not None and mode == "build" and not HEX40.fullmatch(source):
        c.add(
            f"{f}.source_commit",
            f"{source!r} is not a full 40-hex commit; a fresh build needs one "
            "(a short prefix or branch is not an identity)",
        )
        return None
    return source


def _lane_fields(c: Checker, ld: dict[str, Any], f: str) -> _LaneFields:
    """Read one lane's keys and fields, in the order their problems are reported."""
    c.keys(ld, f, required=_LANE_KEYS, optional=_LANE_OPTIONAL)
    tag = c.get_str(
        ld, f, "component_tag", pattern=COMPONENT_TAG, what="a component tag like v0.7.0-x-beta.2"
    )
    kind = c.get_str(ld, f, "kind", choices=("windows-zip", "oci-image"))
    mode = c.get_str(ld, f, "mode", choices=("build", "carry"))
    profile = c.get_str(ld, f, "profile", pattern=PROFILE_ID, what="a profile id", max_len=120)
    source = _lane_source(c, ld, f, mode)
    native = kind == "windows-zip"
    return _LaneFields(
        tag=tag,
        kind=kind,
        mode=mode,
        profile=profile,
        source=source,
        cuda_arch=c.get_str(
            ld, f, "cuda_arch", required=native, pattern=CUDA_ARCH, what="a CUDA arch like sm_89"
        ),
        cuda_version=c.get_str(
            ld, f, "cuda_version", required=native, pattern=CUDA_VERSION, what='a quoted version like "13.3"'
        ),
        gpu=c.get_str(ld, f, "gpu", max_len=200),
        package_recipe=c.get_str(
            ld, f, "package_recipe", required=native, pattern=REL_PATH, what="a repo path"
        ),
        container_recipe=c.get_str(
            ld, f, "container_recipe", required=False, pattern=REL_PATH, what="a repo path"
        ),
        carried_from=c.get_str(
            ld, f, "carried_from", required=mode == "carry", pattern=REL_PATH, what="a repo path"
        ),
        rollback=c.get_str(ld, f, "rollback", required=False, choices=("not_applicable",)),
        repository=c.get_str(
            ld,
            f,
            "publication_repository",
            required=False,
            pattern=REPOSITORY,
            what="a registry repository path like omp-ninfer/rtx4090",
            max_len=255,
        ),
    )


def _lane_rules(c: Checker, ld: dict[str, Any], f: str, lf: _LaneFields, root_dir: Path) -> None:
    """What a lane of its kind and mode must (not) name, and that its recipes exist."""
    for key, required in (
        ("package_recipe", lf.native),
        ("cuda_arch", lf.native),
        ("cuda_version", lf.native),
        ("container_recipe", lf.kind == "oci-image"),
        ("carried_from", lf.mode == "carry"),
    ):
        if required and key not in ld:
            c.add(f"{f}.{key}", f"required for a {lf.kind} lane in {lf.mode} mode")
    if lf.native and lf.mode == "carry":
        c.add(f"{f}.mode", "a windows-zip lane is built fresh (carry applies to images)")
    if not lf.native and "package_recipe" in ld:
        c.add(f"{f}.package_recipe", "only windows-zip lanes have a package recipe")
    if lf.mode != "carry" and "carried_from" in ld:
        c.add(f"{f}.carried_from", "only a carried lane names a carried record")
    for key, rel in (("package_recipe", lf.package_recipe), ("container_recipe", lf.container_recipe)):
        if rel is not None and not (root_dir / rel).is_file():
            c.add(f"{f}.{key}", f"{rel} does not exist under {root_dir}")


def _lane(c: Checker, lane_id: str, ld: dict[str, Any], root_dir: Path) -> Lane | None:
    """One lane of the definition, or ``None`` when a required field is missing or invalid."""
    f = f"lanes.{lane_id}"
    lf = _lane_fields(c, ld, f)
    _lane_rules(c, ld, f, lf, root_dir)
    carried = None
    if lf.carried_from is not None and lf.mode == "carry":
        carried = _load_record(c, root_dir / lf.carried_from, f"{f}.carried_from")
    if not (lf.tag and lf.kind and lf.mode and lf.profile and lf.source and lf.gpu):
        return None
    return Lane(
        id=lane_id,
        component_tag=lf.tag,
        kind="windows-zip" if lf.native else "oci-image",
        mode="carry" if lf.mode == "carry" else "build",
        profile_id=lf.profile,
        source_commit=lf.source,
        cuda_arch=lf.cuda_arch,
        cuda_version=lf.cuda_version,
        gpu=lf.gpu,
        package_recipe=lf.package_recipe,
        container_recipe=lf.container_recipe,
        carried_from=lf.carried_from,
        carried=carried,
        rollback=lf.rollback,
        publication_repository=lf.repository,
    )


def _load_record(c: Checker, path: Path, field: str) -> CarriedImage | None:
    try:
        return load_carried_record(path)
    except NinferError as exc:
        if exc.problems and not (len(exc.problems) == 1 and exc.problems[0].message == "no such file"):
            c.problems.extend(exc.problems)
        else:
            c.add(field, f"carried record {path} does not exist")
        return None
