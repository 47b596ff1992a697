"""The release manifest: assembled from lane results, identical however the lanes were built.

A *lane result* (``<lane>.lane.json``) is what building or carrying one lane leaves beside its
asset set: the release-level facts the lane was built against (identical for every lane of one
release) and the lane's entry of the release manifest. :func:`assemble_release_manifest` checks
that the lane results belong to one release and cover every lane of it, then renders the
manifest from them alone, so a CI matrix (one job per lane) and a single-process build write the
same bytes (DESIGN.md §8).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import strictjson
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.jsonbytes import dumps_stable

LANE_RESULT_KIND = "ninfer-release/lane-result"
MANIFEST_KIND = "ninfer-release/release-manifest"
#: A lane result is a few KiB (facts + 10 asset names and hashes); 1 MiB is a generous bound
#: checked before reading (docs/reliability.md).
MAX_LANE_RESULT_BYTES = 1 << 20
#: A release manifest holds a few lanes of a few KiB each; same bound (docs/reliability.md).
MAX_RELEASE_MANIFEST_BYTES = 1 << 20


@dataclass(frozen=True, kw_only=True)
class LaneResult:
    """One lane's result: the release facts it was built against and its manifest entry."""

    lane_id: str
    release: Mapping[str, Any]
    entry: Mapping[str, Any]

    def as_bytes(self) -> bytes:
        """Stable JSON bytes of the lane result file."""
        return dumps_stable(
            {
                "schema": 1,
                "kind": LANE_RESULT_KIND,
                "lane_id": self.lane_id,
                "release": dict(self.release),
                "entry": dict(self.entry),
            }
        )


def lane_result_name(lane_id: str) -> str:
    """File name of a lane result: ``<lane>.lane.json``."""
    return f"{lane_id}.lane.json"


def load_lane_result(path: Path) -> LaneResult:
    """Read a lane result file.

    Raises:
        InputError: unreadable, not JSON, or not a lane result (exit 4).
    """
    doc = strictjson.read(path, limit=MAX_LANE_RESULT_BYTES)
    if not isinstance(doc, dict) or doc.get("kind") != LANE_RESULT_KIND:
        raise InputError(
            problems=[
                Problem(
                    file=str(path), field="kind", message=f"not a lane result (expected {LANE_RESULT_KIND!r})"
                )
            ]
        )
    missing = [k for k in ("lane_id", "release", "entry") if not isinstance(doc.get(k), str | dict)]
    if missing:
        raise InputError(problems=[Problem(file=str(path), field=k, message="missing") for k in missing])
    return LaneResult(lane_id=doc["lane_id"], release=doc["release"], entry=doc["entry"])


def assemble_release_manifest(results: Sequence[tuple[str, LaneResult]]) -> bytes:
    """Render ``release-manifest.json`` from ``(source name, lane result)`` pairs.

    Output: stable JSON (sorted keys, LF, trailing newline) with the release facts once
    (``components.model`` once, the client, the candidate), and ``lanes.<id>`` for every lane.

    Raises:
        IntegrityError: lane results of different releases (different definition digest or
            facts), a lane given twice, or a lane of the release missing (exit 5).
    """
    problems: list[Problem] = []
    if not results:
        raise InputError("no lane results given")
    first_src, first = results[0]
    by_lane: dict[str, LaneResult] = {}
    for src, res in results:
        if res.release != first.release:
            diff = sorted(
                k for k in set(res.release) | set(first.release) if res.release.get(k) != first.release.get(k)
            )
            problems.append(
                Problem(
                    file=src,
                    field="release",
                    message=f"belongs to another release than {first_src} (differs in {', '.join(diff)})",
                )
            )
        if res.lane_id in by_lane:
            problems.append(Problem(file=src, field="lane_id", message=f"lane {res.lane_id!r} given twice"))
        by_lane[res.lane_id] = res
    expected = list(first.release.get("lane_ids", []))
    for lane in expected:
        if lane not in by_lane:
            problems.append(
                Problem(file=first_src, field="release.lane_ids", message=f"no result for lane {lane!r}")
            )
    for lane in by_lane:
        if lane not in expected:
            problems.append(
                Problem(
                    file=first_src,
                    field="release.lane_ids",
                    message=f"lane {lane!r} is not a lane of this release",
                )
            )
    if problems:
        raise IntegrityError(problems=problems)
    release = dict(first.release)
    release.pop("lane_ids", None)
    doc = {
        "schema": 1,
        "kind": MANIFEST_KIND,
        **release,
        "lanes": {lane: dict(by_lane[lane].entry) for lane in sorted(by_lane)},
    }
    return dumps_stable(doc)
