"""The one OCI image-layout writer (``containers/_layout.py``; issue 10), shared by the image build
and the directory store: exact bytes of ``oci-layout`` and ``index.json``, modes, and retagging."""

from __future__ import annotations

import json
from pathlib import Path

from ninfer_release.containers import (
    LAYOUT_BYTES,
    MT_INDEX,
    MT_MANIFEST,
    REF_NAME,
    blob_dir,
    blob_path,
    empty_index,
    ref_name,
    retag,
    write_blob,
    write_index,
    write_layout_file,
)

D1 = "sha256:" + "1" * 64
D2 = "sha256:" + "2" * 64


def _desc(digest: str, tag: str | None = None) -> dict[str, object]:
    out: dict[str, object] = {"mediaType": MT_MANIFEST, "digest": digest, "size": 3}
    if tag is not None:
        out["annotations"] = {REF_NAME: tag}
    return out


def test_layout_file_and_index_bytes_are_stable_json_with_mode_0644(tmp_path: Path) -> None:
    write_layout_file(tmp_path)
    write_index(tmp_path, {**empty_index(), "manifests": [_desc(D1, "v1")]})
    assert (
        (tmp_path / "oci-layout").read_bytes() == LAYOUT_BYTES == b'{\n  "imageLayoutVersion": "1.0.0"\n}\n'
    )
    index = (tmp_path / "index.json").read_bytes()
    assert index.endswith(b"}\n") and json.loads(index)["mediaType"] == MT_INDEX
    assert index.index(b'"manifests"') < index.index(b'"mediaType": "application/vnd.oci.image.index')
    assert {p.stat().st_mode & 0o777 for p in tmp_path.iterdir()} == {0o644}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json", "oci-layout"]  # no temp file left


def test_blobs_are_named_by_digest_under_fixed_mode_dirs(tmp_path: Path) -> None:
    assert blob_dir(tmp_path, mode=0o755) == tmp_path / "blobs" / "sha256"
    digest = write_blob(tmp_path, b"abc")
    assert digest == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert blob_path(tmp_path, digest).read_bytes() == b"abc"
    assert (tmp_path / "blobs").stat().st_mode & 0o777 == 0o755
    assert blob_path(tmp_path, digest).stat().st_mode & 0o777 == 0o644


def test_retag_replaces_the_named_tags_keeps_the_others_and_sorts() -> None:
    old = [_desc(D2, "b"), _desc(D1, "a"), _desc(D1), "junk"]
    got = retag([d for d in old if isinstance(d, dict)], ["b", "c"], _desc(D1))
    assert [ref_name(d) for d in got] == [None, "a", "b", "c"]
    assert [d["digest"] for d in got] == [D1, D1, D1, D1]
    assert ref_name("junk") is None


def test_archive_write_behind_writes_and_hashes_every_byte(tmp_path: Path) -> None:
    """``image.tar`` asks the kernel to write back every few MiB; the bytes and digest are unchanged."""
    import hashlib
    import os

    from ninfer_release.containers._oci import _WRITE_BEHIND, _WriteBehind

    pieces = [os.urandom(1 << 20) for _ in range(2 * _WRITE_BEHIND // (1 << 20) + 3)]
    with (tmp_path / "t").open("wb") as f:
        sink = _WriteBehind(f)
        for p in pieces:
            sink.write(p)
    data = b"".join(pieces)
    assert (tmp_path / "t").read_bytes() == data
    assert (sink.sha256.hexdigest(), sink.size) == (hashlib.sha256(data).hexdigest(), len(data))
