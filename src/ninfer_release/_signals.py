"""How the CLI handles SIGINT and SIGTERM while a command runs (issue 9; docs/reliability.md).

SIGTERM (CI cancelling a job) unwinds like Ctrl-C: :class:`Terminated` is raised in the main
thread, so every ``with`` block (staging directories, temp files) cleans up and nothing partial is
left behind; :func:`ninfer_release.cli.main` maps it to exit 143 and Ctrl-C to 130. A signal that
Python swallows (raised in a weakref callback or ``__del__``) is delivered again
(:func:`redeliver_swallowed_signals`). :class:`Handlers` installs all of it and restores what was
there before.

In the console process (:func:`enable_exit_deadline`, called by the entry point) the first
SIGINT or SIGTERM also starts a deadline: the process ends with the signal's code within
:data:`EXIT_DEADLINE_S` of it, even when a helper thread never returns and the interpreter would
wait for it forever at exit.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM so that every ``with`` block cleans up."""


#: How long (s) a console process may take to end after its first SIGINT/SIGTERM. Unwinding
#: (staging directories removed, helper threads ending with the piece in hand, the one line
#: written) takes well under a second; past the deadline the process ends anyway with 130/143.
#: What it guards against: a helper thread that never returns. CI caught one (2026-12-04): a
#: Ctrl-C landing inside importlib's ``_ModuleLock.acquire`` in the main thread left a module's
#: import lock held, the ``zip-members`` thread waited for that lock forever, and the interpreter
#: waited for the thread at exit (``threading._shutdown``): the command never ended.
EXIT_DEADLINE_S = 10.0

_EXIT_LINES: dict[int, bytes] = {signal.SIGINT: b"interrupted\n", signal.SIGTERM: b"terminated\n"}
_deadline: dict[str, bool] = {"enabled": False, "armed": False, "reported": False}


def enable_exit_deadline() -> None:
    """Let the first SIGINT/SIGTERM start the :data:`EXIT_DEADLINE_S` deadline (the console
    entry point only: it ends the process, which a library caller's interpreter must not)."""
    _deadline["enabled"] = True


def reported() -> None:
    """The CLI has written the signal's one line (``interrupted``/``terminated``): the deadline
    does not write it again."""
    _deadline["reported"] = True


def _end_at_deadline(signum: int) -> None:
    time.sleep(EXIT_DEADLINE_S)
    if not _deadline["reported"]:
        os.write(2, _EXIT_LINES.get(signum, b"interrupted\n"))
    os._exit(128 + signum)


def _arm_deadline(signum: int) -> None:
    """Start the deadline once (signal handlers run in the main thread only). A bare
    ``_thread`` thread: :class:`threading.Thread` takes the ``threading`` module's own locks,
    which the code this signal interrupted may hold, and would make the interpreter wait for it."""
    if _deadline["enabled"] and not _deadline["armed"]:
        _deadline["armed"] = True
        _thread.start_new_thread(_end_at_deadline, (signum,))


def interrupt(signum: int, frame: object) -> None:
    """SIGINT: start the exit deadline, then raise ``KeyboardInterrupt`` as Python's own handler
    (:func:`signal.default_int_handler`) does."""
    _arm_deadline(signum)
    raise KeyboardInterrupt


def terminate(signum: int, frame: object) -> None:
    """SIGTERM: start the exit deadline, then raise :class:`Terminated`."""
    _arm_deadline(signum)
    raise Terminated


_REDELIVERY_DELAY_S = 0.01  # long enough for the main thread to be out of the swallowing hook


def redeliver_swallowed_signals(
    fallback: Callable[[Any], object],
) -> Callable[[Any], object]:
    """An ``sys.unraisablehook`` that hands a swallowed Ctrl-C or SIGTERM back to the main thread.

    A ``KeyboardInterrupt`` (or :class:`Terminated`) raised where Python cannot propagate it (a
    weakref callback in the import machinery, a ``__del__``) is otherwise printed as "Exception
    ignored in ..." with a traceback, and the interrupt is lost: the command runs on. This hook
    prints nothing and has a short-lived thread raise the same signal in the main thread again
    (``_thread.interrupt_main``) after :data:`_REDELIVERY_DELAY_S`, once the main thread is back in
    ordinary code, so it unwinds (and cleans up) like any other Ctrl-C. Raised in the hook itself
    it would be swallowed again, hence the thread. Every other unraisable exception goes to
    ``fallback`` (the hook that was installed before).
    """

    def redeliver(signum: int) -> None:
        timer = threading.Timer(_REDELIVERY_DELAY_S, _thread.interrupt_main, args=(signum,))
        timer.daemon = True
        timer.start()

    def hook(unraisable: Any) -> object:
        exc_type = unraisable.exc_type
        if exc_type is not None and threading.current_thread() is threading.main_thread():
            try:
                if issubclass(exc_type, KeyboardInterrupt):
                    redeliver(signal.SIGINT)
                    return None
                if issubclass(exc_type, Terminated):
                    redeliver(signal.SIGTERM)
                    return None
            except KeyboardInterrupt:  # a second Ctrl-C inside this hook: deliver it too
                redeliver(signal.SIGINT)
                return None
            except Terminated:
                redeliver(signal.SIGTERM)
                return None
        return fallback(unraisable)

    return hook


@dataclass(frozen=True, kw_only=True)
class Handlers:
    """The SIGTERM / SIGINT handlers and unraisable hook in force before :func:`main` (restored
    after it); signals are handled only in the main thread."""

    in_main: bool
    term: Any
    interrupt: Any
    unraisable: Callable[[Any], object]

    @classmethod
    def current(cls) -> Handlers:
        in_main = threading.current_thread() is threading.main_thread()
        return cls(
            in_main=in_main,
            term=signal.getsignal(signal.SIGTERM) if in_main else None,
            interrupt=signal.getsignal(signal.SIGINT) if in_main else None,
            unraisable=sys.unraisablehook,
        )

    def install(self) -> None:
        """SIGTERM (CI cancelling a job) unwinds like Ctrl-C, so staging directories are removed
        and nothing partial is left behind; a swallowed signal is delivered again."""
        sys.unraisablehook = redeliver_swallowed_signals(self.unraisable)
        if self.in_main:
            signal.signal(signal.SIGTERM, terminate)
            if self.interrupt is not signal.SIG_IGN:
                signal.signal(signal.SIGINT, interrupt)

    def restore(self) -> None:
        sys.unraisablehook = self.unraisable
        if self.in_main:
            signal.signal(signal.SIGTERM, self.term)
            signal.signal(signal.SIGINT, self.interrupt)


def join_through_signals(thread: threading.Thread) -> None:
    """Wait until ``thread`` has ended, even through Ctrl-C or SIGTERM; then raise the first one.

    A signal arriving while the main thread waits is held, not lost: the worker is never left
    running behind a returning caller (its files and sockets are released first).

    Raises:
        BaseException: the first ``KeyboardInterrupt`` / :class:`Terminated` (or other exception)
            raised in the calling thread while it waited.
    """
    pending: BaseException | None = None
    while thread.is_alive():
        try:
            thread.join()
        except BaseException as exc:  # noqa: BLE001 - raised below, after the join
            pending = pending or exc
    if pending is not None:
        raise pending
