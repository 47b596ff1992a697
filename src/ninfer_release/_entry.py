"""The console process's own set-up before the CLI loads: quiet signals, the collector's pace, and
no collection at exit.

Quiet signals while the CLI loads: no traceback for a Ctrl-C or SIGTERM before it runs.

Importing the CLI (Click, then each stage on demand) takes ~100 ms; a SIGINT in that window once
printed a traceback from the import line (issue 9). :func:`quiet_until_loaded`, called first by
the console entry point (:mod:`ninfer_release.fastcli`), makes SIGINT and SIGTERM end the process
at once with the codes :func:`ninfer_release.cli.main` uses (130, 143) and one line, until
``cli.main`` installs its own handling: nothing has been written yet, so there is nothing to
clean up. The interpreter's own start-up (before this runs, ~20 ms) is outside any program's
control; docs/reliability.md says so.
"""

from __future__ import annotations

import gc
import os
import signal
from types import FrameType

_LINES: dict[int, bytes] = {signal.SIGINT: b"interrupted\n", signal.SIGTERM: b"terminated\n"}


def _early_exit(signum: int, frame: FrameType | None) -> None:
    os.write(2, _LINES.get(signum, b"interrupted\n"))
    os._exit(128 + signum)  # nothing to unwind: the CLI has not started


def quiet_until_loaded() -> None:
    """SIGINT/SIGTERM end the process quietly (130/143) until ``cli.main`` takes them over.

    A signal already ignored (``nohup``, background jobs) stays ignored.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _early_exit)


#: The cyclic garbage collector's thresholds for the CLI process (Python's default: 700, 10, 10).
GC_THRESHOLDS = (50_000, 20, 20)


def tune_collector() -> None:
    """Run the cyclic garbage collector less often in the CLI process (:data:`GC_THRESHOLDS`).

    A build or verify of a lane with 10k files allocates millions of containers that live until
    it ends (parsed SBOMs, records, the file list); with Python's default thresholds the
    collector walks them again and again: ~10% of a 10k-file build's CPU and ~5% of its verify
    (issue 13; peak RSS unchanged, measured). Cycles are still collected, only in fewer passes.
    Library callers keep their interpreter's settings: only the console entry point calls this.
    """
    gc.set_threshold(*GC_THRESHOLDS)


def skip_exit_collection() -> None:
    """Move every object into the collector's permanent generation: the process is about to end.

    At exit CPython runs one full collection (``Py_FinalizeEx``) that walks every object the
    process still holds -- modules, classes, parsed SBOMs and records -- only to free memory the
    operating system reclaims anyway: ~30 ms of a sample-set ``verify`` (0.45 s) and ~55 ms of a
    sample-lane ``build lane`` (issue 13, measured in paired runs). Frozen objects are not walked.
    What it gives up: ``__del__`` of objects in unreachable cycles at exit, which nothing here
    relies on (files are closed by ``with``, temporary directories by ``weakref.finalize``, which
    runs at exit, worker threads are joined). Called by the console entry point only, after the
    command ended (also by an exception); library callers keep their interpreter's behaviour.
    """
    gc.freeze()
