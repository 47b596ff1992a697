"""Stored vs deflated is decided by a member's first piece, from content alone (issue 13).

Incompressible data must not cost a full deflate: once the first piece does not shrink, the rest
of the member is never deflated. The decision may not depend on the worker count or timing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import random
import zipfile
import zlib
from pathlib import Path

import pytest

from ninfer_release.packaging import (
    PlanEntry,
    ZipLayout,
    _compress,
    compress_members,
    finish_zip,
    write_zip,
)
from ninfer_release.packaging._zipformat import DEFLATED, STORED
from zip_support import count_deflates

CHUNK = 64 << 10  # the smallest piece compress_members accepts


def _noise(n: int, seed: int = 13) -> bytes:
    return random.Random(seed).randbytes(n)  # noqa: S311 - test data, not a secret


def _text(n: int) -> bytes:
    return (b"deterministic release bytes " * (n // 28 + 1))[:n]


def _zip(tmp_path: Path, name: str, data: bytes, workers: int) -> tuple[int, bytes]:
    work = tmp_path / f"w{workers}-{name.replace('/', '_')}"
    work.mkdir()
    (member,) = compress_members(
        [PlanEntry(name=name, data=data)], workdir=work, workers=workers, chunk_size=CHUNK
    )
    out = write_zip([member], work / "p.zip", epoch=315532800)
    with zipfile.ZipFile(out.path) as zf:
        assert zf.read(name) == data
    return member.method, out.path.read_bytes()


def test_incompressible_first_piece_stores_the_member_without_deflating_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_deflates(monkeypatch)
    data = _noise(40 * CHUNK)
    method, _ = _zip(tmp_path, "bin/noise.bin", data, workers=2)
    assert method == STORED
    # Only the pieces already in flight when the first one came back (at most 2 x workers).
    assert calls[0] <= 4


def test_the_first_piece_decides_whatever_follows(tmp_path: Path) -> None:
    # Noise first, then text: stored (the old rule, "the whole stream did not shrink", deflated it).
    assert _zip(tmp_path, "a.bin", _noise(CHUNK) + _text(20 * CHUNK), workers=2)[0] == STORED
    # Text first, then noise: deflated, even though the noise part does not shrink.
    assert _zip(tmp_path, "b.bin", _text(CHUNK) + _noise(3 * CHUNK), workers=2)[0] == DEFLATED


def test_one_piece_members_keep_the_whole_stream_rule(tmp_path: Path) -> None:
    assert _zip(tmp_path, "small-noise.bin", _noise(1000), workers=1)[0] == STORED
    assert _zip(tmp_path, "small-text.txt", _text(1000), workers=1)[0] == DEFLATED
    assert _zip(tmp_path, "empty", b"", workers=1)[0] == STORED


@pytest.mark.parametrize(
    "data",
    [_noise(9 * CHUNK + 7), _noise(CHUNK) + _text(9 * CHUNK), _text(CHUNK) + _noise(9 * CHUNK)],
    ids=["noise", "noise-then-text", "text-then-noise"],
)
def test_same_bytes_for_any_worker_count(tmp_path: Path, data: bytes) -> None:
    first = _zip(tmp_path, "m.bin", data, workers=1)
    assert _zip(tmp_path, "m.bin", data, workers=2) == first
    assert _zip(tmp_path, "m.bin", data, workers=3) == first


@pytest.mark.parametrize("size", [0, 1, 4096, 16 << 10, (16 << 10) + 1])
def test_small_members_deflated_inline_give_the_workers_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """A whole member of a few KiB is deflated on the calling thread (issue 13), same bytes."""
    for data, kind in ((_text(size), "text"), (_noise(size), "noise")):
        (tmp_path / f"in-{kind}").mkdir()
        (tmp_path / f"pool-{kind}").mkdir()
        inline = _zip(tmp_path / f"in-{kind}", "licenses/a.txt", data, workers=2)
        monkeypatch.setattr(_compress, "_INLINE_MAX", -1)  # every piece on a worker
        pooled = _zip(tmp_path / f"pool-{kind}", "licenses/a.txt", data, workers=2)
        monkeypatch.undo()
        assert inline == pooled


def test_the_rule_is_a_pure_function_of_the_first_piece_and_its_deflate() -> None:
    first = _text(CHUNK)
    assert not _compress._stored(first, _compress._deflate_piece(first, None, 6, False))
    noise = _noise(CHUNK)
    assert _compress._stored(noise, _compress._deflate_piece(noise, None, 6, False))
    assert _compress._stored(b"", b"\x03\x00")  # an empty member is stored


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_incompressible_data_costs_at_most_workers_trial_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Only ``workers - 1`` pieces beyond the first are deflated before the first one decides."""
    calls = count_deflates(monkeypatch)
    method, _ = _zip(tmp_path, "bin/noise.bin", _noise(12 * CHUNK), workers=workers)
    assert method == STORED
    assert calls[0] <= workers


@pytest.mark.parametrize("kind", ["noise", "text"])
def test_pieces_hashed_on_the_helper_threads_give_hashlibs_digests(tmp_path: Path, kind: str) -> None:
    chunk = 256 << 10  # pieces this big are hashed on the helpers (_compress._HASH_OFFLOAD)
    data = _noise(7 * chunk + 123) if kind == "noise" else _text(7 * chunk + 123)
    src = tmp_path / "m.bin"
    src.write_bytes(data)
    (m,) = compress_members(
        [PlanEntry(name="m.bin", source=src, staged_path="m.bin")], workdir=tmp_path, chunk_size=chunk
    )
    assert (m.size, m.sha256, m.sha1, m.crc32) == (
        len(data),
        hashlib.sha256(data).hexdigest(),
        hashlib.sha1(data).hexdigest(),  # noqa: S324 - SPDX's SHA-1, not a security use
        zlib.crc32(data),
    )


_STAGED = {  # zip order; sizes around the one-go bound (_compress._INLINE_MAX, 16 KiB)
    "a/empty": b"",
    "a/one": b"x",
    "b/noise-4k.bin": _noise(4096, seed=3),
    "b/text-16k.txt": _text(16 << 10),
    "c/text-16k-plus-1.txt": _text((16 << 10) + 1),
    "d/text-3-pieces.txt": _text(3 * CHUNK + 5),
    "e/text-4k.txt": _text(4096),
}


def _staged_layout(
    tmp_path: Path, tag: str, files: dict[str, bytes] = _STAGED
) -> tuple[list[dict[str, object]], bytes]:
    """Compress ``files`` (zip name -> bytes, zip order) from disk into a zip layout, as the
    build does: the members (their spool path left out) and the finished zip's bytes."""
    root = tmp_path / tag
    for name, data in files.items():
        (root / "staged" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "staged" / name).write_bytes(data)
    entries = [PlanEntry(name=n, source=root / "staged" / n, staged_path=n) for n in files]
    layout = ZipLayout.create(root)
    members = compress_members(entries, workdir=root, workers=2, chunk_size=CHUNK, layout=layout)
    out = finish_zip(layout, members, root / "p.zip", epoch=315532800)
    records = [{k: v for k, v in dataclasses.asdict(m).items() if k != "spool"} for m in members]
    return records, out.path.read_bytes()


def test_small_staged_members_done_in_one_go_equal_the_piece_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole member of at most 16 KiB is hashed, deflated and written in one go (issue 13); its
    record and the zip's bytes are those of the piece-by-piece path (forced with ``_INLINE_MAX``)."""
    one_go = _staged_layout(tmp_path, "one-go")
    monkeypatch.setattr(_compress, "_INLINE_MAX", -1)  # every member piece by piece, on the workers
    assert _staged_layout(tmp_path, "pieces") == one_go
    with zipfile.ZipFile(io.BytesIO(one_go[1])) as zf:
        assert {n: zf.read(n) for n in zf.namelist()} == _STAGED
    assert [r["sha256"] for r in one_go[0]] == [hashlib.sha256(d).hexdigest() for d in _STAGED.values()]


def test_a_small_member_costs_no_future(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-go path makes no future or in-flight record per small member (the overhead it
    removes was several times a 4 KiB deflate); a bigger one still goes through the pieces."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a future was made")

    monkeypatch.setattr(_compress, "Future", refuse)
    monkeypatch.setattr(_compress, "_InFlight", refuse)
    small = {n: d for n, d in _STAGED.items() if len(d) <= 16 << 10}
    records, _ = _staged_layout(tmp_path, "small", small)
    assert [r["name"] for r in records] == list(small)
    with pytest.raises(AssertionError, match="a future was made"):
        _staged_layout(tmp_path, "big", {"big.txt": _text(CHUNK + 1)})
