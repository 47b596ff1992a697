"""Deterministic layers and gzip streams (DESIGN.md §5 "Layers"; C24)."""

from __future__ import annotations

import gzip
import io
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from conftest import need_tool
from ninfer_release.containers import LayerEntry, check_layer_path, gzip_bytes, gzip_header, write_layer
from ninfer_release.containers._layers import complete_entries, layer_path_problem, symlink_escapes
from ninfer_release.errors import ExitCode, InputError
from ninfer_release.reproducible import GZIP_OS_BYTE

EPOCH = 1700000000


def _entries(tmp_path: Path) -> list[LayerEntry]:
    src = tmp_path / "engine.bin"
    src.write_bytes(b"\x7fELF stand-in\n" * 100)
    return [
        LayerEntry(path="opt/engine/engine.cfg", kind="file", data=b"port = 18082\n"),
        LayerEntry(path="opt/engine/bin/engine", kind="file", mode=0o755, source=src),
        LayerEntry(path="opt/engine/current", kind="symlink", target="bin/engine"),
        LayerEntry(path="checkpoints-v013", kind="dir"),
    ]


def test_c24_gzip_header_mtime_zero_no_fname_fixed_os_identical_under_any_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C24: engine-a/engine-b built at different wall-clock times are byte-identical; header fixed."""
    a, b = tmp_path / "engine-a.tar.gz", tmp_path / "engine-b.tar.gz"
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    write_layer(_entries(tmp_path), a, epoch=EPOCH)
    monkeypatch.setattr(time, "time", lambda: 1_900_000_002.0)
    write_layer(_entries(tmp_path), b, epoch=EPOCH)
    data = a.read_bytes()
    assert data == b.read_bytes()
    assert data[:3] == b"\x1f\x8b\x08"
    assert data[3] == 0x00  # FLG: no FNAME, no FEXTRA, no FCOMMENT
    assert data[4:8] == b"\x00\x00\x00\x00"  # MTIME = 0
    assert data[8] == 0x00  # XFL
    assert data[9] == GZIP_OS_BYTE == 255
    assert b"engine-a" not in data and b"engine-b" not in data
    assert gzip_header() == data[:10]
    # and it is a valid gzip stream for independent readers
    with gzip.open(a) as g, tarfile.open(fileobj=io.BytesIO(g.read())) as tar:
        assert "opt/engine/engine.cfg" in tar.getnames()


def test_c24_gzip_accepted_by_gzip_tool(tmp_path: Path) -> None:
    """C24: GNU gzip -t accepts the stream and gzip -l shows no stored name."""
    tool = need_tool("gzip")
    p = tmp_path / "x.gz"
    p.write_bytes(gzip_bytes(b"hello\n" * 1000))
    assert subprocess.run([tool, "-t", str(p)], check=False).returncode == 0
    assert gzip.decompress(p.read_bytes()) == b"hello\n" * 1000


def test_layer_tar_headers_are_normalised(tmp_path: Path) -> None:
    """uid/gid 0, no owner names, mtime = epoch, modes 0644/0755, sorted, parents present, no pax records."""
    out = tmp_path / "layer.tar.gz"
    blob = write_layer(reversed(_entries(tmp_path)), out, epoch=EPOCH)
    raw = gzip.decompress(out.read_bytes())
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == [
        "checkpoints-v013",
        "opt",
        "opt/engine",
        "opt/engine/bin",
        "opt/engine/bin/engine",
        "opt/engine/current",
        "opt/engine/engine.cfg",
    ]
    for m in members:
        assert (m.uid, m.gid, m.uname, m.gname, m.mtime) == (0, 0, "", "", EPOCH)
        assert m.pax_headers == {}
    modes = {m.name: m.mode for m in members}
    assert modes["opt/engine/bin/engine"] == 0o755
    assert modes["opt/engine/engine.cfg"] == 0o644
    assert modes["opt"] == 0o755
    assert b"PaxHeader" not in raw and b"mtime=" not in raw and b"atime=" not in raw
    assert [f.path for f in blob.files] == ["opt/engine/bin/engine", "opt/engine/engine.cfg"]
    assert blob.symlinks == (("opt/engine/current", "bin/engine"),)
    import hashlib

    assert blob.diff_id == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert blob.digest == "sha256:" + hashlib.sha256(out.read_bytes()).hexdigest()
    cfg = next(f for f in blob.files if f.path == "opt/engine/engine.cfg")
    assert cfg.sha256 == hashlib.sha256(b"port = 18082\n").hexdigest()
    assert cfg.sha1 == hashlib.sha1(b"port = 18082\n").hexdigest()  # noqa: S324 - SPDX needs SHA-1


def test_long_path_gets_only_a_path_pax_record(tmp_path: Path) -> None:
    """A path longer than ustar allows gets a pax ``path`` record and nothing else (no timestamps)."""
    long = "opt/" + "d" * 120 + "/f.txt"
    out = tmp_path / "l.tar.gz"
    write_layer([LayerEntry(path=long, kind="file", data=b"x")], out, epoch=EPOCH)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(out.read_bytes()))) as tar:
        m = tar.getmember(long)
    assert m.pax_headers == {"path": long}


@pytest.mark.parametrize(
    "path",
    ["../etc/passwd", "opt/../../x", "opt\\x", "", "/", "opt/./x", "a\x00b"],
)
def test_layer_path_escaping_the_root_is_refused(path: str) -> None:
    """A layer path escaping the image root (or otherwise unsafe) is an input error (exit 4)."""
    with pytest.raises(InputError) as info:
        check_layer_path(path, file="recipe.yaml", field_path="layers[0].entries[0].dest")
    assert info.value.exit_code == ExitCode.INPUT
    assert "recipe.yaml: layers[0].entries[0].dest" in str(info.value)


def test_layer_path_normalised() -> None:
    assert check_layer_path("/opt/x/", file="f", field_path="d") == "opt/x"
    assert layer_path_problem("opt/ninfer/bin") is None


def test_symlink_escape_detection() -> None:
    assert symlink_escapes("lib/a.so", "../../etc/passwd")
    assert not symlink_escapes("lib/a.so", "a.so.1")
    assert not symlink_escapes("lib/x/a.so", "../b.so")
    assert symlink_escapes("a", "../b")


def test_duplicate_paths_in_one_layer_are_refused() -> None:
    with pytest.raises(InputError, match="listed twice"):
        complete_entries(
            [LayerEntry(path="a", kind="file", data=b"1"), LayerEntry(path="a", kind="file", data=b"2")]
        )
    with pytest.raises(InputError, match="is a file and a directory"):
        complete_entries(
            [LayerEntry(path="a", kind="file", data=b"1"), LayerEntry(path="a/b", kind="file", data=b"")]
        )


@pytest.mark.parametrize("workers", [2, 3, 8])
def test_parallel_gzip_bytes_do_not_depend_on_thread_count(workers: int) -> None:
    """Block-parallel deflate: the same bytes with 1 or N threads; a valid single gzip member."""
    import random

    from ninfer_release.containers._layers import GZIP_BLOCK

    rng = random.Random(7)  # noqa: S311 - test data
    data = rng.randbytes(GZIP_BLOCK + 12345) + b"text " * (GZIP_BLOCK // 2) + rng.randbytes(GZIP_BLOCK)
    serial = gzip_bytes(data, workers=1)
    assert gzip_bytes(data, workers=workers) == serial
    assert gzip.decompress(serial) == data
    assert serial[:10] == gzip_header()


def test_gzip_exact_block_multiple_and_empty() -> None:
    from ninfer_release.containers._layers import GZIP_BLOCK

    for data in (b"", b"x" * GZIP_BLOCK, b"y" * (2 * GZIP_BLOCK)):
        assert gzip.decompress(gzip_bytes(data, workers=2)) == data


def test_incompressible_blocks_are_stored_compressible_ones_deflated() -> None:
    """block_level: random 1 MiB blocks are stored (level 0), text keeps the fixed level; bytes stable."""
    import random

    from ninfer_release.containers._layers import GZIP_BLOCK, GZIP_LEVEL, block_level

    noise = random.Random(3).randbytes(GZIP_BLOCK)  # noqa: S311 - test data
    text = (b"port = 18082\n" * GZIP_BLOCK)[:GZIP_BLOCK]
    assert block_level(noise, GZIP_LEVEL) == 0
    assert block_level(text, GZIP_LEVEL) == GZIP_LEVEL
    assert block_level(b"tiny", GZIP_LEVEL) == GZIP_LEVEL
    data = noise * 4 + text
    out = gzip_bytes(data, workers=2)
    assert len(out) < 4 * GZIP_BLOCK * 1.001 + 64 * 1024  # stored noise, deflated text
    assert out == gzip_bytes(data, workers=1)
    assert gzip.decompress(out) == data


def test_gzip_bytes_do_not_depend_on_how_the_data_is_written() -> None:
    """GzipSink cuts 1 MiB blocks from whatever pieces it is given (bytes, bytearray, memoryview,
    pieces smaller and larger than a block, straddling block ends): the same bytes as one write."""
    import random

    from ninfer_release.containers._layers import GZIP_BLOCK, GzipSink

    rng = random.Random(11)  # noqa: S311 - test data
    data = rng.randbytes(GZIP_BLOCK) + b"layer text\n" * (GZIP_BLOCK // 5) + rng.randbytes(1000)
    whole = gzip_bytes(data, workers=2)
    sizes = (1, 511, GZIP_BLOCK - 1, GZIP_BLOCK + 1, 3 * GZIP_BLOCK, 7)
    for workers in (1, 2):
        out = io.BytesIO()
        sink = GzipSink(out, workers=workers)
        pos = i = 0
        while pos < len(data):
            piece = data[pos : pos + sizes[i % len(sizes)]]
            sink.write((bytes, bytearray, memoryview)[i % 3](piece))
            pos, i = pos + len(piece), i + 1
        sink.finish()
        assert out.getvalue() == whole
        assert sink.uncompressed_size == len(data)


def test_probe_one_shot_deflate_is_the_streamed_one() -> None:
    """block_level probes with one ``zlib.compress(probe, 1, -15)``; that is byte for byte the
    stream ``compressobj(1, DEFLATED, -15)`` gives fed the probe and finished (what it used), on
    random, text, mixed and borderline probes, so every store/deflate verdict is unchanged."""
    import random
    import zlib

    rng = random.Random(7)  # noqa: S311 - test data
    text = b"ninfer runtime stand-in text block; compressible filler line\n" * 200
    probes = [rng.randbytes(8192), text[:8192], b"\0" * 8192, b""]
    for cut in range(0, 8193, 512):  # random then text, every share of each
        probes.append(rng.randbytes(cut) + text[: 8192 - cut])
    for _ in range(20):  # few distinct bytes: near the 2 % saving line
        probes.append(bytes(rng.choice(b"ab") for _ in range(100)) + rng.randbytes(8092))
    for probe in probes:
        z = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
        assert zlib.compress(probe, 1, -zlib.MAX_WBITS) == z.compress(probe) + z.flush()


@pytest.mark.parametrize("evict", [False, True])
def test_write_behind_hints_every_few_mib_and_writes_every_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, evict: bool
) -> None:
    """A layer blob (pages kept: ``sync_file_range``) and ``image.tar`` (evicted: ``fadvise``) ask
    the kernel to start writing back every ``WRITE_BEHIND`` bytes, each range once, in order; the
    bytes are exactly those written."""
    import os

    from ninfer_release.containers import _layers
    from ninfer_release.containers._layers import WriteBehind

    monkeypatch.setattr(_layers, "WRITE_BEHIND", 1000)
    hints: list[tuple[int, int]] = []

    def hint(fd: int, offset: int, n: int, *advice: int) -> None:
        hints.append((offset, n))

    if evict:
        monkeypatch.setattr(os, "posix_fadvise", hint)
    else:
        monkeypatch.setattr(_layers, "_start_writeback", lambda: hint)
    pieces = [os.urandom(n) for n in (999, 1, 2500, 10, 10)]
    with (tmp_path / "blob").open("wb") as f:
        out = WriteBehind(f, evict=evict)
        for p in pieces:
            assert out.write(p) == len(p)
    assert (tmp_path / "blob").read_bytes() == b"".join(pieces)
    assert hints == [(0, 1000), (1000, 2500)]
    assert out.size == 3520


def test_layer_blob_start_writeback_is_linux_sync_file_range() -> None:
    """On Linux the hint for a layer blob is the C library's ``sync_file_range``; calling it on a
    written file succeeds (0) and leaves the bytes alone."""
    import sys
    import tempfile

    from ninfer_release.containers._layers import _start_writeback

    start = _start_writeback()
    if not sys.platform.startswith("linux"):
        assert start is None
        return
    assert start is not None
    with tempfile.TemporaryFile() as f:
        f.write(b"x" * 10000)
        f.flush()
        assert start(f.fileno(), 0, 10000) == 0
        f.seek(0)
        assert f.read() == b"x" * 10000


def test_retain_freed_memory_sets_glibc_thresholds_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The layer writers' allocator tuning: glibc's mmap and trim thresholds, set once per
    process (a second call sets nothing), and reported as not set where there is no ``mallopt``."""
    from ninfer_release.containers import _layers

    calls: list[tuple[int, int]] = []

    def mallopt(param: int, value: int) -> int:
        calls.append((param, value))
        return 1

    monkeypatch.setattr(_layers, "_mallopt", lambda: mallopt)
    _layers.retain_freed_memory.cache_clear()
    try:
        assert _layers.retain_freed_memory() is True
        assert _layers.retain_freed_memory() is True
        assert calls == [(-3, 32 << 20), (-1, 64 << 20)]
        monkeypatch.setattr(_layers, "_mallopt", lambda: None)
        _layers.retain_freed_memory.cache_clear()
        assert _layers.retain_freed_memory() is False
    finally:
        _layers.retain_freed_memory.cache_clear()


def test_mallopt_is_the_c_librarys_on_linux() -> None:
    """On Linux (glibc) ``_mallopt`` is the C library's: each of the settings a build makes is
    accepted (1)."""
    import sys

    from ninfer_release.containers._layers import MALLOC_SETTINGS, _mallopt

    fn = _mallopt()
    if not sys.platform.startswith("linux"):
        assert fn is None
        return
    assert fn is not None
    assert [fn(param, value) for param, value in MALLOC_SETTINGS] == [1, 1]
