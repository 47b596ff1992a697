"""Plain records of a built image for the SBOM stage (which sits above containers and renders them).

:func:`image_sbom_records` turns an :class:`ImageBuildResult` into what an image SBOM needs:
the base image by digest, every layer by digest (ours with their files: path, size, SHA-256,
SHA-1), and the components our layers add (bound staged inputs, the engine config by its
semantic digest, the profile). No SBOM library is used here (layering: sbom → containers).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._base_scan import BasePackage
from ._build import ImageBuildResult
from ._layers import LayerFile


@dataclass(frozen=True, kw_only=True)
class ImageLayerRecord:
    """A layer by digest; ``files`` only for layers this build added (base layers are opaque)."""

    name: str
    digest: str
    diff_id: str
    size: int
    media_type: str
    from_base: bool
    files: tuple[LayerFile, ...]


@dataclass(frozen=True, kw_only=True)
class ImageComponentRecord:
    """A component a layer adds: ``kind`` is ``staged-input``, ``engine-config`` or ``profile``.

    ``path`` is where it lives in the image (relative) or, for a bound staged input, its staged
    path; ``sha256`` is of the bytes (for ``engine-config`` also ``semantic_sha256``).
    """

    name: str
    kind: str
    path: str
    size: int
    sha256: str
    sha1: str = ""
    semantic_sha256: str = ""


@dataclass(frozen=True, kw_only=True)
class ImageSbomRecords:
    """Everything an image SBOM is generated from (CycloneDX inventory, SPDX file inventory)."""

    image: str
    reference: str
    version: str
    revision: str
    created: str
    manifest_digest: str
    config_digest: str
    base_name: str
    base_digest: str
    layers: tuple[ImageLayerRecord, ...]
    components: tuple[ImageComponentRecord, ...]
    profile_id: str
    config_semantic_sha256: str
    base_packages: tuple[BasePackage, ...] = ()
    base_supplier: str = ""
    inputs_license: str | None = None

    @property
    def added_files(self) -> tuple[LayerFile, ...]:
        """Every file of the layers this build added, in layer then path order."""
        return tuple(f for layer in self.layers if not layer.from_base for f in layer.files)


def image_sbom_records(
    result: ImageBuildResult,
    *,
    base_packages: tuple[BasePackage, ...] = (),
    base_supplier: str = "",
    inputs_license: str | None = None,
) -> ImageSbomRecords:
    """The SBOM-facing records of a built image (pure; no I/O).

    Components: each bound staged input (recipe ``bind``, e.g. ``server``, ``archive``), and each
    rendered file found in our layers (origin ``rendered:config:<profile>`` / ``rendered:profile:...``).
    ``base_packages`` is what :func:`read_base_packages` found in the base layers, ``base_supplier``
    the recipe's ``base.supplier``, ``inputs_license`` the staged inputs' licence (build-info).
    """
    layers = tuple(
        ImageLayerRecord(
            name=layer.name,
            digest=layer.digest,
            diff_id=layer.diff_id,
            size=layer.size,
            media_type=layer.media_type,
            from_base=layer.from_base,
            files=layer.files,
        )
        for layer in result.layers
    )
    components: list[ImageComponentRecord] = [
        ImageComponentRecord(
            name=b.name, kind="staged-input", path=b.staged_path, size=b.size, sha256=b.sha256, sha1=b.sha1
        )
        for b in result.bound_inputs
    ]
    for layer in layers:
        for f in layer.files:
            if f.origin.startswith("rendered:config:"):
                components.append(
                    ImageComponentRecord(
                        name="engine-config", kind="engine-config", path=f.path, size=f.size, sha256=f.sha256,
                        sha1=f.sha1, semantic_sha256=result.config_semantic_sha256,
                    )
                )  # fmt: skip
            elif f.origin.startswith("rendered:profile:"):
                components.append(
                    ImageComponentRecord(
                        name="profile", kind="profile", path=f.path, size=f.size, sha256=f.sha256, sha1=f.sha1
                    )
                )
    return ImageSbomRecords(
        image=result.image,
        reference=result.reference,
        version=result.version,
        revision=result.revision,
        created=result.created,
        manifest_digest=result.manifest_digest,
        config_digest=result.config_digest,
        base_name=result.base_name,
        base_digest=result.base_digest,
        layers=layers,
        components=tuple(components),
        profile_id=result.profile_id,
        config_semantic_sha256=result.config_semantic_sha256,
        base_packages=base_packages,
        base_supplier=base_supplier,
        inputs_license=inputs_license,
    )
