"""SBOMs of a built container image (CycloneDX 1.6 inventory, SPDX 2.3 file inventory).

Input: :class:`ninfer_release.containers.ImageSbomRecords` (from ``image_sbom_records(result)``):
the image and its manifest digest, the base image by digest, every layer by digest (ours with
their files), and the components our layers add (bound staged inputs such as the server binary
and the runtime archive, the engine config with its semantic digest, the public profile).

* :func:`image_cyclonedx` — the image as ``metadata.component`` (type ``container``, purl
  ``pkg:oci/<name>@sha256%3A<hex>?repository_url=<repository>&tag=<version>``), the base image
  by digest, each layer by digest, and the components our layers add; graph: image → base, our
  layers and our components; base → its layers; each of our layers → the components it carries.
* :func:`image_spdx` — one Package for the image (checksum SHA256 = its manifest digest, purl
  external ref) CONTAINing every file our layers leave in the image (SHA1 + SHA256), and one
  Package for the base image by digest (files not analyzed), the image ``DESCENDANT_OF`` it.

Determinism: both documents are pure functions of the records, the source-date epoch and the
tool identity. The CycloneDX serial is UUIDv5 of the image reference (C33); the SPDX namespace is
``https://<image repository>/spdx/<name>-<version>-<manifest digest>-<uuid5 of content>`` (C28),
so the bytes are the same whether ``image build`` or ``build lane`` wrote them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.reproducible import datetime_utc, iso8601
from ninfer_release.sbom._cyclonedx import PROP_STAND_IN, validate_cyclonedx_bytes
from ninfer_release.sbom._ids import sanitize_id_part, spdx_file_id, uuid5_url
from ninfer_release.sbom._purl import canonical_purl, parse_purl
from ninfer_release.sbom._records import FileRecord
from ninfer_release.sbom._spdx import (
    _file_type,
    _validate_model,
    _write,
    package_verification_code,
    spdx_namespace,
    validate_spdx_bytes,
)

if TYPE_CHECKING:
    from ninfer_release.containers import ImageComponentRecord, ImageLayerRecord, ImageSbomRecords

#: File names of the image SBOMs beside ``image.json`` in an image build's output directory.
IMAGE_CDX_NAME = "sbom.cdx.json"
IMAGE_SPDX_NAME = "sbom.spdx.json"

IMAGE_CDX_WHERE = "image cyclonedx"
IMAGE_SPDX_WHERE = "image spdx"
PROP_KIND = "ninfer:kind"
PROP_LAYER_DIGEST = "ninfer:layer-digest"
PROP_SEMANTIC = "ninfer:config-semantic-sha256"
_DIGEST_PREFIX = "sha256:"


@dataclass(frozen=True, kw_only=True)
class ImageSboms:
    """The two SBOM documents of one image (exact bytes, validated)."""

    cyclonedx: bytes
    spdx: bytes


def _hex(digest: str, *, where: str, field: str) -> str:
    """The 64 hex digits of a ``sha256:<hex>`` digest."""
    hexpart = digest.removeprefix(_DIGEST_PREFIX)
    if not digest.startswith(_DIGEST_PREFIX) or len(hexpart) != 64 or set(hexpart) - set("0123456789abcdef"):
        raise InputError(
            problems=[Problem(file=where, field=field, message=f"{digest!r} is not sha256:<64 hex>")]
        )
    return hexpart


def _check_records(records: ImageSbomRecords, epoch: int, where: str) -> None:
    problems: list[Problem] = []
    for field, digest in (("manifest_digest", records.manifest_digest), ("base_digest", records.base_digest)):
        try:
            _hex(digest, where=where, field=field)
        except InputError as exc:
            problems.extend(exc.problems)
    for i, layer in enumerate(records.layers):
        try:
            _hex(layer.digest, where=where, field=f"layers[{i}:{layer.name}].digest")
        except InputError as exc:
            problems.extend(exc.problems)
    if records.created != iso8601(epoch):
        problems.append(
            Problem(
                file=where,
                field="created",
                message=f"is {records.created}, but the source-date epoch {epoch} is {iso8601(epoch)}",
            )
        )
    if records.reference != f"{records.image}@{records.manifest_digest}":
        problems.append(
            Problem(
                file=where,
                field="reference",
                message=f"{records.reference!r} is not {records.image}@{records.manifest_digest}",
            )
        )
    if not records.version:
        problems.append(
            Problem(file=where, field="version", message="the image has no version (component tag)")
        )
    if problems:
        raise InputError(problems=problems)


def _repo_name(repository: str) -> str:
    """The purl name of an OCI repository: its last path segment, lowercase (purl-spec ``oci``)."""
    return repository.rstrip("/").rsplit("/", 1)[-1].lower() or "image"


def image_purl(repository: str, digest: str, *, tag: str | None = None) -> str:
    """``pkg:oci/<name>@sha256%3A<hex>?repository_url=<repository>[&tag=<tag>]`` (purl-spec, type oci).

    Raises:
        InputError: the purl cannot be formed (empty name).
    """
    qualifiers = {"repository_url": repository} if repository else {}
    if tag:
        qualifiers["tag"] = tag
    return canonical_purl("oci", None, _repo_name(repository) if repository else "base", digest, qualifiers)


def _layer_ref(index: int, layer: ImageLayerRecord) -> str:
    # The index keeps two layers with equal bytes (e.g. two empty layers) apart.
    return f"layer:{index}:{layer.digest}"


def _component_ref(component: ImageComponentRecord) -> str:
    return f"{component.kind}:{component.name}"


def _carried_by(component: ImageComponentRecord, layer: ImageLayerRecord) -> bool:
    """Whether ``layer`` adds ``component`` (a staged file, an archive unpacked, or a rendered file)."""
    if component.kind == "staged-input":
        return any(
            f.origin == component.path or f.origin.startswith(component.path + "!") for f in layer.files
        )
    return any(f.path == component.path and f.sha256 == component.sha256 for f in layer.files)


def _image_paths(component: ImageComponentRecord, layers: Sequence[ImageLayerRecord]) -> list[str]:
    """Where a staged input lives in the image: its file, or the files its archive unpacked to."""
    return [
        f.path
        for layer in layers
        for f in layer.files
        if f.origin == component.path or f.origin.startswith(component.path + "!")
    ]


def image_cyclonedx(
    records: ImageSbomRecords,
    *,
    epoch: int,
    supplier: str,
    tool_name: str,
    tool_version: str,
    tool_vendor: str,
    serial_identity: str | None = None,
    stand_in: bool = False,
) -> bytes:
    """The CycloneDX 1.6 JSON inventory (bytes) of a built image.

    ``metadata.component`` is the image (type ``container``, version = component tag, SHA-256 =
    manifest digest, purl by digest); components: the base image (by its manifest digest), every
    layer (by blob digest, with diff id and media type as properties), and the components our
    layers add — bound staged inputs (``server``, ``archive``), the engine config (its bytes
    SHA-256 as hash and its **semantic** digest, the one the container lane binds, DESIGN.md §5,
    as property ``ninfer:config-semantic-sha256``) and the profile. Graph: see the module
    docstring. ``serial_identity`` (default: the image reference ``<image>@sha256:…``) gives the
    serial ``urn:uuid:<UUIDv5>`` (C33); ``epoch`` (seconds) gives ``metadata.timestamp`` and must
    be the epoch the image was built with. ``stand_in`` marks the staged inputs as sample
    stand-ins (``ninfer:stand-in``, as the native inventories do). Validated with the strict 1.6
    schema (C34).

    Raises:
        InputError: a digest is not ``sha256:<64 hex>``, or ``epoch`` is not the image's ``created``.
        IntegrityError: two components would share a bom-ref, or the validator reports anything.
    """
    from cyclonedx.model import HashAlgorithm, HashType, Property
    from cyclonedx.model.bom import Bom, BomMetaData
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.contact import OrganizationalContact, OrganizationalEntity
    from cyclonedx.model.tool import ToolRepository
    from cyclonedx.output.json import JsonV1Dot6

    where = IMAGE_CDX_WHERE
    _check_records(records, epoch, where)

    def props(values: Sequence[tuple[str, str | None]]) -> list[Any]:
        return [Property(name=k, value=v) for k, v in values if v]

    def sha256(digest_or_hex: str) -> Any:
        return HashType(alg=HashAlgorithm.SHA_256, content=digest_or_hex.removeprefix(_DIGEST_PREFIX))

    image_ref = f"image:{records.reference}"
    base_ref = f"base:{records.base_digest}"
    tool_ref = f"tool:{tool_name}@{tool_version}"
    root = Component(
        type=ComponentType.CONTAINER,
        name=records.image,
        version=records.version,
        bom_ref=image_ref,
        purl=parse_purl(image_purl(records.image, records.manifest_digest, tag=records.version)),
        hashes=[sha256(records.manifest_digest)],
        supplier=OrganizationalEntity(name=supplier),
        manufacturer=OrganizationalEntity(name=supplier),
        authors=[OrganizationalContact(name=supplier)],
        properties=props(
            [
                (PROP_KIND, "image"),
                ("ninfer:manifest-digest", records.manifest_digest),
                ("ninfer:config-digest", records.config_digest),
                ("ninfer:revision", records.revision),
                ("ninfer:created", records.created),
                ("ninfer:profile", records.profile_id),
                (PROP_SEMANTIC, records.config_semantic_sha256),
            ]
        ),
    )
    base = Component(
        type=ComponentType.CONTAINER,
        name=records.base_name or "base",
        version=records.base_digest,
        bom_ref=base_ref,
        purl=parse_purl(image_purl(records.base_name, records.base_digest)),
        hashes=[sha256(records.base_digest)],
        description="The base image, by its manifest digest (its layers are listed; its files are not).",
        properties=props([(PROP_KIND, "base-image"), ("ninfer:manifest-digest", records.base_digest)]),
    )
    components: dict[str, Any] = {}
    owners: dict[str, str] = {image_ref: "metadata.component", tool_ref: "metadata.tools"}
    problems: list[Problem] = []

    def add(ref: str, component: Any, owner: str) -> None:
        if ref in owners:
            message = f"bom-ref {ref!r} is also used by {owners[ref]}"
            problems.append(Problem(file=where, field=owner, message=message))
            return
        owners[ref] = owner
        components[ref] = component

    add(base_ref, base, "base")
    layer_refs: list[tuple[str, ImageLayerRecord]] = []
    for i, layer in enumerate(records.layers):
        ref = _layer_ref(i, layer)
        layer_refs.append((ref, layer))
        add(
            ref,
            Component(
                type=ComponentType.FILE,
                name=f"layer {i} ({layer.name})",
                bom_ref=ref,
                hashes=[sha256(layer.digest)],
                properties=props(
                    [
                        (PROP_KIND, "base-layer" if layer.from_base else "layer"),
                        (PROP_LAYER_DIGEST, layer.digest),
                        ("ninfer:layer-index", str(i)),
                        ("ninfer:layer-name", layer.name),
                        ("ninfer:diff-id", layer.diff_id),
                        ("ninfer:media-type", layer.media_type),
                        ("ninfer:size", str(layer.size)),
                        ("ninfer:files", None if layer.from_base else str(len(layer.files))),
                    ]
                ),
            ),
            f"layers[{i}:{layer.name}]",
        )
    ours = [layer for _, layer in layer_refs if not layer.from_base]
    for i, comp in enumerate(records.components):
        ref = _component_ref(comp)
        add(ref, _added_component(comp, records, ours, stand_in=stand_in), f"components[{i}:{comp.name}]")
    if problems:
        raise IntegrityError(problems=problems)

    tool = Component(
        type=ComponentType.APPLICATION,
        name=tool_name,
        version=tool_version,
        bom_ref=tool_ref,
        manufacturer=OrganizationalEntity(name=tool_vendor),
    )
    bom = Bom(
        serial_number=uuid5_url(serial_identity if serial_identity is not None else records.reference),
        metadata=BomMetaData(
            component=root,
            timestamp=datetime_utc(epoch),
            tools=ToolRepository(components=[tool]),
            manufacturer=OrganizationalEntity(name=supplier),
            supplier=OrganizationalEntity(name=supplier),
        ),
    )
    bom.components.update(components.values())
    comp_refs = [_component_ref(c) for c in records.components]
    graph: dict[str, list[str]] = {
        image_ref: [base_ref, *(ref for ref, layer in layer_refs if not layer.from_base), *comp_refs],
        base_ref: [ref for ref, layer in layer_refs if layer.from_base],
    }
    for ref, layer in layer_refs:
        graph[ref] = (
            []
            if layer.from_base
            else [_component_ref(c) for c in records.components if _carried_by(c, layer)]
        )
    for ref in comp_refs:
        graph[ref] = []
    everything = {**components, image_ref: root}
    for ref, targets in sorted(graph.items()):
        bom.register_dependency(everything[ref], [everything[t] for t in sorted(set(targets))])

    text = JsonV1Dot6(bom).output_as_string(indent=2)
    data = (text.rstrip("\n") + "\n").encode("utf-8")
    messages = validate_cyclonedx_bytes(data)
    if messages:
        raise IntegrityError(problems=[Problem(file=where, message=m) for m in messages])
    return data


def _added_component(
    comp: ImageComponentRecord, records: ImageSbomRecords, ours: Sequence[ImageLayerRecord], *, stand_in: bool
) -> Any:
    """A CycloneDX component for something our layers add (staged input, engine config, profile)."""
    from cyclonedx.model import HashAlgorithm, HashType, Property
    from cyclonedx.model.component import Component, ComponentType

    hashes = [HashType(alg=HashAlgorithm.SHA_256, content=comp.sha256)]
    if comp.sha1:
        hashes.append(HashType(alg=HashAlgorithm.SHA_1, content=comp.sha1))
    values: list[tuple[str, str | None]] = [(PROP_KIND, comp.kind), ("ninfer:size", str(comp.size))]
    layers = [layer for layer in ours if _carried_by(comp, layer)]
    values += [(PROP_LAYER_DIGEST, layer.digest) for layer in layers]
    if comp.kind == "staged-input":
        paths = _image_paths(comp, ours)
        modes = {f.mode for layer in layers for f in layer.files if f.path in paths}
        unpacked = any(f.origin.startswith(comp.path + "!") for layer in layers for f in layer.files)
        executable = any(m & 0o111 for m in modes)
        ctype = ComponentType.APPLICATION if executable and not unpacked else ComponentType.FILE
        name = posixpath.basename(comp.path)
        version: str | None = records.version
        values += [
            ("ninfer:binding", comp.name),
            ("ninfer:staged-path", comp.path),
            (PROP_STAND_IN, "true" if stand_in else "false"),
        ]
        if unpacked:
            values.append(("ninfer:unpacked-files", str(len(paths))))
        else:
            values += [("ninfer:image-path", p) for p in paths]
        description = f"Bound staged input {comp.name!r} (image label io.ninfer.binding.{comp.name}.sha256)."
        if stand_in:
            description = f"STAND-IN, not the real {name}: a placeholder for samples and tests. {description}"
    elif comp.kind == "engine-config":
        ctype = ComponentType.FILE
        name = comp.name
        version = records.profile_id or None
        values += [
            ("ninfer:image-path", comp.path),
            ("ninfer:profile", records.profile_id),
            ("ninfer:config-binding", "semantic"),
            (PROP_SEMANTIC, comp.semantic_sha256),
        ]
        description = (
            "The rendered engine config; the container lane binds its semantic digest "
            "(RFC 8785 SHA-256 of the parsed content), not its bytes."
        )
    else:
        ctype = ComponentType.FILE
        name = comp.name
        version = records.profile_id or None
        values += [("ninfer:image-path", comp.path), ("ninfer:profile", records.profile_id)]
        description = "The public deployment profile document."
    return Component(
        type=ctype,
        name=name,
        version=version,
        bom_ref=_component_ref(comp),
        hashes=hashes,
        description=description,
        properties=[Property(name=k, value=v) for k, v in values if v],
    )


def _spdx_file_type(path: str, mode: int) -> str:
    """SPDX 2.3 §8.3 file type of an image file: shared objects BINARY, executables APPLICATION."""
    base = posixpath.basename(path).lower()
    if ".so." in base or base.endswith(".so"):
        return "BINARY"
    if mode & 0o111:
        return "APPLICATION"
    return _file_type(path)


def image_spdx(
    records: ImageSbomRecords,
    *,
    epoch: int,
    supplier: str,
    creator_tool: str,
    namespace_base: str | None = None,
) -> bytes:
    """The SPDX 2.3 JSON file inventory (bytes) of the files our layers add to an image.

    Shape: Package *image* (name = repository, version = component tag, checksum SHA256 = the
    manifest digest, purl external ref by digest, purpose CONTAINER) DESCRIBED by the document,
    CONTAINing one File per path our layers leave in the image (``./<path>``, SHA1 + SHA256, a
    comment naming the layer and its digest; a path written by two of our layers is listed once,
    as the later layer leaves it); its ``packageVerificationCode`` is over those files (SPDX 2.3
    §7.9). Package *base* (by its manifest digest, files not analyzed); image ``DESCENDANT_OF``
    base. Namespace: see the module docstring (``namespace_base`` defaults to
    ``https://<image repository>/spdx``; C28). ``created`` is ``epoch`` (seconds, UTC), which must
    be the image's. Validated with spdx-tools (what ``pyspdxtools -i`` runs) and this stage's checks.

    Raises:
        InputError: a digest is malformed, ``epoch`` is not the image's ``created``.
        DefinitionError: ``namespace_base`` is not an absolute http(s) URI without fragment.
        IntegrityError: two paths would share an SPDXID, or validation reports anything.
    """
    from spdx_tools.spdx.model.actor import Actor, ActorType
    from spdx_tools.spdx.model.checksum import Checksum, ChecksumAlgorithm
    from spdx_tools.spdx.model.document import CreationInfo, Document
    from spdx_tools.spdx.model.file import File, FileType
    from spdx_tools.spdx.model.package import (
        ExternalPackageRef,
        ExternalPackageRefCategory,
        Package,
        PackagePurpose,
        PackageVerificationCode,
    )
    from spdx_tools.spdx.model.relationship import Relationship, RelationshipType
    from spdx_tools.spdx.model.spdx_no_assertion import SpdxNoAssertion

    where = IMAGE_SPDX_WHERE
    _check_records(records, epoch, where)
    final: dict[str, tuple[Any, ImageLayerRecord]] = {}
    for layer in records.layers:
        if not layer.from_base:
            for f in layer.files:
                final[f.path] = (f, layer)  # a later layer's file replaces an earlier one's
    listed = sorted(final.items())
    file_records = [FileRecord(path=p, size=f.size, sha1=f.sha1, sha256=f.sha256) for p, (f, _) in listed]
    namespace = spdx_namespace(
        namespace_base=namespace_base or f"https://{records.image}/spdx",
        package_name=_repo_name(records.image),
        release_id=f"{records.version}-{records.manifest_digest}",
        files=file_records,
    )
    image_id = f"SPDXRef-Package-image-{sanitize_id_part(_repo_name(records.image))}"
    base_id = f"SPDXRef-Package-base-{sanitize_id_part(_repo_name(records.base_name or 'base'))}"
    files = []
    ids: dict[str, str] = {}
    for path, (f, layer) in listed:
        file_id = spdx_file_id(path)
        if file_id in ids:
            raise IntegrityError(
                problems=[
                    Problem(
                        file=where,
                        field=f"files[{path}]",
                        message=f"SPDXID {file_id} collides with {ids[file_id]}",
                    )
                ]
            )
        ids[file_id] = path
        files.append(
            File(
                name=f"./{path}",
                spdx_id=file_id,
                checksums=[
                    Checksum(ChecksumAlgorithm.SHA1, f.sha1),
                    Checksum(ChecksumAlgorithm.SHA256, f.sha256),
                ],
                file_types=[FileType[_spdx_file_type(path, f.mode)]],
                license_concluded=SpdxNoAssertion(),
                copyright_text=SpdxNoAssertion(),
                comment=f"layer {layer.name} {layer.digest}; mode {f.mode:04o}; from {f.origin}",
            )
        )
    image = Package(
        spdx_id=image_id,
        name=records.image,
        download_location=SpdxNoAssertion(),
        version=records.version,
        supplier=Actor(ActorType.ORGANIZATION, supplier),
        files_analyzed=True,
        verification_code=PackageVerificationCode(
            value=package_verification_code([r.sha1 for r in file_records])
        ),
        checksums=[
            Checksum(
                ChecksumAlgorithm.SHA256, _hex(records.manifest_digest, where=where, field="manifest_digest")
            )
        ],
        license_concluded=SpdxNoAssertion(),
        license_declared=SpdxNoAssertion(),
        copyright_text=SpdxNoAssertion(),
        comment=(
            f"OCI image {records.reference} (config {records.config_digest}, revision {records.revision}). "
            "The checksum is the image manifest digest. Files listed: those the image's own layers add; "
            "the base image's files are not inventoried (see the base package)."
        ),
        external_references=[
            ExternalPackageRef(
                ExternalPackageRefCategory.PACKAGE_MANAGER,
                "purl",
                image_purl(records.image, records.manifest_digest, tag=records.version),
            )
        ],
        primary_package_purpose=PackagePurpose.CONTAINER,
        built_date=datetime_utc(epoch).replace(tzinfo=None),
    )
    base = Package(
        spdx_id=base_id,
        name=records.base_name or "base",
        download_location=SpdxNoAssertion(),
        version=records.base_digest,
        files_analyzed=False,
        checksums=[
            Checksum(ChecksumAlgorithm.SHA256, _hex(records.base_digest, where=where, field="base_digest"))
        ],
        license_concluded=SpdxNoAssertion(),
        license_declared=SpdxNoAssertion(),
        copyright_text=SpdxNoAssertion(),
        comment="The base image, by its manifest digest; its files are not inventoried here.",
        external_references=[
            ExternalPackageRef(
                ExternalPackageRefCategory.PACKAGE_MANAGER,
                "purl",
                image_purl(records.base_name, records.base_digest),
            )
        ],
        primary_package_purpose=PackagePurpose.CONTAINER,
    )
    creation = CreationInfo(
        spdx_version="SPDX-2.3",
        spdx_id="SPDXRef-DOCUMENT",
        name=f"{records.image}:{records.version}",
        document_namespace=namespace,
        creators=[Actor(ActorType.TOOL, creator_tool), Actor(ActorType.ORGANIZATION, supplier)],
        created=datetime_utc(epoch).replace(tzinfo=None),
        data_license="CC0-1.0",
    )
    relationships = [
        Relationship("SPDXRef-DOCUMENT", RelationshipType.DESCRIBES, image_id),
        Relationship(image_id, RelationshipType.DESCENDANT_OF, base_id),
    ]
    relationships += [Relationship(image_id, RelationshipType.CONTAINS, f.spdx_id) for f in files]
    document = Document(
        creation_info=creation, packages=[image, base], files=files, relationships=relationships
    )
    _validate_model(document)
    data = _write(document)
    messages = validate_spdx_bytes(data)
    if messages:
        raise IntegrityError(problems=[Problem(file=where, message=m) for m in messages])
    return data


def image_sboms(
    records: ImageSbomRecords,
    *,
    epoch: int,
    supplier: str,
    tool_name: str,
    tool_version: str,
    stand_in: bool = False,
) -> ImageSboms:
    """Both SBOMs of an image with the defaults every caller uses (tool = ``<name>-<version>``).

    Raises:
        as :func:`image_cyclonedx` and :func:`image_spdx`.
    """
    return ImageSboms(
        cyclonedx=image_cyclonedx(
            records,
            epoch=epoch,
            supplier=supplier,
            tool_name=tool_name,
            tool_version=tool_version,
            tool_vendor=supplier,
            stand_in=stand_in,
        ),
        spdx=image_spdx(records, epoch=epoch, supplier=supplier, creator_tool=f"{tool_name}-{tool_version}"),
    )


def image_sbom_digests(sboms: ImageSboms) -> Mapping[str, Mapping[str, Any]]:
    """``{file name: {"sha256", "size"}}`` of both documents (for records and lane results)."""
    from ninfer_release.hashing import sha256_bytes

    return {
        IMAGE_CDX_NAME: {"sha256": sha256_bytes(sboms.cyclonedx), "size": len(sboms.cyclonedx)},
        IMAGE_SPDX_NAME: {"sha256": sha256_bytes(sboms.spdx), "size": len(sboms.spdx)},
    }
