"""The CLI's process-level behaviour: SIGTERM cleans up, --json on usage errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import RunCli

REPO = Path(__file__).resolve().parent.parent


def test_sigterm_during_a_build_leaves_nothing_behind(tmp_path: Path) -> None:
    """CI cancelling a job sends SIGTERM: the staging directory is removed, exit 143."""
    out = tmp_path / "out"
    # Stall inside the output's staging directory (a wrapper around staged_directory), then
    # SIGTERM the process as soon as a partial file exists there.
    script = f"""
import sys, time
from pathlib import Path
from ninfer_release import atomic
from ninfer_release.cli import main
real = atomic.staged_directory
import contextlib
@contextlib.contextmanager
def slow(target, **kw):
    with real(target, **kw) as stage:
        (stage / "partial.bin").write_bytes(b"x" * 1024)
        print("staged", flush=True)
        time.sleep(60)
        yield stage
import ninfer_release.build._build as b
b.staged_directory = slow
main(["build", "release", {str(REPO / "manifests" / "v0.13.1.yaml")!r}, "--inputs", {str(tmp_path)!r},
      "--out", {str(out)!r}, "--offline"])
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == b"staged", proc.stderr.read() if proc.stderr else b""
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert b"terminated" in err and b"Traceback" not in err
    time.sleep(0.1)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_json_usage_error_prints_one_document(run_cli: RunCli) -> None:
    code, out, _err = run_cli("--json", "no-such-command")
    assert code == 2
    doc = json.loads(out)
    assert doc["ok"] is False and doc["exit_code"] == 2
    assert "no-such-command" in doc["problems"][0]


def test_publish_missing_set_dir_is_input_error(run_cli: RunCli, tmp_path: Path) -> None:
    code, _, err = run_cli("publish", str(tmp_path / "nope"), "--to", f"dir://{tmp_path / 'store'}")
    assert code == 4
    assert "not a directory holding an asset set" in err
    assert not (tmp_path / "store").exists()


def test_publish_target_with_impossible_port_is_input_error(run_cli: RunCli, tmp_path: Path) -> None:
    code, _, err = run_cli("publish", str(tmp_path), "--to", "oci://127.0.0.1:99999/omp/rtx4090")
    assert code == 4
    assert "port '99999' is not in 1-65535" in err


def test_verify_with_a_release_manifest_that_is_not_one_is_input_error(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """A --release-manifest that is unreadable, not JSON, or has no lanes: exit 4, one line."""
    (tmp_path / "set").mkdir()
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "nolanes.json").write_text('{"version": "v0.13.1"}')
    cases = [
        (tmp_path / "missing.json", "cannot read"),
        (tmp_path / "bad.json", "not valid JSON"),
        (tmp_path / "nolanes.json", "lanes: not a release manifest"),
    ]
    for path, message in cases:
        code, out, err = run_cli("verify", str(tmp_path / "set"), "--release-manifest", str(path))
        assert code == 4, err
        assert f"{path.name}" in err and message in err
        assert "Traceback" not in err and out == ""
