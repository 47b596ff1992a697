"""Benchmark: ``ninfer-release fetch URL --out DIR`` vs ``curl`` of the same files + ``sha256sum -c``.

Goal (issue 12): fetch + verify of the sample set from loopback nginx ≤ 1.2× the wall time of
``curl`` downloading the same 11 files followed by ``sha256sum -c SHA256SUMS``.

Both sides download the rtx4090 set that ``build lane`` writes from the samples (``--full``: the
388 MB cuBLAS tree; default: the small sample tree, a 0.5 MB zip) from Debian's nginx over TLS on
127.0.0.1 (an ``openssl``-made CA, as in tests/test_fetch_http.py), into a fresh directory each
time. ``curl`` is one process for all 11 URLs (one kept-alive connection), then ``sha256sum -c``;
``fetch`` reads ``SHA256SUMS`` and the manifest first, downloads each file with its size and
digest, then runs the full set verification (zip members, SBOM validation, every binding). The
two alternate ``--runs`` times after one untimed run of each; the ratio is the median of the
per-pair ratios.

Usage: ``.venv/bin/python bench/bench_fetch.py [--work DIR] [--runs 5] [--full] [--json]``
"""

from __future__ import annotations

import argparse
import json
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


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the benchmark; returns (and with ``--json`` prints) the results."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--full", action="store_true", help="the 388 MB cuBLAS sample tree")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    samples = fetch_samples(args.work) if args.full else _small_samples(args.work)
    out = args.work / "fetch-set"
    shutil.rmtree(out, ignore_errors=True)
    build_lane("build lane (set to serve)", samples, out)
    directory = set_dir(out)
    server = Nginx.start(args.work / "fetch-nginx")
    try:
        run("publish files://", [CLI, "publish", directory, "--to", f"files://{server.root}", "--draft"])
        tag = next(p.name for p in server.root.iterdir() if not p.name.startswith("."))
        base = f"{server.base}/{tag}/"
        names = sorted(p.name for p in directory.iterdir())
        size = sum(p.stat().st_size for p in directory.iterdir())
        dest = args.work / "fetch-dest"
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
        for i in range(args.runs):
            theirs.append(run(f"curl + sha256sum -c #{i}", theirs_cmd))
            ours.append(run(f"fetch #{i}", ours_cmd))
    finally:
        server.stop()
        shutil.rmtree(out, ignore_errors=True)
    ratio = paired(ours, theirs)
    result: dict[str, object] = {
        "set_bytes": size,
        "full": args.full,
        "runs": args.runs,
        "curl_sha256sum": [r.as_dict() for r in theirs],
        "fetch": [r.as_dict() for r in ours],
        "curl_sha256sum_best_s": round(best(theirs), 3),
        "fetch_best_s": round(best(ours), 3),
        "curl_sha256sum_median_s": round(median(theirs), 3),
        "fetch_median_s": round(median(ours), 3),
        "ratio_paired_median": round(ratio, 3),
        "goal": GOAL,
        "meets_goal": ratio <= GOAL,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"set {size:,} bytes: fetch {result['fetch_median_s']} s, curl + sha256sum -c "
            f"{result['curl_sha256sum_median_s']} s (medians); ratio {ratio:.2f} (goal ≤ {GOAL})"
        )
    return result


if __name__ == "__main__":
    main()
