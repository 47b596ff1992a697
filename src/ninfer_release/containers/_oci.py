"""OCI image layout and archive I/O (OCI image-spec v1.1 "image-layout", "manifest", "config"; C37).

Reading: an image layout directory (``oci-layout``, ``index.json``, ``blobs/<alg>/<hex>``), every
blob checked against its digest. Writing: the same layout, plus one tar that holds the layout *and*
a docker ``manifest.json`` (``Config``/``Layers`` pointing at ``blobs/sha256/...``, ``RepoTags``),
so that ``docker load``, ``skopeo`` (``oci-archive:``) and ``umoci`` all accept it (C37).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

from ninfer_release.digests import is_digest
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.hashing import CHUNK
from ninfer_release.jsonbytes import canonical_json, dumps_stable
from ninfer_release.reproducible import FILE_MODE

from ._layers import WRITE_BEHIND, HashingWriter, LayerEntry, WriteBehind, complete_entries, write_tar
from ._layout import (
    INDEX_FILE,
    LAYOUT_FILE,
    MT_CONFIG,
    MT_INDEX,
    MT_LAYER_GZIP,
    MT_LAYER_TAR,
    MT_MANIFEST,
    REF_NAME,
    blob_path,
    empty_index,
    write_blob,
    write_index,
    write_layout_file,
)

MT_DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MT_DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MT_DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
MT_DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"

#: Docker schema-2 media types and their byte-identical OCI equivalents.
DOCKER_TO_OCI = {
    MT_DOCKER_LIST: MT_INDEX,
    MT_DOCKER_MANIFEST: MT_MANIFEST,
    MT_DOCKER_CONFIG: MT_CONFIG,
    MT_DOCKER_LAYER_GZIP: MT_LAYER_GZIP,
}
INDEX_TYPES = frozenset({MT_INDEX, MT_DOCKER_LIST})
MANIFEST_TYPES = frozenset({MT_MANIFEST, MT_DOCKER_MANIFEST})
LAYER_TYPES = frozenset({MT_LAYER_GZIP, MT_LAYER_TAR, MT_DOCKER_LAYER_GZIP})


def blob_digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def json_blob(obj: Any) -> bytes:
    """The exact bytes of a JSON blob (manifest, config): RFC 8785 canonical form, so digests are stable."""
    return canonical_json(obj)


@dataclass(frozen=True, kw_only=True)
class Descriptor:
    """An OCI content descriptor: media type, ``sha256:`` digest, size in bytes."""

    media_type: str
    digest: str
    size: int
    annotations: Mapping[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The descriptor as an OCI JSON object (``annotations`` only when present)."""
        out: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest, "size": self.size}
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        return out


def parse_descriptor(obj: Any, *, where: str) -> Descriptor:
    """A :class:`Descriptor` from its JSON object.

    Raises:
        IntegrityError: a field is missing or malformed (the document is not what it claims).
    """
    if not isinstance(obj, dict):
        raise IntegrityError(f"{where}: descriptor is not an object")
    digest, size, mt = obj.get("digest"), obj.get("size"), obj.get("mediaType")
    if not is_digest(digest):
        raise IntegrityError(f"{where}: digest {digest!r} is not a sha256 digest")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise IntegrityError(f"{where}: size {size!r} is not a byte count")
    ann = obj.get("annotations") or {}
    return Descriptor(media_type=str(mt or ""), digest=str(digest), size=size, annotations=dict(ann))


@dataclass(frozen=True, kw_only=True)
class ImageParts:
    """One single-platform image as found in a layout or a registry: exact manifest/config bytes, layers."""

    manifest_digest: str
    manifest_bytes: bytes
    config_bytes: bytes
    config_descriptor: Descriptor
    layers: tuple[Descriptor, ...]

    @property
    def manifest(self) -> dict[str, Any]:
        """The parsed manifest."""
        return dict(json.loads(self.manifest_bytes))

    @property
    def config(self) -> dict[str, Any]:
        """The parsed image config."""
        return dict(json.loads(self.config_bytes))


def check_bytes(data: bytes, digest: str, size: int | None, *, where: str) -> None:
    """Verify ``data`` against ``digest`` (and ``size`` when known).

    Raises:
        IntegrityError: the digest or size differs (C36 family: bytes are bound by digest).
    """
    got = blob_digest(data)
    if got != digest:
        raise IntegrityError(f"{where}: content has digest {got}, expected {digest}")
    if size is not None and len(data) != size:
        raise IntegrityError(f"{where}: {len(data)} bytes, descriptor says {size}")


def _platform_matches(desc: Mapping[str, Any], os_: str, arch: str) -> bool:
    plat = desc.get("platform") or {}
    return bool(plat.get("os") == os_ and plat.get("architecture") == arch)


def select_manifest(
    index: Mapping[str, Any], *, os_: str, arch: str, where: str, ref: str | None = None
) -> Descriptor:
    """Pick a manifest from an index: by ``ref`` name, else the only one, else the one for ``os_/arch``.

    Raises:
        InputError: no entry (or more than one) fits.
    """
    entries = index.get("manifests")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{where}: index lists no manifests")
    if ref is not None:
        named = [
            e for e in entries if isinstance(e, dict) and (e.get("annotations") or {}).get(REF_NAME) == ref
        ]
        if len(named) != 1:
            raise InputError(f"{where}: {len(named)} manifests are named {ref!r}; expected exactly one")
        return parse_descriptor(named[0], where=where)
    if len(entries) == 1:
        return parse_descriptor(entries[0], where=where)
    fits = [e for e in entries if isinstance(e, dict) and _platform_matches(e, os_, arch)]
    if len(fits) != 1:
        raise InputError(f"{where}: {len(fits)} manifests match {os_}/{arch}; name one (LAYOUT:TAG)")
    return parse_descriptor(fits[0], where=where)


@dataclass(frozen=True, kw_only=True)
class ManifestParts:
    """The config and layer descriptors of one image manifest, in manifest order."""

    config: Descriptor
    layers: tuple[Descriptor, ...]


def parse_manifest(data: bytes, *, where: str) -> ManifestParts:
    """Config and layer descriptors of an image manifest.

    Raises:
        IntegrityError: the manifest is not a single-platform image manifest.
    """
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise IntegrityError(f"{where}: manifest is not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schemaVersion") != 2:
        raise IntegrityError(f"{where}: not a schemaVersion 2 manifest")
    config = parse_descriptor(doc.get("config"), where=f"{where}: config")
    layers_raw = doc.get("layers")
    if not isinstance(layers_raw, list):
        raise IntegrityError(f"{where}: manifest has no layers list")
    layers = tuple(parse_descriptor(d, where=f"{where}: layers[{i}]") for i, d in enumerate(layers_raw))
    return ManifestParts(config=config, layers=layers)


# --- layouts on disk ---------------------------------------------------------------------------


def is_layout(path: Path) -> bool:
    """True when ``path`` is a directory holding an ``oci-layout`` file."""
    return (path / LAYOUT_FILE).is_file()


def read_verified(path: Path, desc: Descriptor, *, where: str) -> bytes:
    """Read a (small) blob and check it against ``desc``.

    Raises:
        InputError: the blob is missing. IntegrityError: digest or size differs.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{where}: blob {desc.digest} is missing") from None
    check_bytes(data, desc.digest, desc.size, where=where)
    return data


def copy_verified(src: Path, dest: Path, desc: Descriptor, *, where: str) -> None:
    """Copy a (possibly large) blob, hashing while copying; ``dest`` is removed if it does not verify.

    Raises:
        InputError: the source blob is missing. IntegrityError: digest or size differs.
    """
    h = hashlib.sha256()
    size = 0
    try:
        fin = src.open("rb")
    except FileNotFoundError:
        raise InputError(f"{where}: blob {desc.digest} is missing") from None
    with fin, dest.open("wb") as fout:
        while chunk := fin.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
            fout.write(chunk)
    got = "sha256:" + h.hexdigest()
    if got != desc.digest or size != desc.size:
        dest.unlink()
        raise IntegrityError(
            f"{where}: blob has digest {got} ({size} bytes), expected {desc.digest} ({desc.size})"
        )


def read_layout_image(layout: Path, *, ref: str | None, os_: str, arch: str) -> ImageParts:
    """The single-platform image in an OCI layout, every small blob verified by digest.

    Nested indexes are followed to the manifest for ``os_``/``arch``; ``ref`` selects by
    ``org.opencontainers.image.ref.name``. Layer blobs are verified when copied.

    Raises:
        InputError: not a layout, or no single image fits. IntegrityError: a blob differs from its digest.
    """
    where = str(layout)
    if not is_layout(layout):
        raise InputError(f"{where}: not an OCI image layout (no oci-layout file)")
    try:
        index = json.loads((layout / INDEX_FILE).read_bytes())
    except (OSError, ValueError) as exc:
        raise InputError(f"{where}/index.json: unreadable ({exc})") from None
    desc = select_manifest(index, os_=os_, arch=arch, where=f"{where}/index.json", ref=ref)
    for _ in range(4):  # an index may point at another index; follow a bounded number of levels
        data = read_verified(blob_path(layout, desc.digest), desc, where=where)
        media = desc.media_type or json.loads(data).get("mediaType", "")
        if media in INDEX_TYPES:
            desc = select_manifest(json.loads(data), os_=os_, arch=arch, where=f"{where}: {desc.digest}")
            continue
        parts = parse_manifest(data, where=f"{where}: {desc.digest}")
        config = read_verified(blob_path(layout, parts.config.digest), parts.config, where=where)
        return ImageParts(
            manifest_digest=desc.digest,
            manifest_bytes=data,
            config_bytes=config,
            config_descriptor=parts.config,
            layers=parts.layers,
        )
    raise InputError(f"{where}: indexes nested too deeply")


@dataclass(frozen=True, kw_only=True)
class WrittenImage:
    """An image written as a layout: digests and sizes of its manifest and config."""

    manifest: Descriptor
    config: Descriptor
    layers: tuple[Descriptor, ...]
    ref_name: str


def finish_layout(
    layout: Path,
    *,
    config_bytes: bytes,
    layers: Sequence[Descriptor],
    ref_name: str,
    annotations: Mapping[str, str],
    staged: bool = False,
) -> WrittenImage:
    """Write config, manifest, ``index.json`` and ``oci-layout`` into ``layout`` (layer blobs already there).

    Written through the one layout writer (:mod:`._layout`; the directory store uses it too).
    ``staged``: ``layout`` is inside an :func:`~ninfer_release.atomic.staged_directory`, which
    flushes every file before it appears, so ``index.json`` and ``oci-layout`` are not flushed
    one by one (``durable=False``).

    ``index.json`` points directly at the image manifest (no nested index, C37) and names it
    ``ref_name`` so that ``oci:DIR:REF`` works for skopeo and umoci.
    """
    config_digest = write_blob(layout, config_bytes)
    config = Descriptor(media_type=MT_CONFIG, digest=config_digest, size=len(config_bytes))
    manifest_obj: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": MT_MANIFEST,
        "config": config.as_json(),
        "layers": [d.as_json() for d in layers],
    }
    if annotations:
        manifest_obj["annotations"] = dict(annotations)
    manifest_bytes = json_blob(manifest_obj)
    manifest_digest = write_blob(layout, manifest_bytes)
    manifest = Descriptor(
        media_type=MT_MANIFEST,
        digest=manifest_digest,
        size=len(manifest_bytes),
        annotations={REF_NAME: ref_name},
    )
    write_index(layout, {**empty_index(), "manifests": [manifest.as_json()]}, durable=not staged)
    write_layout_file(layout, durable=not staged)
    return WrittenImage(manifest=manifest, config=config, layers=tuple(layers), ref_name=ref_name)


def docker_manifest_json(image: WrittenImage, repo_tags: Sequence[str]) -> bytes:
    """The docker-archive ``manifest.json`` for ``image``: blob paths of config and layers, tags (C37)."""

    def path(d: Descriptor) -> str:
        alg, _, hexd = d.digest.partition(":")
        return f"blobs/{alg}/{hexd}"

    doc = [
        {"Config": path(image.config), "Layers": [path(d) for d in image.layers], "RepoTags": list(repo_tags)}
    ]
    return dumps_stable(doc)


@dataclass(frozen=True, kw_only=True)
class ArchiveInfo:
    """An ``image.tar`` as written: SHA-256 (64 hex) and size in bytes."""

    sha256: str
    size: int


def write_archive(
    layout: Path, image: WrittenImage, dest: Path, *, repo_tags: Sequence[str], epoch: int
) -> ArchiveInfo:
    """Write one tar holding the layout plus docker ``manifest.json`` (C37), deterministically.

    Entries are sorted, root-owned and stamped with ``epoch``; the tar is uncompressed so that
    ``docker load``, ``skopeo copy oci-archive:`` and ``tar -x`` read it without guessing.
    Returns the tar's SHA-256 and size, computed while writing.
    """
    entries: list[LayerEntry] = [
        LayerEntry(path="manifest.json", kind="file", data=docker_manifest_json(image, repo_tags)),
        LayerEntry(path=LAYOUT_FILE, kind="file", source=layout / LAYOUT_FILE),
        LayerEntry(path=INDEX_FILE, kind="file", source=layout / INDEX_FILE),
    ]
    for blob in sorted((layout / "blobs").rglob("*")):
        if blob.is_file():
            rel = blob.relative_to(layout).as_posix()
            entries.append(LayerEntry(path=rel, kind="file", mode=FILE_MODE, source=blob))
    with dest.open("wb") as f:
        sink = _WriteBehind(f)
        write_tar(complete_entries(entries), sink, epoch=epoch, digests=False)
    dest.chmod(FILE_MODE)
    return ArchiveInfo(sha256=sink.sha256.hexdigest(), size=sink.size)


#: ``image.tar`` bytes written before the kernel is asked to start writing them to disk.
_WRITE_BEHIND = WRITE_BEHIND


class _WriteBehind(HashingWriter):
    """A :class:`HashingWriter` onto ``image.tar`` through a :class:`~._layers.WriteBehind` that
    evicts (asynchronous write-back every :data:`_WRITE_BEHIND` bytes, and the clean pages leave
    the page cache — nothing rereads ``image.tar``), so the output's final ``fsync`` waits for
    little more than the last piece."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__(cast(BinaryIO, WriteBehind(raw, evict=True)))


def copy_layout_blob(src_layout: Path, dest_layout: Path, desc: Descriptor, *, where: str) -> None:
    """Copy one blob between layouts, verifying its digest (never trusting the source)."""
    dest = blob_path(dest_layout, desc.digest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    copy_verified(blob_path(src_layout, desc.digest), dest, desc, where=where)
    dest.chmod(FILE_MODE)


def problems_for_missing(paths: Sequence[tuple[str, Path]], *, file: str) -> list[Problem]:
    """One :class:`Problem` per (field, path) whose path does not exist."""
    return [
        Problem(file=file, field=fld, message=f"{p} does not exist") for fld, p in paths if not p.exists()
    ]


def remove_tree(path: Path) -> None:
    """Remove a scratch tree (ignore a missing one)."""
    shutil.rmtree(path, ignore_errors=True)
