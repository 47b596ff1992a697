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


@cli.group()
def profile() -> None:
    """Deployment profiles: validate, render the engine config, generate a bearer key."""


@profile.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--templates", "templates", type=click.Path(file_okay=False), help="Templates directory.")
@click.pass_obj
def profile_validate(ctx: Context, paths: tuple[str, ...], templates: str | None) -> None:
    """Validate profiles: every value, then render each config in memory and check it."""
    from pathlib import Path

    from ninfer_release.errors import DefinitionError, InputError
    from ninfer_release.profiles import check_profile

    results: list[dict[str, Any]] = []
    failures: list[NinferError] = []
    for raw in paths:
        try:
            prof, rendered = check_profile(Path(raw), templates_dir=Path(templates) if templates else None)
        except (DefinitionError, InputError) as exc:
            failures.append(exc)
            continue
        results.append({"path": raw, "profile_id": prof.id, "bytes_sha256": rendered.bytes_sha256,
                        "semantic_sha256": rendered.semantic_sha256})
    if failures:
        # A missing file is exit 4; otherwise the definitions are invalid (3). Every problem is listed.
        kind = InputError if any(isinstance(f, InputError) for f in failures) else DefinitionError
        raise kind(problems=[p for f in failures for p in f.problems])
    emit(ctx, {"ok": True, "profiles": results}, [f"ok  {r['profile_id']}  ({r['path']})" for r in results])


@profile.command("render")
@click.argument("profile_path", metavar="PROFILE", type=click.Path(dir_okay=False))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="Config file to write.")
@click.option("--templates", "templates", type=click.Path(file_okay=False), help="Templates directory.")
@click.option("--force", is_flag=True, help="Replace an existing file whose bytes differ.")
@click.pass_obj
def profile_render(ctx: Context, profile_path: str, out: str, templates: str | None, force: bool) -> None:
    """Render PROFILE's engine config to --out (exact bytes) and print both hashes.

    An existing --out with the same bytes is left as is; one with other bytes is refused (exit 4)
    unless --force. The file is written atomically.
    """
    from pathlib import Path

    from ninfer_release.atomic import write_bytes
    from ninfer_release.errors import InputError, Problem
    from ninfer_release.profiles import check_profile

    prof, rendered = check_profile(Path(profile_path), templates_dir=Path(templates) if templates else None)
    target = Path(out)
    written = True
    if target.is_dir():
        raise InputError(problems=[Problem(file=out, message="is a directory")])
    if target.exists():
        if target.read_bytes() == rendered.data:
            written = False
        elif not force:
            why = "exists with other bytes; refusing to overwrite (use --force to replace it)"
            raise InputError(problems=[Problem(file=out, message=why)])
    if written:
        write_bytes(target, rendered.data)
    emit(
        ctx,
        {
            "profile_id": prof.id,
            "bytes_sha256": rendered.bytes_sha256,
            "semantic_sha256": rendered.semantic_sha256,
            "path": out,
            "size": rendered.size,
            "written": written,
        },
        [
            f"{prof.id}: {'wrote' if written else 'unchanged'} {out} ({rendered.size} bytes)",
            f"bytes_sha256     {rendered.bytes_sha256}",
            f"semantic_sha256  {rendered.semantic_sha256}",
        ],
    )


@profile.command("keygen")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="New key file (0600).")
@click.option("--print", "print_", is_flag=True, help="Also print the key on stdout.")
@click.pass_obj
def profile_keygen(ctx: Context, out: str, print_: bool) -> None:
    """Generate a 64-character bearer key (32 random bytes, hex) into a new file, mode 0600.

    Never overwrites; the key is printed only with --print.
    """
    from pathlib import Path

    from ninfer_release.profiles import write_bearer_key

    key = write_bearer_key(Path(out))
    doc: dict[str, Any] = {"path": out, "characters": len(key), "mode": "0600"}
    if print_:
        doc["key"] = key
    if print_ and ctx.verbosity < 0 and not ctx.json:
        click.echo(key)  # -q --print: the key alone, for scripts
        return
    lines = [f"wrote a {len(key)}-character bearer key to {out} (mode 0600)", *([key] if print_ else [])]
    emit(ctx, doc, lines)


@cli.group()
def manifest() -> None:
    """Release manifests: check a staged definition, assemble a release manifest."""


@manifest.command("check")
@click.argument("manifest_path", metavar="MANIFEST", type=click.Path(dir_okay=False))
@click.option("--repo", "repo", type=click.Path(file_okay=False), help="Repo root (default: MANIFEST/../..).")
@click.pass_obj
def manifest_check(ctx: Context, manifest_path: str, repo: str | None) -> None:
    """Check a staged release manifest and every profile it names; print each lane's config hashes."""
    import os
    from pathlib import Path

    from ninfer_release.profiles import load_release, render_release

    release = load_release(Path(manifest_path), env=dict(os.environ), repo_root=Path(repo) if repo else None)
    configs = render_release(release)
    lanes: list[dict[str, Any]] = []
    lines = [
        f"{release.product} {release.version} ({release.state}; candidate commit "
        f"{release.candidate_commit}): {len(release.lanes)} lanes, "
        f"source-date epoch {release.source_date_epoch}",
        f"model {release.model.artifact} {release.model.sha256} ({release.model.size} bytes)",
    ]
    for lane_id, lane in release.lanes.items():
        cfg = configs[lane_id]
        lanes.append({
            "lane": lane_id, "component_tag": lane.component_tag, "kind": lane.kind, "mode": lane.mode,
            "profile_id": lane.profile_id, "source_commit": lane.source_commit, "cuda_arch": lane.cuda_arch,
            "bytes_sha256": cfg.bytes_sha256, "semantic_sha256": cfg.semantic_sha256,
        })
        lines += [
            f"{lane_id}  {lane.component_tag}  {lane.kind} {lane.mode}  profile {lane.profile_id}",
            f"  bytes_sha256     {cfg.bytes_sha256}",
            f"  semantic_sha256  {cfg.semantic_sha256}",
        ]
    emit(ctx, {"ok": True, "version": release.version, "candidate_commit": release.candidate_commit,
               "source_date_epoch": release.source_date_epoch, "lanes": lanes}, lines)


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
