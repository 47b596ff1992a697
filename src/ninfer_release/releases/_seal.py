"""Sealing a native lane: from compressed package members to the 11-file asset set.

:func:`seal_native_set` is the executor of the asset contract (DESIGN.md §4): it writes the zip,
renders the SBOMs and records, writes ``SHA256SUMS`` over entries 1–10, and moves the set into
place atomically. Input digests come from the one read that compressed each staged file.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import __version__, packaging, sbom
from ninfer_release.atomic import staged_directory
from ninfer_release.checksums import render_sha256sums
from ninfer_release.hashing import sha256_bytes
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.profiles import (
    Lane,
    PathBudget,
    Profile,
    Release,
    RenderedConfig,
    install_layout,
    path_budget,
)
from ninfer_release.releases._budget import check_package_budget
from ninfer_release.releases._contract import (
    SUMS_NAME,
    ZIP_CONFIG_PATH,
    names_for_tag,
    zip_profile_path,
    zip_spdx_path,
)
from ninfer_release.releases._receipts import Binding, LoadedReceipt, bind_receipts
from ninfer_release.releases._records import (
    FileRef,
    LaneFacts,
    component_manifest,
    model_record,
    provenance_statement,
    qualification_record,
    release_instance_id,
    route_record,
)

PUBLISHER = "OMP NInfer"
ProgressFn = Callable[[str, int], None]


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

    def manifest_entry(self, lane: Lane) -> dict[str, Any]:
        """This lane's entry of the release manifest."""
        return {
            "component_tag": self.component_tag,
            "kind": lane.kind,
            "mode": lane.mode,
            "profile_id": lane.profile_id,
            "source_commit": lane.source_commit,
            "cuda_arch": lane.cuda_arch,
            "cuda_version": lane.cuda_version,
            "cuda_runtime_version": self.cuda_runtime_version,
            "config": {"hash_kind": "bytes", "sha256": self.config_bytes_sha256},
            "release_instance_id": self.release_instance_id,
            "qualification": self.qualification,
            "rollback": {
                "state": lane.rollback,
                "directions": 0 if lane.rollback == "not_applicable" else None,
            },
            "sha256sums": self.sums.as_dict(),
            "entries": [e.as_dict() for e in self.entries],
        }


def profile_asset(profile: Profile, rendered: RenderedConfig) -> bytes:
    """Entry 5 (also shipped as ``profile/<id>.json``): the public profile with its config hash.

    Native lanes bind the *bytes* SHA-256 of the config (reference: "Rules that come with them").
    """
    doc = profile.public_dict()
    doc["config"] = {"path": ZIP_CONFIG_PATH, "hash_kind": "bytes", "bytes_sha256": rendered.bytes_sha256}
    return dumps_stable(doc)


def _lane_facts(release: Release, lane: Lane, profile: Profile) -> LaneFacts:
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


def _dependencies(
    staged: packaging.StagedTree, zip_name_of: Mapping[str, str], sha_of: Mapping[str, str], lane: Lane
) -> list[sbom.DependencyRecord]:
    deps: list[sbom.DependencyRecord] = []
    engine_files = tuple(
        sbom.ShippedFile(path=zip_name_of[e.path], sha256=sha_of[e.path])
        for e in staged.build_info.engine_files
    )
    engine_licenses = sorted(
        {_concluded_licence(staged, e.path) or "" for e in staged.build_info.engine_files}
    )
    deps.append(
        sbom.DependencyRecord(
            kind="engine",
            name="ninfer-engine",
            version=lane.component_tag,
            purl=sbom.canonical_purl("generic", "omp-ninfer", "ninfer-engine", lane.component_tag, {}, None),
            supplier=PUBLISHER,
            license=" AND ".join(engine_licenses) if engine_licenses else None,
            files=engine_files,
            commit=lane.source_commit,
            description=f"NInfer engine built from {lane.source_commit} for {lane.cuda_arch}",
            stand_in=any(e.stand_in for e in staged.build_info.engine_files),
        )
    )
    for v in staged.lock.vendored:
        deps.append(
            sbom.DependencyRecord(
                kind="vendored",
                name=v.name,
                version=v.version,
                purl=v.purl,
                supplier=v.supplier,
                license=v.license,
                source_url=v.source_url,
                commit=v.commit,
            )
        )
    groups: dict[tuple[str, str], list[packaging.Redistributable]] = {}
    for r in staged.lock.redistributables:
        groups.setdefault((r.package, r.version), []).append(r)
    for (package, version), rs in sorted(groups.items()):
        first = rs[0]
        deps.append(
            sbom.DependencyRecord(
                kind="redistributable",
                name=package,
                version=version,
                purl=first.purl,
                supplier=first.supplier,
                license=first.license,
                group=first.group,  # type: ignore[arg-type]
                files=tuple(
                    sbom.ShippedFile(path=zip_name_of[r.file], sha256=sha_of[r.file])
                    for r in sorted(rs, key=lambda r: r.file)
                ),
                stand_in=any(r.stand_in for r in rs),
            )
        )
    return deps


def _concluded_licence(staged: packaging.StagedTree, staged_path: str) -> str | None:
    """The licence concluded for a shipped staged file, ``None`` when nothing says (NOASSERTION).

    An engine file is its own licence AND every vendored source's, since those sources are compiled
    into it (issue 8 item 7); a redistributable carries its lock licence.
    """
    for e in staged.build_info.engine_files:
        if e.path == staged_path:
            parts = [e.license, *sorted({v.license for v in staged.lock.vendored} - {e.license})]
            return " AND ".join(f"({p})" if " OR " in p else p for p in parts)
    r = staged.lock.redistributable(staged_path)
    return r.license if r is not None else None


def _file_comment(
    staged: packaging.StagedTree, staged_path: str, pe_by_staged: Mapping[str, sbom.PeInfo]
) -> str | None:
    """SPDX file comment: a stand-in says so; a PE file names its version resource (or its absence)."""
    parts: list[str] = []
    engine = next((e for e in staged.build_info.engine_files if e.path == staged_path), None)
    redist = staged.lock.redistributable(staged_path)
    if engine is not None and engine.stand_in:
        parts.append("STAND-IN: a placeholder for samples and tests, NOT the real engine file.")
    elif redist is not None and redist.stand_in:
        parts.append(f"STAND-IN: a placeholder for samples and tests, NOT the real {redist.package}.")
    pe = pe_by_staged.get(staged_path)
    if pe is not None:
        parts.append(sbom.pe_version_summary(pe))
    return " ".join(parts) if parts else None


def _stand_in_paths(staged: packaging.StagedTree, zip_name_of: Mapping[str, str]) -> list[str]:
    """Zip paths of every file its input declares a stand-in (engine files and redistributables)."""
    paths = [e.path for e in staged.build_info.engine_files if e.stand_in]
    paths += [r.file for r in staged.lock.redistributables if r.stand_in]
    return sorted(zip_name_of[p] for p in paths)


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


def build_native_set(
    *,
    release: Release,
    lane: Lane,
    profile: Profile,
    rendered: RenderedConfig,
    staged: packaging.StagedTree,
    recipe: packaging.PackageRecipe,
    out: Path,
    receipts: Sequence[LoadedReceipt],
    definition_sha256: str,
    repo_root: Path,
    workers: int = 2,
    progress: ProgressFn | None = None,
    deflate_cache: packaging.DeflateCache | None = None,
) -> SealedSet:
    """Build the package of ``lane`` and seal its 11-file asset set into ``out`` (must not exist).

    ``deflate_cache``: the redistributables' deflate streams come from it when their bytes have the
    lock's SHA-256, and go into it otherwise (:class:`~ninfer_release.packaging.DeflateCache`);
    the package bytes are the same with or without it.

    Every staged byte is read once (hashing, lock check, SPDX and deflate share that read).
    ``out`` appears complete or not at all. ``receipts`` (any lane's; :func:`read_receipts`) are
    bound once the package is built: those of ``lane`` must name its exact bytes, package
    SHA-256 included (:func:`bind_receipts`). The package never depends on them — qualification
    is an outer entry only — so a sealed zip is byte-identical to the draft's.

    Raises:
        InputError: staged files unaccounted for, unsafe paths, lock hash mismatch (exit 4).
        IntegrityError: an SBOM does not validate, a PE version disagrees with the lock, or a
            receipt names other bytes (exit 5).
    """
    names = names_for_tag(lane.component_tag)
    epoch = release.source_date_epoch
    facts = _lane_facts(release, lane, profile)
    profile_bytes = profile_asset(profile, rendered)
    spdx_member = zip_spdx_path(names.stem)
    layout = install_layout(profile)
    plan = package_plan(lane=lane, profile=profile, rendered=rendered, staged=staged, recipe=recipe)

    def bytes_done(n: int) -> None:
        if progress is not None:
            progress("package", n)

    with (
        staged_directory(out) as stage,
        tempfile.TemporaryDirectory(prefix=".ninfer-spool-", dir=out.parent) as tmp,
    ):
        work = Path(tmp)
        members = list(
            packaging.compress_members(
                plan.staged_entries,
                workdir=work,
                workers=workers,
                level=plan.deflate_level,
                progress=bytes_done,
                cache=deflate_cache,
                known_sha256={r.file: r.sha256 for r in staged.lock.redistributables},
            )
        )
        sha_of = {m.staged_path: m.sha256 for m in members if m.staged_path is not None}
        packaging.check_lock_digests(staged, sha_of)
        zip_name_of = {e.staged_path: e.name for e in plan.staged_entries if e.staged_path is not None}
        # PE headers only (fast load): versions for the lock cross-check, imports for the graph.
        pe_by_staged = {
            f.path: sbom.read_pe(f.source)
            for f in staged.files
            if f.path in zip_name_of and f.path.lower().endswith((".dll", ".exe"))
        }
        packaging.check_stand_in_claims(
            staged,
            {path: m for path, pe in pe_by_staged.items() if (m := sbom.stand_in_marker(pe)) is not None},
        )
        pe_infos = {zip_name_of[path]: pe for path, pe in pe_by_staged.items()}
        generated = [e for e in plan.generated_entries if e.name != spdx_member]
        members += packaging.compress_members(
            generated, workdir=work, workers=workers, level=plan.deflate_level
        )

        files = [
            sbom.FileRecord(
                path=m.name,
                size=m.size,
                sha1=m.sha1,
                sha256=m.sha256,
                license=_concluded_licence(staged, m.staged_path) if m.staged_path else None,
                comment=_file_comment(staged, m.staged_path, pe_by_staged) if m.staged_path else None,
            )
            for m in members
        ]
        refs = sbom.license_refs_of([f.license for f in files])
        extracted = sbom.load_license_texts(
            refs,
            licenses_dir=repo_root / "sbom" / "licenses",
            shipped={zip_name_of[f.path]: f.source for f in staged.files if f.path in zip_name_of},
        )
        spdx_bytes = sbom.spdx_file_inventory(
            package_name=names.stem,
            package_version=lane.component_tag,
            package_file_name=names.zip,
            supplier=PUBLISHER,
            download_location=release.asset_url(lane.component_tag, names.zip),
            files=files,
            spdx_file_path=spdx_member,
            namespace_base=f"{release.publication_base_url}/{lane.component_tag}/spdx",
            document_name=names.stem,
            epoch=epoch,
            creator_tool=f"ninfer-release-{__version__}",
            declared_license=None,
            extracted_licenses=extracted,
            release_id=f"{release.version}-{lane.id}",
        )
        plan = plan.with_generated({spdx_member: spdx_bytes})
        spdx_entry = [e for e in plan.generated_entries if e.name == spdx_member]
        members += packaging.compress_members(spdx_entry, workdir=work, workers=1, level=plan.deflate_level)
        zres = packaging.write_zip(members, stage / names.zip, epoch=epoch)
        # Refused before the set is sealed: the output directory appears only when complete.
        check_package_budget(
            package=names.zip,
            size=zres.size,
            budget=release.asset_budget,
            members=[(m.name, m.compressed_size) for m in members],
            definition=str(release.path),
        )

        cuda_runtime = next(
            (
                pe.cuda_version
                for path, pe in sorted(pe_infos.items())
                if path.lower().rsplit("/", 1)[-1].startswith("cudart") and pe.cuda_version
            ),
            None,
        )
        cdx_bytes = sbom.cyclonedx_dependency_inventory(
            component_name=names.stem,
            component_version=lane.component_tag,
            component_purl=sbom.canonical_purl(
                "generic", "omp-ninfer", "ninfer", lane.component_tag, {"arch": lane.cuda_arch or ""}, None
            ),
            supplier=PUBLISHER,
            dependencies=_dependencies(staged, zip_name_of, sha_of, lane),
            pe_infos=pe_infos,
            serial_identity=f"{release.asset_url(lane.component_tag, names.cdx)}#{zres.sha256}",
            epoch=epoch,
            tool_name="ninfer-release",
            tool_version=__version__,
            tool_vendor=PUBLISHER,
            component_authors=(PUBLISHER,),
        )
        instance = release_instance_id(lane.component_tag, zres.sha256)
        budget = path_budget(
            layout,
            package_paths=plan.names,
            instance_id=instance,
            extended_length=recipe.extended_length,
            source=f"{recipe.path} + install layout of {profile.id}",
        )
        binding = Binding(
            lane=lane.id,
            source_commit=lane.source_commit,
            profile_id=lane.profile_id,
            config_sha256=rendered.bytes_sha256,
            package_sha256=zres.sha256,
        )
        qualification = bind_receipts(receipts, binding)
        receipts_status = qualification.status
        blobs: dict[str, bytes] = {
            names.spdx: spdx_bytes,
            names.cdx: cdx_bytes,
            names.config: rendered.data,
            names.profile: profile_bytes,
            names.model: dumps_stable(model_record(release.model.as_dict())),
            names.qualification: dumps_stable(
                qualification_record(facts, qualification=qualification, binding=binding)
            ),
        }

        def ref(name: str) -> FileRef:
            if name == names.zip:
                return FileRef(
                    name=name,
                    url=release.asset_url(lane.component_tag, name),
                    size=zres.size,
                    sha256=zres.sha256,
                )
            data = blobs[name]
            return FileRef(
                name=name,
                url=release.asset_url(lane.component_tag, name),
                size=len(data),
                sha256=sha256_bytes(data),
            )

        staged_inputs = {f.path: sha_of[f.path] for f in staged.files if f.path in sha_of}
        blobs[names.provenance] = dumps_stable(
            provenance_statement(
                facts,
                subjects=[ref(n) for n in names.entries[:7]],
                staged_inputs=staged_inputs,
                definition_sha256=definition_sha256,
                config_bytes_sha256=rendered.bytes_sha256,
                model_sha256=release.model.sha256,
                deflate_engine=packaging.DEFLATE_ENGINE,
            )
        )
        blobs[names.route] = dumps_stable(
            route_record(
                facts,
                package=ref(names.zip),
                model=release.model.as_dict(),
                config_bytes_sha256=rendered.bytes_sha256,
                layout=layout,
                path_budget=budget,
                cuda_runtime_version=cuda_runtime,
                instance_id=instance,
                stand_ins=_stand_in_paths(staged, zip_name_of),
            )
        )
        blobs[names.manifest] = dumps_stable(
            component_manifest(
                facts,
                entries=[ref(n) for n in names.entries[:9]],
                config_bytes_sha256=rendered.bytes_sha256,
                instance_id=instance,
                qualification_status=receipts_status,
                cuda_runtime_version=cuda_runtime,
                path_budget=budget,
            )
        )
        entries = tuple(ref(n) for n in names.entries)
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
        sums=FileRef(
            name=SUMS_NAME,
            url=release.asset_url(lane.component_tag, SUMS_NAME),
            size=len(sums),
            sha256=sha256_bytes(sums),
        ),
        config_bytes_sha256=rendered.bytes_sha256,
        release_instance_id=instance,
        qualification=receipts_status,
        cuda_runtime_version=cuda_runtime,
        path_budget=budget,
    )
