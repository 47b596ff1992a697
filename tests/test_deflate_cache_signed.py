"""Signed deflate-cache records (issue 13): a warm rebuild trusts a record this user's key signed.

A record whose stream was proven (by the build that deflated it, or by one inflate on a later
use) carries an HMAC-SHA256 made with a key kept outside the cache; such an entry is used without
inflating it again, and the self-check still binds the zip's bytes to its stream SHA-256. Every
other record is proven by an inflate first (``packaging/_cache.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from ninfer_release.packaging import (
    DeflateCache,
    SelfCheckError,
    _cache,
)
from zip_support import count_deflates, count_proofs, laid_out, stage_files

CHUNK = 64 << 10
EPOCH = 315532800
NAMES = ("bin/a.dll", "bin/b.dll", "bin/engine.exe")


@pytest.fixture
def known(tmp_path: Path) -> dict[str, str]:
    data = {
        "bin/a.dll": b"MZ" + b"cuda runtime bytes " * 20000,  # several 64 KiB pieces: proven as written
        "bin/b.dll": b"MZ" + bytes(range(256)) * 900,
        "bin/engine.exe": b"MZ engine " * 5000,
    }
    stage_files(tmp_path, data)
    return {name: hashlib.sha256(data[name]).hexdigest() for name in ("bin/a.dll", "bin/b.dll")}


def _cache_at(tmp_path: Path, key: str | None = "key") -> DeflateCache:
    return DeflateCache(
        root=tmp_path / "cache", max_bytes=1 << 30, key_path=tmp_path / "state" / key if key else None
    )


def _laid_out(tmp_path: Path, label: str, cache: DeflateCache | None, known: dict[str, str]) -> bytes:
    """The zip as ``build lane`` builds it (``zip_support.laid_out``)."""
    return laid_out(tmp_path, label, cache, known, NAMES, chunk_size=CHUNK, epoch=EPOCH)


def _records(tmp_path: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_bytes()) for p in (tmp_path / "cache").glob("zlib*/*.json")}


def _entry(cache: DeflateCache, tmp_path: Path, key: str) -> _cache.CacheEntry | None:
    size = next(p for p in (tmp_path / "staged").rglob("*") if p.is_file() and _sha(p) == key).stat().st_size
    return cache.find(key, size=size, level=6, chunk_size=CHUNK)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_cold_build_signs_what_it_proved_and_a_warm_one_neither_inflates_nor_deflates_it(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _cache_at(tmp_path)
    plain = _laid_out(tmp_path, "plain", None, known)
    assert _laid_out(tmp_path, "cold", cache, known) == plain
    records = _records(tmp_path)
    assert set(records) == set(known.values()) and all("mac" in r for r in records.values())
    key = (tmp_path / "state" / "key").stat()
    assert key.st_size == _cache.KEY_BYTES and key.st_mode & 0o777 == 0o600
    proofs, deflates = count_proofs(monkeypatch), count_deflates(monkeypatch)
    assert _laid_out(tmp_path, "warm", cache, known) == plain
    assert proofs[0] == 0  # trusted by its signature: no inflate
    assert deflates[0] == 1  # engine.exe only (no known digest)


def test_a_signed_entry_whose_stream_changed_fails_the_self_check_and_is_rebuilt(
    tmp_path: Path, known: dict[str, str]
) -> None:
    cache = _cache_at(tmp_path)
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", cache, known)
    (stream,) = (tmp_path / "cache").glob(f"*/{known['bin/a.dll']}.bin")
    damaged = bytearray(stream.read_bytes())
    damaged[len(damaged) // 2 : len(damaged) // 2 + 32] = bytes(32)  # same length, other bytes
    stream.write_bytes(bytes(damaged))
    assert _entry(cache, tmp_path, known["bin/a.dll"]).signed  # type: ignore[union-attr]
    with pytest.raises(SelfCheckError, match=r"bin/a\.dll: .*proven.*deflate cache") as exc:
        _laid_out(tmp_path, "damaged", cache, known)
    assert list(exc.value.stale) == [known["bin/a.dll"]]
    for key in exc.value.stale:  # what build/_native.py does: delete it, build again
        cache.reject_key(key, level=6, chunk_size=CHUNK)
    assert _laid_out(tmp_path, "rebuilt", cache, known) == plain


def test_staged_bytes_that_are_not_the_keys_never_use_a_signed_entry(
    tmp_path: Path, known: dict[str, str]
) -> None:
    cache = _cache_at(tmp_path)
    _laid_out(tmp_path, "cold", cache, known)
    staged = tmp_path / "staged/bin/a.dll"
    staged.write_bytes(staged.read_bytes()[:-1] + b"!")  # same size, the lock still claims the old digest
    changed = _laid_out(tmp_path, "changed", cache, known)
    assert changed == _laid_out(tmp_path, "fresh", None, known)


@pytest.mark.parametrize("tamper", ["field", "other-key", "no-mac", "mac-not-text"])
def test_a_record_not_signed_by_this_key_is_not_used_but_stored_again_signed(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch, tamper: str
) -> None:
    cache = _cache_at(tmp_path)
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", cache, known)
    (path,) = (tmp_path / "cache").glob(f"*/{known['bin/a.dll']}.json")
    record = json.loads(path.read_bytes())
    if tamper == "field":  # a claim changed, the old MAC kept
        record["sha1"] = "0" * 40
    elif tamper == "other-key":  # signed by another user's key
        record["mac"] = _cache._record_mac(b"k" * _cache.KEY_BYTES, record)
    elif tamper == "no-mac":
        del record["mac"]
    else:
        record["mac"] = 7
    path.write_text(json.dumps(record))
    assert _entry(cache, tmp_path, known["bin/a.dll"]) is None  # a miss: an inflate proves no deflate ours
    proofs, deflates = count_proofs(monkeypatch), count_deflates(monkeypatch)
    assert _laid_out(tmp_path, "warm", cache, known) == plain
    assert proofs[0] == 0 and deflates[0] > 1  # a.dll deflated (b.dll's signature still holds)
    assert _entry(cache, tmp_path, known["bin/a.dll"]).signed  # type: ignore[union-attr]


def test_an_unsigned_entry_is_deflated_once_then_signed(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _laid_out(tmp_path, "plain", None, known)
    _laid_out(tmp_path, "cold", _cache_at(tmp_path, key=None), known)  # no key: nothing signed
    assert not any("mac" in r for r in _records(tmp_path).values())
    cache = _cache_at(tmp_path)
    proofs, deflates = count_proofs(monkeypatch), count_deflates(monkeypatch)
    assert _laid_out(tmp_path, "first", cache, known) == plain
    assert proofs[0] == 0 and all("mac" in r for r in _records(tmp_path).values())
    first = deflates[0]
    assert _laid_out(tmp_path, "second", _cache_at(tmp_path), known) == plain
    assert proofs[0] == 0 and deflates[0] - first == 1  # trusted: engine.exe (no known digest) only


def _write_key(path: Path, data: bytes, mode: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)
    return path


def test_only_a_private_regular_key_file_of_the_right_size_is_a_key(tmp_path: Path) -> None:
    good = _write_key(tmp_path / "good", b"k" * 32, 0o600)
    assert _cache.read_key(good) == b"k" * 32
    assert _cache.read_key(_write_key(tmp_path / "short", b"k" * 31, 0o600)) is None
    assert _cache.read_key(_write_key(tmp_path / "long", b"k" * 33, 0o600)) is None
    assert _cache.read_key(_write_key(tmp_path / "group", b"k" * 32, 0o640)) is None
    assert _cache.read_key(_write_key(tmp_path / "other", b"k" * 32, 0o604)) is None
    (tmp_path / "link").symlink_to(good)
    assert _cache.read_key(tmp_path / "link") is None
    (tmp_path / "dir").mkdir(mode=0o700)
    assert _cache.read_key(tmp_path / "dir") is None
    os.mkfifo(tmp_path / "fifo", 0o600)
    assert _cache.read_key(tmp_path / "fifo") is None  # never blocks
    assert _cache.read_key(tmp_path / "missing") is None


def test_a_key_that_is_not_private_signs_and_trusts_nothing(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_key(tmp_path / "state" / "key", b"k" * 32, 0o644)
    cache = _cache_at(tmp_path)
    plain = _laid_out(tmp_path, "plain", None, known)
    assert _laid_out(tmp_path, "cold", cache, known) == plain
    assert not any("mac" in r for r in _records(tmp_path).values())
    assert (tmp_path / "state" / "key").read_bytes() == b"k" * 32  # never replaced
    proofs = count_proofs(monkeypatch)
    assert _laid_out(tmp_path, "warm", _cache_at(tmp_path), known) == plain
    assert proofs[0] == 2


def test_builds_making_the_key_at_once_agree_on_one(tmp_path: Path) -> None:
    path = tmp_path / "state" / "sub" / "key"
    keys: list[bytes | None] = []
    threads = [threading.Thread(target=lambda: keys.append(_cache._make_key(path))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(keys) == 8 and len(set(keys)) == 1 and keys[0] is not None and len(keys[0]) == 32
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["key"]  # no temp files left


def test_a_key_that_cannot_be_made_leaves_the_build_unsigned(tmp_path: Path, known: dict[str, str]) -> None:
    (tmp_path / "state").write_bytes(b"a file where the key's directory should be")
    cache = _cache_at(tmp_path)
    plain = _laid_out(tmp_path, "plain", None, known)
    assert _laid_out(tmp_path, "cold", cache, known) == plain
    assert _laid_out(tmp_path, "warm", cache, known) == plain
    assert not any("mac" in r for r in _records(tmp_path).values())


def test_key_location_from_the_environment() -> None:
    def key_of(env: dict[str, str]) -> Path | None:
        cache = DeflateCache.from_env({"NINFER_DEFLATE_CACHE": "/c", **env})
        assert cache is not None
        return cache.key_path

    assert key_of({"NINFER_DEFLATE_CACHE_KEY": "/k/key", "HOME": "/h"}) == Path("/k/key")
    assert key_of({"NINFER_DEFLATE_CACHE_KEY": "off", "HOME": "/h"}) is None
    assert key_of({"XDG_STATE_HOME": "/s", "HOME": "/h"}) == Path("/s/ninfer-release/deflate-cache.key")
    assert key_of({"HOME": "/h"}) == Path("/h/.local/state/ninfer-release/deflate-cache.key")
    assert key_of({}) is None
