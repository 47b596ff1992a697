"""Quiet signals while the CLI loads: no traceback for a Ctrl-C or SIGTERM before it runs.

Importing the CLI (Click, then each stage on demand) takes ~100 ms; a SIGINT in that window once
printed a traceback from the import line (issue 9). :func:`quiet_until_loaded`, called first by
the console entry point (:mod:`ninfer_release.fastcli`), makes SIGINT and SIGTERM end the process
at once with the codes :func:`ninfer_release.cli.main` uses (130, 143) and one line, until
``cli.main`` installs its own handling: nothing has been written yet, so there is nothing to
clean up. The interpreter's own start-up (before this runs, ~20 ms) is outside any program's
control; docs/reliability.md says so.
"""

from __future__ import annotations

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
