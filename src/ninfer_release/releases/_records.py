"""Pure builders of the JSON entries 5–10 of a native asset set (DESIGN.md §4).

Every function here is pure: typed inputs in, a JSON-ready ``dict`` out; the caller renders it
with :func:`ninfer_release.jsonbytes.dumps_stable` (sorted keys, LF, one trailing newline).
No secret ever enters a record: the bearer key is described (length, alphabet, encoding, ACL), never given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ninfer_release import __version__
from ninfer_release.releases._receipts import Binding, Qualification

if TYPE_CHECKING:  # types only: verify imports this module and must not load the profiles stage
    from ninfer_release.profiles import InstallLayout, PathBudget

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SLSA_PROVENANCE_V1 = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "https://github.com/alphastorm/omp-ninfer/ninfer-release/native-lane/v1"
BUILDER_ID = "https://github.com/alphastorm/omp-ninfer/ninfer-release"
ENGINE_REPOSITORY = "https://github.com/alphastorm/ninfer"


@dataclass(frozen=True, kw_only=True)
class FileRef:
    """A published file: its name, public URL, size in bytes and SHA-256."""

    name: str
    url: str
    size: int
    sha256: str

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "url": self.url, "size": self.size, "sha256": self.sha256}


@dataclass(frozen=True, kw_only=True)
class LaneFacts:
    """What the records need to know about the lane being sealed (from the release definition)."""

    release_version: str
    candidate_commit: str
    lane_id: str
    component_tag: str
    profile_id: str
    source_commit: str
    upstream_base: str | None
    cuda_arch: str
    cuda_version: str
    gpu: str
    host_memory_floor_mib: int | None
    gpu_power_limit_w: int | None
    endpoint_host: str
    endpoint_port: int
    rollback: str
    source_date_epoch: int


def release_instance_id(component_tag: str, package_sha256: str) -> str:
    """The release-instance id: ``<component-tag>-<first 16 hex of the package SHA-256>``.

    *Ours* (DESIGN.md §4): it changes whenever the component's bytes do, because every shipped
    byte (binaries, config, profile, SBOM) is inside the package.
    """
    return f"{component_tag}-{package_sha256[:16]}"


def model_record(model: Mapping[str, Any]) -> dict[str, Any]:
    """Entry 6, ``<stem>.model.json``: the ``components.model`` binding with its download URL.

    ``model`` holds repository, revision, artifact, size (bytes), sha256, local_name,
    container_version (reference table "Model binding").
    """
    repo = str(model["repository"]).rstrip("/")
    return {
        "schema": 1,
        "binding": "components.model",
        "repository": repo,
        "revision": model["revision"],
        "artifact": model["artifact"],
        "url": f"{repo}/resolve/{model['revision']}/{model['artifact']}",
        "size": model["size"],
        "sha256": model["sha256"],
        "local_name": model["local_name"],
        "container_version": model["container_version"],
    }


def qualification_record(
    facts: LaneFacts, *, qualification: Qualification, binding: Binding
) -> dict[str, Any]:
    """Entry 7, ``<stem>.qualification.json`` (schema 2): receipts bound to these exact bytes.

    ``bound_to`` names source commit, profile id, config bytes SHA-256 and package SHA-256
    (``binding``); each receipt is listed with its own SHA-256, what it bound and how
    (``public``, or ``scratch_equivalence`` with its evidence), its gates and measurements; the
    gate ledger merges every receipt's gates with pass / fail / not_applicable counts. ``status``
    is ``qualified`` only with at least one receipt and no failed gate (DESIGN.md §3).
    """
    return {
        "schema": 2,
        "lane": facts.lane_id,
        "component_tag": facts.component_tag,
        "status": qualification.status,
        "bound_to": binding.as_dict(),
        "receipts": [r.as_dict() for r in qualification.receipts],
        "gates": qualification.ledger.as_dict(),
        "rollback": {
            "state": facts.rollback,
            "directions": 0 if facts.rollback == "not_applicable" else None,
        },
    }


def provenance_statement(
    facts: LaneFacts,
    *,
    subjects: Sequence[FileRef],
    staged_inputs: Mapping[str, str],
    definition_sha256: str,
    config_bytes_sha256: str,
    model_sha256: str,
    deflate_engine: str,
    build_inputs: Mapping[str, str] | None = None,
    tool: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """Entry 8, ``<stem>.provenance.json``: an in-toto Statement v1 with a SLSA v1 provenance predicate.

    ``subjects`` are entries 1–7 by name and SHA-256; ``staged_inputs`` maps each shipped staged
    file (POSIX path relative to the lane's staged tree) to its SHA-256; ``build_inputs`` maps
    every other input by name (``staged/build-info.json``, ``staged/dependencies.lock.json``, the
    release definition, profile, config template and package recipe by repository path) to its
    SHA-256; ``tool`` is ninfer-release and its resolved Python dependencies as
    ``(name, version)``, each named by its purl. ``resolvedDependencies`` lists them all (issue 14).
    ``deflate_engine`` names the deflate implementation whose output the zip's bytes depend on.
    The statement is unsigned here; ``sign`` / ``publish --sign`` wrap it in a DSSE envelope.
    Spec: in-toto Statement v1, SLSA Provenance v1 ``buildDefinition``/``runDetails``.
    """
    resolved: list[dict[str, Any]] = [
        {
            "uri": f"git+{ENGINE_REPOSITORY}@{facts.source_commit}",
            "digest": {"gitCommit": facts.source_commit},
            "name": "engine-source",
        }
    ]
    resolved.extend(
        {"name": f"staged/{path}", "digest": {"sha256": digest}}
        for path, digest in sorted(staged_inputs.items())
    )
    resolved.extend(
        {"name": name, "digest": {"sha256": digest}} for name, digest in sorted((build_inputs or {}).items())
    )
    resolved.extend(
        {"name": f"python/{name}", "uri": f"pkg:pypi/{name}@{version}"} for name, version in sorted(tool)
    )
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": s.name, "digest": {"sha256": s.sha256}} for s in subjects],
        "predicateType": SLSA_PROVENANCE_V1,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "release": facts.release_version,
                    "lane": facts.lane_id,
                    "component_tag": facts.component_tag,
                    "profile_id": facts.profile_id,
                    "definition_sha256": definition_sha256,
                },
                "internalParameters": {
                    "source_date_epoch": facts.source_date_epoch,
                    "cuda_arch": facts.cuda_arch,
                    "cuda_version": facts.cuda_version,
                    "config_bytes_sha256": config_bytes_sha256,
                    "model_sha256": model_sha256,
                    "deflate_engine": deflate_engine,
                },
                "resolvedDependencies": resolved,
            },
            "runDetails": {
                "builder": {"id": BUILDER_ID, "version": {"ninfer-release": __version__}},
                "metadata": {"invocationId": f"{facts.component_tag}@{definition_sha256[:16]}"},
            },
        },
    }


def route_record(
    facts: LaneFacts,
    *,
    package: FileRef,
    model: Mapping[str, Any],
    config_bytes_sha256: str,
    layout: InstallLayout,
    path_budget: PathBudget,
    cuda_runtime_version: str | None,
    instance_id: str,
    stand_ins: Sequence[str] = (),
) -> dict[str, Any]:
    """Entry 9, ``<stem>.route.json``: everything an installer needs, without guessing.

    ``stand_ins`` lists the zip paths of placeholder files (declared ``stand_in`` by build-info or
    the lock): an installer must not treat such a package as the real engine (issue 8 item 5).

    Package and model by URL/size/SHA-256; the hardware contract (GPU, CUDA arch, the CUDA
    runtime version read from the shipped ``cudart`` DLL, host memory floor in MiB, power policy
    in W where the reference gives one); the install layout as absolute Windows paths, every one
    from ``layout`` — the record the config was rendered from (``docs/install-layout.md``): the
    read-only program root, the writable data root with key, model, cache root and checkpoint
    directory ``cache/<release-instance-id>/session-checkpoints-v3`` (reference), the directories
    to create and the 260/248 path budget; the loopback endpoint; and the bearer key as data the
    installer acts on (length, alphabet, encoding, ACL) — no shell recipe (reference: "Native
    deployment profiles" and its rules).
    """
    model_rec = model_record(model)
    return {
        "schema": 2,
        "release": facts.release_version,
        "lane": facts.lane_id,
        "component_tag": facts.component_tag,
        "release_instance_id": instance_id,
        "package": package.as_dict(),
        "stand_ins": sorted(stand_ins),
        "model": {
            "binding": "components.model",
            "url": model_rec["url"],
            "size": model_rec["size"],
            "sha256": model_rec["sha256"],
            "revision": model_rec["revision"],
            "store_as": model_rec["local_name"],
            "resume_onto_older_version": False,
        },
        "hardware": {
            "gpu": facts.gpu,
            "gpu_binding": "uuid",
            "cuda_arch": facts.cuda_arch,
            "cuda_version": facts.cuda_version,
            "cuda_runtime_version": cuda_runtime_version,
            "host_memory_floor_mib": facts.host_memory_floor_mib,
            "gpu_power_limit_w": facts.gpu_power_limit_w,
            "exclusive": "one lane at a time per host; bound to one GPU by UUID",
        },
        "install": {
            "program_root": layout.program_root,
            "program_root_writable": False,
            "extract": "package zip into program_root, preserving paths",
            "config": layout.config_path,
            "config_bytes_sha256": config_bytes_sha256,
            "data_root": layout.data_root,
            "create_dirs": list(layout.data_dirs(instance_id)),
            "key_file": layout.key_path,
            "model_path": layout.model_path,
            "cache_root": layout.cache_path,
            "cache_acl": layout.cache_acl(),
            "checkpoint_dir": layout.checkpoint_path(instance_id),
            "checkpoint_schema": 3,
            "path_budget": path_budget.as_dict(),
        },
        "endpoint": {
            "host": facts.endpoint_host,
            "port": facts.endpoint_port,
            "auth": "bearer",
            "loopback_only": True,
        },
        "bearer_key": {"file": layout.key_path, **layout.key_spec.as_dict()},
    }


def component_manifest(
    facts: LaneFacts,
    *,
    entries: Sequence[FileRef],
    config_bytes_sha256: str,
    instance_id: str,
    qualification_status: str,
    cuda_runtime_version: str | None,
    path_budget: PathBudget,
) -> dict[str, Any]:
    """Entry 10, ``<stem>.manifest.json``: lane metadata, path budget, size + SHA-256 of entries 1–9."""
    return {
        "schema": 1,
        "release": facts.release_version,
        "candidate_commit": facts.candidate_commit,
        "lane": facts.lane_id,
        "component_tag": facts.component_tag,
        "kind": "windows-zip",
        "profile_id": facts.profile_id,
        "source_commit": facts.source_commit,
        "upstream_base": facts.upstream_base,
        "cuda_arch": facts.cuda_arch,
        "cuda_version": facts.cuda_version,
        "cuda_runtime_version": cuda_runtime_version,
        "config": {"hash_kind": "bytes", "sha256": config_bytes_sha256},
        "release_instance_id": instance_id,
        "qualification": qualification_status,
        "rollback": {
            "state": facts.rollback,
            "directions": 0 if facts.rollback == "not_applicable" else None,
        },
        "source_date_epoch": facts.source_date_epoch,
        "path_budget": path_budget.as_dict(),
        "entries": [e.as_dict() for e in entries],
    }
