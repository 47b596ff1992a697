"""Pushing an artifact that refers to another (OCI ``subject``), with the referrers fallback.

OCI distribution-spec v1.1, "Pushing Manifests with Subject": a registry that implements the
referrers API answers the manifest ``PUT`` with an ``OCI-Subject`` header and indexes the
referrer itself. When it does not (distribution 2.8, many mirrors), the *referrers tag schema*
applies: the client keeps an image index tagged ``sha256-<hex of the subject>`` listing every
referrer's descriptor (``artifactType`` and annotations copied), read-modify-write. That index
update is not atomic: two referrers pushed to one subject at the same instant can lose one
entry (re-pushing restores it; the referrer manifests themselves are never lost).

Supersession markers (``releases``) and statement signatures use :func:`push_artifact`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ninfer_release import jsonbytes

from ._client import BlobSource, RegistryClient, index_entries

INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"


@dataclass(frozen=True, kw_only=True)
class ArtifactPush:
    """Outcome of :func:`push_artifact`: ``status`` (``published`` / ``already_published``), the
    manifest ``digest``, and how the subject link is recorded: ``api`` (the registry's referrers
    API), ``tag-schema`` (the ``sha256-<hex>`` index), or ``none`` (no subject)."""

    status: str
    digest: str
    referrers: str


def fallback_tag(subject_digest: str) -> str:
    """The referrers tag-schema tag of a subject: ``sha256:<hex>`` → ``sha256-<hex>``."""
    return subject_digest.replace(":", "-", 1)


def push_artifact(
    client: RegistryClient,
    repo: str,
    *,
    manifest: bytes,
    blobs: Sequence[BlobSource],
    tag: str | None = None,
) -> ArtifactPush:
    """Upload ``blobs`` (config and layers), then ``manifest`` (exact bytes, an OCI image
    manifest) under ``tag`` or its digest; when the manifest has a ``subject``, make it findable
    as a referrer of that subject (the API if the registry has it, else the tag schema).

    Raises:
        RegistryError: an upload or put failed (see :meth:`RegistryClient.put_manifest`).
        ValueError: ``manifest`` is not a JSON object.
    """
    doc = json.loads(manifest)
    if not isinstance(doc, dict):
        raise ValueError("manifest is not a JSON object")
    for blob in blobs:
        client.push_blob(repo, blob)
    import hashlib

    digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    put = client.put_manifest(repo, tag or digest, manifest, MANIFEST_MEDIA_TYPE)
    subject = doc.get("subject")
    if not isinstance(subject, dict) or not isinstance(subject.get("digest"), str):
        return ArtifactPush(status=put.status, digest=digest, referrers="none")
    if put.oci_subject:
        return ArtifactPush(status=put.status, digest=digest, referrers="api")
    if client.referrers(repo, subject["digest"]) is not None:
        return ArtifactPush(status=put.status, digest=digest, referrers="api")
    _add_to_fallback_index(client, repo, subject["digest"], _descriptor(doc, digest, len(manifest)))
    return ArtifactPush(status=put.status, digest=digest, referrers="tag-schema")


def _descriptor(doc: Mapping[str, Any], digest: str, size: int) -> dict[str, Any]:
    desc: dict[str, Any] = {"mediaType": MANIFEST_MEDIA_TYPE, "digest": digest, "size": size}
    config = doc.get("config")
    artifact_type = doc.get("artifactType") or (config.get("mediaType") if isinstance(config, dict) else None)
    if isinstance(artifact_type, str):
        desc["artifactType"] = artifact_type
    if isinstance(doc.get("annotations"), dict) and doc["annotations"]:
        desc["annotations"] = dict(doc["annotations"])
    return desc


def _add_to_fallback_index(client: RegistryClient, repo: str, subject: str, desc: dict[str, Any]) -> None:
    tag = fallback_tag(subject)
    manifests = _fallback_entries(client, repo, subject)
    if any(m.get("digest") == desc["digest"] for m in manifests):
        return
    manifests.append(desc)
    manifests.sort(key=lambda m: str(m.get("digest")))
    index = jsonbytes.canonical_json(
        {"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": manifests}
    )
    client.put_manifest(repo, tag, index, INDEX_MEDIA_TYPE)


def referrers_of(
    client: RegistryClient, repo: str, subject: str, *, artifact_type: str | None = None
) -> list[dict[str, Any]]:
    """The referrer descriptors of ``subject``: the API's answer, else the fallback index.

    Raises:
        RegistryError: the registry failed, or the fallback tag is not an index.
    """
    found = client.referrers(repo, subject, artifact_type=artifact_type)
    if found is None:
        found = _fallback_entries(client, repo, subject)
    if artifact_type is not None:
        found = [m for m in found if m.get("artifactType") == artifact_type]
    return found


def _fallback_entries(client: RegistryClient, repo: str, subject: str) -> list[dict[str, Any]]:
    tag = fallback_tag(subject)
    current = client.get_manifest(repo, tag, accept=INDEX_MEDIA_TYPE)
    if current is None:
        return []
    return index_entries(current.data, where=f"{client.host}/{repo}:{tag} (referrers fallback tag)")
