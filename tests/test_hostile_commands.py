"""Issue 36: the newer commands under hostile input (receipt new, sign, files:// and dir:// stores).

Each test feeds one hostile input and asserts the documented error class (exit code), the one
line naming the file and the field, and that nothing was written or lost.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ninfer_release import cli
from ninfer_release.atomic import within
from ninfer_release.errors import InputError, IntegrityError, PublishError
from ninfer_release.releases._files_store import FilesStore
from ninfer_release.releases._publish import parse_target, refuse_store_in_set
from ninfer_release.releases._signing import Bundle, load_signing_key, load_verifying_key
from ninfer_release.releases._store_io import locked_store
from test_publish import ENGINE, make_set, request_for


def test_receipt_gate_given_twice_with_different_results_is_refused() -> None:
    with pytest.raises(InputError) as caught:
        cli._pairs(("G1=fail", "G1=pass"), "--gate")
    assert caught.value.lines == [
        "--gate: G1: given twice with different values ('fail', then 'pass'); refusing to keep one"
    ]
    assert cli._pairs(("G1=pass", "G1=pass"), "--gate") == {"G1": "pass"}


@pytest.mark.parametrize("text", ["NaN", "1e999", "Infinity", "-Infinity"])
def test_receipt_non_finite_measurement_is_exit_4(text: str) -> None:
    with pytest.raises(InputError) as caught:
        cli._measurement("x", text)
    assert caught.value.exit_code == 4
    assert caught.value.lines == [
        f"--measurement: x: {text!r} is not a finite number (JSON has no NaN or infinity)"
    ]


def test_receipt_non_utf8_value_is_exit_4() -> None:
    value = os.fsdecode(b"\xff")
    with pytest.raises(InputError, match="--measurement: x: not valid UTF-8"):
        cli._pairs((f"x={value}",), "--measurement")
    with pytest.raises(InputError, match="--notes: not valid UTF-8"):
        cli._option_text("a" + value, "--notes")


@pytest.mark.parametrize("load", [load_signing_key, load_verifying_key])
def test_key_fifo_is_refused_without_blocking(tmp_path: Path, load: object) -> None:
    fifo = tmp_path / "key.pem"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="a FIFO; only regular files are read"):
        load(fifo)  # type: ignore[operator]


def test_bundle_of_deep_nesting_is_an_integrity_failure_not_a_recursion_error() -> None:
    with pytest.raises(IntegrityError, match="nested deeper than 64"):
        Bundle.parse(b"[" * 100_000 + b"]" * 100_000, where="SHA256SUMS.sigstore.json")


def test_store_or_signatures_inside_the_set_are_refused(tmp_path: Path) -> None:
    set_dir = tmp_path / "set"
    set_dir.mkdir()
    assert within(set_dir / "pub", set_dir) and within(set_dir, set_dir)
    assert not within(tmp_path / "set.sigstore", set_dir)
    for url in (f"files://{set_dir}", f"files://{set_dir}/pub", f"dir://{set_dir}/x"):
        with pytest.raises(PublishError, match="is inside the set"):
            refuse_store_in_set(parse_target(url), set_dir, url)
    refuse_store_in_set(parse_target(f"files://{tmp_path}/www"), set_dir, "files://www")


def test_files_store_refuses_a_foreign_non_empty_root(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    www = tmp_path / "www"
    www.mkdir()
    (www / "notes.txt").write_bytes(b"mine\n")
    with pytest.raises(PublishError, match="not a files:// store"):
        FilesStore(www).publish(request_for(tmp_path / "set", names))
    assert sorted(p.name for p in www.iterdir()) == ["notes.txt"]
    assert (www / "notes.txt").read_bytes() == b"mine\n"


def test_files_store_never_replaces_a_file_at_the_tag(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    www = tmp_path / "www"
    FilesStore(www).publish(request_for(tmp_path / "set", names, tag="v1.0.0-beta.9"))  # a store of ours
    at_tag = www / "v1.0.0-beta.1"
    at_tag.write_bytes(b"a user's file\n")
    with pytest.raises(PublishError, match="not a tag directory"):
        FilesStore(www).publish(request_for(tmp_path / "set", names))
    assert at_tag.read_bytes() == b"a user's file\n"


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_store_staging_that_is_not_a_directory_is_refused(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "store"
    root.mkdir()
    if kind == "file":
        (root / ".ninfer-tmp").write_bytes(b"x")
    else:
        (root / ".ninfer-tmp").symlink_to(tmp_path)
    with pytest.raises(PublishError, match="not the store's staging directory"), locked_store(root):
        pass
    assert (root / ".ninfer-tmp").is_symlink() == (kind == "symlink")
