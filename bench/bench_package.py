"""Benchmark: package build vs Info-ZIP ``zip -X -r -6`` on the same staged tree (DESIGN.md §11).

Goal: build ≤ 0.7× the wall time of ``zip -X -r -6`` (same deflate level) on a ≥ 1 GiB staged
tree, both cores used, and two builds give byte-identical zips.

Trees (``--trees``; both by default):

* ``sample``: the full sample lane ``rtx4090`` from ``ninfer-release samples fetch --full``
  (real cuBLAS/cudart/MSVC DLLs, 482.5 MiB);
* ``1gib``: the same lane plus one engine file ``bin/ninfer-kernels-sm89.fatbin`` made of the
  lane's own cuBLAS bytes, so the staged tree is 1.05 GiB of real GPU code.

Per repetition, interleaved so that machine noise hits every side alike:

1. ``cd TREE && zip -X -r -6 out.zip bin licenses`` (Info-ZIP, single-threaded);
2. ``ninfer-release build lane rtx4090 --release manifests/v0.13.1.yaml --inputs TREE --out OUT``
   — the product: staged-tree checks, one read per input byte (hashes, lock check, SBOMs,
   deflate on 2 threads), zip, 11-file set, and the full ``verify`` of the set it wrote;
3. the bare zip step alone (``plan_package`` + ``compress_members(workers=2)`` + ``write_zip``).

Usage: ``.venv/bin/python bench/bench_package.py [--work DIR] [--runs 2] [--trees sample,1gib] [--json]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    GIB,
    LANE,
    MIB,
    BenchError,
    Run,
    best,
    big_tree,
    build_lane,
    fetch_samples,
    median,
    paired,
    run,
    sha256_of,
    the_zip,
    tree_bytes,
)

GOAL = 0.7


def bare_zip(lane_dir: Path, out: Path, workers: int) -> None:
    """The zip step alone: plan, compress on ``workers`` threads, write (generated members are stubs)."""
    from ninfer_release import packaging

    info = json.loads((lane_dir / "build-info.json").read_bytes())
    staged = packaging.load_staged_tree(
        lane_dir,
        lane_id=LANE,
        source_commit=info["source_commit"],
        cuda_arch=info["cuda_arch"],
        cuda_version=info["cuda_version"],
    )
    repo = Path(__file__).resolve().parent.parent
    recipe = packaging.load_recipe(repo / "packaging" / "windows-native.yaml")
    plan = packaging.plan_package(
        staged,
        recipe,
        {
            "config/ninfer.toml": b"# bench\n",
            "profile/bench.json": b"{}\n",
            "NOTICE.txt": packaging.render_notice(staged.lock),
            "sbom/bench.spdx.json": b"{}\n",
        },
        component="bench",
    )
    with tempfile.TemporaryDirectory(prefix=".bench-spool-", dir=out.parent) as tmp:
        members = packaging.compress_members(plan, workdir=Path(tmp), workers=workers)
        packaging.write_zip(members, out, epoch=1795132800)


def measure(tree: Path, work: Path, runs: int) -> dict[str, object]:
    """Interleaved repetitions of zip / build lane / bare zip step on ``tree``; ratios and digests."""
    lane = tree / LANE
    size = tree_bytes(lane)
    zips: list[Run] = []
    builds: list[Run] = []
    bares: list[Run] = []
    build_digests: list[str] = []
    bare_digests: list[str] = []
    info_zip_size = ours_size = 0
    for i in range(runs):
        ref = work / "info-zip.zip"
        ref.unlink(missing_ok=True)
        info_zip: list[str | Path] = ["zip", "-q", "-X", "-r", "-6", ref, "bin", "licenses"]
        zips.append(run(f"zip -X -r -6 #{i}", info_zip, cwd=lane))
        info_zip_size = ref.stat().st_size
        ref.unlink()

        out = work / f"build-{i}"
        builds.append(build_lane(f"build lane #{i}", tree, out))
        build_digests.append(sha256_of(the_zip(out)))
        ours_size = the_zip(out).stat().st_size
        if i > 0:
            shutil.rmtree(out)

        bare_out = work / f"bare-{i}.zip"
        bares.append(
            run(f"bare zip step #{i}", [sys.executable, __file__, "--bare", str(lane), str(bare_out)])
        )
        bare_digests.append(sha256_of(bare_out))
        bare_out.unlink()
    shutil.rmtree(work / "build-0", ignore_errors=True)
    identical = len(set(build_digests)) == 1 and len(set(bare_digests)) == 1
    if runs >= 2 and not identical:
        raise BenchError(f"rebuilds differ: build zips {build_digests}, bare zips {bare_digests}")
    return {
        "tree": str(tree),
        "staged_bytes": size,
        "staged_mib": round(size / MIB, 1),
        "runs": runs,
        "info_zip": [r.as_dict() for r in zips],
        "build_lane": [r.as_dict() for r in builds],
        "bare_zip_step": [r.as_dict() for r in bares],
        "info_zip_best_s": round(best(zips), 3),
        "build_lane_best_s": round(best(builds), 3),
        "bare_zip_step_best_s": round(best(bares), 3),
        "ratio_build_lane": round(best(builds) / best(zips), 3),
        "ratio_build_lane_median": round(median(builds) / median(zips), 3),
        "ratio_build_lane_paired": round(paired(builds, zips), 3),
        "ratio_bare_zip_step": round(best(bares) / best(zips), 3),
        "ratio_bare_zip_step_median": round(median(bares) / median(zips), 3),
        "ratio_bare_zip_step_paired": round(paired(bares, zips), 3),
        "goal_ratio": GOAL,
        "info_zip_bytes": info_zip_size,
        "ours_zip_bytes": ours_size,
        "byte_identical_rebuilds": identical if runs >= 2 else None,
        "zip_sha256": build_digests[0],
    }


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the benchmark; returns (and with ``--json`` prints) the results."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--trees", default="sample,1gib")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--bare", nargs=2, metavar=("LANE_DIR", "OUT_ZIP"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.bare:
        bare_zip(Path(args.bare[0]), Path(args.bare[1]), workers=2)
        return {}
    args.work.mkdir(parents=True, exist_ok=True)
    samples = fetch_samples(args.work)
    results: dict[str, object] = {}
    for name in args.trees.split(","):
        if name == "sample":
            tree = samples
        elif name == "1gib":
            tree = big_tree(samples, args.work, min_bytes=int(1.05 * GIB))
        else:
            raise SystemExit(f"unknown tree {name!r} (sample, 1gib)")
        scratch = args.work / f"package-{name}"
        scratch.mkdir(exist_ok=True)
        results[name] = measure(tree, scratch, args.runs)
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        for name, r in results.items():
            assert isinstance(r, dict)
            print(
                f"{name}: {r['staged_mib']} MiB  zip {r['info_zip_best_s']} s  build lane "
                f"{r['build_lane_best_s']} s ({r['ratio_build_lane_paired']}x paired)  bare zip step "
                f"{r['bare_zip_step_best_s']} s ({r['ratio_bare_zip_step_paired']}x paired)  identical "
                f"{r['byte_identical_rebuilds']}"
            )
    return results


if __name__ == "__main__":
    main()
