"""The summary of a ``run_all.py`` run: every goal, where it was measured, its ratio and verdict.

``summary_rows(results)`` turns the results document of ``run_all.py`` (one key per part:
``goals``, ``cache``, ``memory``, ``fetch``, ``registry``, ``image``, ``curves``; a part that
was skipped is absent, one that failed is ``{"failed": "..."}``) into one :class:`Row` per goal
of issues 11, 12, 13 and DESIGN.md §11. Ratios are statistics of interleaved pairs (ours ÷ the
standard tool, each pair back to back); the verdict is on the **median** of the pair ratios.
``plot_goals`` draws the same rows (SVG, matplotlib from the ``bench`` extra).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Row:
    """One goal of the summary: ``ratio`` is ``{"min","median","max"}`` (or ``None`` if not measured)."""

    issue: str
    goal: str
    where: str
    target: float
    unit: str = "×"
    ratio: dict[str, float] | None = None
    pairs: int = 0
    load: float | None = None
    note: str = ""

    @property
    def met(self) -> bool | None:
        """The verdict on the median, ``None`` when not measured."""
        return None if self.ratio is None else self.ratio["median"] <= self.target

    def cells(self) -> list[str]:
        """The markdown cells: goal, measured on, pairs, load, min/median/max, target, verdict."""
        if self.ratio is None:
            measured = "–"
            verdict = f"not measured: {self.note}" if self.note else "not measured"
        else:
            r, u = self.ratio, self.unit
            measured = f"{r['min']}{u} / **{r['median']}{u}** / {r['max']}{u}"
            verdict = ("**met**" if self.met else "**missed**") + (f" ({self.note})" if self.note else "")
        load = "–" if self.load is None else f"{self.load}"
        pairs = str(self.pairs) if self.pairs else "–"
        return [
            self.issue,
            self.goal,
            self.where,
            pairs,
            load,
            measured,
            f"≤ {self.target}{self.unit}",
            verdict,
        ]


def _one(value: float) -> dict[str, float]:
    v = round(value, 3)
    return {"min": v, "median": v, "max": v}


def _why(part: Any) -> str:
    if part is None:
        return "part skipped in this run"
    if isinstance(part, dict) and "failed" in part:
        return "the part failed, see the JSON below"
    if isinstance(part, dict) and "skipped" in part:
        return str(part["skipped"])
    return "not in this run's results"


def _pair_row(base: Row, point: Any, key: str, part: Any = None) -> Row:
    """``base`` with the ratio, pair count and load of ``point[key]`` (a ``_common.pairs`` dict).

    When it is missing the note says why, from ``part`` (the whole part's result) if given.
    """
    try:
        p = point[key]
        load = point.get("load_average_before", [None])[0]
        return Row(**{**base.__dict__, "ratio": p["ratio"], "pairs": len(p["runs"]), "load": load})
    except (KeyError, TypeError):
        return Row(**{**base.__dict__, "note": _why(point if part is None or point is not None else part)})


def _goals_rows(g: dict[str, Any] | None) -> Iterator[Row]:
    g = g or {}
    full = g.get("full_tree", "--full")
    yield _pair_row(
        Row(
            issue="13",
            goal="build ≤ 0.35× `zip -X -r -6`, both cores free",
            where=f"{full} tree",
            target=0.35,
        ),
        g.get("build_full"),
        "build_vs_zip",
        g,
    )
    yield _pair_row(
        Row(
            issue="13",
            goal="build ≤ 0.7× zip, one core busy (`taskset` burner)",
            where=f"{full} tree",
            target=0.7,
        ),
        g.get("build_full_busy"),
        "build_vs_zip",
        g,
    )
    mib = (g.get("build_random") or {}).get("member_mib", 1024)
    yield _pair_row(
        Row(
            issue="13",
            goal="build ≤ 0.15× zip, incompressible member",
            where=f"{mib} MiB random member",
            target=0.15,
        ),
        g.get("build_random"),
        "build_vs_zip",
        g,
    )
    for set_key, set_name in (("verify_sample", "sample set"), ("verify_full", f"{full} set")):
        for mode, label in (("free", "both cores free"), ("busy", "one core busy")):
            point = (g.get(set_key) or {}).get(mode, g.get(set_key))
            base = Row(issue="13", goal=f"verify ≤ 1.0× `sha256sum -c`, {label}", where=set_name, target=1.0)
            yield _pair_row(base, point, "verify_vs_sha256sum", g)


def _bytes_rows(g: dict[str, Any] | None) -> Iterator[Row]:
    moved = ((g or {}).get("build_full") or {}).get("bytes_moved")
    where = f"{(g or {}).get('full_tree', '--full')} tree, one build"
    note = "" if moved else _why((g or {}).get("build_full"))
    yield Row(
        issue="13",
        goal="bytes moved: each output byte written once (written ÷ output bytes)",
        where=where,
        target=1.05,
        unit="",
        ratio=_one(moved["written_per_output_byte"]) if moved else None,
        pairs=1 if moved else 0,
        note=note,
    )
    yield Row(
        issue="13",
        goal="bytes moved: zip read at most once by the self-check ((read − staged) ÷ zip bytes)",
        where=where,
        target=1.1,
        unit="",
        ratio=_one(moved["zip_reads"]) if moved else None,
        pairs=1 if moved else 0,
        note=note,
    )


def _cache_rows(c: dict[str, Any] | None) -> Iterator[Row]:
    where = f"{(c or {}).get('tree', '--full')} tree"
    yield _pair_row(
        Row(
            issue="13",
            goal="unchanged rebuild (warm deflate cache) ≤ 0.2× the cold build",
            where=where,
            target=0.2,
        ),
        c,
        "warm_vs_cold",
    )
    same = (c or {}).get("identical_with_and_without_cache")
    yield Row(
        issue="13",
        goal="output byte-identical with and without the cache (0 = identical)",
        where=f"{where}: zips of {(c or {}).get('builds_compared', '–')} builds (off, cold, warm)",
        target=0,
        unit="",
        ratio=None if same is None else _one(0 if same else 1),
        note="" if same is not None else _why(c),
    )


def _curve_point(curves: dict[str, Any] | None, kind: str, x: str) -> Any:
    return ((curves or {}).get(kind) or {}).get(x)


def _curve_rows(curves: dict[str, Any] | None) -> Iterator[Row]:
    for flag in ("--help", "--version"):
        point = ((curves or {}).get("startup") or {}).get(flag)
        base = Row(issue="13", goal=f"`{flag}` ≤ 2× `python -c pass`", where="same interpreter", target=2.0)
        wrapped = None if point is None else {"pairs": point}
        yield _pair_row(base, wrapped, "pairs", curves)
    for n, target, key, tool in (
        ("10000", 1.0, "build_vs_zip", "zip"),
        ("100000", 1.0, "build_vs_zip", "zip"),
        ("10000", 1.5, "verify_vs_checksums", "`sha256sum -c` + `unzip -tq`"),
    ):
        side = "build" if key == "build_vs_zip" else "verify"
        base = Row(
            issue="13", goal=f"{side} ≤ {target}× {tool}", where=f"sample + {int(n):,} files", target=target
        )
        yield _pair_row(base, _curve_point(curves, "files", n), key, curves)
    yield from _linear_rows(curves)
    yield _pair_row(
        Row(
            issue="DESIGN §11",
            goal="build ≤ 0.7× zip on a ≥ 1 GiB tree",
            where="size curve, 1024 MiB",
            target=0.7,
        ),
        _curve_point(curves, "sizes", "1024"),
        "build_vs_zip",
        curves,
    )


def _linear_rows(curves: dict[str, Any] | None) -> Iterator[Row]:
    files = (curves or {}).get("files") or {}
    big = files.get("100000")
    rss = (
        None
        if big is None
        else max(
            big["build_vs_zip"]["ours_max_rss_mib"],
            big["verify_vs_checksums"]["ours_max_rss_mib"],
            # the worker's pages are not in the parent's peak: verify in one process bounds both
            big.get("verify_one_process_max_rss_mib", 0),
        )
    )
    yield Row(
        issue="13",
        goal="peak RSS at 100k files (build, verify, verify in one process)",
        where="sample + 100,000 files",
        target=200,
        unit=" MiB",
        ratio=None if rss is None else _one(rss),
        pairs=len(big["build_vs_zip"]["runs"]) if big else 0,
        note="" if big else _why(curves),
    )
    values, left_out = _per_file_above_noise(files)
    yield Row(
        issue="13",
        goal="linear in file count: extra build CPU per file, largest ÷ smallest of the curve points "
        f"whose extra CPU is ≥ {_NOISE_FACTOR}× the base point's CPU spread",
        where=f"{len(values)} file-count points"
        + (f" (left out: {', '.join(left_out)} files)" if left_out else ""),
        target=1.5,
        unit="",
        ratio=_one(max(values) / min(values)) if len(values) >= 2 else None,
        note="" if len(values) >= 2 else "needs two file-count points above the noise",
    )


#: A file-count point counts for the linearity row only when its extra build CPU is at least this
#: many times the base point's CPU spread (max − min over its runs): below that, the per-file figure
#: is the base build's run-to-run noise divided by N (the 1k point of the run of 2026-12-02 04:30:
#: 3 ms of extra CPU beside a 124 ms spread gave 0.003 ms per file and a meaningless 55.7).
_NOISE_FACTOR = 5


def _per_file_above_noise(files: dict[str, Any]) -> tuple[list[float], list[str]]:
    """The extra build CPU per file (ms) of the points above the noise, and the counts left out."""
    base = (files.get("0") or {}).get("build_vs_zip", {}).get("ours_cpu_s") or {}
    spread = max(0.0, float(base.get("max", 0.0)) - float(base.get("min", 0.0)))
    values: list[float] = []
    left_out: list[str] = []
    for n, point in files.items():
        per_file = point["build_vs_zip"].get("ours_extra_cpu_ms_per_file")
        if n == "0" or not isinstance(per_file, float | int) or per_file <= 0:
            continue
        extra_s = per_file * int(n) / 1000
        if extra_s >= _NOISE_FACTOR * spread:
            values.append(float(per_file))
        else:
            left_out.append(f"{int(n):,}")
    return values, left_out


def _memory_rows(m: dict[str, Any] | None) -> Iterator[Row]:
    for key, label in (("build_lane", "build"), ("verify", "verify")):
        rss = (m or {}).get(f"{key}_max_rss_mib")
        gib = (m or {}).get("big_file_bytes", 4 << 30) / (1 << 30)
        yield Row(
            issue="DESIGN §11",
            goal=f"peak RSS of {label} with a {gib:g} GiB file",
            where="sample lane + sparse file",
            target=200,
            unit=" MiB",
            ratio=None if rss is None else _one(rss),
            pairs=1 if rss is not None else 0,
            note="" if rss is not None else _why(m),
        )


def _from_lists(doc: Any, ours: str, theirs: str) -> dict[str, float] | None:
    """Pair-ratio statistics from two lists of runs (``[{"wall_s": …}, …]``, index i = pair i)."""
    try:
        values = [a["wall_s"] / b["wall_s"] for a, b in zip(doc[ours], doc[theirs], strict=True)]
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    if not values:
        return None
    return {
        "min": round(min(values), 3),
        "median": round(statistics.median(values), 3),
        "max": round(max(values), 3),
    }


# (issue, goal, measured on, part, our runs key, the tool's runs key, the bench's own median-ratio key
# (used when the run lists are absent), target)
_SIDE_BENCHES = (
    ("12", "fetch + verify ≤ 1.2× `curl` + `sha256sum -c`", "{tree} set, loopback nginx (TLS)", "fetch",
     "fetch", "curl_sha256sum", "ratio_paired_median", 1.2),
    ("11", "publish ≤ 1.2× `skopeo copy oci: docker://`", "{tree} set, fresh local registry", "registry",
     "publish", "skopeo_push", "publish_ratio_paired_median", 1.2),
    ("11", "pull + verify ≤ 1.2× `skopeo copy` out + `sha256sum -c`", "{tree} set, fresh local registry",
     "registry", "verify_oci", "skopeo_pull_sha256sum", "pull_verify_ratio_paired_median", 1.2),
)  # fmt: skip


def _median_only(doc: Any, key: str) -> dict[str, float] | None:
    value = doc.get(key) if isinstance(doc, dict) else None
    return {"min": value, "median": value, "max": value} if isinstance(value, float | int) else None


def _side_rows(results: dict[str, Any]) -> Iterator[Row]:
    for issue, goal, where, part, ours, theirs, median_key, target in _SIDE_BENCHES:
        doc = results.get(part)
        ratio = _from_lists(doc, ours, theirs) or _median_only(doc, median_key)
        tree = "--full" if isinstance(doc, dict) and doc.get("full") else "small sample"
        yield Row(
            issue=issue,
            goal=goal,
            where=where.format(tree=tree),
            target=target,
            ratio=ratio,
            pairs=int(doc.get("runs", 0)) if ratio is not None and isinstance(doc, dict) else 0,
            load=(results.get("loads") or {}).get(part),
            note="" if ratio is not None else _why(doc),
        )


def _fetch_small_row(results: dict[str, Any]) -> Iterator[Row]:
    """The small set's fetch ratio, for information, when the goal's run was on the ``--full`` set."""
    doc = results.get("fetch")
    small = doc.get("small") if isinstance(doc, dict) and doc.get("full") else None
    ratio = _from_lists(small, "fetch", "curl_sha256sum")
    if isinstance(small, dict) and ratio is not None:
        yield Row(
            issue="12 (info)",
            goal="fetch + verify beside `curl` + `sha256sum -c`, the small set",
            where="small sample set (0.7 MB: all fixed cost)",
            target=1.2,
            ratio=ratio,
            pairs=len(small["fetch"]),
            load=(results.get("loads") or {}).get("fetch"),
        )


def _image_rows(img: dict[str, Any] | None) -> Iterator[Row]:
    ratio = (img or {}).get("ratio_vs_docker_build")
    yield Row(
        issue="13",
        goal="image build ≤ 0.5× `docker build --no-cache`",
        where=f"{(img or {}).get('payload_mib', '–')} MiB payload, whole processes",
        target=0.5,
        ratio=ratio,
        pairs=int((img or {}).get("runs", 0)) if ratio else 0,
        load=((img or {}).get("load_average_before") or [None])[0],
        note="" if ratio else _why(img),
    )


def summary_rows(results: dict[str, Any]) -> list[Row]:
    """Every goal of the run's results, in the order of the summary table."""
    sources: list[Callable[[], Iterator[Row]]] = [
        lambda: _goals_rows(results.get("goals")),
        lambda: _curve_rows(results.get("curves")),
        lambda: _bytes_rows(results.get("goals")),
        lambda: _cache_rows(results.get("cache")),
        lambda: _image_rows(results.get("image")),
        lambda: _memory_rows(results.get("memory")),
        lambda: _side_rows(results),
        lambda: _fetch_small_row(results),
    ]
    return [row for source in sources for row in source()]


def summary_table(rows: list[Row]) -> list[str]:
    """The markdown table of ``rows``."""
    lines = [
        "| issue | goal | measured on | pairs | load before | ratio min / **median** / max | target "
        "| verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    return lines + ["| " + " | ".join(row.cells()) + " |" for row in rows]


def plot_goals(rows: list[Row], path: Path) -> bool:
    """Write ``path`` (SVG): each measured goal's ratios ÷ its target. False without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    measured = [r for r in rows if r.ratio is not None and r.target > 0]
    fig, ax = plt.subplots(figsize=(12, 0.32 * len(measured) + 1.4))
    for i, r in enumerate(measured):
        assert r.ratio is not None
        lo, mid, hi = (r.ratio[k] / r.target for k in ("min", "median", "max"))
        ax.barh(i, mid, color="tab:green" if r.met else "tab:red", alpha=0.7)
        ax.plot([lo, hi], [i, i], color="black", linewidth=1)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
    labels = [f"[{r.issue}] {r.goal[:72]} ({r.where[:32]})" for r in measured]
    ax.set_yticks(range(len(measured)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("median ratio ÷ target (log scale; below 1 = met; black line: min–max of the pairs)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True
