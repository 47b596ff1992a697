"""Orchestration of one lane or a whole release: plan each lane, then execute it (DESIGN.md §1, §9).

``build lane`` builds one native lane into ``OUT/<lane>/`` (the 11-file set) plus its lane
result ``OUT/<lane>.lane.json``, carries the container lane (lane result only), or — when the
container lane's mode is ``build`` — builds its image daemonlessly into ``OUT/<lane>/`` (OCI layout,
``image.tar``, ``image.json``, ``sbom.cdx.json``, ``sbom.spdx.json``; :func:`build_image_with_sboms`).
``build release`` does every lane of the definition, then assembles ``OUT/release-manifest.json``
from the lane results — the very function ``manifest assemble`` runs in CI, so both paths give the
same bytes. ``OUT`` is created complete or not at all and never overwritten.

Each lane is read (``read_native_inputs``, ``read_image_inputs``), planned by a pure function
(``build/_plan.py``) and executed (``build_native_set`` then, the plan let go, ``verify_native_set``;
``run_image_lane``; :func:`_carry`);
:func:`plan_build` (``--dry-run``) returns the same plans without executing them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import containers, manifests, packaging, strictjson
from ninfer_release.atomic import check_target, staged_directory, write_bytes
from ninfer_release.build._inputs import check_release_inputs
from ninfer_release.build._native import build_native_set, read_native_inputs, verify_native_set
from ninfer_release.build._plan import (
    BuildPlan,
    LanePlan,
    plan_carried_lane,
    plan_image_lane,
    plan_native_lane,
)
from ninfer_release.errors import DefinitionError, InputError, Problem
from ninfer_release.hashing import sha256_bytes
from ninfer_release.manifests import LaneResult, assemble_release_manifest, lane_result_name
from ninfer_release.progress import SILENT, Progress
from ninfer_release.releases import LoadedReceipt, SealedSet, names_for_tag, read_receipts, route_changes

RELEASE_MANIFEST_NAME = "release-manifest.json"
#: Written into every ``OUT`` a build creates; ``--clean`` replaces only a directory holding it
#: (so it never deletes a directory that is not a build output of ours).
OUTPUT_MARKER = ".ninfer-release-output"
OUTPUT_MARKER_BYTES = b'{"written_by":"ninfer-release","kind":"build-output"}\n'
# A re-run into the same OUT is the common case: say how to replace an earlier build's output.
_OUT_HINT = "choose a new --out, or pass --clean to replace an earlier build's output"


@dataclass(frozen=True, kw_only=True)
class LaneOutcome:
    """What building or carrying one lane produced."""

    lane_id: str
    mode: str
    result: LaneResult
    result_path: Path
    sealed: SealedSet | None = None
    verified: bool | None = None
    image_dir: Path | None = None

    def summary(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"lane": self.lane_id, "mode": self.mode, "lane_result": str(self.result_path)}
        if self.image_dir is not None:
            doc.update(self.result.entry.to_json())
            doc["image_dir"] = str(self.image_dir)
        elif self.sealed is not None:
            doc.update(
                set_dir=str(self.sealed.directory),
                component_tag=self.sealed.component_tag,
                sha256sums=self.sealed.sums.sha256,
                config_bytes_sha256=self.sealed.config_bytes_sha256,
                qualification=self.sealed.qualification,
                files=len(self.sealed.entries) + 1,
                verified=self.verified,
                path_budget=self.sealed.path_budget.as_dict(),
            )
        else:
            doc.update(self.result.entry.to_json())
        return doc


@dataclass(frozen=True, kw_only=True)
class ReleaseOutcome:
    """What ``build release`` produced: every lane and the release manifest."""

    out: Path
    lanes: tuple[LaneOutcome, ...]
    manifest_path: Path
    manifest_sha256: str

    def summary(self) -> dict[str, Any]:
        return {
            "out": str(self.out),
            "release_manifest": str(self.manifest_path),
            "release_manifest_sha256": self.manifest_sha256,
            "lanes": [lane.summary() for lane in self.lanes],
        }


def release_facts(release: manifests.Release) -> manifests.ReleaseFacts:
    """The release-level block every lane result of ``release`` carries (identical across lanes)."""
    return manifests.ReleaseFacts.of(release)


#: At most this many changed fields are named in the refusal (the rest are counted).
_NAMED_CHANGES = 12


def documented_route(
    release: manifests.Release, lane_id: str, route_file: Path
) -> manifests.DocumentedRoutes | None:
    """The ``documented_routes`` record of a lane whose predecessor published a route block.

    ``None`` when the definition names no ``predecessor`` or it holds no ``<lane>.route.json``
    (the lane is the first of its lineage). Otherwise the built route block (``route_file``) is
    compared field by field with the predecessor's (the ``model`` sub-block is the model-download
    block): ``{"predecessor": <repo path>, "changed": [fields], "document_change": <text>}``.
    Release notes rule: every changed route or model-download block has an explicit
    ``documented_routes.document_change``.

    Raises:
        DefinitionError: the block changed and the definition declares no
            ``documented_routes.<lane>.document_change``, naming the changed fields (exit 3).
        InputError: a route block is not strict JSON (exit 4).
    """
    if release.predecessor is None:
        return None
    previous = release.repo_root / release.predecessor / f"{lane_id}.route.json"
    if not previous.is_file():
        return None
    limit = 1 << 20  # a route block is a few KiB
    changes = route_changes(strictjson.read(previous, limit=limit), strictjson.read(route_file, limit=limit))
    changed = [c.path for c in changes]
    text = release.document_changes.get(lane_id)
    if changed and text is None:
        named = ", ".join(changed[:_NAMED_CHANGES]) + (
            f" and {len(changed) - _NAMED_CHANGES} more" if len(changed) > _NAMED_CHANGES else ""
        )
        raise DefinitionError(
            problems=[
                Problem(
                    file=str(release.path),
                    field=f"documented_routes.{lane_id}.document_change",
                    message=f"missing: lane {lane_id}'s route block changed against its predecessor "
                    f"{release.predecessor}/{lane_id}.route.json ({named}); declare how the "
                    "documentation changed",
                )
            ]
        )
    return manifests.DocumentedRoutes(
        predecessor=f"{release.predecessor}/{lane_id}.route.json",
        changed=tuple(changed),
        document_change=text,
    )


def _carry(
    release: manifests.Release, lane: manifests.Lane, *, registry: str | None, offline: bool
) -> tuple[manifests.CarriedLaneEntry, bool]:
    """Execute a carried lane: re-verify its published image by digest (unless ``offline``) and
    return its lane entry and whether the registry verified it."""
    if lane.carried is None:
        raise InputError(
            problems=[
                Problem(
                    file=str(release.path),
                    field=f"lanes.{lane.id}.carried_from",
                    message="a carried lane needs its published record",
                )
            ]
        )
    record = containers.carry_image(lane.carried, registry=registry, offline=offline)
    carried = lane.carried
    entry = manifests.CarriedLaneEntry(
        component_tag=lane.component_tag,
        kind=lane.kind,
        mode=lane.mode,
        profile_id=lane.profile_id,
        source_commit=lane.source_commit,
        carried_from=carried.release,
        image=carried.image,
        image_digest=record.digest,
        bindings=manifests.CarriedBindings(
            server=carried.server,
            archive=carried.archive,
            base_image=carried.base_image,
            strict_origin_config=carried.strict_origin_config,
            checkpoint_mount=carried.checkpoint_mount,
        ),
        config=manifests.CarriedConfig(
            hash_kind="semantic", strict_origin_config=carried.strict_origin_config
        ),
        verification=record.status,
    )
    return entry, record.verified


@dataclass(frozen=True, kw_only=True)
class _LaneOptions:
    """How to build each lane: the options :func:`build_lane` and :func:`build_release` share."""

    inputs: Path
    receipts: tuple[LoadedReceipt, ...]
    registry: str | None
    offline: bool
    workers: int
    progress: Progress
    verify: bool
    base: str | None


def _receipts(release: manifests.Release, receipts: Path | None) -> tuple[LoadedReceipt, ...]:
    """Every receipt under ``--receipts`` (all lanes, checked before any lane is built)."""
    if receipts is None:
        return ()
    native = [lane.id for lane in release.lanes.values() if lane.kind == "windows-zip"]
    return read_receipts(receipts, lanes=native)


def _lane_of(release: manifests.Release, lane_id: str) -> manifests.Lane:
    """The lane ``lane_id`` of ``release``; InputError naming the known lanes otherwise."""
    lane = release.lanes.get(lane_id)
    if lane is None:
        raise InputError(
            problems=[
                Problem(
                    file=str(release.path),
                    field="lanes",
                    message=f"no lane {lane_id!r} (lanes: {', '.join(release.lanes)})",
                )
            ]
        )
    return lane


def _plan_lane(
    release: manifests.Release,
    lane: manifests.Lane,
    *,
    facts: manifests.ReleaseFacts,
    inputs: Path,
    receipts: tuple[LoadedReceipt, ...] = (),
    base: str | None = None,
    verify: bool = True,
) -> LanePlan:
    """Read lane ``lane``'s inputs and plan it (the plan ``build`` executes and ``--dry-run`` prints)."""
    if lane.mode == "carry":
        return plan_carried_lane(lane)
    if lane.kind == "windows-zip":
        definition_sha256 = facts.definition.sha256
        source = read_native_inputs(
            release, lane, inputs, definition_sha256=definition_sha256, receipts=receipts
        )
        return plan_native_lane(source, verify=verify)
    from ninfer_release.build._image import read_image_inputs  # a native lane never loads it

    return plan_image_lane(read_image_inputs(release, lane, inputs, base=base))


def _native_entry(
    release: manifests.Release, lane: manifests.Lane, sealed: SealedSet, checks: Collection[str]
) -> manifests.NativeLaneEntry:
    """A native lane's entry: the sealed set's, plus ``documented_routes`` when the plan's
    ``checks`` compare the route block with a predecessor's."""
    entry = sealed.manifest_entry(lane)
    if "documented-routes" not in checks:
        return entry
    route = sealed.directory / names_for_tag(lane.component_tag).route
    documented = documented_route(release, lane.id, route)
    return entry if documented is None else dataclasses.replace(entry, documented_routes=documented)


def _one_lane(
    release: manifests.Release,
    lane_id: str,
    *,
    facts: manifests.ReleaseFacts,
    out: Path,
    opts: _LaneOptions,
) -> LaneOutcome:
    """Plan lane ``lane_id``, execute the plan into ``out`` and write its lane result there."""
    lane = _lane_of(release, lane_id)
    plan = _plan_lane(
        release,
        lane,
        facts=facts,
        inputs=opts.inputs,
        receipts=opts.receipts,
        base=opts.base,
        verify=opts.verify,
    )
    sealed: SealedSet | None = None
    image_dir: Path | None = None
    verified: bool | None = None
    entry: manifests.LaneEntry
    if lane.mode == "carry":
        entry, verified = _carry(release, lane, registry=opts.registry, offline=opts.offline)
    elif lane.kind == "windows-zip":
        built = build_native_set(
            plan,
            out=out,
            workers=opts.workers,
            progress=opts.progress,
            # Shared by every lane of the process and by later builds: identical DLLs deflate once.
            deflate_cache=packaging.DeflateCache.from_env(os.environ),
        )
        checks = plan.checks
        # The staged tree and the package plan are not held through the final verify (issue 13:
        # ~35 MB with 100k staged files).
        del plan
        verify_native_set(built)
        sealed = built.sealed
        verified = True if "verify" in checks else None
        entry = _native_entry(release, lane, sealed, checks)
    else:
        from ninfer_release.build._image import run_image_lane

        entry, image_dir = run_image_lane(plan, out=out, progress=opts.progress)
    result = LaneResult(lane_id=lane.id, release=facts, entry=entry)
    path = out / lane_result_name(lane.id)
    write_bytes(path, result.to_bytes(), overwrite=False)
    return LaneOutcome(
        lane_id=lane.id,
        mode=lane.mode,
        result=result,
        result_path=path,
        sealed=sealed,
        verified=verified,
        image_dir=image_dir,
    )


def build_lane(
    manifest: Path,
    lane_id: str,
    *,
    inputs: Path,
    out: Path,
    env: Mapping[str, str],
    receipts: Path | None = None,
    registry: str | None = None,
    offline: bool = False,
    workers: int = 2,
    progress: Progress = SILENT,
    verify: bool = True,
    base: str | None = None,
    repo_root: Path | None = None,
    clean: bool = False,
) -> LaneOutcome:
    """Build (or carry) one lane of the release ``manifest`` into the new directory ``out``.

    A container lane in ``build`` mode is built daemonlessly on ``base`` (an OCI layout or a
    reference pinned by digest; default ``<inputs>/base-layout``). ``repo_root`` (default: the
    manifest's parent's parent) holds ``profiles/``, ``packaging/``, ``containers/``, ``sbom/``.
    ``out`` also receives the marker :data:`OUTPUT_MARKER`; with ``clean`` an existing ``out``
    holding it is replaced once the new one is complete (atomically where the kernel can swap).

    Raises:
        DefinitionError: the release definition or a profile is invalid (exit 3).
        InputError: staged inputs missing/invalid, or ``out`` exists (without ``clean``, or
            without the marker) (exit 4).
        IntegrityError: a receipt names other bytes, an SBOM fails, the set does not verify (exit 5).
    """
    release = manifests.load_release(manifest, env=env, repo_root=repo_root)
    opts = _LaneOptions(
        inputs=inputs,
        receipts=_receipts(release, receipts),
        registry=registry,
        offline=offline,
        workers=workers,
        progress=progress,
        verify=verify,
        base=base,
    )
    with staged_directory(out, replace_marked=OUTPUT_MARKER if clean else None, hint=_OUT_HINT) as stage:
        outcome = _one_lane(release, lane_id, facts=release_facts(release), out=stage, opts=opts)
        write_bytes(stage / OUTPUT_MARKER, OUTPUT_MARKER_BYTES, overwrite=False)
    return _relocate(outcome, stage, out)


def build_release(
    manifest: Path,
    *,
    inputs: Path,
    out: Path,
    env: Mapping[str, str],
    receipts: Path | None = None,
    registry: str | None = None,
    offline: bool = False,
    workers: int = 2,
    progress: Progress = SILENT,
    verify: bool = True,
    base: str | None = None,
    repo_root: Path | None = None,
    clean: bool = False,
) -> ReleaseOutcome:
    """Build every lane of ``manifest`` into ``out`` and assemble ``out/release-manifest.json``.

    ``base``, ``repo_root`` and ``clean``: as :func:`build_lane` (``base`` is used by a container
    lane in ``build`` mode only).

    Raises:
        as :func:`build_lane`, for any lane; nothing is left in ``out`` on failure.
    """
    release = manifests.load_release(manifest, env=env, repo_root=repo_root)
    check_release_inputs(inputs, {i: lane.mode for i, lane in release.lanes.items()})
    opts = _LaneOptions(
        inputs=inputs,
        receipts=_receipts(release, receipts),
        registry=registry,
        offline=offline,
        workers=workers,
        progress=progress,
        verify=verify,
        base=base,
    )
    outcomes: list[LaneOutcome] = []
    with staged_directory(out, replace_marked=OUTPUT_MARKER if clean else None, hint=_OUT_HINT) as stage:
        facts = release_facts(release)
        for lane_id in release.lanes:
            outcomes.append(_one_lane(release, lane_id, facts=facts, out=stage, opts=opts))
        data = assemble_release_manifest([(o.result_path.name, o.result) for o in outcomes])
        write_bytes(stage / RELEASE_MANIFEST_NAME, data, overwrite=False)
        write_bytes(stage / OUTPUT_MARKER, OUTPUT_MARKER_BYTES, overwrite=False)
    return ReleaseOutcome(
        out=out,
        lanes=tuple(_relocate(o, stage, out) for o in outcomes),
        manifest_path=out / RELEASE_MANIFEST_NAME,
        manifest_sha256=sha256_bytes(data),
    )


def _relocate(outcome: LaneOutcome, stage: Path, out: Path) -> LaneOutcome:
    """Rewrite paths from the staging directory to the final one."""
    from dataclasses import replace

    def move(p: Path) -> Path:
        try:
            return out / p.relative_to(stage)
        except ValueError:
            return p

    sealed = outcome.sealed
    if sealed is not None:
        sealed = replace(sealed, directory=move(sealed.directory))
    image_dir = move(outcome.image_dir) if outcome.image_dir is not None else None
    return replace(outcome, result_path=move(outcome.result_path), sealed=sealed, image_dir=image_dir)


def plan_build(
    manifest: Path,
    *,
    inputs: Path,
    out: Path,
    env: Mapping[str, str],
    lane_id: str | None = None,
    clean: bool = False,
    repo_root: Path | None = None,
    base: str | None = None,
) -> BuildPlan:
    """Plan ``build release`` (``lane_id`` None) or ``build lane lane_id`` without writing anything.

    Reads the definition, profiles, staged trees and recipes exactly as the build does, so the
    same input errors surface, and plans each lane with the very function the build executes
    (``build/_plan.py``); the staged bytes themselves are not read (sizes come from ``stat``).
    ``base``: as :func:`build_lane` (a container lane in ``build`` mode plans on it).

    Raises:
        DefinitionError: the definition or a profile is invalid (exit 3).
        InputError: staged inputs missing or invalid; ``out`` exists and may not be replaced (exit 4).
    """
    release = manifests.load_release(manifest, env=env, repo_root=repo_root)
    if lane_id is None:
        check_release_inputs(inputs, {i: lane.mode for i, lane in release.lanes.items()})
    chosen = [_lane_of(release, lane_id)] if lane_id is not None else list(release.lanes.values())
    replaces = check_target(out, replace_marked=OUTPUT_MARKER if clean else None, hint=_OUT_HINT)
    facts = release_facts(release)
    lanes = tuple(_plan_lane(release, lane, facts=facts, inputs=inputs, base=base) for lane in chosen)
    top = (RELEASE_MANIFEST_NAME, OUTPUT_MARKER) if lane_id is None else (OUTPUT_MARKER,)
    return BuildPlan(out=out, replaces=replaces, lanes=lanes, records=top)
