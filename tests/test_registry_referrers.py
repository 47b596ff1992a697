"""Supersession markers as OCI referrers (``subject``): the registry's referrers API where it has
one, the ``sha256-<hex>`` tag-schema index where it does not (distribution 2.8), and
:func:`push_artifact` as the one way to push an artifact that refers to another (issue 11)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import requests

from flow_support import registry_namespace
from ninfer_release.errors import PublishError
from ninfer_release.registry import (
    BlobSource,
    RegistryClient,
    RegistryOptions,
    fallback_tag,
    push_artifact,
    referrers_of,
)
from ninfer_release.registry._client import ManifestPut
from ninfer_release.releases._oci_publisher import OciPublisher
from ninfer_release.releases._publish import SUPERSESSION_TYPE, render_manifest
from test_publish import ENGINE, make_set, request_for


@pytest.fixture
def repo(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> str:
    """A repository private to this test and session: a long-lived registry keeps earlier runs' tags."""
    return registry_namespace(
        tmp_path_factory, "ref/" + request.node.name.removeprefix("test_")[:40].strip("_")
    )


def test_marker_is_a_referrer_of_the_superseded_manifest_via_the_tag_schema(
    registry: str, tmp_path: Path, repo: str
) -> None:
    pub = OciPublisher(host=registry, repository=repo, options=RegistryOptions())
    names = make_set(tmp_path / "set", ENGINE)
    published = pub.publish(request_for(tmp_path / "set", names))
    marker = pub.supersede("v1.0.0-beta.1", by="v1.0.0-beta.2", epoch=1700000000)
    assert marker.status == "published"
    client = pub.client
    assert client.referrers(repo, published.manifest_digest) is None  # distribution 2.8: no API
    index = client.get_manifest(repo, fallback_tag(published.manifest_digest))
    assert index is not None
    entries = json.loads(index.data)["manifests"]
    assert [(e["digest"], e["artifactType"]) for e in entries] == [
        (marker.manifest_digest, SUPERSESSION_TYPE)
    ]
    found = referrers_of(client, repo, published.manifest_digest, artifact_type=SUPERSESSION_TYPE)
    assert found[0]["annotations"]["vnd.omp-ninfer.superseded-by"] == "v1.0.0-beta.2"
    # Idempotent: the same marker again changes nothing in the index.
    assert pub.supersede("v1.0.0-beta.1", by="v1.0.0-beta.2", epoch=1700000000).status == "already_published"
    again = client.get_manifest(repo, fallback_tag(published.manifest_digest))
    assert again is not None and again.data == index.data


def test_a_referrer_alone_still_forbids_reusing_the_tag(registry: str, tmp_path: Path, repo: str) -> None:
    """With the <tag>.superseded tag deleted, the referrers index still names the marker: the tag
    stays superseded (publish refused, pull reports the successor)."""
    pub = OciPublisher(host=registry, repository=repo, options=RegistryOptions())
    names = make_set(tmp_path / "set", ENGINE)
    pub.publish(request_for(tmp_path / "set", names))
    marker = pub.supersede("v1.0.0-beta.1", by="v1.0.0-beta.2", epoch=1700000000)
    deleted = requests.delete(f"http://{registry}/v2/{repo}/manifests/{marker.manifest_digest}", timeout=10)
    assert deleted.status_code == 202
    assert pub.client.get_manifest(repo, "v1.0.0-beta.1.superseded") is None
    with pytest.raises(PublishError, match=r"superseded by v1\.0\.0-beta\.2"):
        pub.publish(request_for(tmp_path / "set", names))
    dest = tmp_path / "pulled"
    dest.mkdir()
    assert pub.pull("v1.0.0-beta.1", dest).superseded_by == "v1.0.0-beta.2"


class _ApiClient:
    """A client whose registry processes ``subject`` (answers ``OCI-Subject``): no fallback index."""

    def __init__(self) -> None:
        self.puts: list[str] = []
        self.blobs: list[str] = []

    def push_blob(self, repo: str, blob: BlobSource, *, mount_from: str | None = None) -> str:
        self.blobs.append(blob.digest)
        return "uploaded"

    def put_manifest(self, repo: str, ref: str, data: bytes, media_type: str) -> ManifestPut:
        self.puts.append(ref)
        subject = json.loads(data).get("subject", {}).get("digest")
        return ManifestPut(
            status="published", digest="sha256:" + hashlib.sha256(data).hexdigest(), oci_subject=subject
        )

    def referrers(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        raise AssertionError("not needed when the PUT answered OCI-Subject")

    def get_manifest(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("no fallback index with a referrers API")


def _signature_manifest(subject: str) -> tuple[bytes, list[BlobSource]]:
    from ninfer_release.releases._publish import EMPTY_JSON, blob_of_bytes

    config = blob_of_bytes(EMPTY_JSON, "application/vnd.example.signature.v1")
    layer = blob_of_bytes(b"signature bytes", "application/octet-stream")
    manifest = render_manifest(
        artifact_type="application/vnd.example.signature.v1",
        config=config,
        layers=[layer],
        annotations={},
        subject={"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": subject, "size": 10},
    )
    blobs = [BlobSource(digest=b.digest, size=b.size, data=b.data) for b in (config, layer)]
    return manifest, blobs


def test_push_artifact_uses_the_referrers_api_when_the_registry_has_one() -> None:
    client = _ApiClient()
    manifest, blobs = _signature_manifest("sha256:" + "1" * 64)
    pushed = push_artifact(client, "r/x", manifest=manifest, blobs=blobs)  # type: ignore[arg-type]
    assert (pushed.status, pushed.referrers) == ("published", "api")
    assert client.puts == [pushed.digest]  # pushed by digest, no sha256-<hex> index written
    assert client.blobs == [b.digest for b in blobs]


def test_push_artifact_with_a_subject_on_a_real_registry(registry: str, repo: str) -> None:
    """What signing (issue 14) reuses: blobs, the manifest by digest, the tag-schema link."""
    client = RegistryClient(registry, options=RegistryOptions())
    subject_manifest, subject_blobs = _signature_manifest("sha256:" + "2" * 64)
    base = push_artifact(client, repo, manifest=subject_manifest, blobs=subject_blobs, tag="base")
    manifest, blobs = _signature_manifest(base.digest)
    pushed = push_artifact(client, repo, manifest=manifest, blobs=blobs)
    assert pushed.referrers == "tag-schema"
    found = referrers_of(client, repo, base.digest)
    assert [d["digest"] for d in found] == [pushed.digest]
    assert found[0]["artifactType"] == "application/vnd.example.signature.v1"
