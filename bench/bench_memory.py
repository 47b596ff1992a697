"""Benchmark: peak RSS of ``build lane`` and ``verify`` with a 4 GiB file in the set (DESIGN.md §11).

Goal: peak resident set ≤ 200 MiB for both, whatever the file sizes.

Tree: the full sample lane plus ``bin/ninfer-big.dll``, an engine file listed in
``build-info.json`` ``engine_files``: the sample engine's real PE image (so the SBOM's PE
parsing reads it) extended to 4 GiB as a sparse file. The build reads, hashes and deflates all
4 GiB (zip64 member), seals the set and verifies it; ``verify`` then runs again on its own.
Peak RSS is each child's ``ru_maxrss`` from ``wait4`` (file-backed pages included).

Usage: ``.venv/bin/python bench/bench_memory.py [--work DIR] [--gib 4] [--small] [--json]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CLI, GIB, build_lane, fetch_samples, huge_file_tree, run, set_dir, small_samples, the_zip

GOAL_MIB = 200


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the benchmark; returns (and with ``--json`` prints) the results."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--gib", type=float, default=4.0)
    ap.add_argument("--small", action="store_true", help="the small sample lane instead of --full")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    samples = small_samples(args.work) if args.small else fetch_samples(args.work)
    tree = huge_file_tree(samples, args.work, size=int(args.gib * GIB))
    out = args.work / "memory-set"
    built = build_lane("build lane (4 GiB file)", tree, out)
    verified = run("verify (4 GiB file)", [CLI, "verify", str(set_dir(out))])
    zip_bytes = the_zip(out).stat().st_size
    shutil.rmtree(out)
    result: dict[str, object] = {
        "big_file_bytes": int(args.gib * GIB),
        "zip_bytes": zip_bytes,
        "build_lane": built.as_dict(),
        "verify": verified.as_dict(),
        "build_lane_max_rss_mib": round(built.max_rss_kib / 1024, 1),
        "verify_max_rss_mib": round(verified.max_rss_kib / 1024, 1),
        "goal_mib": GOAL_MIB,
    }
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(
            f"build lane peak RSS {result['build_lane_max_rss_mib']} MiB ({built.wall_s:.1f} s), "
            f"verify peak RSS {result['verify_max_rss_mib']} MiB ({verified.wall_s:.1f} s)"
        )
    return result


if __name__ == "__main__":
    main()
