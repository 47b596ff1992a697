"""Benchmark: ``ninfer-release fetch URL --out DIR`` vs ``curl`` of the same files + ``sha256sum -c``.

Goal (issue 12): fetch + verify of the sample set from loopback nginx ≤ 1.2× the wall time of
``curl`` downloading the same 11 files followed by ``sha256sum -c SHA256SUMS``.

Two sets, each the rtx4090 set that ``build lane`` writes, served by Debian's nginx over TLS on
127.0.0.1 (an ``openssl``-made CA, as in tests/test_fetch_http.py) through ``publish --to
files://``, fetched into a fresh directory each time:

* ``sample`` — **the goal's set**: the 389 MB set built from the full sample lane (``samples
  fetch --full``, the cuBLAS wheel; the set bench_verify.py measures). Measured with ``--full``.
* ``small`` — for information: the small sample tree (a 0.5 MB zip, 0.6 MB in all). On it the
  ratio is all fixed cost: ``fetch``'s full verification starts Python, imports spdx-tools and
  jsonschema and validates both SBOMs (~0.5 s whatever the size; ``verify_local`` times exactly
  that, ``verify DIR`` of the fetched set), where ``sha256sum -c`` of 0.6 MB takes 3 ms. It
  cannot approach 1.2× and is not the goal's set.

``curl`` is one process for all 11 URLs (one kept-alive connection), then ``sha256sum -c``;
``fetch`` reads ``SHA256SUMS`` and the manifest first, downloads each file with its size and
digest (hashed as it arrives), then runs the full set verification (zip members, SBOM
validation, every binding). The two alternate ``--runs`` times after one untimed run of each;
the ratio is the median of the per-pair ratios.

Usage: ``.venv/bin/python bench/bench_fetch.py [--work DIR] [--runs 5] [--full] [--json]``
(without ``--full`` only the small set: quick, says nothing about the goal).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # the tests' nginx + CA helpers (one copy)

from _common import CLI, LANE, Run, best, build_lane, fetch_samples, median, paired, run, set_dir  # noqa: E402
from http_support import Nginx  # noqa: E402

GOAL = 1.2


def _small_samples(work: Path) -> Path:
    out = work / "samples-small"
    if not (out / LANE).is_dir():
        run("samples fetch", [CLI, "samples", "fetch", "--out", out])
    return out


def _measure(name: str, samples: Path, work: Path, runs: int) -> dict[str, object]:
    """Build the set from ``samples``, serve it, and time ``runs`` interleaved pairs."""
    out = work / f"fetch-set-{name}"
    build_lane(f"build lane ({name} set to serve)", samples, out)
    directory = set_dir(out)
    server = Nginx.start(work / f"fetch-nginx-{name}")
    dest = work / f"fetch-dest-{name}"
    try:
        run("publish files://", [CLI, "publish", directory, "--to", f"files://{server.root}", "--draft"])
        tag = next(p.name for p in server.root.iterdir() if not p.name.startswith("."))
        base = f"{server.base}/{tag}/"
        names = sorted(p.name for p in directory.iterdir())
        size = sum(p.stat().st_size for p in directory.iterdir())
        curl = " ".join(["curl", "-sS", "--fail", "--cacert", str(server.ca), "--remote-name-all"] +
                        [base + n for n in names])  # fmt: skip
        theirs_cmd = ["bash", "-c", f'rm -rf "{dest}" && mkdir "{dest}" && cd "{dest}" && {curl} && '
                      "sha256sum -c --quiet SHA256SUMS"]  # fmt: skip
        ours_cmd = [
            "bash",
            "-c",
            f'rm -rf "{dest}" && exec "{CLI}" fetch {base} --out "{dest}" --ca-file {server.ca}',
        ]
        run("warm-up curl", theirs_cmd)
        run("warm-up fetch", ours_cmd)
        theirs: list[Run] = []
        ours: list[Run] = []
        for i in range(runs):
            theirs.append(run(f"curl + sha256sum -c #{i} ({name})", theirs_cmd))
            ours.append(run(f"fetch #{i} ({name})", ours_cmd))
        # The fixed cost: the full verification alone, of the set just fetched (no download).
        verify_local = run(f"verify DIR ({name})", [CLI, "verify", dest])
    finally:
        server.stop()
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(dest, ignore_errors=True)
    ratio = paired(ours, theirs)
    return {
        "set": name,
        "set_bytes": size,
        "runs": runs,
        "curl_sha256sum": [r.as_dict() for r in theirs],
        "fetch": [r.as_dict() for r in ours],
        "verify_local": verify_local.as_dict(),
        "curl_sha256sum_best_s": round(best(theirs), 3),
        "fetch_best_s": round(best(ours), 3),
        "curl_sha256sum_median_s": round(median(theirs), 3),
        "fetch_median_s": round(median(ours), 3),
        "ratio_paired_median": round(ratio, 3),
    }


def _line(r: dict[str, object]) -> str:
    return (
        f"{r['set']} set, {r['set_bytes']:,} bytes: fetch {r['fetch_median_s']} s, curl + sha256sum -c "
        f"{r['curl_sha256sum_median_s']} s (medians); ratio {r['ratio_paired_median']:.2f}; "
        f"verify DIR alone {r['verify_local']['wall_s']} s"  # type: ignore[index]
    )


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the benchmark; returns (and with ``--json`` prints) the results.

    Keys: ``sample`` (the goal's 389 MB set; ``None`` without ``--full``) and ``small`` (for
    information), each with ``set_bytes``, its runs (``fetch``, ``curl_sha256sum``), medians, best
    times, ``verify_local`` and ``ratio_paired_median``; at the top level, the same keys of the
    goal's set (the small set's without ``--full``: then ``meets_goal`` is ``None``), ``full``,
    ``goal`` and ``load_average`` before the runs.
    """
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--full", action="store_true", help="also the goal's 389 MB sample set (cuBLAS)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    load = [round(x, 2) for x in os.getloadavg()]
    sample = _measure("sample", fetch_samples(args.work), args.work, args.runs) if args.full else None
    small = _measure("small", _small_samples(args.work), args.work, args.runs)
    ratio = sample["ratio_paired_median"] if sample is not None else None
    result: dict[str, object] = {
        **(sample if sample is not None else small),
        "full": args.full,
        "goal": GOAL,
        "load_average": load,
        "sample": sample,
        "small": small,
        "meets_goal": (ratio <= GOAL) if isinstance(ratio, float) else None,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for r in (sample, small):
            if r is not None:
                print(_line(r))
        verdict = "not measured (give --full)" if ratio is None else f"{ratio:.2f}"
        print(f"goal (sample set) ≤ {GOAL}: {verdict}; load average before: {load}")
    return result


if __name__ == "__main__":
    main()
