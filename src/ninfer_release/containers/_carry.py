"""Carry: re-verify a published image by digest and record it; nothing is rebuilt (DESIGN.md §7).

Verification fetches the manifest by digest (from the image's registry, or a mirror holding the
same repository path), checks its SHA-256, then fetches and checks every blob it names: config,
layers, and for an index every child manifest with its blobs. Where the image carries our
``io.ninfer.*``/OCI labels, they must agree with the carried bindings (short prefixes as
published). ``offline`` records the carry as *unverified* without contacting any registry.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ninfer_release.errors import IntegrityError, Problem
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.manifests import CarriedImage
from ninfer_release.progress import SILENT, Progress

from ._oci import parse_descriptor, parse_manifest
from ._registry import (
    ImageReference,
    RegistryClient,
    RegistryHTTPError,
    is_index,
    oci_media_type,
    parse_reference,
)

#: Which config label must start with which carried binding (value normalised: ``sha256:`` dropped).
LABEL_BINDINGS = (
    ("server", "io.ninfer.binding.server.sha256"),
    ("archive", "io.ninfer.binding.archive.sha256"),
    ("base_image", "org.opencontainers.image.base.digest"),
    ("source", "org.opencontainers.image.revision"),
    ("component_tag", "org.opencontainers.image.version"),
    ("profile_id", "io.ninfer.profile"),
    ("checkpoint_mount", "io.ninfer.checkpoint-mount"),
)


@dataclass(frozen=True, kw_only=True)
class CheckedBlob:
    """One digest verified during a carry: what it is, its digest and size in bytes."""

    kind: str  # manifest | index | config | layer
    digest: str
    size: int


@dataclass(frozen=True, kw_only=True)
class CarryRecord:
    """The record of a carried image: bindings, where it was verified, every digest checked."""

    lane: str
    carried_from: str  # the release the bytes were published in, e.g. v0.13.0
    component_tag: str
    image: str
    digest: str
    status: str  # "verified" | "unverified"
    verified_against: str | None
    media_type: str = ""
    config_digest: str = ""
    layers: tuple[str, ...] = ()
    checked: tuple[CheckedBlob, ...] = ()
    label_checks: tuple[tuple[str, str], ...] = ()  # (binding, "match" | "not_labelled")
    bindings: dict[str, Any] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        """True when every reachable digest was fetched and matched."""
        return self.status == "verified"

    def as_json(self) -> dict[str, Any]:
        """The record as a JSON object (stable keys)."""
        return {
            "schema": 1,
            "mode": "carry",
            "lane": self.lane,
            "carried_from": self.carried_from,
            "component_tag": self.component_tag,
            "image": self.image,
            "digest": self.digest,
            "status": self.status,
            "verified_against": self.verified_against,
            "media_type": self.media_type,
            "config_digest": self.config_digest,
            "layers": list(self.layers),
            "checked": [{"kind": c.kind, "digest": c.digest, "size": c.size} for c in self.checked],
            "label_checks": dict(self.label_checks),
            "bindings": dict(self.bindings),
            "rebuilt": False,
        }

    def as_bytes(self) -> bytes:
        """Exact bytes of the record (``jsonbytes.dumps_stable``)."""
        return dumps_stable(self.as_json())


def _norm(value: str) -> str:
    return value.removeprefix("sha256:")


def check_labels(carried: CarriedImage, labels: dict[str, Any], *, where: str) -> tuple[tuple[str, str], ...]:
    """Compare the image's labels with the carried bindings; a present label must agree.

    Short published values (``9790a004``) match a label that starts with them.

    Raises:
        IntegrityError: every disagreeing label at once.
    """
    out: list[tuple[str, str]] = []
    problems: list[Problem] = []
    for attr, label in LABEL_BINDINGS:
        want = str(getattr(carried, attr))
        got = labels.get(label)
        if got is None:
            out.append((attr, "not_labelled"))
        elif _norm(str(got)).startswith(_norm(want)) and want:
            out.append((attr, "match"))
        else:
            problems.append(
                Problem(
                    file=where, field=label, message=f"image says {got!r}, carried binding {attr} is {want!r}"
                )
            )
    if problems:
        raise IntegrityError(problems=problems)
    return tuple(out)


def carry_image(
    carried: CarriedImage,
    *,
    registry: str | None = None,
    offline: bool = False,
    timeout: float = 60.0,
    progress: Progress = SILENT,
) -> CarryRecord:
    """Re-verify the carried image by digest (or record it unverified when ``offline``).

    ``registry`` (``HOST:PORT``) verifies against a mirror holding the same repository path;
    otherwise the image's own registry is asked (HTTPS).

    Raises:
        InputError: the image reference has no digest (a tag alone is refused).
        IntegrityError: the manifest or any blob does not match its digest, the digest is not in
            the registry, or a label disagrees with the carried bindings (exit 5).
        BackendError: the registry is unreachable or refuses for another reason (exit 6).
    """
    say = progress.step
    ref = parse_reference(carried.image, where=f"{carried.path}: image")
    unverified = CarryRecord(
        lane=carried.lane,
        carried_from=carried.release,
        component_tag=carried.component_tag,
        image=str(ref),
        digest=ref.digest,
        status="unverified",
        verified_against=None,
        bindings=carried.as_dict(),
    )
    if offline:
        return unverified
    target = ref.on(registry) if registry else ref
    say(f"verifying {target}")
    client = RegistryClient(target.registry, timeout=timeout)
    checked: list[CheckedBlob] = []
    try:
        verified = _verify(client, target, checked)
    except RegistryHTTPError as exc:
        if exc.status == 404:
            raise IntegrityError(f"{target}: not found by digest in {target.registry} ({exc})") from None
        raise
    label_checks = check_labels(carried, dict(verified.labels), where=str(target))
    return dataclasses.replace(
        unverified,
        status="verified",
        verified_against=target.registry,
        media_type=verified.media_type,
        config_digest=verified.config_digest,
        layers=verified.layers,
        checked=tuple(checked),
        label_checks=label_checks,
    )


@dataclass(frozen=True, kw_only=True)
class _Verified:
    """What re-verifying one image by digest found: its (OCI) media type, the manifest bytes, and of
    its (first) image manifest the config digest, layer digests and config labels."""

    media_type: str
    manifest: bytes
    config_digest: str = ""
    layers: tuple[str, ...] = ()
    labels: Mapping[str, Any] = field(default_factory=dict)


def _verify(client: RegistryClient, ref: ImageReference, checked: list[CheckedBlob]) -> _Verified:
    """Fetch ``ref`` by digest and every blob it names, each checked against its digest (appended to
    ``checked``); an index is followed into each child manifest and reports its first one.

    Raises:
        IntegrityError: a manifest or blob differs from its digest. RegistryHTTPError: as the registry says.
    """
    media, data = client.manifest(ref.repository, ref.digest)
    media = oci_media_type(media)
    if is_index(media):
        checked.append(CheckedBlob(kind="index", digest=ref.digest, size=len(data)))
        children = json.loads(data).get("manifests") or []
        first = _Verified(media_type=media, manifest=data)
        for i, child in enumerate(children):
            desc = parse_descriptor(child, where=f"{ref}: manifests[{i}]")
            sub = ImageReference(
                registry=ref.registry, repository=ref.repository, tag=None, digest=desc.digest
            )
            found = _verify(client, sub, checked)
            if i == 0:
                first = dataclasses.replace(
                    first, config_digest=found.config_digest, layers=found.layers, labels=found.labels
                )
        return first
    checked.append(CheckedBlob(kind="manifest", digest=ref.digest, size=len(data)))
    parts = parse_manifest(data, where=str(ref))
    config_desc, layer_descs = parts.config, parts.layers
    config = client.blob_bytes(ref.repository, config_desc)
    checked.append(CheckedBlob(kind="config", digest=config_desc.digest, size=config_desc.size))
    for desc in layer_descs:
        client.blob_to(ref.repository, desc, None)
        checked.append(CheckedBlob(kind="layer", digest=desc.digest, size=desc.size))
    labels = (json.loads(config).get("config") or {}).get("Labels") or {}
    return _Verified(
        media_type=media,
        manifest=data,
        config_digest=config_desc.digest,
        layers=tuple(d.digest for d in layer_descs),
        labels=dict(labels),
    )
