"""Stored vs deflated at the edges (attack on issue 13's ``_compress._stored``): deterministic and correct.

Members whose first piece (4 MiB) compresses but whose rest is random, and the reverse; sizes just
around one piece; empty members. Every way of building them (one or two workers, in a layout or
through a spool, deflate cache off, cold or warm) must give the same bytes, which ``scan_zip``
and ``unzip -t`` accept.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from ninfer_release.packaging import (
    DEFAULT_CHUNK,
    DeflateCache,
    PlanEntry,
    ZipLayout,
    compress_members,
    finish_zip,
    scan_zip,
    write_zip,
)
from ninfer_release.packaging._zipformat import DEFLATED, STORED

EPOCH = 315532800
P = DEFAULT_CHUNK


def _noise(n: int) -> bytes:
    return random.Random(n).randbytes(n)  # noqa: S311 - test data


def _text(n: int) -> bytes:
    return (b"release bytes, same on every host " * (n // 34 + 1))[:n]


SHAPES: dict[str, tuple[bytes, int]] = {
    "text-head-noise-tail": (_text(P) + _noise(P + 17), DEFLATED),
    "noise-head-text-tail": (_noise(P) + _text(P + 17), STORED),
    "noise-one-piece-minus-1": (_noise(P - 1), STORED),
    "noise-one-piece": (_noise(P), STORED),
    "noise-one-piece-plus-1": (_noise(P) + b"\0", STORED),
    "text-one-piece-plus-1": (_text(P + 1), DEFLATED),
    "text-then-1-noise-byte": (_text(P) + b"\x9c", DEFLATED),
    "empty": (b"", STORED),
    "one-byte": (b"x", STORED),
}


def _stage(tmp_path: Path) -> dict[str, str]:
    for name, (data, _) in SHAPES.items():
        path = tmp_path / "staged" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return {name: hashlib.sha256(data).hexdigest() for name, (data, _) in SHAPES.items()}


def _build(tmp_path: Path, label: str, *, workers: int, layout: bool, cache: DeflateCache | None) -> Path:
    work = tmp_path / label
    work.mkdir()
    entries = [PlanEntry(name=n, source=tmp_path / "staged" / n, staged_path=n) for n in sorted(SHAPES)]
    known = {n: hashlib.sha256(SHAPES[n][0]).hexdigest() for n in SHAPES}
    if layout:
        zl = ZipLayout.create(work)
        members = compress_members(
            entries, workdir=work, workers=workers, cache=cache, known_sha256=known, layout=zl
        )
        return finish_zip(zl, members, work / "p.zip", epoch=EPOCH).path
    members = compress_members(entries, workdir=work, workers=workers, cache=cache, known_sha256=known)
    return write_zip(members, work / "p.zip", epoch=EPOCH).path


def test_every_way_of_building_the_edge_members_gives_the_same_correct_bytes(tmp_path: Path) -> None:
    _stage(tmp_path)
    cache = DeflateCache(root=tmp_path / "cache", max_bytes=1 << 30)
    builds = {
        "w1": _build(tmp_path, "w1", workers=1, layout=True, cache=None),
        "w2": _build(tmp_path, "w2", workers=2, layout=True, cache=None),
        "spool": _build(tmp_path, "spool", workers=2, layout=False, cache=None),
        "cold": _build(tmp_path, "cold", workers=2, layout=True, cache=cache),
        "warm": _build(tmp_path, "warm", workers=2, layout=True, cache=cache),
        "warm-spool": _build(tmp_path, "warm-spool", workers=1, layout=False, cache=cache),
    }
    reference = builds["w1"].read_bytes()
    assert {label: p.read_bytes() == reference for label, p in builds.items()} == dict.fromkeys(builds, True)
    scan = scan_zip(builds["w1"], sha1=False)
    assert scan.sha256 == hashlib.sha256(reference).hexdigest()
    assert [(d.name, d.ok, d.sha256, d.method) for d in scan.members] == [
        (n, True, hashlib.sha256(SHAPES[n][0]).hexdigest(), SHAPES[n][1]) for n in sorted(SHAPES)
    ]
    if shutil.which("unzip"):
        done = subprocess.run(
            ["unzip", "-tq", str(builds["w1"])], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", ["text-head-noise-tail", "noise-head-text-tail"])
def test_the_first_piece_alone_decides(name: str) -> None:
    from ninfer_release.packaging import _compress

    data, method = SHAPES[name]
    first = data[:P]
    stream = _compress._deflate_piece(first, None, 6, final=len(data) <= P)
    assert _compress._stored(first, stream) is (method == STORED)
