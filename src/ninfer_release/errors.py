"""Domain errors and the one exit-code table (DESIGN.md §9).

Every error the tool raises on purpose subclasses :class:`NinferError` and carries the exit code
the CLI returns for it. Only ``cli.py`` turns an error into an exit; library code raises.

=====  ==========================================================================
code   meaning
=====  ==========================================================================
0      ok
1      unexpected internal error (traceback only with ``--debug``)
2      usage error (Click)
3      profile or release definition invalid
4      input missing or invalid (staged build tree, recipe, receipt, output dir)
5      integrity failure: a hash, a binding, or a set that does not verify
6      container backend failed
7      publish refused or failed
=====  ==========================================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes of ``ninfer-release`` (DESIGN.md §9)."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    DEFINITION = 3
    INPUT = 4
    INTEGRITY = 5
    BACKEND = 6
    PUBLISH = 7


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One diagnosable problem: where it is (file and field path) and what is wrong.

    ``field`` is a dotted/indexed path such as ``lanes.rtx4090.source_commit``; empty when the
    problem concerns the whole file.
    """

    file: str
    field: str = ""
    message: str

    def __str__(self) -> str:
        """``file: field: message`` on ONE line: control characters a hostile input can carry (a
        newline in a reference or a file name, an escape sequence) are shown escaped, never
        passed to the terminal (issue 36: a reference holding a newline split the error line)."""
        where = f"{self.file}: {self.field}" if self.field else self.file
        return _one_line(f"{where}: {self.message}")


def _one_line(text: str) -> str:
    """``text`` with every character :meth:`str.isprintable` refuses (C0/C1 controls, DEL, format
    characters such as bidi overrides, separators other than the space) escaped as Python does
    (``\\n``, ``\\x1b``, ``\\u202e``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


class NinferError(Exception):
    """Base of every deliberate error; ``exit_code`` is what the CLI exits with.

    ``problems`` holds one entry per problem so that all of them are reported at once; the
    exception message is their lines joined.
    """

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str | None = None, *, problems: Iterable[Problem] = ()) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        if message is None:
            message = "\n".join(str(p) for p in self.problems) or self.__class__.__name__
        super().__init__(message)

    @property
    def lines(self) -> list[str]:
        """One line per problem (or the message's lines), for the terminal."""
        if self.problems:
            return [str(p) for p in self.problems]
        return str(self).splitlines() or [self.__class__.__name__]


class DefinitionError(NinferError):
    """A profile, template or release definition is invalid (exit 3)."""

    exit_code = ExitCode.DEFINITION


class InputError(NinferError):
    """A staged input, recipe, receipt or output location is missing or invalid (exit 4)."""

    exit_code = ExitCode.INPUT


class IntegrityError(NinferError):
    """A hash, a binding or an asset set does not verify (exit 5)."""

    exit_code = ExitCode.INTEGRITY


class BackendError(NinferError):
    """The container backend (daemonless assembler or docker engine) failed (exit 6)."""

    exit_code = ExitCode.BACKEND


class PublishError(NinferError):
    """Publishing was refused (immutability, unverified set) or failed (exit 7)."""

    exit_code = ExitCode.PUBLISH
