"""build — orchestrates one lane or a whole release through the stages (DESIGN.md §1, §9).

Inputs: the release definition (``manifests/<version>.yaml``), the staged engine builds
(``DIR/<lane>/``), optional qualification receipts. Outputs, in a new directory ``OUT`` created
atomically: ``OUT/<lane>/`` (each native lane's 11-file asset set), ``OUT/<lane>.lane.json`` (each
lane's result) and ``OUT/release-manifest.json`` (assembled from the lane results, exactly as
``manifest assemble`` does in CI). Progress is reported through a ``(phase, bytes)`` callback, phases named
``"<lane>: <phase>"`` (:func:`lane_phase`); :func:`plan_build` gives the totals and is what
``build --dry-run`` prints. Every ``OUT`` holds the marker :data:`OUTPUT_MARKER`, which
``--clean`` requires before it replaces a directory.
"""

from ninfer_release.build._build import (
    OUTPUT_MARKER,
    RELEASE_MANIFEST_NAME,
    BuildPlan,
    ImageOutcome,
    LaneOutcome,
    LanePlan,
    PlannedMember,
    ReleaseOutcome,
    build_image_with_sboms,
    build_lane,
    build_release,
    lane_phase,
    plan_build,
    release_facts,
)
from ninfer_release.build._image import (
    ImageBuildInputs,
    ImageBuildOptions,
    carried_lane,
    image_backend,
    image_epoch,
    resolve_image_build,
)
from ninfer_release.build._inputs import check_release_inputs, lane_staged_dir

__all__ = [
    "OUTPUT_MARKER",
    "RELEASE_MANIFEST_NAME",
    "BuildPlan",
    "ImageBuildInputs",
    "ImageBuildOptions",
    "ImageOutcome",
    "LaneOutcome",
    "LanePlan",
    "PlannedMember",
    "ReleaseOutcome",
    "build_image_with_sboms",
    "build_lane",
    "build_release",
    "carried_lane",
    "check_release_inputs",
    "image_backend",
    "image_epoch",
    "lane_phase",
    "lane_staged_dir",
    "plan_build",
    "release_facts",
    "resolve_image_build",
]
