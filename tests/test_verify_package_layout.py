"""verify refuses a package zip laid out otherwise than our writer lays it out, a member name a
Windows install cannot keep apart, an empty package, and a provenance statement whose staged
inputs are not the shipped bytes — in ``verify`` and in the exported stdlib verifier alike.

Found by a hostile review (2026-12-03): each of these sets, fully re-sealed, verified OK before.
The unit tests write zips with the writer's own record functions (``packaging._zipformat``) and
change one thing; the set tests re-seal every binding (``reseal_support``), with a control that
must still verify OK.
"""

from __future__ import annotations

import shutil
import struct
import unicodedata
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_support import TAGS, cli, release_out, stem
from ninfer_release.errors import IntegrityError
from ninfer_release.packaging import PlanEntry, compress_members, scan_zip, write_zip
from ninfer_release.packaging._zipformat import central_header, end_records, local_header
from ninfer_release.packaging._ziplayout import layout_problems
from ninfer_release.releases import _standalone_verifier as standalone
from reseal_support import members_of, rebuild, replace_zip, standalone_run

EPOCH = 1763596800
LANE = "rtx4090"


def _ours(path: Path, entries: list[tuple[str, bytes]]) -> Path:
    """``entries`` zipped by our writer (the layout every check here starts from)."""
    members = compress_members([PlanEntry(name=n, data=b) for n, b in entries], level=6, workdir=path.parent)
    write_zip(members, path, epoch=EPOCH)
    return path


def _stored_zip(
    path: Path,
    entries: list[tuple[str, bytes]],
    *,
    central: Callable[[int, bytes], bytes] = lambda i, h: h,
    local: Callable[[int, bytes], bytes] = lambda i, h: h,
    before: Callable[[int], bytes] = lambda i: b"",
    tail: bytes = b"",
) -> Path:
    """A stored-member zip made of the writer's own records, with one record changed by a hook:
    ``central``/``local`` map (index, header) to the bytes written, ``before`` gives bytes written
    before member ``index``'s local header (not listed anywhere), ``tail`` ends the file."""
    out, directory = bytearray(), bytearray()
    for i, (name, data) in enumerate(entries):
        out += before(i)
        crc = zlib.crc32(data)
        offset = len(out)
        values: dict[str, Any] = {
            "name": name,
            "method": 0,
            "crc32": crc,
            "size": len(data),
            "compressed_size": len(data),
        }
        out += local(i, local_header(**values, epoch=EPOCH, zip64=False)) + data
        entry = central_header(**values, offset=offset, epoch=EPOCH)
        directory += central(i, entry)
    cd_offset = len(out)
    out += directory + end_records(count=len(entries), cd_offset=cd_offset, cd_size=len(directory)) + tail
    path.write_bytes(bytes(out))
    return path


ENTRIES = [("bin/a.dll", b"MZ one"), ("bin/b.dll", b"MZ two"), ("licenses/x.txt", b"text")]


def _both(path: Path) -> tuple[list[str], list[str]]:
    """What ``verify``'s layout check and the stdlib verifier's say of the zip at ``path``."""
    with path.open("rb") as f:
        f.seek(0, 2)
        size = f.tell()
        names = [m[0] for m in standalone.zip_index(f, size)]
        alone = standalone._layout_problems(f, size) + standalone._name_rule_problems(names)
    return layout_problems(path), alone


def test_the_writers_own_zips_have_the_layout(tmp_path: Path) -> None:
    """Deflated, stored, non-ASCII and the hand-made copy of the writer's records: no problem."""
    deflated = _ours(tmp_path / "a.zip", [*ENTRIES, ("licenses/café.txt", b"x" * 100_000)])
    stored = _stored_zip(tmp_path / "b.zip", ENTRIES)
    empty = _ours(tmp_path / "c.zip", [])
    for z in (deflated, stored, empty):
        assert _both(z) == ([], []), z


@pytest.mark.parametrize(
    ("case", "build", "says"),
    [
        (
            "bytes before the first member",
            lambda p: _stored_zip(p, ENTRIES, before=lambda i: b"JUNK" if i == 0 else b""),
            "offset",
        ),
        (
            "a hidden local entry between members",
            lambda p: _stored_zip(
                p,
                ENTRIES,
                before=lambda i: (
                    local_header(
                        name="bin/b.dll",
                        method=0,
                        crc32=zlib.crc32(b"EVIL"),
                        size=4,
                        compressed_size=4,
                        epoch=EPOCH,
                        zip64=False,
                    )
                    + b"EVIL"
                    if i == 1
                    else b""
                ),
            ),
            "offset",
        ),
        ("an archive comment", lambda p: _stored_zip(p, ENTRIES, tail=b""), "end records"),
        (
            "local method differs",
            lambda p: _stored_zip(
                p, ENTRIES, local=lambda i, h: h[:8] + struct.pack("<H", 8) + h[10:] if i == 1 else h
            ),
            "local header differs",
        ),
        (
            "local CRC differs",
            lambda p: _stored_zip(
                p, ENTRIES, local=lambda i, h: h[:14] + b"\0\0\0\0" + h[18:] if i == 0 else h
            ),
            "local header differs",
        ),
        (
            "a symlink's attributes",
            lambda p: _stored_zip(
                p,
                ENTRIES,
                central=lambda i, h: h[:38] + struct.pack("<I", 0o120777 << 16) + h[42:] if i == 0 else h,
            ),
            "central directory entry",
        ),
        (
            "an Info-ZIP Unicode Path extra field",
            lambda p: _stored_zip(
                p,
                ENTRIES,
                central=lambda i, h: (
                    h[:30] + struct.pack("<H", 13) + h[32:] + struct.pack("<HHBI", 0x7075, 9, 1, 0) + b"../x"
                    if i == 2
                    else h
                ),
            ),
            "central directory",
        ),
        (
            "a file comment",
            lambda p: _stored_zip(
                p,
                ENTRIES,
                central=lambda i, h: h[:32] + struct.pack("<H", 2) + h[34:] + b"hi" if i == 0 else h,
            ),
            "central directory",
        ),
        ("case twins", lambda p: _ours(p, [("bin/A.dll", b"1"), ("bin/a.dll", b"2")]), "case-insensitive"),
        (
            "a folder spelled two ways",
            lambda p: _ours(p, [("Bin/a.dll", b"1"), ("bin/b.dll", b"2")]),
            "case-insensitive",
        ),
        (
            "NFC and NFD twins",
            lambda p: _ours(
                p, [(unicodedata.normalize(f, "licenses/café.txt"), f.encode()) for f in ("NFC", "NFD")]
            ),
            "NFC",
        ),
        ("a reserved device name", lambda p: _ours(p, [("bin/CON", b"x")]), "device name"),
        ("a trailing dot", lambda p: _ours(p, [("bin/a.dll", b"1"), ("bin/a.dll.", b"2")]), "dot or space"),
        (
            "a Windows 8.3 short name",
            lambda p: _ours(p, [("bin/ninfer-server.exe", b"1"), ("bin/ninfer~1.exe", b"2")]),
            "8.3",
        ),
        ("a file that is also a folder", lambda p: _ours(p, [("bin/x", b"1"), ("bin/x/y", b"2")]), "folder"),
        ("a right-to-left override", lambda p: _ours(p, [("bin/\u202eexe.dll", b"1")]), "invisible"),
        ("a zero-width space", lambda p: _ours(p, [("bin/cudart64_13\u200b.dll", b"1")]), "invisible"),
        ("a byte order mark", lambda p: _ours(p, [("licenses/\ufeffx.txt", b"1")]), "invisible"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_departure_is_found_by_both_verifiers(
    tmp_path: Path, case: str, build: Callable[[Path], Path], says: str
) -> None:
    if case == "an archive comment":
        zip_path = _stored_zip(tmp_path / "z.zip", ENTRIES)
        data = bytearray(zip_path.read_bytes())
        struct.pack_into("<H", data, len(data) - 2, 2)
        zip_path.write_bytes(bytes(data) + b"hi")
    else:
        zip_path = build(tmp_path / "z.zip")
    ours, alone = _both(zip_path)
    assert ours, case
    assert alone, case
    assert any(says in m for m in ours), ours
    assert any(says.lower() in m.lower() for m in alone), alone


def test_scan_with_layout_refuses_before_reading_members(tmp_path: Path) -> None:
    zip_path = _stored_zip(tmp_path / "z.zip", ENTRIES, before=lambda i: b"JUNK" if i == 0 else b"")
    scan_zip(zip_path, sha1=False)  # a reader of any zip takes it (the records are consistent)
    with pytest.raises(IntegrityError, match="not the package layout"):
        scan_zip(zip_path, sha1=False, layout=True)


# --- whole sets, fully re-sealed -----------------------------------------------------------------


@pytest.fixture
def resealable(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> tuple[Path, str, list[tuple[str, bytes]]]:
    src = release_out(tmp_path_factory) / LANE
    d = tmp_path / "set"
    shutil.copytree(src, d)
    return d, stem(LANE), members_of(d, stem(LANE))


def test_control_an_untampered_rebuild_resealed_verifies(
    resealable: tuple[Path, str, list[tuple[str, bytes]]], tmp_path: Path
) -> None:
    """The helper leaves nothing else for verify to find: the failures below are the checks'."""
    d, s, members = resealable
    rebuild(d, s, TAGS[LANE], members)
    result = cli("verify", d)
    assert result.code == 0, result.err
    alone = standalone_run(d, tmp_path)
    assert alone.returncode == 0, alone.stderr


def _tampered(kind: str, members: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    if kind == "empty":
        return []
    if kind == "case-twin":
        return [*members, ("bin/NINFER-SERVER.EXE", b"MZ evil")]
    if kind == "unstaged-member":
        return [*members, ("bin/evil.dll", b"MZ evil")]
    if kind == "dropped-member":
        return [(n, b) for n, b in members if n != "bin/msvcp140.dll"]
    assert kind == "staged-stale"
    return [(n, b + b"EVIL" if n == "bin/ninfer-server.exe" else b) for n, b in members]


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("empty", "not in the package"),
        ("case-twin", "case-insensitive"),
        ("staged-stale", "resolvedDependencies staged/bin/ninfer-server.exe"),
        ("unstaged-member", "'bin/evil.dll' is no staged input"),
        ("dropped-member", "staged/bin/msvcp140.dll: the package does not ship it"),
    ],
)
def test_a_resealed_tampered_set_fails_both_verifiers(
    resealable: tuple[Path, str, list[tuple[str, bytes]]], tmp_path: Path, kind: str, says: str
) -> None:
    d, s, members = resealable
    if kind == "empty":  # an empty package, even without its SPDX copy
        replace_zip(d, s, TAGS[LANE], lambda z: _ours(z, []))
    else:
        rebuild(d, s, TAGS[LANE], _tampered(kind, members))
    result = cli("verify", d)
    assert result.code == 5, result.out
    assert says in result.err, result.err
    alone = standalone_run(d, tmp_path)
    assert alone.returncode == 5, alone.stdout
    assert says in alone.stderr, alone.stderr


def test_a_resealed_set_with_bytes_before_its_central_directory_fails_both_verifiers(
    resealable: tuple[Path, str, list[tuple[str, bytes]]], tmp_path: Path
) -> None:
    """The set path of the layout check (not only its names): the rebuilt zip with 16 bytes
    nobody lists between the last member and the central directory, the end record moved to
    match, so every record is consistent and any zip reader takes it; only the tiling rule
    (records cover the file exactly) refuses it."""
    d, s, members = resealable
    rebuild(d, s, TAGS[LANE], members)
    data = (d / f"{s}.zip").read_bytes()
    count, cd_size, cd_offset = struct.unpack_from("<HIIH", data, len(data) - 12)[:3]
    hidden = b"\0" * 16
    moved = data[:cd_offset] + hidden + data[cd_offset:-22]
    moved += end_records(count=count, cd_offset=cd_offset + len(hidden), cd_size=cd_size)
    plain = tmp_path / "moved.zip"
    plain.write_bytes(moved)
    scan_zip(plain, sha1=False)  # consistent records: a plain reader takes it
    replace_zip(d, s, TAGS[LANE], lambda z: z.write_bytes(moved))
    result = cli("verify", d)
    assert result.code == 5, result.out
    assert "not the package layout" in result.err, result.err
    alone = standalone_run(d, tmp_path)
    assert alone.returncode == 5, alone.stdout
    assert "not the package layout" in alone.stderr, alone.stderr


def test_the_invisible_characters_are_unicodes_format_characters() -> None:
    """One class in the build and the stdlib verifier; it holds every Cf character this Python's
    ``unicodedata`` knows, and only Cf or unassigned ones (a later Unicode adds some)."""
    from ninfer_release.packaging._paths import INVISIBLE

    assert INVISIBLE.pattern == standalone._INVISIBLE.pattern
    for cp in range(0x110000):
        c = chr(cp)
        category = unicodedata.category(c)
        assert bool(INVISIBLE.match(c)) == (category == "Cf") or (category == "Cn" and INVISIBLE.match(c)), (
            hex(cp)
        )


def test_the_build_refuses_an_invisible_character_in_a_staged_name() -> None:
    from ninfer_release.packaging._paths import _component_problems

    (problem,) = _component_problems("cudart64_13\u200b.dll")
    assert problem.startswith("component 'cudart64_13\\u200b.dll' contains invisible formatting characters")
    assert _component_problems("café.txt") == []
