"""CI is the distributed engine: lanes built in separate processes and directories, then
``manifest assemble``, give the release manifest a single-process ``build release`` writes (DESIGN.md §8).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_support import (
    OTHER_EPOCH,
    RELEASE,
    Result,
    cli,
    ok,
    release_out,
    samples,
    start_nr,
    tree_digests,
)
from ninfer_release.build import OUTPUT_MARKER


@pytest.fixture(scope="module")
def lane_jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One ``build lane`` process per lane, each with its own output directory (as the CI matrix)."""
    src = samples(tmp_path_factory)
    base = tmp_path_factory.mktemp("matrix")
    outs = {"rtx4090": base / "A", "rtx3090": base / "B", "rtx5090": base / "C"}
    procs = {
        lane: start_nr(
            "build", "lane", lane, "--release", RELEASE, "--inputs", src, "--out", out, "--offline"
        )
        for lane, out in outs.items()
    }
    for proc in procs.values():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stdout + stderr
    return outs


def test_assemble_over_separate_processes_equals_build_release(
    tmp_path_factory: pytest.TempPathFactory, lane_jobs: dict[str, Path], tmp_path: Path
) -> None:
    """Three ``build lane`` processes (A: rtx4090, B: rtx3090, C: rtx5090 carried, --offline) then
    ``manifest assemble A/*.lane.json B/*.lane.json C/*.lane.json`` equals ``release-manifest.json``
    byte for byte."""
    single = release_out(tmp_path_factory)
    out = tmp_path / "release-manifest.json"
    results = [lane_jobs[lane] / f"{lane}.lane.json" for lane in ("rtx4090", "rtx3090", "rtx5090")]
    res = cli("manifest", "assemble", *results, "--out", out)
    ok(res)
    assert out.read_bytes() == (single / "release-manifest.json").read_bytes()
    # The order of the lane results on the command line does not matter.
    again = tmp_path / "reordered.json"
    ok(cli("manifest", "assemble", *reversed(results), "--out", again))
    assert again.read_bytes() == out.read_bytes()


def test_per_lane_outputs_equal_the_single_process_outputs(
    tmp_path_factory: pytest.TempPathFactory, lane_jobs: dict[str, Path]
) -> None:
    """Each matrix job's set and lane result are byte-identical to the single-process build's."""
    single = release_out(tmp_path_factory)
    for lane, out in lane_jobs.items():
        digests = tree_digests(out)
        want = {
            k: v
            for k, v in tree_digests(single).items()
            if k.startswith(f"{lane}/") or k in (f"{lane}.lane.json", OUTPUT_MARKER)
        }
        assert digests == want, lane
        assert len(digests) == (13 if lane != "rtx5090" else 2)


def test_lane_result_of_another_release_is_refused(lane_jobs: dict[str, Path], tmp_path: Path) -> None:
    """A lane result built against another release (other SOURCE_DATE_EPOCH) cannot be mixed in: exit 5,
    naming the foreign file and what differs; nothing is written."""
    foreign = tmp_path / "D"
    ok(
        cli(
            "build",
            "lane",
            "rtx5090",
            "--release",
            RELEASE,
            "--inputs",
            tmp_path,
            "--out",
            foreign,
            "--offline",
            env={"SOURCE_DATE_EPOCH": OTHER_EPOCH},
        )
    )
    out = tmp_path / "release-manifest.json"
    res = cli(
        "manifest",
        "assemble",
        lane_jobs["rtx4090"] / "rtx4090.lane.json",
        lane_jobs["rtx3090"] / "rtx3090.lane.json",
        foreign / "rtx5090.lane.json",
        "--out",
        out,
    )
    assert res.code == 5, res.text
    assert "rtx5090.lane.json: release: belongs to another release" in res.err
    assert "source_date_epoch" in res.err
    assert not out.exists()


def _assemble(*paths: Path, out: Path) -> Result:
    return cli("manifest", "assemble", *paths, "--out", out)


def test_lane_missing_or_given_twice_is_refused(lane_jobs: dict[str, Path], tmp_path: Path) -> None:
    """A release manifest needs exactly one result per lane of the definition (exit 5 otherwise)."""
    a = lane_jobs["rtx4090"] / "rtx4090.lane.json"
    b = lane_jobs["rtx3090"] / "rtx3090.lane.json"
    c = lane_jobs["rtx5090"] / "rtx5090.lane.json"
    res = _assemble(a, b, out=tmp_path / "m1.json")
    assert res.code == 5, res.text
    assert "no result for lane 'rtx5090'" in res.err
    res = _assemble(a, b, c, a, out=tmp_path / "m2.json")
    assert res.code == 5, res.text
    assert "lane 'rtx4090' given twice" in res.err
    assert not (tmp_path / "m1.json").exists() and not (tmp_path / "m2.json").exists()


def test_assemble_never_overwrites(lane_jobs: dict[str, Path], tmp_path: Path) -> None:
    """``--out`` names a new file: an existing one is kept (exit 4) -- CI never clobbers a manifest."""
    out = tmp_path / "release-manifest.json"
    out.write_bytes(b"keep\n")
    paths = [lane_jobs[lane] / f"{lane}.lane.json" for lane in ("rtx4090", "rtx3090", "rtx5090")]
    res = _assemble(*paths, out=out)
    assert res.code == 4, res.text
    assert out.read_bytes() == b"keep\n"


@pytest.mark.parametrize("which", ["release-manifest", "component-manifest", "truncated", "missing"])
def test_what_is_not_a_lane_result_is_an_input_error(
    tmp_path_factory: pytest.TempPathFactory, lane_jobs: dict[str, Path], tmp_path: Path, which: str
) -> None:
    """Handing ``manifest assemble`` something else (a release manifest, a set's component manifest,
    a cut-off file, no file) is exit 4 naming that file; nothing is written."""
    single = release_out(tmp_path_factory)
    bad = tmp_path / f"{which}.json"
    if which == "release-manifest":
        bad.write_bytes((single / "release-manifest.json").read_bytes())
    elif which == "component-manifest":
        bad.write_bytes(next((single / "rtx4090").glob("*.manifest.json")).read_bytes())
    elif which == "truncated":
        data = (lane_jobs["rtx5090"] / "rtx5090.lane.json").read_bytes()
        bad.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out.json"
    paths = [lane_jobs["rtx4090"] / "rtx4090.lane.json", lane_jobs["rtx3090"] / "rtx3090.lane.json", bad]
    res = _assemble(*paths, out=out)
    assert res.code == 4, res.text
    assert res.err.startswith(f"error: {bad}")
    assert not out.exists()
