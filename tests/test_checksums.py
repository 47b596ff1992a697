"""SHA256SUMS writer and parser (what verify reads): cases C01 C03 C04 C05 C06 C08 C09 C10
(shared/cases/CASES.md)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import need_tool
from ninfer_release.checksums import ParsedSums, parse_sha256sums, render_sha256sums
from ninfer_release.errors import InputError

ASSET = "engine-1.0-win64.zip"
H = "ed9f6f25068608efd412958da4dfc19328ca3511251fa6d5f9c42baf230e32f8"  # sha256(b"engine")
ZEROS = "0" * 64


@pytest.fixture
def asset_dir(tmp_path: Path) -> Path:
    (tmp_path / ASSET).write_bytes(b"engine")
    return tmp_path


def parse(data: bytes) -> ParsedSums:
    """``data`` read as the file ``SHA256SUMS`` (what ``verify`` and ``publish`` compare with the files)."""
    return parse_sha256sums(data, source="SHA256SUMS")


def errors(parsed: ParsedSums) -> tuple[str, ...]:
    return tuple(str(p) for p in parsed.errors)


def warnings(parsed: ParsedSums) -> tuple[str, ...]:
    return tuple(str(p) for p in parsed.warnings)


# --- writer -------------------------------------------------------------------------------------


def test_writer_exact_bytes_sorted_lf_lowercase() -> None:
    """C01/C05/C08: LF only, lowercase, sorted by name bytes, exactly one trailing LF."""
    out = render_sha256sums({"b.zip": H.upper(), "B.zip": ZEROS, "a/c.json": H})
    assert out == f"{ZEROS}  B.zip\n{H}  a/c.json\n{H}  b.zip\n".encode()
    assert b"\r" not in out
    assert out.endswith(b"\n") and not out.endswith(b"\n\n")


def test_writer_sorts_by_utf8_bytes_not_locale() -> None:
    out = render_sha256sums({"é.txt": H, "z.txt": H, "Z.txt": H})
    assert [line.split(b"  ", 1)[1] for line in out.splitlines()] == [b"Z.txt", b"z.txt", "é.txt".encode()]


def test_c01_writer_never_emits_cr() -> None:
    """C01: no 0x0D byte in writer output; every line ends in a single 0x0A."""
    out = render_sha256sums({ASSET: H, "x.json": ZEROS})
    assert 0x0D not in out
    assert all(line.endswith(b"\n") and not line.endswith(b"\r\n") for line in out.splitlines(keepends=True))


def test_c09_writer_keeps_spaces_in_names() -> None:
    """C09: a name with two inner spaces is written byte for byte after the two-space separator."""
    h = "cccdfa68ad0c1b6620aea80c58e1e382155c654b4c8acd87822d3cc59d6b135d"
    assert render_sha256sums({"Engine Setup  1.0.zip": h}) == f"{h}  Engine Setup  1.0.zip\n".encode()


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("dist\\engine.zip", "backslash"),  # C10
        ("./engine.zip", "'./'"),  # C06
        ("/abs.zip", "leading '/'"),
        ("a\r.zip", "CR"),  # C01
        ("a\n.zip", "CR"),
        ("trailing.zip ", "trailing blanks"),  # C08
        ("a/../b.zip", "'..'"),
        ("", "empty"),
    ],
)
def test_writer_refuses_unportable_names(name: str, fragment: str) -> None:
    with pytest.raises(InputError) as exc:
        render_sha256sums({name: H})
    assert fragment in str(exc.value)


def test_writer_reports_every_bad_entry_at_once() -> None:
    with pytest.raises(InputError) as exc:
        render_sha256sums({"a\\b": H, "ok.zip": "abc", "./c": H})
    assert len(exc.value.problems) == 3


def test_writer_output_accepted_by_gnu_sha256sum(asset_dir: Path) -> None:
    sha256sum = need_tool("sha256sum")
    (asset_dir / "Engine Setup  1.0.zip").write_bytes(b"my app")
    names = [ASSET, "Engine Setup  1.0.zip"]
    sums = render_sha256sums({n: hashlib.sha256((asset_dir / n).read_bytes()).hexdigest() for n in names})
    (asset_dir / "SHA256SUMS").write_bytes(sums)
    res = subprocess.run(
        [sha256sum, "-c", "--strict", "SHA256SUMS"], cwd=asset_dir, capture_output=True, check=False
    )
    assert res.returncode == 0, res.stderr
    shasum = shutil.which("shasum")
    if shasum:  # perl shasum rejects CRLF (C01)
        res = subprocess.run(
            [shasum, "-a", "256", "-c", "SHA256SUMS"], cwd=asset_dir, capture_output=True, check=False
        )
        assert res.returncode == 0, res.stderr
    busybox = shutil.which("busybox")
    if busybox:  # BusyBox is the strictest consumer (C01, C03, C05)
        res = subprocess.run(
            [busybox, "sha256sum", "-c", "SHA256SUMS"], cwd=asset_dir, capture_output=True, check=False
        )
        assert res.returncode == 0, res.stderr


def test_writer_roundtrips_through_parser() -> None:
    entries = {ASSET: H, "Engine Setup  1.0.zip": ZEROS, "sub/é.json": H}
    parsed = parse_sha256sums(render_sha256sums(entries), source="SHA256SUMS")
    assert parsed.ok and not parsed.warnings
    assert parsed.as_dict() == entries


# --- parser --------------------------------------------------------------------------------------
# The set's verify path (releases/_verify.py) compares these entries with the files; its own
# failures (a mismatch naming both digests, a listed file missing) are cases of tests/data/hostile.


def test_c01_crlf_parses_with_portability_warning() -> None:
    """C01: a lone trailing CR is not part of the name; the entry stands and warns 'not portable'."""
    parsed = parse(f"{H}  {ASSET}\r\n".encode())
    assert parsed.ok
    assert parsed.as_dict() == {ASSET: H}
    assert len(parsed.warnings) == 1
    assert "not portable" in warnings(parsed)[0]


def test_c03_bsd_tag_sha256_accepted() -> None:
    """C03: `SHA256 (name) = hex` is an entry."""
    parsed = parse(f"SHA256 ({ASSET}) = {H}\n".encode())
    assert parsed.ok
    assert parsed.as_dict() == {ASSET: H}
    assert parsed.entries[0].form == "bsd-tag"


@pytest.mark.parametrize(
    ("line", "algo"),
    [
        (f"SHA512 ({ASSET}) = {'ab' * 64}\n", "SHA512"),
        (f"MD5 ({ASSET}) = {'ab' * 16}\n", "MD5"),
    ],
)
def test_c03_other_algorithms_rejected_not_skipped(line: str, algo: str) -> None:
    """C03: a tag line naming another algorithm is an error, never silently skipped."""
    parsed = parse(line.encode())
    assert not parsed.ok
    assert parsed.entries == ()
    assert errors(parsed) == (
        f"SHA256SUMS: line 1: algorithm {algo} is not SHA-256; a SHA256SUMS file lists "
        "SHA-256 digests only (C03)",
    )


def test_c03_other_algorithm_among_good_lines_still_fails() -> None:
    parsed = parse(f"{H}  {ASSET}\nSHA512 ({ASSET}) = {'ab' * 64}\n".encode())
    assert parsed.as_dict() == {ASSET: H}
    assert not parsed.ok


@pytest.mark.parametrize("line", [f"{H} *{ASSET}\n", f"{H}  {ASSET}\n"])
def test_c04_binary_marker_is_not_part_of_name(line: str) -> None:
    """C04: `H *name` and `H  name` both map to the asset name."""
    parsed = parse(line.encode())
    assert parsed.ok
    assert parsed.as_dict() == {ASSET: H}


def test_c05_uppercase_hex_is_read_lowercase_and_names_stay_case_sensitive() -> None:
    """C05: the uppercase digest from the case is the lowercase digest; a name keeps its case."""
    upper = "ED9F6F25068608EFD412958DA4DFC19328CA3511251FA6D5F9C42BAF230E32F8"
    assert parse(f"{upper}  {ASSET}\n".encode()).as_dict() == {ASSET: H}
    assert parse(f"{upper}  {ASSET.upper()}\n".encode()).as_dict() == {ASSET.upper(): H}


def test_c06a_one_leading_dot_slash_stripped() -> None:
    """C06 input A: `./name` is the entry `name` (its spelling kept)."""
    parsed = parse(f"{H}  ./{ASSET}\n".encode())
    assert parsed.ok
    assert parsed.as_dict() == {ASSET: H}
    assert parsed.entries[0].spelling == "./" + ASSET


@pytest.mark.parametrize("spelling", ["../" + ASSET, "././" + ASSET, "sub/../" + ASSET, "/" + ASSET])
def test_c06a_deeper_prefixes_not_rewritten(spelling: str) -> None:
    """C06: only exactly one leading `./` is stripped; `../`, `././`, absolute paths are errors."""
    parsed = parse(f"{H}  {spelling}\n".encode())
    assert not parsed.ok
    assert len(parsed.errors) == 1
    assert repr(spelling) in errors(parsed)[0]


@pytest.mark.parametrize("order", ["good-first", "bad-first"])
def test_c06b_two_spellings_of_one_file_fail_in_both_orders(order: str) -> None:
    """C06 input B: `name` (right hash) and `./name` (zeros), either order, fails naming both entries."""
    lines = [f"{H}  {ASSET}\n", f"{ZEROS}  ./{ASSET}\n"]
    if order == "bad-first":
        lines.reverse()
    parsed = parse("".join(lines).encode())
    assert not parsed.ok
    assert parsed.entries == ()
    assert len(parsed.errors) == 1
    msg = errors(parsed)[0]
    assert repr(ASSET) in msg and repr("./" + ASSET) in msg
    assert "conflicting entries" in msg
    assert msg.startswith("SHA256SUMS: line 2: ")


def test_c06b_same_spelling_two_digests_fails() -> None:
    parsed = parse(f"{H}  {ASSET}\n{ZEROS}  {ASSET}\n".encode())
    assert not parsed.ok and parsed.entries == ()


def test_identical_duplicate_line_is_a_warning() -> None:
    parsed = parse(f"{H}  {ASSET}\n{H}  {ASSET}\n".encode())
    assert parsed.ok
    assert parsed.as_dict() == {ASSET: H}
    assert warnings(parsed) == (f"SHA256SUMS: line 2: {ASSET!r} listed again (as on line 1)",)


def test_c08a_no_final_newline() -> None:
    """C08a: a one-line file without a final LF is read without warnings."""
    parsed = parse(f"{H}  {ASSET}".encode())
    assert parsed.ok and parsed.warnings == ()
    assert parsed.as_dict() == {ASSET: H}


def test_c08b_blank_last_line_warns() -> None:
    """C08b: line + LF LF is read and warns about the blank line."""
    parsed = parse(f"{H}  {ASSET}\n\n".encode())
    assert parsed.ok
    assert warnings(parsed) == ("SHA256SUMS: line 2: blank line ignored (C08)",)


def test_c08c_trailing_blank_is_part_of_the_name() -> None:
    """C08c: `name ` (trailing space) is the name with its blank, never the asset's name."""
    parsed = parse(f"{H}  {ASSET} \n".encode())
    assert parsed.as_dict() == {ASSET + " ": H}


def test_c08_empty_file_is_not_success() -> None:
    for data in (b"", b"\n", b"\n\n"):
        parsed = parse(data)
        assert not parsed.ok
        assert parsed.entries == ()


def test_c09_names_with_spaces_byte_for_byte() -> None:
    """C09: everything after the 64 hex and the two-character separator is the name."""
    h = "cccdfa68ad0c1b6620aea80c58e1e382155c654b4c8acd87822d3cc59d6b135d"
    parsed = parse(f"{h}  Engine Setup  1.0.zip\n".encode())
    assert parsed.ok
    assert parsed.as_dict() == {"Engine Setup  1.0.zip": h}
    binary = parse_sha256sums(f"{h} *Engine Setup  1.0.zip\n".encode(), source="S")
    assert [e.name for e in binary.entries] == ["Engine Setup  1.0.zip"]


def test_c10_backslash_path_is_a_named_non_portable_error() -> None:
    """C10: `dist\\name` is a non-portable path error naming the line, not a silent 'missing file'."""
    parsed = parse(f"{H}  dist\\{ASSET}\n".encode())
    assert not parsed.ok
    assert len(parsed.errors) == 1
    assert errors(parsed)[0].startswith(
        "SHA256SUMS: line 1: non-portable path 'dist\\\\engine-1.0-win64.zip'"
    )
    # The same asset listed with '/' is an entry: nested assets use forward slashes.
    assert parse(f"{H}  dist/{ASSET}\n".encode()).as_dict() == {f"dist/{ASSET}": H}


@pytest.mark.parametrize(
    "line",
    [
        f"{H[:-1]}  {ASSET}\n",  # 63 hex
        f"{'ab' * 64}  {ASSET}\n",  # a SHA-512 digest in GNU form
        f"{H}{ASSET}\n",  # no separator
        f"{H}\t{ASSET}\n",  # tab separator
        "garbage\n",
        "   \n",
    ],
)
def test_malformed_lines_are_errors(line: str) -> None:
    parsed = parse(f"{H}  {ASSET}\n{line}".encode())
    assert parsed.as_dict() == {ASSET: H}
    assert not parsed.ok
    assert errors(parsed)[0].startswith("SHA256SUMS: line 2: ")


def test_gnu_escaped_line_with_backslash_name_is_non_portable() -> None:
    parsed = parse_sha256sums(f"\\{H}  dist\\\\{ASSET}\n".encode(), source="S")
    assert parsed.entries == ()
    assert "non-portable path" in parsed.errors[0].message


def test_non_utf8_name_is_an_error() -> None:
    parsed = parse_sha256sums(H.encode() + b"  \xff.zip\n", source="S")
    assert parsed.entries == () and "not valid UTF-8" in parsed.errors[0].message
