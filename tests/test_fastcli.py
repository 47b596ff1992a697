"""``--help`` / ``--version`` without loading the CLI (issue 13), byte-identical to Click's output."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ninfer_release
from ninfer_release import cli, fastcli
from ninfer_release._top_help import TOP_HELP


def _run(*args: str, columns: int | None = 100, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", fastcli.COMPLETE_VAR)}
    if columns is not None:
        full["COLUMNS"] = str(columns)
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "ninfer_release", *args], capture_output=True, text=True, env=full, check=False
    )


def _probe(*args: str, columns: int = 100) -> tuple[str, list[str]]:
    """stdout of the fast entry point and whether it loaded Click / the CLI module."""
    code = (
        "import sys\nfrom ninfer_release import fastcli\nsys.argv = ['ninfer-release', *sys.argv[1:]]\n"
        "try:\n    fastcli.main()\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in ('click', 'ninfer_release.cli') if m in sys.modules]\n"
        "sys.stderr.write('LOADED ' + ' '.join(loaded))"
    )
    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop(fastcli.COMPLETE_VAR, None)
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False
    )
    loaded = proc.stderr.rsplit("LOADED", 1)[-1].split()
    return proc.stdout, loaded


def test_stored_top_help_is_what_click_renders() -> None:
    # Fails whenever the CLI's top level changes: run `python -m ninfer_release.fastcli` to regenerate.
    assert fastcli.render_top_help() == TOP_HELP


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"]])
def test_fast_answers_equal_the_full_cli_and_load_no_click(args: list[str]) -> None:
    out, loaded = _probe(*args)
    assert loaded == []
    full = subprocess.run(
        [sys.executable, "-c", "from ninfer_release.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
        check=False,
    )
    assert full.returncode == 0
    assert out == full.stdout


def test_narrow_terminals_other_arguments_and_completion_use_the_full_cli() -> None:
    assert _probe("--help", columns=60)[1] == ["click", "ninfer_release.cli"]
    assert _probe("verify", "--help")[1] == ["click", "ninfer_release.cli"]
    assert _probe("--version", "--json")[1] == ["click", "ninfer_release.cli"]
    narrow = _run("--help", columns=60)
    assert narrow.returncode == 0 and narrow.stdout != TOP_HELP and "Usage: ninfer-release" in narrow.stdout
    assert fastcli.fast_answer(["--help"]) is not None or fastcli.terminal_columns() < 80
    os.environ[fastcli.COMPLETE_VAR] = "bash_complete"
    try:
        assert fastcli.fast_answer(["--version"]) is None
    finally:
        del os.environ[fastcli.COMPLETE_VAR]


def test_module_entry_and_exit_codes() -> None:
    version = _run("--version")
    assert (version.returncode, version.stdout) == (
        0,
        f"ninfer-release, version {ninfer_release.__version__}\n",
    )
    assert _run("--no-such-option").returncode == 2  # the full CLI's usage error
    assert fastcli.COMPLETE_VAR == cli.COMPLETE_VAR and fastcli.PROG_NAME == cli.PROG_NAME


def test_the_full_cli_runs_with_the_collector_tuned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The console entry sets the collector's thresholds before the full CLI runs (issue 13);
    the fast answers and library callers leave them alone."""
    import gc

    from ninfer_release import _entry

    seen: list[tuple[int, int, int]] = []
    monkeypatch.setattr(_entry, "quiet_until_loaded", lambda: None)  # keep pytest's own signals
    monkeypatch.setattr(cli, "main", lambda: seen.append(gc.get_threshold()))
    monkeypatch.setattr(sys, "argv", ["ninfer-release", "verify", "x"])
    before = gc.get_threshold()
    try:
        fastcli.main()
    finally:
        gc.set_threshold(*before)
    assert seen == [_entry.GC_THRESHOLDS]
    monkeypatch.setattr(sys, "argv", ["ninfer-release", "--version"])
    fastcli.main()
    assert gc.get_threshold() == before


@pytest.mark.parametrize("outcome", ["returns", "exits"])
def test_the_full_cli_ends_without_an_exit_collection(monkeypatch: pytest.MonkeyPatch, outcome: str) -> None:
    """After the full CLI ended (returned or raised SystemExit), the console entry froze the heap,
    so the interpreter's exit collection walks nothing (issue 13); the fast answers do not."""
    import gc

    from ninfer_release import _entry

    def run_cli() -> None:
        if outcome == "exits":
            sys.exit(5)

    monkeypatch.setattr(_entry, "quiet_until_loaded", lambda: None)
    monkeypatch.setattr(cli, "main", run_cli)
    before = gc.get_threshold()
    gc.unfreeze()
    try:
        monkeypatch.setattr(sys, "argv", ["ninfer-release", "--version"])
        fastcli.main()
        assert gc.get_freeze_count() == 0
        monkeypatch.setattr(sys, "argv", ["ninfer-release", "verify", "x"])
        if outcome == "exits":
            with pytest.raises(SystemExit):
                fastcli.main()
        else:
            fastcli.main()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
