"""Orchestration of one lane or a whole release (DESIGN.md §1, §9).

``build lane`` builds one native lane into ``OUT/<lane>/`` (the 11-file set) plus its lane
result ``OUT/<lane>.lane.json``, or carries the container lane (lane result only). ``build
release`` does every lane of the definition, then assembles ``OUT/release-manifest.json`` from the
lane results — the very function ``manifest assemble`` runs in CI, so both paths give the same
bytes. ``OUT`` is created complete or not at all and never overwritten.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import containers, packaging, profiles
from ninfer_release.atomic import staged_directory, write_bytes
from ninfer_release.errors import InputError, Problem
from ninfer_release.hashing import sha256_file
from ninfer_release.manifests import LaneResult, assemble_release_manifest, lane_result_name
from ninfer_release.releases import (
    SealedSet,
    build_native_set,
    load_receipts,
    verify_set,
)

ProgressFn = Callable[[str, int], None]
RELEASE_MANIFEST_NAME = "release-manifest.json"


@dataclass(frozen=True, kw_only=True)
class LaneOutcome:
    """What building or carrying one lane produced."""

    lane_id: str
    mode: str
    result: LaneResult
    result_path: Path
    sealed: SealedSet | None = None
    verified: bool | None = None

    def summary(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"lane": self.lane_id, "mode": self.mode, "lane_result": str(self.result_path)}
        if self.sealed is not None:
            doc.update(
                set_dir=str(self.sealed.directory),
                component_tag=self.sealed.component_tag,
                sha256sums=self.sealed.sums.sha256,
                config_bytes_sha256=self.sealed.config_bytes_sha256,
                qualification=self.sealed.qualification,
                files=len(self.sealed.entries) + 1,
                verified=self.verified,
            )
        else:
            doc.update(self.result.entry)
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


def release_facts(release: profiles.Release) -> dict[str, Any]:
    """The release-level block every lane result of ``release`` carries (identical across lanes)."""
    repo = release.repo_root
    try:
        rel_path = release.path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        rel_path = release.path.name
    return {
        "product": release.product,
        "version": release.version,
        "state": release.state,
        "published_product_version": release.published_product_version,
        "candidate_commit": release.candidate_commit,
        "definition": {"path": rel_path, "sha256": sha256_file(release.path)},
        "source_date_epoch": release.source_date_epoch,
        "publication_base_url": release.publication_base_url,
        "components": {
            "model": release.model.as_dict(),
            "client": {
                "name": release.client.name,
                "version": release.client.version,
                "source": release.client.source,
                "mode": release.client.mode,
            },
        },
        "upstream_base": release.upstream_base,
        "superseded": [
            {"tag": s.tag, "source": s.source, "successor": s.successor} for s in release.superseded
        ],
        "lane_ids": sorted(release.lanes),
    }


def _staged_dir(inputs: Path, lane_id: str) -> Path:
    if (inputs / lane_id).is_dir():
        return inputs / lane_id
    if (inputs / "build-info.json").is_file():
        return inputs
    raise InputError(
        problems=[
            Problem(
                file=str(inputs),
                field=lane_id,
                message=f"no staged tree for lane {lane_id!r} (expected {inputs / lane_id}/)",
            )
        ]
    )


def _native_lane(
    release: profiles.Release,
    lane: profiles.Lane,
    *,
    inputs: Path,
    out: Path,
    receipts: Path | None,
    workers: int,
    progress: ProgressFn | None,
    verify: bool,
) -> LaneOutcome:
    profile = release.profile_of(lane.id)
    rendered = profiles.render_config(profile)
    staged = packaging.load_staged_tree(
        _staged_dir(inputs, lane.id),
        lane_id=lane.id,
        source_commit=lane.source_commit,
        cuda_arch=lane.cuda_arch or "",
        cuda_version=lane.cuda_version or "",
    )
    assert lane.package_recipe is not None
    recipe = packaging.load_recipe(release.repo_root / lane.package_recipe)
    accepted = load_receipts(
        receipts / lane.id if receipts is not None and (receipts / lane.id).is_dir() else receipts,
        lane=lane,
        config_bytes_sha256=rendered.bytes_sha256,
    )
    facts = release_facts(release)
    sealed = build_native_set(
        release=release,
        lane=lane,
        profile=profile,
        rendered=rendered,
        staged=staged,
        recipe=recipe,
        out=out / lane.id,
        receipts=accepted,
        definition_sha256=facts["definition"]["sha256"],
        repo_root=release.repo_root,
        workers=workers,
        progress=progress,
    )
    verified = None
    if verify:
        report = verify_set(sealed.directory, expected_sums_sha256=sealed.sums.sha256)
        if not report.ok:
            from ninfer_release.errors import IntegrityError

            raise IntegrityError(
                problems=[Problem(file=str(sealed.directory), message=f) for f in report.failures]
            )
        verified = True
    result = LaneResult(lane_id=lane.id, release=facts, entry=sealed.manifest_entry(lane))
    path = out / lane_result_name(lane.id)
    write_bytes(path, result.as_bytes(), overwrite=False)
    return LaneOutcome(
        lane_id=lane.id, mode=lane.mode, result=result, result_path=path, sealed=sealed, verified=verified
    )


def _carried_lane(
    release: profiles.Release,
    lane: profiles.Lane,
    *,
    out: Path,
    registry: str | None,
    offline: bool,
) -> LaneOutcome:
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
    entry = {
        "component_tag": lane.component_tag,
        "kind": lane.kind,
        "mode": lane.mode,
        "profile_id": lane.profile_id,
        "source_commit": lane.source_commit,
        "carried_from": carried.release,
        "image": carried.image,
        "image_digest": record.digest,
        "bindings": {
            "server": carried.server,
            "archive": carried.archive,
            "base_image": carried.base_image,
            "strict_origin_config": carried.strict_origin_config,
            "checkpoint_mount": carried.checkpoint_mount,
        },
        "config": {"hash_kind": "semantic", "strict_origin_config": carried.strict_origin_config},
        "verification": record.status,
    }
    result = LaneResult(lane_id=lane.id, release=release_facts(release), entry=entry)
    path = out / lane_result_name(lane.id)
    write_bytes(path, result.as_bytes(), overwrite=False)
    return LaneOutcome(
        lane_id=lane.id, mode=lane.mode, result=result, result_path=path, verified=record.verified
    )


def _one_lane(
    release: profiles.Release,
    lane_id: str,
    *,
    inputs: Path,
    out: Path,
    receipts: Path | None,
    registry: str | None,
    offline: bool,
    workers: int,
    progress: ProgressFn | None,
    verify: bool,
) -> LaneOutcome:
    if lane_id not in release.lanes:
        raise InputError(
            problems=[
                Problem(
                    file=str(release.path),
                    field="lanes",
                    message=f"no lane {lane_id!r} (lanes: {', '.join(release.lanes)})",
                )
            ]
        )
    lane = release.lanes[lane_id]
    if lane.mode == "carry":
        return _carried_lane(release, lane, out=out, registry=registry, offline=offline)
    if lane.kind == "windows-zip":
        return _native_lane(
            release,
            lane,
            inputs=inputs,
            out=out,
            receipts=receipts,
            workers=workers,
            progress=progress,
            verify=verify,
        )
    raise InputError(
        problems=[
            Problem(
                file=str(release.path),
                field=f"lanes.{lane_id}.mode",
                message="building a container lane runs through 'image build'",
            )
        ]
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
    progress: ProgressFn | None = None,
    verify: bool = True,
) -> LaneOutcome:
    """Build (or carry) one lane of the release ``manifest`` into the new directory ``out``.

    Raises:
        DefinitionError: the release definition or a profile is invalid (exit 3).
        InputError: staged inputs missing/invalid, or ``out`` exists (exit 4).
        IntegrityError: a receipt names other bytes, an SBOM fails, the set does not verify (exit 5).
    """
    release = profiles.load_release(manifest, env=env)
    with staged_directory(out) as stage:
        outcome = _one_lane(
            release,
            lane_id,
            inputs=inputs,
            out=stage,
            receipts=receipts,
            registry=registry,
            offline=offline,
            workers=workers,
            progress=progress,
            verify=verify,
        )
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
    progress: ProgressFn | None = None,
    verify: bool = True,
) -> ReleaseOutcome:
    """Build every lane of ``manifest`` into ``out`` and assemble ``out/release-manifest.json``.

    Raises:
        as :func:`build_lane`, for any lane; nothing is left in ``out`` on failure.
    """
    release = profiles.load_release(manifest, env=env)
    outcomes: list[LaneOutcome] = []
    with staged_directory(out) as stage:
        for lane_id in release.lanes:
            outcomes.append(
                _one_lane(
                    release,
                    lane_id,
                    inputs=inputs,
                    out=stage,
                    receipts=receipts,
                    registry=registry,
                    offline=offline,
                    workers=workers,
                    progress=progress,
                    verify=verify,
                )
            )
        data = assemble_release_manifest([(o.result_path.name, o.result) for o in outcomes])
        write_bytes(stage / RELEASE_MANIFEST_NAME, data, overwrite=False)
    from ninfer_release.hashing import sha256_bytes

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
    return replace(outcome, result_path=move(outcome.result_path), sealed=sealed)
