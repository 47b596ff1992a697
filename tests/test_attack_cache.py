"""Hostile deflate-cache entries (attack on issue 13's cache): every one gives the cache-off bytes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zlib as stdzlib
from pathlib import Path

import pytest

from ninfer_release.packaging import (
    DeflateCache,
    PlanEntry,
    ZipLayout,
    compress_members,
    finish_zip,
    write_zip,
)
from zip_support import stage_files

CHUNK = 64 << 10
EPOCH = 315532800
NAMES = ("bin/a.dll", "bin/b.dll", "bin/c.dll")


def _tree(tmp_path: Path) -> dict[str, str]:
    data = {
        "bin/a.dll": b"MZ" + b"cuda runtime bytes " * 20000,
        "bin/b.dll": b"MZ" + bytes(range(256)) * 900,
        "bin/c.dll": os.urandom(0) + hashlib.sha256(b"seed").digest() * 4000,
    }
    stage_files(tmp_path, data)
    return {name: hashlib.sha256(content).hexdigest() for name, content in data.items()}


def _build(
    tmp_path: Path, label: str, cache: DeflateCache | None, known: dict[str, str], *, layout: bool
) -> bytes:
    work = tmp_path / label
    work.mkdir()
    entries = [PlanEntry(name=n, source=tmp_path / "staged" / n, staged_path=n) for n in NAMES]
    if not layout:
        members = compress_members(entries, workdir=work, chunk_size=CHUNK, cache=cache, known_sha256=known)
        return write_zip(members, work / "p.zip", epoch=EPOCH).path.read_bytes()
    zl = ZipLayout.create(work)
    members = compress_members(
        entries, workdir=work, chunk_size=CHUNK, cache=cache, known_sha256=known, layout=zl
    )
    return finish_zip(zl, members, work / "p.zip", epoch=EPOCH).path.read_bytes()


@pytest.fixture
def known(tmp_path: Path) -> dict[str, str]:
    return _tree(tmp_path)


def _entry(tmp_path: Path, key: str) -> tuple[Path, Path]:
    (record,) = (tmp_path / "cache").glob(f"*/{key}.json")
    return record, record.with_suffix(".bin")


def _rewrite(record: Path, **fields: object) -> None:
    doc = json.loads(record.read_bytes())
    doc.update(fields)
    record.write_text(json.dumps(doc))


@pytest.mark.parametrize("layout", [True, False], ids=["layout", "spool"])
@pytest.mark.parametrize("field", ["level", "chunk_size", "engine", "sha256"])
def test_a_valid_stream_of_another_cache_dir_is_not_used(
    tmp_path: Path, known: dict[str, str], layout: bool, field: str
) -> None:
    """An entry copied from another engine/level/piece dir inflates to the key but is another
    deflate: its record says so, and it must not reach the set (the bytes would differ)."""
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _build(tmp_path, "plain", None, known, layout=layout)
    _build(tmp_path, "cold", cache, known, layout=layout)
    record, stream = _entry(tmp_path, known["bin/a.dll"])
    other = stdzlib.compressobj(1, stdzlib.DEFLATED, -15)
    foreign = other.compress((tmp_path / "staged/bin/a.dll").read_bytes()) + other.flush()
    assert foreign != stream.read_bytes()
    stream.write_bytes(foreign)
    other_value = {"level": 1, "chunk_size": 1 << 20, "engine": "zlib 1.2.13", "sha256": "0" * 64}[field]
    _rewrite(
        record, length=len(foreign), stream_sha256=hashlib.sha256(foreign).hexdigest(), **{field: other_value}
    )
    assert _build(tmp_path, "again", cache, known, layout=layout) == plain


@pytest.mark.parametrize("layout", [True, False], ids=["layout", "spool"])
@pytest.mark.parametrize(
    "damage",
    [
        *("truncated", "extended", "bitflip", "garbage-after-end"),
        *("method", "crc32", "sha1", "size", "length"),
        *("record-not-json", "record-array", "record-bool-size"),
    ],
)
def test_every_damaged_entry_gives_the_cache_off_bytes(
    tmp_path: Path, known: dict[str, str], layout: bool, damage: str
) -> None:
    from ninfer_release.packaging import SelfCheckError

    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _build(tmp_path, "plain", None, known, layout=layout)
    _build(tmp_path, "cold", cache, known, layout=layout)
    key = known["bin/a.dll"]
    record, stream = _entry(tmp_path, key)
    good = stream.read_bytes()
    doc = json.loads(record.read_bytes())
    if damage == "truncated":
        stream.write_bytes(good[:-3])
    elif damage == "extended":
        stream.write_bytes(good + b"\0\0\0")
    elif damage == "bitflip":
        stream.write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])
    elif damage == "garbage-after-end":  # record made consistent with the longer stream
        bad = good + b"trailing"
        stream.write_bytes(bad)
        _rewrite(record, length=len(bad), stream_sha256=hashlib.sha256(bad).hexdigest())
    elif damage in ("crc32", "size", "length"):
        _rewrite(record, **{damage: doc[damage] + 1})
    elif damage == "method":
        _rewrite(record, method=0)
    elif damage == "sha1":
        _rewrite(record, sha1="0" * 40)
    elif damage == "record-not-json":
        record.write_bytes(b"\xff\xfe not json \x00")
    elif damage == "record-array":
        record.write_text(json.dumps([doc]))
    elif damage == "record-bool-size":
        _rewrite(record, size=True)
    try:
        again = _build(tmp_path, "again", cache, known, layout=layout)
    except SelfCheckError as exc:  # the layout's proof: the build retries without the entry
        assert exc.stale == (key,)
        cache.reject_key(key, level=6, chunk_size=CHUNK)
        (tmp_path / "again").rename(tmp_path / "failed")
        again = _build(tmp_path, "again", cache, known, layout=layout)
    assert again == plain


@pytest.mark.parametrize("kind", ["sparse-2g", "dev-zero"])
def test_a_huge_record_is_read_bounded(tmp_path: Path, known: dict[str, str], kind: str) -> None:
    """A record is a few hundred bytes: a huge one (or an endless one) is a miss, read bounded."""
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    _build(tmp_path, "cold", cache, known, layout=True)
    record, _ = _entry(tmp_path, known["bin/a.dll"])
    record.unlink()
    if kind == "dev-zero":
        record.symlink_to("/dev/zero")
    else:
        with record.open("wb") as f:
            f.truncate(2 << 30)
    size = (tmp_path / "staged/bin/a.dll").stat().st_size
    code = (
        "import resource, sys; from pathlib import Path\n"
        "resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))\n"
        "from ninfer_release.packaging import DeflateCache\n"
        f"c = DeflateCache(root=Path({str(tmp_path / 'cache')!r}), max_bytes=1 << 30)\n"
        f"print(c.find({known['bin/a.dll']!r}, size={size}, level=6, chunk_size={CHUNK}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "None\n", "")


def test_a_stream_that_is_a_fifo_is_a_miss_not_a_hang(tmp_path: Path, known: dict[str, str]) -> None:
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _build(tmp_path, "plain", None, known, layout=True)
    _build(tmp_path, "cold", cache, known, layout=True)
    _, stream = _entry(tmp_path, known["bin/a.dll"])
    stream.unlink()
    os.mkfifo(stream)
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); from pathlib import Path\n"
        "import test_attack_cache as t\n"
        "from ninfer_release.packaging import DeflateCache\n"
        f"tmp = Path({str(tmp_path)!r}); c = DeflateCache(root=tmp / 'cache', max_bytes=1 << 30)\n"
        "sys.stdout.buffer.write(t._build(tmp, 'fifo', c, t._digests(tmp), layout=True))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == plain


@pytest.mark.parametrize("kind", ["directory", "symlink-elsewhere"])
def test_a_stream_that_is_not_a_regular_file_gives_the_cache_off_bytes(
    tmp_path: Path, known: dict[str, str], kind: str
) -> None:
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _build(tmp_path, "plain", None, known, layout=True)
    _build(tmp_path, "cold", cache, known, layout=True)
    _, stream = _entry(tmp_path, known["bin/a.dll"])
    good = stream.read_bytes()
    stream.unlink()
    if kind == "directory":
        stream.mkdir()
    else:
        (tmp_path / "elsewhere.bin").write_bytes(good)
        stream.symlink_to(tmp_path / "elsewhere.bin")
    assert _build(tmp_path, "again", cache, known, layout=True) == plain
    assert _build(tmp_path, "spool", cache, known, layout=False) == plain
    assert (tmp_path / "elsewhere.bin").read_bytes() == good if kind != "directory" else True


def test_orphans_and_leftover_temp_files_do_not_grow_the_cache_for_ever(
    tmp_path: Path, known: dict[str, str]
) -> None:
    """A store killed between its renames, or an eviction killed between its unlinks, leaves a
    stream without a record (or a temp file): eviction must count and remove those too."""
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    _build(tmp_path, "cold", cache, known, layout=True)
    where = next((tmp_path / "cache").iterdir())
    old = 1_000_000_000  # 2001: long past any store in flight
    for i in range(3):
        for name in (f"{i:064x}.bin", f".tmp-{i}.bin", f".tmp-{i}.json"):
            (where / name).write_bytes(bytes(50_000))
            os.utime(where / name, (old, old))
    small = DeflateCache(root=tmp_path / "cache", max_bytes=200_000)
    small.evict()
    left = sorted(p.name for p in where.iterdir())
    assert not [
        n for n in left if n.startswith(".tmp-") or (n.endswith(".bin") and n[:-4] + ".json" not in left)
    ]
    assert sum((where / n).stat().st_size for n in left if n.endswith(".bin")) <= 200_000


def _digests(tmp_path: Path) -> dict[str, str]:
    return {n: hashlib.sha256((tmp_path / "staged" / n).read_bytes()).hexdigest() for n in NAMES}


@pytest.mark.parametrize("when", ["after-find", "after-open"])
@pytest.mark.parametrize("layout", [True, False], ids=["layout", "spool"])
def test_an_eviction_racing_a_hit_gives_the_cache_off_bytes(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch, when: str, layout: bool
) -> None:
    from ninfer_release.packaging import _cache

    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _build(tmp_path, "plain", None, known, layout=layout)
    _build(tmp_path, "cold", cache, known, layout=layout)
    evicted: list[str] = []
    real_find, real_open = DeflateCache.find, _cache._open_regular

    def find(self: DeflateCache, sha256: str, **kw: int) -> object:
        entry = real_find(self, sha256, **kw)
        if entry is not None and when == "after-find":
            DeflateCache(root=self.root, max_bytes=0).evict()  # another build evicts everything
            evicted.append(sha256)
        return entry

    def open_regular(path: Path) -> object:
        f = real_open(path)
        if when == "after-open" and path.suffix == ".bin":
            DeflateCache(root=cache.root, max_bytes=0).evict()
            evicted.append(path.stem)
        return f

    monkeypatch.setattr(DeflateCache, "find", find)
    monkeypatch.setattr(_cache, "_open_regular", open_regular)
    assert _build(tmp_path, "raced", cache, known, layout=layout) == plain
    assert evicted


def test_two_processes_sharing_one_small_cache_always_give_the_cache_off_bytes(
    tmp_path: Path, known: dict[str, str]
) -> None:
    """Two builds at once on one cache too small for both keys: every store evicts the other's
    entry, so hits race evictions and stores race stores; every zip is the cache-off zip."""
    plain = _build(tmp_path, "plain", None, known, layout=True)
    sizing = DeflateCache(root=tmp_path / "sizes-cache", max_bytes=1 << 30)
    _build(tmp_path, "sizes", sizing, known, layout=True)
    sizes = sorted(p.stat().st_size for p in (tmp_path / "sizes-cache").glob("zlib*/*.bin"))
    assert len(sizes) == 3
    largest = sizes[-1]  # room for one entry at a time (two only if both small ones)
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); from pathlib import Path\n"
        "import test_attack_cache as t\n"
        "from ninfer_release.packaging import DeflateCache\n"
        f"tmp = Path({str(tmp_path)!r}); c = DeflateCache(root=tmp / 'cache', max_bytes={largest})\n"
        "for i in range(6):\n"
        "    for layout in (True, False):\n"
        "        label = f'{sys.argv[1]}-{i}-{layout}'\n"
        "        data = t._build(tmp, label, c, t._digests(tmp), layout=layout)\n"
        "        (tmp / label).with_suffix('.zip').write_bytes(data)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, who], stderr=subprocess.PIPE) for who in ("p", "q")
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    zips = sorted(tmp_path.glob("*.zip"))
    assert len(zips) == 24
    assert all(z.read_bytes() == plain for z in zips)
    streams = sum(p.stat().st_size for p in (tmp_path / "cache").glob("zlib*/*.bin"))
    assert streams <= largest


def test_the_plain_copy_fallback_copies_the_records_length_only(
    tmp_path: Path, known: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ``copy_file_range`` cannot be used (another file system), the stream is copied by
    hand: only the record's length, even if the stream grew after it was measured."""
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    plain = _build(tmp_path, "plain", None, known, layout=True)
    _build(tmp_path, "cold", cache, known, layout=True)
    _, stream = _entry(tmp_path, known["bin/a.dll"])

    def cross_device(src: int, dst: int, count: int, offset_src: int, offset_dst: int) -> int:
        if os.fstat(src).st_ino == stream.stat().st_ino:
            with stream.open("ab") as f:  # a writer appends meanwhile (never ours: we rename)
                f.write(b"appended after the length was checked" * 100)
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "copy_file_range", cross_device)
    assert _build(tmp_path, "again", cache, known, layout=True) == plain
