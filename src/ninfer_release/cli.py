"""The ``ninfer-release`` command line: a thin Click layer over the stages (DESIGN.md §9).

Command bodies build a request, call a stage, and render the result. Exceptions map to exit codes
in one place (:func:`main`): a :class:`~ninfer_release.errors.NinferError` prints one line per
problem and exits with its code; anything else exits 1, with a traceback only under ``--debug``.
``--json`` prints exactly one JSON document on stdout; progress and logs go to stderr.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ninfer_release import __version__
from ninfer_release._signals import Handlers as _Handlers
from ninfer_release._signals import Terminated as _Terminated
from ninfer_release._signals import reported as _reported
from ninfer_release.errors import ExitCode, NinferError

if TYPE_CHECKING:
    from ninfer_release.manifests import Release
    from ninfer_release.progress import Progress

PROG_NAME = "ninfer-release"
#: Click's completion hook: the generated scripts call back with ``<VAR>=<shell>_complete``.
COMPLETE_VAR = "_NINFER_RELEASE_COMPLETE"


class _InputPath(click.Path):
    """An input path whose existence, kind and permissions the stage checks, not Click.

    Click's checks end in a usage error (exit 2, three lines of usage text) for what is an
    environment fault: an unreadable manifest, ``--inputs`` naming a file. The stages report those
    as exit 4 with one line naming the path, like a missing one (issue 9). The type still tells
    shell completion whether a file or a directory is wanted.
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return os.fsdecode(value) if isinstance(value, bytes | os.PathLike) else value


# The path types, one instance each, shared by every option (a type holds only its settings):
# Click looks up the translation of a path type's name in each constructor, ~80 us each, and the
# command tree has ~70 path options (issue 13: every command's start-up). ``_INPUT_*``: checked
# by the stage (:class:`_InputPath`); ``_PLAIN_*``: Click's path, existence not checked.
_INPUT_ANY = _InputPath()
_INPUT_FILE = _InputPath(dir_okay=False)
_INPUT_DIR = _InputPath(file_okay=False)
_PLAIN_FILE = click.Path(dir_okay=False)
_PLAIN_DIR = click.Path(file_okay=False)


@dataclass(frozen=True, kw_only=True)
class Context:
    """Global options, resolved once per command (before and after the sub-command name)."""

    json: bool
    debug: bool
    verbosity: int  # -1 quiet, 0 normal, 1 verbose
    repo: str | None = None  # --repo DIR (after the command wins over before it)

    def root(self, project_file: str | Path | None = None) -> Path:
        """The project root for this command (:func:`ninfer_release.projectroot.resolve_root`):
        ``--repo``, else ``NINFER_RELEASE_REPO``, else ``project_file``'s project (a definition or
        recipe: two levels up), else discovered from the working directory. Exit 4 when none."""
        from ninfer_release.projectroot import ENV_VAR, resolve_root

        return resolve_root(
            option=self.repo,
            env_value=os.environ.get(ENV_VAR),
            cwd=Path.cwd(),
            project_file=Path(project_file) if project_file is not None else None,
        ).path


def emit(ctx: Context, document: dict[str, Any], human: list[str]) -> None:
    """Print a command's result: one JSON document under ``--json``, else human lines."""
    if ctx.json:
        sys.stdout.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
    elif ctx.verbosity >= 0:
        for line in human:
            click.echo(line)


class _Lines:
    """:class:`~ninfer_release.progress.Progress` as lines on stderr: each step as
    ``<label>: <message>``, shown from ``verbosity`` up (0: unless -q, 1: only with -v); bytes are
    not shown."""

    def __init__(self, ctx: Context, label: str, *, verbosity: int) -> None:
        self._show = ctx.verbosity >= verbosity
        self._label = label

    def step(self, message: str, total: int | None = None) -> None:
        if self._show:
            click.echo(f"{self._label}: {message}", err=True)

    def advance(self, nbytes: int) -> None:
        return None


def _load_release(ctx: Context, path: str) -> Release:
    """The release definition at ``path`` (as given), read with its project root (:meth:`Context.root`)."""
    from ninfer_release.manifests import load_release

    return load_release(Path(path), env=os.environ, repo_root=ctx.root(path))


def _require_ok(report: Any, where: str, *, warn: bool = True) -> None:
    """Print a verify ``report``'s warnings (``warn``) and raise unless every check held.

    Raises:
        IntegrityError: one problem per failed check, each naming ``where`` (exit 5).
    """
    from ninfer_release.errors import IntegrityError, Problem

    for w in report.warnings if warn else ():
        click.echo(f"warning: {w}", err=True)
    if not report.ok:
        raise IntegrityError(problems=[Problem(file=where, message=f) for f in report.failures])


def _fail(ctx_obj: Context | None, code: int, lines: list[str], kind: str) -> NoReturn:
    for line in lines:
        click.echo(f"error: {line}", err=True)
    if ctx_obj is not None and ctx_obj.json:
        sys.stdout.write(
            json.dumps({"ok": False, "exit_code": code, "error": kind, "problems": lines}, indent=2) + "\n"
        )
    sys.exit(code)


#: The global options: accepted before the sub-command (``--json verify DIR``) and after it
#: (``verify DIR --json``). Each is an on/off flag; a flag given in either place is on.
_GLOBAL_FLAGS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("--json", "json_"), "json_", "Print one JSON document on stdout; logs go to stderr."),
    (("--debug",), "debug", "Show a traceback with every error (expected ones too)."),
    (("-q", "--quiet"), "quiet", "Print only errors."),
    (("-v", "--verbose"), "verbose", "Print more detail to stderr."),
)
_GLOBAL_NAMES = tuple(name for _, name, _ in _GLOBAL_FLAGS)
#: The one global option with a value: the project root (docs/architecture.md, "The project root").
_REPO_HELP = (
    "Project root holding manifests/, profiles/, sbom/, ... (default: $NINFER_RELEASE_REPO, "
    "else the definition's project, else found upward from the working directory)."
)


def _repo_option() -> click.Option:
    return click.Option(["--repo"], metavar="DIR", type=_INPUT_DIR, help=_REPO_HELP)


def _global_options() -> list[click.Option]:
    flags = [click.Option(list(decls), is_flag=True, help=text) for decls, _, text in _GLOBAL_FLAGS]
    return [*flags, _repo_option()]


def _resolve(previous: Context | None, flags: dict[str, bool], repo: str | None = None) -> Context:
    """The global options in force: ``flags`` (and ``repo``) given here, on top of those given
    before the command."""
    json_ = flags["json_"] or (previous is not None and previous.json)
    debug = flags["debug"] or (previous is not None and previous.debug)
    verbosity = previous.verbosity if previous is not None else 0
    if flags["verbose"]:
        verbosity = max(verbosity, 1)
    if flags["quiet"]:
        verbosity = -1  # quiet wins, wherever it is given
    repo = repo if repo is not None else (previous.repo if previous is not None else None)
    resolved = Context(json=json_, debug=debug, verbosity=verbosity, repo=repo)
    logging.getLogger().setLevel(
        logging.DEBUG if debug else (logging.INFO if verbosity > 0 else logging.WARNING)
    )
    return resolved


def _with_example(kwargs: dict[str, Any], example: str | None) -> dict[str, Any]:
    """Click command keywords with an ``Example:`` epilog of ``example``'s lines (kept unwrapped)."""
    if example:
        lines = "\n".join(f"  {line}" for line in example.strip().splitlines())
        kwargs["epilog"] = f"\b\nExample:\n{lines}"
    return kwargs


class _Command(click.Command):
    """A leaf command: takes the global options too, and shows an ``Example:`` block in its help.

    ``example`` is one or more command lines (Click keeps them unwrapped via ``\\b``).
    """

    def __init__(self, *args: Any, example: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **_with_example(kwargs, example))
        self.params.extend(_global_options())

    def invoke(self, ctx: click.Context) -> Any:
        flags = {name: bool(ctx.params.pop(name, False)) for name in _GLOBAL_NAMES}
        repo = ctx.params.pop("repo", None)
        ctx.obj = _resolve(ctx.obj if isinstance(ctx.obj, Context) else None, flags, repo)
        return super().invoke(ctx)


class _Group(click.Group):
    """A command group whose sub-commands are :class:`_Command`\\ s and sub-groups ``_Group``\\ s."""

    command_class = _Command
    group_class = type  # sub-groups are of this same class

    def __init__(self, *args: Any, example: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **_with_example(kwargs, example))


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"]},
    example="ninfer-release build release manifests/v0.13.1.yaml --inputs staged --out out --offline\n"
    "ninfer-release verify out/rtx4090 --json",
)
@click.version_option(__version__, prog_name="ninfer-release")
@click.option("--json", "json_", is_flag=True, help="Print one JSON document on stdout; logs go to stderr.")
@click.option("--debug", is_flag=True, help="Show a traceback with every error (expected ones too).")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
@click.option("-v", "--verbose", is_flag=True, help="Print more detail to stderr.")
@click.option("--repo", metavar="DIR", type=_INPUT_DIR, help=_REPO_HELP)
@click.pass_context
def cli(ctx: click.Context, json_: bool, debug: bool, quiet: bool, verbose: bool, repo: str | None) -> None:
    """Build, verify and publish OMP NInfer releases.

    Global options may also follow the command (``verify DIR --json``).

    Exit codes: 0 ok, 1 internal error, 2 usage, 3 profile/definition invalid, 4 input missing or
    invalid, 5 integrity failure, 6 container backend failed, 7 publish refused or failed.
    """
    logging.basicConfig(
        level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    ctx.obj = _resolve(None, {"json_": json_, "debug": debug, "quiet": quiet, "verbose": verbose}, repo)


@cli.command(
    "completion",
    example="ninfer-release completion bash > ~/.local/share/bash-completion/completions/ninfer-release\n"
    'eval "$(ninfer-release completion zsh)"\n'
    "ninfer-release completion fish > ~/.config/fish/completions/ninfer-release.fish",
)
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion_cmd(shell: str) -> None:
    """Print the shell completion script for SHELL (Click's own completion; source it).

    The script calls back ``ninfer-release`` with ``_NINFER_RELEASE_COMPLETE=<shell>_complete``.
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    assert cls is not None  # the Choice above admits only shells Click knows
    click.echo(cls(cli, {}, PROG_NAME, COMPLETE_VAR).source())


# --- profile / manifest commands (profiles stage) ----------------------------------------------


@cli.group()
def profile() -> None:
    """Deployment profiles: validate, render the engine config, generate a bearer key."""


@profile.command("validate", example="ninfer-release profile validate profiles/*.yaml")
@click.argument("paths", nargs=-1, required=True, type=_INPUT_FILE)
@click.option("--templates", "templates", type=_INPUT_DIR, help="Templates directory.")
@click.pass_obj
def profile_validate(ctx: Context, paths: tuple[str, ...], templates: str | None) -> None:
    """Validate profiles: every value, then render each config in memory and check it."""

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
        results.append(
            {
                "path": raw,
                "profile_id": prof.id,
                "bytes_sha256": rendered.bytes_sha256,
                "semantic_sha256": rendered.semantic_sha256,
            }
        )
    if failures:
        # A missing file is exit 4; otherwise the definitions are invalid (3). Every problem is listed.
        kind = InputError if any(isinstance(f, InputError) for f in failures) else DefinitionError
        raise kind(problems=[p for f in failures for p in f.problems])
    emit(ctx, {"ok": True, "profiles": results}, [f"ok  {r['profile_id']}  ({r['path']})" for r in results])


@profile.command(
    "render",
    example="ninfer-release profile render profiles/qwen38-4090-native-v0.7.0-beta.2.yaml --out ninfer.toml",
)
@click.argument("profile_path", metavar="PROFILE", type=_INPUT_FILE)
@click.option("--out", "out", required=True, type=_PLAIN_FILE, help="Config file to write.")
@click.option("--templates", "templates", type=_INPUT_DIR, help="Templates directory.")
@click.option("--force", is_flag=True, help="Replace an existing file whose bytes differ.")
@click.pass_obj
def profile_render(ctx: Context, profile_path: str, out: str, templates: str | None, force: bool) -> None:
    """Render PROFILE's engine config to --out (exact bytes) and print both hashes.

    An existing --out with the same bytes is left as is; one with other bytes is refused (exit 4)
    unless --force. The file is written atomically.
    """

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
        try:
            write_bytes(target, rendered.data)
        except OSError as exc:
            raise InputError(problems=[Problem(file=out, message=f"cannot write: {exc.strerror}")]) from None
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


@profile.command("keygen", example="ninfer-release profile keygen --out ninfer.key")
@click.option("--out", "out", required=True, type=_PLAIN_FILE, help="New key file (0600).")
@click.option("--print", "print_", is_flag=True, help="Also print the key on stdout.")
@click.pass_obj
def profile_keygen(ctx: Context, out: str, print_: bool) -> None:
    """Generate a 64-character bearer key (32 random bytes, hex) into a new file, mode 0600.

    Never overwrites; the key is printed only with --print.
    """

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


@manifest.command("check", example="ninfer-release manifest check manifests/v0.13.1.yaml")
@click.argument("manifest_path", metavar="MANIFEST", type=_INPUT_FILE)
@click.pass_obj
def manifest_check(ctx: Context, manifest_path: str) -> None:
    """Check a staged release manifest and every profile it names; print each lane's config hashes."""

    from ninfer_release.manifests import render_release

    release = _load_release(ctx, manifest_path)
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
        lanes.append(
            {
                "lane": lane_id,
                "component_tag": lane.component_tag,
                "kind": lane.kind,
                "mode": lane.mode,
                "profile_id": lane.profile_id,
                "source_commit": lane.source_commit,
                "cuda_arch": lane.cuda_arch,
                "bytes_sha256": cfg.bytes_sha256,
                "semantic_sha256": cfg.semantic_sha256,
            }
        )
        lines += [
            f"{lane_id}  {lane.component_tag}  {lane.kind} {lane.mode}  profile {lane.profile_id}",
            f"  bytes_sha256     {cfg.bytes_sha256}",
            f"  semantic_sha256  {cfg.semantic_sha256}",
        ]
    emit(
        ctx,
        {
            "ok": True,
            "version": release.version,
            "candidate_commit": release.candidate_commit,
            "source_date_epoch": release.source_date_epoch,
            "lanes": lanes,
        },
        lines,
    )


@manifest.command("lanes", example="ninfer-release manifest lanes manifests/v0.13.1.yaml --json")
@click.argument("manifest_path", metavar="MANIFEST", type=_INPUT_FILE)
@click.pass_obj
def manifest_lanes(ctx: Context, manifest_path: str) -> None:
    """Print the definition's lane matrix (lane, kind native/image/carried, tag), as CI reads it."""
    from ninfer_release.manifests._matrix import lane_matrix

    doc = lane_matrix(_load_release(ctx, manifest_path))
    lines = [f"{e['lane']}  {e['kind']}  {e['component_tag']}" for e in doc["lanes"]]
    emit(ctx, {"ok": True, **doc}, lines)


# --- samples ---------------------------------------------------------------------------------


@cli.group()
def samples() -> None:
    """Sample inputs: staged engine builds for the native lanes (docs/samples.md)."""


@samples.command(
    "fetch",
    example="ninfer-release samples fetch --out staged\n"
    "ninfer-release samples fetch --out staged --native-only",
)
@click.option("--out", "out", required=True, type=_PLAIN_DIR, help="Output directory.")
@click.option("--full", is_flag=True, help="Also fetch cuBLAS (a few hundred MB; used by benchmarks).")
@click.option(
    "--cache",
    "cache",
    type=_INPUT_DIR,
    help="Wheel cache (default $NINFER_CACHE/wheels or ~/.cache/ninfer-release/wheels).",
)
@click.option(
    "--native-only",
    "native_only",
    is_flag=True,
    help="Only the native lanes (rtx4090, rtx3090): no container sample, no busybox-static needed.",
)
@click.pass_obj
def samples_fetch(ctx: Context, out: str, full: bool, cache: str | None, native_only: bool) -> None:
    """Download pinned wheels and lay out DIR/rtx4090/ and DIR/rtx3090/ staged trees.

    Also DIR/rtx5090/ and DIR/base-layout/ (the container lane's stand-in inputs and sample base,
    built from Debian's busybox-static) unless --native-only.
    """

    from ninfer_release.samples import LayoutStep, default_wheel_cache, fetch_samples

    extra_steps: tuple[LayoutStep, ...] = ()
    if not native_only:  # the container lane's inputs and sample base (containers stage)
        from ninfer_release.containers import check_sample_base_tool, sample_layout_step

        check_sample_base_tool()  # before any download: say what is missing and how to do without it
        extra_steps = (sample_layout_step,)
    repo_root = ctx.root()  # samples/ of the project root (--repo)
    result = fetch_samples(
        Path(out),
        full=full,
        cache=Path(cache) if cache else default_wheel_cache(os.environ),
        repo_root=repo_root,
        progress=_Lines(ctx, "samples", verbosity=0),
        extra_steps=extra_steps,
    )
    mib = 2**20
    human = [
        f"{'replaced' if result.replaced else 'wrote'} {result.out}: {len(result.lanes)} lanes, "
        f"{result.files} files, {result.bytes / mib:.1f} MiB{' (full)' if result.full else ''}"
    ]
    human += [
        f"  {ln.lane}  {ln.cuda_arch}  {ln.files} files  {ln.bytes / mib:.1f} MiB  {ln.path}"
        for ln in result.lanes
    ]
    human += [
        f"  wheel {w.package}=={w.version} sha256:{w.sha256} ({'downloaded' if w.downloaded else 'cached'})"
        for w in result.wheels
    ]
    emit(ctx, result.as_json(), human)


# --- build / verify (build, releases stages) ---------------------------------------------------


def _wants_progress(ctx: Context) -> bool:
    """Progress bars only on a terminal, and never with --json or -q."""
    return not ctx.json and ctx.verbosity >= 0 and sys.stderr.isatty()


class _Bars:
    """:class:`~ninfer_release.progress.Progress` as rich bars: one per step (``label: message``,
    with the step's total when known) and, with ``overall``, one more counting every byte."""

    def __init__(self, bar: Any, label: str | None, *, overall: bool) -> None:
        self._bar = bar
        self._label = label
        self._tasks: dict[str, Any] = {}
        self._current: Any = None
        self._overall = bar.add_task(self._text("total"), total=None) if overall else None

    def _text(self, message: str) -> str:
        return message if self._label is None else f"{self._label}: {message}"

    def step(self, message: str, total: int | None = None) -> None:
        text = self._text(message)
        if text not in self._tasks:
            self._tasks[text] = self._bar.add_task(text, total=total)
        elif total is not None:
            self._bar.update(self._tasks[text], total=total)
        self._current = self._tasks[text]

    def advance(self, nbytes: int) -> None:
        if self._current is not None:
            self._bar.advance(self._current, nbytes)
        if self._overall is not None:
            self._bar.advance(self._overall, nbytes)

    def overall_total(self, nbytes: int) -> None:
        """The overall bar's total (a fetch knows it up front)."""
        if self._overall is not None:
            self._bar.update(self._overall, total=nbytes, completed=0)


@contextlib.contextmanager
def _byte_progress(
    ctx: Context, label: str | None = None, *, overall: bool = False, console: Any = None
) -> Iterator[Progress]:
    """The CLI's one progress renderer: rich bars on stderr (:class:`_Bars`), only on a terminal
    and never with --json or -q; elsewhere :data:`~ninfer_release.progress.SILENT`.

    Each bar shows its step (prefixed with ``label`` when given), bytes done and, when the step
    has a total, that total and the time remaining. ``console`` (tests) replaces the terminal
    check and stderr.
    """
    if console is None and not _wants_progress(ctx):
        from ninfer_release.progress import SILENT

        yield SILENT
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        SpinnerColumn,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.progress import Progress as RichProgress

    with RichProgress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console if console is not None else Console(stderr=True),
        transient=True,
    ) as bar:
        yield _Bars(bar, label, overall=overall)


def _insecure_flag(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--insecure-registry HOST`` (docs/publishing.md, "Registry client")."""
    return click.option(
        "--insecure-registry",
        "insecure_registry",
        multiple=True,
        metavar="HOST[:PORT]",
        help="Allow plain HTTP to this registry (never for credentials you care about). Repeatable.",
    )(fn)


def _registry_flags(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--ca-file`` and ``--insecure-registry`` (docs/publishing.md, "Registry client")."""
    return click.option(
        "--ca-file",
        "ca_file",
        type=_PLAIN_FILE,
        help="CA bundle that signs the registry's TLS certificate (else certs.d, SSL_CERT_FILE, system).",
    )(_insecure_flag(fn))


def _registry_options(ca_file: str | None, insecure: tuple[str, ...]) -> Any:
    from ninfer_release.registry import RegistryOptions

    for host in insecure:
        click.echo(f"warning: INSECURE: plain HTTP allowed to {host} (--insecure-registry)", err=True)
    return RegistryOptions.from_env(os.environ, ca_file=ca_file, insecure_hosts=insecure)


def _lane_lines(summary: dict[str, Any]) -> list[str]:
    if summary.get("mode") == "carry":
        return [f"{summary['lane']}: carried {summary.get('image')} ({summary.get('verification')})"]
    if "image_dir" in summary:
        return [
            f"{summary['lane']}: built {summary['image_reference']} -> {summary['image_dir']}",
            f"  base {summary['base_digest']}",
            f"  config semantic sha256 {summary['config']['sha256']}",
        ]
    verified = ", verified" if summary.get("verified") else ""
    return [
        f"{summary['lane']}: {summary['component_tag']} -> {summary['set_dir']} "
        f"({summary['files']} files, {summary['qualification']}{verified})",
        f"  config bytes sha256 {summary['config_bytes_sha256']}",
        f"  SHA256SUMS sha256   {summary['sha256sums']}",
    ]


def _print_plan(
    ctx: Context, manifest: Path, *, inputs: str, out: str, lane: str | None, clean: bool, base: str | None
) -> None:
    """``--dry-run``: print the build plan (:func:`~ninfer_release.build.plan_build`); write nothing."""
    from ninfer_release.build import plan_build

    plan = plan_build(
        manifest,
        inputs=Path(inputs),
        out=Path(out),
        env=os.environ,
        lane_id=lane,
        clean=clean,
        repo_root=ctx.root(manifest),
        base=base,
    )
    lines = [f"plan: {'replace' if plan.replaces else 'create'} {plan.out} (nothing written)"]
    for lp in plan.lanes:
        lines.append(
            f"{lp.lane_id}: {lp.kind} {lp.mode}, {len(lp.members)} inputs, {lp.staged_bytes} staged bytes"
        )
        lines += [
            f"  {m.origin:9}  {m.size if m.size is not None else '(built)':>12}  {m.name}" for m in lp.members
        ]
        lines += [f"  writes  {r}" for r in lp.records]
    lines += [f"writes  {r}" for r in plan.records]
    emit(ctx, {"ok": True, "dry_run": True, **plan.as_json()}, lines)


def _build_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options ``build lane`` and ``build release`` share (after --inputs/--out)."""
    options = [
        click.option(
            "--receipts",
            type=_INPUT_DIR,
            help="Qualification receipts (DIR or DIR/<lane>/).",
        ),
        click.option("--registry", help="Mirror registry HOST:PORT to verify a carried image against."),
        click.option(
            "--offline", is_flag=True, help="Record carried images as unverified; contact no registry."
        ),
        click.option(
            "--workers", type=click.IntRange(1, 64), default=2, show_default=True, help="Compression threads."
        ),
        click.option(
            "--base",
            help="Base of a built container lane: OCI layout or REF@sha256 (default DIR/base-layout).",
        ),
        click.option(
            "--clean",
            is_flag=True,
            help="Replace OUT once the new one is complete (only a build output holding the marker).",
        ),
        click.option(
            "--dry-run",
            "dry_run",
            is_flag=True,
            help="Print the plan (members, sizes, records); write nothing.",
        ),
    ]
    for option in reversed(options):  # decorators apply bottom-up; keep the listed order in --help
        command = option(command)
    return command


def _run_build(
    ctx: Context,
    manifest: str,
    lane: str | None,
    *,
    inputs: str,
    out: str,
    clean: bool,
    dry_run: bool,
    receipts: str | None,
    **options: Any,
) -> dict[str, Any] | None:
    """``build lane LANE`` (or ``build release`` when ``lane`` is None): print the plan with
    ``dry_run`` and return None, else build under a progress bar and return the summary.

    ``options``: ``registry``, ``offline``, ``workers``, ``base`` as the stage takes them.
    """
    if dry_run:
        _print_plan(
            ctx, Path(manifest), inputs=inputs, out=out, lane=lane, clean=clean, base=options.get("base")
        )
        return None
    # The big staged files a warm rebuild only hashes are hashed while the build starts up
    # (packaging/_ahead.py, issue 13): started before the build is imported; the build claims.
    from ninfer_release.packaging import _ahead

    _ahead.start(Path(inputs), lane, os.environ)
    try:
        from ninfer_release.build import build_lane, build_release

        common: dict[str, Any] = {
            "inputs": Path(inputs),
            "out": Path(out),
            "env": os.environ,
            "receipts": Path(receipts) if receipts else None,
            "clean": clean,
            "repo_root": ctx.root(manifest),
            **options,
        }
        with _byte_progress(ctx) as progress:
            if lane is None:
                return build_release(Path(manifest), progress=progress, **common).summary()
            return build_lane(Path(manifest), lane, progress=progress, **common).summary()
    finally:
        _ahead.stop()


@cli.group()
def build() -> None:
    """Build one lane, or a whole release, into asset sets and a release manifest."""


@build.command(
    "lane",
    example="ninfer-release build lane rtx4090 --release manifests/v0.13.1.yaml --inputs staged --out lanes",
)
@click.argument("lane")
@click.option(
    "--release",
    "release_path",
    required=True,
    type=_INPUT_FILE,
    help="Release definition, e.g. manifests/v0.13.1.yaml.",
)
@click.option("--inputs", required=True, type=_INPUT_DIR, help="Staged inputs (DIR or DIR/<lane>).")
@click.option("--out", required=True, type=_PLAIN_DIR, help="New output directory.")
@_build_options
@click.pass_obj
def build_lane_cmd(
    ctx: Context,
    /,
    lane: str,
    release_path: str,
    inputs: str,
    out: str,
    clean: bool,
    dry_run: bool,
    **options: Any,
) -> None:
    """Build (or carry) LANE: OUT/<lane>/ (11-file set or image) and OUT/<lane>.lane.json."""
    summary = _run_build(
        ctx, release_path, lane, inputs=inputs, out=out, clean=clean, dry_run=dry_run, **options
    )
    if summary is not None:
        emit(ctx, {"ok": True, **summary}, _lane_lines(summary))


@build.command(
    "release",
    example="ninfer-release build release manifests/v0.13.1.yaml --inputs staged --out out --offline\n"
    "ninfer-release build release manifests/v0.13.1.yaml --inputs staged --out out --clean --dry-run",
)
@click.argument("manifest_path", metavar="MANIFEST", type=_INPUT_FILE)
@click.option("--inputs", required=True, type=_INPUT_DIR, help="Staged inputs: DIR/<lane>/ per lane.")
@click.option("--out", required=True, type=_PLAIN_DIR, help="New output directory.")
@_build_options
@click.pass_obj
def build_release_cmd(
    ctx: Context,
    /,
    manifest_path: str,
    inputs: str,
    out: str,
    clean: bool,
    dry_run: bool,
    **options: Any,
) -> None:
    """Build every lane of MANIFEST into OUT and write OUT/release-manifest.json."""
    summary = _run_build(
        ctx, manifest_path, None, inputs=inputs, out=out, clean=clean, dry_run=dry_run, **options
    )
    if summary is None:
        return
    lines = [line for lane in summary["lanes"] for line in _lane_lines(lane)]
    lines.append(
        f"release manifest {summary['release_manifest']} sha256 {summary['release_manifest_sha256']}"
    )
    emit(ctx, {"ok": True, **summary}, lines)


@manifest.command(
    "assemble", example="ninfer-release manifest assemble lanes/*.lane.json --out release-manifest.json"
)
@click.argument("lane_results", metavar="LANE_RESULT...", nargs=-1, required=True, type=_INPUT_FILE)
@click.option("--out", required=True, type=_PLAIN_FILE, help="Release manifest to write (new file).")
@click.pass_obj
def manifest_assemble(ctx: Context, lane_results: tuple[str, ...], out: str) -> None:
    """Assemble the release manifest from lane results (<lane>.lane.json), as CI does."""
    from ninfer_release.atomic import write_bytes
    from ninfer_release.hashing import sha256_bytes
    from ninfer_release.manifests import assemble_release_manifest, load_lane_result

    results = [(Path(p).name, load_lane_result(Path(p))) for p in lane_results]
    data = assemble_release_manifest(results)
    write_bytes(Path(out), data, overwrite=False)
    digest = sha256_bytes(data)
    emit(
        ctx,
        {"ok": True, "path": out, "sha256": digest, "lanes": [r.lane_id for _, r in results]},
        [f"{out}: sha256 {digest} ({len(results)} lanes)"],
    )


def _http_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options of every command that downloads by URL (docs/publishing.md, "Fetching by URL")."""
    for option in reversed(
        (
            click.option("--ca-file", "ca_file", type=_INPUT_FILE, help="PEM CA bundle to trust."),
            click.option("--connect-timeout", type=float, default=10.0, show_default=True, help="Seconds."),
            click.option("--read-timeout", type=float, default=60.0, show_default=True, help="Seconds."),
            click.option(
                "--deadline",
                type=float,
                default=6 * 3600.0,
                show_default=True,
                help="Seconds for the whole fetch.",
            ),
            click.option("--retries", type=click.IntRange(0, 20), default=4, show_default=True),
            click.option(
                "--no-cross-host-redirects",
                "no_cross_host",
                is_flag=True,
                help="Refuse redirects to another host (GitHub downloads need them).",
            ),
        )
    ):
        f = option(f)
    return f


def _http_policy(options: dict[str, Any]) -> Any:
    from ninfer_release.releases import HttpPolicy

    ca = options.get("ca_file")
    return HttpPolicy(
        connect_timeout=options["connect_timeout"],
        read_timeout=options["read_timeout"],
        deadline=options["deadline"],
        retries=options["retries"],
        cross_host_redirects=not options["no_cross_host"],
        ca_file=Path(ca) if ca else None,
    )


def _fetch_events(progress: Progress) -> Callable[[str, str, int], None] | None:
    """The HTTP fetcher's events ``(kind, name, n)`` as steps of ``progress``: ``total`` sets the
    overall bar's total, ``start`` a file's step (``n`` its size), ``advance`` its bytes
    (``None`` when nothing is shown)."""
    if not isinstance(progress, _Bars):
        return None
    bars = progress

    def event(kind: str, name: str, n: int) -> None:
        if kind == "total":
            bars.overall_total(n)
        elif kind == "start":
            bars.step(name, n)
        elif kind == "advance":
            bars.advance(n)

    return event


@cli.command(
    "verify",
    example="ninfer-release verify out/rtx4090 --release-manifest out/release-manifest.json\n"
    "ninfer-release verify dir://store:v0.7.0-qwen38-4090-beta.2 --json\n"
    "ninfer-release verify https://github.com/alphastorm/omp-ninfer/releases/download/v0.7.0-qwen38-4090-beta.2/",
)
@click.argument("location", metavar="DIR_OR_REF_OR_URL")
@click.option("--sums-sha256", "sums_sha256", help="SHA256SUMS digest the release manifest binds.")
@click.option(
    "--release-manifest",
    "release_manifest",
    type=_INPUT_FILE,
    help="release-manifest.json: check SHA256SUMS against the digest it binds for this set.",
)
@click.option(
    "--require-qualified",
    is_flag=True,
    help="Fail (exit 5) unless the set is qualified (receipts bound to these bytes, no failed gate).",
)
@click.option(
    "--refuse-superseded",
    is_flag=True,
    help="Fail (exit 5) when the store records the tag as superseded (<tag>.superseded).",
)
@click.option(
    "--key",
    "key_path",
    type=_PLAIN_FILE,
    help="PEM public key (Ed25519 / ECDSA P-256): check the set's signatures stored beside it.",
)
@click.option(
    "--require-signature",
    is_flag=True,
    help="With --key: a missing signature is a failure (exit 5).",
)
@click.option(
    "--signatures",
    "signatures_dir",
    type=_PLAIN_DIR,
    help="Directory holding a local set's *.sigstore.json (default: <DIR>.sigstore/ beside it).",
)
@_http_options
@_insecure_flag
@click.pass_obj
def verify_cmd(
    ctx: Context,
    /,
    location: str,
    sums_sha256: str | None,
    release_manifest: str | None,
    require_qualified: bool,
    refuse_superseded: bool,
    key_path: str | None,
    require_signature: bool,
    signatures_dir: str | None,
    insecure_registry: tuple[str, ...],
    **http: Any,
) -> None:
    """Verify an asset set: a directory, oci://HOST[:PORT]/REPO:TAG, dir://PATH:TAG, files://DIR:TAG
    or https://HOST/.../<tag>/ (fetched into a private temp dir; http:// only for loopback).

    Says whether the set is qualified or an unqualified draft, and the successor of a tag its
    store records as superseded. Exit 0 when every check holds; exit 5 with one line per failure
    otherwise (with --require-qualified, also when unqualified; with --refuse-superseded, also when
    superseded).
    With --key, the signatures of the provenance and SHA256SUMS (Sigstore bundles beside the set)
    must verify with that key and sign these exact bytes.
    """
    # A directory's zip member scan starts in a worker process before the verification is
    # imported (releases/_scan_worker.py, issue 13); it is used only for that very file, unchanged.
    if (require_signature or signatures_dir) and key_path is None:
        raise click.UsageError("--require-signature and --signatures need --key PUB")
    from ninfer_release.releases import _scan_worker

    with _scan_worker.scan_ahead(location):
        from ninfer_release.releases import verify_location

        signatures = None
        if key_path is not None:
            from ninfer_release.releases import SignatureCheck, load_verifying_key

            signatures = SignatureCheck(
                key=load_verifying_key(Path(key_path)),
                require=require_signature,
                directory=Path(signatures_dir) if signatures_dir else None,
            )

        bound = _read_release_manifest(Path(release_manifest)) if release_manifest is not None else None
        # Only a registry reference needs the registry client; a directory never loads it.
        options = (
            _registry_options(http.get("ca_file"), insecure_registry)
            if location.startswith("oci://")
            else None
        )
        with _byte_progress(ctx, "verify") as progress:
            located = verify_location(
                location,
                expected_sums_sha256=sums_sha256,
                release_manifest=bound,
                progress=progress,
                # Only a URL needs the HTTP client; a directory never loads it (verify start-up cost).
                http=_http_policy(http) if location.startswith(("https://", "http://")) else None,
                fetch_progress=_fetch_events(progress),
                require_qualified=require_qualified,
                registry=options,
                transfer=progress,
                signatures=signatures,
                refuse_superseded=refuse_superseded,
            )
        report = located.report
        _require_ok(report, location)
        lines = [] if ctx.verbosity < 1 else list(report.checked)
        lines.append(located.summary())
        emit(ctx, {"ok": True, **located.as_dict()}, lines)


@cli.command(
    "fetch",
    example="ninfer-release fetch https://127.0.0.1:8443/omp/v0.7.0-qwen38-4090-beta.2/ --out set\n"
    "ninfer-release fetch --route ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64.route.json --out set\n"
    "ninfer-release fetch --route route.json --out set --with-model --model-dir models",
)
@click.argument("url", required=False, metavar="[URL]")
@click.option("--out", "out", required=True, type=_PLAIN_DIR, help="Directory to fetch into.")
@click.option(
    "--route",
    "route",
    type=_INPUT_FILE,
    help="Route block: fetch the set its package.url names.",
)
@click.option("--with-model", is_flag=True, help="With --route: also fetch components.model into store_as.")
@click.option(
    "--model-dir",
    type=_INPUT_DIR,
    help="Where --with-model stores the model (default --out).",
)
@_http_options
@click.pass_obj
def fetch_cmd(
    ctx: Context,
    /,
    url: str | None,
    out: str,
    route: str | None,
    with_model: bool,
    model_dir: str | None,
    **http: Any,
) -> None:
    """Download a published set by URL (https://HOST/.../<tag>/) or by route block, then verify it.

    Each file is read with its expected size and SHA-256 and appears in --out only once both
    check; an interrupted fetch resumes (HTTP Range) onto the partial named by the same digest.
    Exit 0 when the set verifies; 4 network/HTTP/input problems; 5 wrong size, digest or set.
    """
    from ninfer_release.releases import fetch_route, fetch_set, qualification_phrase

    if (url is None) == (route is None):
        raise click.UsageError("give either URL or --route ROUTE.json")
    if with_model and route is None:
        raise click.UsageError("--with-model needs --route (the model's URL, size and SHA-256 come from it)")
    policy = _http_policy(http)
    with _byte_progress(ctx, overall=True) as bars:
        progress = _fetch_events(bars)
        if route is not None:
            result = fetch_route(
                Path(route),
                Path(out),
                policy=policy,
                with_model=with_model,
                model_dir=Path(model_dir) if model_dir else None,
                progress=progress,
            )
        else:
            assert url is not None
            result = fetch_set(url, Path(out), policy=policy, progress=progress)
    report = result.report
    _require_ok(report, result.url)
    lines = [f"{f.status}: {f.name} ({f.size} bytes)" for f in result.files] if ctx.verbosity >= 1 else []
    if result.model is not None:
        lines.append(f"model {result.model.status}: {result.model.name} ({result.model.size} bytes)")
    state = qualification_phrase(report)
    lines.append(
        f"{result.url}: fetched into {out}, OK ({state}; {report.stem}, {len(report.checked)} checks)"
    )
    emit(ctx, {"ok": True, **result.as_dict()}, lines)


@cli.command(
    "export-verifier",
    example="ninfer-release export-verifier --out ninfer-verify.py\n"
    "python3 -I ninfer-verify.py set/   # on the installer host: Python >= 3.9, nothing installed",
)
@click.option("--out", "out", required=True, type=_PLAIN_FILE, help="File to write (0755).")
@click.pass_obj
def export_verifier_cmd(ctx: Context, out: str) -> None:
    """Write a one-file set verifier that needs only Python >= 3.9 and its standard library.

    It checks the exact 11 files, SHA256SUMS (GNU text/binary/BSD, CRLF and BOM tolerated), every
    size and digest, the package zip, and every cross-binding that needs no SBOM library; it
    agrees with verify on every accept and reject (docs/publishing.md, "The standalone verifier").
    """
    from ninfer_release.releases import export_verifier

    digest = export_verifier(Path(out))
    emit(ctx, {"ok": True, "out": out, "sha256": digest}, [f"{out}: standalone verifier (sha256 {digest})"])


def _read_release_manifest(path: Path) -> dict[str, Any]:
    from ninfer_release import strictjson
    from ninfer_release.errors import InputError, Problem
    from ninfer_release.manifests import MAX_RELEASE_MANIFEST_BYTES

    doc = strictjson.read(path, limit=MAX_RELEASE_MANIFEST_BYTES, missing="cannot read: no such file")
    if not isinstance(doc, dict) or not isinstance(doc.get("lanes"), dict):
        raise InputError(problems=[Problem(file=str(path), field="lanes", message="not a release manifest")])
    return doc


# --- image (containers stage) ------------------------------------------------------------------


@cli.group()
def image() -> None:
    """Container images: build (daemonless OCI or through docker), carry a published image by digest."""


@image.command(
    "build",
    example="ninfer-release image build containers/qwen38-5090.yaml --inputs staged/rtx5090 "
    "--base staged/base-layout --out image --release manifests/v0.13.1.yaml",
)
@click.argument("recipe_path", metavar="RECIPE", type=_INPUT_FILE)
@click.option(
    "--inputs",
    "inputs",
    required=True,
    type=_INPUT_DIR,
    help="The lane's staged inputs (DIR/<lane> or DIR holding <lane>/).",
)
@click.option("--base", "base", required=True, help="OCI layout DIR[:REF] or REGISTRY/REPO@sha256:<hex>.")
@click.option("--out", "out", required=True, type=_PLAIN_DIR, help="New output directory.")
@click.option("--backend", "backend", type=click.Choice(["oci", "docker"]), default="oci", show_default=True)
@click.option("--version", "version", help="Component tag (default: build-info.json component_tag).")
@click.option("--revision", "revision", help="Full 40-hex source commit (default: build-info.json).")
@click.option(
    "--source-date-epoch",
    "epoch",
    type=int,
    help="Seconds; default SOURCE_DATE_EPOCH, else the --release manifest's value.",
)
@click.option(
    "--release",
    "release_path",
    type=_INPUT_FILE,
    help="Release manifest to take the source-date epoch from.",
)
@click.option(
    "--profile",
    "profile_path",
    type=_INPUT_FILE,
    help="Profile file (default: <repo>/profiles/<recipe profile>.yaml).",
)
@click.option("--docker-host", "docker_host_url", help="Engine API URL (default DOCKER_HOST).")
@click.option("--push", "push", help="With --backend docker: push to REGISTRY/REPOSITORY:TAG.")
@click.option("--no-smoke", "no_smoke", is_flag=True, help="With --backend docker: skip the smoke run.")
@click.pass_obj
def image_build(
    ctx: Context,
    recipe_path: str,
    inputs: str,
    base: str,
    out: str,
    backend: str,
    version: str | None,
    revision: str | None,
    epoch: int | None,
    release_path: str | None,
    profile_path: str | None,
    docker_host_url: str | None,
    push: str | None,
    no_smoke: bool,
) -> None:
    """Build RECIPE's image from staged inputs onto a pinned base; write layout, tar, record, SBOMs."""
    from ninfer_release import build

    if backend != "docker" and (push or docker_host_url or no_smoke):
        raise click.UsageError("--push, --docker-host and --no-smoke need --backend docker")
    options = build.ImageBuildOptions(
        recipe=Path(recipe_path),
        inputs=Path(inputs),
        base=base,
        out=Path(out),
        repo_root=ctx.root(recipe_path),
        version=version,
        revision=revision,
        epoch=epoch,
        release=Path(release_path) if release_path else None,
        release_root=ctx.root(release_path) if release_path else None,
        profile=Path(profile_path) if profile_path else None,
    )
    # forked first, while this process is one thread: the SBOM libraries load beside the build
    with build.sbom_renderer() as renderer:
        resolved = build.resolve_image_build(options, env=os.environ)
        recipe = resolved.request.recipe
        chosen = build.image_backend(
            backend, recipe=recipe, env=os.environ, docker_host=docker_host_url, push=push, smoke=not no_smoke
        )
        built = build.build_image_with_sboms(
            resolved.request,
            backend=chosen,
            progress=_Lines(ctx, "image", verbosity=1),
            stand_in=resolved.info.stand_in,
            inputs_license=resolved.info.license,
            renderer=renderer,
        )
    human = _image_lines(built, resolved.request.rendered)
    emit(ctx, {"ok": True, **built.as_json(), "out": str(built.result.out)}, human)


def _image_lines(built: Any, rendered: Any) -> list[str]:
    """The human report of ``image build``: ``built`` a :class:`~ninfer_release.build.ImageOutcome`,
    ``rendered`` the engine config rendered into it (``None`` when the recipe ships none)."""
    result = built.result
    human = [
        f"built {result.reference}",
        f"  config {result.config_digest}  base {result.base_digest}",
        f"  {len(result.layers)} layers; wrote {result.layout} and {result.archive}",
        "  sbom " + ", ".join(f"{n} sha256 {d['sha256']}" for n, d in sorted(built.sbom_files.items())),
    ]
    if rendered is not None:
        human.append(f"  engine config {rendered.profile_id} semantic {rendered.config_semantic_sha256}")
    pushed = result.backend.get("pushed")
    if pushed:
        human.append(f"  pushed {pushed['reference']}")
    return human


@image.command(
    "carry", example="ninfer-release image carry rtx5090 --release manifests/v0.13.1.yaml --offline"
)
@click.argument("lane")
@click.option(
    "--release",
    "release_path",
    required=True,
    type=_INPUT_FILE,
    help="Release manifest whose LANE is carried.",
)
@click.option("--registry", "registry", help="Mirror registry HOST:PORT holding the same repository path.")
@click.option("--offline", is_flag=True, help="Record the carry as unverified without contacting a registry.")
@click.option("--out", "out", type=_PLAIN_FILE, help="Also write the carry record here.")
@click.pass_obj
def image_carry(
    ctx: Context, lane: str, release_path: str, registry: str | None, offline: bool, out: str | None
) -> None:
    """Re-verify LANE's published image by digest and record it; nothing is rebuilt."""
    from ninfer_release import containers
    from ninfer_release.atomic import write_bytes
    from ninfer_release.build import carried_lane

    if offline and registry:
        raise click.UsageError("--offline and --registry exclude each other")
    release = _load_release(ctx, release_path)
    carried = carried_lane(release, lane, where=release_path)
    progress = _Lines(ctx, "carry", verbosity=1)
    record = containers.carry_image(carried, registry=registry, offline=offline, progress=progress)
    if out:
        write_bytes(Path(out), record.as_bytes())
    where = (
        f"verified against {record.verified_against}, {len(record.checked)} digests checked"
        if record.verified
        else "UNVERIFIED (offline: no registry contacted)"
    )
    emit(ctx, {"ok": True, **record.as_json()}, [f"carried {lane} {record.image}", f"  {where}"])


# --- sbom (documents beside a set or an image) ---------------------------------------------------


@cli.group()
def sbom() -> None:
    """SBOMs beside a sealed set or an image build: the SPDX 3.0.1 document (outside the 11 files)."""


@sbom.command(
    "spdx3",
    example="ninfer-release sbom spdx3 out/v0.13.1/rtx4090 --out ninfer-rtx4090.spdx3.json\n"
    "ninfer-release sbom spdx3 out/image-rtx5090 --out image.spdx3.json --json",
)
@click.argument("directory", metavar="DIR", type=_INPUT_DIR)
@click.option("--out", "out", required=True, type=_PLAIN_FILE, help="File to write.")
@click.pass_obj
def sbom_spdx3(ctx: Context, directory: str, out: str) -> None:
    """Verify DIR (a sealed set, or an image build output) and write its SPDX 3.0.1 JSON-LD to --out.

    The same facts as DIR's SPDX 2.3 and CycloneDX documents, with SHA-512 of the verified bytes;
    it passes ntia-conformance-checker's ntia, fsct3-min and bsi profiles (docs/sbom.md). Exit 0
    written, 4 DIR is neither kind or --out is inside the set, 5 DIR does not verify.
    """
    from ninfer_release.sbom import write_spdx3

    written = write_spdx3(Path(directory), Path(out))
    emit(ctx, {"ok": True, **written.as_json()}, [f"wrote {out}: SPDX 3.0.1 of {written.kind} {directory}"])


# --- lock / receipt (drafting the release engineer's inputs) -----------------------------------


@cli.group()
def lock() -> None:
    """dependencies.lock.json: draft one from a staged tree's PE files and the curated catalog."""


@lock.command(
    "init",
    example="ninfer-release lock init staged/rtx4090\n"
    "ninfer-release lock init staged/rtx4090 --out lock.draft.json --json",
)
@click.argument("staged_dir", metavar="STAGED_DIR", type=_INPUT_DIR)
@click.option(
    "--out",
    "out",
    type=_PLAIN_FILE,
    help="Draft to write (default STAGED_DIR/dependencies.lock.json).",
)
@click.option("--force", is_flag=True, help="Replace an existing file at --out.")
@click.option(
    "--catalog",
    "catalog_dir",
    type=_INPUT_DIR,
    help="Folder holding catalog.json and licenses/ (default: sbom/ of the project root, --repo).",
)
@click.pass_obj
def lock_init(ctx: Context, staged_dir: str, out: str | None, force: bool, catalog_dir: str | None) -> None:
    """Draft STAGED_DIR's dependencies.lock.json: every bin/ file's SHA-256 and, where the catalog and
    the PE image say, package, version, purl, supplier and licence; TODO markers elsewhere.

    A build refuses a lock that still holds a TODO marker, naming each. Exit 0 with the draft
    written (its markers listed), 4 if STAGED_DIR has no bin/ or --out exists (without --force).
    """
    from ninfer_release.atomic import write_bytes
    from ninfer_release.errors import InputError, Problem
    from ninfer_release.packaging import LOCK
    from ninfer_release.sbom import draft_lock, load_catalog

    root = Path(staged_dir)
    catalog = load_catalog(Path(catalog_dir) if catalog_dir else ctx.root() / "sbom")
    draft = draft_lock(root, catalog=catalog)
    target = Path(out) if out else root / LOCK
    if target.exists() and not force:
        raise InputError(
            problems=[Problem(file=str(target), message="exists; refusing to overwrite (--force)")]
        )
    write_bytes(target, draft.to_bytes())
    lines = [
        f"wrote {target} (draft): {len(draft.files)} redistributables, "
        f"{len(draft.engine_files)} engine files, {draft.todo_count} TODO markers"
    ]
    for f in draft.files:
        known = f"catalog {f.catalog_entry}" if f.catalog_entry else "not in the catalog"
        todo = f"; TODO: {', '.join(f.todo)}" if f.todo else ""
        lines.append(f"  {f.file}  ({known}{'' if f.pe else ', not a PE image'}){todo}")
    lines += [f"note: {n}" for n in draft.notes]
    if draft.todo_count:
        lines.append("fill in every TODO(lock init) marker: a build refuses the lock until then")
    emit(ctx, {"ok": True, "path": str(target), **draft.as_json()}, lines)


@cli.group()
def receipt() -> None:
    """Qualification receipts: a template bound to a draft set, for the hardware run to complete."""


def _option_text(text: str, option: str, field: str = "") -> str:
    """``text`` from the command line, refused (exit 4) unless it is valid UTF-8: a receipt is
    UTF-8 JSON, and a byte Python kept as a surrogate escape could not be written into it."""
    from ninfer_release.errors import InputError, Problem

    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            problems=[Problem(file=option, field=field, message="not valid UTF-8 text (receipts are UTF-8)")]
        ) from None
    return text


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    """``NAME=VALUE`` options as a mapping; a NAME given twice with different values is refused
    (exit 4): keeping either would silently drop the other (a failed gate disappearing)."""
    from ninfer_release.errors import InputError, Problem

    out: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key:
            raise click.UsageError(f"{option} {v!r}: expected NAME=VALUE")
        _option_text(key, option)
        _option_text(value, option, key)
        if key in out and out[key] != value:
            message = (
                f"given twice with different values ({out[key]!r}, then {value!r}); refusing to keep one"
            )
            raise InputError(problems=[Problem(file=option, field=key, message=message)])
        out[key] = value
    return out


def _measurement(name: str, text: str) -> float | int | str | bool:
    """A --measurement value: JSON number or boolean when it parses as one, else the text.

    Raises:
        InputError: the value is a number JSON cannot hold (``NaN``, ``Infinity``, ``1e999``),
            exit 4 naming the measurement (RFC 8259 §6; the strict reader refuses them too).
    """
    import math

    from ninfer_release.errors import InputError, Problem

    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, float) and not math.isfinite(value):
        message = f"{text!r} is not a finite number (JSON has no NaN or infinity)"
        raise InputError(problems=[Problem(file="--measurement", field=name, message=message)])
    return value if isinstance(value, (int, float, bool)) else text


@receipt.command(
    "new",
    example="ninfer-release receipt new out/rtx4090 --out receipts/rtx4090/run-1.json\n"
    "ninfer-release receipt new out/rtx4090 --out receipts/rtx4090/run-1.json --gate G1=pass "
    "--measurement c1_decode_tok_s=150.94",
)
@click.argument("set_dir", metavar="SET_DIR", type=_INPUT_DIR)
@click.option("--out", "out", required=True, type=_PLAIN_FILE, help="Receipt file to write (new).")
@click.option(
    "--gate", "gates", multiple=True, metavar="ID=RESULT", help="A gate result (pass|fail|not_applicable)."
)
@click.option("--measurement", "measurements", multiple=True, metavar="NAME=VALUE", help="A measurement.")
@click.option("--notes", "notes", help="Free text for the receipt.")
@click.pass_obj
def receipt_new(
    ctx: Context,
    set_dir: str,
    out: str,
    gates: tuple[str, ...],
    measurements: tuple[str, ...],
    notes: str | None,
) -> None:
    """Write a schema-2 receipt for the draft set SET_DIR: lane, source commit, profile id and the
    config and package SHA-256 the set's SHA256SUMS names, plus the gates and measurements given.

    The set is verified first (exit 5 if it does not verify); --out is never overwritten (exit 4).
    Without --gate the file is a template: it cannot qualify the set, and sealing refuses it
    (exit 5) until the run's gate results are added.
    """
    from ninfer_release.atomic import write_bytes
    from ninfer_release.jsonbytes import dumps_stable
    from ninfer_release.releases import Receipt, receipt_template, verify_set

    given = _pairs(gates, "--gate")
    measured = {k: _measurement(k, v) for k, v in _pairs(measurements, "--measurement").items()}
    _require_ok(verify_set(Path(set_dir)), set_dir, warn=False)
    doc = receipt_template(Path(set_dir)).as_dict()
    doc["gates"] = given
    doc["measurements"] = measured
    if notes is not None:
        doc["notes"] = _option_text(notes, "--notes")
    # Through the strict reader: a bad gate id or result is refused as in any receipt.
    filled = Receipt.parse(dumps_stable(doc), source="receipt new")
    write_bytes(Path(out), filled.to_bytes(), overwrite=False)
    lines = [
        f"wrote {out}: receipt for {filled.lane} ({filled.profile_id}, source {filled.source_commit[:12]})",
        f"  package sha256 {filled.package_sha256}",
        f"  config sha256  {filled.config_sha256}",
    ]
    if not filled.gates:
        lines.append(
            "  no gate results: this receipt cannot qualify the set until the hardware run's gates "
            "are added (--gate ID=RESULT); sealing refuses it as it is (exit 5)"
        )
    doc = {"ok": True, "path": out, "receipt": filled.as_dict(), "can_qualify": bool(filled.gates)}
    emit(ctx, doc, lines)


@cli.command(
    "diff",
    example="ninfer-release diff old/release-manifest.json out/release-manifest.json\n"
    "ninfer-release diff old out --json",
)
@click.argument("old", metavar="OLD", type=_INPUT_ANY)
@click.argument("new", metavar="NEW", type=_INPUT_ANY)
@click.pass_obj
def diff_cmd(ctx: Context, old: str, new: str) -> None:
    """What changed per lane between two releases: lane fields, package, config hash, route block,
    model binding, SBOM components added / removed / upgraded.

    OLD and NEW are release manifests, build output directories (the sets beside the manifest are
    read too) or asset set directories. Exit 0 either way; 4 if a side cannot be read.
    """
    from ninfer_release.releases import diff_releases

    result = diff_releases(Path(old), Path(new))

    def show(label: str, changes: Any) -> list[str]:
        return [f"  {label} {c.path}: {c.old!r} -> {c.new!r}" for c in changes]

    lines = [f"release {c.path}: {c.old!r} -> {c.new!r}" for c in result.release]
    for d in result.lanes:
        lines.append(f"{d.lane}: {d.status}")
        lines += show("field", d.fields) + show("package", d.package) + show("config", d.config)
        lines += show("route", d.route) + show("model", d.model)
        lines += [f"  sbom added {n}" for n in d.sbom.added] + [f"  sbom removed {n}" for n in d.sbom.removed]
        lines += [f"  sbom upgraded {u.path}: {u.old} -> {u.new}" for u in d.sbom.upgraded]
        lines += [f"  note: {n}" for n in d.notes]
    if not result.changed:
        lines.append("no differences")
    emit(ctx, {"ok": True, **result.as_json()}, lines)


# --- publish (releases stage) ------------------------------------------------------------------


@cli.command(
    "publish",
    example='ninfer-release publish out/rtx4090 --to "oci://$REGISTRY/omp-ninfer/rtx4090" --draft\n'
    "ninfer-release publish sealed/rtx4090 --to dir://store --release manifests/v0.13.1.yaml",
)
@click.argument("set_dir", metavar="SET_DIR")
@click.option(
    "--to",
    "to",
    required=True,
    help="oci://HOST[:PORT]/REPO[:TAG], dir://PATH or files://DIR (DIR/<tag>/<name>).",
)
@click.option("--draft", is_flag=True, help="Publish under <tag>.draft (allowed for unqualified sets).")
@click.option("--latest", "latest", is_flag=True, help="Also move 'latest' (refused for prereleases).")
@click.option(
    "--release",
    "release_path",
    type=_INPUT_FILE,
    help="Release definition the set must agree with.",
)
@click.option(
    "--sign",
    "sign_key",
    type=_PLAIN_FILE,
    help="PEM private key: also sign the provenance and SHA256SUMS, stored beside the tag.",
)
@_registry_flags
@click.pass_obj
def publish_cmd(
    ctx: Context,
    set_dir: str,
    to: str,
    draft: bool,
    latest: bool,
    release_path: str | None,
    sign_key: str | None,
    ca_file: str | None,
    insecure_registry: tuple[str, ...],
) -> None:
    """Publish a sealed 11-file set as one immutable OCI artifact (component prerelease).

    With --sign KEY, Sigstore bundles (DSSE) of the provenance and SHA256SUMS are attached beside
    the tag: an OCI referrer tagged <tag>.sigstore, or files://DIR/<tag>.sigstore/.
    """
    from ninfer_release.errors import InputError, Problem
    from ninfer_release.releases import publish_set

    if not Path(set_dir).is_dir():
        raise InputError(problems=[Problem(file=set_dir, message="not a directory holding an asset set")])
    key = None
    if sign_key is not None:  # a bad key stops before anything is published
        from ninfer_release.releases import load_signing_key

        key = load_signing_key(Path(sign_key))
    release = _load_release(ctx, release_path) if release_path else None
    options = _registry_options(ca_file, insecure_registry)
    with _byte_progress(ctx, "publish", overall=True) as progress:
        result = publish_set(
            Path(set_dir),
            to,
            draft=draft,
            move_latest=latest,
            release=release,
            registry=options,
            transfer=progress,
        )
        signed = None
        if key is not None:
            from ninfer_release.releases import sign_published

            signed = sign_published(Path(set_dir), to, key, draft=draft, registry=options, transfer=progress)
    lines = [f"{result.status}: {result.ref} ({result.manifest_digest})"]
    if result.retired_draft is not None:
        lines.append(f"draft retired: {result.retired_draft} names this tag as its successor")
    if signed is not None:
        lines.append(f"signatures {signed.status}: {signed.ref} ({signed.manifest_digest})")
    emit(
        ctx,
        {
            "ok": True,
            "status": result.status,
            "ref": result.ref,
            "manifest_digest": result.manifest_digest,
            "latest_moved": result.latest_moved,
            "retired_draft": result.retired_draft,
            "signatures": None
            if signed is None
            else {"status": signed.status, "ref": signed.ref, "manifest_digest": signed.manifest_digest},
        },
        lines,
    )


@cli.command(
    "sign",
    example="ninfer-release sign out/rtx4090 --key signing.pem\n"
    "ninfer-release verify out/rtx4090 --key signing.pub --require-signature",
)
@click.argument("set_dir", metavar="SET_DIR", type=_PLAIN_DIR)
@click.option(
    "--key",
    "key_path",
    required=True,
    type=_PLAIN_FILE,
    help="PEM private key (Ed25519 or ECDSA P-256; passphrase in $NINFER_SIGNING_KEY_PASSPHRASE).",
)
@click.option(
    "--out",
    "out",
    type=_PLAIN_DIR,
    help="Where the *.sigstore.json go (default: SET_DIR.sigstore/ beside the set).",
)
@click.pass_obj
def sign_cmd(ctx: Context, set_dir: str, key_path: str, out: str | None) -> None:
    """Sign a local set: Sigstore bundles (DSSE) of its provenance and SHA256SUMS, written beside
    the set, never into it. The set must verify first (exit 5 otherwise); a bundle already there
    with other bytes is never overwritten (exit 4).
    """
    from ninfer_release.releases import load_signing_key, sign_local

    key = load_signing_key(Path(key_path))
    paths = sign_local(Path(set_dir), key, out=Path(out) if out else None)
    emit(
        ctx,
        {"ok": True, "key_id": key.key_id, "algorithm": key.algorithm, "bundles": [str(p) for p in paths]},
        [f"signed {set_dir} with {key.algorithm} key {key.key_id[:16]}: {', '.join(str(p) for p in paths)}"],
    )


@cli.command(
    "supersede",
    example='ninfer-release supersede manifests/v0.13.1.yaml --to "oci://$REGISTRY/omp-ninfer/rtx4090" '
    '--to "oci://$REGISTRY/omp-ninfer/rtx3090"',
)
@click.argument("manifest_path", metavar="MANIFEST", type=_INPUT_FILE)
@click.option(
    "--to",
    "to",
    required=True,
    multiple=True,
    help="A store holding old tags: a lane's publication repository oci://HOST[:PORT]/[NS/]REPO, or a "
    "shared dir://PATH. Repeatable; each lane's marker goes only to its own lane's store.",
)
@_registry_flags
@click.pass_obj
def supersede_cmd(
    ctx: Context,
    manifest_path: str,
    to: tuple[str, ...],
    ca_file: str | None,
    insecure_registry: tuple[str, ...],
) -> None:
    """Record MANIFEST's superseded tags (e.g. beta.1) in their lanes' stores: kept, never reused.

    A store is a lane's when its repository (or directory) path ends in the lane's
    publication_repository; a dir:// or files:// store that is no lane's is shared by all lanes.
    """
    from ninfer_release.releases import supersede_tags

    release = _load_release(ctx, manifest_path)
    results = supersede_tags(release, to, registry=_registry_options(ca_file, insecure_registry))
    docs = [
        {
            "tag": p.tag,
            "lane": p.lane,
            "successor": p.successor,
            "status": "skipped" if r is None else r.status,
            "ref": None if r is None else r.ref,
        }
        for p, r in results
    ]
    lines = [
        f"skipped: {d['tag']} (lane {d['lane']}: none of the stores given is its lane's)"
        if d["ref"] is None
        else f"{d['status']}: {d['tag']} superseded by {d['successor']} ({d['ref']})"
        for d in docs
    ]
    emit(ctx, {"ok": True, "superseded": docs}, lines or ["no superseded tags"])


def _global_flags_in(args: list[str]) -> set[str]:
    """Global flags given anywhere before ``--``: they decide how an error is shown, even when
    Click never got as far as the callback that resolves them (e.g. a usage error)."""
    flags: set[str] = set()
    for a in args:
        if a == "--":
            break
        flags.add(a)
    return flags


def _usage_failure(ctx_obj: Context, exc: click.ClickException) -> NoReturn:
    """A usage error: Click's own message, one JSON document under ``--json``, exit 2."""
    exc.show()
    if ctx_obj.json:
        document = {
            "ok": False,
            "exit_code": int(ExitCode.USAGE),
            "error": "usage",
            "problems": [exc.format_message()],
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    sys.exit(ExitCode.USAGE)


def _signal_behind(exc: BaseException) -> BaseException | None:
    """The Ctrl-C or SIGTERM that ``exc`` is, or that caused it: Python wraps one raised inside
    some machinery (``RuntimeError: Error calling __set_name__`` when it lands while a class is
    made), and that is still an interrupt (exit 130/143), not an internal error. ``None`` else."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, (KeyboardInterrupt, _Terminated)):
            return current
        seen.add(id(current))
        current = current.__cause__
    return None


def _restore(handlers: _Handlers) -> None:
    """Put the signal handlers back, even if a signal lands while they are put back; such a
    signal then ends the process as an interrupt (exit 130/143, one line), never a traceback."""
    pending: BaseException | None = None
    while True:
        try:
            handlers.restore()
            break
        except (KeyboardInterrupt, _Terminated) as exc:
            pending = pending or exc
    if pending is not None:
        _leave_signalled(isinstance(pending, KeyboardInterrupt))


def _leave_signalled(interrupted: bool) -> NoReturn:
    """The one line and exit code of SIGINT (``interrupted``, 130) or SIGTERM (``terminated``,
    143); docs/reliability.md, exit codes."""
    click.echo("interrupted" if interrupted else "terminated", err=True)
    _reported()
    sys.exit(130 if interrupted else 143)


def _exit_for(ctx_obj: Context, exc: BaseException) -> NoReturn:
    """Map an exception out of a command to its documented exit code (the one place; DESIGN.md §9).

    Called while ``exc`` is being handled, so ``--debug`` prints its traceback.
    """
    if isinstance(exc, click.exceptions.Exit):  # --help / --version
        sys.exit(exc.exit_code)
    if isinstance(exc, BrokenPipeError):  # the reader of stdout went away (``| head``): quiet 141
        from ninfer_release.fastcli import reader_gone

        reader_gone()
    if isinstance(exc, click.ClickException):
        _usage_failure(ctx_obj, exc)
    if isinstance(exc, click.exceptions.Abort):
        # Click turns Ctrl-C (and EOF on a prompt) into Abort; keep the conventional 130.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _leave_signalled(True)
        click.echo("aborted", err=True)
        sys.exit(ExitCode.INTERNAL)
    signalled = _signal_behind(exc)
    if signalled is not None:
        _leave_signalled(isinstance(signalled, KeyboardInterrupt))
    if ctx_obj.debug:
        traceback.print_exc()
    if isinstance(exc, NinferError):
        _fail(ctx_obj, int(exc.exit_code), exc.lines, type(exc).__name__)
    if isinstance(exc, MemoryError):  # the machine's or the process's limit, not a bug of ours
        line = "out of memory: the command needed more memory than this process may use; nothing was written"
        _fail(ctx_obj, int(ExitCode.INPUT), [line], "MemoryError")
    _fail(
        ctx_obj,
        int(ExitCode.INTERNAL),
        [f"internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)"],
        "internal",
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and map every error to its documented exit code.

    Runs through Click's own ``main`` so that its shell-completion hook (``_NINFER_RELEASE_COMPLETE``)
    answers completion requests; ``standalone_mode=False`` hands every exception back to us.
    """
    args = list(argv if argv is not None else sys.argv[1:])
    given = _global_flags_in(args)
    ctx_obj = Context(json="--json" in given, debug="--debug" in given, verbosity=0)
    handlers = _Handlers.current()
    stdout = sys.stdout  # Click replaces it only when a write to it met EPIPE
    try:
        # Installed inside the ``try`` so that no signal falls between a handler and its except
        # clause (until here, ``_entry`` turns SIGINT/SIGTERM into a quiet exit; issue 9).
        handlers.install()
        code = cli.main(args, prog_name=PROG_NAME, complete_var=COMPLETE_VAR, standalone_mode=False)
        if isinstance(code, int) and code:  # --help / --version return Click's Exit code
            sys.exit(code)
    except (KeyboardInterrupt, _Terminated, Exception) as exc:  # noqa: BLE001 - the one place an error becomes an exit code
        _exit_for(ctx_obj, exc)
    except SystemExit as exc:
        # Click ends a write to a closed stdout (EPIPE, ``| head``) as a silent exit 1 after
        # wrapping the streams; ours is the shell's 128 + SIGPIPE (docs/reliability.md).
        if exc.code == 1 and sys.stdout is not stdout:
            from ninfer_release.fastcli import reader_gone

            reader_gone()
        raise
    finally:
        _restore(handlers)
