"""Hash-ahead (issue 13): a warm rebuild's big staged files hashed during start-up, trusted only
while the file is the one that was hashed (``packaging/_ahead.py``)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from flow_support import RELEASE, cli, ok, samples
from ninfer_release.packaging import _ahead
from ninfer_release.packaging._ahead import HashAhead


def _settled(path: Path) -> HashAhead:
    """A hash-ahead of ``path`` whose helper is done with it (it ends after its last file)."""
    ahead = HashAhead([os.path.realpath(path)])
    ahead._thread.join(timeout=60)
    assert not ahead._thread.is_alive()
    return ahead


def _hashed(tmp_path: Path, data: bytes = b"x" * 300_000) -> tuple[Path, HashAhead]:
    path = tmp_path / "big.dll"
    path.write_bytes(data)
    return path, _settled(path)


def test_an_unchanged_file_is_claimed_once_with_its_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ahead, "RACY_NS", 0)
    data = os.urandom(300_000)
    path, ahead = _hashed(tmp_path, data)
    assert ahead.claim(str(path)) == (hashlib.sha256(data).hexdigest(), len(data))
    assert ahead.claim(str(path)) is None  # claimed once
    assert HashAhead([]).claim(str(path)) is None  # not given
    ahead.stop()


def _rewrite_same_bytes(path: Path) -> None:
    path.write_bytes(path.read_bytes())


def _other_bytes_same_size_and_mtime(path: Path) -> None:
    st = path.stat()
    time.sleep(0.02)  # more than one clock tick: the ctime moves
    path.write_bytes(b"y" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back; the ctime cannot be


def _replaced(path: Path) -> None:
    copy = path.with_suffix(".new")
    shutil.copy2(path, copy)  # same bytes and mtime, another inode
    copy.replace(path)


def _appended(path: Path) -> None:
    with path.open("ab") as f:
        f.write(b"!")


def _removed(path: Path) -> None:
    path.unlink()


@pytest.mark.parametrize(
    "change", [_rewrite_same_bytes, _other_bytes_same_size_and_mtime, _replaced, _appended, _removed]
)
def test_a_file_changed_after_its_hash_is_left_to_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: object
) -> None:
    monkeypatch.setattr(_ahead, "RACY_NS", 0)
    path, ahead = _hashed(tmp_path)
    change(path)  # type: ignore[operator]
    assert ahead.claim(str(path)) is None
    ahead.stop()


def test_a_file_changed_just_before_its_hash_is_not_trusted_by_its_times(tmp_path: Path) -> None:
    path = tmp_path / "fresh.dll"
    path.write_bytes(b"z" * 300_000)  # staged now: within the racy window
    ahead = _settled(path)
    assert ahead.claim(str(path)) is None
    ahead.stop()


def test_a_file_not_started_is_left_to_the_build_and_never_read_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ahead, "RACY_NS", 0)
    first, second = tmp_path / "a.dll", tmp_path / "b.dll"
    for p in (first, second):
        p.write_bytes(b"q" * 100_000)
    read: list[str] = []
    real = _ahead._hash_file
    gate = threading.Event()

    def slow(path: str, stopped: object) -> object:
        read.append(path)
        gate.wait(30)
        return real(path, stopped)  # type: ignore[arg-type]

    monkeypatch.setattr(_ahead, "_hash_file", slow)
    ahead = HashAhead([os.path.realpath(first), os.path.realpath(second)])
    assert ahead.claim(str(second)) is None  # still pending behind the first: the build reads it
    gate.set()
    ahead._thread.join(timeout=60)
    assert read == [os.path.realpath(first)]  # the claimed file was not read ahead as well
    assert ahead.claim(str(first)) is not None
    ahead.stop()


def _gated_readv(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """``os.readv`` that signals its first call (``started``) and holds it until ``release``."""
    started, release = threading.Event(), threading.Event()
    real = os.readv

    def gated(fd: int, buffers: list[bytearray]) -> int:
        started.set()
        release.wait(30)
        return real(fd, buffers)

    monkeypatch.setattr(os, "readv", gated)
    return started, release


def test_stop_ends_a_read_in_flight_without_a_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ahead, "RACY_NS", 0)
    monkeypatch.setattr(_ahead, "_STEP", 4096)
    path = tmp_path / "big.dll"
    path.write_bytes(b"w" * (4096 * 64))
    started, release = _gated_readv(monkeypatch)
    ahead = HashAhead([os.path.realpath(path)])
    assert started.wait(30)
    stopper = threading.Thread(target=ahead.stop)
    stopper.start()
    while not ahead._stopped.is_set():
        time.sleep(0.001)
    release.set()  # the read in flight returns; the next step sees the stop
    stopper.join(30)
    assert not ahead._thread.is_alive()
    assert ahead.claim(str(path)) is None


def test_a_file_changed_just_before_a_slow_read_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The racy window counts from the start of the read: a read that takes longer than the window
    must not make a file written just before it look old."""
    monkeypatch.setattr(_ahead, "RACY_NS", 300_000_000)
    path = tmp_path / "fresh.dll"
    path.write_bytes(b"r" * 100_000)
    started, release = _gated_readv(monkeypatch)
    ahead = HashAhead([os.path.realpath(path)])
    started.wait(1)  # never called when the file is refused before its read
    time.sleep(0.5)  # past the window, measured from the file's change
    release.set()
    ahead._thread.join(timeout=30)
    assert ahead.claim(str(path)) is None
    ahead.stop()


@pytest.mark.parametrize("field", ["device", "inode", "mode", "size", "mtime_ns", "ctime_ns"])
def test_every_field_of_the_identity_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    monkeypatch.setattr(_ahead, "RACY_NS", 0)
    path, ahead = _hashed(tmp_path)
    real = _ahead._identity_now

    def moved(p: str) -> object:
        now = real(p)
        assert now is not None
        return dataclasses.replace(now, **{field: getattr(now, field) + 1})

    monkeypatch.setattr(_ahead, "_identity_now", moved)
    assert ahead.claim(str(path)) is None
    ahead.stop()


def test_a_fifo_in_the_files_place_neither_hangs_nor_is_claimed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ahead, "RACY_NS", 0)
    fifo = tmp_path / "swapped.dll"
    os.mkfifo(fifo)  # no writer: a blocking open would wait forever
    ahead = _settled(fifo)
    assert ahead.claim(str(fifo)) is None
    ahead.stop()


def test_an_error_inside_the_helper_is_a_miss_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ahead, "RACY_NS", 0)
    path = tmp_path / "big.dll"
    path.write_bytes(b"m" * 1000)

    def broken(path: str, stopped: object) -> object:
        raise MemoryError("no 16 MiB buffer")

    monkeypatch.setattr(_ahead, "_hash_file", broken)
    ahead = _settled(path)  # pytest turns a thread's traceback into a failure
    assert ahead.claim(str(path)) is None
    ahead.stop()


# --- through the CLI ------------------------------------------------------------------------------


def _lane_tree(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A private copy of the sample staged tree, every redistributable hashed ahead: the samples are
    small (``AHEAD_MIN``) and just copied (``RACY_NS``: a test cannot wait for its files to age)."""
    src = tmp_path / "staged"
    shutil.copytree(samples(tmp_path_factory), src)
    monkeypatch.setattr(_ahead, "AHEAD_MIN", 1)
    monkeypatch.setattr(_ahead, "RACY_NS", 0)
    return src


def _claims(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    seen: list[tuple[str, bool]] = []
    real = HashAhead.claim

    def spy(self: HashAhead, path: str) -> tuple[str, int] | None:
        got = real(self, path)
        seen.append((Path(path).name, got is not None))
        return got

    monkeypatch.setattr(HashAhead, "claim", spy)
    return seen


def _build(src: Path, out: Path, cache: str) -> dict[str, bytes]:
    ok(cli("build", "lane", "rtx4090", "--release", RELEASE, "--inputs", src, "--out", out, "--offline",
           env={"NINFER_DEFLATE_CACHE": cache}))  # fmt: skip
    return {p.name: p.read_bytes() for p in sorted((out / "rtx4090").iterdir())}


def test_a_warm_rebuild_claims_its_redistributables_and_writes_the_same_set(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _lane_tree(tmp_path_factory, tmp_path, monkeypatch)
    claims = _claims(monkeypatch)
    cache = str(tmp_path / "cache")
    off = _build(src, tmp_path / "off", "off")
    assert _build(src, tmp_path / "cold", cache) == off
    assert claims == []  # a cold build has no signed record: nothing is read ahead
    assert _build(src, tmp_path / "warm", cache) == off
    lock = (src / "rtx4090" / "dependencies.lock.json").read_text()
    assert claims and all(hit for _, hit in claims)
    assert {name for name, _ in claims} == {
        Path(p).name for p in (src / "rtx4090" / "bin").iterdir() if p.name in lock
    }
    assert _ahead.current() is None  # stopped with the command


def test_a_staged_file_changed_after_its_hash_is_read_by_the_build(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other bytes of the same size put in after the hash-ahead read the file: the build sees them
    (and refuses them as a build without the hash-ahead does), never the digest read ahead."""
    src = _lane_tree(tmp_path_factory, tmp_path, monkeypatch)
    cache = str(tmp_path / "cache")
    _build(src, tmp_path / "cold", cache)
    victim = src / "rtx4090" / "bin" / "cudart64_13.dll"
    original = victim.read_bytes()
    real = HashAhead.claim
    claims = []

    def tamper_first(self: HashAhead, path: str) -> tuple[str, int] | None:
        if Path(path).name == victim.name:
            self._thread.join(timeout=60)  # the hash-ahead read the original bytes
            st = victim.stat()
            time.sleep(0.02)
            victim.write_bytes(bytes(b ^ 0x01 for b in original))
            os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
        got = real(self, path)
        claims.append((Path(path).name, got is not None))
        return got

    monkeypatch.setattr(HashAhead, "claim", tamper_first)
    warm = cli("build", "lane", "rtx4090", "--release", RELEASE, "--inputs", src, "--out", tmp_path / "warm",
               "--offline", env={"NINFER_DEFLATE_CACHE": cache})  # fmt: skip
    assert (victim.name, False) in claims
    monkeypatch.setattr(HashAhead, "claim", real)
    off = cli("build", "lane", "rtx4090", "--release", RELEASE, "--inputs", src, "--out", tmp_path / "off",
              "--offline", env={"NINFER_DEFLATE_CACHE": "off"})  # fmt: skip
    assert warm.code == off.code != 0
    assert warm.text.replace(str(tmp_path / "warm"), "OUT") == off.text.replace(str(tmp_path / "off"), "OUT")
    assert not (tmp_path / "warm" / "rtx4090").exists()


def _lock_edit(src: Path, edit: object) -> None:
    lock = src / "rtx4090" / "dependencies.lock.json"
    document = json.loads(lock.read_bytes())
    edit(document)  # type: ignore[operator]
    lock.write_text(json.dumps(document))


def test_start_reads_ahead_only_listed_files_inside_the_lanes_tree_once(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _lane_tree(tmp_path_factory, tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    _build(src, tmp_path / "cold", str(cache))
    env = {
        "NINFER_DEFLATE_CACHE": str(cache),
        **{k: v for k, v in os.environ.items() if k != "NINFER_DEFLATE_CACHE"},
    }
    lane = src / "rtx4090"
    ahead = _ahead.start(src, "rtx4090", env)
    assert ahead is not None and ahead.paths
    listed = set(ahead.paths)
    ahead.stop()
    _ahead.stop()
    assert all(Path(p).is_relative_to(lane.resolve()) for p in listed)
    shutil.copy2(lane / "bin" / "cudart64_13.dll", src / "outside.dll")  # same bytes, outside the tree

    def hostile(document: dict[str, Any]) -> None:
        first = document["redistributables"][0]
        document["redistributables"] += [
            dict(first),  # listed twice
            {**first, "file": "../outside.dll"},
            {**first, "file": str((src / "outside.dll").resolve())},
            {**first, "file": 7},
            {**first, "sha256": "not hex"},
            "not an object",
        ]

    _lock_edit(src, hostile)
    again = _ahead.start(src, "rtx4090", env)
    assert again is not None and set(again.paths) == listed and len(again.paths) == len(listed)
    _ahead.stop()


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"redistributables": ' + b" " * (1 << 20) + b"[]}",
        b"\x00\x00",
        b'{"redistributables": {"file": "bin/a.dll"}}',
        b"[]",
        b"",
    ],
    ids=["nested", "oversized", "nul", "not-a-list", "not-an-object", "empty"],
)
def test_start_never_raises_on_a_hostile_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: bytes
) -> None:
    lane = tmp_path / "staged" / "rtx4090"
    lane.mkdir(parents=True)
    (lane / "dependencies.lock.json").write_bytes(body)
    (tmp_path / "cache" / "zlib-ng-2-l6-c4194304").mkdir(parents=True)
    env = {"NINFER_DEFLATE_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    assert _ahead.start(tmp_path / "staged", "rtx4090", env) is None
    assert _ahead.start(tmp_path / "staged", None, env) is None


def test_a_warm_build_release_claims_every_lanes_files_and_writes_the_same_sets(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _lane_tree(tmp_path_factory, tmp_path, monkeypatch)
    claims = _claims(monkeypatch)
    cache = str(tmp_path / "cache")
    outs = {}
    for label, setting in (("off", "off"), ("cold", cache), ("warm", cache)):
        ok(cli("build", "release", RELEASE, "--inputs", src, "--out", tmp_path / label, "--offline",
               env={"NINFER_DEFLATE_CACHE": setting}))  # fmt: skip
        outs[label] = {
            p.relative_to(tmp_path / label).as_posix(): p.read_bytes()
            for p in sorted((tmp_path / label).rglob("*"))
            if p.is_file()
        }
    assert outs["cold"] == outs["off"] and outs["warm"] == outs["off"]
    hits = [name for name, hit in claims if hit]
    assert len(hits) >= 2 * 6  # both native lanes' redistributables (claimed in the warm build)
