"""What a native lane's build holds while its set is verified (issue 13: memory at 100k files).

The final verify reads the sealed set as a consumer would; the staged tree (a record and a path
per staged file) and the package plan are let go before it, so they do not add to its peak.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import pytest

import ninfer_release.build._native as native
from flow_support import RELEASE, samples
from ninfer_release.build import build_lane
from ninfer_release.packaging import PackagePlan, StagedTree
from ninfer_release.releases import verify_set


def test_the_final_verify_runs_without_the_staged_tree_or_the_package_plan(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = samples(tmp_path_factory)
    alive: list[tuple[int, int]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        objects = gc.get_objects()
        trees = sum(isinstance(o, StagedTree) for o in objects)
        alive.append((trees, sum(isinstance(o, PackagePlan) for o in objects)))
        return verify_set(*args, **kwargs)

    monkeypatch.setenv("NINFER_DEFLATE_CACHE", "off")
    monkeypatch.setattr(native, "verify_set", spy)
    outcome = build_lane(
        RELEASE, "rtx4090", inputs=src, out=tmp_path / "out", env=dict(os.environ), offline=True
    )
    assert alive == [(0, 0)]  # one verify, with neither alive
    assert outcome.verified is True
