"""The generated blocks of ``docs/benchmarks.md``: results (summary, goals, side benches) and curves.

``results_block`` and ``curves_block`` render the results document of ``run_all.py`` as markdown
between their markers; ``write_block`` replaces one block of the doc in place (the hand-written
text around the markers is kept). Plot file names are relative to the doc's directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from render import summary_rows, summary_table

BEGIN = "<!-- results:begin (written by bench/run_all.py --write-docs) -->"
END = "<!-- results:end -->"
CURVES_BEGIN = "<!-- curves:begin (written by bench/run_all.py --write-docs) -->"
CURVES_END = "<!-- curves:end -->"


def _yes(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


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


def image_lines(img: dict[str, Any]) -> list[str]:
    """The image-build table (interleaved triples: ours, ``docker build``, ``docker build`` + save)."""
    if "ratio_vs_docker_build" not in img:
        return ["", f"Image build: not run ({next(iter(img.values()), 'skipped')})."] if img else []
    return [
        "",
        f"**Image build** ({img['payload_mib']} MiB payload, {img['runs']} interleaved triples, "
        f"load before {img['load_average_before'][0]}; whole processes; "
        f"identical digests across our runs: {img['identical_digests']}):",
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


def _machine(results: dict[str, Any]) -> str:
    m = results["machine"]
    return (
        f"Machine: {m['nproc']} cores, {m['cpu']} ({', '.join(m['cpu_flags'])}); load average at start "
        f"{m['load_average']}; Linux {m['kernel']}; Python {m['python']}; {m['openssl']}; deflate engine "
        f"{m['deflate_engine']} (Python's zlib {m['python_zlib']}); {m['zip']}; {m['sha256sum']}; "
        f"{m['docker']}." + _steal(results)
    )


def _steal(results: dict[str, Any]) -> str:
    """The CPU steal during each part (``run_all.run_parts``), as a sentence; ``""`` when not recorded."""
    steal = {k: v for k, v in (results.get("steal_percent") or {}).items() if v is not None}
    if not steal:
        return ""
    parts = ", ".join(f"{name} {value} %" for name, value in steal.items())
    return (
        " CPU steal (/proc/stat: the share of the cores' time the hypervisor gave to other guests,"
        f" which slows both sides of a pair alike but not evenly) during each part: {parts}."
    )


def _run_line(results: dict[str, Any], command: str) -> str:
    m = results["machine"]
    took = results.get("elapsed_s", 0) / 60
    profile = results.get("profile")
    return f"Run of {m['date_utc']}, command: `{command}` (profile `{profile}`, {took:.1f} min in all)."


def _pairs_note(results: dict[str, Any]) -> str:
    return str(results.get("pairs_note", ""))


_GOAL_POINTS = (
    ("build_full", "build_vs_zip", "`build lane` vs `zip -X -r -6`, {tree} tree, cores free"),
    ("build_full_busy", "build_vs_zip", "`build lane` vs `zip -X -r -6`, {tree} tree, one core busy"),
    ("build_random", "build_vs_zip", "`build lane` vs `zip -X -r -6`, incompressible member"),
)


def _detail_row(label: str, point: dict[str, Any], key: str) -> str:
    p = point[key]
    return (
        f"| {label} | {len(p['runs'])} | {point.get('load_average_before', ['–'])[0]} "
        f"| {_mmm(p['ours_s'])} | {_mmm(p['theirs_s'])} | {_mmm(p['ratio'], '×')} "
        f"| {_mmm(p['ours_cpu_s'])} | {_mmm(p['theirs_cpu_s'])} | {p['ours_max_rss_mib']} MiB |"
    )


def goals_lines(g: dict[str, Any]) -> list[str]:
    """The build/verify pairs behind the summary: wall and CPU seconds of both sides, RSS."""
    if not g or "failed" in g:
        return []
    tree = g.get("full_tree", "--full")
    lines = [
        "",
        "**Build and verify beside the standard tools** (each cell min / median / max of the pairs; "
        "CPU is user+sys seconds; the busy core is a `taskset`-pinned CPU-bound process):",
        "",
        "| pairs of | pairs | load before | ours (s) | tool (s) | ratio | ours CPU (s) | tool CPU (s) "
        "| our peak RSS |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for part, key, label in _GOAL_POINTS:
        if part in g:
            lines.append(_detail_row(label.format(tree=tree), g[part], key))
    for part, name in (("verify_sample", "sample"), ("verify_full", tree)):
        for mode in ("free", "busy"):
            if part in g:
                label = f"`verify` vs `sha256sum -c`, {name} set, core {mode}"
                lines.append(_detail_row(label, g[part][mode], "verify_vs_sha256sum"))
    return lines + _goal_facts(g)


def _goal_facts(g: dict[str, Any]) -> list[str]:
    facts = [""]
    for part in ("build_full", "build_random"):
        p = g.get(part)
        if p:
            b = p["bytes_moved"]
            facts.append(
                f"- {p['tree']}: staged {b['staged_bytes']:,} B, zip {b['zip_bytes']:,} B, "
                f"set {b['output_bytes']:,} B; "
                f"one build read {b['read_bytes']:,} B ({b['read_per_staged_byte']} per staged byte; "
                f"{b['zip_reads']} zip lengths beyond the staged bytes) and wrote {b['written_bytes']:,} B "
                f"({b['written_per_output_byte']} per output byte); every rebuild's zip identical "
                f"(SHA-256 `{p['zip_sha256'][:16]}…`)."
            )
    for part in ("verify_sample", "verify_full"):
        if part in g:
            facts.append(f"- {part.replace('_', ' ')}: {g[part]['set_bytes']:,} B in the 11-file set.")
    return facts


def cache_lines(c: dict[str, Any]) -> list[str]:
    """The deflate-cache pairs: warm rebuild ÷ cold build, cache size, digests compared."""
    if not c or "failed" in c:
        return []
    w = c["warm_vs_cold"]
    return [
        "",
        f"**Deflate cache** ({c['tree']} tree; each pair a fresh empty `NINFER_DEFLATE_CACHE` dir, the cold "
        f"build then the unchanged rebuild; load before {c['load_average_before'][0]}): cold "
        f"{_mmm(w['theirs_s'])} s, warm {_mmm(w['ours_s'])} s, warm ÷ cold {_mmm(w['ratio'], '×')} "
        f"over {len(w['runs'])} pairs; the cold build stored {c['cache_bytes_after_cold_build']:,} B; "
        f"the zips of {c['builds_compared']} builds (cache off, each cold, each warm) identical: "
        f"{c['identical_with_and_without_cache']}.",
    ]


def memory_lines(m: dict[str, Any]) -> list[str]:
    """The 4 GiB-file build and verify: wall seconds and peak RSS."""
    if not m or "failed" in m:
        return []
    return [
        "",
        f"**Memory** (sample lane + a {m['big_file_bytes'] / (1 << 30):g} GiB sparse engine file): "
        f"`build lane` {m['build_lane']['wall_s']} s, peak RSS {m['build_lane_max_rss_mib']} MiB; "
        f"`verify` {m['verify']['wall_s']} s, peak RSS {m['verify_max_rss_mib']} MiB; "
        f"zip {m['zip_bytes']:,} B.",
    ]


def _side_facts(name: str, doc: Any, keys: tuple[str, ...]) -> list[str]:
    if not isinstance(doc, dict) or "failed" in doc:
        return []
    cells = ", ".join(f"{k} {doc[k]}" for k in keys if k in doc)
    return [
        f"- {name}: set {doc.get('set_bytes', 0):,} B, `--full` {doc.get('full')}, "
        f"{doc.get('runs')} pairs; {cells}."
    ]


def side_lines(results: dict[str, Any]) -> list[str]:
    """The issue 11 and 12 benches' own medians (their JSON is in the details)."""
    lines = _side_facts(
        "fetch (issue 12)",
        results.get("fetch"),
        ("fetch_median_s", "curl_sha256sum_median_s", "ratio_paired_median"),
    )
    lines += _side_facts(
        "registry (issue 11)",
        results.get("registry"),
        ("publish_median_s", "skopeo_push_median_s", "verify_oci_median_s", "skopeo_pull_sha256sum_median_s"),
    )
    return ["", "**Fetch and registry** (medians in seconds):", "", *lines] if lines else []


def _details(doc: dict[str, Any], title: str) -> list[str]:
    return [
        "",
        f"<details><summary>{title}</summary>",
        "",
        "```json",
        json.dumps(doc, indent=1, sort_keys=True),
        "```",
        "",
        "</details>",
        "",
    ]


def results_block(results: dict[str, Any], command: str, goals_plot: str | None) -> str:
    """The results block: run line, machine, the summary table of every goal, then the parts' tables."""
    rows = summary_rows(results)
    lines = [BEGIN, "", _run_line(results, command), "", _machine(results), "", _pairs_note(results), ""]
    lines += ["**Every goal** (verdict on the median of the interleaved pairs):", "", *summary_table(rows)]
    if goals_plot:
        lines += ["", f"![every goal: median ratio ÷ target]({goals_plot})"]
    lines += goals_lines(results.get("goals") or {})
    lines += cache_lines(results.get("cache") or {})
    lines += memory_lines(results.get("memory") or {})
    lines += side_lines(results)
    lines += image_lines(results.get("image") or {})
    skip = ("curves",)
    lines += _details({k: v for k, v in results.items() if k not in skip}, "Every run of this block (JSON)")
    return "\n".join([*lines, END])


def curves_block(results: dict[str, Any], command: str) -> str:
    """The curves block: start-up pairs, the file-count and size curves with their plots."""
    lines = [CURVES_BEGIN, "", _run_line(results, command)]
    lines += render_curves(results.get("curves") or {})  # starts with a blank line
    lines += _details({"curves": results.get("curves")}, "Every run of the curves (JSON)")
    return "\n".join([*lines, CURVES_END])


def write_block(doc: Path, block: str, begin: str, end: str) -> None:
    """Replace the text from ``begin`` to ``end`` (markers included) in ``doc`` with ``block``.

    Raises ``ValueError`` when a marker is missing (the hand-written doc must keep both).
    """
    text = doc.read_text(encoding="utf-8")
    start = text.index(begin)
    stop = text.index(end, start) + len(end)
    doc.write_text(text[:start] + block + text[stop:], encoding="utf-8")
