"""``_signals.join_through_signals``: a signal while waiting is held until the worker has ended."""

from __future__ import annotations

import threading

import pytest

from ninfer_release._signals import join_through_signals


class _Interrupted(threading.Thread):
    """A thread whose first ``join`` is cut by Ctrl-C, as a signal handler would cut it."""

    def __init__(self, release: threading.Event) -> None:
        super().__init__(target=release.wait, name="worker")
        self.joins = 0

    def join(self, timeout: float | None = None) -> None:
        self.joins += 1
        if self.joins == 1:
            raise KeyboardInterrupt
        super().join(timeout)


def test_the_interrupt_is_raised_only_after_the_worker_ended() -> None:
    release = threading.Event()
    worker = _Interrupted(release)
    worker.start()
    release.set()
    with pytest.raises(KeyboardInterrupt):
        join_through_signals(worker)
    assert not worker.is_alive() and worker.joins >= 2


def test_a_quiet_wait_returns_once_the_worker_ended() -> None:
    worker = threading.Thread(target=lambda: None)
    worker.start()
    join_through_signals(worker)
    assert not worker.is_alive()
