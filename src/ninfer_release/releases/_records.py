"""The records of a native asset set, entries 5–10 (DESIGN.md §4), as typed frozen records.

Every record is a :class:`~ninfer_release.jsonrecord.JsonRecord`: ``to_bytes()`` is the exact
stable JSON sealing writes (sorted keys, two-space indent, LF, one trailing newline) and
``parse(data, source=...)`` is the strict reader verify uses (a missing, extra or wrongly typed
field is refused naming the file and the field). Sealing (``releases/_seal.py``) builds them with
the constructors here (:func:`model_record`, :func:`qualification_record`,
:func:`provenance_statement`, :func:`route_record`, :func:`component_manifest`,
:func:`profile_asset_record`), so a field cannot be written on one side and forgotten on the other.

They live here, beside the asset contract (``_contract.py``), because their rules are the set's:
which entries each binds, the release-instance id, the qualification rule of ``_receipts``.
No secret ever enters a record: the bearer key is described (length, alphabet, encoding, ACL),
never given.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ninfer_release import __version__
from ninfer_release.jsonrecord import ABSENT_WHEN_NONE, JsonRecord, json_key
from ninfer_release.manifests._refs import ConfigHash, FileRef, Rollback
from ninfer_release.releases._receipts import Binding, Qualification
from ninfer_release.releases._standalone_verifier import route_plan, with_account

if TYPE_CHECKING:  # types only: verify imports this module and must not load the profiles stage
    from ninfer_release.manifests import ModelBinding
    from ninfer_release.profiles import InstallLayout, PathBudget, Profile

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SLSA_PROVENANCE_V1 = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "https://github.com/alphastorm/omp-ninfer/ninfer-release/native-lane/v1"
BUILDER_ID = "https://github.com/alphastorm/omp-ninfer/ninfer-release"
ENGINE_REPOSITORY = "https://github.com/alphastorm/ninfer"

__all__ = ["ConfigHash", "FileRef", "Rollback"]


class _Record(JsonRecord):
    """A record of this module: ``__eq__``, ``__hash__`` and ``__repr__`` shared, not generated.

    ``@dataclass`` compiles each method it writes, for every class: with ``eq`` and ``repr`` six
    per frozen class, ~0.9 ms; this module's 36 records cost every ``verify`` and ``build`` ~30 ms
    to import (issue 13). Declared ``@dataclass(frozen=True, kw_only=True, eq=False, repr=False)``,
    a record gets these three from here, with the generated ones' meaning: equal when of the same
    class with equal fields in order (else ``NotImplemented``), the hash of the field tuple, and
    ``Name(field=value!r, ...)`` by qualified name (``tests/test_records.py`` compares them with a
    stdlib dataclass's). Only ``__init__``, ``__setattr__`` and ``__delattr__`` are compiled.
    Assumes no field sets ``compare``/``hash``/``repr`` (none does; tested).
    """

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # set by @dataclass on each record

    def _field_values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._field_values() == other._field_values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._field_values())

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))
        return f"{self.__class__.__qualname__}({shown})"


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


# --- entry 6: the model -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ModelRecord(_Record):
    """Entry 6, ``<stem>.model.json``: the ``components.model`` binding with its download URL.

    ``size`` in bytes; ``url`` is ``<repository>/resolve/<revision>/<artifact>`` (reference table
    "Model binding").
    """

    RECORD_KIND = "a model record"

    schema: Literal[1]  # a set of another schema is not one this verifier reads
    binding: Literal["components.model"]
    repository: str
    revision: str
    artifact: str
    url: str
    size: int
    sha256: str
    local_name: str
    container_version: int


def model_record(model: ModelBinding) -> ModelRecord:
    """Entry 6 of ``model`` (the definition's ``components.model``)."""
    repo = model.repository.rstrip("/")
    return ModelRecord(
        schema=1,
        binding="components.model",
        repository=repo,
        revision=model.revision,
        artifact=model.artifact,
        url=f"{repo}/resolve/{model.revision}/{model.artifact}",
        size=model.size,
        sha256=model.sha256,
        local_name=model.local_name,
        container_version=model.container_version,
    )


# --- entry 7: the qualification -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class BoundTo(_Record):
    """``bound_to``: the exact bytes the qualification is about."""

    RECORD_KIND = "a bound_to block"

    source_commit: str
    profile_id: str
    config_bytes_sha256: str
    package_sha256: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ReceiptBound(_Record):
    """``receipts[].bound``: what the receipt's run installed."""

    RECORD_KIND = "a receipt's bound block"

    source_commit: str
    profile_id: str
    config_sha256: str
    package_sha256: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class EquivalenceRecord(_Record):
    """``scratch.equivalence``: the public bytes a scratch run stands for, and why."""

    RECORD_KIND = "a scratch equivalence"

    package_sha256: str
    config_sha256: str
    evidence: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ScratchRecord(_Record):
    """``scratch``: a run on a scratch installation (its variant; its equivalence if any)."""

    RECORD_KIND = "a scratch block"

    variant: str
    equivalence: EquivalenceRecord | None = field(default=None, metadata=ABSENT_WHEN_NONE)


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ReceiptEntry(_Record):
    """One receipt of a qualification record: its file name and SHA-256, how it binds, its gates."""

    RECORD_KIND = "a receipt entry"

    name: str
    sha256: str
    binding: str
    bound: ReceiptBound
    gates: Mapping[str, str]
    measurements: Mapping[str, float | int | str | bool]
    scratch: ScratchRecord | None = field(default=None, metadata=ABSENT_WHEN_NONE)


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class GateLedgerRecord(_Record):
    """``gates``: the receipts' gates merged, their counts and the failed ones."""

    RECORD_KIND = "a gate ledger"

    merged: Mapping[str, str]
    counts: Mapping[str, int]
    failed: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class QualificationRecord(_Record):
    """Entry 7, ``<stem>.qualification.json`` (schema 2): receipts bound to these exact bytes.

    ``status`` is ``qualified`` only with at least one receipt and no failed gate (DESIGN.md §3).
    """

    RECORD_KIND = "a qualification record"

    schema: Literal[2]
    lane: str
    component_tag: str
    status: str
    bound_to: BoundTo
    receipts: tuple[ReceiptEntry, ...]
    gates: GateLedgerRecord
    rollback: Rollback


def qualification_record(
    facts: LaneFacts, *, qualification: Qualification, binding: Binding
) -> QualificationRecord:
    """Entry 7 for ``binding``: ``bound_to`` names source commit, profile id, config bytes SHA-256
    and package SHA-256; each receipt is listed with its own SHA-256, what it bound and how
    (``public``, or ``scratch_equivalence`` with its evidence), its gates and measurements; the
    gate ledger merges every receipt's gates with pass / fail / not_applicable counts."""
    return QualificationRecord(
        schema=2,
        lane=facts.lane_id,
        component_tag=facts.component_tag,
        status=qualification.status,
        bound_to=BoundTo.parse_doc(binding.as_dict(), source="bound_to"),
        receipts=tuple(ReceiptEntry.parse_doc(r.as_dict(), source="receipt") for r in qualification.receipts),
        gates=GateLedgerRecord.parse_doc(qualification.ledger.as_dict(), source="gates"),
        rollback=Rollback.of(facts.rollback),
    )


# --- entry 8: the provenance --------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Subject(_Record):
    """An in-toto subject: a file name and its digests."""

    RECORD_KIND = "a provenance subject"

    name: str
    digest: Mapping[str, str]


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ResolvedDependency(_Record):
    """A SLSA resource descriptor: a name, and a URI and/or digests."""

    RECORD_KIND = "a resolved dependency"

    name: str
    uri: str | None = field(default=None, metadata=ABSENT_WHEN_NONE)
    digest: Mapping[str, str] | None = field(default=None, metadata=ABSENT_WHEN_NONE)


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ExternalParameters(_Record):
    """What the build was asked for: release, lane, component tag, profile, definition digest."""

    RECORD_KIND = "externalParameters"

    release: str
    lane: str
    component_tag: str
    profile_id: str
    definition_sha256: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class InternalParameters(_Record):
    """What the build fixed itself: epoch, CUDA target, config and model digests, deflate engine."""

    RECORD_KIND = "internalParameters"

    source_date_epoch: int
    cuda_arch: str
    cuda_version: str
    config_bytes_sha256: str
    model_sha256: str
    deflate_engine: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class BuildDefinition(_Record):
    """SLSA v1 ``buildDefinition``."""

    RECORD_KIND = "buildDefinition"

    buildType: str
    externalParameters: ExternalParameters
    internalParameters: InternalParameters
    resolvedDependencies: tuple[ResolvedDependency, ...]


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Builder(_Record):
    """SLSA v1 ``runDetails.builder``."""

    RECORD_KIND = "a builder"

    id: str
    version: Mapping[str, str]


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class RunMetadata(_Record):
    """SLSA v1 ``runDetails.metadata``."""

    RECORD_KIND = "run metadata"

    invocationId: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class RunDetails(_Record):
    """SLSA v1 ``runDetails``."""

    RECORD_KIND = "runDetails"

    builder: Builder
    metadata: RunMetadata


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Predicate(_Record):
    """The SLSA Provenance v1 predicate."""

    RECORD_KIND = "a provenance predicate"

    buildDefinition: BuildDefinition
    runDetails: RunDetails


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ProvenanceStatement(_Record):
    """Entry 8, ``<stem>.provenance.json``: an in-toto Statement v1 with a SLSA v1 provenance predicate.

    Spec: in-toto Statement v1, SLSA Provenance v1 ``buildDefinition``/``runDetails``. Unsigned;
    ``sign`` / ``publish --sign`` wrap its bytes in a DSSE envelope.
    """

    RECORD_KIND = "a provenance statement"

    type: str = field(metadata=json_key("_type"))
    subject: tuple[Subject, ...]
    predicateType: str
    predicate: Predicate


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
) -> ProvenanceStatement:
    """Entry 8 of the lane.

    ``subjects`` are the files :data:`~._contract.PROVENANCE_SUBJECTS` names, by name and
    SHA-256; ``staged_inputs`` maps each shipped staged file (POSIX path relative to the lane's
    staged tree) to its SHA-256; ``build_inputs`` maps every other input by name
    (``staged/build-info.json``, ``staged/dependencies.lock.json``, the release definition,
    profile, config template and package recipe by repository path) to its SHA-256; ``tool`` is
    ninfer-release and its resolved Python dependencies as ``(name, version)``, each named by its
    purl. ``resolvedDependencies`` lists them all (issue 14). ``deflate_engine`` names the
    deflate implementation whose output the zip's bytes depend on.
    """
    resolved = [
        ResolvedDependency(
            name="engine-source",
            uri=f"git+{ENGINE_REPOSITORY}@{facts.source_commit}",
            digest={"gitCommit": facts.source_commit},
        ),
        *(
            ResolvedDependency(name=f"staged/{path}", digest={"sha256": digest})
            for path, digest in sorted(staged_inputs.items())
        ),
        *(
            ResolvedDependency(name=name, digest={"sha256": digest})
            for name, digest in sorted((build_inputs or {}).items())
        ),
        *(
            ResolvedDependency(name=f"python/{name}", uri=f"pkg:pypi/{name}@{version}")
            for name, version in sorted(tool)
        ),
    ]
    return ProvenanceStatement(
        type=STATEMENT_TYPE,
        subject=tuple(Subject(name=s.name, digest={"sha256": s.sha256}) for s in subjects),
        predicateType=SLSA_PROVENANCE_V1,
        predicate=Predicate(
            buildDefinition=BuildDefinition(
                buildType=BUILD_TYPE,
                externalParameters=ExternalParameters(
                    release=facts.release_version,
                    lane=facts.lane_id,
                    component_tag=facts.component_tag,
                    profile_id=facts.profile_id,
                    definition_sha256=definition_sha256,
                ),
                internalParameters=InternalParameters(
                    source_date_epoch=facts.source_date_epoch,
                    cuda_arch=facts.cuda_arch,
                    cuda_version=facts.cuda_version,
                    config_bytes_sha256=config_bytes_sha256,
                    model_sha256=model_sha256,
                    deflate_engine=deflate_engine,
                ),
                resolvedDependencies=tuple(resolved),
            ),
            runDetails=RunDetails(
                builder=Builder(id=BUILDER_ID, version={"ninfer-release": __version__}),
                metadata=RunMetadata(invocationId=f"{facts.component_tag}@{definition_sha256[:16]}"),
            ),
        ),
    )


# --- entry 9: the route block -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class LongestPathRecord(_Record):
    """The longest path under a root, in UTF-16 code units, and its limit."""

    RECORD_KIND = "a longest-path block"

    path: str
    chars: int
    limit: int


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class RootBudgetRecord(_Record):
    """One install root's path budget."""

    RECORD_KIND = "a root budget"

    root: str
    longest_file: LongestPathRecord
    longest_dir: LongestPathRecord


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class PathBudgetRecord(_Record):
    """``path_budget``: the 260/248 budget of the install layout (``profiles.PathBudget``)."""

    RECORD_KIND = "a path budget"

    max_path: int
    max_dir_path: int
    units: str
    checkpoint_file_name_chars: int
    extended_length: bool
    program_root: RootBudgetRecord
    data_root: RootBudgetRecord

    @classmethod
    def of(cls, budget: PathBudget) -> PathBudgetRecord:
        """The record of a measured budget."""
        return cls.parse_doc(budget.as_dict(), source="path_budget")


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class AclGrantRecord(_Record):
    """One ACL grant: a well-known SID (with its name), or the engine's account (``principal``)."""

    RECORD_KIND = "an ACL grant"

    rights: str
    sid: str | None = field(default=None, metadata=ABSENT_WHEN_NONE)
    name: str | None = field(default=None, metadata=ABSENT_WHEN_NONE)
    principal: str | None = field(default=None, metadata=ABSENT_WHEN_NONE)


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class AclRecord(_Record):
    """An ACL: inheritance and grants, in order."""

    RECORD_KIND = "an ACL"

    inheritance: str
    grants: tuple[AclGrantRecord, ...]


@dataclass(frozen=True, kw_only=True)
class RoutePackage(FileRef):
    """``package``: the zip by name, URL, size and SHA-256."""

    RECORD_KIND = "a route's package"


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class RouteModel(_Record):
    """``model``: where the installer downloads the model and how it stores it."""

    RECORD_KIND = "a route's model block"

    binding: Literal["components.model"]
    url: str
    size: int
    sha256: str
    revision: str
    store_as: str
    resume_onto_older_version: Literal[False]
    #: The shared store (``winpaths.MODEL_STORE_ROOT``): ``store_dirs`` to create, the file at
    #: ``store_path`` (``…\\sha256\\<sha256>\\<store_as>``) reused when its size and SHA-256
    #: are these, else replaced, never resumed; ``install.model_path`` is a hard ``link`` to it.
    store_dirs: tuple[str, ...]
    store_path: str
    reuse: Literal["size-and-sha256"]
    link: Literal["hardlink"]


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Hardware(_Record):
    """``hardware``: GPU, CUDA target and runtime, host memory floor (MiB), power limit (W)."""

    RECORD_KIND = "a hardware block"

    gpu: str
    gpu_binding: Literal["uuid"]
    #: The installer parameter (``parameters[].name``) holding the UUID of the GPU bound.
    gpu_uuid_parameter: Literal["gpu_uuid"]
    cuda_arch: str
    cuda_version: str
    cuda_runtime_version: str | None
    host_memory_floor_mib: int | None
    gpu_power_limit_w: int | None
    exclusive: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ExtractStep(_Record):
    """``install.extract``: unpack ``archive`` (the package's name) from ``member_root`` (``""``: the
    whole zip) into ``destination``, member paths kept, never over an existing file."""

    RECORD_KIND = "an extract step"

    archive: str
    format: Literal["zip"]
    member_root: str
    destination: str
    preserve_paths: Literal[True]
    overwrite_existing: Literal[False]


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class InstallParameter(_Record):
    """One value only the installer knows: it writes it as ``key`` (TOML dotted path) of ``file``,
    matching ``pattern`` (a Python/ECMAScript regular expression)."""

    RECORD_KIND = "an installer parameter"

    name: str
    supplied_by: Literal["installer"]
    describes: str
    pattern: str
    file: str
    key: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class HealthCheck(_Record):
    """``service.health``: ``GET url`` with the bearer key of ``key_file`` answers ``expect_status``
    within ``timeout_ms`` of the service's start."""

    RECORD_KIND = "a health check"

    method: Literal["GET"]
    url: str
    auth: Literal["bearer"]
    key_file: str
    expect_status: int
    timeout_ms: int


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ServiceBlock(_Record):
    """``service``: the Windows service the installer creates, whose virtual ``account``
    (``NT SERVICE\\<name>``) the ACLs grant; it starts ``executable`` with ``arguments``."""

    RECORD_KIND = "a service block"

    name: str
    account: str
    account_kind: Literal["virtual-service-account"]
    executable: str
    arguments: tuple[str, ...]
    working_dir: str
    health: HealthCheck


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Install(_Record):
    """``install``: every installed path, absolute Windows paths from one install layout."""

    RECORD_KIND = "an install block"

    program_root: str
    program_root_writable: Literal[False]
    extract: ExtractStep
    config: str
    machine_config: str
    config_bytes_sha256: str
    data_root: str
    create_dirs: tuple[str, ...]
    key_file: str
    model_path: str
    cache_root: str
    cache_acl: AclRecord
    checkpoint_dir: str
    checkpoint_schema: Literal[3]
    path_budget: PathBudgetRecord


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class RouteEndpoint(_Record):
    """``endpoint``: the loopback endpoint and its auth."""

    RECORD_KIND = "an endpoint block"

    host: str
    port: int
    auth: Literal["bearer"]
    loopback_only: Literal[True]


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class BearerKey(_Record):
    """``bearer_key``: the key file as data the installer acts on — never the key itself."""

    RECORD_KIND = "a bearer-key block"

    file: str
    min_bytes: int
    generated_chars: int
    file_bytes: int
    random_bytes: int
    randomness: str
    alphabet: str
    encoding: str
    bom: bool
    trailing_newline: bool
    overwrite_existing: bool
    acl: AclRecord
    stored_in_assets: Literal[False]


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class RouteRecord(_Record):
    """Entry 9, ``<stem>.route.json``: everything an installer needs, without guessing."""

    RECORD_KIND = "a route block"

    schema: Literal[3]
    release: str
    lane: str
    component_tag: str
    release_instance_id: str
    package: FileRef
    stand_ins: tuple[str, ...]
    model: RouteModel
    hardware: Hardware
    parameters: tuple[InstallParameter, ...]
    install: Install
    service: ServiceBlock
    endpoint: RouteEndpoint
    bearer_key: BearerKey


def route_record(
    facts: LaneFacts,
    *,
    package: FileRef,
    model: ModelBinding,
    config_bytes_sha256: str,
    layout: InstallLayout,
    path_budget: PathBudget,
    cuda_runtime_version: str | None,
    instance_id: str,
    stand_ins: Sequence[str] = (),
) -> RouteRecord:
    """Entry 9 of the lane.

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
    m = model_record(model)
    install = {
        "program_root": layout.program_root,
        "data_root": layout.data_root,
        "config": layout.config_path,
        "key_file": layout.key_path,
    }
    endpoint = {"host": facts.endpoint_host, "port": facts.endpoint_port}
    plan = route_plan(
        tag=facts.component_tag,
        archive=package.name,
        install=install,
        endpoint=endpoint,
        model={"sha256": m.sha256, "store_as": m.local_name},
    )
    account = plan["service"]["account"]
    return RouteRecord(
        schema=3,
        release=facts.release_version,
        lane=facts.lane_id,
        component_tag=facts.component_tag,
        release_instance_id=instance_id,
        package=package,
        stand_ins=tuple(sorted(stand_ins)),
        model=_route_model(m, plan["model_store"]),
        hardware=Hardware(
            gpu=facts.gpu,
            gpu_binding="uuid",
            gpu_uuid_parameter="gpu_uuid",
            cuda_arch=facts.cuda_arch,
            cuda_version=facts.cuda_version,
            cuda_runtime_version=cuda_runtime_version,
            host_memory_floor_mib=facts.host_memory_floor_mib,
            gpu_power_limit_w=facts.gpu_power_limit_w,
            exclusive="one lane at a time per host; bound to one GPU by UUID",
        ),
        parameters=tuple(InstallParameter.parse_doc(p, source="parameters") for p in plan["parameters"]),
        install=_route_install(layout, plan, config_bytes_sha256, path_budget, instance_id, account),
        service=ServiceBlock.parse_doc(plan["service"], source="service"),
        endpoint=RouteEndpoint(
            host=facts.endpoint_host, port=facts.endpoint_port, auth="bearer", loopback_only=True
        ),
        bearer_key=BearerKey.parse_doc(
            {"file": layout.key_path, **with_account(layout.key_spec.as_dict(), account)},
            source="bearer_key",
        ),
    )


def _route_model(m: ModelRecord, store: Mapping[str, Any]) -> RouteModel:
    """The route's ``model`` block: the model entry's binding and the store fields of ``store``."""
    return RouteModel.parse_doc(
        {
            "binding": "components.model",
            "url": m.url,
            "size": m.size,
            "sha256": m.sha256,
            "revision": m.revision,
            "store_as": m.local_name,
            "resume_onto_older_version": False,
            **store,
        },
        source="model",
    )


def _route_install(
    layout: InstallLayout,
    plan: Mapping[str, Any],
    config_bytes_sha256: str,
    path_budget: PathBudget,
    instance_id: str,
    account: str,
) -> Install:
    """The route's ``install`` block (paths from ``layout``, steps from ``plan``)."""
    return Install(
        program_root=layout.program_root,
        program_root_writable=False,
        extract=ExtractStep.parse_doc(plan["extract"], source="install.extract"),
        config=layout.config_path,
        machine_config=plan["machine_config"],
        config_bytes_sha256=config_bytes_sha256,
        data_root=layout.data_root,
        create_dirs=tuple(layout.data_dirs(instance_id)),
        key_file=layout.key_path,
        model_path=layout.model_path,
        cache_root=layout.cache_path,
        cache_acl=AclRecord.parse_doc(with_account(layout.cache_acl(), account), source="cache_acl"),
        checkpoint_dir=layout.checkpoint_path(instance_id),
        checkpoint_schema=3,
        path_budget=PathBudgetRecord.of(path_budget),
    )


# --- entry 10: the component manifest -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ComponentManifest(_Record):
    """Entry 10, ``<stem>.manifest.json``: lane metadata, path budget, and the size + SHA-256 of
    the files :data:`~._contract.COMPONENT_MANIFEST_ENTRIES` names."""

    RECORD_KIND = "a component manifest"

    schema: Literal[1]
    release: str
    candidate_commit: str
    lane: str
    component_tag: str
    kind: Literal["windows-zip"]
    profile_id: str
    source_commit: str
    upstream_base: str | None
    cuda_arch: str
    cuda_version: str
    cuda_runtime_version: str | None
    config: ConfigHash
    release_instance_id: str
    qualification: str
    rollback: Rollback
    source_date_epoch: int
    path_budget: PathBudgetRecord
    entries: tuple[FileRef, ...]


def component_manifest(
    facts: LaneFacts,
    *,
    entries: Sequence[FileRef],
    config_bytes_sha256: str,
    instance_id: str,
    qualification_status: str,
    cuda_runtime_version: str | None,
    path_budget: PathBudget,
) -> ComponentManifest:
    """Entry 10 of the lane, listing ``entries`` (in contract order)."""
    return ComponentManifest(
        schema=1,
        release=facts.release_version,
        candidate_commit=facts.candidate_commit,
        lane=facts.lane_id,
        component_tag=facts.component_tag,
        kind="windows-zip",
        profile_id=facts.profile_id,
        source_commit=facts.source_commit,
        upstream_base=facts.upstream_base,
        cuda_arch=facts.cuda_arch,
        cuda_version=facts.cuda_version,
        cuda_runtime_version=cuda_runtime_version,
        config=ConfigHash(hash_kind="bytes", sha256=config_bytes_sha256),
        release_instance_id=instance_id,
        qualification=qualification_status,
        rollback=Rollback.of(facts.rollback),
        source_date_epoch=facts.source_date_epoch,
        path_budget=PathBudgetRecord.of(path_budget),
        entries=tuple(entries),
    )


# --- entry 5: the public profile ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ProfileModel(_Record):
    """A profile's model: the file it loads and its SHA-256."""

    RECORD_KIND = "a profile's model"

    local_name: str
    sha256: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ProfileSpeculation(_Record):
    """A profile's speculation settings."""

    RECORD_KIND = "a profile's speculation"

    mode: str
    lm_head_draft: bool
    dflash2: bool


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ProfileEndpoint(_Record):
    """A profile's endpoint and how its bearer key is made."""

    RECORD_KIND = "a profile's endpoint"

    host: str
    port: int
    auth: str
    key_file: str
    key_min_bytes: int
    key_generation: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ProfileCheckpoint(_Record):
    """A profile's session checkpoints."""

    RECORD_KIND = "a profile's checkpoint"

    root: str | None
    dir_template: str | None
    mount: str | None
    schema: int | None
    require_origin_auth: bool


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ProfileConfigRef(_Record):
    """Entry 5's ``config``: where the package keeps the config and its *bytes* SHA-256."""

    RECORD_KIND = "a profile's config binding"

    path: str
    hash_kind: str
    bytes_sha256: str


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ProfileAsset(_Record):
    """Entry 5, ``<stem>.profile.json`` (also ``profile/<id>.json`` in the zip): the public
    profile (``profiles.Profile.public_dict``) with the config it binds by bytes SHA-256.

    Native lanes bind the *bytes* SHA-256 of the config (reference: "Rules that come with them").
    """

    RECORD_KIND = "a profile asset"

    profile_schema: int
    profile_id: str
    kind: str
    lane: str
    component_tag: str | None
    carried: bool
    carried_from: str | None
    gpu: str
    cuda_arch: str | None
    config_schema: int | None
    model: ProfileModel
    context_tokens: int | None
    kv_capacity_tokens: int | None
    kv_cache_dtype: str | None
    speculation: ProfileSpeculation | None
    concurrent_requests: int | None
    pending_timeout_ms: int | None
    extra_device_state_slots: int | None
    prefill_chunk_tokens: int | None
    shared_host_budget_bytes: int | None
    shared_host_budget_mib: str | None
    admission_headroom_mib: int | None
    keep_warm_ms: int | None
    vision: bool | None
    host_memory_floor_mib: int | None
    gpu_power_limit_w: int | None
    endpoint: ProfileEndpoint
    checkpoint: ProfileCheckpoint
    strict_origin_config: str | None
    flags: tuple[str, ...]
    args: tuple[str, ...]
    config: ProfileConfigRef


def profile_asset_record(profile: Profile, *, config_path: str, config_bytes_sha256: str) -> ProfileAsset:
    """Entry 5 of ``profile`` whose config (at ``config_path`` in the zip) has ``config_bytes_sha256``."""
    doc = {
        **profile.public_dict(),
        "config": {"path": config_path, "hash_kind": "bytes", "bytes_sha256": config_bytes_sha256},
    }
    return ProfileAsset.parse_doc(doc, source=f"profile {profile.id}")
