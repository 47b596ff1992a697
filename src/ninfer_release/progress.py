"""The one progress protocol every stage reports through (issue 10; CONVENTIONS: the library
emits, the CLI presents).

A stage announces a *step* — a phase (``rtx4090: package``, ``hashed``) or a file being
transferred — with its size in bytes when known, then *advances* through it in bytes. Advances
belong to the latest step; a producer that runs a step on several threads (parallel compression)
advances that one step from each. The CLI renders steps as progress bars (on a terminal only) or
drops them; library code takes a :class:`Progress` and defaults to :data:`SILENT`.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Where a stage reports what it is doing: :meth:`step`, then :meth:`advance` in bytes."""

    def step(self, message: str, total: int | None = None) -> None:
        """A step begins: ``message`` names it; ``total`` is its size in bytes, when known."""

    def advance(self, nbytes: int) -> None:
        """``nbytes`` more bytes of the latest step are done (read, hashed, sent)."""


class _Silent:
    """Progress that goes nowhere (the default of every producer)."""

    def step(self, message: str, total: int | None = None) -> None:
        return None

    def advance(self, nbytes: int) -> None:
        return None


#: The no-op :class:`Progress`: what a producer reports to when nobody listens.
SILENT: Progress = _Silent()


class Prefixed:
    """``inner`` with every step's message prefixed: ``"<prefix>: <message>"``."""

    def __init__(self, inner: Progress, prefix: str) -> None:
        self.inner = inner
        self.prefix = prefix

    def step(self, message: str, total: int | None = None) -> None:
        self.inner.step(f"{self.prefix}: {message}", total)

    def advance(self, nbytes: int) -> None:
        self.inner.advance(nbytes)


class Counter:
    """Progress that counts the bytes advanced (``nbytes``), e.g. a file's size as it is hashed."""

    def __init__(self) -> None:
        self.nbytes = 0

    def step(self, message: str, total: int | None = None) -> None:
        return None

    def advance(self, nbytes: int) -> None:
        self.nbytes += nbytes
