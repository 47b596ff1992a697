"""A set verified by reference is the set the reference names (second hostile review,
2026-12-04): a ``dir://`` store whose 3090 tag held the 4090 set verified OK, with and without
``--release-manifest``; and the manifest's own annotations could contradict the set. The URL
form is in tests/test_fetch_http.py, the files:// form here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from flow_support import TAGS, cli, ok, release_out

REF_NAME = "org.opencontainers.image.ref.name"


def _published(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, scheme: str) -> Path:
    store = tmp_path / "store"
    ok(cli("publish", "--to", f"{scheme}://{store}", "--draft", release_out(tmp_path_factory) / "rtx4090"))
    return store


def _retag(store: Path, new: str) -> None:
    index = json.loads((store / "index.json").read_bytes())
    (manifest,) = index["manifests"]
    manifest["annotations"][REF_NAME] = new
    (store / "index.json").write_text(json.dumps(index), encoding="utf-8")


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error: ")]


def test_control_the_set_under_its_own_tag_verifies(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    store = _published(tmp_path_factory, tmp_path, "dir")
    res = cli("verify", f"dir://{store}:{TAGS['rtx4090']}.draft")
    assert res.code == 0, res.err


@pytest.mark.parametrize("anchored", [False, True], ids=["plain", "release-manifest"])
def test_a_store_tag_that_names_another_set_fails(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, anchored: bool
) -> None:
    store = _published(tmp_path_factory, tmp_path, "dir")
    other = f"{TAGS['rtx3090']}.draft"
    _retag(store, other)
    extra = (
        ["--release-manifest", str(release_out(tmp_path_factory) / "release-manifest.json")]
        if anchored
        else []
    )
    res = cli("verify", *extra, f"dir://{store}:{other}")
    assert res.code == 5, res.err
    want = f"the reference names tag {other!r}, but the set is {TAGS['rtx4090']!r}"
    assert any(want in line for line in _errors(res.err)), res.err


def test_manifest_annotations_that_contradict_the_set_fail(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    store = _published(tmp_path_factory, tmp_path, "dir")
    index = json.loads((store / "index.json").read_bytes())
    (descriptor,) = index["manifests"]
    blob = store / "blobs" / "sha256" / descriptor["digest"].removeprefix("sha256:")
    manifest = json.loads(blob.read_bytes())
    manifest["annotations"]["vnd.omp-ninfer.component-tag"] = "v9.9.9"
    manifest["annotations"]["vnd.omp-ninfer.sha256sums"] = "sha256:" + "0" * 64
    data = json.dumps(manifest, indent=2, sort_keys=True).encode()
    digest = hashlib.sha256(data).hexdigest()
    (store / "blobs" / "sha256" / digest).write_bytes(data)
    descriptor.update(digest="sha256:" + digest, size=len(data))
    (store / "index.json").write_text(json.dumps(index), encoding="utf-8")
    res = cli("verify", f"dir://{store}:{TAGS['rtx4090']}.draft")
    assert res.code == 5, res.err
    errors = _errors(res.err)
    assert any(f"manifest component tag 'v9.9.9' is not {TAGS['rtx4090']!r}" in e for e in errors), res.err
    assert any("manifest SHA256SUMS 'sha256:000" in e and "is not the one pulled" in e for e in errors), (
        res.err
    )


def test_a_files_store_tag_that_names_another_set_fails(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    store = _published(tmp_path_factory, tmp_path, "files")
    (here,) = [p for p in store.iterdir() if p.is_dir() and not p.name.endswith(".sigstore")]
    other = f"{TAGS['rtx3090']}.draft"
    here.rename(store / other)
    res = cli("verify", f"files://{store}:{other}")
    assert res.code == 5, res.err
    want = f"the reference names tag {other!r}, but the set is {TAGS['rtx4090']!r}"
    assert any(want in line for line in _errors(res.err)), res.err


@pytest.mark.parametrize("annotations", ["x", [1], 7, None])
def test_an_index_descriptor_with_odd_annotations_is_no_tag_not_a_crash(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, annotations: object
) -> None:
    """Annotations that are no object ended ``verify dir://…:TAG`` as "internal error" (exit 1)."""
    store = _published(tmp_path_factory, tmp_path, "dir")
    index = json.loads((store / "index.json").read_bytes())
    index["manifests"].insert(0, {"annotations": annotations})
    (store / "index.json").write_text(json.dumps(index), encoding="utf-8")
    res = cli("verify", f"dir://{store}:{TAGS['rtx4090']}.draft")
    assert "internal error" not in res.err, res.err
    assert res.code == 0, res.err  # a descriptor with no tag is no set of the tag asked for
