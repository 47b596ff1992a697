"""A persistent, content-addressed cache of members' deflate streams (issue 13, DESIGN §11).

Deflating is the build's dominant cost (zlib-ng level 6: ~80 MiB/s per core), and the same bytes
are deflated again and again: both native lanes ship the same CUDA and C runtime DLLs, and an
unchanged rebuild ships the same everything. A member's stream depends only on its bytes, the
deflate level, the piece size and the engine (:data:`~._zlib.DEFLATE_ENGINE`), so it is cached
under exactly that key: ``<root>/<engine>-l<level>-c<piece>/<sha256>.{bin,json}`` (the stream and
its record: size, CRC-32, SHA-1, method, stream length and stream SHA-256).

Only members whose SHA-256 is known *before* they are read are looked up (the lock's digests of
the redistributables): the staged file is still read once and hashed, and the cached stream is
used only when that hash equals the key. Every use re-verifies the entry: the stream is
hard-linked into the build's private work dir (so a concurrent eviction cannot pull it away) and
its SHA-256 and length must equal the record, otherwise the entry is deleted and the member is
deflated as if there were no cache. The build's own final ``verify`` then inflates every member
against the SPDX digests of the bytes actually read, so a bad entry can never reach a set.

Safe under concurrent builds: entries are written to unique temp names and renamed into place
(the record last: it commits the entry); two builds storing one key write identical bytes.
Bounded: after each store the oldest entries (by last use) are removed until the cache holds at
most ``max_bytes``. Output bytes never depend on the cache (``tests/test_deflate_cache.py``).

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
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ninfer_release.digests import is_sha256_hex
from ninfer_release.hashing import sha256_file
from ninfer_release.packaging._zlib import DEFLATE_ENGINE

DEFAULT_MAX_MIB = 2048
_READ = 1 << 20


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

    def lookup(
        self, sha256: str, *, size: int, level: int, chunk_size: int, workdir: Path
    ) -> CachedStream | None:
        """The verified stream for content ``sha256`` of ``size`` bytes, linked into ``workdir``.

        Never raises for a missing, partial, corrupt or concurrently evicted entry: that is a miss
        (a corrupt entry is also deleted).
        """
        if not is_sha256_hex(sha256):
            return None
        where = self._dir(level, chunk_size)
        record_path, stream_path = where / f"{sha256}.json", where / f"{sha256}.bin"
        try:
            record = json.loads(record_path.read_bytes())
            if not isinstance(record, dict) or record.get("size") != size:
                return None
            fd, name = tempfile.mkstemp(prefix=".cached-", suffix=".bin", dir=workdir)
            os.close(fd)
            linked = Path(name)
            linked.unlink()
            try:
                os.link(stream_path, linked)
            except OSError:
                shutil.copyfile(stream_path, linked)  # another file system: a private copy
        except (OSError, ValueError):
            return None
        if sha256_file(linked) != record.get("stream_sha256") or linked.stat().st_size != record.get(
            "length"
        ):
            linked.unlink(missing_ok=True)
            self._remove(where, sha256)
            return None
        with contextlib.suppress(OSError):
            os.utime(record_path)  # last use, for eviction
        return CachedStream(
            path=linked,
            length=int(record["length"]),
            method=int(record["method"]),
            size=size,
            crc32=int(record["crc32"]),
            sha1=str(record["sha1"]),
        )

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
        """Remove least recently used entries until the streams total at most ``max_bytes``."""
        entries: list[tuple[float, int, Path, str]] = []
        for record in self.root.glob("*/*.json"):
            stream = record.with_suffix(".bin")
            try:
                entries.append((record.stat().st_mtime, stream.stat().st_size, record.parent, record.stem))
            except OSError:
                continue
        total = sum(e[1] for e in entries)
        for _, size, where, key in sorted(entries):
            if total <= self.max_bytes:
                break
            self._remove(where, key)
            total -= size

    @staticmethod
    def _remove(where: Path, key: str) -> None:
        for suffix in (".json", ".bin"):  # the record first: the entry stops existing at once
            with contextlib.suppress(OSError):
                (where / f"{key}{suffix}").unlink()
