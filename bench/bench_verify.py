"""Benchmark: ``ninfer-release verify`` vs ``sha256sum -c SHA256SUMS`` on the same set (DESIGN.md §11).

Goal: ``verify`` ≤ 1.1× the wall time of ``sha256sum -c SHA256SUMS`` run in the set directory.

The set is the 11-file set ``build lane rtx4090`` writes from the full sample tree (``samples
fetch --full``: a 388 MB zip of 482.5 MiB of real cuBLAS/cudart/MSVC DLLs). ``sha256sum -c``
hashes the 10 entries; ``verify`` does that and more: it also inflates every zip member and
hashes it (on a second thread, the zip read once for its own digest and once member by member),
validates the SPDX 2.3 and CycloneDX 1.6 documents and checks every cross-binding. Both are run
alternately ``--runs`` times with a warm page cache (one untimed run of each first).

Usage: ``.venv/bin/python bench/bench_verify.py [--work DIR] [--runs 5] [--json]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CLI, Run, best, build_lane, fetch_samples, median, paired, run, set_dir

GOAL = 1.1


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the benchmark; returns (and with ``--json`` prints) the results."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    samples = fetch_samples(args.work)
    out = args.work / "verify-set"
    build_lane("build lane (set to verify)", samples, out)
    directory = set_dir(out)
    size = sum(p.stat().st_size for p in directory.iterdir())
    sums: list[str | Path] = ["sha256sum", "-c", "--quiet", "SHA256SUMS"]
    verify: list[str | Path] = [CLI, "verify", directory]
    run("warm-up sha256sum", sums, cwd=directory)
    run("warm-up verify", verify)
    theirs: list[Run] = []
    ours: list[Run] = []
    for i in range(args.runs):
        theirs.append(run(f"sha256sum -c #{i}", sums, cwd=directory))
        ours.append(run(f"verify #{i}", verify))
    shutil.rmtree(out)
    result: dict[str, object] = {
        "set_bytes": size,
        "runs": args.runs,
        "sha256sum": [r.as_dict() for r in theirs],
        "verify": [r.as_dict() for r in ours],
        "sha256sum_best_s": round(best(theirs), 3),
        "verify_best_s": round(best(ours), 3),
        "ratio": round(best(ours) / best(theirs), 3),
        "ratio_median": round(median(ours) / median(theirs), 3),
        "ratio_paired": round(paired(ours, theirs), 3),
        "verify_max_rss_mib": round(max(r.max_rss_kib for r in ours) / 1024, 1),
        "goal_ratio": GOAL,
    }
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(
            f"sha256sum -c {result['sha256sum_best_s']} s  verify {result['verify_best_s']} s  "
            f"ratio: paired {result['ratio_paired']}, best {result['ratio']}, "
            f"medians {result['ratio_median']}"
        )
    return result


if __name__ == "__main__":
    main()
