"""build — orchestrates one lane or a whole release through the stages (DESIGN.md §1, §9).

Inputs: the release definition (``manifests/<version>.yaml``), the staged engine builds
(``DIR/<lane>/``), optional qualification receipts. Outputs, in a new directory ``OUT`` created
atomically: ``OUT/<lane>/`` (each native lane's 11-file asset set), ``OUT/<lane>.lane.json`` (each
lane's result) and ``OUT/release-manifest.json`` (assembled from the lane results, exactly as
``manifest assemble`` does in CI). Progress is reported through a ``(phase, bytes)`` callback.
"""

from ninfer_release.build._build import (
    RELEASE_MANIFEST_NAME,
    ImageOutcome,
    LaneOutcome,
    ReleaseOutcome,
    build_image_with_sboms,
    build_lane,
    build_release,
    release_facts,
)

__all__ = [
    "RELEASE_MANIFEST_NAME",
    "ImageOutcome",
    "LaneOutcome",
    "ReleaseOutcome",
    "build_image_with_sboms",
    "build_lane",
    "build_release",
    "release_facts",
]
