"""Orchestration of one lane or a whole release (DESIGN.md §1, §9).

``build lane`` builds one native lane into ``OUT/<lane>/`` (the 11-file set) plus its lane
result ``OUT/<lane>.lane.json``, carries the container lane (lane result only), or — when the
container lane's mode is ``build`` — builds its image daemonlessly into ``OUT/<lane>/`` (OCI layout,
``image.tar``, ``image.json``, ``sbom.cdx.json``, ``sbom.spdx.json``; :func:`build_image_with_sboms`).
``build release`` does every lane of the definition, then assembles ``OUT/release-manifest.json``
from the lane results — the very function ``manifest assemble`` runs in CI, so both paths give the
same bytes. ``OUT`` is created complete or not at all and never overwritten.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import __version__, containers, manifests, packaging, profiles, sbom, strictjson
from ninfer_release.atomic import check_target, staged_directory, write_bytes
from ninfer_release.build._inputs import check_release_inputs, lane_staged_dir
from ninfer_release.errors import DefinitionError, InputError, Problem
from ninfer_release.hashing import sha256_bytes
from ninfer_release.manifests import LaneResult, assemble_release_manifest, lane_result_name
from ninfer_release.releases import (
    LoadedReceipt,
    SealedSet,
    build_native_set,
    names_for_tag,
    package_plan,
    read_receipts,
    route_changes,
    verify_set,
)

ProgressFn = Callable[[str, int], None]
RELEASE_MANIFEST_NAME = "release-manifest.json"
#: Supplier / tool vendor named in the image SBOMs (the same organisation the native sets name).
SBOM_SUPPLIER = "OMP NInfer"
#: The licence of what ninfer-release renders into an image (config, profile): the project's own
#: (pyproject.toml ``license``), as the image SBOMs state it.
OWN_LICENSE = "Apache-2.0"
#: The copyright notice of what an image build adds (rendered config and profile, our layers).
OWN_COPYRIGHT = "Copyright OMP NInfer contributors"
#: Default base of a built container lane, under ``--inputs`` (what ``samples fetch`` lays out).
DEFAULT_BASE_DIR = "base-layout"
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


def _native_inputs(
    release: manifests.Release, lane: manifests.Lane, inputs: Path
) -> tuple[profiles.Profile, profiles.RenderedConfig, packaging.StagedTree, packaging.PackageRecipe]:
    """Everything a native lane is built from: its profile, rendered config, staged tree, recipe."""
    profile = release.profile_of(lane.id)
    rendered = profiles.render_config(profile)
    staged = packaging.load_staged_tree(
        lane_staged_dir(inputs, lane.id),
        lane_id=lane.id,
        source_commit=lane.source_commit,
        cuda_arch=lane.cuda_arch or "",
        cuda_version=lane.cuda_version or "",
    )
    assert lane.package_recipe is not None  # the definition requires it for a windows-zip lane
    recipe = packaging.load_recipe(release.repo_root / lane.package_recipe)
    return profile, rendered, staged, recipe


def lane_phase(lane_id: str, phase: str) -> str:
    """The progress phase name of ``phase`` in lane ``lane_id``: ``"<lane>: <phase>"``."""
    return f"{lane_id}: {phase}"


def _native_lane(
    release: manifests.Release,
    lane: manifests.Lane,
    *,
    inputs: Path,
    out: Path,
    receipts: tuple[LoadedReceipt, ...],
    workers: int,
    progress: ProgressFn | None,
    verify: bool,
) -> LaneOutcome:
    profile, rendered, staged, recipe = _native_inputs(release, lane, inputs)
    facts = release_facts(release)
    sealed = build_native_set(
        release=release,
        lane=lane,
        profile=profile,
        rendered=rendered,
        staged=staged,
        recipe=recipe,
        out=out / lane.id,
        receipts=receipts,
        definition_sha256=facts.definition.sha256,
        repo_root=release.repo_root,
        workers=workers,
        progress=(lambda phase, n: progress(lane_phase(lane.id, phase), n)) if progress else None,
        # Shared by every lane of the process and by later builds: identical DLLs deflate once.
        deflate_cache=packaging.DeflateCache.from_env(os.environ),
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
    entry = sealed.manifest_entry(lane)
    documented = documented_route(
        release, lane.id, sealed.directory / names_for_tag(lane.component_tag).route
    )
    if documented is not None:
        entry = dataclasses.replace(entry, documented_routes=documented)
    result = LaneResult(lane_id=lane.id, release=facts, entry=entry)
    path = out / lane_result_name(lane.id)
    write_bytes(path, result.to_bytes(), overwrite=False)
    return LaneOutcome(
        lane_id=lane.id, mode=lane.mode, result=result, result_path=path, sealed=sealed, verified=verified
    )


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


def _carried_lane(
    release: manifests.Release,
    lane: manifests.Lane,
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
    result = LaneResult(lane_id=lane.id, release=release_facts(release), entry=entry)
    path = out / lane_result_name(lane.id)
    write_bytes(path, result.to_bytes(), overwrite=False)
    return LaneOutcome(
        lane_id=lane.id, mode=lane.mode, result=result, result_path=path, verified=record.verified
    )


@dataclass(frozen=True, kw_only=True)
class ImageOutcome:
    """An image build plus its SBOMs, all in ``result.out`` (:func:`build_image_with_sboms`).

    ``sbom_files`` maps ``sbom.cdx.json`` / ``sbom.spdx.json`` to ``{"sha256", "size"}``.
    """

    result: containers.ImageBuildResult
    sboms: sbom.ImageSboms
    sbom_files: Mapping[str, Mapping[str, Any]]

    def as_json(self) -> dict[str, Any]:
        """The build record (as ``image.json``) plus the SBOM files by digest."""
        return {**self.result.as_json(), "sbom": {k: dict(v) for k, v in sorted(self.sbom_files.items())}}


def build_image_with_sboms(
    request: containers.ImageBuildRequest,
    *,
    backend: containers.ImageBackend | None = None,
    progress: Callable[[str], None] | None = None,
    stand_in: bool = False,
    inputs_license: str | None = None,
) -> ImageOutcome:
    """Build an image (``containers.build_image``) and write its SBOMs beside ``image.json``, atomically.

    ``request.out`` appears complete — ``layout/``, ``image.tar``, ``image.json``,
    ``sbom.cdx.json`` (CycloneDX 1.6), ``sbom.spdx.json`` (SPDX 2.3) — or not at all: the image is
    built into a staging directory, the SBOMs are rendered from its records
    (``sbom.image_sboms``, times from ``request.epoch``), then the directory is renamed into place.
    ``stand_in`` marks the staged inputs as sample stand-ins in the CycloneDX document;
    ``inputs_license`` is their licence. The base layers are read for the software they ship
    (``containers.read_base_packages``: BusyBox, dpkg packages) so the SBOMs list it.

    Raises:
        InputError: ``request.out`` exists, or as ``containers.build_image`` (exit 4).
        IntegrityError: the base is not the pinned one, a blob or an SBOM fails validation (exit 5).
        BackendError: the registry or the docker backend failed (exit 6).
    """
    out = request.out
    with staged_directory(out) as stage:
        inner = stage / "image"
        built = containers.build_image(
            dataclasses.replace(request, out=inner), backend=backend, progress=progress
        )
        # The image build stages and renames its own directory; lift its entries one level up so
        # the SBOMs join them before the one rename that publishes ``out``.
        for child in sorted(inner.iterdir()):
            child.rename(stage / child.name)
        inner.rmdir()
        if progress is not None:
            progress("sbom")
        base_packages = containers.read_base_packages(
            stage / "layout", [(layer.digest, layer.media_type) for layer in built.layers if layer.from_base]
        )
        records = containers.image_sbom_records(
            built,
            base_packages=base_packages,
            base_supplier=request.recipe.base_supplier,
            inputs_license=inputs_license,
        )
        # The recipe lives in <repo>/containers/; the curated licence texts in <repo>/sbom/licenses.
        licenses_dir = Path(request.recipe.file).resolve().parent.parent / "sbom" / "licenses"
        refs = sbom.image_license_refs(records, own_license=OWN_LICENSE)
        sboms = sbom.image_sboms(
            records,
            epoch=request.epoch,
            supplier=SBOM_SUPPLIER,
            tool_name="ninfer-release",
            tool_version=__version__,
            stand_in=stand_in,
            own_license=OWN_LICENSE,
            license_texts=sbom.load_license_texts(refs, licenses_dir=licenses_dir),
            own_copyright=OWN_COPYRIGHT,
        )
        write_bytes(stage / sbom.IMAGE_CDX_NAME, sboms.cyclonedx, overwrite=False)
        write_bytes(stage / sbom.IMAGE_SPDX_NAME, sboms.spdx, overwrite=False)
    result = dataclasses.replace(built, out=out, layout=out / "layout", archive=out / "image.tar")
    return ImageOutcome(result=result, sboms=sboms, sbom_files=sbom.image_sbom_digests(sboms))


def _built_image_lane(
    release: manifests.Release,
    lane: manifests.Lane,
    *,
    inputs: Path,
    base: str | None,
    out: Path,
    progress: ProgressFn | None,
) -> LaneOutcome:
    """Build the container lane's image daemonlessly into ``out/<lane>/`` and record its lane result.

    Inputs: the lane's staged tree (``<inputs>/<lane>/``, its ``build-info.json`` must name the
    lane, component tag and source commit of the definition), the recipe ``container_recipe``,
    the lane's profile (rendered here: the lane binds the **semantic** config digest, DESIGN.md §5)
    and the base (``base``, default ``<inputs>/base-layout``; it must be the recipe's pinned digest).
    """
    where = str(release.path)
    assert lane.container_recipe is not None  # the definition requires it for an oci-image lane
    recipe = containers.load_recipe(release.repo_root / lane.container_recipe)
    problems: list[Problem] = []
    if recipe.lane != lane.id:
        problems.append(
            Problem(
                file=recipe.file,
                field="lane",
                message=f"{recipe.lane!r}, but {where} builds it for lane {lane.id!r}",
            )
        )
    if recipe.profile != lane.profile_id:
        problems.append(
            Problem(
                file=recipe.file,
                field="profile",
                message=f"{recipe.profile!r}, but lanes.{lane.id}.profile is {lane.profile_id!r}",
            )
        )
    if problems:
        raise InputError(problems=problems)
    staged = lane_staged_dir(inputs, lane.id)
    info = containers.read_build_info(staged)
    info_file = str(staged / "build-info.json")
    for field, got, want in (
        ("lane", info.lane, lane.id),
        ("component_tag", info.component_tag, lane.component_tag),
        ("source_commit", info.source_commit, lane.source_commit),
    ):
        if got != want:
            problems.append(
                Problem(
                    file=info_file,
                    field=field,
                    message=f"{got!r}, but lanes.{lane.id}.{field} in {where} is {want!r}",
                )
            )
    base_text = base
    if base_text is None:
        default = inputs / DEFAULT_BASE_DIR
        if not (default / "index.json").is_file():
            problems.append(
                Problem(
                    file=str(default),
                    field="base",
                    message="no base image layout here; give --base LAYOUT_OR_REF (pinned by digest)",
                )
            )
        base_text = str(default)
    if problems:
        raise InputError(problems=problems)
    rendered = containers.render_inputs(release.repo_root / "profiles" / f"{lane.profile_id}.yaml")
    request = containers.ImageBuildRequest(
        recipe=recipe,
        inputs=staged,
        base=base_text,
        out=out / lane.id,
        version=lane.component_tag,
        revision=lane.source_commit,
        epoch=release.source_date_epoch,
        rendered=rendered,
    )

    def say(message: str) -> None:
        if progress is not None:
            progress(f"{lane.id} image: {message}", 0)

    built = build_image_with_sboms(request, progress=say, stand_in=info.stand_in, inputs_license=info.license)
    result = built.result
    bindings = {b.name: b.sha256 for b in result.bound_inputs}

    def file_ref(name: str, sha256: str, size: int) -> manifests.OutputRef:
        return manifests.OutputRef(path=f"{lane.id}/{name}", sha256=sha256, size=size)

    record = result.as_bytes()
    entry = manifests.ImageLaneEntry(
        component_tag=lane.component_tag,
        kind=lane.kind,
        mode=lane.mode,
        profile_id=lane.profile_id,
        source_commit=lane.source_commit,
        image=result.image,
        image_reference=result.reference,
        image_digest=result.manifest_digest,
        image_config_digest=result.config_digest,
        base_image=manifests.BaseImageRef(name=result.base_name, digest=result.base_digest),
        base_digest=result.base_digest,
        version=result.version,
        revision=result.revision,
        created=result.created,
        layers=tuple(layer.digest for layer in result.layers),
        bindings={
            **bindings,
            "base_image": result.base_digest,
            "checkpoint_mount": recipe.checkpoint_mount,
        },
        config=manifests.ConfigHash(hash_kind="semantic", sha256=result.config_semantic_sha256),
        outputs=manifests.ImageOutputs(
            archive=file_ref("image.tar", result.archive_sha256, result.archive_size),
            record=file_ref("image.json", sha256_bytes(record), len(record)),
            sbom=manifests.SbomOutputs(
                cyclonedx=file_ref(sbom.IMAGE_CDX_NAME, **built.sbom_files[sbom.IMAGE_CDX_NAME]),
                spdx=file_ref(sbom.IMAGE_SPDX_NAME, **built.sbom_files[sbom.IMAGE_SPDX_NAME]),
            ),
        ),
        stand_in=info.stand_in,
    )
    lane_result = LaneResult(lane_id=lane.id, release=release_facts(release), entry=entry)
    path = out / lane_result_name(lane.id)
    write_bytes(path, lane_result.to_bytes(), overwrite=False)
    return LaneOutcome(
        lane_id=lane.id, mode=lane.mode, result=lane_result, result_path=path, image_dir=result.out
    )


@dataclass(frozen=True, kw_only=True)
class _LaneOptions:
    """How to build each lane: the options :func:`build_lane` and :func:`build_release` share."""

    inputs: Path
    receipts: tuple[LoadedReceipt, ...]
    registry: str | None
    offline: bool
    workers: int
    progress: ProgressFn | None
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


def _one_lane(
    release: manifests.Release,
    lane_id: str,
    *,
    out: Path,
    opts: _LaneOptions,
) -> LaneOutcome:
    lane = _lane_of(release, lane_id)
    inputs, progress = opts.inputs, opts.progress
    if lane.mode == "carry":
        return _carried_lane(release, lane, out=out, registry=opts.registry, offline=opts.offline)
    if lane.kind == "windows-zip":
        return _native_lane(
            release,
            lane,
            inputs=inputs,
            out=out,
            receipts=opts.receipts,
            workers=opts.workers,
            progress=progress,
            verify=opts.verify,
        )
    return _built_image_lane(release, lane, inputs=inputs, base=opts.base, out=out, progress=progress)


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
        outcome = _one_lane(release, lane_id, out=stage, opts=opts)
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
    progress: ProgressFn | None = None,
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
        for lane_id in release.lanes:
            outcomes.append(_one_lane(release, lane_id, out=stage, opts=opts))
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


# --- the plan ``build --dry-run`` prints (and progress totals come from) ---------------------------

#: What a built container lane writes under ``OUT/<lane>/``.
IMAGE_OUTPUT_NAMES = ("layout/", "image.tar", "image.json", sbom.IMAGE_CDX_NAME, sbom.IMAGE_SPDX_NAME)


@dataclass(frozen=True, kw_only=True)
class PlannedMember:
    """One input a lane's build consumes: a package member (native) or a staged file (image).

    ``size`` in bytes; ``None`` for a member generated while building (the SPDX inventory inside
    the zip, whose bytes depend on the digests of the others). ``origin``: ``staged`` or ``generated``.
    """

    name: str
    size: int | None
    origin: str


@dataclass(frozen=True, kw_only=True)
class LanePlan:
    """What building one lane would read and write, without doing it.

    ``records`` are the files the build writes, relative to ``OUT`` (a trailing ``/`` is a directory).
    """

    lane_id: str
    kind: str
    mode: str
    members: tuple[PlannedMember, ...]
    records: tuple[str, ...]

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


def _lane_plan(release: manifests.Release, lane: manifests.Lane, inputs: Path) -> LanePlan:
    result = lane_result_name(lane.id)
    if lane.mode == "carry":
        return LanePlan(lane_id=lane.id, kind=lane.kind, mode=lane.mode, members=(), records=(result,))
    if lane.kind == "windows-zip":
        profile, rendered, staged, recipe = _native_inputs(release, lane, inputs)
        plan = package_plan(lane=lane, profile=profile, rendered=rendered, staged=staged, recipe=recipe)
        size_of = {f.path: f.size for f in staged.files}
        members = tuple(
            PlannedMember(
                name=e.name,
                size=size_of[e.staged_path]
                if e.staged_path is not None
                else (len(e.data) if e.data else None),
                origin="generated" if e.generated else "staged",
            )
            for e in plan.entries
        )
        names = names_for_tag(lane.component_tag)
        return LanePlan(
            lane_id=lane.id,
            kind=lane.kind,
            mode=lane.mode,
            members=members,
            records=(*(f"{lane.id}/{n}" for n in names.all), result),
        )
    staged_root = lane_staged_dir(inputs, lane.id)
    files = sorted(p for p in staged_root.rglob("*") if p.is_file())
    return LanePlan(
        lane_id=lane.id,
        kind=lane.kind,
        mode=lane.mode,
        members=tuple(
            PlannedMember(name=p.relative_to(staged_root).as_posix(), size=p.stat().st_size, origin="staged")
            for p in files
        ),
        records=(*(f"{lane.id}/{n}" for n in IMAGE_OUTPUT_NAMES), result),
    )


def plan_build(
    manifest: Path,
    *,
    inputs: Path,
    out: Path,
    env: Mapping[str, str],
    lane_id: str | None = None,
    clean: bool = False,
    repo_root: Path | None = None,
) -> BuildPlan:
    """Plan ``build release`` (``lane_id`` None) or ``build lane lane_id`` without writing anything.

    Reads the definition, profiles, staged trees and recipes exactly as the build does, so the
    same input errors surface; the staged bytes themselves are not read (sizes come from ``stat``).

    Raises:
        DefinitionError: the definition or a profile is invalid (exit 3).
        InputError: staged inputs missing or invalid; ``out`` exists and may not be replaced (exit 4).
    """
    release = manifests.load_release(manifest, env=env, repo_root=repo_root)
    if lane_id is None:
        check_release_inputs(inputs, {i: lane.mode for i, lane in release.lanes.items()})
    chosen = [_lane_of(release, lane_id)] if lane_id is not None else list(release.lanes.values())
    replaces = check_target(out, replace_marked=OUTPUT_MARKER if clean else None, hint=_OUT_HINT)
    lanes = tuple(_lane_plan(release, lane, inputs) for lane in chosen)
    top = (RELEASE_MANIFEST_NAME, OUTPUT_MARKER) if lane_id is None else (OUTPUT_MARKER,)
    return BuildPlan(out=out, replaces=replaces, lanes=lanes, records=top)
