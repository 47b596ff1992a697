"""Benchmark curves (issue 13): build and verify against file count and against size.

* **File-count curve** — the sample lane plus N extra 4 KiB files (``licenses/extra/``; N =
  1k, 10k, 100k by default): ``build lane`` vs Info-ZIP ``zip -X -r -6`` of the same tree, and
  ``verify`` vs ``sha256sum -c SHA256SUMS`` + ``unzip -tq`` of the package (the standard tools
  checking the same bytes). Linear cost shows as a flat *seconds per extra file*.
* **Size curve** — the sample lane plus one engine file of real DLL bytes (the sample's CUDA and
  C runtime DLLs repeated; as compressible as the real thing) up to 256 MiB … 4 GiB: ``build
  lane`` vs ``zip -X -r -6``, ``verify`` vs ``sha256sum -c``. Also the bytes read and written by
  ``build lane`` (``/proc/<pid>/io`` ``rchar``/``wchar`` of the child) per staged byte.

Each point runs both sides back to back (ours first, then the tool) ``--runs`` times, fewer for
the largest points (``--max-runs-big``), and reports min/median/max of each side and of the
per-pair ratios, with the load average before the point. Plots (SVG, matplotlib from the
``bench`` extra) go to ``docs/bench-*.svg`` with ``--plots``.

Usage: ``.venv/bin/python bench/bench_curves.py [--counts 1000,10000,100000] [--sizes 256,1024,4096]
[--runs 5] [--plots] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    CLI,
    LANE,
    MIB,
    REPO,
    Run,
    add_engine_file,
    build_io,
    info_zip,
    load_average,
    many_files_tree,
    pairs,
    run,
    set_dir,
    small_samples,
    the_zip,
    tree_bytes,
)

DOCS = REPO / "docs"


def _size_tree(samples: Path, work: Path, size_mib: int) -> Path:
    """The sample lane plus ``bin/ninfer-kernels.fatbin``: the lane's DLL bytes repeated to ``size_mib``."""
    dst = work / f"tree-size-{size_mib}mib-{samples.name}"
    lane = dst / LANE
    if lane.is_dir() and tree_bytes(lane) >= size_mib * MIB:
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(samples / LANE, lane, copy_function=os.link)
    need = size_mib * MIB - tree_bytes(lane)
    sources = sorted((samples / LANE / "bin").glob("*.dll"))
    blocks = [p.read_bytes() for p in sources]

    def write(path: Path) -> None:
        left = need
        with path.open("wb") as out:
            while left > 0:
                for block in blocks:
                    out.write(block[:left])
                    left -= min(left, len(block))

    add_engine_file(lane, "bin/ninfer-kernels.fatbin", write)
    return dst


def _point(tree: Path, work: Path, runs: int, *, unzip: bool) -> dict[str, Any]:
    """One curve point: ``runs`` pairs of build/zip, then ``runs`` pairs of verify/checksums."""
    load = load_average()
    out = work / "curve-out"
    builds: list[Run] = []
    zips: list[Run] = []
    io: dict[str, int] = {}
    for i in range(runs):
        b, io = build_io(f"build #{i}", tree, out)
        builds.append(b)
        zips.append(info_zip(f"zip #{i}", tree, work))
    directory = set_dir(out)
    package = the_zip(out)
    verify_cmd: list[str | Path] = [CLI, "verify", directory]
    sums_cmd = [
        "sh",
        "-c",
        "sha256sum -c --quiet SHA256SUMS" + (f" && unzip -tq '{package.name}'" if unzip else ""),
    ]
    if runs > 2:  # the set was just written (page cache warm); at the big points one verify is minutes
        run("warm-up verify", verify_cmd)
    verifies: list[Run] = []
    checks: list[Run] = []
    for i in range(runs):
        verifies.append(run(f"verify #{i}", verify_cmd))
        checks.append(run(f"checksums #{i}", sums_cmd, cwd=directory))
    # verify's member scan runs in a worker process whose peak GNU time does not add to the
    # parent's: one run in a single process (NINFER_VERIFY_WORKER=off) bounds both together.
    one = run("verify, one process", verify_cmd, env={**os.environ, "NINFER_VERIFY_WORKER": "off"})
    staged = tree_bytes(tree / LANE) + sum(p.stat().st_size for p in (tree / LANE).glob("*.json"))
    return {
        "verify_one_process_max_rss_mib": round(one.max_rss_kib / 1024, 1),
        "load_average_before": load,
        "staged_bytes": staged,
        "zip_bytes": package.stat().st_size,
        "build_vs_zip": pairs(builds, zips),
        "verify_vs": "sha256sum -c + unzip -tq" if unzip else "sha256sum -c",
        "verify_vs_checksums": pairs(verifies, checks),
        "build_read_per_staged_byte": round(io["read_bytes"] / staged, 3),
        "build_written_per_staged_byte": round(io["written_bytes"] / staged, 3),
        "build_written_per_output_byte": round(
            io["written_bytes"] / sum(p.stat().st_size for p in directory.iterdir()), 3
        ),
    }


def _runs_for(scale: float, runs: int, big_runs: int) -> int:
    """Pairs per point: ``runs`` below the middle point, 3 at it, ``big_runs`` for the largest."""
    if scale < 1:
        return runs
    return min(runs, 3) if scale < 4 else big_runs


def file_count_curve(
    samples: Path, work: Path, counts: Sequence[int], runs: int, big_runs: int
) -> dict[str, Any]:
    counts = [n for n in counts if n > 0]  # 0 is the base point, always measured (and never a divisor)
    base = _point(samples, work, runs, unzip=True)
    points = {"0": base}
    for n in counts:
        tree = many_files_tree(samples, work, count=n)
        points[str(n)] = _point(tree, work, _runs_for(n / 10_000, runs, big_runs), unzip=True)
        shutil.rmtree(work / "curve-out", ignore_errors=True)
    for n in counts:
        p = points[str(n)]
        for key in ("build_vs_zip", "verify_vs_checksums"):
            extra = p[key]["ours_cpu_s"]["min"] - base[key]["ours_cpu_s"]["min"]
            p[key]["ours_extra_cpu_ms_per_file"] = round(1000 * extra / n, 3)
    return points


def size_curve(samples: Path, work: Path, sizes: Sequence[int], runs: int, big_runs: int) -> dict[str, Any]:
    points = {}
    for mib in sizes:
        tree = _size_tree(samples, work, mib)
        points[str(mib)] = _point(tree, work, _runs_for(mib / 1024, runs, big_runs), unzip=False)
        shutil.rmtree(work / "curve-out", ignore_errors=True)
        shutil.rmtree(tree)  # gigabytes: do not keep them
    return points


def startup(runs: int) -> dict[str, Any]:
    """``--help`` / ``--version`` vs a bare ``python -c pass`` of the same interpreter, in pairs."""
    python = Path(sys.executable)
    out: dict[str, Any] = {}
    for flag in ("--version", "--help"):
        ours: list[Run] = []
        bare: list[Run] = []
        for i in range(runs):
            ours.append(run(f"{flag} #{i}", [CLI, flag], own_rss=False))
            bare.append(run(f"python -c pass #{i}", [python, "-c", "pass"], own_rss=False))
        out[flag] = pairs(ours, bare)
    return out


def plot(results: dict[str, Any], directory: Path) -> list[str]:
    """Write ``bench-files.svg`` and ``bench-sizes.svg`` (needs matplotlib: the ``bench`` extra)."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    written = []
    for key, xlabel, name in (
        ("files", "extra 4 KiB files", "bench-files.svg"),
        ("sizes", "staged size (MiB)", "bench-sizes.svg"),
    ):
        points = results.get(key)
        if not points:
            continue
        xs = [int(x) for x in points]
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for side, label, series in (
            ("build_vs_zip", "build lane", "ours_s"),
            ("build_vs_zip", "zip -X -r -6", "theirs_s"),
            ("verify_vs_checksums", "verify", "ours_s"),
            ("verify_vs_checksums", "sha256sum -c (+ unzip -tq)", "theirs_s"),
        ):
            ax.plot(xs, [points[str(x)][side][series]["median"] for x in xs], marker="o", label=label)
        ax.set_xscale(
            "symlog" if key == "files" else "log", **({"linthresh": 1000} if key == "files" else {})
        )
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("wall seconds (median of the runs)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(directory / name)
        plt.close(fig)
        written.append(name)
    return written


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--counts", default="1000,10000,100000")
    ap.add_argument("--sizes", default="256,1024,4096", help="MiB; empty to skip")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--max-runs-big", type=int, default=1, help="runs at >= 40k files and >= 4 GiB")
    ap.add_argument("--startup-runs", type=int, default=11, help="pairs for --help/--version; 0 skips")
    ap.add_argument("--plots", action="store_true")
    ap.add_argument("--plots-dir", type=Path, default=DOCS, help="where the SVGs go (default docs/)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    samples = small_samples(args.work)
    counts = [int(x) for x in args.counts.split(",") if x]
    sizes = [int(x) for x in args.sizes.split(",") if x]
    results: dict[str, Any] = {}
    if args.startup_runs:
        results["startup"] = startup(args.startup_runs)
    if counts:
        results["files"] = file_count_curve(samples, args.work, counts, args.runs, args.max_runs_big)
    if sizes:
        results["sizes"] = size_curve(samples, args.work, sizes, args.runs, args.max_runs_big)
    if args.plots:
        try:
            results["plots"] = plot(results, args.plots_dir)
        except ImportError as exc:  # the measurements stand without their plots
            results["plots_skipped"] = f"{exc} (install the bench extra: pip install -e '.[bench]')"
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    return results


if __name__ == "__main__":
    main()
