"""Hash-ahead (issue 13): a warm rebuild's big staged files hashed during start-up, trusted only
while the file is the one that was hashed (``packaging/_ahead.py``)."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from flow_support import RELEASE, cli, ok, samples
from ninfer_release.packaging import _ahead
from ninfer_release.packaging._ahead import HashAhead


def _hashed(tmp_path: Path, data: bytes = b"x" * 300_000) -> tuple[Path, HashAhead]:
    path = tmp_path / "big.dll"
    path.write_bytes(data)
    ahead = HashAhead([os.path.realpath(path)])
    ahead._thread.join(timeout=60)  # hashed (the helper ends after its last file)
    return path, ahead


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
    ahead = HashAhead([os.path.realpath(path)])
    ahead._thread.join(timeout=60)
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
    gate = __import__("threading").Event()

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


def test_stop_ends_a_read_in_flight_without_a_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ahead, "RACY_NS", 0)
    monkeypatch.setattr(_ahead, "_STEP", 4096)
    path = tmp_path / "big.dll"
    path.write_bytes(b"w" * (4096 * 64))
    ahead = HashAhead([os.path.realpath(path)])
    ahead.stop()
    assert not ahead._thread.is_alive()
    claimed = ahead.claim(str(path))
    assert claimed is None or claimed == (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size)


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
