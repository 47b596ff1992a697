"""What a native lane's build holds while its set is verified (issue 13: memory at 100k files).

The final verify reads the sealed set as a consumer would; the staged tree (a record and a path
per staged file) and the package plan are let go before it, so they do not add to its peak.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import ninfer_release.build._native as native
import ninfer_release.sbom._cyclonedx as _cyclonedx
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


def _holders_of(data: bytes, frames: list[FrameType]) -> list[str]:
    """What (by type name) refers to a ``bytes`` equal to ``data`` that is not ``data`` itself:
    any object the collector tracks, and the given frames (their locals)."""
    gc.collect()
    found = []
    referents = [(type(o).__name__, gc.get_referents(o)) for o in gc.get_objects()]
    # A running frame's locals are not among its referents: read them.
    referents += [(f"frame {f.f_code.co_name}", list(f.f_locals.values())) for f in frames]
    for holder, refs in referents:
        for r in refs:
            if isinstance(r, bytes) and r is not data and len(r) == len(data) and r == data:
                found.append(holder)
    return found


def test_the_spdx_bytes_are_not_held_while_the_cyclonedx_document_is_validated(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SPDX document is in its file by then; the seal hashes that file (issue 13: memory)."""
    src = samples(tmp_path_factory)
    monkeypatch.setenv("NINFER_DEFLATE_CACHE", "off")
    first = build_lane(RELEASE, "rtx4090", inputs=src, out=tmp_path / "a", env=dict(os.environ), offline=True)
    (spdx,) = (tmp_path / "a" / "rtx4090").glob("*.spdx.json")
    expected = spdx.read_bytes()
    assert first.verified is True
    holders: list[list[str]] = []
    real = _cyclonedx.validate_cyclonedx_file

    def spy(data: Path) -> list[str]:
        frames: list[FrameType] = []
        f: FrameType | None = sys._getframe(1)
        while f is not None:
            frames.append(f)
            f = f.f_back
        holders.append(_holders_of(expected, frames))
        del frames
        return real(data)

    monkeypatch.setattr(_cyclonedx, "validate_cyclonedx_file", spy)
    outcome = build_lane(
        RELEASE, "rtx4090", inputs=src, out=tmp_path / "b", env=dict(os.environ), offline=True
    )
    assert holders == [[]]  # one CycloneDX validation, with no copy of the SPDX bytes alive
    assert outcome.verified is True
    out = tmp_path / "b" / "rtx4090"
    assert (out / spdx.name).read_bytes() == expected
    # The set binds the file's digest: SHA256SUMS names it as hashed from the file.
    sums = dict(line.split("  ")[::-1] for line in (out / "SHA256SUMS").read_text().splitlines())
    assert sums[spdx.name] == hashlib.sha256(expected).hexdigest()
