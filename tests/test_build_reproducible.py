"""Rebuilding v0.13.1 from the same inputs in a hostile environment gives the same bytes (DESIGN.md §5).

The second build runs as a separate process with umask 077, another time zone and locale, from
another working directory, on a copy of the staged inputs created in reverse order with other
mtimes and modes. Every file of the output (both 11-file sets, the lane results, the release
manifest) must be byte-identical to the session build.
"""

from __future__ import annotations

import filecmp
import os
import shutil
from pathlib import Path

import pytest

from flow_support import RELEASE, ok, release_out, run_nr, samples, tree_digests
from ninfer_release.build import OUTPUT_MARKER


def _hostile_copy(src: Path, dst: Path) -> None:
    """Copy ``src`` into ``dst`` in reverse name order, with other mtimes and modes."""
    entries = sorted(src.rglob("*"), reverse=True)
    dst.mkdir()
    for d in sorted((p for p in entries if p.is_dir()), key=lambda p: len(p.parts)):
        (dst / d.relative_to(src)).mkdir(parents=True, exist_ok=True)
    for i, p in enumerate(p for p in entries if p.is_file()):
        target = dst / p.relative_to(src)
        shutil.copyfile(p, target)  # contents only: no mode or times carried over
        target.chmod(0o600 if i % 2 else 0o755)
        os.utime(target, (1_000_000_000 + 86_400 * i, 1_000_000_000 + 86_400 * i))
    for d in (p for p in dst.rglob("*") if p.is_dir()):
        d.chmod(0o700)
        os.utime(d, (2_000_000_000, 2_000_000_000))


def test_rebuild_in_another_environment_is_byte_identical(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """C-repro: umask 077, TZ, LC_ALL, cwd, input order/mtimes/modes change nothing in any output byte."""
    first = release_out(tmp_path_factory)
    inputs = tmp_path / "staged copy (reversed)"
    _hostile_copy(samples(tmp_path_factory), inputs)
    # The copy really differs in what must not matter.
    some = next(p for p in sorted(inputs.rglob("*.dll")))
    original = samples(tmp_path_factory) / some.relative_to(inputs)
    assert some.stat().st_mtime != original.stat().st_mtime

    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    second = tmp_path / "out"
    res = run_nr(
        "build",
        "release",
        RELEASE,
        "--inputs",
        inputs,
        "--out",
        second,
        "--offline",
        "--workers",
        "1",
        env={"TZ": "Pacific/Chatham", "LC_ALL": "C", "LANG": "C", "HOSTNAME": "other-host"},
        cwd=cwd,
        umask=0o077,
    )
    ok(res)

    a, b = tree_digests(first), tree_digests(second)
    assert sorted(a) == sorted(b)
    assert sorted(a) == sorted(
        [f"{lane}/{n}" for lane in ("rtx3090", "rtx4090") for n in os.listdir(first / lane)]
        + ["release-manifest.json", "rtx3090.lane.json", "rtx4090.lane.json", "rtx5090.lane.json"]
        + [OUTPUT_MARKER]
    )
    differing = sorted(k for k in a if a[k] != b[k])
    assert differing == []
    match, mismatch, errors = filecmp.cmpfiles(first, second, sorted(a), shallow=False)
    assert (mismatch, errors) == ([], [])
    assert len(match) == 2 * 11 + 5  # both sets, 3 lane results, the manifest, the marker
