"""The persistent deflate cache (issue 13): same bytes with and without it, verified on use, bounded."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest

from flow_support import RELEASE, samples
from ninfer_release.packaging import (
    DeflateCache,
    PlanEntry,
    SelfCheckError,
    compress_members,
    write_zip,
)
from zip_support import count_deflates, laid_out, stage_files

CHUNK = 64 << 10
EPOCH = 315532800
NAMES = ("bin/a.dll", "bin/b.dll", "bin/engine.exe")


def _tree(tmp_path: Path) -> dict[str, bytes]:
    data = {
        "bin/a.dll": b"MZ" + b"cuda runtime bytes " * 20000,
        "bin/b.dll": b"MZ" + bytes(range(256)) * 900,
        "bin/engine.exe": b"MZ engine " * 5000,
    }
    stage_files(tmp_path, data)
    return data


def _build(tmp_path: Path, label: str, cache: DeflateCache | None, known: dict[str, str]) -> bytes:
    work = tmp_path / label
    work.mkdir()
    entries = [
        PlanEntry(name=name, source=tmp_path / "staged" / name, staged_path=name)
        for name in ("bin/a.dll", "bin/b.dll", "bin/engine.exe")
    ]
    members = compress_members(entries, workdir=work, chunk_size=CHUNK, cache=cache, known_sha256=known)
    return write_zip(members, work / "p.zip", epoch=EPOCH).path.read_bytes()


@pytest.fixture
def known(tmp_path: Path) -> dict[str, str]:
    data = _tree(tmp_path)
    return {name: hashlib.sha256(data[name]).hexdigest() for name in ("bin/a.dll", "bin/b.dll")}


def test_same_bytes_without_cache_cold_and_warm_and_no_deflate_when_warm(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _build(tmp_path, "plain", None, known)
    cold = _build(tmp_path, "cold", cache, known)
    assert len(list((tmp_path / "cache").glob("zlib*/*.json"))) == 2  # the two known members only
    calls = count_deflates(monkeypatch)
    warm = _build(tmp_path, "warm", cache, known)
    assert plain == cold == warm
    assert calls[0] == 1  # engine.exe (no known digest); a.dll and b.dll came from the cache


def test_a_corrupt_entry_is_detected_deleted_and_rebuilt(tmp_path: Path, known: dict[str, str]) -> None:
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _build(tmp_path, "plain", None, known)
    _build(tmp_path, "cold", cache, known)
    (stream,) = (tmp_path / "cache").glob(f"*/{known['bin/a.dll']}.bin")
    damaged = bytearray(stream.read_bytes())
    damaged[len(damaged) // 2] ^= 0x40
    stream.write_bytes(bytes(damaged))
    assert cache.lookup(known["bin/a.dll"], size=(tmp_path / "staged/bin/a.dll").stat().st_size,
                        level=6, chunk_size=CHUNK, workdir=tmp_path) is None  # fmt: skip
    assert not stream.exists()  # deleted on detection
    assert _build(tmp_path, "again", cache, known) == plain
    assert stream.exists()  # stored again from a fresh deflate


def test_bytes_that_are_not_the_keys_never_use_the_entry(tmp_path: Path, known: dict[str, str]) -> None:
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    _build(tmp_path, "cold", cache, known)
    # Same size, other bytes, but the lock still claims the old digest: the stream must not be used.
    original = (tmp_path / "staged/bin/a.dll").read_bytes()
    (tmp_path / "staged/bin/a.dll").write_bytes(original[:-1] + b"!")
    out = _build(tmp_path, "changed", cache, known)
    fresh = _build(tmp_path, "fresh", None, known)
    assert out == fresh


def test_the_cache_stays_within_its_bound(tmp_path: Path, known: dict[str, str]) -> None:
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    _build(tmp_path, "cold", cache, known)
    sizes = sorted(p.stat().st_size for p in (tmp_path / "cache").glob("zlib*/*.bin"))
    small = DeflateCache(root=tmp_path / "cache", max_bytes=sizes[-1])
    small.evict()
    left = [p.stat().st_size for p in (tmp_path / "cache").glob("zlib*/*.bin")]
    assert sum(left) <= sizes[-1] and len(left) == 1
    assert len(list((tmp_path / "cache").glob("zlib*/*.json"))) == 1  # no record without its stream


def test_concurrent_stores_and_lookups_of_one_key(tmp_path: Path, known: dict[str, str]) -> None:
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _build(tmp_path, "plain", None, known)
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            assert _build(tmp_path, f"t{i}", cache, known) == plain
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for record in (tmp_path / "cache").glob("zlib*/*.json"):
        doc = json.loads(record.read_bytes())
        assert hashlib.sha256(record.with_suffix(".bin").read_bytes()).hexdigest() == doc["stream_sha256"]


def test_location_from_the_environment(tmp_path: Path) -> None:
    assert DeflateCache.from_env({"NINFER_DEFLATE_CACHE": "off", "HOME": "/h"}) is None
    assert DeflateCache.from_env({}) is None
    assert DeflateCache.from_env({"NINFER_DEFLATE_CACHE": str(tmp_path)}).root == tmp_path  # type: ignore[union-attr]
    assert DeflateCache.from_env({"NINFER_CACHE": "/c", "HOME": "/h"}).root == Path("/c/deflate")  # type: ignore[union-attr]
    home = DeflateCache.from_env({"HOME": "/h", "NINFER_DEFLATE_CACHE_MAX_MIB": "5"})
    assert (
        home is not None
        and home.root == Path("/h/.cache/ninfer-release/deflate")
        and home.max_bytes == 5 << 20
    )


def test_build_release_deflates_shared_dlls_once_and_output_is_identical(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninfer_release.build import build_release

    src = samples(tmp_path_factory)
    cache = tmp_path / "cache"
    calls = count_deflates(monkeypatch)
    outs, deflated = {}, {}
    for label, setting in (("off", "off"), ("cold", str(cache)), ("warm", str(cache))):
        monkeypatch.setenv("NINFER_DEFLATE_CACHE", setting)
        outs[label] = tmp_path / label
        calls[0] = 0
        build_release(RELEASE, inputs=src, out=outs[label], env=dict(os.environ), offline=True)
        deflated[label] = calls[0]
    for lane in ("rtx4090", "rtx3090"):
        for name in sorted(p.name for p in (outs["off"] / lane).iterdir()):
            data = (outs["off"] / lane / name).read_bytes()
            assert (outs["cold"] / lane / name).read_bytes() == data, name
            assert (outs["warm"] / lane / name).read_bytes() == data, name
    locks = [
        json.loads((src / lane / "dependencies.lock.json").read_bytes())["redistributables"]
        for lane in ("rtx4090", "rtx3090")
    ]
    first = {r["sha256"] for r in locks[0]}
    shared = [r for r in locks[1] if r["sha256"] in first]
    assert shared  # both sample lanes ship the same CUDA and C runtime DLLs
    # Every sample redistributable is one 4 MiB piece: the second lane deflated none of the shared ones,
    # and an unchanged rebuild deflates no redistributable at all.
    assert deflated["off"] - deflated["cold"] == len(shared)
    assert deflated["off"] - deflated["warm"] == len(locks[0]) + len(locks[1])
    assert {p.stem for p in cache.glob("zlib*/*.json")} == first | {r["sha256"] for r in locks[1]}


def _laid_out(tmp_path: Path, label: str, cache: DeflateCache | None, known: dict[str, str]) -> bytes:
    """The zip as ``build lane`` builds it (``zip_support.laid_out``)."""
    return laid_out(tmp_path, label, cache, known, NAMES, chunk_size=CHUNK, epoch=EPOCH)


def test_a_warm_layout_build_copies_hits_once_and_stores_nothing_again(
    tmp_path: Path, known: dict[str, str]
) -> None:
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _laid_out(tmp_path, "plain", None, known)
    assert _laid_out(tmp_path, "cold", cache, known) == plain
    streams = {p: p.stat().st_ino for p in (tmp_path / "cache").glob("zlib*/*.bin")}
    assert _laid_out(tmp_path, "warm", cache, known) == plain
    # A hit is not written into the cache again: the same files (inodes), nothing new.
    assert {p: p.stat().st_ino for p in (tmp_path / "cache").glob("zlib*/*.bin")} == streams


@pytest.mark.parametrize("read", [None, 1000, 4096])
def test_a_corrupt_entry_met_while_laying_out_is_proven_bad_deleted_and_deflated(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch, read: int | None
) -> None:
    """In a layout the hit is proven while the staged bytes are read (one inflate compared with
    them): a stream of the right length but other bytes never reaches the zip."""
    from ninfer_release.packaging import _cache

    if read is not None:  # many small reads: the inflater's input and output cut anywhere
        monkeypatch.setattr(_cache, "_PROOF_READ", read)
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", cache, known)
    assert _laid_out(tmp_path, "warm", cache, known) == plain
    (stream,) = (tmp_path / "cache").glob(f"*/{known['bin/a.dll']}.bin")
    good = stream.read_bytes()
    damaged = bytearray(good)
    damaged[len(damaged) // 3 : len(damaged) // 3 + 64] = bytes(64)  # same length, other bytes
    stream.write_bytes(bytes(damaged))
    deflates = count_deflates(monkeypatch)
    assert _laid_out(tmp_path, "again", cache, known) == plain
    assert deflates[0] > 0
    assert stream.read_bytes() == good  # deleted, then stored again from the fresh deflate


def test_a_zip_member_that_is_not_the_proven_stream_fails_the_self_check_naming_its_key(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The self-check binds a hit in the zip to the stream that was proven, by its SHA-256: bytes
    that differ from it (a copy gone wrong, the cache file changed in between) fail it."""
    from ninfer_release.packaging import _cache, _compress

    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", cache, known)
    real_copy = _cache.copy_stream

    def damaging_copy(src: object, out: object, length: int) -> None:
        real_copy(src, out, length)  # type: ignore[arg-type]
        out.seek(-10, os.SEEK_CUR)  # type: ignore[attr-defined]
        out.write(bytes(10))  # type: ignore[attr-defined]

    monkeypatch.setattr(_compress, "copy_stream", damaging_copy)
    with pytest.raises(SelfCheckError, match=r"bin/a\.dll: .*proven.*deflate cache") as exc:
        _laid_out(tmp_path, "again", cache, known)
    assert set(exc.value.stale) <= set(known.values()) and known["bin/a.dll"] in exc.value.stale
    monkeypatch.setattr(_compress, "copy_stream", real_copy)
    for key in exc.value.stale:
        cache.reject_key(key, level=6, chunk_size=CHUNK)
    assert _laid_out(tmp_path, "rebuilt", cache, known) == plain


def test_an_entry_of_the_wrong_length_is_dropped_before_use(tmp_path: Path, known: dict[str, str]) -> None:
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", cache, known)
    (stream,) = (tmp_path / "cache").glob(f"*/{known['bin/a.dll']}.bin")
    good = stream.read_bytes()
    stream.write_bytes(good[:-5])
    assert _laid_out(tmp_path, "short", cache, known) == plain  # rolled back, deflated
    assert stream.read_bytes() == good


def test_a_build_with_a_corrupt_entry_rebuilds_without_it_and_gives_the_same_set(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninfer_release.build import build_lane

    src = samples(tmp_path_factory)
    cache = tmp_path / "cache"
    outs = {}
    for label, setting in (("off", "off"), ("cold", str(cache)), ("damaged", str(cache))):
        if label == "damaged":
            streams = sorted(cache.glob("zlib*/*.bin"), key=lambda p: p.stat().st_size)
            for victim in streams[-2:]:  # the two largest: flip a run of bytes, keep the length
                data = bytearray(victim.read_bytes())
                data[len(data) // 2 : len(data) // 2 + 64] = bytes(
                    b ^ 0xFF for b in data[len(data) // 2 : len(data) // 2 + 64]
                )
                victim.write_bytes(bytes(data))
        monkeypatch.setenv("NINFER_DEFLATE_CACHE", setting)
        build_lane(RELEASE, "rtx4090", inputs=src, out=tmp_path / label, env=dict(os.environ), offline=True)
        outs[label] = {p.name: p.read_bytes() for p in (tmp_path / label / "rtx4090").iterdir()}
    assert outs["cold"] == outs["off"] and outs["damaged"] == outs["off"]
    for record in cache.glob("zlib*/*.json"):  # the bad entries were replaced by fresh deflates
        doc = json.loads(record.read_bytes())
        assert hashlib.sha256(record.with_suffix(".bin").read_bytes()).hexdigest() == doc["stream_sha256"]


def test_find_reads_only_a_well_formed_record(tmp_path: Path, known: dict[str, str]) -> None:
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    _build(tmp_path, "cold", cache, known)
    size = (tmp_path / "staged/bin/a.dll").stat().st_size
    entry = cache.find(known["bin/a.dll"], size=size, level=6, chunk_size=CHUNK)
    assert entry is not None and entry.stream.is_file() and entry.size == size
    assert cache.find(known["bin/a.dll"], size=size + 1, level=6, chunk_size=CHUNK) is None
    (record,) = (tmp_path / "cache").glob(f"*/{known['bin/a.dll']}.json")
    record.write_text(json.dumps({"size": size, "length": "x"}))
    assert cache.find(known["bin/a.dll"], size=size, level=6, chunk_size=CHUNK) is None


def _proof_of(
    tmp_path: Path, stream: bytes, method: int, content: bytes, pieces: int, read: int
) -> str | None:
    from concurrent.futures import ThreadPoolExecutor

    from ninfer_release.packaging import _cache

    path = tmp_path / f"s-{method}-{pieces}-{read}-{len(stream)}.bin"
    path.write_bytes(stream)
    entry = _cache.CacheEntry(
        key=hashlib.sha256(content).hexdigest(),
        where=tmp_path,
        length=len(stream),
        method=method,
        size=len(content),
        crc32=0,
        sha1="",
        stream_sha256=hashlib.sha256(stream).hexdigest(),
        level=6,
        chunk_size=CHUNK,
    )
    step = max(1, -(-len(content) // pieces))
    with (
        ThreadPoolExecutor(1) as worker,
        ThreadPoolExecutor(1) as hasher,
        path.open("rb") as src,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setattr(_cache, "_PROOF_READ", read)
        proof = _cache.StreamProof(entry, src, worker=worker, hasher=hasher)
        for at in range(0, len(content), step):
            proof.feed(content[at : at + step])
        return proof.finish()


@pytest.mark.parametrize("read", [1, 7, 4096, 4 << 20])
@pytest.mark.parametrize("pieces", [1, 3, 10])
def test_a_stream_proof_accepts_exactly_the_stream_of_the_bytes_fed(
    tmp_path: Path, read: int, pieces: int
) -> None:
    """One sequential inflate compared with the pieces, whatever the read and piece sizes; the
    proof fails for other bytes, a truncated or extended stream, and bytes after its end."""
    import zlib as stdzlib

    content = b"MZ" + bytes(range(256)) * 300 + b"tail" * 999
    c = stdzlib.compressobj(6, stdzlib.DEFLATED, -15)
    stream = c.compress(content) + c.flush()
    good = hashlib.sha256(stream).hexdigest()
    assert _proof_of(tmp_path, stream, 8, content, pieces, read) == good
    assert _proof_of(tmp_path, content, 0, content, pieces, read) == hashlib.sha256(content).hexdigest()
    other = content[:-1] + b"!"
    assert _proof_of(tmp_path, stream, 8, other, pieces, read) is None
    assert _proof_of(tmp_path, content, 0, other, pieces, read) is None
    assert _proof_of(tmp_path, stream[:-2], 8, content, pieces, read) is None
    assert _proof_of(tmp_path, stream + b"x", 8, content, pieces, read) is None
    assert _proof_of(tmp_path, stream, 8, content[:-1], pieces, read) is None  # inflates to more
    assert _proof_of(tmp_path, stream, 8, content + b"x", pieces, read) is None  # to less
