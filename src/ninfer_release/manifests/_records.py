"""The records the ``manifests`` stage publishes: the release manifest, its lane entries, lane results.

Each is a frozen :class:`~ninfer_release.jsonrecord.JsonRecord`: ``to_bytes()`` is the exact
stable JSON written today and ``parse(data, source=...)`` refuses a missing, extra or wrongly
typed field naming the file and the field. Producers (``build``, ``releases/_seal.py``) construct
them; ``assemble`` and ``verify`` parse them, so both sides share one definition of each key.

* :class:`ReleaseFacts` — the release-level block of a lane result (``<lane>.lane.json`` key
  ``release``): identical for every lane of one release; it names the lanes (``lane_ids``).
* a *lane entry* — one lane's entry of ``release-manifest.json`` (``lanes.<id>``): a
  :class:`NativeLaneEntry` (a sealed windows-zip set: its ``SHA256SUMS`` and 10 entries), a
  :class:`CarriedLaneEntry` (a container carried by digest) or an :class:`ImageLaneEntry` (a
  container built here). Which one is decided by ``kind`` and ``mode`` (:func:`lane_entry_type`).
* :class:`LaneResult` — ``<lane>.lane.json``: schema, kind, lane id, facts and entry.
* :class:`ReleaseManifest` — ``release-manifest.json``: the facts once (without ``lane_ids``)
  and every lane's entry.

:class:`FileRef`, :class:`ConfigHash` and :class:`Rollback` are shared with the component
manifest of a set (``releases/_records.py``), which repeats them per lane; they live in the leaf
:mod:`ninfer_release.manifests._refs` (re-exported here), so that ``verify`` reads a set without
creating the release-manifest records (issue 13: start-up cost).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ninfer_release.hashing import sha256_file
from ninfer_release.jsonrecord import ABSENT_WHEN_NONE, JsonRecord, Reader, codec, decode_value
from ninfer_release.manifests._refs import ConfigHash, FileRef, Rollback

if TYPE_CHECKING:  # types only: verify reads these records and must not load the definition loader
    from ninfer_release.manifests._definition import Release

LANE_RESULT_KIND = "ninfer-release/lane-result"
MANIFEST_KIND = "ninfer-release/release-manifest"


# --- release facts ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DefinitionRef(JsonRecord):
    """``definition``: the release definition by repository path and SHA-256."""

    RECORD_KIND = "a definition reference"

    path: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class ModelBindingRecord(JsonRecord):
    """``components.model`` as the definition binds it (reference "Model binding"; size in bytes)."""

    RECORD_KIND = "a model binding"

    repository: str
    revision: str
    artifact: str
    size: int
    sha256: str
    local_name: str
    container_version: int


@dataclass(frozen=True, kw_only=True)
class ClientRecord(JsonRecord):
    """``components.client``: the carried client (``source`` short hex as published)."""

    RECORD_KIND = "a client binding"

    name: str
    version: str
    source: str
    mode: str


@dataclass(frozen=True, kw_only=True)
class Components(JsonRecord):
    """``components``: the model and the client every lane uses."""

    RECORD_KIND = "a components block"

    model: ModelBindingRecord
    client: ClientRecord


@dataclass(frozen=True, kw_only=True)
class SupersededRecord(JsonRecord):
    """One superseded component tag: never reused or relabelled."""

    RECORD_KIND = "a superseded tag"

    tag: str
    source: str
    successor: str


@dataclass(frozen=True, kw_only=True)
class _ReleaseBlock(JsonRecord):
    """The release facts shared by a lane result's ``release`` block and the release manifest."""

    product: str
    version: str
    state: str
    published_product_version: str | None
    candidate_commit: str
    definition: DefinitionRef
    source_date_epoch: int
    publication_base_url: str
    components: Components
    upstream_base: str | None
    superseded: tuple[SupersededRecord, ...]


_FACT_KEYS = (
    "product",
    "version",
    "state",
    "published_product_version",
    "candidate_commit",
    "definition",
    "source_date_epoch",
    "publication_base_url",
    "components",
    "upstream_base",
    "superseded",
)


@dataclass(frozen=True, kw_only=True)
class ReleaseFacts(_ReleaseBlock):
    """The ``release`` block of a lane result: the facts and the release's lane ids (sorted)."""

    RECORD_KIND = "the release facts of a lane result"

    lane_ids: tuple[str, ...]

    @classmethod
    def of(cls, release: Release) -> ReleaseFacts:
        """The facts of the validated definition ``release`` (its file is hashed here).

        ``definition.path`` is the definition's path relative to the project root (POSIX), or
        its file name when it lies outside the root.
        """
        try:
            rel_path = release.path.resolve().relative_to(release.repo_root.resolve()).as_posix()
        except ValueError:
            rel_path = release.path.name
        m, c = release.model, release.client
        return cls(
            product=release.product,
            version=release.version,
            state=release.state,
            published_product_version=release.published_product_version,
            candidate_commit=release.candidate_commit,
            definition=DefinitionRef(path=rel_path, sha256=sha256_file(release.path)),
            source_date_epoch=release.source_date_epoch,
            publication_base_url=release.publication_base_url,
            components=Components(
                model=ModelBindingRecord(
                    repository=m.repository,
                    revision=m.revision,
                    artifact=m.artifact,
                    size=m.size,
                    sha256=m.sha256,
                    local_name=m.local_name,
                    container_version=m.container_version,
                ),
                client=ClientRecord(name=c.name, version=c.version, source=c.source, mode=c.mode),
            ),
            upstream_base=release.upstream_base,
            superseded=tuple(
                SupersededRecord(tag=s.tag, source=s.source, successor=s.successor)
                for s in release.superseded
            ),
            lane_ids=tuple(sorted(release.lanes)),
        )


# --- lane entries -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DocumentedRoutes(JsonRecord):
    """``documented_routes`` of a lane whose predecessor published a route block (build rule)."""

    RECORD_KIND = "a documented_routes block"

    predecessor: str
    changed: tuple[str, ...]
    document_change: str | None


@dataclass(frozen=True, kw_only=True)
class NativeLaneEntry(JsonRecord):
    """A windows-zip lane's entry: the sealed set's identity, ``SHA256SUMS`` and its 10 entries."""

    RECORD_KIND = "a native lane entry"

    component_tag: str
    kind: str
    mode: str
    profile_id: str
    source_commit: str
    cuda_arch: str | None
    cuda_version: str | None
    cuda_runtime_version: str | None
    config: ConfigHash
    release_instance_id: str
    qualification: str
    rollback: Rollback
    sha256sums: FileRef
    entries: tuple[FileRef, ...]
    documented_routes: DocumentedRoutes | None = field(default=None, metadata=ABSENT_WHEN_NONE)


@dataclass(frozen=True, kw_only=True)
class CarriedBindings(JsonRecord):
    """The short digests a carried container is bound by (as its record publishes them)."""

    RECORD_KIND = "a carried lane's bindings"

    server: str
    archive: str
    base_image: str
    strict_origin_config: str
    checkpoint_mount: str


@dataclass(frozen=True, kw_only=True)
class CarriedConfig(JsonRecord):
    """A carried lane's config binding: semantic, by the published strict-origin digest."""

    RECORD_KIND = "a carried lane's config"

    hash_kind: str
    strict_origin_config: str


@dataclass(frozen=True, kw_only=True)
class CarriedLaneEntry(JsonRecord):
    """An oci-image lane carried unchanged: the image by digest and how it was verified."""

    RECORD_KIND = "a carried lane entry"

    component_tag: str
    kind: str
    mode: str
    profile_id: str
    source_commit: str
    carried_from: str
    image: str
    image_digest: str
    bindings: CarriedBindings
    config: CarriedConfig
    verification: str


@dataclass(frozen=True, kw_only=True)
class BaseImageRef(JsonRecord):
    """The base image of a built container: name and manifest digest."""

    RECORD_KIND = "a base image reference"

    name: str
    digest: str


@dataclass(frozen=True, kw_only=True)
class OutputRef(JsonRecord):
    """An output file of an image build: path relative to the release output, SHA-256, size."""

    RECORD_KIND = "an output reference"

    path: str
    sha256: str
    size: int


@dataclass(frozen=True, kw_only=True)
class SbomOutputs(JsonRecord):
    """The image's two SBOMs."""

    RECORD_KIND = "an image's SBOM outputs"

    cyclonedx: OutputRef
    spdx: OutputRef


@dataclass(frozen=True, kw_only=True)
class ImageOutputs(JsonRecord):
    """What a built image lane wrote: the archive, the build record and the SBOMs."""

    RECORD_KIND = "an image's outputs"

    archive: OutputRef
    record: OutputRef
    sbom: SbomOutputs


@dataclass(frozen=True, kw_only=True)
class ImageLaneEntry(JsonRecord):
    """An oci-image lane built here: the image's digests, layers, bindings and outputs."""

    RECORD_KIND = "a built image lane entry"

    component_tag: str
    kind: str
    mode: str
    profile_id: str
    source_commit: str
    image: str
    image_reference: str
    image_digest: str
    image_config_digest: str
    base_image: BaseImageRef
    base_digest: str
    version: str
    revision: str
    created: str
    layers: tuple[str, ...]
    bindings: Mapping[str, str]
    config: ConfigHash
    outputs: ImageOutputs
    stand_in: bool


LaneEntry = NativeLaneEntry | CarriedLaneEntry | ImageLaneEntry


def lane_entry_type(kind: object, mode: object) -> type[LaneEntry] | None:
    """The entry type of a lane of ``kind`` in ``mode`` (``None`` for no such lane)."""
    if kind == "windows-zip":
        return NativeLaneEntry
    if kind == "oci-image":
        return CarriedLaneEntry if mode == "carry" else ImageLaneEntry if mode == "build" else None
    return None


def decode_lane_entry(value: Any, reader: Reader, where: str) -> LaneEntry | None:
    """A lane entry from plain JSON, its type chosen by ``kind`` and ``mode``."""
    if not isinstance(value, dict):
        reader.bad(where, "expected an object")
        return None
    tp = lane_entry_type(value.get("kind"), value.get("mode"))
    if tp is None:
        at = f"{where}.kind" if where else "kind"
        reader.bad(at, f"kind {value.get('kind')!r} / mode {value.get('mode')!r} is no lane entry")
        return None
    entry: LaneEntry | None = decode_value(tp, value, reader, where)
    return entry


def _decode_lanes(value: Any, reader: Reader, where: str) -> Mapping[str, LaneEntry] | None:
    if not isinstance(value, dict):
        reader.bad(where, "expected an object of lane id -> lane entry")
        return None
    return {k: decode_lane_entry(v, reader, f"{where}.{k}") for k, v in value.items()}  # type: ignore[misc]


def _encode(value: Any) -> Any:
    if isinstance(value, JsonRecord):
        return value.to_json()
    return {k: v.to_json() for k, v in value.items()}


# --- lane result and release manifest -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LaneResult(JsonRecord):
    """``<lane>.lane.json``: the release facts a lane was built against and its manifest entry."""

    RECORD_KIND = "a lane result"

    lane_id: str
    release: ReleaseFacts
    entry: LaneEntry = field(metadata=codec(decode_lane_entry, _encode))
    schema: int = 1
    kind: str = LANE_RESULT_KIND


@dataclass(frozen=True, kw_only=True)
class ReleaseManifest(_ReleaseBlock):
    """``release-manifest.json``: the facts once and ``lanes.<id>`` for every lane (by id)."""

    RECORD_KIND = "a release manifest"

    schema: int
    kind: str
    lanes: Mapping[str, LaneEntry] = field(metadata=codec(_decode_lanes, _encode))

    @classmethod
    def of(cls, facts: ReleaseFacts, lanes: Mapping[str, LaneEntry]) -> ReleaseManifest:
        """The manifest of ``facts`` with ``lanes`` (rendered in lane-id order)."""
        shared = {name: getattr(facts, name) for name in _FACT_KEYS}
        return cls(schema=1, kind=MANIFEST_KIND, lanes={k: lanes[k] for k in sorted(lanes)}, **shared)
