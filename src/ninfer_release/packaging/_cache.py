"""A persistent, content-addressed cache of members' deflate streams (issue 13, DESIGN §11).

Deflating is the build's dominant cost (zlib-ng level 6: ~80 MiB/s per core), and the same bytes
are deflated again and again: both native lanes ship the same CUDA and C runtime DLLs, and an
unchanged rebuild ships the same everything. A member's stream depends only on its bytes, the
deflate level, the piece size and the engine (:data:`~._zlib.DEFLATE_ENGINE`), so it is cached
under exactly that key: ``<root>/<engine>-l<level>-c<piece>/<sha256>.{bin,json}`` (the stream and
its record: size, CRC-32, SHA-1, method, stream length and stream SHA-256).

Only members whose SHA-256 is known *before* they are read are looked up (the lock's digests of
the redistributables): the staged file is still read once and hashed, and the cached stream is
used only when that hash equals the key (and its SHA-1, CRC-32 and size the record's). Every use
re-verifies the entry. In a build the stream is copied file to file into the zip being laid out
(:meth:`DeflateCache.copy_into`: opened once, so a concurrent eviction cannot pull it away; it
must have the record's length) and the proof is the build's self-check, which inflates every
member *where it was written, in the zip* and compares it with the SHA-256 of the staged bytes —
the key: a cached stream that does not inflate to its key is deleted (:meth:`reject_key`) and the
package is built again without it (``build/_native.py``), so a bad entry never reaches a set and
the bytes stay those of a build without the cache. One inflate serves as both the entry's check
and the zip's. Elsewhere (:meth:`DeflateCache.lookup`) the stream is hard-linked into the
caller's work dir and proven there (no self-check follows on that path): its length and SHA-256
must be the record's and it must inflate to exactly the key's bytes, else the entry is deleted and
the member deflated as if there were no cache. A hit is never stored again.

A record is read bounded (at most :data:`MAX_RECORD` bytes, regular files only: a FIFO, a device
or a 2 GB file in its place is a miss) and must name this very key, engine, level and piece size:
an entry copied from another directory inflates to the key but is another deflate, and would
change the set's bytes (``tests/test_attack_cache.py``).

Safe under concurrent builds: entries are written to unique temp names and renamed into place
(the record last: it commits the entry); two builds storing one key write identical bytes.
Bounded: after each store the oldest entries (by last use) are removed until the cache holds at
most ``max_bytes``, and the debris of a store or an eviction killed half-way (temp files, streams
without a record, older than :data:`DEBRIS_AGE`) is removed. Output bytes never depend on the
cache (``tests/test_deflate_cache.py``).

Location: ``$NINFER_DEFLATE_CACHE`` (a directory, or ``off``), else ``$NINFER_CACHE/deflate``, else
``$XDG_CACHE_HOME/ninfer-release/deflate``, else ``~/.cache/ninfer-release/deflate``; size bound
``$NINFER_DEFLATE_CACHE_MAX_MIB`` (default 2048 MiB).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ninfer_release.digests import is_sha256_hex
from ninfer_release.packaging._zlib import DEFLATE_ENGINE, INFLATE_ERRORS
from ninfer_release.packaging._zlib import engine as zlib

DEFAULT_MAX_MIB = 2048
_READ = 1 << 20
#: A record is about 400 bytes; a larger file in its place is not one (read at most this much).
MAX_RECORD = 4096
#: A temp file or a stream without a record older than this (seconds) is debris of a store or an
#: eviction that was killed between its renames/unlinks: :meth:`DeflateCache.evict` removes it.
DEBRIS_AGE = 3600


@dataclass(frozen=True, kw_only=True)
class CachedStream:
    """A verified cache hit, linked into the caller's work dir: ``path`` holds ``length`` stream bytes."""

    path: Path
    length: int
    method: int
    size: int
    crc32: int
    sha1: str


@dataclass(frozen=True, kw_only=True)
class CacheEntry:
    """What an entry's record says (not verified yet): the stream of content ``key`` in ``where``.

    ``length`` stream bytes with SHA-256 ``stream_sha256`` inflate to ``size`` bytes with
    ``crc32``/``sha1``; ``method`` 0 (stored) or 8 (deflated).
    """

    key: str
    where: Path
    length: int
    method: int
    size: int
    crc32: int
    sha1: str
    stream_sha256: str

    @property
    def stream(self) -> Path:
        """The entry's stream file (``<key>.bin``)."""
        return self.where / f"{self.key}.bin"

    def linked(self, path: Path) -> CachedStream:
        """The verified hit once the stream is (linked) at ``path``."""
        return CachedStream(
            path=path,
            length=self.length,
            method=self.method,
            size=self.size,
            crc32=self.crc32,
            sha1=self.sha1,
        )


@dataclass(frozen=True, kw_only=True)
class DeflateCache:
    """The cache at ``root`` (created on first store), holding at most ``max_bytes`` of streams."""

    root: Path
    max_bytes: int

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DeflateCache | None:
        """The cache the environment names (see the module docstring), or ``None`` when off/unset."""
        given = env.get("NINFER_DEFLATE_CACHE", "")
        if given.lower() in ("off", "0", "no", "false"):
            return None
        if given:
            root = Path(given)
        elif env.get("NINFER_CACHE"):
            root = Path(env["NINFER_CACHE"]) / "deflate"
        elif env.get("XDG_CACHE_HOME"):
            root = Path(env["XDG_CACHE_HOME"]) / "ninfer-release" / "deflate"
        elif env.get("HOME"):
            root = Path(env["HOME"]) / ".cache" / "ninfer-release" / "deflate"
        else:
            return None
        try:
            max_mib = int(env.get("NINFER_DEFLATE_CACHE_MAX_MIB", DEFAULT_MAX_MIB))
        except ValueError:
            max_mib = DEFAULT_MAX_MIB
        return cls(root=root, max_bytes=max(0, max_mib) << 20)

    def _dir(self, level: int, chunk_size: int) -> Path:
        engine = re.sub(r"[^A-Za-z0-9.]+", "-", DEFLATE_ENGINE).strip("-")
        return self.root / f"{engine}-l{level}-c{chunk_size}"

    def find(self, sha256: str, *, size: int, level: int, chunk_size: int) -> CacheEntry | None:
        """The entry's record for content ``sha256`` of ``size`` bytes, unverified; ``None`` on a miss.

        Never raises: a missing, unreadable, oversized (> :data:`MAX_RECORD` bytes: read bounded) or
        malformed record is a miss, and so is one for another size or that names another key,
        engine, level or piece size (an entry copied from another directory: its stream inflates
        to the key but is another deflate, so the set's bytes would differ), a method other than 0
        or 8, or a stored stream whose length is not the size.
        """
        if not is_sha256_hex(sha256):
            return None
        where = self._dir(level, chunk_size)
        try:
            record = json.loads(_read_small(where / f"{sha256}.json", MAX_RECORD))
            if not isinstance(record, dict) or type(record.get("size")) is not int or record["size"] != size:
                return None
            expected = {"sha256": sha256, "engine": DEFLATE_ENGINE, "level": level, "chunk_size": chunk_size}
            if any(record.get(k) != v or type(record.get(k)) is not type(v) for k, v in expected.items()):
                return None
            fields = {k: record[k] for k in ("length", "method", "crc32")}
            if any(type(v) is not int or v < 0 for v in fields.values()):
                return None
            if fields["method"] not in (0, 8) or (fields["method"] == 0 and fields["length"] != size):
                return None
            if not (isinstance(record["sha1"], str) and is_sha256_hex(record["stream_sha256"])):
                return None
            return CacheEntry(
                key=sha256,
                where=where,
                length=fields["length"],
                method=fields["method"],
                size=size,
                crc32=fields["crc32"],
                sha1=record["sha1"],
                stream_sha256=record["stream_sha256"],
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def lookup(
        self, sha256: str, *, size: int, level: int, chunk_size: int, workdir: Path
    ) -> CachedStream | None:
        """The verified stream for content ``sha256`` of ``size`` bytes, linked into ``workdir``.

        The linked stream is proven before it is returned (this path has no self-check after it):
        it must have the record's length and SHA-256 and inflate (method 8; method 0: be) to
        exactly ``size`` bytes with SHA-256 ``sha256``, ending where its deflate stream ends.
        Never raises for a missing, partial, corrupt or concurrently evicted entry: that is a miss
        (a corrupt entry is also deleted).
        """
        entry = self.find(sha256, size=size, level=level, chunk_size=chunk_size)
        if entry is None:
            return None
        try:
            fd, name = tempfile.mkstemp(prefix=".cached-", suffix=".bin", dir=workdir)
            os.close(fd)
            linked = Path(name)
            linked.unlink()
            try:
                os.link(entry.stream, linked, follow_symlinks=True)
            except OSError:
                with _open_regular(entry.stream) as src, linked.open("wb") as dst:
                    shutil.copyfileobj(src, dst, _READ)  # another file system: a private copy
        except OSError:
            return None
        if not _proven(linked, entry):
            linked.unlink(missing_ok=True)
            self.reject(entry)
            return None
        self.touch(entry)
        return entry.linked(linked)

    def copy_into(self, entry: CacheEntry, out: BinaryIO) -> bool:
        """Append ``entry``'s stream to ``out`` (a file) without reading it here; False if it is not there.

        The stream is opened once (a concurrent eviction, an unlink, cannot pull it away) and must
        have the record's length, else the entry is deleted and False returned; on False the caller
        drops whatever was appended.
        The bytes go file to file in the kernel (``copy_file_range``; a plain copy where that is
        not possible). They are not hashed here: the caller's self-check inflates them where they
        were written, in the zip, against the content digest that is the key, and rejects the
        entry on a mismatch (:meth:`reject_key`) — one proof, on the bytes actually shipped.
        """
        try:
            with _open_regular(entry.stream) as src:
                if os.fstat(src.fileno()).st_size != entry.length:
                    self.reject(entry)
                    return False
                out.flush()
                _copy_file(src, out, entry.length)
        except OSError:
            return False
        self.touch(entry)
        return True

    def reject_key(self, sha256: str, *, level: int, chunk_size: int) -> None:
        """Delete the entry for content ``sha256`` (its stream did not inflate to that content)."""
        if is_sha256_hex(sha256):
            self._remove(self._dir(level, chunk_size), sha256)

    def reject(self, entry: CacheEntry) -> None:
        """Delete a corrupt entry (record first)."""
        self._remove(entry.where, entry.key)

    @staticmethod
    def touch(entry: CacheEntry) -> None:
        """Mark ``entry`` used now (its record's mtime orders eviction)."""
        with contextlib.suppress(OSError):
            os.utime(entry.where / f"{entry.key}.json")

    def store(
        self,
        sha256: str,
        *,
        level: int,
        chunk_size: int,
        spool: Path,
        offset: int,
        length: int,
        method: int,
        size: int,
        crc32: int,
        sha1: str,
    ) -> None:
        """Add the stream at ``spool[offset:offset+length]`` for content ``sha256``; evict to the bound.

        Best effort: a cache that cannot be written (full disk, read-only home) is skipped silently,
        it never fails a build.
        """
        if not is_sha256_hex(sha256) or length > self.max_bytes:
            return
        where = self._dir(level, chunk_size)
        try:
            where.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            fd, tmp_name = tempfile.mkstemp(prefix=".tmp-", suffix=".bin", dir=where)
            tmp = Path(tmp_name)
            try:
                with os.fdopen(fd, "wb") as out, spool.open("rb") as src:
                    src.seek(offset)
                    left = length
                    while left and (block := src.read(min(_READ, left))):
                        out.write(block)
                        digest.update(block)
                        left -= len(block)
                record = {
                    "sha256": sha256,
                    "size": size,
                    "crc32": crc32,
                    "sha1": sha1,
                    "method": method,
                    "length": length,
                    "stream_sha256": digest.hexdigest(),
                    "engine": DEFLATE_ENGINE,
                    "level": level,
                    "chunk_size": chunk_size,
                }
                tmp.replace(where / f"{sha256}.bin")
            finally:
                tmp.unlink(missing_ok=True)
            fd, rec_name = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=where)
            with os.fdopen(fd, "w", encoding="utf-8") as rec:
                rec.write(json.dumps(record, sort_keys=True) + "\n")
            Path(rec_name).replace(where / f"{sha256}.json")  # commits the entry
            self.evict()
        except OSError:
            return

    def evict(self) -> None:
        """Remove least recently used entries until the streams total at most ``max_bytes``.

        Debris older than :data:`DEBRIS_AGE` (temp files, streams without a record: a store or an
        eviction killed half-way) is removed first, so it never accumulates outside the bound.
        """
        entries: list[tuple[float, int, Path, str]] = []
        for record in self.root.glob("*/*.json"):
            stream = record.with_suffix(".bin")
            try:
                entries.append((record.stat().st_mtime, stream.stat().st_size, record.parent, record.stem))
            except OSError:
                continue
        self._remove_debris()
        total = sum(e[1] for e in entries)
        for _, size, where, key in sorted(entries):
            if total <= self.max_bytes:
                break
            self._remove(where, key)
            total -= size

    def _remove_debris(self) -> None:
        """Delete old temp files and old streams whose record is missing (see :meth:`evict`)."""
        cutoff = time.time() - DEBRIS_AGE
        for path in self.root.glob("*/*"):
            debris = path.name.startswith(".tmp-") or (
                path.suffix == ".bin" and not path.with_suffix(".json").exists()
            )
            with contextlib.suppress(OSError):
                if debris and path.lstat().st_mtime < cutoff:
                    path.unlink()

    @staticmethod
    def _remove(where: Path, key: str) -> None:
        for suffix in (".json", ".bin"):  # the record first: the entry stops existing at once
            with contextlib.suppress(OSError):
                (where / f"{key}{suffix}").unlink()


def _copy_file(src: BinaryIO, out: BinaryIO, length: int) -> None:
    """Append ``length`` bytes of ``src`` (from its start) at ``out``'s position, file to file.

    Raises:
        OSError: the copy failed; ``out`` is then left where it was.
    """
    start = out.tell()
    done = 0
    try:
        if not hasattr(os, "copy_file_range"):
            raise OSError("copy_file_range is not available")
        while done < length:
            n = os.copy_file_range(src.fileno(), out.fileno(), length - done, done, start + done)
            if n == 0:
                raise OSError(f"the stream ended after {done} of {length} bytes")
            done += n
    except OSError:
        if done:
            raise
        src.seek(0)  # copy_file_range is not available here (another file system, an old kernel)
        _copy_exactly(src, out, length)
    out.seek(start + length)


def _copy_exactly(src: BinaryIO, out: BinaryIO, length: int) -> None:
    """Copy the next ``length`` bytes of ``src`` to ``out``, no more (the file may have grown).

    Raises:
        OSError: ``src`` ended before ``length`` bytes.
    """
    left = length
    while left:
        block = src.read(min(_READ, left))
        if not block:
            raise OSError(f"the stream ended {left} bytes short of {length}")
        out.write(block)
        left -= len(block)


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading, only if it is a regular file (never blocks on a FIFO).

    Raises:
        OSError: it cannot be opened, or it is not a regular file.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _read_small(path: Path, limit: int) -> bytes:
    """The whole of the regular file ``path``, at most ``limit`` bytes (read bounded).

    Raises:
        OSError: it cannot be read or is not a regular file.
        ValueError: it holds more than ``limit`` bytes.
    """
    with _open_regular(path) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: more than {limit} bytes")
    return data


def _proven(stream: Path, entry: CacheEntry) -> bool:
    """True when ``stream`` is ``entry``'s: its length and SHA-256, and it inflates to the key.

    Method 8: one raw deflate stream that ends exactly at the file's end and inflates to
    ``entry.size`` bytes of SHA-256 ``entry.key``; method 0: the bytes themselves are the key's.
    """
    digest = hashlib.sha256()
    content = hashlib.sha256()
    inflater = zlib.decompressobj(-15) if entry.method == 8 else None
    length = size = 0
    try:
        with _open_regular(stream) as f:
            while block := f.read(_READ):
                digest.update(block)
                length += len(block)
                if inflater is None:
                    out = block
                elif inflater.eof:
                    return False  # bytes after the end of the deflate stream
                else:
                    out = inflater.decompress(block, entry.size + 1 - size)
                    if inflater.unconsumed_tail:
                        return False  # inflates to more than the size
                size += len(out)
                content.update(out)
                if size > entry.size:
                    return False
    except OSError:
        return False
    except INFLATE_ERRORS:
        return False
    ended = inflater is None or (inflater.eof and not inflater.unused_data)
    return (ended, length, digest.hexdigest(), size, content.hexdigest()) == (
        True,
        entry.length,
        entry.stream_sha256,
        entry.size,
        entry.key,
    )
