"""Benchmark (issue 13): ``build lane`` and ``verify`` beside the standard tools, second core free and busy.

Goals measured (each as interleaved pairs: ours, then the tool, ``--runs`` times):

* ``build lane`` ≤ 0.35× Info-ZIP ``zip -X -r -6`` on the ``--full`` tree with both cores free,
  and ≤ 0.7× with one core busy (``_common.busy_core``: a CPU-bound Python loop pinned to the last
  core with ``taskset``, started before the pairs and killed by PID after them; both sides of
  every pair run under it);
* ``build lane`` ≤ 0.15× zip on a tree with one 1 GiB incompressible member
  (``_common.incompressible_tree``: seeded pseudo-random bytes, generated once, kept in ``--work``);
* ``verify`` ≤ 1.0× ``sha256sum -c SHA256SUMS`` on the sample set and on the ``--full`` set,
  core free and busy (the set is built once, untimed; one untimed warm-up of each side);
* bytes moved by ``build lane`` on the ``--full`` tree: ``rchar``/``wchar`` of the child per
  staged byte and per output byte, and how many times the zip was read beyond the staged bytes.

Every build runs with the deflate cache ``off`` (``_common``): cold, as a first build. The zips of
the repeated builds must be byte-identical (recorded; the bench fails otherwise).

Usage: ``.venv/bin/python bench/bench_goals.py [--work DIR] [--runs 5] [--random-mib 1024]
[--small] [--parts build,busy,random,verify] [--json]``; ``--small`` uses the small sample tree
instead of ``--full`` (the smoke profile of ``run_all.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    CLI,
    LANE,
    MIB,
    BenchError,
    Run,
    build_io,
    busy_core,
    fetch_samples,
    incompressible_tree,
    info_zip,
    load_average,
    pairs,
    run,
    set_dir,
    sha256_of,
    small_samples,
    the_zip,
    tree_bytes,
)

GOALS = {"build": 0.35, "busy": 0.7, "random": 0.15, "verify": 1.0}


def staged_bytes(tree: Path) -> int:
    """What ``build lane`` reads of ``tree``: the shipped files plus the lane's JSON inputs."""
    lane = tree / LANE
    return tree_bytes(lane) + sum(p.stat().st_size for p in lane.glob("*.json"))


def bytes_moved(io: dict[str, int], staged: int, out: Path) -> dict[str, Any]:
    """Read/written bytes of one build per staged and per output byte; zip reads beyond the inputs.

    ``zip_reads`` = (read − staged) / zip size: about 1 now that the final self-check's one read
    of the zip also gives its SHA-256 (plus Python's module files, a few MB); it was about 2 when
    the zip was read back once for its SHA-256 and once more by the self-check.
    """
    output = sum(p.stat().st_size for p in set_dir(out).iterdir())
    zip_size = the_zip(out).stat().st_size
    return {
        **io,
        "staged_bytes": staged,
        "output_bytes": output,
        "zip_bytes": zip_size,
        "read_per_staged_byte": round(io["read_bytes"] / staged, 3),
        "written_per_staged_byte": round(io["written_bytes"] / staged, 3),
        "written_per_output_byte": round(io["written_bytes"] / output, 3),
        "zip_reads": round((io["read_bytes"] - staged) / zip_size, 2),
    }


def build_point(tree: Path, work: Path, runs: int, *, busy: bool, label: str) -> dict[str, Any]:
    """``runs`` pairs of ``build lane`` / ``zip -X -r -6`` on ``tree`` (under a busy core if ``busy``)."""
    load = load_average()
    out = work / "goals-build"
    builds: list[Run] = []
    zips: list[Run] = []
    digests: list[str] = []
    io: dict[str, int] = {}
    with busy_core() if busy else contextlib.nullcontext():
        for i in range(runs):
            b, io = build_io(f"build #{i}", tree, out)
            builds.append(b)
            digests.append(sha256_of(the_zip(out)))
            zips.append(info_zip(f"zip #{i}", tree, work))
    if len(set(digests)) != 1:
        raise BenchError(f"rebuilds of {tree} differ: {digests}")
    moved = bytes_moved(io, staged_bytes(tree), out)
    shutil.rmtree(out)
    return {
        "tree": label,
        "load_average_before": load,
        "busy_core": busy,
        "build_vs_zip": pairs(builds, zips),
        "identical_zips": True,
        "zip_sha256": digests[0],
        "bytes_moved": moved,
    }


def verify_points(tree: Path, work: Path, runs: int) -> dict[str, Any]:
    """``verify`` / ``sha256sum -c`` pairs on the set built from ``tree``: core free, then core busy."""
    out = work / "goals-verify"
    build_io("build (set to verify)", tree, out)
    directory = set_dir(out)
    ours_cmd: list[str | Path] = [CLI, "verify", directory]
    sums_cmd: list[str | Path] = ["sha256sum", "-c", "--quiet", "SHA256SUMS"]
    run("warm-up verify", ours_cmd)
    run("warm-up sha256sum", sums_cmd, cwd=directory)
    result: dict[str, Any] = {"set_bytes": sum(p.stat().st_size for p in directory.iterdir())}
    for name, busy in (("free", False), ("busy", True)):
        load = load_average()
        ours: list[Run] = []
        theirs: list[Run] = []
        with busy_core() if busy else contextlib.nullcontext():
            for i in range(runs):
                ours.append(run(f"verify #{i}", ours_cmd))
                theirs.append(run(f"sha256sum -c #{i}", sums_cmd, cwd=directory))
        result[name] = {
            "load_average_before": load,
            "busy_core": busy,
            "verify_vs_sha256sum": pairs(ours, theirs),
        }
    shutil.rmtree(out)
    return result


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The parts of ``args.parts`` on the trees ``args`` names (see ``main``)."""
    parts = set(args.parts.split(","))
    args.work.mkdir(parents=True, exist_ok=True)
    small = small_samples(args.work)
    full = small if args.small else fetch_samples(args.work)
    label = "small sample (smoke)" if args.small else "--full"
    results: dict[str, Any] = {"goals": GOALS, "full_tree": label}
    if "build" in parts:
        results["build_full"] = build_point(full, args.work, args.runs, busy=False, label=label)
    if "busy" in parts:
        results["build_full_busy"] = build_point(full, args.work, args.runs, busy=True, label=label)
    if "random" in parts:
        tree = incompressible_tree(small, args.work, size=args.random_mib * MIB)
        random_label = f"sample + {args.random_mib} MiB random member"
        results["build_random"] = build_point(
            tree, args.work, args.random_runs, busy=False, label=random_label
        )
        results["build_random"]["member_mib"] = args.random_mib
    if "verify" in parts:
        results["verify_sample"] = verify_points(small, args.work, args.runs)
        results["verify_full"] = verify_points(full, args.work, args.runs)
    return results


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the parts asked for; returns (and with ``--json`` prints) the results, goals included."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--runs", type=int, default=5, help="pairs per point (default 5)")
    ap.add_argument("--random-runs", type=int, default=3, help="pairs on the incompressible tree")
    ap.add_argument("--random-mib", type=int, default=1024, help="incompressible member, MiB")
    ap.add_argument("--small", action="store_true", help="the small sample tree instead of --full")
    ap.add_argument("--parts", default="build,busy,random,verify")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    results = measure(args)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    return results


if __name__ == "__main__":
    main()
