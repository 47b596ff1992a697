"""Benchmark (issue 13): the persistent deflate cache — an unchanged rebuild vs the cold build.

Goals: an unchanged rebuild (warm cache) ≤ 0.2× the cold build, and output byte-identical with
and without the cache.

The cache is controlled through ``NINFER_DEFLATE_CACHE`` (``packaging/_cache.py``): each pair
gets a **fresh empty** cache directory under ``--work``; the pair is the cold ``build lane`` (which
fills it) followed by the same ``build lane`` again with nothing changed (warm: every
redistributable's stream comes from the cache, re-verified). The ratio is warm ÷ cold. One build
with the cache ``off`` runs first; the SHA-256 of every zip (off, each cold, each warm) must be the
same, or the bench fails. Tree: the ``--full`` sample lane (``--small``: the small sample tree).

Usage: ``.venv/bin/python bench/bench_cache.py [--work DIR] [--runs 5] [--small] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BenchError,
    Run,
    build_io,
    fetch_samples,
    load_average,
    pairs,
    sha256_of,
    small_samples,
    the_zip,
)

GOAL = 0.2


def _cache_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def measure(tree: Path, work: Path, runs: int, label: str) -> dict[str, Any]:
    """One build with the cache off, then ``runs`` (cold, warm) pairs, each on a fresh cache dir."""
    load = load_average()
    out = work / "cache-out"
    off_env = dict(os.environ, NINFER_DEFLATE_CACHE="off")
    build_io("build, cache off", tree, out, env=off_env)
    digests = {"off": sha256_of(the_zip(out))}
    cold: list[Run] = []
    warm: list[Run] = []
    stored = 0
    for i in range(runs):
        cache = work / f"deflate-cache-{i}"
        shutil.rmtree(cache, ignore_errors=True)
        env = dict(os.environ, NINFER_DEFLATE_CACHE=str(cache))
        cold.append(build_io(f"cold build #{i}", tree, out, env=env)[0])
        digests[f"cold #{i}"] = sha256_of(the_zip(out))
        stored = _cache_bytes(cache)
        warm.append(build_io(f"warm rebuild #{i}", tree, out, env=env)[0])
        digests[f"warm #{i}"] = sha256_of(the_zip(out))
        shutil.rmtree(cache)
    shutil.rmtree(out)
    identical = len(set(digests.values())) == 1
    if not identical:
        raise BenchError(f"zips differ with and without the deflate cache: {digests}")
    return {
        "tree": label,
        "load_average_before": load,
        "warm_vs_cold": pairs(warm, cold),
        "cache_bytes_after_cold_build": stored,
        "identical_with_and_without_cache": identical,
        "zip_sha256": digests["off"],
        "builds_compared": len(digests),
        "goal_ratio": GOAL,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; returns (and with ``--json`` prints) the results."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--small", action="store_true", help="the small sample tree instead of --full")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    tree = small_samples(args.work) if args.small else fetch_samples(args.work)
    result = measure(tree, args.work, args.runs, "small sample (smoke)" if args.small else "--full")
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    return result


if __name__ == "__main__":
    main()
