"""The messages issue 15 lists: one clear line, the documented exit code, no internals."""

from __future__ import annotations

import subprocess
from pathlib import Path

from flow_support import REPO, cli


def test_verify_on_a_directory_that_is_not_a_set_names_it_once_exit_4(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a set")
    result = cli("verify", tmp_path)
    assert result.code == 4, result.text
    lines = result.err.splitlines()
    assert lines == [f"error: {tmp_path}: not an asset set (no SHA256SUMS, no *.zip package)"]
    assert result.err.count(str(tmp_path)) == 1


def test_dev_without_a_target_prints_usage_not_its_source() -> None:
    proc = subprocess.run([str(REPO / "dev")], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "set -euo pipefail" not in proc.stdout + proc.stderr
    assert proc.stderr.startswith("usage: ./dev TARGET")
