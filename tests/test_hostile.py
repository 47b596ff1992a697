"""The hostile-input suite (issue 9): every case in ``tests/data/hostile/*.json`` against the CLI.

Each case copies a good input (the built rtx4090 set, the staged tree, a receipt, the release
manifest, a lane result), applies its edits, runs one command as a subprocess under
``prlimit --as=1GiB`` with a timeout (optionally as ``nobody`` via ``setpriv``) and asserts:
the exit code; one ``error:`` line naming the file and the field or reason; no traceback; a
bounded number of output lines; peak RSS within the case's bound; and nothing partial left
(the input untouched, no ``--out``, no hidden staging directory).

Reusing the hostile *sets* (the stdlib-only verifier's differential test, issue 12)::

    from hostile_support import hostile_sets, load_cases
    for case, set_dir in hostile_sets(good_set, tmp_path):
        ...  # run another verifier on set_dir; ``case.exit`` is what ours exits with

or, inside pytest, the session fixture :func:`hostile_set_factory` (``factory.make(case)``).
Cases run in parallel (one worker per CPU) in one session fixture; each test asserts its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import unavailable
from flow_support import REPO, release_out, samples, stem
from hostile_support import (
    SURFACES,
    Case,
    Run,
    SetFactory,
    apply_edits,
    load_cases,
    open_up,
    run_bounded,
    snapshot,
    world_dir,
)

CASES = load_cases()
LANE = "rtx4090"
LANES = ("rtx3090", "rtx4090", "rtx5090")
RELEASE = REPO / "manifests" / "v0.13.1.yaml"
PROFILE = "qwen38-4090-native-v0.7.0-beta.2"
DRAFT_TAG = "v0.7.0-qwen38-4090-beta.2.draft"  # the rtx4090 component tag + releases' DRAFT_SUFFIX


@dataclass(frozen=True, kw_only=True)
class World:
    """Good inputs copied where ``nobody`` can read them, and a scratch area for the cases."""

    root: Path
    set_dir: Path
    samples: Path
    release_manifest: Path
    lane_result: Path
    store: Path


@dataclass(frozen=True, kw_only=True)
class Outcome:
    run: Run
    partial: str | None  # what was left behind, if anything
    names: dict[str, str]


def _nobody_can_run() -> bool:
    probe = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            str(REPO / ".venv/bin/python"),
            "-c",
            "",
        ],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


def _needs_root(case: Case) -> bool:
    return case.as_user != "root" or any(e["op"] == "mknod" for e in case.edits)


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = release_out(tmp_path_factory)
    root = world_dir("ninfer-hostile-")
    shutil.copytree(built / LANE, root / "good" / "set")
    shutil.copytree(samples(tmp_path_factory) / LANE, root / "good" / "samples" / LANE, symlinks=True)
    shutil.copyfile(built / "release-manifest.json", root / "good" / "release-manifest.json")
    for lane in LANES:
        shutil.copyfile(built / f"{lane}.lane.json", root / "good" / f"{lane}.lane.json")
    published = run_bounded(
        ["publish", root / "good" / "set", "--to", f"dir://{root / 'good' / 'store'}", "--draft"]
    )
    assert published.code == 0, published.err
    open_up(root / "good")
    (root / "cases").mkdir(mode=0o755)
    yield World(
        root=root,
        set_dir=root / "good" / "set",
        samples=root / "good" / "samples",
        release_manifest=root / "good" / "release-manifest.json",
        lane_result=root / "good" / f"{LANE}.lane.json",
        store=root / "good" / "store",
    )
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def hostile_set_factory(world: World) -> SetFactory:
    """Builds hostile copies of the good rtx4090 set: ``factory.make(case)`` (surface ``set``)."""
    dest = world.root / "factory"
    dest.mkdir(mode=0o755, exist_ok=True)
    return SetFactory(good=world.set_dir, dest=dest)


def _hidden_partials(parent: Path, name: str) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))


@dataclass(frozen=True)
class Prepared:
    """A case's input made ready: the directory its edits apply to, the command, what must not change."""

    target: Path
    args: list[str | Path]
    watched: Path


def _prepare_set(case: Case, world: World, base: Path, names: dict[str, str]) -> Prepared:
    target = base / "set"
    shutil.copytree(world.set_dir, target)
    return Prepared(target, ["verify", target], target)


def _prepare_staged(case: Case, world: World, base: Path, names: dict[str, str]) -> Prepared:
    target = base / "in" / LANE
    shutil.copytree(world.samples / LANE, target, symlinks=True)
    args: list[str | Path] = ["build", "lane", LANE, "--release", RELEASE, "--inputs", base / "in"]
    args += ["--out", base / "out", "--offline"]
    return Prepared(target, args, base / "in")


def _prepare_receipts(case: Case, world: World, base: Path, names: dict[str, str]) -> Prepared:
    target = base / "receipts"
    target.mkdir()
    args: list[str | Path] = ["build", "lane", LANE, "--release", RELEASE, "--inputs", world.samples]
    args += ["--out", base / "out", "--receipts", target, "--offline"]
    return Prepared(target, args, target)


def _prepare_release_manifest(case: Case, world: World, base: Path, names: dict[str, str]) -> Prepared:
    shutil.copyfile(world.release_manifest, base / "release-manifest.json")
    args: list[str | Path] = ["verify", world.set_dir, "--release-manifest", base / "release-manifest.json"]
    return Prepared(base, args, world.set_dir)


def _prepare_lane_result(case: Case, world: World, base: Path, names: dict[str, str]) -> Prepared:
    results: list[str | Path] = []
    for lane in LANES:
        shutil.copyfile(world.lane_result.with_name(f"{lane}.lane.json"), base / f"{lane}.lane.json")
        results.append(base / f"{lane}.lane.json")
    return Prepared(base, ["manifest", "assemble", *results, "--out", base / "out" / "rm.json"], base)


def _prepare_store(case: Case, world: World, base: Path, names: dict[str, str]) -> Prepared:
    target = base / "store"
    shutil.copytree(world.store, target)
    index = json.loads((target / "index.json").read_bytes())
    names["manifest"] = "blobs/sha256/" + index["manifests"][0]["digest"].removeprefix("sha256:")
    args: list[str | Path]
    if case.surface == "dir-store":
        args = ["verify", f"dir://{target}:{DRAFT_TAG}"]
    else:
        args = ["publish", world.set_dir, "--to", f"dir://{target}", "--draft"]
    return Prepared(target, args, target)


def _prepare_repo(case: Case, world: World, base: Path, names: dict[str, str]) -> Prepared:
    target = base / "repo"
    for part in ("manifests", "profiles", "releases", "packaging", "containers"):
        shutil.copytree(REPO / part, target / part)
    args: list[str | Path]
    if case.surface == "definition":
        args = ["manifest", "check", target / "manifests" / "v0.13.1.yaml", "--repo", target]
    else:
        args = ["profile", "validate", target / "profiles" / f"{PROFILE}.yaml"]
    return Prepared(target, args, target)


# surface of a case -> how its input is prepared (a copy of the good input under the case's base)
PREPARE: dict[str, Callable[[Case, World, Path, dict[str, str]], Prepared]] = {
    "set": _prepare_set,
    "staged": _prepare_staged,
    "receipts": _prepare_receipts,
    "release-manifest": _prepare_release_manifest,
    "lane-result": _prepare_lane_result,
    "dir-store": _prepare_store,
    "publish-store": _prepare_store,
    "definition": _prepare_repo,
    "profile": _prepare_repo,
}


def _left_behind(
    case: Case, base: Path, before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> str | None:
    """What a run left that it must not: a changed input, output of a failed command, staging."""
    partial = None
    if after != before:
        partial = f"input changed: {sorted(set(after.items()) ^ set(before.items()))[:5]}"
    out = base / "out"
    if case.exit != 0 and out.exists() and any(out.iterdir() if out.is_dir() else [out]):
        partial = f"{out} holds {sorted(p.name for p in out.iterdir())}"
    if case.exit != 0 and (left := _hidden_partials(base, "out")):
        partial = f"staging left behind: {left}"
    return partial


def execute(case: Case, world: World) -> Outcome:
    """Prepare ``case``'s input, run its command bounded, and look for anything left behind."""
    base = world.root / "cases" / case.id
    base.mkdir(mode=0o777)
    base.chmod(0o777)  # a build as nobody must be able to create --out here
    names = {"stem": stem(LANE)}
    if case.surface not in PREPARE:  # pragma: no cover - a data file names an unknown surface
        raise AssertionError(f"unknown surface {case.surface!r}")
    prepared = PREPARE[case.surface](case, world, base, names)
    open_up(prepared.target)
    base.chmod(0o777)
    apply_edits(prepared.target, case.edits, names)
    before = snapshot(prepared.watched)
    run = run_bounded(prepared.args, as_user=case.as_user)
    partial = _left_behind(case, base, before, snapshot(prepared.watched))
    if case.as_user != "root" or any(e["op"] == "chmod" for e in case.edits):
        open_up(base)  # let the clean-up below remove what was made unreadable
    shutil.rmtree(base, ignore_errors=True)
    return Outcome(run=run, partial=partial, names=names)


@pytest.fixture(scope="session")
def outcomes(request: pytest.FixtureRequest, world: World) -> Iterator[dict[str, Future[Outcome]]]:
    """Every selected case, run in parallel (one worker per CPU), keyed by case id."""
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_hostile_case" and hasattr(item, "callspec")
    ]
    if os.geteuid() != 0:
        selected = [c for c in selected if not _needs_root(c)]
    elif any(c.as_user == "nobody" for c in selected) and not _nobody_can_run():
        unavailable("setpriv cannot run the venv's python as nobody (uid 65534)")
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        yield {c.id: pool.submit(execute, c, world) for c in selected}


def test_corpus_covers_every_surface() -> None:
    """At least 200 cases, ids unique, every surface of the suite has cases."""
    assert len(CASES) >= 200
    assert len({c.id for c in CASES}) == len(CASES)
    assert {c.surface for c in CASES} <= set(SURFACES)
    assert {c.surface for c in CASES} >= {"set", "staged", "receipts", "definition", "profile"}


def _matches(line: str, case: Case, names: dict[str, str]) -> bool:
    want_file = case.file
    for key, value in names.items():
        want_file = want_file.replace("{" + key + "}", value)
    return want_file in line and case.says in line


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_case(case: Case, outcomes: dict[str, Future[Outcome]]) -> None:
    if case.id not in outcomes:
        unavailable("needs root: device nodes (mknod) and setpriv to nobody")
    outcome = outcomes[case.id].result()
    run = outcome.run
    assert not run.timed_out, f"hung: killed after the timeout\n{run.err[-2000:]}"
    assert "Traceback" not in run.err, run.err[-3000:]
    assert run.code == case.exit, f"exit {run.code}, expected {case.exit}\n{run.err[-3000:]}"
    lines = run.error_lines
    assert len(lines) <= case.max_lines, f"{len(lines)} lines of output:\n" + "\n".join(lines[:50])
    if case.exit != 0:
        assert lines, "no error line"
        assert all(line.startswith(("error: ", "warning: ")) for line in lines), "\n".join(lines)
        assert any(_matches(line, case, outcome.names) for line in lines), (
            f"no line names {case.file!r} with {case.says!r}:\n" + "\n".join(lines)
        )
        assert run.out == ""
    assert run.max_rss_mib <= case.max_rss_mib, f"peak RSS {run.max_rss_mib:.0f} MiB"
    assert outcome.partial is None, outcome.partial


def test_good_inputs_pass_so_each_failure_is_the_edit(world: World) -> None:
    """Control: each surface's unedited input succeeds under the same bounds."""
    scratch = world.root / "control"
    scratch.mkdir(mode=0o755)
    (scratch / "receipts").mkdir()
    lane: list[str | Path] = ["build", "lane", LANE, "--release", RELEASE, "--inputs", world.samples]
    results = [world.lane_result.with_name(f"{n}.lane.json") for n in LANES]
    runs: list[list[str | Path]] = [
        ["verify", world.set_dir],
        ["verify", world.set_dir, "--release-manifest", world.release_manifest],
        [*lane, "--out", scratch / "b", "--offline"],
        [*lane, "--out", scratch / "r", "--receipts", scratch / "receipts", "--offline"],
        ["manifest", "assemble", *results, "--out", scratch / "rm.json"],
        ["manifest", "check", RELEASE],
        ["profile", "validate", REPO / "profiles" / f"{PROFILE}.yaml"],
    ]
    for args in runs:
        done = run_bounded(args)
        assert done.code == 0, f"{args}: {done.err}"
