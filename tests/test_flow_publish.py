"""Publish the built sets and verify them back from the store, as CI and installer consumers do
(DESIGN.md §8; issue 5 done-when), against a real registry (``registry`` fixture) and a ``dir://`` store.

Done-when: both native sets published; ``verify oci://…`` exits 0; a second publish answers
``already_published``; a refusal after changing one byte of one file (a tampered set does not
verify; a different valid set for the same tag breaks immutability).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import need_tool
from flow_support import (
    NATIVE_LANES,
    OTHER_EPOCH,
    RELEASE,
    REPO,
    TAGS,
    cli,
    flip_byte,
    ok,
    qualified_out,
    registry_namespace,
    release_out,
    samples,
    set_names,
    write_receipts,
)

ARTIFACT_TYPE = "application/vnd.omp-ninfer.asset-set.v1"


@dataclass(frozen=True, kw_only=True)
class Store:
    """Where sets go: ``oci://HOST:PORT/<prefix>/<lane>`` or ``dir://ROOT/<prefix>/<lane>``."""

    kind: str
    base: str  # registry HOST:PORT, or the store root directory
    prefix: str

    def to(self, lane: str) -> str:
        if self.kind == "oci":
            return f"oci://{self.base}/{self.prefix}/{lane}"
        return f"dir://{self.base}/{self.prefix}/{lane}"

    def ref(self, lane: str, tag: str) -> str:
        return f"{self.to(lane)}:{tag}"

    def skopeo_args(self, lane: str, tag: str) -> list[str]:
        if self.kind == "oci":
            return ["--tls-verify=false", f"docker://{self.base}/{self.prefix}/{lane}:{tag}"]
        return [f"oci:{self.base}/{self.prefix}/{lane}:{tag}"]


@pytest.fixture(params=["oci", "dir"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """A fresh repository prefix in the session registry, or a fresh directory store."""
    name = request.node.name.split("[")[0].removeprefix("test_").replace("_", "-")[:40]
    if request.param == "oci":
        # <namespace>/omp-ninfer/<lane>: each lane's publication repository under a private namespace.
        prefix = registry_namespace(request.getfixturevalue("tmp_path_factory"), name) + "/omp-ninfer"
        return Store(kind="oci", base=request.getfixturevalue("registry"), prefix=prefix)
    return Store(kind="dir", base=str(tmp_path / "store"), prefix="omp-ninfer")


def _json(*args: str | Path) -> tuple[int, dict[str, object]]:
    res = cli("--json", *args)
    return res.code, json.loads(res.out)


def _sums(set_dir: Path) -> str:
    return hashlib.sha256((set_dir / "SHA256SUMS").read_bytes()).hexdigest()


def _other_epoch_qualified(factory: pytest.TempPathFactory) -> Path:
    """rtx4090 rebuilt under another SOURCE_DATE_EPOCH (a draft, then sealed with a receipt for that
    draft's package): valid, qualified, other bytes."""
    work = factory.mktemp("other-epoch")
    env = {"SOURCE_DATE_EPOCH": OTHER_EPOCH}
    common = ("build", "lane", "rtx4090", "--release", RELEASE, "--inputs", samples(factory))
    ok(cli(*common, "--out", work / "draft", env=env))
    receipts = write_receipts(work / "receipts", factory, drafts=work / "draft")
    out = work / "out"
    ok(cli(*common, "--out", out, "--receipts", receipts, env=env))
    return out / "rtx4090"


def test_publish_flow_done_when(
    store: Store, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Issue 5 done-when, on a registry and on a directory store, for both native lanes."""
    unq = release_out(tmp_path_factory)
    qual = qualified_out(tmp_path_factory)
    other = _other_epoch_qualified(tmp_path_factory)
    assert cli("verify", other).code == 0
    assert _sums(other) != _sums(qual / "rtx4090")
    for lane in NATIVE_LANES:
        tag = TAGS[lane]
        # Unqualified without --draft is refused before anything is written.
        res = cli("publish", unq / lane, "--to", store.to(lane))
        assert res.code == 7, res.text
        assert "qualification: the set is unqualified" in res.err
        assert cli("verify", store.ref(lane, tag)).code == 4

        # Unqualified as a draft: published under <tag>.draft and verifiable from the store.
        code, doc = _json("publish", unq / lane, "--to", store.to(lane), "--draft")
        assert code == 0, doc
        assert doc["status"] == "published" and doc["ref"] == store.ref(lane, f"{tag}.draft")
        res = cli(
            "verify", store.ref(lane, f"{tag}.draft"), "--release-manifest", unq / "release-manifest.json"
        )
        assert res.code == 0, res.text
        if lane == "rtx4090":
            # A draft, unlike a tag, is replaced by a newer draft (here: other valid bytes).
            code, doc = _json("publish", other, "--to", store.to(lane), "--draft")
            assert code == 0 and doc["status"] == "published", doc
            code, vdoc = _json("verify", store.ref(lane, f"{tag}.draft"))
            assert code == 0 and vdoc["sha256sums_sha256"] == _sums(other), vdoc

        # Qualified, checked against the release definition: published under the immutable tag.
        code, doc = _json("publish", qual / lane, "--to", store.to(lane), "--release", RELEASE)
        assert code == 0, doc
        assert doc["status"] == "published" and doc["ref"] == store.ref(lane, tag)
        digest = doc["manifest_digest"]
        code, vdoc = _json(
            "verify", store.ref(lane, tag), "--release-manifest", qual / "release-manifest.json"
        )
        assert code == 0, vdoc
        assert vdoc["sha256sums_sha256"] == _sums(qual / lane) and vdoc["artifact_digest"] == digest
        # The unqualified release manifest binds other SHA256SUMS bytes: the pulled set is not that one.
        res = cli("verify", store.ref(lane, tag), "--release-manifest", unq / "release-manifest.json")
        assert res.code == 5, res.text
        assert "SHA256SUMS" in res.err

        # Consumers may pin the artifact by digest instead of the tag.
        by_digest = f"{store.to(lane)}@{digest}"
        code, vdoc = _json("verify", by_digest, "--release-manifest", qual / "release-manifest.json")
        assert code == 0 and vdoc["artifact_digest"] == digest, vdoc

        # The same bytes again: already_published, same digest, exit 0.
        code, doc = _json("publish", qual / lane, "--to", store.to(lane))
        assert code == 0, doc
        assert doc["status"] == "already_published" and doc["manifest_digest"] == digest

        # (a) one byte of one file changed: the set does not verify, publish refused (exit 7).
        tampered = tmp_path / f"tampered-{lane}"
        shutil.copytree(qual / lane, tampered)
        flip_byte(tampered / f"ninfer-{tag}-windows-x64.route.json")
        res = cli("publish", tampered, "--to", store.to(lane))
        assert res.code == 7, res.text
        assert "does not verify" in res.err and ".route.json" in res.err

    # (b) a different valid set for the same tag (rebuilt with another source-date epoch):
    #     refused by immutability, naming the tag -- also as a draft; the tag keeps its first bytes.
    tag = TAGS["rtx4090"]
    for extra in ([], ["--draft"]):
        res = cli("publish", other, "--to", store.to("rtx4090"), *extra)
        assert res.code == 7, res.text
        assert f"tag {tag} already points to" in res.err and "tags are immutable" in res.err
        # A draft names why it is refused although <tag>.draft is free (the README's re-run).
        assert ("a draft of it" in res.err) == bool(extra), res.err
    code, vdoc = _json("verify", store.ref("rtx4090", tag))
    assert code == 0 and vdoc["sha256sums_sha256"] == _sums(qual / "rtx4090")


def test_skopeo_reads_the_published_artifact(store: Store, tmp_path_factory: pytest.TempPathFactory) -> None:
    """``skopeo inspect --raw`` reads the pushed manifest: one artifact of our type, 11 titled layers."""
    skopeo = need_tool("skopeo")
    qual = qualified_out(tmp_path_factory)
    for lane in NATIVE_LANES:
        code, doc = _json("publish", qual / lane, "--to", store.to(lane))
        assert code == 0, doc
        res = subprocess.run(
            [skopeo, "inspect", "--raw", *store.skopeo_args(lane, TAGS[lane])],
            capture_output=True,
            check=False,
        )
        assert res.returncode == 0, res.stderr.decode()
        assert "sha256:" + hashlib.sha256(res.stdout).hexdigest() == doc["manifest_digest"]
        manifest = json.loads(res.stdout)
        assert manifest["artifactType"] == ARTIFACT_TYPE == manifest["config"]["mediaType"]
        titles = [layer["annotations"]["org.opencontainers.image.title"] for layer in manifest["layers"]]
        assert titles == set_names(lane)
        assert manifest["annotations"]["vnd.omp-ninfer.component-tag"] == TAGS[lane]
        assert manifest["annotations"]["vnd.omp-ninfer.sha256sums"] == "sha256:" + _sums(qual / lane)


def _disagreeing_set(factory: pytest.TempPathFactory) -> Path:
    """rtx4090 built from a copy of the release definition that says v0.13.2 (all else the same)."""
    root = factory.mktemp("other-definition")
    for name in ("profiles", "packaging", "sbom", "containers", "releases"):
        os.symlink(REPO / name, root / name)
    (root / "manifests").mkdir()
    text = RELEASE.read_text().replace("\nversion: v0.13.1\n", "\nversion: v0.13.2\n")
    assert "version: v0.13.2" in text
    definition = root / "manifests" / "v0.13.2.yaml"
    definition.write_text(text)
    out = root / "out"
    ok(cli("build", "lane", "rtx4090", "--release", definition, "--inputs", samples(factory), "--out", out))
    return out / "rtx4090"


def test_publish_refuses_a_set_that_disagrees_with_the_release(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``publish --release manifests/v0.13.1.yaml`` of a set whose component manifest names another
    release: exit 7 naming the field; without ``--release`` the same (valid) set goes out as a draft."""
    other = _disagreeing_set(tmp_path_factory)
    assert cli("verify", other).code == 0
    to = f"dir://{tmp_path / 'store'}"
    res = cli("publish", other, "--to", to, "--draft", "--release", RELEASE)
    assert res.code == 7, res.text
    assert "release: 'v0.13.2' disagrees with the release definition ('v0.13.1')" in res.err
    assert not (tmp_path / "store").exists()
    ok(cli("publish", other, "--to", to, "--draft"))


def test_publish_refuses_a_tag_other_than_the_sets_own(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A set is published under its own component tag: ``--to …:other`` is refused (exit 7)."""
    qual = qualified_out(tmp_path_factory)
    res = cli("publish", qual / "rtx4090", "--to", f"dir://{tmp_path / 'store'}:{TAGS['rtx3090']}")
    assert res.code == 7, res.text
    assert "a set is published under its own tag" in res.err


def test_verify_from_a_store_whose_blob_was_altered_fails(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A consumer pulling from a ``dir://`` store whose blob bytes were changed on disk gets exit 5
    naming the file; nothing of the pulled set is left behind."""
    qual = qualified_out(tmp_path_factory)
    store = tmp_path / "store"
    ok(cli("publish", qual / "rtx4090", "--to", f"dir://{store}"))
    route = f"ninfer-{TAGS['rtx4090']}-windows-x64.route.json"
    blob = store / "blobs" / "sha256" / hashlib.sha256((qual / "rtx4090" / route).read_bytes()).hexdigest()
    blob.chmod(0o644)
    flip_byte(blob)
    res = cli("verify", f"dir://{store}:{TAGS['rtx4090']}")
    assert res.code == 5, res.text
    assert route in res.err
