"""Sealing a native lane: from the built package and its SBOMs to the 11-file asset set.

:func:`seal_native_set` writes the set per the asset contract (DESIGN.md §4): the records that
bind the package (model, qualification, provenance, route, component manifest), the entries the
build made (zip, SPDX, CycloneDX, config, profile) and ``SHA256SUMS`` over entries 1–10. The
build stage (``build/_native.py``) plans and builds the package; this module only seals it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import packaging
from ninfer_release.checksums import render_sha256sums
from ninfer_release.hashing import sha256_bytes, sha256_file
from ninfer_release.jsonbytes import LazyArray, MadeOnRead, dump_stable_into
from ninfer_release.manifests import ConfigHash, Lane, NativeLaneEntry, Release, Rollback
from ninfer_release.profiles import (
    PathBudget,
    Profile,
    RenderedConfig,
    install_layout,
    path_budget,
)
from ninfer_release.releases._contract import (
    SUMS_NAME,
    ZIP_CONFIG_PATH,
    AssetNames,
    names_for_tag,
    zip_profile_path,
    zip_spdx_path,
)
from ninfer_release.releases._receipts import Binding, LoadedReceipt, bind_receipts
from ninfer_release.releases._records import (
    FileRef,
    LaneFacts,
    ProvenanceStatement,
    ResolvedDependency,
    component_manifest,
    model_record,
    profile_asset_record,
    provenance_statement,
    qualification_record,
    release_instance_id,
    route_record,
)
from ninfer_release.releases._toolchain import installed_toolchain


@dataclass(frozen=True, kw_only=True)
class SealedSet:
    """A written native asset set: where, its 10 entries, and the digests the release binds."""

    lane_id: str
    component_tag: str
    directory: Path
    entries: tuple[FileRef, ...]
    sums: FileRef
    config_bytes_sha256: str
    release_instance_id: str
    qualification: str
    cuda_runtime_version: str | None
    path_budget: PathBudget

    def manifest_entry(self, lane: Lane) -> NativeLaneEntry:
        """This lane's entry of the release manifest."""
        return NativeLaneEntry(
            component_tag=self.component_tag,
            kind=lane.kind,
            mode=lane.mode,
            profile_id=lane.profile_id,
            source_commit=lane.source_commit,
            cuda_arch=lane.cuda_arch,
            cuda_version=lane.cuda_version,
            cuda_runtime_version=self.cuda_runtime_version,
            config=ConfigHash(hash_kind="bytes", sha256=self.config_bytes_sha256),
            release_instance_id=self.release_instance_id,
            qualification=self.qualification,
            rollback=Rollback.of(lane.rollback),
            sha256sums=self.sums,
            entries=self.entries,
        )


def profile_asset(profile: Profile, rendered: RenderedConfig) -> bytes:
    """Entry 5 (also shipped as ``profile/<id>.json``): the public profile with its config hash.

    Native lanes bind the *bytes* SHA-256 of the config (reference: "Rules that come with them").
    """
    return profile_asset_record(
        profile, config_path=ZIP_CONFIG_PATH, config_bytes_sha256=rendered.bytes_sha256
    ).to_bytes()


def package_plan(
    *,
    lane: Lane,
    profile: Profile,
    rendered: RenderedConfig,
    staged: packaging.StagedTree,
    recipe: packaging.PackageRecipe,
) -> packaging.PackagePlan:
    """The zip plan of ``lane``'s package: the staged members plus the generated config, public
    profile and NOTICE (bytes known) and the SPDX inventory (bytes filled in while building).

    Pure: no file is read beyond what ``staged`` already holds. ``build --dry-run`` prints it.

    Raises:
        InputError: as :func:`ninfer_release.packaging.plan_package` (unsafe or unaccounted paths).
    """
    return packaging.plan_package(
        staged,
        recipe,
        {
            ZIP_CONFIG_PATH: rendered.data,
            zip_profile_path(profile.id): profile_asset(profile, rendered),
            "NOTICE.txt": packaging.render_notice(staged.lock, engine_files=staged.build_info.engine_files),
            zip_spdx_path(names_for_tag(lane.component_tag).stem): None,
        },
        component=lane.component_tag,
        install_root=install_layout(profile).program_root,
    )


def lane_facts(release: Release, lane: Lane, profile: Profile) -> LaneFacts:
    """The facts of ``lane`` the set's records state (from the definition and its profile)."""
    assert lane.cuda_arch is not None and lane.cuda_version is not None
    return LaneFacts(
        release_version=release.version,
        candidate_commit=release.candidate_commit,
        lane_id=lane.id,
        component_tag=lane.component_tag,
        profile_id=profile.id,
        source_commit=lane.source_commit,
        upstream_base=release.upstream_base,
        cuda_arch=lane.cuda_arch,
        cuda_version=lane.cuda_version,
        gpu=lane.gpu,
        host_memory_floor_mib=profile.host_memory_floor_mib,
        gpu_power_limit_w=profile.gpu_power_limit_w,
        endpoint_host=profile.endpoint.host,
        endpoint_port=profile.endpoint.port,
        rollback=lane.rollback or "not_applicable",
        source_date_epoch=release.source_date_epoch,
    )


@dataclass(frozen=True, kw_only=True)
class BuiltPackage:
    """What the build made of a native lane, for sealing: the zip (already at ``<stage>/<names.zip>``,
    ``size`` bytes, ``sha256``), its member names, and what the records state about its inputs.
    The SPDX and CycloneDX entries are already written too (``<stage>/<names.spdx>``,
    ``<stage>/<names.cdx>``): the seal hashes those files, streamed, so their bytes are not held.

    ``staged_inputs`` maps each staged path read to its SHA-256; ``stand_ins`` are the zip paths of
    the files declared stand-ins; ``cuda_runtime_version`` comes from the shipped CUDA runtime's PE
    version (``None`` without one).
    """

    size: int
    sha256: str
    member_names: tuple[str, ...]
    staged_inputs: Mapping[str, str]
    stand_ins: tuple[str, ...]
    cuda_runtime_version: str | None


@dataclass(frozen=True, kw_only=True)
class SealInputs:
    """The definition-side inputs of sealing one lane: the release, lane, profile, rendered config,
    package recipe, the lane's facts, the definition's SHA-256 and the build inputs' digests
    (repository path → SHA-256, for the provenance)."""

    release: Release
    lane: Lane
    profile: Profile
    rendered: RenderedConfig
    recipe: packaging.PackageRecipe
    facts: LaneFacts
    definition_sha256: str
    build_inputs: Mapping[str, str]


def _file_ref(release: Release, lane: Lane, name: str, *, size: int, sha256: str) -> FileRef:
    return FileRef(name=name, url=release.asset_url(lane.component_tag, name), size=size, sha256=sha256)


@dataclass(frozen=True, kw_only=True)
class _Sealing:
    """One set being sealed: its inputs, the built package, the entries already in the stage
    (the SBOMs, hashed from their files) and the blobs rendered so far."""

    inputs: SealInputs
    package: BuiltPackage
    files: Mapping[str, FileRef]
    blobs: dict[str, bytes]

    @property
    def names(self) -> AssetNames:
        return names_for_tag(self.inputs.lane.component_tag)

    def ref(self, name: str) -> FileRef:
        """The published file ``name`` of the set (the zip, or a blob already rendered)."""
        release, lane = self.inputs.release, self.inputs.lane
        if name == self.names.zip:
            return _file_ref(release, lane, name, size=self.package.size, sha256=self.package.sha256)
        if name in self.files:
            return self.files[name]
        data = self.blobs[name]
        return _file_ref(release, lane, name, size=len(data), sha256=sha256_bytes(data))


def _written_ref(release: Release, lane: Lane, path: Path) -> FileRef:
    """The published file ``path`` (already in the stage): its size and SHA-256, read streamed.

    Raises:
        OSError: the file is missing or unreadable.
    """
    return _file_ref(release, lane, path.name, size=path.stat().st_size, sha256=sha256_file(path))


def _binding(inputs: SealInputs, package: BuiltPackage) -> Binding:
    """What a receipt of this lane must name: lane, source, profile, config and package digests."""
    lane = inputs.lane
    return Binding(
        lane=lane.id,
        source_commit=lane.source_commit,
        profile_id=lane.profile_id,
        config_sha256=inputs.rendered.bytes_sha256,
        package_sha256=package.sha256,
    )


def _provenance(sealing: _Sealing, staged_inputs: Mapping[str, str]) -> ProvenanceStatement:
    """Entry 8: the in-toto statement over entries 1–7 and every input (issue 14)."""
    inputs, names = sealing.inputs, sealing.names
    return provenance_statement(
        inputs.facts,
        subjects=[sealing.ref(n) for n in names.provenance_subjects],
        staged_inputs=staged_inputs,
        definition_sha256=inputs.definition_sha256,
        config_bytes_sha256=inputs.rendered.bytes_sha256,
        model_sha256=inputs.release.model.sha256,
        deflate_engine=packaging.DEFLATE_ENGINE,
        build_inputs=inputs.build_inputs,
        tool=[(d.name, d.version) for d in installed_toolchain()],
    )


def _staged_dependencies(staged: Sequence[tuple[str, str]]) -> MadeOnRead[tuple[str, str]]:
    """The JSON of the statement's ``resolvedDependencies`` entry of each staged input (``staged``:
    (path, SHA-256) sorted by path), made by the record itself (``ResolvedDependency.to_json``)
    each time it is read."""
    return MadeOnRead(staged, lambda entry: _staged_dependency(*entry))


def _staged_dependency(path: str, sha256: str) -> dict[str, Any]:
    return ResolvedDependency(name=f"staged/{path}", digest={"sha256": sha256}).to_json()


def _write_provenance(sealing: _Sealing, path: Path) -> FileRef:
    """Entry 8 (:func:`_provenance`) written to ``path`` as it is rendered: the statement's bytes,
    with each staged input's resolved dependency made as it is written (issue 13: at 100k files
    the typed entries, their JSON and the 20 MB of bytes were held at once).

    ``provenance_statement`` lists ``engine-source``, then the staged inputs sorted by path, then
    the build inputs and the tool; the statement without staged inputs has the others in that
    order, so the staged ones go after its first entry (``tests/test_bld_provenance.py``
    compares the bytes with ``to_bytes()``).
    """
    doc = _provenance(sealing, {}).to_json()
    definition = doc["predicate"]["buildDefinition"]
    others = definition["resolvedDependencies"]
    staged = _staged_dependencies(sorted(sealing.package.staged_inputs.items()))
    definition["resolvedDependencies"] = LazyArray(others[:1], staged, others[1:])
    with path.open("wb") as sink:
        dump_stable_into(doc, sink)
    inputs = sealing.inputs
    return _written_ref(inputs.release, inputs.lane, path)


def _route(sealing: _Sealing, *, budget: PathBudget, instance: str) -> bytes:
    """Entry 9: the route block the installer follows."""
    inputs, package = sealing.inputs, sealing.package
    return route_record(
        inputs.facts,
        package=sealing.ref(sealing.names.zip),
        model=inputs.release.model,
        config_bytes_sha256=inputs.rendered.bytes_sha256,
        layout=install_layout(inputs.profile),
        path_budget=budget,
        cuda_runtime_version=package.cuda_runtime_version,
        instance_id=instance,
        stand_ins=list(package.stand_ins),
    ).to_bytes()


def _component_manifest(sealing: _Sealing, *, budget: PathBudget, instance: str, status: str) -> bytes:
    """Entry 10: the component manifest over entries 1–9."""
    inputs = sealing.inputs
    return component_manifest(
        inputs.facts,
        entries=[sealing.ref(n) for n in sealing.names.component_manifest_entries],
        config_bytes_sha256=inputs.rendered.bytes_sha256,
        instance_id=instance,
        qualification_status=status,
        cuda_runtime_version=sealing.package.cuda_runtime_version,
        path_budget=budget,
    ).to_bytes()


def seal_native_set(
    stage: Path,
    *,
    out: Path,
    inputs: SealInputs,
    package: BuiltPackage,
    receipts: Sequence[LoadedReceipt],
) -> SealedSet:
    """Seal the set in ``stage`` (which holds the zip, the SPDX and the CycloneDX entries) and
    return it as it will be at ``out``.

    Binds ``receipts`` (any lane's; :func:`bind_receipts`: those of this lane must name its exact
    bytes, package SHA-256 included), hashes the two SBOM files (streamed, 1 MiB at a time: their
    bytes are never held), then writes entries 4–10 and ``SHA256SUMS``; every file mode 0644.

    Raises:
        IntegrityError: a receipt names other bytes, or has a failed gate (exit 5).
        OSError: an SBOM file is missing from ``stage``.
    """
    release, lane, profile, rendered, recipe = (
        inputs.release,
        inputs.lane,
        inputs.profile,
        inputs.rendered,
        inputs.recipe,
    )
    names = names_for_tag(lane.component_tag)
    instance = release_instance_id(lane.component_tag, package.sha256)
    budget = path_budget(
        install_layout(profile),
        package_paths=package.member_names,
        instance_id=instance,
        extended_length=recipe.extended_length,
        source=f"{recipe.path} + install layout of {profile.id}",
    )
    binding = _binding(inputs, package)
    qualification = bind_receipts(receipts, binding)
    files = {n: _written_ref(release, lane, stage / n) for n in (names.spdx, names.cdx)}
    blobs: dict[str, bytes] = {
        names.config: rendered.data,
        names.profile: profile_asset(profile, rendered),
        names.model: model_record(release.model).to_bytes(),
        names.qualification: qualification_record(
            inputs.facts, qualification=qualification, binding=binding
        ).to_bytes(),
    }
    sealing = _Sealing(inputs=inputs, package=package, files=files, blobs=blobs)
    files[names.provenance] = _write_provenance(sealing, stage / names.provenance)
    blobs[names.route] = _route(sealing, budget=budget, instance=instance)
    blobs[names.manifest] = _component_manifest(
        sealing, budget=budget, instance=instance, status=qualification.status
    )
    entries = tuple(sealing.ref(n) for n in names.entries)
    sums = render_sha256sums({e.name: e.sha256 for e in entries})
    blobs[SUMS_NAME] = sums
    for name, data in blobs.items():
        (stage / name).write_bytes(data)
    for p in stage.iterdir():
        p.chmod(0o644)
    return SealedSet(
        lane_id=lane.id,
        component_tag=lane.component_tag,
        directory=out,
        entries=entries,
        sums=_file_ref(release, lane, SUMS_NAME, size=len(sums), sha256=sha256_bytes(sums)),
        config_bytes_sha256=rendered.bytes_sha256,
        release_instance_id=instance,
        qualification=qualification.status,
        cuda_runtime_version=package.cuda_runtime_version,
        path_budget=budget,
    )
