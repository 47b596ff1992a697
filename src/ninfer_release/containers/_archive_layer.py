"""A layer that is one staged archive, written while the archive is read (issue 13: one pass).

The recipe's runtime layer is a single ``archive:`` item: a ``.tar.gz`` unpacked under ``dest``.
Unpacking it into scratch files and then writing the layer from them reads and writes every
unpacked byte twice and leaves the deflate workers idle while the archive is inflated. When the
archive's members come in the layer's own order (sorted by path components, parents first — how a
reproducible ``tar --sort=name`` lays them out), the layer is written straight from the stream
instead: each member's header becomes the layer entry, its bytes go into the layer tar as they
are inflated, and missing parent directories are added as :func:`~._layers.complete_entries`
would add them. The layer's bytes are the same as through scratch files (tested).

Anything else — a member out of order, a duplicate, an unsafe path, a member type the layer
refuses, an unreadable stream — is :class:`NotStreamable`: the caller writes the layer the
general way, which reports the archive's problems exactly as before.
"""

from __future__ import annotations

import contextlib
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from ninfer_release.hashing import CHUNK, Digests
from ninfer_release.reproducible import DIR_MODE, FILE_MODE

from ._gunzip import GunzipStream, GzipError, is_gzip
from ._layers import (
    EXEC_MODE,
    HashingReader,
    LayerBlob,
    LayerEntry,
    Ordered,
    layer_path_problem,
    symlink_escapes,
    write_layer,
)
from ._recipe import LayerItem


class NotStreamable(Exception):
    """The archive cannot be written as a layer in one pass (see the module docstring)."""


def open_tar_stream(raw: BinaryIO, reader: HashingReader) -> tarfile.TarFile:
    """``raw`` (read through ``reader``, which hashes every byte) as a tar read from start to end:
    a gzip stream inflated by :class:`~._gunzip.GunzipStream` (zlib-ng), anything else by
    ``tarfile``'s ``r|*``.

    The gzip stream is opened in ``tarfile``'s seekable mode (``r:``): the stream seeks forward
    only, which is all that mode does between members read in order, and it spares ``r|``'s
    buffering (each byte read in 10 KiB pieces, joined and cut again: about 0.2 s of CPU on the
    benchmark's 192 MiB archive; issue 13). Going back raises, as ``r|`` would.
    """
    head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
    if is_gzip(head):
        return tarfile.open(fileobj=cast(BinaryIO, GunzipStream(cast(BinaryIO, reader))), mode="r:")
    return tarfile.open(fileobj=cast(BinaryIO, reader), mode="r|*")


class _MemberBytes:
    """The ``size`` bytes at inflated offset ``offset`` of ``stream``: one member's data, read
    straight from the inflater (not through ``tarfile``'s buffered file object, which copies each
    byte twice more). Reads return exactly what is asked for, up to what is left; a stream that
    ends first raises ``tarfile.ReadError``."""

    def __init__(self, stream: GunzipStream, offset: int, size: int) -> None:
        self._stream = stream
        self._offset = offset
        self._left = size

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        if self._stream.tell() != self._offset:
            self._stream.seek(self._offset)  # the first read: the data follows the header
        want = self._left if n < 0 else min(n, self._left)
        data = self._stream.read(want)
        if len(data) < want:
            raise tarfile.ReadError("unexpected end of data")
        self._offset += want
        self._left -= want
        return data

    def close(self) -> None:
        """Nothing to release (the stream belongs to the archive)."""

    def __enter__(self) -> _MemberBytes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class _Member:
    """The bytes of the archive member the stream is at (valid until the next member is read)."""

    tar: tarfile.TarFile
    member: tarfile.TarInfo
    size: int

    def open(self) -> BinaryIO:
        stream = self.tar.fileobj
        if isinstance(stream, GunzipStream):
            return cast(BinaryIO, _MemberBytes(stream, self.member.offset_data, self.size))
        found = self.tar.extractfile(self.member)
        assert found is not None  # a regular file
        return cast(BinaryIO, found)


def _member_entry(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str, item: LayerItem) -> LayerEntry:
    """The layer entry of one safe member (a directory, a symlink inside the archive or a file)."""
    path, origin = f"{item.dest}/{name}", f"{item.source}!{name}"
    if member.isdir():
        return LayerEntry(path=path, kind="dir", mode=DIR_MODE, origin=origin)
    if member.issym() and not member.linkname.startswith("/") and not symlink_escapes(name, member.linkname):
        return LayerEntry(path=path, kind="symlink", target=member.linkname, origin=origin)
    if member.isreg() and member.sparse is None:  # a sparse member's data is not its bytes
        mode = EXEC_MODE if member.mode & 0o111 else FILE_MODE
        stream = _Member(tar, member, member.size)
        return LayerEntry(path=path, kind="file", mode=mode, stream=stream, origin=origin)
    raise NotStreamable(f"{name}: a member the layer refuses")


def streamed_entries(tar: tarfile.TarFile, item: LayerItem) -> Iterator[LayerEntry]:
    """The entries of a layer holding only ``item``'s archive, in layer order, as ``tar`` is read.

    Raises:
        NotStreamable: a member is out of the layer's order (or a duplicate, or a file where a
            directory must be), unsafe, or of a type the layer refuses.
    """
    emitted_dirs: set[str] = set()
    last: list[str] = []
    for member in tar:
        name = member.name.removeprefix("./").rstrip("/")
        if name in ("", "."):
            continue
        if member.name.startswith("/") or layer_path_problem(member.name) is not None:
            raise NotStreamable(f"{member.name}: not a safe path")
        path = f"{item.dest}/{name}".split("/")
        for i in range(1, len(path)):
            parent = "/".join(path[:i])
            if parent in emitted_dirs:
                continue
            if path[:i] <= last:
                raise NotStreamable(f"{name}: parent {parent} comes too late")
            emitted_dirs.add(parent)
            last = path[:i]
            yield LayerEntry(path=parent, kind="dir", mode=DIR_MODE)
        if path <= last:
            raise NotStreamable(f"{name}: out of order")
        entry = _member_entry(tar, member, name, item)
        if entry.kind == "dir":
            emitted_dirs.add(entry.path)
        last = path
        yield entry


@dataclass(frozen=True, kw_only=True)
class StreamedLayer:
    """A layer written from one staged archive: the blob, and the archive's digests from the same read."""

    blob: LayerBlob
    archive: Digests


def write_archive_layer(archive: Path, item: LayerItem, dest: Path, *, epoch: int) -> StreamedLayer:
    """Write the layer of ``item`` (a staged archive at ``archive``) to ``dest`` in one pass.

    The archive is read once: the same read inflates it, feeds the layer and hashes the archive
    (SHA-256, SHA-1 on a helper thread).

    Raises:
        NotStreamable: see :func:`streamed_entries`, or the archive is not a readable tar stream.
        OSError: ``dest`` cannot be written.
    """
    ordered = Ordered()
    with contextlib.closing(ordered), archive.open("rb") as raw:
        reader = HashingReader(raw, ordered=ordered)
        try:
            with open_tar_stream(raw, reader) as tar:
                blob = write_layer(streamed_entries(tar, item), dest, epoch=epoch, in_order=True)
            while reader.read(CHUNK):  # the rest (end-of-archive padding, gzip trailer) is part of the bytes
                pass
        except (tarfile.TarError, GzipError, EOFError) as exc:
            raise NotStreamable(f"not a readable tar stream ({exc})") from None
        ordered.drain()
    sha256, sha1 = reader.hexdigests()
    return StreamedLayer(blob=blob, archive=Digests(size=reader.size, sha256=sha256, sha1=sha1))
