"""scan_zip at many small members (issue 13): a small member read in one call gives what its
stream gives, ``each`` hands the digests on in central-directory order instead of keeping them,
and verify takes them that way (a scan that fails after handing some on leaves none behind)."""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from flow_support import release_out
from ninfer_release import packaging
from ninfer_release.packaging import _zipread, iter_member_digests, read_zip_index, scan_zip
from ninfer_release.releases import _verify
from zip_support import foreign, ours, patch_central


def _streams(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the members read by a stream (not in one call)."""
    names: list[str] = []

    class Counted(_zipread._MemberStream):
        def __init__(self, m: packaging.ZipMember, *args: Any, **kwargs: Any) -> None:
            super().__init__(m, *args, **kwargs)
            names.append(m.name)

    monkeypatch.setattr(_zipread, "_MemberStream", Counted)
    return names


def test_small_clean_members_are_read_in_one_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {f"licenses/f{i:03d}.txt": (b"%d " % i) * (50 + i) for i in range(50)}
    files["big.bin"] = bytes(range(256)) * 1024  # 256 KiB: more than one call's bound
    path = ours(tmp_path, files)
    expected = list(iter_member_digests(path))
    streamed = _streams(monkeypatch)
    assert list(scan_zip(path).members) == expected
    assert streamed == ["big.bin"]


def _deflated_with_junk(tmp_path: Path, content: bytes, junk: bytes) -> Path:
    """A one-member zip whose member is ``content`` deflated, then ``junk`` (a stored member's
    bytes turned into a deflated one's in the central header)."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    stream = compressor.compress(content) + compressor.flush()
    path = foreign(tmp_path, {"a.txt": stream + junk, "b.txt": b"b"}, method=zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<H", data, central + 10, zipfile.ZIP_DEFLATED)
    path.write_bytes(bytes(data))
    patch_central(path, 0, usize=len(content), crc=zlib.crc32(content))
    return path


@pytest.mark.parametrize("junk", [b"", b"junk"])
def test_bytes_after_a_small_members_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, junk: bytes
) -> None:
    path = _deflated_with_junk(tmp_path, b"a" * 3000, junk)
    expected = list(iter_member_digests(path))
    streamed = _streams(monkeypatch)
    got = scan_zip(path).members
    assert list(got) == expected
    if junk:
        assert got[0].problems == ("cannot be read: data after the end of the deflate stream",)
        assert streamed == ["a.txt"]
    else:
        assert got[0].ok and streamed == []


@pytest.mark.parametrize(
    "patch",
    [
        {"csize": -2},  # the deflate stream cut short
        {"usize": -1},
        {"usize": 1},
        {"crc": 1},
    ],
)
def test_a_small_member_that_does_not_read_cleanly_gets_its_stream_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patch: dict[str, int]
) -> None:
    path = foreign(tmp_path, {"a.txt": b"a" * 3000 + bytes(range(256)), "b.txt": b"b" * 100})
    info = zipfile.ZipFile(path).getinfo("a.txt")
    now = {"csize": info.compress_size, "usize": info.file_size, "crc": info.CRC}
    patch_central(path, 0, **{k: now[k] + v for k, v in patch.items()})
    expected = list(iter_member_digests(path))
    streamed = _streams(monkeypatch)
    got = scan_zip(path).members
    assert list(got) == expected
    assert got[0].problems and streamed == ["a.txt"]


def test_each_gets_the_digests_in_central_directory_order(tmp_path: Path) -> None:
    files = {f"m{i:02d}.txt": b"%d" % i * (i + 1) for i in range(30)}
    files["../unsafe.txt"] = b"x"
    path = foreign(tmp_path, files)
    # The index in another order than the data: the hand-on waits for each one's turn.
    index = list(reversed(read_zip_index(path)))
    kept = scan_zip(path, index=index, sha1=False)
    handed: list[packaging.MemberDigest] = []
    scan = scan_zip(path, index=index, sha1=False, each=handed.append)
    assert handed == list(kept.members) and [d.name for d in handed] == [m.name for m in index]
    assert scan.members == () and scan.sha256 == kept.sha256


@pytest.fixture(autouse=True)
def in_process_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan these tests watch runs in this process (verify's worker process runs the same
    ``scan_zip`` with the same arguments: tests/test_verify_worker.py)."""
    monkeypatch.setenv("NINFER_VERIFY_WORKER", "off")


@pytest.fixture
def golden_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built rtx4090 set of the sample release (read only)."""
    return release_out(tmp_path_factory) / "rtx4090"


def test_verify_keeps_no_scan_records(monkeypatch: pytest.MonkeyPatch, golden_set: Path) -> None:
    calls: list[packaging.ZipScan] = []
    original = packaging.scan_zip

    def scan(*args: Any, **kwargs: Any) -> packaging.ZipScan:
        got = original(*args, **kwargs)
        calls.append(got)
        return got

    monkeypatch.setattr(packaging, "scan_zip", scan)
    report = _verify.verify_set(golden_set)
    assert report.ok, report.failures
    assert len(calls) == 1 and calls[0].members == ()


def test_a_scan_failing_after_handing_on_leaves_no_members(
    monkeypatch: pytest.MonkeyPatch, golden_set: Path
) -> None:
    original = packaging.scan_zip

    def scan(*args: Any, each: Any = None, **kwargs: Any) -> packaging.ZipScan:
        got = original(*args, **kwargs)
        if each is not None:
            each(got.members[0])
        raise OSError("the disk went away")

    monkeypatch.setattr(packaging, "scan_zip", scan)
    report = _verify.verify_set(golden_set)
    zip_name = next(golden_set.glob("*.zip")).name
    assert f"{zip_name}: the disk went away" in report.failures
    # Without members no cross-check runs: no line about a member the SBOMs list.
    assert not [f for f in report.failures if "package member" in f or "not in the package" in f]


def test_digests_do_not_wait_behind_a_streamed_member(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streamed member is finished once a few later members completed, also when those were
    read in one call: the digests handed on in order never pile up behind it."""
    files = {"big.bin": bytes(range(256)) * 1024}
    files.update({f"licenses/f{i:03d}.txt": (b"%d " % i) * 50 for i in range(100)})
    path = ours(tmp_path, files)
    most = [0]
    put = _zipread._InOrder.put

    def counted(self: _zipread._InOrder, i: int, digest: packaging.MemberDigest) -> None:
        put(self, i, digest)
        most[0] = max(most[0], len(self.ready))

    monkeypatch.setattr(_zipread._InOrder, "put", counted)
    handed: list[packaging.MemberDigest] = []
    scan_zip(path, sha1=False, each=handed.append)
    assert [d.name for d in handed] == list(files)
    assert most[0] <= _zipread._LAG + 1


def test_consume_lets_the_index_go_as_the_scan_goes(tmp_path: Path) -> None:
    files = {f"licenses/f{i:03d}.txt": (b"%d " % i) * 50 for i in range(40)}
    path = ours(tmp_path, files)
    index: list[Any] = list(read_zip_index(path))
    expected = list(scan_zip(path, sha1=False).members)
    gone_before: list[int] = []

    def each(d: packaging.MemberDigest) -> None:
        gone_before.append(sum(m is None for m in index))
        handed.append(d)

    handed: list[packaging.MemberDigest] = []
    scan_zip(path, sha1=False, index=index, each=each, consume=True)
    assert handed == expected
    assert gone_before == list(range(len(files)))  # each entry let go once its member is handed on
    assert index == [None] * len(files)
    with pytest.raises(TypeError):
        scan_zip(path, index=tuple(read_zip_index(path)), consume=True)


def test_verify_gives_the_scan_its_index(monkeypatch: pytest.MonkeyPatch, golden_set: Path) -> None:
    given: list[Any] = []
    original = packaging.scan_zip

    def scan(*args: Any, **kwargs: Any) -> packaging.ZipScan:
        got = original(*args, **kwargs)
        given.append((kwargs.get("consume"), kwargs["index"]))
        return got

    monkeypatch.setattr(packaging, "scan_zip", scan)
    assert _verify.verify_set(golden_set).ok
    [(consume, index)] = given
    assert consume is True and index and all(m is None for m in index)


def test_index_fields_are_in_place(tmp_path: Path) -> None:
    """Entries built without keywords still have each value in its field (zipfile's view)."""
    path = foreign(tmp_path, {"a.txt": b"a" * 300, "dir/b.bin": bytes(range(256))})
    for m, info in zip(read_zip_index(path), zipfile.ZipFile(path).infolist(), strict=True):
        assert (m.name, m.flags, m.method, m.crc32, m.compressed_size, m.size, m.header_offset) == (
            info.filename,
            info.flag_bits,
            info.compress_type,
            info.CRC,
            info.compress_size,
            info.file_size,
            info.header_offset,
        )
        assert (m.external_attr, m.create_system, m.version_made_by >> 8, m.date_time) == (
            info.external_attr,
            info.create_system,
            info.create_system,
            info.date_time,
        )
        assert m.version_needed == info.extract_version and m.central_extra == info.extra


def test_overlap_is_found_in_any_order(tmp_path: Path) -> None:
    path = foreign(tmp_path, {"a.txt": b"a" * 100, "b.txt": b"b" * 100}, method=zipfile.ZIP_STORED)
    first, second = read_zip_index(path)
    _zipread._check_no_overlap(path, [second, first])  # out of order, apart: no overlap
    wide = first._replace(compressed_size=second.header_offset - first.data_offset + 10)
    for members in ([wide, second], [second, wide]):
        with pytest.raises(Exception, match=r"members 'a\.txt' and 'b\.txt' overlap"):
            _zipread._check_no_overlap(path, members)
