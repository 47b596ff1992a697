"""Run every DESIGN.md §11 benchmark in one go and (optionally) write the results into the docs.

Usage::

    .venv/bin/python bench/run_all.py [--work DIR] [--quick] [--skip image] [--write-docs]

Runs, in this order: ``bench_verify`` (goal 2), ``bench_package`` (goal 1), ``bench_memory``
(goal 3) and ``bench_image`` (goal 4, needs dockerd; skipped with a note when it is absent).
Prints one JSON document with the machine facts and every result; ``--write-docs`` also
replaces the generated block of ``docs/benchmarks.md`` (between the ``results:begin`` and
``results:end`` markers) with the tables of this run. ``--quick`` uses fewer repetitions and
only the ≥ 1 GiB tree. On the 2-core reference machine a full run took 6.5–8 minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_curves  # noqa: E402
import bench_memory  # noqa: E402
import bench_package  # noqa: E402
import bench_verify  # noqa: E402
from _common import REPO, machine_facts  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
BEGIN = "<!-- results:begin (written by bench/run_all.py --write-docs) -->"
END = "<!-- results:end -->"
CURVES_BEGIN = "<!-- curves:begin (written by bench/run_all.py --write-docs) -->"
CURVES_END = "<!-- curves:end -->"


def _image(runs: int) -> dict[str, Any]:
    if shutil.which("dockerd") is None and shutil.which("docker") is None:
        return {"skipped": "no docker engine on this machine"}
    proc = subprocess.run(
        [sys.executable, str(HERE / "bench_image.py"), "--runs", str(runs), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return {"failed": (proc.stderr or proc.stdout)[-2000:]}
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def _yes(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _header(results: dict[str, Any], command: str) -> list[str]:
    m = results["machine"]
    return [
        BEGIN,
        "",
        f"Run of {m['date_utc']}, command: `{command}` ({results['elapsed_s']:.0f} s in all).",
        "",
        f"Machine: {m['nproc']} cores, {m['cpu']} ({', '.join(m['cpu_flags'])}); load average at "
        f"start {m['load_average']} (other work was running: see *Noise*); Linux {m['kernel']}; "
        f"Python {m['python']}; {m['openssl']}; deflate engine {m['deflate_engine']} (Python's "
        f"zlib {m['python_zlib']}); {m['zip']}; {m['sha256sum']}; {m['docker']}.",
        "",
        "| goal | ours (fastest run) | standard tool (fastest run) | ratio: median of pairs | "
        "ratio: fastest/fastest | ratio: median/median | goal | verdict (on the pairs) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]


def _package_rows(pkg: dict[str, Any]) -> list[str]:
    rows = []
    for name in ("1gib", "sample"):
        r = pkg.get(name)
        if not r:
            continue
        zip_s = f"`zip -X -r -6` {r['info_zip_best_s']} s"
        goal = f"≤ {r['goal_ratio']}×"
        for label, key in (("`build lane`", "build_lane"), ("bare zip step", "bare_zip_step")):
            ratio = r[f"ratio_{key}_paired"]
            rows.append(
                _row(
                    f"1. package build, {r['staged_mib']} MiB tree: {label}",
                    f"{r[f'{key}_best_s']} s",
                    zip_s,
                    f"{ratio}×",
                    f"{r[f'ratio_{key}']}×",
                    f"{r[f'ratio_{key}_median']}×",
                    goal,
                    _yes(ratio <= r["goal_ratio"]),
                )
            )
    return rows


def _verify_rows(v: dict[str, Any] | None) -> list[str]:
    if not v:
        return []
    return [
        _row(
            f"2. `verify` of the sample set ({v['set_bytes'] / 1e6:.0f} MB)",
            f"{v['verify_best_s']} s",
            f"`sha256sum -c` {v['sha256sum_best_s']} s",
            f"{v['ratio_paired']}×",
            f"{v['ratio']}×",
            f"{v['ratio_median']}×",
            f"≤ {v['goal_ratio']}×",
            _yes(v["ratio_paired"] <= v["goal_ratio"]),
        )
    ]


def _memory_rows(mem: dict[str, Any] | None) -> list[str]:
    if not mem:
        return []
    rows = []
    for label, key in (("`build lane`", "build_lane"), ("`verify`", "verify")):
        rss = mem[f"{key}_max_rss_mib"]
        rows.append(_row(f"3. peak RSS, {label} with a 4 GiB file", f"{rss} MiB", "–", "–", "–", "–",
                         f"≤ {mem['goal_mib']} MiB", _yes(rss <= mem["goal_mib"])))  # fmt: skip
    return rows


def _image_measured(img: dict[str, Any]) -> bool:
    return "ratio" in img and "ratio_vs_docker_build" not in img


def _image_rows(img: dict[str, Any]) -> list[str]:
    if _image_measured(img):
        return [
            _row(
                f"4. daemonless image build ({img['payload_mib']} MiB payload)",
                f"{img['daemonless_median_s']} s",
                f"`docker build` {img['docker_build_median_s']} s",
                "– (batches, not pairs)",
                "–",
                f"{img['ratio']}×",
                f"≤ {img['goal_ratio']}×",
                _yes(img["ratio"] <= img["goal_ratio"]) + " (on the medians)",
            )
        ]
    if img and "ratio_vs_docker_build" not in img:
        why = next(iter(img.values()))
        return [_row("4. daemonless image build", "–", "–", "–", "–", "–", "≤ 0.5×", f"not run: {why}")]
    return []


def _package_facts(pkg: dict[str, Any]) -> list[str]:
    facts = []
    for name in ("1gib", "sample"):
        r = pkg.get(name)
        if r:
            peak = max(x["max_rss_kib"] for x in r["build_lane"]) / 1024
            facts.append(
                f"- {name} tree: zip sizes Info-ZIP {r['info_zip_bytes']} B, ours {r['ours_zip_bytes']} B; "
                f"two builds byte-identical: {r['byte_identical_rebuilds']} (zip SHA-256 {r['zip_sha256']}); "
                f"`build lane` peak RSS {peak:.0f} MiB."
            )
    return facts


def _other_facts(v: dict[str, Any] | None, mem: dict[str, Any] | None, img: dict[str, Any]) -> list[str]:
    facts = []
    if v:
        ours_cpu = min(x["user_s"] + x["sys_s"] for x in v["verify"])
        theirs_cpu = min(x["user_s"] + x["sys_s"] for x in v["sha256sum"])
        facts.append(
            f"- verify CPU (user+sys, least of the runs) {ours_cpu:.2f} s vs sha256sum {theirs_cpu:.2f} s; "
            f"verify peak RSS {v['verify_max_rss_mib']} MiB."
        )
    if mem:
        facts.append(
            f"- 4 GiB tree: `build lane` {mem['build_lane']['wall_s']} s, "
            f"`verify` {mem['verify']['wall_s']} s, zip {mem['zip_bytes']} B."
        )
    if _image_measured(img):
        facts.append(f"- image: identical digests across daemonless rebuilds: {img['identical_digests']}.")
    return facts


def _footer(results: dict[str, Any]) -> list[str]:
    return [
        "",
        "<details><summary>Every repetition (wall/user/sys seconds, peak RSS KiB)</summary>",
        "",
        "```json",
        json.dumps(results, indent=1, sort_keys=True),
        "```",
        "",
        "</details>",
        "",
        END,
    ]


def render(results: dict[str, Any], command: str) -> str:
    """The markdown block of one run: machine facts, one table per goal, raw repetitions."""
    pkg = results.get("package", {})
    v, mem, img = results.get("verify"), results.get("memory"), results.get("image", {})
    lines = _header(results, command)
    lines += [*_package_rows(pkg), *_verify_rows(v), *_memory_rows(mem), *_image_rows(img)]
    lines += ["", "Other facts of this run:", ""]
    lines += [*_package_facts(pkg), *_other_facts(v, mem, img)]
    lines += _footer(results)
    return "\n".join(lines)


def _mmm(stats: dict[str, float], unit: str = "") -> str:
    return f"{stats['min']}{unit} / {stats['median']}{unit} / {stats['max']}{unit}"


def render_curves(curves: dict[str, Any]) -> list[str]:
    """Tables of the file-count curve, the size curve and the start-up pairs (issue 13)."""
    lines: list[str] = []
    start = curves.get("startup")
    if start:
        lines += [
            "",
            "**Start-up** (interleaved pairs; min / median / max; the baseline is the same interpreter's "
            "`python -c pass`):",
            "",
            "| command | ours (s) | `python -c pass` (s) | ratio | goal | verdict (median) |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for flag, r in start.items():
            lines.append(
                f"| `ninfer-release {flag}` | {_mmm(r['ours_s'])} | {_mmm(r['theirs_s'])} | "
                f"{_mmm(r['ratio'], '×')} | ≤ 2× | {_yes(r['ratio']['median'] <= 2)} |"
            )
    files = curves.get("files")
    if files:
        lines += [
            "",
            "**File-count curve**: the small sample lane plus N extra 4 KiB files (`licenses/extra/`); "
            "each cell min / median / max of the runs (pairs run back to back); *extra CPU per file* is "
            "(least CPU at N − least CPU at 0) / N, flat when the cost is linear.",
            "",
            "| extra files | runs | load before | `build lane` (s) | `zip -X -r -6` (s) | build ratio "
            "| extra build CPU per file | `verify` (s) | `sha256sum -c` + `unzip -tq` (s) | verify ratio "
            "| extra verify CPU per file | peak RSS build / verify |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for n, p in files.items():
            b, v = p["build_vs_zip"], p["verify_vs_checksums"]
            lines.append(
                f"| {int(n):,} | {len(b['runs'])} | {p['load_average_before'][0]} | {_mmm(b['ours_s'])} | "
                f"{_mmm(b['theirs_s'])} | {_mmm(b['ratio'], '×')} | "
                f"{b.get('ours_extra_cpu_ms_per_file', '–')} ms | {_mmm(v['ours_s'])} | "
                f"{_mmm(v['theirs_s'])} | "
                f"{_mmm(v['ratio'], '×')} | {v.get('ours_extra_cpu_ms_per_file', '–')} ms | "
                f"{b['ours_max_rss_mib']} / {v['ours_max_rss_mib']} MiB |"
            )
    sizes = curves.get("sizes")
    if sizes:
        lines += [
            "",
            "**Size curve**: the small sample lane plus one engine file of its own DLL bytes "
            "repeated; bytes moved are the `build lane` child's `rchar`/`wchar` (every read and "
            "write, page cache included) per staged byte.",
            "",
            "| staged | runs | load before | `build lane` (s) | `zip -X -r -6` (s) | build ratio "
            "| `verify` (s) | `sha256sum -c` (s) | verify ratio | build read / written per staged byte "
            "| peak RSS build / verify |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for mib, p in sizes.items():
            b, v = p["build_vs_zip"], p["verify_vs_checksums"]
            lines.append(
                f"| {int(mib)} MiB | {len(b['runs'])} | {p['load_average_before'][0]} "
                f"| {_mmm(b['ours_s'])} | {_mmm(b['theirs_s'])} | {_mmm(b['ratio'], '×')} "
                f"| {_mmm(v['ours_s'])} | {_mmm(v['theirs_s'])} | {_mmm(v['ratio'], '×')} "
                f"| {p['build_read_per_staged_byte']} / {p['build_written_per_staged_byte']} "
                f"| {b['ours_max_rss_mib']} / {v['ours_max_rss_mib']} MiB |"
            )
    for name in curves.get("plots", []):
        lines += ["", f"![{name}]({name})"]
    return lines


def write_docs(block: str, begin: str = BEGIN, end_marker: str = END) -> None:
    """Replace one generated block of ``docs/benchmarks.md`` (which must contain its markers)."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(begin)
    end = text.index(end_marker) + len(end_marker)
    DOC.write_text(text[:start] + block + text[end:], encoding="utf-8")


def render_issue13(results: dict[str, Any], command: str) -> str:
    """The curves block: start-up, file-count and size curves, the image pairs, and their machine."""
    m = results["machine"]
    lines = [
        CURVES_BEGIN,
        "",
        f"Run of {m['date_utc']}, command: `{command}` ({results['elapsed_s']:.0f} s in all); "
        f"load average at start {m['load_average']} on {m['nproc']} cores "
        "(shared with other sessions' work: see *Noise*); "
        f"{m['deflate_engine']}; {m['zip']}; {m['sha256sum']}.",
    ]
    lines += render_curves(results.get("curves") or {})
    img = results.get("image") or {}
    if "ratio_vs_docker_build" in img:
        lines += [
            "",
            f"**Image build** ({img['payload_mib']} MiB payload, {img['runs']} interleaved triples, "
            f"load before {img['load_average_before'][0]}; whole processes; "
            "identical digests across our runs: "
            f"{img['identical_digests']}):",
            "",
            "| side | wall s (min / median / max) | ours ÷ it (min / median / max) | goal |",
            "| --- | --- | --- | --- |",
            f"| `ninfer-release image build` | {_mmm(img['daemonless_s'])} | – | – |",
            f"| `docker build --no-cache` | {_mmm(img['docker_build_s'])} | "
            f"{_mmm(img['ratio_vs_docker_build'], '×')} | ≤ 0.5× "
            f"{_yes(img['ratio_vs_docker_build']['median'] <= 0.5)} |",
            f"| `docker build` + `docker save \\| gzip -6` | {_mmm(img['docker_build_save_gzip_s'])} | "
            f"{_mmm(img['ratio_vs_docker_build_save_gzip'], '×')} | (same artifact) |",
        ]
    elif img:
        lines += ["", f"Image build: not run ({next(iter(img.values()))})."]
    lines += [
        "",
        "<details><summary>Every run of this block (JSON)</summary>",
        "",
        "```json",
        json.dumps({k: results[k] for k in ("curves", "image") if k in results}, indent=1, sort_keys=True),
        "```",
        "",
        "</details>",
        "",
        CURVES_END,
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip", default="", help="comma-separated: verify,package,memory,image,curves")
    ap.add_argument("--counts", default="1000,10000,100000", help="file-count curve points")
    ap.add_argument("--sizes", default="256,1024,4096", help="size curve points, MiB")
    ap.add_argument("--curve-runs", type=int, help="pairs per small curve point (default 5, 3 with --quick)")
    ap.add_argument("--image-runs", type=int, help="image build triples (default 5, 3 with --quick)")
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    work = ["--work", str(args.work)]
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine_facts()}
    if "verify" not in skip:
        with contextlib.redirect_stdout(sys.stderr):  # progress lines; stdout is the JSON alone
            results["verify"] = bench_verify.main([*work, "--runs", "3" if args.quick else "7"])
    if "package" not in skip:
        trees = "1gib" if args.quick else "1gib,sample"
        with contextlib.redirect_stdout(sys.stderr):
            results["package"] = bench_package.main([*work, "--runs", "2", "--trees", trees])
    if "memory" not in skip:
        with contextlib.redirect_stdout(sys.stderr):
            results["memory"] = bench_memory.main(work)
    if "image" not in skip:
        results["image"] = _image(args.image_runs or (3 if args.quick else 5))
    if "curves" not in skip:
        with contextlib.redirect_stdout(sys.stderr):
            results["curves"] = bench_curves.main(
                [*work, "--counts", args.counts, "--sizes", args.sizes,
                 "--runs", str(args.curve_runs or (3 if args.quick else 5)),
                 "--plots"]
            )  # fmt: skip
    results["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(results, indent=2, sort_keys=True))
    if args.write_docs:
        command = "bench/run_all.sh" + "".join(
            f" {a}" for a in sys.argv[1:] if not a.startswith("--work") and a != str(args.work)
        )
        if any(k in results for k in ("verify", "package", "memory")):
            write_docs(render(results, command))
        if "curves" in results or "image" in results:
            write_docs(render_issue13(results, command), CURVES_BEGIN, CURVES_END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
