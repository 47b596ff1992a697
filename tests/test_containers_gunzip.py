"""The staged-archive inflater (_gunzip.py), the one-pass archive layer, the ordered helper thread."""

from __future__ import annotations

import gzip
import io
import random
import tarfile
import threading
import zlib

import pytest

from ninfer_release.containers._archive_layer import NotStreamable, streamed_entries
from ninfer_release.containers._gunzip import GunzipStream, GzipError, crc32, is_gzip
from ninfer_release.containers._layers import Ordered
from ninfer_release.containers._recipe import LayerItem


def _mixed(size: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)  # noqa: S311 - test filler
    half = size // 2
    return rng.randbytes(half) + (b"text line of a runtime archive\n" * (size // 31 + 1))[: size - half]


def _read_all(stream: GunzipStream, piece: int) -> bytes:
    out = bytearray()
    while chunk := stream.read(piece):
        assert len(chunk) <= piece
        out += chunk
    return bytes(out)


@pytest.mark.parametrize("piece", [1, 511, 10240, 1 << 20, 3 << 20])
def test_gunzip_stream_gives_the_members_bytes_in_any_read_size(piece: int) -> None:
    data = _mixed(3 << 20) if piece > 1 else _mixed(20000)
    assert _read_all(GunzipStream(io.BytesIO(gzip.compress(data, 6))), piece) == data


def test_gunzip_stream_reads_every_member_and_stops_at_trailing_bytes() -> None:
    a, b = b"first member\n" * 1000, _mixed(300000)
    raw = io.BytesIO(gzip.compress(a) + gzip.compress(b) + b"\0" * 1024)
    assert GunzipStream(raw).read(-1) == a + b


def test_gunzip_stream_output_per_call_is_bounded() -> None:
    bomb = gzip.compress(b"\0" * (64 << 20), 9)  # 64 MiB from about 64 KiB
    stream = GunzipStream(io.BytesIO(bomb))
    assert len(stream.read(1 << 30)) == 64 << 20  # a caller asking for all of it gets all of it
    stream = GunzipStream(io.BytesIO(bomb))
    assert len(stream.read(4096)) == 4096


def test_truncated_gzip_stream_is_an_error() -> None:
    raw = gzip.compress(_mixed(200000))
    with pytest.raises(GzipError, match="truncated"):
        GunzipStream(io.BytesIO(raw[: len(raw) // 2])).read(-1)
    with pytest.raises(GzipError, match="empty"):
        GunzipStream(io.BytesIO(b"")).read(-1)


def test_damaged_gzip_stream_or_wrong_crc_is_an_error() -> None:
    raw = bytearray(gzip.compress(b"compressible text\n" * 5000))
    damaged = bytes(raw[:40]) + b"\xff" * 8 + bytes(raw[48:])
    with pytest.raises(GzipError, match=r"damaged|truncated"):  # where inflate notices depends on the bytes
        GunzipStream(io.BytesIO(damaged)).read(-1)
    raw[-8] ^= 0x01  # the CRC-32 in the trailer
    with pytest.raises(GzipError, match="damaged"):
        GunzipStream(io.BytesIO(bytes(raw))).read(-1)


def test_is_gzip_and_crc32_agree_with_the_stdlib() -> None:
    data = _mixed(100000)
    assert is_gzip(gzip.compress(data)) and not is_gzip(b"ustar") and not is_gzip(b"")
    assert crc32(data) == zlib.crc32(data) and crc32(data, 12345) == zlib.crc32(data, 12345)


def test_ordered_runs_calls_one_at_a_time_in_submission_order() -> None:
    seen: list[int] = []
    threads: set[int] = set()

    def note(i: int) -> None:
        seen.append(i)
        threads.add(threading.get_ident())

    ordered = Ordered()
    try:
        futures = [ordered.submit(note, i) for i in range(200)]
        ordered.drain()
    finally:
        ordered.close()
    assert seen == list(range(200))
    assert len(threads) == 1 and threading.get_ident() not in threads
    assert all(f.done() for f in futures)


def test_ordered_re_raises_a_failed_call_in_the_submitter() -> None:
    ordered = Ordered()

    def fail() -> None:
        raise OSError("disk full")

    try:
        with pytest.raises(OSError, match="disk full"):  # at this submit, a later one or drain()
            ordered.submit(fail)
            for _ in range(100):
                ordered.submit(lambda: None)
            ordered.drain()
    finally:
        ordered.close()


def _tar(names: list[str]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in names:
            info = tarfile.TarInfo(name.rstrip("/"))
            if name.endswith("/"):
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = 3
                tar.addfile(info, io.BytesIO(b"abc"))
    buf.seek(0)
    return buf


def _streamed(names: list[str]) -> list[tuple[str, str]]:
    item = LayerItem(kind="archive", source="rt.tar", dest="opt/rt", mode=0o644, field_path="layers[0]")
    with tarfile.open(fileobj=_tar(names), mode="r|") as tar:
        return [(e.path, e.kind) for e in streamed_entries(tar, item)]


def test_streamed_entries_add_parents_in_layer_order() -> None:
    assert _streamed(["a/", "a/x", "b/c/y"]) == [
        ("opt", "dir"),
        ("opt/rt", "dir"),
        ("opt/rt/a", "dir"),
        ("opt/rt/a/x", "file"),
        ("opt/rt/b", "dir"),
        ("opt/rt/b/c", "dir"),
        ("opt/rt/b/c/y", "file"),
    ]


@pytest.mark.parametrize(
    "names",
    [
        ["b", "a"],  # out of order
        ["a/x", "a/"],  # a directory after its contents
        ["a", "a"],  # twice
        ["a", "a/x"],  # a file where a directory must be
        ["../x"],  # unsafe
        ["./a"],  # refused by the layer's path rule too
    ],
)
def test_streamed_entries_refuse_what_needs_the_general_path(names: list[str]) -> None:
    with pytest.raises(NotStreamable):
        _streamed(names)


def test_gunzip_stream_reads_exactly_what_is_asked_and_seeks_forward_only() -> None:
    data = _mixed(3 << 20)
    stream = GunzipStream(io.BytesIO(gzip.compress(data, 6)))
    assert stream.tell() == 0
    assert stream.read(1000) == data[:1000]
    assert stream.tell() == 1000
    assert stream.seek(1000) == 1000
    assert stream.seek((2 << 20) + 7) == (2 << 20) + 7
    assert stream.read(1 << 20) == data[(2 << 20) + 7 : (3 << 20) + 7]  # exactly: across inflated pieces
    with pytest.raises(io.UnsupportedOperation):
        stream.seek(5)
    with pytest.raises(io.UnsupportedOperation):
        stream.seek(0, io.SEEK_END)
    assert stream.seek(len(data) + 100) == len(data)  # the end of the stream stops a seek
    assert stream.read(1) == b""
    assert stream.tell() == len(data)


def _tar_gz_of(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buf.getvalue()


def _info(name: str, kind: bytes = tarfile.REGTYPE, **attrs: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in attrs.items():
        setattr(info, key, value)
    return info


def test_members_read_from_the_inflater_are_what_tarfile_reads() -> None:
    """A member's bytes read straight from the inflater (``_Member.open``) are tarfile's own,
    for short members, long (pax) names, members of several MiB, empty files and after
    directories and symlinks; the archive is hashed whole, trailer included."""
    import hashlib

    from ninfer_release.containers._archive_layer import open_tar_stream
    from ninfer_release.containers._layers import HashingReader

    long = "lib/" + "deep-" * 40 + "name.so"  # over ustar's 100 characters: a pax header
    members = [
        (_info("lib", tarfile.DIRTYPE), b""),
        (_info("lib/a.so"), _mixed(5 << 20, 1)),
        (_info(long), b"pax-named member\n" * 700),
        (_info("lib/empty"), b""),
        (_info("lib/link", tarfile.SYMTYPE, linkname="a.so"), b""),
        (_info("share/x"), b"x" * 511),
    ]
    raw_bytes = _tar_gz_of(members)
    item = LayerItem(kind="archive", source="rt.tar.gz", dest="opt/rt", mode=0o644, field_path="layers[0]")
    got: dict[str, bytes] = {}
    raw = io.BufferedReader(io.BytesIO(raw_bytes))
    reader = HashingReader(raw)
    with open_tar_stream(raw, reader) as tar:
        for entry in streamed_entries(tar, item):
            if entry.kind == "file":
                assert entry.stream is not None
                with entry.stream.open() as f:
                    got[entry.path] = f.read(7) + f.read(1 << 20) + f.read()
    while reader.read(1 << 20):
        pass
    with tarfile.open(fileobj=io.BytesIO(raw_bytes), mode="r:gz") as tar:
        want = {
            f"opt/rt/{m.name}": tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isreg()
        }
    assert got == want
    assert reader.hexdigests()[0] == hashlib.sha256(raw_bytes).hexdigest()


def test_member_data_cut_short_inside_a_whole_gzip_stream_is_refused() -> None:
    from ninfer_release.containers._archive_layer import open_tar_stream
    from ninfer_release.containers._layers import HashingReader

    whole = io.BytesIO()
    with tarfile.open(fileobj=whole, mode="w") as tar:
        info = tarfile.TarInfo("lib/a.so")
        info.size = 100000
        tar.addfile(info, io.BytesIO(b"a" * 100000))
    cut = gzip.compress(whole.getvalue()[:50000], mtime=0)  # a complete gzip of half the tar
    item = LayerItem(kind="archive", source="rt.tar.gz", dest="opt/rt", mode=0o644, field_path="layers[0]")
    raw = io.BufferedReader(io.BytesIO(cut))
    with open_tar_stream(raw, HashingReader(raw)) as tar, pytest.raises(tarfile.ReadError):
        for entry in streamed_entries(tar, item):
            if entry.kind == "file":
                assert entry.stream is not None
                entry.stream.open().read(1 << 20)


def test_a_sparse_member_needs_the_general_path() -> None:
    from ninfer_release.containers._archive_layer import _member_entry

    item = LayerItem(kind="archive", source="rt.tar.gz", dest="opt/rt", mode=0o644, field_path="layers[0]")
    member = _info("lib/sparse.img", tarfile.GNUTYPE_SPARSE, sparse=[(0, 10)])
    with pytest.raises(NotStreamable, match="refuses"):
        _member_entry(tarfile.TarFile(fileobj=io.BytesIO(), mode="w"), member, "lib/sparse.img", item)
