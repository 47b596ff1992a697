"""Publishing behaviour on both backends — a real OCI registry (Debian docker-registry, read back
with skopeo) and the directory store — with the same assertions (DESIGN.md §8, C41).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from conftest import need_tool
from flow_support import registry_namespace
from ninfer_release.errors import ExitCode, InputError, IntegrityError, PublishError
from ninfer_release.hashing import sha256_bytes
from ninfer_release.releases._dir_store import DirStore
from ninfer_release.releases._oci_publisher import OciPublisher
from ninfer_release.releases._publish import (
    ARTIFACT_TYPE,
    SUPERSESSION_TYPE,
    ArtifactPlan,
    Blob,
    Publisher,
    StorePublisher,
    blob_of_bytes,
    plan_publish,
    render_manifest,
)
from test_publish import ENGINE, EPOCH, make_set, request_for


def _repo_name(request: pytest.FixtureRequest) -> str:
    """A repository private to this test and this session: a long-lived registry (``NINFER_REGISTRY``)
    keeps the tags of earlier runs, and a fixed name would make a first publish ``already_published``."""
    node = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")
    return registry_namespace(request.getfixturevalue("tmp_path_factory"), f"t/{node}")


@pytest.fixture(params=["dir", "oci"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> StorePublisher:
    """A fresh, empty store: a directory store or a repository in the session's registry."""
    if request.param == "dir":
        return DirStore(tmp_path / "store")
    registry: str = request.getfixturevalue("registry")
    return OciPublisher(host=registry, repository=_repo_name(request))


def raw_manifest(pub: StorePublisher, tag: str) -> bytes:
    """The manifest bytes as an independent tool (skopeo inspect --raw) reads them."""
    skopeo = need_tool("skopeo")
    if isinstance(pub, DirStore):
        ref = f"oci:{pub.root}:{tag}"
        args = [skopeo, "inspect", "--raw", ref]
    else:
        assert isinstance(pub, OciPublisher)
        args = [
            skopeo,
            "inspect",
            "--raw",
            "--tls-verify=false",
            f"docker://{pub.host}/{pub.repository}:{tag}",
        ]
    return subprocess.run(args, capture_output=True, check=True).stdout


def test_backends_satisfy_the_publisher_protocol(backend: StorePublisher) -> None:
    assert isinstance(backend, Publisher)


def test_publish_then_republish_is_already_published(backend: StorePublisher, tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    req = request_for(tmp_path / "set", names)
    first = backend.publish(req)
    again = backend.publish(req)
    digest = plan_publish(req).digest
    assert (first.status, first.manifest_digest) == ("published", digest)
    assert (again.status, again.manifest_digest) == ("already_published", digest)
    assert first.ref == again.ref == backend.url("v1.0.0-beta.1")
    assert backend.resolve("v1.0.0-beta.1") == digest
    assert backend.resolve(digest) == digest
    assert backend.resolve("v9.9.9") is None
    assert backend.resolve("latest") is None


def test_refuses_other_bytes_after_one_byte_change(backend: StorePublisher, tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    first = backend.publish(request_for(tmp_path / "set", names))
    changed = bytearray(ENGINE["engine-1.0-win64.zip"])
    changed[-1] ^= 1
    names2 = make_set(tmp_path / "set2", {"engine-1.0-win64.zip": bytes(changed)})
    other = plan_publish(request_for(tmp_path / "set2", names2)).digest
    with pytest.raises(PublishError) as info:
        backend.publish(request_for(tmp_path / "set2", names2))
    msg = str(info.value)
    assert info.value.exit_code == ExitCode.PUBLISH
    assert "tag v1.0.0-beta.1 already points to" in msg
    assert first.manifest_digest in msg and other in msg
    assert backend.resolve("v1.0.0-beta.1") == first.manifest_digest


def test_c41_titles_bare_and_manifest_identical_from_two_temp_dirs(backend: StorePublisher) -> None:
    """C41 on a real store: published from two different mktemp dirs, the second publish is the
    same manifest (already_published); skopeo reads titles that are the bare names; a pull into an
    empty directory needs no traversal option."""
    results = []
    for _ in range(2):
        with tempfile.TemporaryDirectory(prefix="tmp.") as d:
            names = make_set(Path(d), ENGINE)
            results.append(backend.publish(request_for(Path(d), names, tag="v1.0.0-beta.1")))
    assert [r.status for r in results] == ["published", "already_published"]
    assert results[0].manifest_digest == results[1].manifest_digest
    raw = raw_manifest(backend, "v1.0.0-beta.1")
    assert "sha256:" + sha256_bytes(raw) == results[0].manifest_digest
    doc = json.loads(raw)
    assert [x["annotations"]["org.opencontainers.image.title"] for x in doc["layers"]] == [
        "SHA256SUMS",
        "engine-1.0-win64.zip",
    ]
    assert doc["artifactType"] == ARTIFACT_TYPE and doc["config"]["mediaType"] == ARTIFACT_TYPE
    assert b"/tmp" not in raw
    with tempfile.TemporaryDirectory() as empty:
        pulled = backend.pull("v1.0.0-beta.1", Path(empty))
        assert sorted(p.name for p in Path(empty).iterdir()) == ["SHA256SUMS", "engine-1.0-win64.zip"]
    assert [f.name for f in pulled.files] == ["SHA256SUMS", "engine-1.0-win64.zip"]


def test_pull_round_trip_passes_sha256sum_c(backend: StorePublisher, tmp_path: Path) -> None:
    sha256sum = need_tool("sha256sum")
    files = {"pkg.zip": bytes(range(256)) * 4100, "pkg.spdx.json": b'{"spdxVersion":"SPDX-2.3"}\n'}
    names = make_set(tmp_path / "set", files)
    result = backend.publish(request_for(tmp_path / "set", names, tag="v0.7.0-qwen38-4090-beta.2"))
    dest = tmp_path / "dest"
    dest.mkdir()
    pulled = backend.pull("v0.7.0-qwen38-4090-beta.2", dest)
    assert pulled.manifest_digest == result.manifest_digest
    assert pulled.ref == backend.url("v0.7.0-qwen38-4090-beta.2")
    assert pulled.annotations["vnd.omp-ninfer.component-tag"] == "v0.7.0-qwen38-4090-beta.2"
    assert pulled.superseded_by is None
    for name in names:
        assert (dest / name).read_bytes() == (tmp_path / "set" / name).read_bytes()
    assert {f.name: (f.size, f.media_type) for f in pulled.files} == {
        "SHA256SUMS": ((tmp_path / "set" / "SHA256SUMS").stat().st_size, "text/plain"),
        "pkg.spdx.json": (len(files["pkg.spdx.json"]), "application/spdx+json"),
        "pkg.zip": (len(files["pkg.zip"]), "application/zip"),
    }
    check = subprocess.run([sha256sum, "-c", "SHA256SUMS"], cwd=dest, capture_output=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    by_digest = tmp_path / "by-digest"
    by_digest.mkdir()
    assert backend.pull(result.manifest_digest, by_digest).manifest_digest == result.manifest_digest


def test_same_manifest_digest_on_both_backends(registry: str, tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    req = request_for(tmp_path / "set", names)
    on_dir = DirStore(tmp_path / "store").publish(req)
    on_reg = OciPublisher(host=registry, repository="t/both-backends").publish(req)
    assert on_dir.manifest_digest == on_reg.manifest_digest
    # An independent copier keeps the digest too: skopeo copy from our layout to the registry.
    skopeo = need_tool("skopeo")
    subprocess.run(
        [
            skopeo,
            "copy",
            "--dest-tls-verify=false",
            f"oci:{tmp_path / 'store'}:v1.0.0-beta.1",
            f"docker://{registry}/t/both-backends-copied:v1.0.0-beta.1",
        ],
        capture_output=True,
        check=True,
    )
    assert OciPublisher(host=registry, repository="t/both-backends-copied").resolve("v1.0.0-beta.1") == (
        on_dir.manifest_digest
    )


def test_superseded_tag_stays_and_is_never_reused(backend: StorePublisher, tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    beta1 = backend.publish(request_for(tmp_path / "set", names, tag="v0.7.0-qwen38-4090-beta.1"))
    marker = backend.supersede("v0.7.0-qwen38-4090-beta.1", by="v0.7.0-qwen38-4090-beta.2", epoch=EPOCH)
    assert marker.status == "published"
    assert marker.ref == backend.url("v0.7.0-qwen38-4090-beta.1.superseded")
    again = backend.supersede("v0.7.0-qwen38-4090-beta.1", by="v0.7.0-qwen38-4090-beta.2", epoch=EPOCH)
    assert again.status == "already_published"
    with pytest.raises(
        PublishError, match=re.escape("already recorded as superseded by v0.7.0-qwen38-4090-beta.2")
    ):
        backend.supersede("v0.7.0-qwen38-4090-beta.1", by="v0.7.0-qwen38-4090-beta.3", epoch=EPOCH)
    # The superseded tag stays, with its bytes; even the identical bytes are refused under it.
    assert backend.resolve("v0.7.0-qwen38-4090-beta.1") == beta1.manifest_digest
    with pytest.raises(
        PublishError,
        match=re.escape("superseded by v0.7.0-qwen38-4090-beta.2; a superseded tag is never reused"),
    ):
        backend.publish(request_for(tmp_path / "set", names, tag="v0.7.0-qwen38-4090-beta.1"))
    dest = tmp_path / "dest"
    dest.mkdir()
    assert backend.pull("v0.7.0-qwen38-4090-beta.1", dest).superseded_by == "v0.7.0-qwen38-4090-beta.2"
    doc = json.loads(raw_manifest(backend, "v0.7.0-qwen38-4090-beta.1.superseded"))
    assert doc["artifactType"] == SUPERSESSION_TYPE
    assert doc["subject"]["digest"] == beta1.manifest_digest
    assert doc["annotations"] == {
        "org.opencontainers.image.created": "2023-11-14T22:13:20Z",
        "vnd.omp-ninfer.superseded-by": "v0.7.0-qwen38-4090-beta.2",
        "vnd.omp-ninfer.superseded-tag": "v0.7.0-qwen38-4090-beta.1",
    }
    # The successor publishes normally.
    names2 = make_set(tmp_path / "set2", {"engine-1.0-win64.zip": b"beta2"})
    assert backend.publish(
        request_for(tmp_path / "set2", names2, tag="v0.7.0-qwen38-4090-beta.2")
    ).status == ("published")


def test_superseded_tag_refused_even_when_never_published_here(
    backend: StorePublisher, tmp_path: Path
) -> None:
    backend.supersede("v0.7.0-qwen38-4090-beta.1", by="v0.7.0-qwen38-4090-beta.2", epoch=EPOCH)
    names = make_set(tmp_path / "set", ENGINE)
    with pytest.raises(PublishError, match="never reused"):
        backend.publish(request_for(tmp_path / "set", names, tag="v0.7.0-qwen38-4090-beta.1"))
    assert backend.resolve("v0.7.0-qwen38-4090-beta.1") is None


def test_prerelease_is_never_tagged_latest(backend: StorePublisher, tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    result = backend.publish(request_for(tmp_path / "set", names, tag="v0.7.0-qwen38-4090-beta.2"))
    assert result.latest_moved is False
    assert backend.resolve("latest") is None
    with pytest.raises(PublishError, match="prerelease is never tagged latest"):
        backend.publish(
            request_for(tmp_path / "set", names, tag="v0.7.0-qwen38-4090-beta.2", move_latest=True)
        )
    assert backend.resolve("latest") is None


def test_final_release_moves_latest_only_with_the_flag(backend: StorePublisher, tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    plain = backend.publish(request_for(tmp_path / "set", names, tag="v1.0.0"))
    assert backend.resolve("latest") is None and plain.latest_moved is False
    moved = backend.publish(request_for(tmp_path / "set", names, tag="v1.0.0", move_latest=True))
    assert moved.status == "already_published" and moved.latest_moved is True
    assert backend.resolve("latest") == plain.manifest_digest
    names2 = make_set(tmp_path / "set2", {"engine-1.0-win64.zip": b"v1.0.1"})
    newer = backend.publish(request_for(tmp_path / "set2", names2, tag="v1.0.1", move_latest=True))
    assert newer.latest_moved is True and backend.resolve("latest") == newer.manifest_digest
    assert backend.resolve("v1.0.0") == plain.manifest_digest


def test_draft_uses_a_replaceable_draft_tag_then_promotes_same_digest(
    backend: StorePublisher, tmp_path: Path
) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    old = make_set(tmp_path / "old", {"engine-1.0-win64.zip": b"first draft"})
    first = backend.publish(request_for(tmp_path / "old", old, draft=True))
    draft = backend.publish(request_for(tmp_path / "set", names, draft=True))
    assert (first.status, draft.status) == ("published", "published")
    assert draft.ref == backend.url("v1.0.0-beta.1.draft")
    assert backend.resolve("v1.0.0-beta.1.draft") == draft.manifest_digest
    assert backend.resolve("v1.0.0-beta.1") is None
    assert backend.publish(request_for(tmp_path / "set", names, draft=True)).status == "already_published"
    final = backend.publish(request_for(tmp_path / "set", names))
    assert (final.status, final.manifest_digest) == ("published", draft.manifest_digest)
    assert backend.publish(request_for(tmp_path / "set", names, draft=True)).status == "already_published"
    with pytest.raises(PublishError, match="already points to"):
        backend.publish(request_for(tmp_path / "old", old, draft=True))


def test_a_publish_reads_each_tag_once_and_a_draft_is_not_read_back(
    backend: StorePublisher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every manifest read is a round trip to a registry: the tag is read once (its supersession
    check and the immutability check share the bytes), and a draft tag — replaceable, so a later
    writer is no conflict — is not read back after the put; a final tag is (the conflict check),
    and its draft is read to be retired."""
    reads: list[str] = []
    real = backend._read_manifest

    def counted(ref: str) -> bytes | None:
        reads.append(ref)
        return real(ref)

    monkeypatch.setattr(backend, "_read_manifest", counted)
    names = make_set(tmp_path / "set", ENGINE)
    assert backend.publish(request_for(tmp_path / "set", names, draft=True)).status == "published"
    tag = "v1.0.0-beta.1"
    assert reads == [tag, f"{tag}.superseded", f"{tag}.draft"]
    reads.clear()
    assert backend.publish(request_for(tmp_path / "set", names)).status == "published"
    # then the draft and its marker: publishing the final retires the draft (docs/publishing.md)
    assert reads == [tag, f"{tag}.superseded", tag, f"{tag}.draft", f"{tag}.draft.superseded"]


def _crafted(pub: StorePublisher, tag: str, title: str) -> None:
    """Store a set-typed manifest whose one layer has ``title`` (bypassing the publish checks)."""
    layer = blob_of_bytes(b"evil", "application/zip")
    layer = Blob(media_type=layer.media_type, digest=layer.digest, size=layer.size, title=title, data=b"evil")
    config = blob_of_bytes(b"{}", ARTIFACT_TYPE)
    manifest = render_manifest(artifact_type=ARTIFACT_TYPE, config=config, layers=[layer], annotations={})
    plan = ArtifactPlan(
        tag=tag,
        artifact_type=ARTIFACT_TYPE,
        config=config,
        layers=(layer,),
        manifest=manifest,
        digest="sha256:" + sha256_bytes(manifest),
    )
    with pub._lock():
        for blob in plan.blobs:
            pub._put_blob(blob)
        pub._put_manifest(plan, [tag])


@pytest.mark.parametrize("title", ["../escape.zip", "/tmp/tmp.AbC123/engine-1.0-win64.zip", "sub/x.zip"])
def test_c41_pull_refuses_titles_that_are_not_bare_names(
    backend: StorePublisher, tmp_path: Path, title: str
) -> None:
    _crafted(backend, "evil", title)
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(IntegrityError, match="is not a bare file name"):
        backend.pull("evil", dest)
    assert list(dest.iterdir()) == []
    assert not (tmp_path / "escape.zip").exists()


def test_pull_by_digest_checks_the_manifest_bytes(backend: StorePublisher, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        backend.pull("sha256:" + "0" * 64, tmp_path)


def test_registry_conflict_detected_when_another_publisher_wins_the_tag(
    registry: str, tmp_path: Path
) -> None:
    """A registry has no compare-and-swap on tags. A rival that puts the tag between our put and our
    re-check is detected: we report a conflict naming both digests, the tag keeps the rival's."""
    ours = OciPublisher(host=registry, repository="t/conflict")
    names_b = make_set(tmp_path / "b", {"engine.zip": b"B"})
    rival_plan = plan_publish(request_for(tmp_path / "b", names_b))
    rival = OciPublisher(host=registry, repository="t/conflict")
    original: Callable[[ArtifactPlan, Sequence[str]], None] = ours._put_manifest

    def put_then_rival_wins(plan: ArtifactPlan, tags: Sequence[str]) -> None:
        original(plan, tags)
        for blob in rival_plan.blobs:
            rival._put_blob(blob)
        rival._put_manifest(rival_plan, tags)

    ours._put_manifest = put_then_rival_wins  # type: ignore[method-assign]
    names_a = make_set(tmp_path / "a", {"engine.zip": b"A"})
    our_digest = plan_publish(request_for(tmp_path / "a", names_a)).digest
    with pytest.raises(PublishError) as info:
        ours.publish(request_for(tmp_path / "a", names_a))
    assert "conflict" in str(info.value)
    assert rival_plan.digest in str(info.value) and our_digest in str(info.value)
    assert rival.resolve("v1.0.0-beta.1") == rival_plan.digest


def test_registry_unreachable_is_one_line_after_bounded_retries(tmp_path: Path) -> None:
    import socket

    from ninfer_release.registry import RegistryOptions

    options = RegistryOptions(retries=2, backoff=0.01)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connection refused
        names = make_set(tmp_path / "set", ENGINE)
        pub = OciPublisher(host=f"127.0.0.1:{port}", repository="t/x", options=options)
        unreachable = f"registry 127.0.0.1:{port} unreachable: Connection refused"
        with pytest.raises(PublishError, match=unreachable) as info:
            pub.publish(request_for(tmp_path / "set", names))
        assert len(info.value.lines) == 1
        with pytest.raises(InputError, match=unreachable):
            pub.pull("v1", tmp_path)
