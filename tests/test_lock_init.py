"""``lock init`` (a dependencies.lock.json draft from PE files + the catalog) and ``receipt new``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flow_support import RELEASE, SOURCE_COMMIT, cli, ok, release_out, samples
from ninfer_release.hashing import sha256_file

LANE = "rtx4090"


@pytest.fixture
def staged(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A copy of the sample rtx4090 staged tree without its lock."""
    tree = tmp_path / LANE
    shutil.copytree(samples(tmp_path_factory) / LANE, tree)
    (tree / "dependencies.lock.json").unlink()
    return tree


def _lock(tree: Path) -> dict[str, Any]:
    doc = json.loads((tree / "dependencies.lock.json").read_bytes())
    assert isinstance(doc, dict)
    return doc


def test_draft_fills_what_catalog_and_pe_know_and_marks_the_rest(
    staged: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    result = cli("lock", "init", staged, "--json")
    ok(result)
    report = json.loads(result.out)
    sample = _lock(samples(tmp_path_factory) / LANE)
    draft = _lock(staged)
    assert draft["schema"] == 1 and draft["vendored"] == []
    by_file = {r["file"]: r for r in draft["redistributables"]}
    want = {r["file"]: r for r in sample["redistributables"]}
    assert sorted(by_file) == sorted(want)  # every bin/ file but the engine file
    for name, entry in by_file.items():
        assert entry["sha256"] == sha256_file(staged / name)
        for key, value in entry.items():
            if isinstance(value, str) and value.startswith("TODO(lock init)"):
                continue
            assert value == want[name][key], (name, key)
    # cudart: the CUDA version from its version strings is the wheel version; the stand-ins say so
    assert by_file["bin/cudart64_13.dll"] == want["bin/cudart64_13.dll"]
    assert by_file["bin/dstorage.dll"] == want["bin/dstorage.dll"]
    # the MSVC runtime DLLs name the redist build, not the wheel's version: left to the engineer
    crt = by_file["bin/msvcp140.dll"]
    assert crt["version"] == (
        "TODO(lock init): version of the msvc-runtime package (PE FileVersion 14.44.35211.0; "
        "major.minor must agree)"
    )
    assert crt["purl"] == "TODO(lock init): purl pkg:pypi/msvc-runtime@<version>"
    assert report["todo_count"] == 6
    assert report["engine_files"] == ["bin/ninfer-server.exe"]
    assert report["missing_imports"] == {}


def test_a_build_refuses_a_lock_with_markers_naming_each(staged: Path, tmp_path: Path) -> None:
    ok(cli("lock", "init", staged))
    lock_file = staged / "dependencies.lock.json"
    result = cli("build", "lane", LANE, "--release", RELEASE, "--inputs", staged, "--out", tmp_path / "o")
    assert result.code == 4, result.text
    lines = result.err.splitlines()
    assert len(lines) == 6
    assert lines[0] == (
        f"error: {lock_file}: redistributables[3].purl: still a lock init marker of bin/msvcp140.dll: "
        "'TODO(lock init): purl pkg:pypi/msvc-runtime@<version>'; fill it in"
    )
    assert all("still a lock init marker" in line for line in lines)
    assert not (tmp_path / "o").exists()


def test_a_filled_in_draft_builds(staged: Path, tmp_path: Path) -> None:
    ok(cli("lock", "init", staged))
    doc = _lock(staged)
    for r in doc["redistributables"]:
        if r["package"] == "msvc-runtime":
            r["version"], r["purl"] = "14.44.35112", "pkg:pypi/msvc-runtime@14.44.35112"
    (staged / "dependencies.lock.json").write_text(json.dumps(doc, indent=2) + "\n")
    ok(
        cli(
            "build",
            "lane",
            LANE,
            "--release",
            RELEASE,
            "--inputs",
            staged,
            "--out",
            tmp_path / "o",
            "--offline",
        )
    )


def test_unknown_dll_non_pe_file_and_unstaged_import(staged: Path) -> None:
    # an unknown DLL (a renamed stand-in), a non-PE file and a DLL the engine imports but is gone
    shutil.copyfile(staged / "bin" / "dstorage.dll", staged / "bin" / "vendorx.dll")
    (staged / "bin" / "readme.txt").write_text("not a binary\n")
    (staged / "bin" / "cudart64_13.dll").unlink()
    result = cli("lock", "init", staged, "--json")
    ok(result)
    report = json.loads(result.out)
    entry = next(r for r in _lock(staged)["redistributables"] if r["file"] == "bin/vendorx.dll")
    assert entry["package"] == (
        "TODO(lock init): package that ships vendorx.dll "
        "(PE ProductName 'STAND-IN for Microsoft DirectStorage (sample only)')"
    )
    assert entry["supplier"] == "TODO(lock init): supplier (PE CompanyName 'OMP NInfer sample')"
    assert entry["group"].startswith("TODO(lock init): group, one of")
    assert entry["stand_in"] is True  # its own version resource says stand-in
    drafted = {f["file"]: f for f in report["files"]}
    assert drafted["bin/vendorx.dll"]["todo"] == [
        "group",
        "package",
        "version",
        "purl",
        "supplier",
        "license",
    ]
    assert drafted["bin/readme.txt"]["pe"] is False
    assert report["missing_imports"] == {"cudart64_13.dll": ["bin/ninfer-server.exe"]}
    assert any(n.startswith("cudart64_13.dll: imported by bin/ninfer-server.exe") for n in report["notes"])


def test_lock_init_never_overwrites_without_force(staged: Path) -> None:
    target = staged / "dependencies.lock.json"
    target.write_text("mine\n")
    result = cli("lock", "init", staged)
    assert result.code == 4 and "refusing to overwrite" in result.err
    assert target.read_text() == "mine\n"
    ok(cli("lock", "init", staged, "--force"))
    assert _lock(staged)["schema"] == 1


def test_lock_init_without_bin_is_exit_4(tmp_path: Path) -> None:
    result = cli("lock", "init", tmp_path)
    assert result.code == 4 and "no bin/ directory" in result.err


# --- receipt new ------------------------------------------------------------------------------


def test_receipt_new_is_bound_to_the_draft_set_and_seals(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    drafts = release_out(tmp_path_factory)
    set_dir = drafts / LANE
    sums = {
        name: digest
        for digest, name in (
            line.split("  ", 1) for line in (set_dir / "SHA256SUMS").read_text().splitlines()
        )
    }
    target = tmp_path / "receipts" / LANE / "run-1.json"
    result = cli(
        "receipt", "new", set_dir, "--out", target, "--gate", "G1=pass", "--gate", "G22=not_applicable",
        "--measurement", "c1_decode_tok_s=150.94", "--measurement", "driver=581.57",
    )  # fmt: skip
    ok(result)
    doc = json.loads(target.read_bytes())
    stem = next(n for n in sums if n.endswith(".zip"))[: -len(".zip")]
    assert doc == {
        "schema": 2,
        "lane": LANE,
        "source_commit": SOURCE_COMMIT,
        "profile_id": "qwen38-4090-native-v0.7.0-beta.2",
        "config_sha256": sums[f"{stem}.config.toml"],
        "package_sha256": sums[f"{stem}.zip"],
        "gates": {"G1": "pass", "G22": "not_applicable"},
        "measurements": {"c1_decode_tok_s": 150.94, "driver": 581.57},
    }
    again = cli("receipt", "new", set_dir, "--out", target)
    assert again.code == 4 and "already exists" in again.err
    sealed = tmp_path / "sealed"
    src = samples(tmp_path_factory)
    ok(cli("build", "lane", LANE, "--release", RELEASE, "--inputs", src, "--receipts", tmp_path / "receipts",
           "--out", sealed, "--offline"))  # fmt: skip
    qualification = json.loads(next((sealed / LANE).glob("*.qualification.json")).read_bytes())
    assert qualification["status"] == "qualified"


def test_receipt_template_without_gates_cannot_qualify(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """An unfilled ``receipt new`` output names the right bytes but carries no evidence of a run:
    the command says so, and sealing refuses it (exit 5) naming the file and ``gates``."""
    set_dir = release_out(tmp_path_factory) / LANE
    target = tmp_path / "receipts" / LANE / "template.json"
    result = cli("receipt", "new", set_dir, "--out", target)
    ok(result)
    assert "no gate results: this receipt cannot qualify the set until the hardware run's gates" in result.out
    shown = cli("--json", "receipt", "new", set_dir, "--out", tmp_path / "again.json")
    ok(shown)
    assert json.loads(shown.out)["can_qualify"] is False
    sealed = tmp_path / "sealed"
    src = samples(tmp_path_factory)
    refused = cli("build", "lane", LANE, "--release", RELEASE, "--inputs", src,
                  "--receipts", tmp_path / "receipts", "--out", sealed, "--offline")  # fmt: skip
    assert refused.code == 5, refused.text
    assert f"{target}: gates: no gate results; a receipt is the record of a hardware run" in refused.err
    assert not list(sealed.glob(f"{LANE}/*.qualification.json"))


def test_receipt_new_refuses_a_bad_gate_and_a_set_that_does_not_verify(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    set_dir = release_out(tmp_path_factory) / LANE
    bad = cli("receipt", "new", set_dir, "--out", tmp_path / "r.json", "--gate", "G1=maybe")
    assert bad.code == 4 and "gates.G1" in bad.err and not (tmp_path / "r.json").exists()
    copy = tmp_path / "set"
    shutil.copytree(set_dir, copy)
    config = next(copy.glob("*.config.toml"))
    config.write_bytes(config.read_bytes() + b"# edited\n")
    tampered = cli("receipt", "new", copy, "--out", tmp_path / "r.json")
    assert tampered.code == 5 and not (tmp_path / "r.json").exists()
