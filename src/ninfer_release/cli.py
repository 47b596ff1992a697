"""The ``ninfer-release`` command line: a thin Click layer over the stages (DESIGN.md §9).

Command bodies build a request, call a stage, and render the result. Exceptions map to exit codes
in one place (:func:`main`): a :class:`~ninfer_release.errors.NinferError` prints one line per
problem and exits with its code; anything else exits 1, with a traceback only under ``--debug``.
``--json`` prints exactly one JSON document on stdout; progress and logs go to stderr.
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from dataclasses import dataclass
from typing import Any, NoReturn

import click

from ninfer_release import __version__
from ninfer_release.errors import ExitCode, NinferError


@dataclass(frozen=True, kw_only=True)
class Context:
    """Global options, resolved once."""

    json: bool
    debug: bool
    verbosity: int  # -1 quiet, 0 normal, 1 verbose


def emit(ctx: Context, document: dict[str, Any], human: list[str]) -> None:
    """Print a command's result: one JSON document under ``--json``, else human lines."""
    if ctx.json:
        sys.stdout.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
    elif ctx.verbosity >= 0:
        for line in human:
            click.echo(line)


def _fail(ctx_obj: Context | None, code: int, lines: list[str], kind: str) -> NoReturn:
    for line in lines:
        click.echo(f"error: {line}", err=True)
    if ctx_obj is not None and ctx_obj.json:
        sys.stdout.write(
            json.dumps({"ok": False, "exit_code": code, "error": kind, "problems": lines}, indent=2) + "\n"
        )
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ninfer-release")
@click.option("--json", "json_", is_flag=True, help="Print one JSON document on stdout; logs go to stderr.")
@click.option("--debug", is_flag=True, help="Show tracebacks for unexpected errors.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
@click.option("-v", "--verbose", is_flag=True, help="Print more detail to stderr.")
@click.pass_context
def cli(ctx: click.Context, json_: bool, debug: bool, quiet: bool, verbose: bool) -> None:
    """Build, verify and publish OMP NInfer releases.

    Exit codes: 0 ok, 1 internal error, 2 usage, 3 profile/definition invalid, 4 input missing or
    invalid, 5 integrity failure, 6 container backend failed, 7 publish refused or failed.
    """
    ctx.obj = Context(json=json_, debug=debug, verbosity=-1 if quiet else (1 if verbose else 0))
    logging.basicConfig(
        level=logging.DEBUG if debug else (logging.INFO if verbose else logging.WARNING),
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


# --- profile / manifest commands (profiles stage) ----------------------------------------------

# --- samples ---------------------------------------------------------------------------------

# --- build / verify (build, releases stages) ---------------------------------------------------

# --- image (containers stage) ------------------------------------------------------------------

# --- publish (releases stage) ------------------------------------------------------------------


def _leading_options(args: list[str]) -> list[str]:
    out = []
    for a in args:
        if not a.startswith("-"):
            break
        out.append(a)
    return out


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and map every error to its documented exit code."""
    args = list(argv if argv is not None else sys.argv[1:])
    # Global flags come before the sub-command; they decide how errors are shown even when
    # the group callback never ran (e.g. a usage error).
    leading = _leading_options(args)
    debug = "--debug" in leading
    ctx_obj = Context(json="--json" in leading, debug=debug, verbosity=0)
    try:
        ctx = cli.make_context("ninfer-release", args)
        with ctx:
            cli.invoke(ctx)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(ExitCode.USAGE)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(ExitCode.INTERNAL)
    except NinferError as exc:
        if debug:
            traceback.print_exc()
        _fail(ctx_obj, int(exc.exit_code), exc.lines, type(exc).__name__)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:
        if debug:
            traceback.print_exc()
        _fail(ctx_obj, int(ExitCode.INTERNAL), [f"internal error: {type(exc).__name__}: {exc} "
                                                 "(run with --debug for a traceback)"], "internal")
