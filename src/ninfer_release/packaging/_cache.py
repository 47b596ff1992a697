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
re-verifies the entry. In a build (a zip being laid out) the stream file is opened once
(:meth:`DeflateCache.open_stream`: a concurrent eviction cannot pull it away; it must have the
record's length) and proven while the staged file is read (:class:`StreamProof`: one sequential
inflate whose output must be exactly the staged bytes, read as they are hashed against the key,
ending where the file ends), then copied file to file into the zip (:func:`copy_stream`); a stream
that fails is deleted and the member deflated, so a bad entry never reaches a set and the bytes
stay those of a build without the cache. The build's self-check then binds the member in the zip
to the proven stream (its stored bytes must have the SHA-256 the proof read): one inflate per hit,
overlapped with the staged read. A member that is not the proven stream (the cache file changed
between proof and copy) fails the self-check naming its key (:meth:`reject_key`), and the package
is built again without the cache (``build/_native.py``; :meth:`reject_key` ends the hits of this
cache: whoever changed one entry can change others before the rebuild reads them). Elsewhere
(:meth:`DeflateCache.lookup`) the stream is hard-linked into the caller's work dir and proven there
(no self-check follows on that path): its length and SHA-256 must be the record's and it must
inflate to exactly the key's bytes, else the entry is deleted and the member deflated as if there
were no cache. A hit is never stored again.

Signed entries (the trusted fast path of a warm rebuild): with a key (:meth:`DeflateCache.from_env`,
``$NINFER_DEFLATE_CACHE_KEY``, else ``$XDG_STATE_HOME/ninfer-release/deflate-cache.key``, else
``~/.local/state/ninfer-release/deflate-cache.key``: 32 random bytes made on first use, a regular
file of this user with no group or other permissions, kept *outside* the cache directory, so
that whoever can write the cache cannot sign for it: a key path under the cache root, as spelled
or resolved, is no key), the record of a stream that this build deflated and proved as it was
written (``packaging/_compress.py`` ``_Reinflate``: it inflated back to exactly the staged bytes;
the bytes stored must have its SHA-256) carries an HMAC-SHA256 of its fields (``mac``). A record
whose MAC verifies (:attr:`CacheEntry.signed`) is trusted for what it says about its stream: the
staged file is still read and its SHA-256 must be the key (its SHA-1 and CRC-32 are the record's,
which were computed from bytes of that SHA-256), the stream is copied without inflating it, and
the self-check still hashes the copied bytes, which must have the record's stream SHA-256 (else
the entry is deleted and the package built again without the cache). With a key, any other
record (another user's key, a field changed, written by an older version or by whoever writes
the cache) is a miss: the member is deflated and stored again, signed. It is not proven by an
inflate and used: an inflate proves that a stream gives the key's bytes, not that it is *this*
deflate of them, and another valid deflate (zlib level 1, say, whatever its record claims)
would change the set's bytes, and once signed every later set's
(``tests/test_attack_signed_cache.py``). Without a key (``off``, or none can be made or trusted)
every record is proven by an inflate on use, as above; whoever writes such a cache can then
choose the deflate of a member (the set's bytes, never its content).

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

Rendered documents (the unchanged rebuild's SBOMs, ``build/_documents.py``): with a key, the
cache also keeps each SBOM document a build rendered and validated, under the SHA-256 of
everything it was made from: ``<root>/documents-<kind>-v1/<inputs sha256>.{bin,json}`` (the
document and its record: kind, inputs SHA-256, size, SHA-256, the warnings its rendering logged,
and a MAC under its own domain, so a deflate record can never pass for a document record nor the
reverse). :meth:`DeflateCache.reuse_document` copies the bytes only for a record this key signed,
and only when they have the record's size and SHA-256 (read bounded: at most one byte more);
without a key nothing is stored or reused, since only rendering again could show that a document
is what the writer makes of its inputs. Documents count toward the same bound and are evicted
with the streams.

Location: ``$NINFER_DEFLATE_CACHE`` (a directory, or ``off``), else ``$NINFER_CACHE/deflate``, else
``$XDG_CACHE_HOME/ninfer-release/deflate``, else ``~/.cache/ninfer-release/deflate``; size bound
``$NINFER_DEFLATE_CACHE_MAX_MIB`` (default 2048 MiB).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections import deque
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
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
#: Bytes of the key that signs records (HMAC-SHA256); its file holds exactly these.
KEY_BYTES = 32
#: What a record's MAC is over, before its fields: no other use of the key can mean a record.
_MAC_DOMAIN = b"ninfer-release deflate-cache record v1\n"
#: What a rendered document's record MAC is over: never a deflate record's, nor the reverse.
_DOCUMENT_MAC_DOMAIN = b"ninfer-release document-cache record v1\n"
#: A document kind names its directory (``documents-<kind>-v1``).
_DOCUMENT_KIND = re.compile(r"^[a-z0-9]{1,16}$")
#: Warnings a document record may carry (its rendering's, repeated on reuse): at most this many.
MAX_DOCUMENT_NOTES = 64


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
class CachedDocument:
    """A reused rendered document: ``size`` bytes of SHA-256 ``sha256``, and the warnings its
    rendering logged (``notes``: logger name, level, message), to be logged again."""

    size: int
    sha256: str
    notes: tuple[tuple[str, int, str], ...]


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
    level: int
    chunk_size: int
    signed: bool = False  # its MAC verified with this user's key (see the module docstring)

    def record(self) -> dict[str, object]:
        """The record's fields (without its MAC), as :meth:`DeflateCache.store` writes them."""
        return _record(
            self.key,
            size=self.size,
            crc32=self.crc32,
            sha1=self.sha1,
            method=self.method,
            length=self.length,
            stream_sha256=self.stream_sha256,
            level=self.level,
            chunk_size=self.chunk_size,
        )

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
    """The cache at ``root`` (created on first store), holding at most ``max_bytes`` of streams.

    ``key_path``: the file of the key that signs records (made on first store when missing);
    ``None``: no record is signed or trusted, every use is proven by an inflate.
    """

    root: Path
    max_bytes: int
    key_path: Path | None = None
    _keys: dict[str, bytes | None] = field(default_factory=dict, compare=False, repr=False)
    #: The keys whose entry failed a self-check (:meth:`reject_key`): from then on no hits.
    _rejected: set[str] = field(default_factory=set, compare=False, repr=False)

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
        return cls(root=root, max_bytes=max(0, max_mib) << 20, key_path=_key_path(env))

    def _key(self, *, create: bool) -> bytes | None:
        """The signing key (read once; with ``create``, made when missing), or ``None``."""
        if self.key_path is None:
            return None
        if self._keys.get("key") is None and (create or "key" not in self._keys):
            # A key inside the cache is whoever writes the cache's to make (a restored CI cache's
            # files are this user's, mode kept): never read, made or trusted there.
            inside = _inside(self.key_path, self.root)
            self._keys["key"] = None if inside else (_make_key if create else read_key)(self.key_path)
        return self._keys["key"]

    def _dir(self, level: int, chunk_size: int) -> Path:
        engine = re.sub(r"[^A-Za-z0-9.]+", "-", DEFLATE_ENGINE).strip("-")
        return self.root / f"{engine}-l{level}-c{chunk_size}"

    def levels(self, chunk_size: int) -> list[int]:
        """The deflate levels (0-9) this cache holds an entry directory of for ``chunk_size``."""
        return [level for level in range(10) if self._dir(level, chunk_size).is_dir()]

    def find(self, sha256: str, *, size: int, level: int, chunk_size: int) -> CacheEntry | None:
        """The entry's record for content ``sha256`` of ``size`` bytes, unverified; ``None`` on a miss.

        Never raises: a missing, unreadable, oversized (> :data:`MAX_RECORD` bytes: read bounded) or
        malformed record is a miss, and so is one for another size or that names another key,
        engine, level or piece size (an entry copied from another directory: its stream inflates
        to the key but is another deflate, so the set's bytes would differ), a method other than 0
        or 8, or a stored stream whose length is not the size. With a key (made here when there is
        none yet) a record not signed with it is a miss too; without one, every record is
        returned unsigned (and proven on use).
        """
        if not is_sha256_hex(sha256) or self._rejected:
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
            entry = CacheEntry(
                key=sha256,
                where=where,
                length=fields["length"],
                method=fields["method"],
                size=size,
                crc32=fields["crc32"],
                sha1=record["sha1"],
                stream_sha256=record["stream_sha256"],
                level=level,
                chunk_size=chunk_size,
            )
            key = self._key(create=True)
            if key is None:
                return entry  # no key: proven by an inflate on use (module docstring)
            mac = record.get("mac")
            if isinstance(mac, str) and hmac.compare_digest(mac, _record_mac(key, entry.record())):
                return replace(entry, signed=True)
            return None  # not signed with this key: an inflate cannot tell another deflate from ours
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

    def open_stream(self, entry: CacheEntry) -> BinaryIO | None:
        """``entry``'s stream file, opened once, or ``None`` (gone, not a regular file, or not the
        record's length: then the entry is deleted).

        Opened once, so a concurrent eviction (an unlink) cannot pull it away between its proof
        (:class:`StreamProof`) and its copy into the zip (:func:`copy_stream`).
        """
        try:
            src = _open_regular(entry.stream)
        except OSError:
            return None
        try:
            if os.fstat(src.fileno()).st_size == entry.length:
                return src
        except OSError:
            pass
        src.close()
        self.reject(entry)
        return None

    def reject_key(self, sha256: str, *, level: int, chunk_size: int) -> None:
        """Delete the entry for content ``sha256`` (its member failed the build's self-check), and
        serve no more hits from this cache (:meth:`find` misses from now on).

        Whoever changed that entry can change any other between the self-check and the package's
        rebuild (a signed entry is copied unproven: only its stream file need be replaced), and
        the rebuild must not fail because of the cache (``build/_native.py``
        ``_build_self_checked``): it deflates every member, and stores them.
        """
        self._rejected.add(sha256)
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
        proven: str = "",
    ) -> None:
        """Add the stream at ``spool[offset:offset+length]`` for content ``sha256``; evict to the bound.

        ``proven``: the SHA-256 of a stream of this build's own deflate that was proven to inflate
        to that content (the build's re-inflate as it was written). With a key the record is
        signed, so later uses trust it without inflating it, and it is stored only when the bytes
        stored have that SHA-256 (without ``proven``: when they inflate to the key); with a key
        an unsigned record is never used (:meth:`find`).

        Best effort: a cache that cannot be written (full disk, read-only home) is skipped silently,
        it never fails a build.
        """
        if not is_sha256_hex(sha256) or length > self.max_bytes:
            return
        key = self._key(create=True)
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
                entry = CacheEntry(
                    key=sha256,
                    where=where,
                    length=length,
                    method=method,
                    size=size,
                    crc32=crc32,
                    sha1=sha1,
                    stream_sha256=digest.hexdigest(),
                    level=level,
                    chunk_size=chunk_size,
                )
                # Signed only as this build's own deflate, read back: the bytes proven as they were
                # written, or (no proof: a small member) bytes with the SHA-256 read that inflate
                # to the key; else not stored (with a key an unsigned record is never used).
                if key is not None and not (proven == entry.stream_sha256 if proven else _proven(tmp, entry)):
                    return
                tmp.replace(where / f"{sha256}.bin")
            finally:
                tmp.unlink(missing_ok=True)
            _write_record(where, sha256, entry.record(), key)  # commits the entry
            self.evict()
        except OSError:
            return

    def _document_dir(self, kind: str) -> Path:
        if not _DOCUMENT_KIND.match(kind):
            raise ValueError(f"document kind {kind!r}")
        return self.root / f"documents-{kind}-v1"

    def reuse_document(self, kind: str, inputs_sha256: str, into: Path) -> CachedDocument | None:
        """Write to ``into`` the document of ``kind`` this user's build rendered from inputs of
        SHA-256 ``inputs_sha256``, and return what its record says; ``None`` on a miss.

        Only a record signed with this user's key is used (without a key there are no document
        hits: nothing short of rendering again can show that a document is what the writer makes
        of those inputs), and only for the bytes it names: ``into`` gets exactly the record's
        size, and they must have its SHA-256, else ``into`` is removed and the entry deleted. Also
        a miss after :meth:`reject_key` (no more hits from this cache). Never raises for a
        missing, partial, oversized or corrupt entry: that is a miss.
        """
        if not is_sha256_hex(inputs_sha256) or self._rejected:
            return None
        key = self._key(create=False)
        where = self._document_dir(kind)
        if key is None:
            return None
        try:
            record = json.loads(_read_small(where / f"{inputs_sha256}.json", MAX_RECORD << 4))
            entry = _document_entry(record, kind=kind, inputs_sha256=inputs_sha256)
            mac = record.get("mac")
            if entry is None or not (
                isinstance(mac, str)
                and hmac.compare_digest(mac, _record_mac(key, record, _DOCUMENT_MAC_DOMAIN))
            ):
                return None
            with _open_regular(where / f"{inputs_sha256}.bin") as src, into.open("wb") as out:
                # At most one byte more than the record's size (bounded), and that byte is hashed
                # too: a longer or shorter file never has the record's SHA-256.
                _, sha256 = _copy_hashed(src, out, entry.size + 1)
            if sha256 != entry.sha256:
                into.unlink(missing_ok=True)
                self._remove(where, inputs_sha256)
                return None
        except (OSError, ValueError, KeyError, TypeError):
            into.unlink(missing_ok=True)
            return None
        with contextlib.suppress(OSError):
            os.utime(where / f"{inputs_sha256}.json")
        return entry

    def store_document(
        self, kind: str, inputs_sha256: str, path: Path, *, notes: tuple[tuple[str, int, str], ...] = ()
    ) -> None:
        """Keep the document at ``path`` (rendered and validated by this build from inputs of
        SHA-256 ``inputs_sha256``) for :meth:`reuse_document`, with the warnings its rendering
        logged (``notes``: logger name, level, message); evict to the bound.

        Only with a key (the record is signed); best effort like :meth:`store`: never fails a build.
        """
        if not is_sha256_hex(inputs_sha256) or len(notes) > MAX_DOCUMENT_NOTES:
            return
        key = self._key(create=True)
        if key is None:
            return
        where = self._document_dir(kind)
        try:
            if path.stat().st_size > self.max_bytes:
                return
            where.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=".tmp-", suffix=".bin", dir=where)
            tmp = Path(tmp_name)
            try:
                with os.fdopen(fd, "wb") as out, _open_regular(path) as src:
                    size, sha256 = _copy_hashed(src, out, self.max_bytes + 1)
                if size > self.max_bytes:
                    return
                tmp.replace(where / f"{inputs_sha256}.bin")
            finally:
                tmp.unlink(missing_ok=True)
            record = {
                "kind": kind,
                "inputs_sha256": inputs_sha256,
                "size": size,
                "sha256": sha256,
                "notes": [list(n) for n in notes],
            }
            body = dict(record, mac=_record_mac(key, record, _DOCUMENT_MAC_DOMAIN))
            _write_body(where, inputs_sha256, body)  # commits the entry
            self.evict()
        except OSError:
            return

    def evict(self) -> None:
        """Remove least recently used entries until the streams total at most ``max_bytes``.

        Debris older than :data:`DEBRIS_AGE` (temp files, streams without a record: a store or an
        eviction killed half-way; records without a stream) is removed first, so it never
        accumulates outside the bound. Only the real directories in ``root`` are walked, each by
        its descriptor: a symlink there (whoever writes the cache can point one at this user's
        files) is never followed.
        """
        with contextlib.ExitStack() as opened:
            dirs = _entry_dirs(self.root, opened)
            entries: list[tuple[float, int, int, str]] = []
            for fd in dirs:
                for name in _names(fd):
                    if name.endswith(".json"):
                        with contextlib.suppress(OSError):
                            stream = _lstat(fd, f"{name[:-5]}.bin")
                            entries.append((_lstat(fd, name).st_mtime, stream.st_size, fd, name[:-5]))
            for fd in dirs:
                _remove_debris(fd)
            total = sum(e[1] for e in entries)
            for _, size, fd, key in sorted(entries):
                if total <= self.max_bytes:
                    break
                for suffix in (".json", ".bin"):  # the record first: the entry stops existing at once
                    with contextlib.suppress(OSError):
                        os.unlink(f"{key}{suffix}", dir_fd=fd)
                total -= size

    @staticmethod
    def _remove(where: Path, key: str) -> None:
        for suffix in (".json", ".bin"):  # the record first: the entry stops existing at once
            with contextlib.suppress(OSError):
                (where / f"{key}{suffix}").unlink()


def _entry_dirs(root: Path, opened: contextlib.ExitStack) -> list[int]:
    """Descriptors of the directories in ``root`` (closed with ``opened``); a symlink, a file or
    anything that cannot be opened is skipped."""
    fds: list[int] = []
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for name in _names(root):
        with contextlib.suppress(OSError):
            fd = os.open(root / name, flags)  # O_NOFOLLOW: the last component, ``name``, only
            opened.callback(os.close, fd)
            fds.append(fd)
    return fds


def _names(where: Path | int) -> list[str]:
    """The names in the directory ``where`` (a path or a descriptor); none when it cannot be read."""
    try:
        return os.listdir(where)  # noqa: PTH208 (a descriptor too: a Path cannot list one)
    except OSError:
        return []


def _lstat(fd: int, name: str) -> os.stat_result:
    """``name`` in the directory ``fd``, not followed.

    Raises:
        OSError: it is gone.
    """
    return os.stat(name, dir_fd=fd, follow_symlinks=False)


def _remove_debris(fd: int) -> None:
    """Delete old temp files, old streams whose record is missing and old records whose stream
    is missing in the directory ``fd`` (see :meth:`DeflateCache.evict`).

    A record without a stream is left only by :meth:`DeflateCache.sign` rewriting a record that
    another build's eviction had just removed (a store writes the stream first, an eviction
    removes the record first); nothing else would ever remove it.
    """
    cutoff = time.time() - DEBRIS_AGE
    for name in _names(fd):
        with contextlib.suppress(OSError):
            debris = (
                name.startswith(".tmp-")
                or (name.endswith(".bin") and not _exists(fd, name[:-4] + ".json"))
                or (name.endswith(".json") and not _exists(fd, name[:-5] + ".bin"))
            )
            if debris and _lstat(fd, name).st_mtime < cutoff:
                os.unlink(name, dir_fd=fd)


def _exists(fd: int, name: str) -> bool:
    try:
        _lstat(fd, name)
    except FileNotFoundError:
        return False
    return True


def copy_stream(src: BinaryIO, out: BinaryIO, length: int) -> None:
    """Append the first ``length`` bytes of the stream file ``src`` at ``out``'s position, file to file.

    Raises:
        OSError: the copy failed; ``out`` is then left where it was.
    """
    out.flush()
    _copy_file(src, out, length)


#: Stream bytes read per step of a :class:`StreamProof`.
_PROOF_READ = 4 << 20
#: What a damaged stream or a failed read raises while a :class:`StreamProof` inflates it.
_PROOF_ERRORS: tuple[type[Exception], ...] = (OSError, *INFLATE_ERRORS)
#: Pieces a :class:`StreamProof` may hold before :meth:`~StreamProof.feed` waits (memory bound).
_PROOF_BACKLOG = 2


class StreamProof:
    """The proof of one cached stream, made while the staged bytes are read (issue 13).

    ``feed`` hands each next piece of the member's bytes (as read, in order) to ``worker``, a
    one-thread executor: there *one* sequential raw inflater (method 8; method 0: the bytes
    themselves) reads the stream file ``src`` onward from its start (``pread``: the file position is
    the caller's, who may copy from ``src`` meanwhile), and its output must equal the
    pieces byte for byte; the stream bytes read are SHA-256 hashed in order on ``hasher`` (another
    one-thread executor). :meth:`finish` then requires the deflate stream to end exactly at the
    record's length with no further output, and the stream's SHA-256 to be the record's. So the
    bytes read from ``src`` inflate to exactly the bytes fed (whose SHA-256 the caller checks
    against the key): the proof the self-check's inflate gave before, without a second inflate and
    without hashing the inflated output (a comparison is enough). At most :data:`_PROOF_BACKLOG`
    pieces wait, so memory stays bounded.
    """

    def __init__(
        self, entry: CacheEntry, src: BinaryIO, *, worker: ThreadPoolExecutor, hasher: ThreadPoolExecutor
    ) -> None:
        self.entry = entry
        self.src = src
        self.worker = worker
        self.hasher = hasher
        self.inflater = zlib.decompressobj(-15) if entry.method == 8 else None
        self.digest = hashlib.sha256()
        self.read = 0  # stream bytes read so far
        self.tail = b""  # read but not consumed by the inflater yet
        self.failed = False
        self.pending: deque[Future[None]] = deque()
        self.hashing: deque[Future[None]] = deque()

    def feed(self, piece: bytes) -> None:
        """Check ``piece`` next (on the worker); waits while :data:`_PROOF_BACKLOG` pieces wait."""
        while len(self.pending) >= _PROOF_BACKLOG:
            self.pending.popleft().result()
        self.pending.append(self.worker.submit(self._check, piece))

    def finish(self) -> str | None:
        """The stream's SHA-256 when it is proven (it inflated to exactly the bytes fed), else ``None``."""
        self.pending.append(self.worker.submit(self._end))
        self.wait()
        if self.failed:
            return None
        sha256 = self.digest.hexdigest()
        return sha256 if sha256 == self.entry.stream_sha256 else None

    def wait(self) -> None:
        """Wait for every check and hash given so far (also on failure: ``src`` must outlive them)."""
        while self.pending:
            self.pending.popleft().result()
        while self.hashing:
            self.hashing.popleft().result()

    def _next(self) -> bytes:
        """The next stream bytes (at most the record's length in all; empty at its end), hashed in order."""
        block = os.pread(self.src.fileno(), min(_PROOF_READ, self.entry.length - self.read), self.read)
        self.read += len(block)
        if block:
            self.hashing.append(self.hasher.submit(self.digest.update, block))
            while len(self.hashing) > _PROOF_BACKLOG:
                self.hashing.popleft().result()
        return block

    def _output(self, want: int) -> bytes:
        """The next at most ``want`` bytes the stream gives (empty: it gives no more)."""
        while True:
            if self.inflater is not None and self.inflater.eof:
                return b""
            data = self.tail or self._next()
            if self.inflater is None:  # stored: the stream is the bytes
                self.tail = data[want:]
                return data[:want]
            # With no input left the inflater may still hold output (a match cut by ``want``).
            out = self.inflater.decompress(data, want)
            self.tail = self.inflater.unconsumed_tail
            if out or not data:
                return out

    def _check(self, piece: bytes) -> None:
        if self.failed:
            return
        done = 0
        try:
            while done < len(piece):
                out = self._output(len(piece) - done)
                # bytes against bytes (a memcmp; a full slice is the piece itself, not a copy)
                if not out or out != piece[done : done + len(out)]:
                    self.failed = True
                    return
                done += len(out)
        except _PROOF_ERRORS:
            self.failed = True

    def _end(self) -> None:
        if self.failed:
            return
        try:
            extra = self._output(1)  # the stream must end here: no more output, nothing after it
            inflater = self.inflater
            ended = inflater is None or (inflater.eof and not inflater.unused_data and not self.tail)
            self.failed = bool(extra) or not ended or self.read != self.entry.length
        except _PROOF_ERRORS:
            self.failed = True


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


def _record(
    sha256: str,
    *,
    size: int,
    crc32: int,
    sha1: str,
    method: int,
    length: int,
    stream_sha256: str,
    level: int,
    chunk_size: int,
) -> dict[str, object]:
    """An entry's record: what its stream inflates to, the stream itself, and the cache's key."""
    return {
        "sha256": sha256,
        "size": size,
        "crc32": crc32,
        "sha1": sha1,
        "method": method,
        "length": length,
        "stream_sha256": stream_sha256,
        "engine": DEFLATE_ENGINE,
        "level": level,
        "chunk_size": chunk_size,
    }


def _record_mac(key: bytes, record: Mapping[str, object], domain: bytes = _MAC_DOMAIN) -> str:
    """HMAC-SHA256 (hex) with ``key`` of ``record``'s fields, canonical JSON after ``domain``
    (:data:`_MAC_DOMAIN` for a deflate record, :data:`_DOCUMENT_MAC_DOMAIN` for a document's)."""
    body = json.dumps({k: v for k, v in record.items() if k != "mac"}, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, domain + body.encode(), hashlib.sha256).hexdigest()


def _copy_hashed(src: BinaryIO, out: BinaryIO, limit: int) -> tuple[int, str]:
    """Copy at most ``limit`` bytes of ``src`` to ``out``; their count and SHA-256 (hex).

    Raises:
        OSError: a read or write failed.
    """
    digest = hashlib.sha256()
    done = 0
    while done < limit and (block := src.read(min(_READ, limit - done))):
        out.write(block)
        digest.update(block)
        done += len(block)
    return done, digest.hexdigest()


def _document_entry(record: object, *, kind: str, inputs_sha256: str) -> CachedDocument | None:
    """What a document record says, when it is well formed and names ``kind`` and ``inputs_sha256``."""
    if (
        not isinstance(record, dict)
        or record.get("kind") != kind
        or record.get("inputs_sha256") != inputs_sha256
    ):
        return None
    size, sha256, notes = record.get("size"), record.get("sha256"), record.get("notes")
    if type(size) is not int or size < 0 or not isinstance(sha256, str) or not is_sha256_hex(sha256):
        return None
    if not isinstance(notes, list) or len(notes) > MAX_DOCUMENT_NOTES:
        return None
    kept: list[tuple[str, int, str]] = []
    for note in notes:
        if not (isinstance(note, list) and len(note) == 3 and isinstance(note[0], str)):
            return None
        if type(note[1]) is not int or not isinstance(note[2], str):
            return None
        kept.append((note[0], note[1], note[2]))
    return CachedDocument(size=size, sha256=sha256, notes=tuple(kept))


def _write_record(where: Path, sha256: str, record: Mapping[str, object], key: bytes | None) -> None:
    """Write ``record`` (signed with ``key`` when given) as ``<sha256>.json`` by rename.

    Raises:
        OSError: it cannot be written.
    """
    body = dict(record)
    if key is not None:
        body["mac"] = _record_mac(key, record)
    _write_body(where, sha256, body)


def _write_body(where: Path, sha256: str, body: Mapping[str, object]) -> None:
    """Write the record ``body`` as ``<sha256>.json`` in ``where`` by rename.

    Raises:
        OSError: it cannot be written.
    """
    fd, rec_name = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=where)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as rec:
            rec.write(json.dumps(body, sort_keys=True) + "\n")
        Path(rec_name).replace(where / f"{sha256}.json")
    finally:
        Path(rec_name).unlink(missing_ok=True)


def _inside(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or under it, as spelled (made absolute) or with every
    symlink resolved (also when that cannot be told: a symlink loop)."""
    if Path(os.path.normpath(path.absolute())).is_relative_to(os.path.normpath(root.absolute())):
        return True
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return True


def _key_path(env: Mapping[str, str]) -> Path | None:
    """Where the environment keeps the signing key (see the module docstring); ``None``: unsigned."""
    given = env.get("NINFER_DEFLATE_CACHE_KEY", "")
    if given.lower() in ("off", "0", "no", "false"):
        return None
    if given:
        return Path(given)
    if env.get("XDG_STATE_HOME"):
        return Path(env["XDG_STATE_HOME"]) / "ninfer-release" / "deflate-cache.key"
    if env.get("HOME"):
        return Path(env["HOME"]) / ".local" / "state" / "ninfer-release" / "deflate-cache.key"
    return None


def read_key(path: Path) -> bytes | None:
    """The signing key in ``path``, or ``None`` when it is not one this user may trust.

    It must be a regular file (not followed through a symlink) owned by this user, with no group
    or other permissions, holding exactly :data:`KEY_BYTES` bytes. Never raises.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None
        if st.st_size != KEY_BYTES:
            return None
        data = os.read(fd, KEY_BYTES + 1)
        return data if len(data) == KEY_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _make_key(path: Path) -> bytes | None:
    """The key in ``path``, made first when there is none (random, mode 0600, by link: two builds
    making it at once agree on one). ``None`` when it cannot be made or is not trusted (:func:`read_key`)."""
    if (key := read_key(path)) is not None:
        return key
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp_name = tempfile.mkstemp(prefix=".tmp-key-", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(KEY_BYTES))
                f.flush()
                os.fsync(f.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(tmp_name, path)
        finally:
            Path(tmp_name).unlink(missing_ok=True)
    except OSError:
        return None
    return read_key(path)
