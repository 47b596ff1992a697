"""The directory store (``dir://PATH``): sets as OCI artifacts in an OCI image layout on disk.

Layout (OCI image-layout 1.0): ``oci-layout``, ``index.json`` (one descriptor per tag, named by
``org.opencontainers.image.ref.name``), ``blobs/sha256/<hex>``, written by the one layout writer
(``containers``: :func:`write_layout_file`, :func:`retag`, :func:`write_index`). Plus our own hidden
``.ninfer-publish.lock`` and ``.ninfer-tmp/`` (blob staging; both from :mod:`._store_io`). ``skopeo inspect
--raw oci:PATH:TAG`` reads what we write, and the manifest bytes equal the registry adapter's.

Crash safety: blobs are staged in ``.ninfer-tmp``, verified, fsynced and renamed into place;
``index.json`` — the only file that names tags — is replaced atomically last. A killed publish
leaves the tag absent (plus unreferenced blobs) or complete, never half. The flock makes
check-then-write exact between concurrent publishers on one host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ninfer_release import hashing, strictjson
from ninfer_release.atomic import fsync_path
from ninfer_release.containers import (
    INDEX_FILE,
    LAYOUT_FILE,
    LAYOUT_VERSION,
    MT_INDEX,
    MT_MANIFEST,
    blob_dir,
    blob_path,
    empty_index,
    ref_name,
    retag,
    write_index,
    write_layout_file,
)
from ninfer_release.digests import is_digest
from ninfer_release.errors import IntegrityError, Problem, PublishError
from ninfer_release.releases._publish import ArtifactPlan, Blob, StorePublisher
from ninfer_release.releases._store_io import LOCK_NAME, TMP_NAME, locked_store, write_verified

_CHUNK = 1 << 20  # 1 MiB
#: Bounds checked before reading (docs/reliability.md): ``oci-layout`` is one short object;
#: a manifest is ~3 KiB for 11 layers, and 4 MiB is what the OCI distribution spec asks registries
#: to accept at least; ``index.json`` holds ~400 bytes per tag, so 16 MiB is ~40,000 tags.
MAX_LAYOUT_BYTES = 4 << 10
MAX_MANIFEST_BYTES = 4 << 20
MAX_INDEX_BYTES = 16 << 20


class DirStore(StorePublisher):
    """Publisher over an OCI image layout directory at ``root`` (created on first publish)."""

    def __init__(self, root: Path) -> None:
        self.root = root.absolute()

    def url(self, ref: str | None = None) -> str:
        """``dir://ROOT[:TAG|@DIGEST]``."""
        base = f"dir://{self.root}"
        if ref is None:
            return base
        return f"{base}@{ref}" if ref.startswith("sha256:") else f"{base}:{ref}"

    # -- primitives ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self._refuse_foreign_directory()
        with locked_store(self.root, prepare=self._prepare_layout):
            yield

    def _refuse_foreign_directory(self) -> None:
        """Never turn a directory with other content (say ``$HOME``) into a store."""
        if self.root.exists() and not self.root.is_dir():
            raise PublishError(
                problems=[Problem(file=str(self.root), message="store path is not a directory")]
            )
        if not self.root.is_dir() or (self.root / LAYOUT_FILE).exists():
            return
        ours = {LOCK_NAME, TMP_NAME, LAYOUT_FILE, "blobs", INDEX_FILE}
        # ".oci-layout.*.tmp": a concurrent first publish writing oci-layout atomically.
        if any(p.name not in ours and not p.name.startswith(f".{LAYOUT_FILE}.") for p in self.root.iterdir()):
            raise PublishError(
                problems=[
                    Problem(
                        file=str(self.root),
                        message="not an OCI image layout (no oci-layout) and not empty; refusing",
                    )
                ]
            )

    def _prepare_layout(self) -> None:
        """Check (or, in a new store, write) ``oci-layout``; called with the lock held."""
        layout = self.root / LAYOUT_FILE
        if layout.is_file():
            try:
                doc = strictjson.read(layout, limit=MAX_LAYOUT_BYTES, error=PublishError)
            except PublishError:
                doc = None
            version = doc.get("imageLayoutVersion") if isinstance(doc, dict) else None
            if version != LAYOUT_VERSION:
                raise PublishError(
                    problems=[
                        Problem(
                            file=str(layout), field="imageLayoutVersion", message="not an OCI layout 1.0.0"
                        )
                    ]
                )
        blob_dir(self.root)
        if not layout.is_file():
            write_layout_file(self.root)

    def _blob_path(self, digest: str) -> Path:
        if not is_digest(digest):
            raise IntegrityError(
                problems=[Problem(file=self.url(), field="digest", message=f"{digest!r} is invalid")]
            )
        return blob_path(self.root, digest)

    def _read_index(self) -> dict[str, Any]:
        path = self.root / INDEX_FILE
        if not path.exists() and not path.is_symlink():
            return empty_index()
        # Anything else at index.json (a FIFO, a directory) is refused, never taken for "no tags".
        index = strictjson.read_object(path, limit=MAX_INDEX_BYTES, error=PublishError)
        if not isinstance(index.get("manifests"), list):
            raise PublishError(problems=[Problem(file=str(path), field="manifests", message="missing")])
        return index

    def _read_blob(self, path: Path) -> bytes:
        """A manifest blob, bounded before reading (a store's bytes are not trusted)."""
        return strictjson.read_regular(path, limit=MAX_MANIFEST_BYTES, error=IntegrityError)

    def _read_manifest(self, ref: str) -> bytes | None:
        if not (self.root / LAYOUT_FILE).is_file():
            return None
        if ref.startswith("sha256:"):
            path = self._blob_path(ref)
            return self._read_blob(path) if path.is_file() else None
        found = [d for d in self._read_index()["manifests"] if ref_name(d) == ref]
        if not found:
            return None
        digest = str(found[-1].get("digest"))
        path = self._blob_path(digest)
        if not path.is_file():
            raise IntegrityError(
                problems=[Problem(file=str(path), message=f"tag {ref} names a missing blob")]
            )
        data = self._read_blob(path)
        if "sha256:" + hashing.sha256_bytes(data) != digest:
            raise IntegrityError(
                problems=[Problem(file=str(path), message=f"blob does not hash to {digest}")]
            )
        return data

    def _put_blob(self, blob: Blob) -> None:
        final = self._blob_path(blob.digest)
        if final.is_file() and final.stat().st_size == blob.size:
            return
        # The staging directory is private to the lock holder: a name per digest cannot clash.
        tmp = self.root / TMP_NAME / (blob.digest.removeprefix("sha256:") + ".blob")
        write_verified(blob, tmp)
        try:
            tmp.replace(final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise

    def _put_manifest(self, plan: ArtifactPlan, tags: Sequence[str]) -> None:
        self._put_blob(
            Blob(
                media_type=MT_MANIFEST,
                digest=plan.digest,
                size=len(plan.manifest),
                data=plan.manifest,
            )
        )
        fsync_path(self.root / "blobs" / "sha256")
        index = self._read_index()
        descriptor = {
            "mediaType": MT_MANIFEST,
            "artifactType": plan.artifact_type,
            "digest": plan.digest,
            "size": len(plan.manifest),
        }
        index["manifests"] = retag(index["manifests"], tags, descriptor)
        index.setdefault("mediaType", MT_INDEX)
        self._write_index(index)

    def _write_index(self, index: dict[str, Any]) -> None:
        # The commit point of a publish: before this the tag is absent, after it complete.
        write_index(self.root, index)
        fsync_path(self.root)

    @contextlib.contextmanager
    def _open_blob(self, digest: str) -> Iterator[Iterator[bytes]]:
        path = self._blob_path(digest)
        if not path.is_file():
            raise IntegrityError(
                problems=[Problem(file=str(path), message="blob named by the manifest is missing")]
            )
        with path.open("rb") as f:
            yield iter(lambda: f.read(_CHUNK), b"")
