"""Attack on the signed deflate-cache records (b1ff483, issue 13): whoever writes the cache
directory (a shared or restored CI cache, another user) must neither change a set's bytes nor fail
a build, and must never get a key this user trusts (``packaging/_cache.py``, module docstring).

Each test names the defence it checks; each fails without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zlib as stdzlib
from pathlib import Path
from typing import Any

import pytest

from flow_support import RELEASE, samples
from ninfer_release.packaging import (
    DeflateCache,
    _cache,
)
from zip_support import laid_out, stage_files

CHUNK = 64 << 10
EPOCH = 315532800
NAMES = ("bin/a.dll", "bin/b.dll", "bin/c.dll")


def _noise(n: int) -> bytes:
    """``n`` incompressible bytes, the same every run (a member that is stored, method 0)."""
    return b"".join(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(-(-n // 32)))[:n]


@pytest.fixture
def known(tmp_path: Path) -> dict[str, str]:
    data = {
        "bin/a.dll": b"MZ" + b"cuda runtime bytes " * 20000,  # several 64 KiB pieces
        "bin/b.dll": b"MZ" + bytes(range(256)) * 900,
        "bin/c.dll": _noise(300_000),  # stored
    }
    stage_files(tmp_path, data)
    return {name: hashlib.sha256(content).hexdigest() for name, content in data.items()}


def _cache_at(tmp_path: Path, *, max_bytes: int = 1 << 30, key: Path | None = None) -> DeflateCache:
    return DeflateCache(
        root=tmp_path / "cache", max_bytes=max_bytes, key_path=key or tmp_path / "state" / "key"
    )


def _laid_out(tmp_path: Path, label: str, cache: DeflateCache | None, known: dict[str, str]) -> bytes:
    """The zip as ``build lane`` builds it (``zip_support.laid_out``)."""
    return laid_out(tmp_path, label, cache, known, NAMES, chunk_size=CHUNK, epoch=EPOCH)


def _files(tmp_path: Path, key: str) -> tuple[Path, Path]:
    (record,) = (tmp_path / "cache").glob(f"*/{key}.json")
    return record, record.with_suffix(".bin")


def _flip(stream: Path) -> None:
    """Other bytes, the same length (what an attacker or a bad disk leaves)."""
    data = bytearray(stream.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 64] = bytes(b ^ 0xFF for b in data[mid : mid + 64])
    stream.write_bytes(bytes(data))


# --- (b) the cache must never fail a build ----------------------------------------------------------


def test_the_rebuild_after_a_bad_signed_entry_cannot_be_failed_by_the_cache(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signed entry whose stream was replaced (same length) fails the self-check; the entry is
    deleted and the package built again (``build/_native.py``). Whoever replaced it watches the
    cache directory: when the entry is deleted, they replace another signed entry's stream, one
    the first pass used fine. The rebuild must not trust the cache again (defence:
    ``DeflateCache.reject_key`` ends this cache's hits for the process); it failed the build
    (SelfCheckError, exit 5) when only the rejected key was dropped."""
    from ninfer_release.build import build_lane

    src = samples(tmp_path_factory)
    cache = tmp_path / "cache"
    monkeypatch.setenv("NINFER_DEFLATE_CACHE_KEY", str(tmp_path / "state" / "key"))

    def build(label: str, setting: str) -> dict[str, bytes]:
        monkeypatch.setenv("NINFER_DEFLATE_CACHE", setting)
        build_lane(RELEASE, "rtx4090", inputs=src, out=tmp_path / label, env=dict(os.environ), offline=True)
        return {p.name: p.read_bytes() for p in (tmp_path / label / "rtx4090").iterdir()}

    off = build("off", "off")
    assert build("cold", str(cache)) == off
    signed = [
        s for s in cache.glob("zlib*/*.bin") if "mac" in json.loads(s.with_suffix(".json").read_bytes())
    ]
    streams = sorted(signed, key=lambda p: p.stat().st_size)
    assert len(streams) >= 2  # the big members were proven as they were deflated: signed
    first, second = streams[-1], streams[-2]
    _flip(first)
    real = DeflateCache.reject_key
    attacked: list[str] = []

    def reject_key(self: DeflateCache, sha256: str, **kw: int) -> None:
        real(self, sha256, **kw)
        if not attacked:  # the attacker's inotify watch sees the record go
            _flip(second)
            attacked.append(sha256)

    monkeypatch.setattr(DeflateCache, "reject_key", reject_key)
    assert build("attacked", str(cache)) == off
    assert attacked == [first.stem]


# --- (c) the key: only someone who can read the user's state may sign ---------------------------------


@pytest.mark.parametrize("where", ["in-root", "in-entry-dir", "via-symlinked-dir"])
def test_a_key_inside_the_cache_directory_signs_and_trusts_nothing(
    tmp_path: Path, known: dict[str, str], where: str
) -> None:
    """A key file inside the cache directory is the attacker's to write: a restored CI cache's
    files are this user's, mode 0600 kept, so it passes every check of ``read_key``; with it they
    sign a record whose stream is other bytes of the same size, and the set ships those bytes
    under the lock's SHA-256 (SBOM and zip). Defence: ``DeflateCache._key`` refuses a key path
    that is (lexically or resolved) under the cache root."""
    root = tmp_path / "cache"
    if where == "in-root":
        key_path = root / "keys" / "deflate-cache.key"
    elif where == "in-entry-dir":
        key_path = DeflateCache(root=root, max_bytes=0)._dir(6, CHUNK) / "deflate-cache.key"
    else:
        (root / "state").mkdir(parents=True)
        (tmp_path / "state").symlink_to(root / "state")
        key_path = tmp_path / "state" / "deflate-cache.key"
    plain = _laid_out(tmp_path, "plain", None, known)
    assert _laid_out(tmp_path, "cold", _cache_at(tmp_path, key=key_path), known) == plain
    # The attacker restores the cache with a key of their own and a forged signed entry.
    forged_key = b"the attacker knows this key....."
    key_path.parent.mkdir(parents=True, exist_ok=True)
    key_path.unlink(missing_ok=True)
    key_path.write_bytes(forged_key)
    key_path.chmod(0o600)
    record, stream = _files(tmp_path, known["bin/a.dll"])
    size = (tmp_path / "staged/bin/a.dll").stat().st_size
    other = b"MZ" + b"evil payload bytes!" * 20000
    assert len(other) == size
    stream.write_bytes(other)
    fields = _cache._record(
        known["bin/a.dll"],
        size=size,
        crc32=stdzlib.crc32(other),
        sha1=hashlib.sha1(other, usedforsecurity=False).hexdigest(),
        method=0,
        length=size,
        stream_sha256=hashlib.sha256(other).hexdigest(),
        level=6,
        chunk_size=CHUNK,
    )
    record.write_text(json.dumps({**fields, "mac": _cache._record_mac(forged_key, fields)}))
    assert _laid_out(tmp_path, "attacked", _cache_at(tmp_path, key=key_path), known) == plain


# --- the cache must never reach outside its directory -------------------------------------------------


def test_eviction_never_deletes_outside_the_cache_through_a_symlinked_directory(
    tmp_path: Path, known: dict[str, str]
) -> None:
    """Whoever writes the cache directory adds ``<root>/x -> ~/models``: eviction's
    ``root.glob("*/*")`` followed it and deleted this user's files there (``*.bin`` without a
    ``*.json`` beside them and ``.tmp-*`` older than an hour as debris, ``*.json``/``*.bin`` pairs
    as entries over the bound). Defence: eviction walks only real directories (no symlink)."""
    cache = _cache_at(tmp_path)
    _laid_out(tmp_path, "cold", cache, known)
    outside = tmp_path / "home" / "models"
    outside.mkdir(parents=True)
    old = 1_000_000_000
    for name in ("weights.bin", "notes.json", "notes.bin", ".tmp-draft"):
        (outside / name).write_bytes(bytes(1000))
        os.utime(outside / name, (old, old))
    (tmp_path / "cache" / "x").symlink_to(outside)
    DeflateCache(root=tmp_path / "cache", max_bytes=0).evict()
    assert sorted(p.name for p in outside.iterdir()) == [
        ".tmp-draft",
        "notes.bin",
        "notes.json",
        "weights.bin",
    ]
    assert not list((tmp_path / "cache").glob("[!x]*/*"))  # the cache itself was evicted


def test_an_orphan_record_left_by_a_store_racing_an_eviction_does_not_stay_for_ever(
    tmp_path: Path, known: dict[str, str]
) -> None:
    """A store renames its stream into place; another build's eviction then removes the old record
    and that new stream; the store writes its record: a record without a stream, which eviction
    skipped (no stream to size) and debris removal kept (it removed streams without a record
    only), for ever. Defence: an old record without a stream is debris too (a store writes its
    stream first, an eviction removes the record first: no build in flight leaves one old)."""
    cache = _cache_at(tmp_path)
    _laid_out(tmp_path, "cold", cache, known)
    record, stream = _files(tmp_path, known["bin/a.dll"])
    size = (tmp_path / "staged/bin/a.dll").stat().st_size
    entry = cache.find(known["bin/a.dll"], size=size, level=6, chunk_size=CHUNK)
    assert entry is not None and entry.signed
    DeflateCache(root=tmp_path / "cache", max_bytes=0).evict()  # another build evicts all
    _cache._write_record(entry.where, entry.key, entry.record(), None)  # the store's record, late
    assert record.is_file() and not stream.exists()
    old = 1_000_000_000
    os.utime(record, (old, old))
    _cache_at(tmp_path).evict()
    assert not record.exists()


# --- what held (regression tests: each fails without the defence it names) ---------------------------


@pytest.mark.parametrize("field", ["length", "method"])
def test_a_record_retyped_gives_the_cache_off_bytes_when_proven_by_an_inflate(
    tmp_path: Path, known: dict[str, str], field: str
) -> None:
    """Without a key (``off``) every record is proven by an inflate on use; the attacker writes an
    integer field as a float (``8.0``): the build must neither fail nor change. Defence: ``find``
    takes exactly-int fields only (else StreamProof's ``pread`` got a float length, TypeError,
    and a ``method`` of 8.0 proved fine and reached the zip header: struct.error)."""
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", cache, known)
    record, _ = _files(tmp_path, known["bin/a.dll"])
    doc = json.loads(record.read_bytes())
    record.write_text(json.dumps({**doc, field: float(doc[field])}))
    assert (
        _laid_out(tmp_path, "again", DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30), known) == plain
    )


def test_a_key_that_names_a_fifo_is_no_key_and_never_blocks(tmp_path: Path, known: dict[str, str]) -> None:
    """``$NINFER_DEFLATE_CACHE_KEY`` naming a FIFO that nobody writes: the build runs unsigned
    (defence: ``read_key`` opens with O_NONBLOCK, then takes a regular file only; a plain open of
    the FIFO blocks for ever, ``_make_key`` included)."""
    plain = _laid_out(tmp_path, "plain", None, known)
    os.mkfifo(tmp_path / "fifo", 0o600)
    env = {
        "NINFER_DEFLATE_CACHE": str(tmp_path / "cache"),
        "NINFER_DEFLATE_CACHE_KEY": str(tmp_path / "fifo"),
    }
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); from pathlib import Path\n"
        "import test_attack_signed_cache as t\n"
        "from ninfer_release.packaging import DeflateCache\n"
        f"tmp = Path({str(tmp_path)!r}); c = DeflateCache.from_env({env!r})\n"
        "for label in ('cold', 'warm'):\n"
        "    sys.stdout.buffer.write(t._laid_out(tmp, label, c, t._digests(tmp)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == plain * 2
    assert not [r for r in (tmp_path / "cache").glob("zlib*/*.json") if "mac" in json.loads(r.read_bytes())]


def _digests(tmp_path: Path) -> dict[str, str]:
    return {n: hashlib.sha256((tmp_path / "staged" / n).read_bytes()).hexdigest() for n in NAMES}


def test_a_signed_stored_record_whose_length_is_not_its_size_is_a_miss(
    tmp_path: Path, known: dict[str, str]
) -> None:
    """A stored (method 0) record signed by this very key whose stream is one byte short: the
    member's header would claim its size as the stored length. Defence: ``find`` refuses a stored
    record whose length is not its size before its MAC is looked at (without it: SelfCheckError,
    a rebuild)."""
    cache = _cache_at(tmp_path)
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", cache, known)
    record, stream = _files(tmp_path, known["bin/c.dll"])
    doc = json.loads(record.read_bytes())
    assert doc["method"] == 0
    short = stream.read_bytes()[:-1]
    stream.write_bytes(short)
    fields = {k: v for k, v in doc.items() if k != "mac"}
    fields.update(length=len(short), stream_sha256=hashlib.sha256(short).hexdigest())
    key = _cache.read_key(tmp_path / "state" / "key")
    assert key is not None
    record.write_text(json.dumps({**fields, "mac": _cache._record_mac(key, fields)}))
    assert _laid_out(tmp_path, "again", _cache_at(tmp_path), known) == plain


@pytest.mark.parametrize("change", ["shrinks", "grows"])
def test_a_signed_stream_that_changes_size_after_it_was_opened_gives_the_cache_off_bytes(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """The signed entry's stream file is cut or appended to (the same file: another user's, in a
    shared cache) right after it was opened and measured. Defence: the copy takes exactly the
    record's length and fails on a short file (``_copy_file``), which rolls the member back."""
    cache = _cache_at(tmp_path)
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", cache, known)
    _, stream = _files(tmp_path, known["bin/a.dll"])
    real = DeflateCache.open_stream
    seen: list[bool] = []

    def open_stream(self: DeflateCache, entry: _cache.CacheEntry) -> Any:
        src = real(self, entry)
        if src is not None and entry.key == known["bin/a.dll"]:
            seen.append(entry.signed)
            with stream.open("r+b") as f:
                if change == "shrinks":
                    f.truncate(entry.length // 2)
                else:
                    f.seek(0, os.SEEK_END)
                    f.write(b"appended" * 1000)
        return src

    monkeypatch.setattr(DeflateCache, "open_stream", open_stream)
    assert _laid_out(tmp_path, "again", _cache_at(tmp_path), known) == plain
    assert seen == [True]


@pytest.mark.parametrize("when", ["after-find", "after-open"])
def test_an_eviction_racing_a_signed_hit_gives_the_cache_off_bytes(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Another build evicts everything right after this one found a signed record, or right after
    it opened its stream: the member is deflated, or copied from the stream still open.
    Defences: ``_take_signed`` takes a stream that is gone as a miss (``open_stream``'s None), and
    copies from the one descriptor ``open_stream`` gave (a copy that opened the stream again by
    its path failed the build: FileNotFoundError)."""
    cache = _cache_at(tmp_path)
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", cache, known)
    real_find, real_open = DeflateCache.find, DeflateCache.open_stream
    raced: list[bool] = []

    def find(self: DeflateCache, sha256: str, **kw: int) -> Any:
        entry = real_find(self, sha256, **kw)
        if entry is not None and when == "after-find":
            raced.append(entry.signed)
            DeflateCache(root=self.root, max_bytes=0).evict()
        return entry

    def open_stream(self: DeflateCache, entry: _cache.CacheEntry) -> Any:
        src = real_open(self, entry)
        if src is not None and when == "after-open":
            raced.append(entry.signed)
            DeflateCache(root=self.root, max_bytes=0).evict()
        return src

    monkeypatch.setattr(DeflateCache, "find", find)
    monkeypatch.setattr(DeflateCache, "open_stream", open_stream)
    assert _laid_out(tmp_path, "raced", _cache_at(tmp_path), known) == plain
    assert raced and raced[0]


def test_a_record_that_lies_about_its_deflate_is_not_used_nor_signed(
    tmp_path: Path, known: dict[str, str]
) -> None:
    """Whoever writes the cache replaces an entry's stream by another valid deflate of the same
    bytes (zlib level 1, one piece) and rewrites its record to match but for the level, piece size
    and engine, which it keeps. The record was unsigned, so it was proven by an inflate, which it
    passed (it inflates to exactly the key's bytes), and then *signed*: this and every later set
    shipped the attacker's stream, and their bytes were not the cache-off bytes. An inflate
    cannot tell our deflate from another one. Defence: with a key, a record not signed with it is
    a miss (``find``), and only a stream this build deflated itself is signed (``store``; the
    proof's ``sign`` is gone)."""
    cache = _cache_at(tmp_path)
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", cache, known)
    record, stream = _files(tmp_path, known["bin/a.dll"])
    other = stdzlib.compressobj(1, stdzlib.DEFLATED, -15)
    foreign = other.compress((tmp_path / "staged/bin/a.dll").read_bytes()) + other.flush()
    assert foreign != stream.read_bytes()
    stream.write_bytes(foreign)
    doc = {k: v for k, v in json.loads(record.read_bytes()).items() if k != "mac"}
    doc.update(length=len(foreign), stream_sha256=hashlib.sha256(foreign).hexdigest())
    record.write_text(json.dumps(doc))
    assert _laid_out(tmp_path, "again", _cache_at(tmp_path), known) == plain
    assert _laid_out(tmp_path, "warm", _cache_at(tmp_path), known) == plain
    assert stream.read_bytes() != foreign and "mac" in json.loads(record.read_bytes())  # stored again


@pytest.mark.parametrize("proven", ["", "other"])
def test_with_a_key_a_stream_read_back_wrong_is_neither_stored_nor_signed(
    tmp_path: Path, known: dict[str, str], proven: str
) -> None:
    """``store`` signs a stream as this build's own deflate: the spool's bytes read back must be
    the stream proven as written (``proven``), or without a proof inflate to the key. Here the
    bytes read back are damaged (the disk, a bug): no entry at all (with a key an unsigned record
    is never used), else a signed wrong stream had failed every later build's self-check."""
    data = (tmp_path / "staged/bin/b.dll").read_bytes()
    good = stdzlib.compressobj(6, stdzlib.DEFLATED, -15)
    stream = bytearray(good.compress(data) + good.flush())
    stream[len(stream) // 2] ^= 0xFF
    spool = tmp_path / "spool"
    spool.write_bytes(b"header" + bytes(stream))
    cache = _cache_at(tmp_path)
    cache.store(
        known["bin/b.dll"],
        level=6,
        chunk_size=CHUNK,
        spool=spool,
        offset=6,
        length=len(stream),
        method=8,
        size=len(data),
        crc32=stdzlib.crc32(data),
        sha1=hashlib.sha1(data, usedforsecurity=False).hexdigest(),
        proven=hashlib.sha256(b"what was written").hexdigest() if proven else "",
    )
    assert not list((tmp_path / "cache").glob("*/*"))
