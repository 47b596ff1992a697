"""Where a base image comes from: an OCI layout on disk, or a registry reference pinned by digest.

``--base`` accepts ``DIR``, ``DIR:REF`` or ``oci:DIR[:REF]`` (an OCI image layout) or
``HOST/REPO[:TAG]@sha256:<hex>`` (a registry). A reference with a tag but no digest is refused:
a tag can move, so it is no identity for a base (DESIGN.md §7).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ninfer_release.errors import InputError

from ._layout import blob_path
from ._oci import (
    ImageParts,
    copy_layout_blob,
    is_layout,
    parse_manifest,
    read_layout_image,
    select_manifest,
)
from ._registry import ImageReference, RegistryClient, is_index, oci_media_type, parse_reference


@dataclass(frozen=True, kw_only=True)
class BaseLocation:
    """A resolved ``--base`` argument: exactly one of ``layout`` (with optional ``ref``) or ``reference``."""

    text: str
    layout: Path | None = None
    ref: str | None = None
    reference: ImageReference | None = None


def parse_base(text: str) -> BaseLocation:
    """Interpret a ``--base`` argument (see module doc).

    Raises:
        InputError: neither an existing OCI layout nor a registry reference pinned by digest.
    """
    raw = text[4:] if text.startswith("oci:") else text
    candidates: list[tuple[Path, str | None]] = [(Path(raw), None)]
    head, sep, tail = raw.rpartition(":")
    if sep and head and "/" not in tail:
        candidates.append((Path(head), tail))
    for path, ref in candidates:
        if path.is_dir():
            if not is_layout(path):
                raise InputError(
                    f"--base {text}: {path} is a directory but not an OCI image layout (no oci-layout)"
                )
            return BaseLocation(text=text, layout=path, ref=ref)
    if text.startswith(("oci:", ".", "/")):
        raise InputError(f"--base {text}: no OCI image layout at {raw}")
    return BaseLocation(text=text, reference=parse_reference(text, where="--base"))


def fetch_base(
    loc: BaseLocation, dest_layout: Path, *, os_: str, arch: str, timeout: float = 60.0
) -> ImageParts:
    """Read the base image and copy its layer blobs into ``dest_layout``, every digest verified.

    Returns the base's exact manifest and config bytes (the manifest digest is the one the recipe
    pins). Docker schema-2 media types are mapped to their OCI equivalents (same bytes).

    Raises:
        InputError: the layout or image is missing. IntegrityError: any digest differs.
        BackendError: the registry cannot be reached or refuses.
    """
    if loc.layout is not None:
        parts = read_layout_image(loc.layout, ref=loc.ref, os_=os_, arch=arch)
        for desc in parts.layers:
            copy_layout_blob(loc.layout, dest_layout, desc, where=f"{loc.layout}: layer")
        return parts
    assert loc.reference is not None
    ref = loc.reference
    client = RegistryClient(ref.registry, timeout=timeout)
    media, data = client.manifest(ref.repository, ref.digest)
    digest = ref.digest
    if is_index(oci_media_type(media)):
        desc = select_manifest(json.loads(data), os_=os_, arch=arch, where=str(ref))
        media, data = client.manifest(ref.repository, desc.digest)
        digest = desc.digest
    found = parse_manifest(data, where=f"{ref.registry}/{ref.repository}@{digest}")
    config_desc, layers = found.config, found.layers
    config = client.blob_bytes(ref.repository, config_desc)
    for desc in layers:
        dest = blob_path(dest_layout, desc.digest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        client.blob_to(ref.repository, desc, dest)
    return ImageParts(
        manifest_digest=digest,
        manifest_bytes=data,
        config_bytes=config,
        config_descriptor=config_desc,
        layers=layers,
    )
