"""The plan of a lane: a pure function from the lane's inputs to what building it reads, writes and checks.

A build reads every input first (``read_*_inputs``: definition, profile, staged tree, recipe,
receipts), then :func:`plan_native_lane`, :func:`plan_image_lane` or :func:`plan_carried_lane`
turns them into a :class:`LanePlan` without touching the disk, and an executor does the I/O the
plan names (``build/_native.py``, ``build/_image.py``). ``build --dry-run`` prints the very same
plans (:class:`BuildPlan`), so what it shows is what the build does.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ninfer_release import containers, manifests, packaging, profiles, sbom
from ninfer_release.errors import InputError, Problem
from ninfer_release.manifests import lane_result_name
from ninfer_release.releases import (
    AssetNames,
    LaneFacts,
    LoadedReceipt,
    lane_facts,
    names_for_tag,
    package_plan,
    zip_spdx_path,
)


def image_output_names() -> tuple[str, ...]:
    """What a built container lane writes under ``OUT/<lane>/``.

    A function, not a constant: the SBOM names load ``sbom._image``, which only a container lane
    needs (a native ``build lane`` never imports it; issue 13, start-up cost).
    """
    return ("layout/", "image.tar", "image.json", sbom.IMAGE_CDX_NAME, sbom.IMAGE_SPDX_NAME)


#: The checks a lane's build makes, by name, and where each rule comes from. A plan lists the
#: ones its executor runs, in the order it runs them.
CHECKS: Mapping[str, str] = MappingProxyType(
    {
        "recipe-matches-lane": "docs/containers.md: the recipe's lane and profile are the definition's",
        "build-info-matches-lane": "docs/containers.md: build-info.json names the lane, tag and commit",
        "base-pinned": "docs/containers.md: the base is the recipe's pinned digest",
        "image-sboms": "docs/containers.md: both image SBOMs validate",
        "lock-digests": "docs/staged-inputs.md: each redistributable has its lock SHA-256",
        "stand-in-claims": "docs/staged-inputs.md: a PE version resource agrees with the stand-in claim",
        "set-sboms": "DESIGN.md §4: the SPDX and CycloneDX entries validate",
        "package-budget": "docs/release-definition.md: asset_budget_bytes bounds the package",
        "receipts": "docs/staged-inputs.md: the lane's receipts bind these exact bytes",
        "verify": "DESIGN.md §4: the sealed set verifies as a consumer verifies it",
        "documented-routes": "docs/release-definition.md: a changed route block is documented",
    }
)


@dataclass(frozen=True, kw_only=True, slots=True)
class PlannedMember:
    """One input a lane's build consumes: a package member (native) or a staged file (image).

    ``size`` in bytes; ``None`` for a member generated while building (the SPDX inventory inside
    the zip, whose bytes depend on the digests of the others). ``origin``: ``staged`` or ``generated``.
    """

    name: str
    size: int | None
    origin: str


@dataclass(frozen=True, kw_only=True)
class NativeInputs:
    """Everything a native lane is built from, read once before it is planned.

    ``definition_sha256`` is the release definition's SHA-256; ``build_inputs`` every non-shipped
    input by repository path → SHA-256 (the provenance's, issue 14); ``receipts`` those read
    from ``--receipts`` (any lane's; the plan keeps this lane's).
    """

    release: manifests.Release
    lane: manifests.Lane
    profile: profiles.Profile
    rendered: profiles.RenderedConfig
    staged: packaging.StagedTree
    recipe: packaging.PackageRecipe
    definition_sha256: str
    build_inputs: Mapping[str, str]
    receipts: tuple[LoadedReceipt, ...] = ()


@dataclass(frozen=True, kw_only=True)
class NativeWork:
    """What the native executor needs beyond the plan's members: the zip plan, the set's names,
    the lane's facts for the records, and what it reads from the staged tree.

    ``zip_name_of`` maps staged paths to zip names; ``pe_paths`` are the staged files whose PE
    headers are read (``.dll``/``.exe``); ``known_sha256`` the lock's digests (deflate cache key).
    """

    source: NativeInputs
    package: packaging.PackagePlan
    names: AssetNames
    facts: LaneFacts
    spdx_member: str
    zip_name_of: Mapping[str, str]
    pe_paths: tuple[str, ...]
    known_sha256: Mapping[str, str]
    root_purl: str


@dataclass(frozen=True, kw_only=True)
class ImageInputs:
    """Everything a built container lane is planned from, read before it is planned.

    ``staged`` is the lane's staged directory, ``files`` its regular files as (POSIX path relative
    to it, size in bytes) in path order, ``info`` its ``build-info.json``; ``base`` the ``--base`` argument
    (``None``: ``default_base``, which exists when ``default_base_exists``).
    """

    release: manifests.Release
    lane: manifests.Lane
    recipe: containers.ImageRecipe
    staged: Path
    files: tuple[tuple[str, int], ...]
    info: containers.StagedImageInfo
    base: str | None
    default_base: Path
    default_base_exists: bool


@dataclass(frozen=True, kw_only=True)
class ImageWork:
    """What the image executor needs: the inputs, the base to build on and the profile to render."""

    source: ImageInputs
    base: str
    profile: Path


@dataclass(frozen=True, kw_only=True)
class LanePlan:
    """What building one lane reads, writes and checks, decided before any of it is done.

    ``records`` are the files the build writes, relative to ``OUT`` (a trailing ``/`` is a
    directory); ``checks`` name the :data:`CHECKS` the executor makes, in order; ``work`` is the
    executor's part (``None`` for a carried lane, whose record comes from the registry).
    """

    lane_id: str
    kind: str
    mode: str
    members: tuple[PlannedMember, ...]
    records: tuple[str, ...]
    checks: tuple[str, ...] = ()
    work: NativeWork | ImageWork | None = field(default=None, compare=False, repr=False)

    @property
    def staged_bytes(self) -> int:
        """Bytes read from the staged tree (the total of the lane's ``package`` progress)."""
        return sum(m.size or 0 for m in self.members if m.origin == "staged")

    def as_json(self) -> dict[str, Any]:
        return {
            "lane": self.lane_id,
            "kind": self.kind,
            "mode": self.mode,
            "members": [{"name": m.name, "size": m.size, "origin": m.origin} for m in self.members],
            "staged_bytes": self.staged_bytes,
            "records": list(self.records),
        }


def lane_phase(lane_id: str, phase: str) -> str:
    """The progress phase name of ``phase`` in lane ``lane_id``: ``"<lane>: <phase>"``."""
    return f"{lane_id}: {phase}"


@dataclass(frozen=True, kw_only=True)
class BuildPlan:
    """What ``build lane``/``build release`` would do: every lane's plan and the top-level records.

    ``replaces`` is true when ``out`` exists and ``--clean`` would replace it.
    """

    out: Path
    replaces: bool
    lanes: tuple[LanePlan, ...]
    records: tuple[str, ...]

    def progress_totals(self) -> dict[str, int]:
        """Total bytes per progress phase (:func:`lane_phase` names) for a progress bar."""
        return {
            lane_phase(p.lane_id, "package"): p.staged_bytes for p in self.lanes if p.kind == "windows-zip"
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "replaces": self.replaces,
            "lanes": [p.as_json() for p in self.lanes],
            "records": list(self.records),
        }


def plan_carried_lane(lane: manifests.Lane) -> LanePlan:
    """A carried lane writes its lane result only; its record comes from the registry."""
    return LanePlan(
        lane_id=lane.id, kind=lane.kind, mode=lane.mode, members=(), records=(lane_result_name(lane.id),)
    )


class _ZipNames(Mapping[str, str]):
    """Staged path → zip name of each staged member of a package plan (in zip order), found when
    asked in its staged entries sorted by staged path: a list, not a map, per staged file
    (issue 13: memory at 100k files)."""

    def __init__(self, package: packaging.PackagePlan) -> None:
        self._entries = package.entries
        self._by_path = sorted((e for e in package.entries if e.staged_path is not None), key=_staged_path)

    def __getitem__(self, path: str) -> str:
        by_path = self._by_path
        i = bisect.bisect_left(by_path, path, key=_staged_path)
        if i < len(by_path) and by_path[i].staged_path == path:
            return by_path[i].name
        raise KeyError(path)

    def __iter__(self) -> Iterator[str]:
        return (e.staged_path for e in self._entries if e.staged_path is not None)

    def __len__(self) -> int:
        return len(self._by_path)


def _staged_path(entry: packaging.PlanEntry) -> str:
    return entry.staged_path or ""


def plan_native_lane(source: NativeInputs, *, verify: bool = True) -> LanePlan:
    """Plan a native lane: its package members, the 11 files of its set and its lane result, and
    the checks its build makes. Pure: reads nothing beyond ``source``.

    Raises:
        InputError: unsafe or unaccounted package paths (:func:`~ninfer_release.packaging.plan_package`).
    """
    lane, staged = source.lane, source.staged
    package = package_plan(
        lane=lane, profile=source.profile, rendered=source.rendered, staged=staged, recipe=source.recipe
    )
    size_of = {f.path: f.size for f in staged.files}
    members = tuple(
        PlannedMember(
            name=e.name,
            size=size_of[e.staged_path] if e.staged_path is not None else (len(e.data) if e.data else None),
            origin="generated" if e.generated else "staged",
        )
        for e in package.entries
    )
    names = names_for_tag(lane.component_tag)
    zip_name_of = _ZipNames(package)
    work = NativeWork(
        source=source,
        package=package,
        names=names,
        facts=lane_facts(source.release, lane, source.profile),
        spdx_member=zip_spdx_path(names.stem),
        zip_name_of=zip_name_of,
        pe_paths=tuple(
            f.path
            for f in staged.files
            if f.path.lower().endswith((".dll", ".exe")) and f.path in zip_name_of
        ),
        known_sha256={r.file: r.sha256 for r in staged.lock.redistributables},
        root_purl=sbom.canonical_purl(
            "generic", "omp-ninfer", "ninfer", lane.component_tag, {"arch": lane.cuda_arch or ""}, None
        ),
    )
    checks: tuple[str, ...] = ("lock-digests", "stand-in-claims", "set-sboms", "package-budget", "receipts")
    if verify:
        checks += ("verify",)
    if source.release.predecessor is not None:
        checks += ("documented-routes",)
    return LanePlan(
        lane_id=lane.id,
        kind=lane.kind,
        mode=lane.mode,
        members=members,
        records=(*(f"{lane.id}/{n}" for n in names.all), lane_result_name(lane.id)),
        checks=checks,
        work=work,
    )


def _recipe_problems(source: ImageInputs) -> list[Problem]:
    """The recipe must build this lane with this lane's profile."""
    recipe, lane, where = source.recipe, source.lane, str(source.release.path)
    problems: list[Problem] = []
    if recipe.lane != lane.id:
        why = f"{recipe.lane!r}, but {where} builds it for lane {lane.id!r}"
        problems.append(Problem(file=recipe.file, field="lane", message=why))
    if recipe.profile != lane.profile_id:
        why = f"{recipe.profile!r}, but lanes.{lane.id}.profile is {lane.profile_id!r}"
        problems.append(Problem(file=recipe.file, field="profile", message=why))
    return problems


def _staged_problems(source: ImageInputs) -> list[Problem]:
    """``build-info.json`` must name the definition's lane, tag and commit; a default base must exist."""
    info, lane, where = source.info, source.lane, str(source.release.path)
    info_file = str(source.staged / "build-info.json")
    problems = [
        Problem(
            file=info_file, field=name, message=f"{got!r}, but lanes.{lane.id}.{name} in {where} is {want!r}"
        )
        for name, got, want in (
            ("lane", info.lane, lane.id),
            ("component_tag", info.component_tag, lane.component_tag),
            ("source_commit", info.source_commit, lane.source_commit),
        )
        if got != want
    ]
    if source.base is None and not source.default_base_exists:
        why = "no base image layout here; give --base LAYOUT_OR_REF (pinned by digest)"
        problems.append(Problem(file=str(source.default_base), field="base", message=why))
    return problems


def plan_image_lane(source: ImageInputs) -> LanePlan:
    """Plan a container lane in ``build`` mode: its staged files, the image outputs and lane
    result, and the checks. Pure: reads nothing beyond ``source``.

    Raises:
        InputError: the recipe is another lane's or profile's; then (all at once) ``build-info.json``
            names another lane, tag or commit, or the default base layout is missing (exit 4).
    """
    lane = source.lane
    for problems in (_recipe_problems(source), _staged_problems(source)):
        if problems:
            raise InputError(problems=problems)
    release = source.release
    work = ImageWork(
        source=source,
        base=source.base if source.base is not None else str(source.default_base),
        profile=release.repo_root / "profiles" / f"{lane.profile_id}.yaml",
    )
    return LanePlan(
        lane_id=lane.id,
        kind=lane.kind,
        mode=lane.mode,
        members=tuple(PlannedMember(name=name, size=size, origin="staged") for name, size in source.files),
        records=(*(f"{lane.id}/{n}" for n in image_output_names()), lane_result_name(lane.id)),
        checks=("recipe-matches-lane", "build-info-matches-lane", "base-pinned", "image-sboms"),
        work=work,
    )
