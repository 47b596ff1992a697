"""The release manifest: assembled from lane results, identical however the lanes were built.

A *lane result* (``<lane>.lane.json``) is what building or carrying one lane leaves beside its
asset set: the release-level facts the lane was built against (identical for every lane of one
release) and the lane's entry of the release manifest. :func:`assemble_release_manifest` checks
that the lane results belong to one release and cover every lane of it, then renders the
manifest from them alone, so a CI matrix (one job per lane) and a single-process build write the
same bytes (DESIGN.md §8).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ninfer_release import strictjson
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.manifests._records import (
    LANE_RESULT_KIND,
    MANIFEST_KIND,
    LaneResult,
    ReleaseManifest,
)

__all__ = ["LANE_RESULT_KIND", "MANIFEST_KIND", "LaneResult"]

#: A lane result is a few KiB (facts + 10 asset names and hashes); 1 MiB is a generous bound
#: checked before reading (docs/reliability.md).
MAX_LANE_RESULT_BYTES = 1 << 20
#: A release manifest holds a few lanes of a few KiB each; same bound (docs/reliability.md).
MAX_RELEASE_MANIFEST_BYTES = 1 << 20


def lane_result_name(lane_id: str) -> str:
    """File name of a lane result: ``<lane>.lane.json``."""
    return f"{lane_id}.lane.json"


def load_lane_result(path: Path) -> LaneResult:
    """Read a lane result file strictly (:meth:`LaneResult.parse`).

    Raises:
        InputError: unreadable, not JSON, not a lane result, or a field missing, unknown or of
            the wrong type, naming the file and the field (exit 4).
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
    return LaneResult.parse_doc(doc, source=str(path), error=InputError)


def _release_problems(results: Sequence[tuple[str, LaneResult]]) -> list[Problem]:
    """Each lane result that belongs to another release than the first, or repeats a lane."""
    problems: list[Problem] = []
    first_src, first = results[0]
    first_facts = first.release.to_json()
    seen: set[str] = set()
    for src, res in results:
        facts = res.release.to_json()
        if facts != first_facts:
            diff = sorted(k for k in set(facts) | set(first_facts) if facts.get(k) != first_facts.get(k))
            problems.append(
                Problem(
                    file=src,
                    field="release",
                    message=f"belongs to another release than {first_src} (differs in {', '.join(diff)})",
                )
            )
        if res.lane_id in seen:
            problems.append(Problem(file=src, field="lane_id", message=f"lane {res.lane_id!r} given twice"))
        seen.add(res.lane_id)
    return problems


def _coverage_problems(first_src: str, expected: Sequence[str], given: Sequence[str]) -> list[Problem]:
    """Every lane of the release has a result, and no result is of another lane."""
    missing = [
        Problem(file=first_src, field="release.lane_ids", message=f"no result for lane {lane!r}")
        for lane in expected
        if lane not in given
    ]
    extra = [
        Problem(
            file=first_src, field="release.lane_ids", message=f"lane {lane!r} is not a lane of this release"
        )
        for lane in given
        if lane not in expected
    ]
    return missing + extra


def assemble_release_manifest(results: Sequence[tuple[str, LaneResult]]) -> bytes:
    """Render ``release-manifest.json`` from ``(source name, lane result)`` pairs.

    Output: :meth:`ReleaseManifest.to_bytes` — the release facts once (``components.model``
    once, the client, the candidate), and ``lanes.<id>`` for every lane.

    Raises:
        IntegrityError: lane results of different releases (different definition digest or
            facts), a lane given twice, or a lane of the release missing (exit 5).
    """
    if not results:
        raise InputError("no lane results given")
    first_src, first = results[0]
    by_lane = {res.lane_id: res for _, res in results}
    problems = _release_problems(results) + _coverage_problems(
        first_src, first.release.lane_ids, list(by_lane)
    )
    if problems:
        raise IntegrityError(problems=problems)
    manifest = ReleaseManifest.of(first.release, {lane: res.entry for lane, res in by_lane.items()})
    return manifest.to_bytes()
