"""What ``verify`` says about what it was given (DESIGN.md §9 exit codes): nothing to verify is a
missing input (exit 4); a set that is there but wrong is an integrity failure (exit 5)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from flow_support import cli, release_out, stem


@pytest.mark.parametrize(
    "location",
    [
        "{tmp}/no-such-set",
        "{tmp}/a-file",
        "dir://{tmp}/no-store:v0.7.0-qwen38-4090-beta.2",
        "oci://127.0.0.1:9/omp-ninfer/rtx4090",
        "oci://127.0.0.1:9/omp-ninfer/rtx4090:bad tag",
        "s3://bucket/set",
    ],
)
def test_nothing_to_verify_is_exit_4(tmp_path: Path, location: str) -> None:
    """A missing directory, a file, a missing store, a reference without tag, a malformed reference."""
    (tmp_path / "a-file").write_bytes(b"x")
    loc = location.format(tmp=tmp_path)
    res = cli("verify", loc)
    assert res.code == 4, res.text
    assert res.err.startswith(f"error: {loc}")
    assert len(res.err.splitlines()) == 1


def test_symlinked_entry_is_not_accepted(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """An entry replaced by a symlink to identical bytes elsewhere fails (exit 5), naming it: a set is
    regular files only, so what was verified is what gets installed."""
    copy = tmp_path / "set"
    shutil.copytree(release_out(tmp_path_factory) / "rtx4090", copy)
    name = f"{stem('rtx4090')}.config.toml"
    outside = tmp_path / "elsewhere.toml"
    os.replace(copy / name, outside)
    (copy / name).symlink_to(outside)
    res = cli("verify", copy)
    assert res.code == 5, res.text
    assert f"error: {copy}: {name}: missing from the set (or not a regular file)" in res.err.splitlines()


def test_verify_json_is_one_document(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``--json verify``: exactly one JSON document on stdout with every check listed."""
    set_dir = release_out(tmp_path_factory) / "rtx3090"
    res = cli("--json", "verify", set_dir)
    assert res.code == 0, res.text
    doc = json.loads(res.out)
    assert doc["ok"] is True and doc["failures"] == [] and doc["stem"] == stem("rtx3090")
    assert doc["location"] == str(set_dir) and doc["artifact_digest"] is None
    assert f"set: exactly the 11 files of {stem('rtx3090')}" in doc["checked"]
