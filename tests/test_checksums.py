"""SHA256SUMS writer, parser and verifier: cases C01 C03 C04 C05 C06 C08 C09 C10 (shared/cases/CASES.md)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import need_tool
from ninfer_release.checksums import parse_sha256sums, render_sha256sums, verify_sha256sums
from ninfer_release.errors import InputError

ASSET = "engine-1.0-win64.zip"
H = "ed9f6f25068608efd412958da4dfc19328ca3511251fa6d5f9c42baf230e32f8"  # sha256(b"engine")
ZEROS = "0" * 64


@pytest.fixture
def asset_dir(tmp_path: Path) -> Path:
    (tmp_path / ASSET).write_bytes(b"engine")
    return tmp_path


def verify(directory: Path, data: bytes):  # type: ignore[no-untyped-def]
    return verify_sha256sums(directory, data, source="SHA256SUMS")


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


# --- parser + verifier ---------------------------------------------------------------------------


def test_c01_crlf_verifies_with_portability_warning(asset_dir: Path) -> None:
    """C01: a lone trailing CR is not part of the name; the file verifies and warns 'not portable'."""
    report = verify(asset_dir, f"{H}  {ASSET}\r\n".encode())
    assert report.passed
    assert report.ok == (f"{ASSET}: OK",)
    assert len(report.warnings) == 1
    assert "not portable" in report.warnings[0]


def test_c03_bsd_tag_sha256_accepted(asset_dir: Path) -> None:
    """C03: `SHA256 (name) = hex` verifies."""
    report = verify(asset_dir, f"SHA256 ({ASSET}) = {H}\n".encode())
    assert report.passed
    assert report.ok == (f"{ASSET}: OK",)


@pytest.mark.parametrize(
    ("line", "algo"),
    [
        (f"SHA512 ({ASSET}) = {'ab' * 64}\n", "SHA512"),
        (f"MD5 ({ASSET}) = {'ab' * 16}\n", "MD5"),
    ],
)
def test_c03_other_algorithms_rejected_not_skipped(asset_dir: Path, line: str, algo: str) -> None:
    """C03: a tag line naming another algorithm is an error, never silently skipped."""
    report = verify(asset_dir, line.encode())
    assert not report.passed
    assert report.ok == ()
    assert report.failures == (
        f"SHA256SUMS: line 1: algorithm {algo} is not SHA-256; a SHA256SUMS file lists "
        "SHA-256 digests only (C03)",
    )


def test_c03_other_algorithm_among_good_lines_still_fails(asset_dir: Path) -> None:
    data = f"{H}  {ASSET}\nSHA512 ({ASSET}) = {'ab' * 64}\n".encode()
    report = verify(asset_dir, data)
    assert report.ok == (f"{ASSET}: OK",)
    assert not report.passed


@pytest.mark.parametrize("line", [f"{H} *{ASSET}\n", f"{H}  {ASSET}\n"])
def test_c04_binary_marker_is_not_part_of_name(asset_dir: Path, line: str) -> None:
    """C04: `H *name` and `H  name` both map to the asset name and verify OK."""
    parsed = parse_sha256sums(line.encode(), source="SHA256SUMS")
    assert [e.name for e in parsed.entries] == [ASSET]
    assert verify(asset_dir, line.encode()).passed


def test_c05_uppercase_hex_compares_case_insensitively(asset_dir: Path) -> None:
    """C05: the uppercase digest from the case verifies OK; names stay case-sensitive."""
    upper = "ED9F6F25068608EFD412958DA4DFC19328CA3511251FA6D5F9C42BAF230E32F8"
    report = verify(asset_dir, f"{upper}  {ASSET}\n".encode())
    assert report.passed
    other_case = verify(asset_dir, f"{upper}  {ASSET.upper()}\n".encode())
    assert other_case.failures == (f"SHA256SUMS: line 1: listed file not found: {ASSET.upper()!r}",)


def test_c06a_one_leading_dot_slash_stripped(asset_dir: Path) -> None:
    """C06 input A: `./name` verifies as `name`."""
    report = verify(asset_dir, f"{H}  ./{ASSET}\n".encode())
    assert report.passed
    assert report.ok == (f"{ASSET}: OK",)


@pytest.mark.parametrize("spelling", ["../" + ASSET, "././" + ASSET, "sub/../" + ASSET, "/" + ASSET])
def test_c06a_deeper_prefixes_not_rewritten(asset_dir: Path, spelling: str) -> None:
    """C06: only exactly one leading `./` is stripped; `../`, `././`, absolute paths are errors."""
    report = verify(asset_dir, f"{H}  {spelling}\n".encode())
    assert not report.passed
    assert len(report.failures) == 1
    assert repr(spelling) in report.failures[0]


@pytest.mark.parametrize("order", ["good-first", "bad-first"])
def test_c06b_two_spellings_of_one_file_fail_in_both_orders(asset_dir: Path, order: str) -> None:
    """C06 input B: `name` (right hash) and `./name` (zeros), either order, fails naming both entries."""
    lines = [f"{H}  {ASSET}\n", f"{ZEROS}  ./{ASSET}\n"]
    if order == "bad-first":
        lines.reverse()
    report = verify(asset_dir, "".join(lines).encode())
    assert not report.passed
    assert report.ok == ()
    assert len(report.failures) == 1
    msg = report.failures[0]
    assert repr(ASSET) in msg and repr("./" + ASSET) in msg
    assert "conflicting entries" in msg
    assert msg.startswith("SHA256SUMS: line 2: ")


def test_c06b_same_spelling_two_digests_fails(asset_dir: Path) -> None:
    report = verify(asset_dir, f"{H}  {ASSET}\n{ZEROS}  {ASSET}\n".encode())
    assert not report.passed and report.ok == ()


def test_identical_duplicate_line_is_a_warning(asset_dir: Path) -> None:
    report = verify(asset_dir, f"{H}  {ASSET}\n{H}  {ASSET}\n".encode())
    assert report.passed
    assert report.warnings == (f"SHA256SUMS: line 2: {ASSET!r} listed again (as on line 1)",)


def test_c08a_no_final_newline(asset_dir: Path) -> None:
    """C08a: a one-line file without a final LF verifies OK without warnings."""
    report = verify(asset_dir, f"{H}  {ASSET}".encode())
    assert report.passed and report.warnings == ()


def test_c08b_blank_last_line_warns(asset_dir: Path) -> None:
    """C08b: line + LF LF verifies OK and warns about the blank line."""
    report = verify(asset_dir, f"{H}  {ASSET}\n\n".encode())
    assert report.passed
    assert report.warnings == ("SHA256SUMS: line 2: blank line ignored (C08)",)


def test_c08c_trailing_blank_is_part_of_the_name(asset_dir: Path) -> None:
    """C08c: `name ` (trailing space) is reported as not found, not as success."""
    report = verify(asset_dir, f"{H}  {ASSET} \n".encode())
    assert not report.passed
    assert report.failures == ("SHA256SUMS: line 1: listed file not found: 'engine-1.0-win64.zip '",)


def test_c08_empty_file_is_not_success(asset_dir: Path) -> None:
    for data in (b"", b"\n", b"\n\n"):
        report = verify(asset_dir, data)
        assert not report.passed
        assert "SHA256SUMS: no files listed; nothing was verified" in report.failures


def test_c09_names_with_spaces_byte_for_byte(tmp_path: Path) -> None:
    """C09: everything after the 64 hex and the two-character separator is the name."""
    (tmp_path / "Engine Setup  1.0.zip").write_bytes(b"my app")
    h = "cccdfa68ad0c1b6620aea80c58e1e382155c654b4c8acd87822d3cc59d6b135d"
    report = verify(tmp_path, f"{h}  Engine Setup  1.0.zip\n".encode())
    assert report.passed
    assert report.ok == ("Engine Setup  1.0.zip: OK",)
    binary = parse_sha256sums(f"{h} *Engine Setup  1.0.zip\n".encode(), source="S")
    assert [e.name for e in binary.entries] == ["Engine Setup  1.0.zip"]


def test_c10_backslash_path_is_a_named_non_portable_error(tmp_path: Path) -> None:
    """C10: `dist\\name` is a non-portable path error naming the line, not a silent 'missing file'."""
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / ASSET).write_bytes(b"engine")
    report = verify(tmp_path, f"{H}  dist\\{ASSET}\n".encode())
    assert not report.passed
    assert len(report.failures) == 1
    assert report.failures[0].startswith(
        "SHA256SUMS: line 1: non-portable path 'dist\\\\engine-1.0-win64.zip'"
    )
    assert "not found" not in report.failures[0]
    # The same asset listed with '/' verifies: nested assets use forward slashes.
    assert verify(tmp_path, f"{H}  dist/{ASSET}\n".encode()).passed


def test_mismatch_reported_with_both_digests(asset_dir: Path) -> None:
    report = verify(asset_dir, f"{ZEROS}  {ASSET}\n".encode())
    assert report.failures == (
        f"SHA256SUMS: line 1: {ASSET!r}: SHA-256 mismatch: listed {ZEROS}, file has {H}",
    )


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
def test_malformed_lines_are_errors(asset_dir: Path, line: str) -> None:
    report = verify(asset_dir, f"{H}  {ASSET}\n{line}".encode())
    assert report.ok == (f"{ASSET}: OK",)
    assert not report.passed
    assert report.failures[0].startswith("SHA256SUMS: line 2: ")


def test_gnu_escaped_line_with_backslash_name_is_non_portable(asset_dir: Path) -> None:
    parsed = parse_sha256sums(f"\\{H}  dist\\\\{ASSET}\n".encode(), source="S")
    assert parsed.entries == ()
    assert "non-portable path" in parsed.errors[0].message


def test_non_utf8_name_is_an_error(asset_dir: Path) -> None:
    parsed = parse_sha256sums(H.encode() + b"  \xff.zip\n", source="S")
    assert parsed.entries == () and "not valid UTF-8" in parsed.errors[0].message
