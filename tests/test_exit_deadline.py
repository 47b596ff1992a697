"""``_signals.EXIT_DEADLINE_S``: after a Ctrl-C or SIGTERM the console process ends, even when a
helper thread never returns (CI, 2026-12-04: a ``verify`` interrupted inside an import waited
forever at exit for a thread blocked on that import's lock; docs/reliability.md).

Each case runs the console entry point (``fastcli.main``) in a child process with a command that
leaves a non-daemon thread waiting forever, and a short deadline so the case takes a second.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

DEADLINE_S = 0.5

_SCRIPT = """
import signal, sys, threading, time
# As from a terminal: Ctrl-C raises (a runner may pass SIGINT down ignored; cli keeps it so).
signal.signal(signal.SIGINT, signal.default_int_handler)
from ninfer_release import _signals, cli, fastcli
_signals.EXIT_DEADLINE_S = {deadline}

@cli.cli.command("stuck-test")
def stuck_test():
    never = threading.Event()
    stuck = threading.Thread(target=never.wait, name="stuck")  # not a daemon: exit waits for it
    stuck.start()
    print("ready", flush=True)
    time.sleep(60)  # the signal unwinds the command; the interpreter then waits at exit

sys.argv = ["ninfer-release", "stuck-test"]
{entry}
print("still here", flush=True)
import os
os._exit(0)  # the stuck thread would keep a library caller at exit (its business, not ours)
"""

_CONSOLE = "fastcli.main()"
_LIBRARY = """
try:
    cli.main(["stuck-test"])
except SystemExit as exc:
    print("exit", exc.code, flush=True)
time.sleep({linger})
"""


def _run(entry: str, sig: int) -> tuple[subprocess.CompletedProcess[str], float]:
    script = _SCRIPT.format(deadline=DEADLINE_S, entry=entry)
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the process did not end after the signal")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), time.monotonic() - sent


def _lines(err: str) -> list[str]:
    """stderr's lines but blank ones (Click writes a newline when Ctrl-C lands inside it)."""
    return [line for line in err.splitlines() if line]


@pytest.mark.parametrize(
    ("sig", "code", "line"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
    ids=["sigint", "sigterm"],
)
def test_a_helper_thread_that_never_ends_does_not_keep_the_process(sig: int, code: int, line: str) -> None:
    """The command unwinds and the CLI writes its line; the interpreter then waits at exit for
    the thread, until the deadline ends the process with the signal's code (nothing written
    twice, no traceback)."""
    done, took = _run(_CONSOLE, sig)
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert _lines(done.stderr) == [line], done.stderr
    assert "still here" not in done.stdout
    assert took >= DEADLINE_S  # it was the thread that kept it, and the deadline that ended it


def test_a_library_caller_is_never_ended_by_the_deadline() -> None:
    """Only the console entry point enables the deadline: a program calling ``cli.main`` gets
    its SystemExit(130) and runs on past the deadline (its thread is its own business)."""
    linger = DEADLINE_S * 4
    done, took = _run(_LIBRARY.format(linger=linger), signal.SIGINT)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.splitlines() == ["exit 130", "still here"], done.stdout
    assert _lines(done.stderr) == ["interrupted"], done.stderr
    assert took >= linger
