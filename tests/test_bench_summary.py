"""The benchmark summary (bench/render.py): one row per goal, the verdict on the median pair ratio.

Pure functions over a results document; no benchmark runs here and no timing is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from render import Row, summary_rows, summary_table


def _pairs(ratios: list[float]) -> dict[str, Any]:
    s = sorted(ratios)
    return {
        "ratio": {"min": s[0], "median": s[len(s) // 2], "max": s[-1]},
        "runs": [[{}, {}] for _ in ratios],
        "ours_max_rss_mib": 50.0,
    }


def _row(rows: list[Row], goal_start: str) -> Row:
    (row,) = [r for r in rows if r.goal.startswith(goal_start)]
    return row


def test_verdict_is_on_the_median_of_the_pairs() -> None:
    results = {
        "goals": {
            "full_tree": "--full",
            "build_full": {"load_average_before": [0.3], "build_vs_zip": _pairs([0.2, 0.3, 0.9])},
            "build_full_busy": {"load_average_before": [1.1], "build_vs_zip": _pairs([0.6, 0.8, 0.9])},
        }
    }
    rows = summary_rows(results)
    free = _row(rows, "build ≤ 0.35×")
    assert (free.met, free.pairs, free.load) == (True, 3, 0.3)
    assert _row(rows, "build ≤ 0.7× zip, one core busy").met is False


def test_failed_and_skipped_parts_are_not_measured_and_say_why() -> None:
    rows = summary_rows({"cache": {"failed": "Traceback ..."}})
    cache = _row(rows, "unchanged rebuild")
    assert cache.met is None
    assert "failed" in cache.cells()[-1]
    image = _row(rows, "image build")
    assert image.cells()[-1] == "not measured: part skipped in this run"
    assert len(summary_table(rows)) == len(rows) + 2  # header and rule


def test_linear_row_needs_two_file_count_points() -> None:
    point = {"build_vs_zip": {**_pairs([1.0]), "ours_extra_cpu_ms_per_file": 1.0}}
    one = summary_rows({"curves": {"files": {"0": point, "1000": point}}})
    assert _row(one, "linear in file count").ratio is None
    flat = {"build_vs_zip": {**_pairs([1.0]), "ours_extra_cpu_ms_per_file": 1.2}}
    two = summary_rows({"curves": {"files": {"0": point, "1000": point, "10000": flat}}})
    linear = _row(two, "linear in file count")
    assert linear.ratio == {"min": 1.2, "median": 1.2, "max": 1.2}
    assert linear.met is True


def test_linear_row_leaves_out_points_within_the_base_points_noise() -> None:
    # The run of 2026-12-02 04:30: the base build's CPU spread 0.124 s; 1k extra files added 3 ms.
    base = {"build_vs_zip": {**_pairs([1.0]), "ours_cpu_s": {"min": 0.779, "median": 0.886, "max": 0.903}}}

    def at(ms: float) -> dict[str, Any]:
        return {
            "build_vs_zip": {**_pairs([1.0]), "ours_extra_cpu_ms_per_file": ms},
            "verify_vs_checksums": _pairs([1.0]),
        }

    files = {"0": base, "1000": at(0.003), "10000": at(0.095), "100000": at(0.167)}
    linear = _row(summary_rows({"curves": {"files": files}}), "linear in file count")
    assert linear.ratio == {"min": 1.758, "median": 1.758, "max": 1.758}
    assert linear.met is False
    assert linear.where == "2 file-count points (left out: 1,000 files)"
    # Only one point above the noise: no ratio, and the row says why.
    files = {"0": base, "1000": at(0.003), "10000": at(0.095)}
    alone = _row(summary_rows({"curves": {"files": files}}), "linear in file count")
    assert (alone.ratio, alone.note) == (None, "needs two file-count points above the noise")


def test_fetch_goal_on_the_full_set_and_the_small_set_for_information() -> None:
    def runs(ours: float, theirs: float) -> dict[str, Any]:
        return {"fetch": [{"wall_s": ours}], "curl_sha256sum": [{"wall_s": theirs}], "runs": 1}

    fetch = {**runs(1.1, 1.0), "full": True, "small": runs(20.0, 1.0)}
    rows = summary_rows({"fetch": fetch})
    goal = _row(rows, "fetch + verify ≤ 1.2×")
    assert (goal.where.startswith("--full"), goal.met, goal.pairs) == (True, True, 1)
    info = _row(rows, "fetch + verify beside")
    assert (info.issue, info.met) == ("12 (info)", False)
