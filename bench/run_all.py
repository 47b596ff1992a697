"""Run every benchmark of issues 11, 12, 13 and DESIGN.md §11 in one go; optionally write the docs.

Usage (``./dev bench`` runs this through ``bench/run_all.sh``)::

    bench/run_all.sh [--smoke] [--work DIR] [--only PARTS | --skip PARTS] [--write-docs] [--docs PATH]

Parts, in this order (comma-separated names for ``--only``/``--skip``):

* ``goals`` — ``bench_goals``: build vs ``zip -X -r -6`` on the ``--full`` tree (cores free, one
  core busy), on a 1 GiB incompressible member; verify vs ``sha256sum -c`` on the sample and
  ``--full`` sets (free, busy); bytes moved per input byte;
* ``cache`` — ``bench_cache``: warm rebuild ÷ cold build, zips identical with and without the cache;
* ``memory`` — ``bench_memory``: peak RSS of build and verify with a 4 GiB file;
* ``fetch`` — ``bench_fetch --full`` (issue 12: the 389 MB sample set, and the small set for
  information); ``registry`` — ``bench_registry --full`` (issue 11);
* ``image`` — ``bench_image`` (a child process; needs a docker engine: ``NINFER_DOCKER_HOST`` or a
  private ``dockerd``, which needs root);
* ``curves`` — ``bench_curves``: start-up pairs, file-count curve (1k, 10k, 100k) and size curve
  (256 MiB, 1 GiB, 4 GiB), with SVG plots.

A part that fails is recorded as ``{"failed": traceback}`` and the run goes on; after each part the
results so far are written to ``WORK/results.json``. ``--write-docs`` rewrites the results and
curves blocks of ``docs/benchmarks.md`` (``--docs`` another copy) and writes the plots next to it.
Profiles: ``full`` (the default; about 30 minutes on the quiet 2-core reference machine) and
``--smoke`` (tiny sizes and one pair everywhere, about 2–3 minutes: checks that every part runs).
Every build is cold: the deflate cache is ``off`` except in ``cache``, which uses fresh dirs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_cache  # noqa: E402
import bench_curves  # noqa: E402
import bench_fetch  # noqa: E402
import bench_goals  # noqa: E402
import bench_memory  # noqa: E402
import bench_registry  # noqa: E402
import report  # noqa: E402
from _common import REPO, load_average, machine_facts  # noqa: E402
from _steal import read_cpu_counters, steal_percent  # noqa: E402
from render import plot_goals, summary_rows  # noqa: E402

PARTS = ("goals", "cache", "memory", "fetch", "registry", "image", "curves")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Profile:
    """Pair counts and sizes of one run (``small``: the small sample tree stands in for ``--full``)."""

    name: str
    goal_runs: int
    random_runs: int
    random_mib: int
    cache_runs: int
    memory_gib: float
    fetch_runs: int
    registry_runs: int
    image_runs: int
    image_mib: int
    startup_runs: int
    curve_runs: int
    big_runs: int
    counts: str
    sizes: str
    small: bool

    def pairs_note(self) -> str:
        """What was run how often, and where fewer than 5 pairs were run and why."""
        return (
            f"Pairs (profile `{self.name}`): {self.goal_runs} per point for build/verify beside "
            f"zip/sha256sum (cores free and busy), {self.cache_runs} for the cache, {self.fetch_runs} for "
            f"fetch, {self.image_runs} image triples, {self.startup_runs} start-up pairs; curves: "
            f"{self.curve_runs} at 0/1k files and below 1 GiB, {min(self.curve_runs, 3)} at 10k files and "
            f"1 GiB, {self.big_runs} at 100k files and 4 GiB. Fewer than 5: the {self.random_mib} MiB "
            f"incompressible tree ({self.random_runs}: one `zip` of it deflates all of it), the registry "
            f"({self.registry_runs}: each pair starts a fresh registry and moves the `--full` set four "
            "times), and the largest curve points (a 100k-file build and a 4 GiB `zip` take minutes each), "
            "to keep `./dev bench` within 35 minutes on the 2-core machine."
        )


PROFILES = {
    "full": Profile(
        name="full", goal_runs=5, random_runs=3, random_mib=1024, cache_runs=5, memory_gib=4.0,
        fetch_runs=5, registry_runs=3, image_runs=5, image_mib=256, startup_runs=11, curve_runs=5,
        big_runs=1, counts="1000,10000,100000", sizes="256,1024,4096", small=False,
    ),
    "smoke": Profile(
        name="smoke", goal_runs=1, random_runs=1, random_mib=16, cache_runs=1, memory_gib=1 / 16,
        fetch_runs=1, registry_runs=1, image_runs=1, image_mib=16, startup_runs=2, curve_runs=1,
        big_runs=1, counts="200,400", sizes="64", small=True,
    ),
}  # fmt: skip


def _image(runs: int, mib: int) -> dict[str, Any]:
    """``bench_image.py --json`` as a child (it may start a private dockerd); its JSON, or why not."""
    if shutil.which("docker") is None:
        return {"skipped": "no docker client on this machine"}
    cmd = [sys.executable, str(HERE / "bench_image.py"), "--runs", str(runs), "--mib", str(mib), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        doc: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"failed": (proc.stderr or proc.stdout)[-3000:]}
    if proc.returncode != 0:
        doc["exit_code"] = proc.returncode  # 1: the digests of our rebuilds differed
    return doc


def _parts(p: Profile, work: Path, plots_dir: Path) -> dict[str, Callable[[], dict[str, Any]]]:
    w = ["--work", str(work)]
    small = ["--small"] if p.small else []
    full = [] if p.small else ["--full"]
    return {
        "goals": lambda: bench_goals.main(
            [*w, "--runs", str(p.goal_runs), "--random-runs", str(p.random_runs),
             "--random-mib", str(p.random_mib), *small]
        ),
        "cache": lambda: bench_cache.main([*w, "--runs", str(p.cache_runs), *small]),
        "memory": lambda: bench_memory.main([*w, "--gib", str(p.memory_gib), *small]),
        "fetch": lambda: bench_fetch.main([*w, "--runs", str(p.fetch_runs), *full]),
        "registry": lambda: bench_registry.main(
            [*w, "--runs", str(p.registry_runs), *full]
        ),
        "image": lambda: _image(p.image_runs, p.image_mib),
        "curves": lambda: bench_curves.main(
            [*w, "--counts", p.counts, "--sizes", p.sizes, "--runs", str(p.curve_runs),
             "--max-runs-big", str(p.big_runs), "--startup-runs", str(p.startup_runs),
             "--plots", "--plots-dir", str(plots_dir)]
        ),
    }  # fmt: skip


def run_parts(
    names: list[str], parts: dict[str, Callable[[], dict[str, Any]]], results: dict[str, Any], work: Path
) -> None:
    """Run ``names`` in order into ``results`` (a failure is recorded, never fatal); save after each."""
    for name in names:
        results["loads"][name] = load_average()[0]
        print(f"== {name} (load {results['loads'][name]})", file=sys.stderr, flush=True)
        started, counters = time.perf_counter(), read_cpu_counters()
        try:
            with contextlib.redirect_stdout(sys.stderr):  # progress lines; stdout is the JSON alone
                results[name] = parts[name]()
        except (Exception, SystemExit):  # noqa: BLE001 - one part's failure must not lose the others
            results[name] = {"failed": traceback.format_exc()[-3000:]}
            print(results[name]["failed"], file=sys.stderr)
        results["elapsed_per_part_s"][name] = round(time.perf_counter() - started, 1)
        results.setdefault("steal_percent", {})[name] = steal_percent(counters, read_cpu_counters())
        (work / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True), encoding="utf-8")


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, help="default /tmp/ninfer-bench (smoke: /tmp/ninfer-bench-smoke)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, one pair: check every part runs")
    ap.add_argument("--only", default="", help=f"comma-separated parts to run: {','.join(PARTS)}")
    ap.add_argument("--skip", default="", help="comma-separated parts to leave out")
    ap.add_argument("--runs", type=int, help="override: pairs per build/verify point")
    ap.add_argument("--curve-runs", type=int, help="override: pairs per small curve point")
    ap.add_argument("--image-runs", type=int, help="override: image build triples")
    ap.add_argument("--counts", help="override: file-count curve points (0 is always the base point)")
    ap.add_argument("--sizes", help="override: size curve points, MiB")
    ap.add_argument("--write-docs", action="store_true", help="rewrite the generated blocks of --docs")
    ap.add_argument("--docs", type=Path, default=REPO / "docs" / "benchmarks.md")
    ap.add_argument(
        "--from-results", type=Path, help="run nothing: render a saved WORK/results.json (with --write-docs)"
    )
    args = ap.parse_args(argv)
    tmp = Path(tempfile.gettempdir())
    args.work = args.work or tmp / ("ninfer-bench-smoke" if args.smoke else "ninfer-bench")
    return args


def _profile(args: argparse.Namespace) -> Profile:
    p = PROFILES["smoke" if args.smoke else "full"]
    overrides = {
        "goal_runs": args.runs, "curve_runs": args.curve_runs, "image_runs": args.image_runs,
        "counts": args.counts, "sizes": args.sizes,
    }  # fmt: skip
    return dataclasses.replace(p, **{k: v for k, v in overrides.items() if v is not None})


def _write_docs(results: dict[str, Any], doc: Path, command: str) -> None:
    """The plots next to ``doc`` (from the results: also after ``--from-results``), then both blocks."""
    curves = results.get("curves")
    if isinstance(curves, dict) and "failed" not in curves:
        with contextlib.suppress(ImportError):
            curves["plots"] = bench_curves.plot(curves, doc.parent)
    plot = "bench-goals.svg" if plot_goals(summary_rows(results), doc.parent / "bench-goals.svg") else None
    report.write_block(doc, report.results_block(results, command, plot), report.BEGIN, report.END)
    if "curves" in results:
        report.write_block(doc, report.curves_block(results, command), report.CURVES_BEGIN, report.CURVES_END)


def _command() -> str:
    """The command line as the docs show it (``--work``, ``--docs``, ``--from-results`` left out)."""
    skip_next = {"--work", "--docs", "--from-results"}
    argv = sys.argv[1:]
    shown = [a for i, a in enumerate(argv) if a not in skip_next and (i == 0 or argv[i - 1] not in skip_next)]
    return " ".join(["./dev bench", *shown])


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if args.from_results:  # e.g. after fixing a rendering bug, without re-running 30 minutes
        saved: dict[str, Any] = json.loads(args.from_results.read_text(encoding="utf-8"))
        if args.write_docs:
            _write_docs(saved, args.docs, str(saved.get("command", _command())))
        return 0
    profile = _profile(args)
    names = [
        n for n in PARTS if (not args.only or n in args.only.split(",")) and n not in args.skip.split(",")
    ]
    args.work.mkdir(parents=True, exist_ok=True)
    plots_dir = args.docs.parent if args.write_docs else args.work
    started = time.perf_counter()
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "profile": profile.name,
        "pairs_note": profile.pairs_note(),
        "loads": {},
        "elapsed_per_part_s": {},
        "steal_percent": {},
    }
    run_parts(names, _parts(profile, args.work, plots_dir), results, args.work)
    results["elapsed_s"] = round(time.perf_counter() - started, 1)
    results["command"] = _command()
    (args.work / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True), encoding="utf-8")
    print(json.dumps(results, indent=2, sort_keys=True))
    if args.write_docs:
        _write_docs(results, args.docs, results["command"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
