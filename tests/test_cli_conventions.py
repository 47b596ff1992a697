"""CLI conventions (issue 15): global options after the sub-command, shell completion through
Click's own hook, an example in every command's help, ``build --clean`` / ``--dry-run``, progress."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from flow_support import RELEASE, cli, nr_command, ok, samples, set_names
from ninfer_release.atomic import staged_directory
from ninfer_release.build import OUTPUT_MARKER, build_release, plan_build
from ninfer_release.cli import COMPLETE_VAR, Context, _byte_progress
from ninfer_release.cli import cli as root
from ninfer_release.errors import InputError
from ninfer_release.progress import SILENT


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name)


# --- global options after the sub-command ------------------------------------------------------


def test_json_after_the_subcommand_prints_one_document() -> None:
    result = cli("manifest", "check", RELEASE, "--json")
    ok(result)
    doc = json.loads(result.out)
    assert doc["ok"] is True and doc["version"] == "v0.13.1"


def test_verify_set_json_after_the_subcommand(tmp_path_factory: pytest.TempPathFactory) -> None:
    from flow_support import release_out

    result = cli("verify", release_out(tmp_path_factory) / "rtx4090", "--json")
    ok(result)
    doc = json.loads(result.out)
    assert doc["ok"] is True and doc["stem"] == "ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64"


def test_json_after_the_subcommand_shapes_errors_too(tmp_path: Path) -> None:
    result = cli("verify", tmp_path, "--json")
    assert result.code == 4, result.text
    doc = json.loads(result.out)
    assert doc["ok"] is False and doc["exit_code"] == 4


def test_quiet_after_the_subcommand_silences_results() -> None:
    result = cli("manifest", "check", RELEASE, "-q")
    ok(result)
    assert result.out == ""


def test_json_before_the_subcommand_still_works() -> None:
    result = cli("--json", "manifest", "check", RELEASE)
    ok(result)
    assert json.loads(result.out)["ok"] is True


# --- completion ------------------------------------------------------------------------------


def _complete(shell: str, words: str, cword: int | str) -> list[str]:
    """Ask the console script for completions the way the generated scripts do (fish passes the
    incomplete word itself as ``COMP_CWORD``, bash and zsh its index)."""
    env = {**os.environ, COMPLETE_VAR: f"{shell}_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    proc = subprocess.run(nr_command(), env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_bash_completion_env_completes_subcommands_and_options() -> None:
    assert _complete("bash", "ninfer-release ve", 1) == ["plain,verify"]
    assert "plain,--release-manifest" in _complete("bash", "ninfer-release verify x --rel", 3)
    # global options are options of every command
    assert "plain,--json" in _complete("bash", "ninfer-release verify x --j", 3)
    assert set(_complete("bash", "ninfer-release build ", 2)) == {"plain,lane", "plain,release"}


def test_zsh_and_fish_completion_env() -> None:
    zsh = _complete("zsh", "ninfer-release ve", 1)
    assert zsh[:2] == ["plain", "verify"]
    fish = _complete("fish", "ninfer-release ve", "ve")
    assert fish[0].startswith("plain,verify\t")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_script_for_each_shell(shell: str) -> None:
    result = cli("completion", shell)
    ok(result)
    assert f"{COMPLETE_VAR}={shell}_source" not in result.out  # a script, not the source hook
    assert f"{shell}_complete" in result.out


def test_sourced_bash_script_completes(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    script = tmp_path / "ninfer-release.bash"
    script.write_text(cli("completion", "bash").out)
    bindir = Path(nr_command()[0]).parent
    line = (
        # the function the script registered for ninfer-release, called as bash calls it
        f"source {script}; fn=$(complete -p ninfer-release | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p'); "
        "COMP_WORDS=(ninfer-release verify x --rel); COMP_CWORD=3; "
        '"$fn" ninfer-release; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    proc = subprocess.run([bash, "-c", line], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["--release-manifest"]


# --- help examples ---------------------------------------------------------------------------


def test_every_command_has_an_example_in_its_help() -> None:
    paths = list(_commands(root))
    assert (
        ("verify",) in paths
        and (
            "build",
            "release",
        )
        in paths
        and ("completion",) in paths
    )
    for path in paths:
        result = cli(*path, "--help")
        ok(result)
        example = result.out.split("Example:", 1)
        assert len(example) == 2, f"{' '.join(path)}: no example"
        assert f"ninfer-release {' '.join(path)}" in example[1], (
            f"{' '.join(path)}: example is another command"
        )


GLOBAL = ("--json", "--debug", "--quiet", "--verbose", "--help")


def test_the_readme_command_list_names_every_option() -> None:
    """README "Commands": every long option of every command (the global ones are in its first line)."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    commands = readme[readme.index("## Commands") : readme.index("## Layout and docs")]
    missing = [
        f"{' '.join(path)} {opt}"
        for path in _commands(root)
        for param in _command(path).params
        if isinstance(param, click.Option)
        for opt in param.opts
        if opt.startswith("--") and opt not in GLOBAL and opt not in commands
    ]
    assert missing == []
    assert "ninfer-release [--json] [--debug] [-q|-v] [--repo DIR] COMMAND" in commands
    lines = commands.splitlines()
    for path in _commands(root):
        listed = [ln for ln in lines if ln.startswith(f"  {path[0]} ") and path[-1] in ln.split()]
        assert listed, f"{' '.join(path)} is not in the README command list"


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = root
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


# --- build --clean ---------------------------------------------------------------------------


def test_clean_replaces_a_marked_directory(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / OUTPUT_MARKER).write_bytes(b"{}\n")
    (target / "old").write_text("old")
    with staged_directory(target, replace_marked=OUTPUT_MARKER) as stage:
        (stage / "new").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["new"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no leftovers


@pytest.mark.parametrize("kind", ["unmarked", "file", "symlink", "marker-symlink"])
def test_clean_refuses_what_is_not_ours(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "out"
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / OUTPUT_MARKER).write_bytes(b"{}\n")
    if kind == "unmarked":
        target.mkdir()
        (target / "data").write_text("user data")
    elif kind == "file":
        target.write_text("user data")
    elif kind == "symlink":
        target.symlink_to(keep)
    else:
        target.mkdir()
        (target / OUTPUT_MARKER).symlink_to(keep / OUTPUT_MARKER)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(InputError, match="not an output directory of ninfer-release"):  # noqa: SIM117
        with staged_directory(target, replace_marked=OUTPUT_MARKER):
            raise AssertionError("must refuse before building")
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_failed_clean_build_keeps_the_old_directory(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / OUTPUT_MARKER).write_bytes(b"{}\n")
    (target / "old").write_text("old")
    with pytest.raises(RuntimeError), staged_directory(target, replace_marked=OUTPUT_MARKER) as stage:
        (stage / "new").write_text("new")
        raise RuntimeError("build failed")
    assert sorted(p.name for p in target.iterdir()) == [OUTPUT_MARKER, "old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_build_release_clean_rebuilds_over_its_own_output(tmp_path_factory: pytest.TempPathFactory) -> None:
    src = samples(tmp_path_factory)
    out = tmp_path_factory.mktemp("clean") / "out"
    ok(cli("build", "release", RELEASE, "--inputs", src, "--out", out, "--offline"))
    assert (out / OUTPUT_MARKER).is_file()
    first = (out / "release-manifest.json").read_bytes()
    (out / "stray").write_text("from the previous run")
    again = cli("build", "release", RELEASE, "--inputs", src, "--out", out, "--offline")
    assert again.code == 4 and "already exists" in again.err
    ok(cli("build", "release", RELEASE, "--inputs", src, "--out", out, "--offline", "--clean"))
    assert not (out / "stray").exists()
    assert (out / "release-manifest.json").read_bytes() == first
    assert sorted(p.name for p in (out / "rtx4090").iterdir()) == set_names("rtx4090")
    # a lane's set directory holds no marker: --clean refuses it (it is not a build OUT)
    lane = cli("build", "release", RELEASE, "--inputs", src, "--out", out / "rtx4090", "--offline", "--clean")
    assert lane.code == 4 and "not an output directory of ninfer-release" in lane.err
    assert sorted(p.name for p in (out / "rtx4090").iterdir()) == set_names("rtx4090")


# --- build --dry-run -------------------------------------------------------------------------


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    src = samples(tmp_path_factory)
    base = tmp_path_factory.mktemp("dry")
    out = base / "out"
    result = cli(
        "build", "release", RELEASE, "--inputs", src, "--out", out, "--offline", "--dry-run", "--json"
    )
    ok(result)
    assert list(base.iterdir()) == []
    doc = json.loads(result.out)
    assert doc["dry_run"] is True and doc["replaces"] is False
    lanes = {lane["lane"]: lane for lane in doc["lanes"]}
    assert sorted(lanes) == ["rtx3090", "rtx4090", "rtx5090"]
    native = lanes["rtx4090"]
    members = {m["name"]: m for m in native["members"]}
    staged = src / "rtx4090"
    assert members["bin/ninfer-server.exe"] == {
        "name": "bin/ninfer-server.exe",
        "size": (staged / "bin" / "ninfer-server.exe").stat().st_size,
        "origin": "staged",
    }
    assert members["config/ninfer.toml"]["origin"] == "generated"
    spdx = [m for m in native["members"] if m["name"].startswith("sbom/")]
    assert [m["size"] for m in spdx] == [None]  # built from the other digests
    assert native["records"] == [*(f"rtx4090/{n}" for n in _contract_order("rtx4090")), "rtx4090.lane.json"]
    assert lanes["rtx5090"]["records"] == ["rtx5090.lane.json"]
    assert doc["records"] == ["release-manifest.json", OUTPUT_MARKER]
    text = cli("build", "release", RELEASE, "--inputs", src, "--out", out, "--dry-run")
    ok(text)
    assert "plan: create" in text.out and "rtx4090/SHA256SUMS" in text.out
    assert list(base.iterdir()) == []


def _contract_order(lane: str) -> list[str]:
    from flow_support import ENTRY_SUFFIXES, stem

    return [stem(lane) + s for s in ENTRY_SUFFIXES] + ["SHA256SUMS"]


def test_dry_run_surfaces_input_errors(tmp_path: Path) -> None:
    result = cli("build", "release", RELEASE, "--inputs", tmp_path, "--out", tmp_path / "o", "--dry-run")
    assert result.code == 4 and "no staged tree" in result.err


# --- progress ---------------------------------------------------------------------------------


def test_progress_reports_each_lane_against_its_planned_total(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    src = samples(tmp_path_factory)
    out = tmp_path_factory.mktemp("progress") / "out"
    plan = plan_build(RELEASE, inputs=src, out=out, env=os.environ)
    progress = _Recorder()
    build_release(RELEASE, inputs=src, out=out, env=os.environ, offline=True, progress=progress)
    totals = plan.progress_totals()
    assert sorted(totals) == ["rtx3090: package", "rtx4090: package"]
    assert {k: progress.done[k] for k in totals} == totals  # every staged byte, once
    assert {k: progress.totals[k] for k in totals} == totals  # each step announces its planned total
    assert all(v > 0 for v in totals.values())


class _Recorder:
    """A :class:`~ninfer_release.progress.Progress` that sums the bytes of each step."""

    def __init__(self) -> None:
        self.current = ""
        self.done: dict[str, int] = {}
        self.totals: dict[str, int | None] = {}

    def step(self, message: str, total: int | None = None) -> None:
        self.current = message
        self.totals[message] = total

    def advance(self, nbytes: int) -> None:
        self.done[self.current] = self.done.get(self.current, 0) + nbytes


def test_progress_bar_shows_lane_bytes_total_and_eta() -> None:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=160)
    ctx = Context(json=False, debug=False, verbosity=0)
    with _byte_progress(ctx, console=console) as progress:
        progress.step("rtx4090: package", 4_000_000)
        progress.advance(2_000_000)
        console.print("")  # force a refresh of the live display
    text = buf.getvalue()
    assert "rtx4090: package" in text and "2.0/4.0 MB" in text and "ETA" in text


def test_no_progress_bar_off_a_terminal_or_with_json() -> None:
    ctx = Context(json=True, debug=False, verbosity=0)
    with _byte_progress(ctx) as progress:
        assert progress is SILENT
