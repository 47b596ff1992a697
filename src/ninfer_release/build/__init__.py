"""build — plans and executes one lane or a whole release through the stages (DESIGN.md §1, §9).

Inputs: the release definition (``manifests/<version>.yaml``), the staged engine builds
(``DIR/<lane>/``, found by :func:`lane_staged_dir`), optional qualification receipts. Each lane
is read, planned by a pure function (:func:`plan_native_lane`, :func:`plan_image_lane`,
:func:`plan_carried_lane` → :class:`LanePlan`: members, records, checks) and then executed.
Outputs, in a new directory ``OUT`` created atomically: ``OUT/<lane>/`` (each native lane's
11-file asset set, sealed by ``releases``), ``OUT/<lane>.lane.json`` (each lane's result) and
``OUT/release-manifest.json`` (assembled from the lane results, exactly as ``manifest assemble``
does in CI). Progress is reported through :class:`ninfer_release.progress.Progress`: one step per
phase, named ``"<lane>: <phase>"`` (:func:`lane_phase`) with its planned total, advanced in bytes;
:func:`plan_build` gives the same plans (and the totals) and is what ``build --dry-run`` prints.
Every ``OUT`` holds the marker :data:`OUTPUT_MARKER`, which ``--clean`` requires before it
replaces a directory. ``image build``
and ``image carry`` resolve their defaults here too (:func:`resolve_image_build`,
:func:`carried_lane`).
"""

from typing import TYPE_CHECKING

from ninfer_release.lazyexports import lazy_exports

if TYPE_CHECKING:  # the real imports, for type checkers; at run time each loads on first use
    from ninfer_release.build._build import (
        OUTPUT_MARKER,
        RELEASE_MANIFEST_NAME,
        LaneOutcome,
        ReleaseOutcome,
        build_lane,
        build_release,
        documented_route,
        plan_build,
        release_facts,
    )
    from ninfer_release.build._image import (
        ImageBuildInputs,
        ImageBuildOptions,
        ImageOutcome,
        build_image_with_sboms,
        carried_lane,
        image_backend,
        image_epoch,
        read_image_inputs,
        resolve_image_build,
        run_image_lane,
        sbom_renderer,
    )
    from ninfer_release.build._inputs import check_release_inputs, lane_staged_dir
    from ninfer_release.build._native import read_native_inputs, run_native_lane
    from ninfer_release.build._plan import (
        CHECKS,
        BuildPlan,
        ImageInputs,
        ImageWork,
        LanePlan,
        NativeInputs,
        NativeWork,
        PlannedMember,
        lane_phase,
        plan_carried_lane,
        plan_image_lane,
        plan_native_lane,
    )

_EXPORTS = {
    "._build": (
        "OUTPUT_MARKER",
        "RELEASE_MANIFEST_NAME",
        "LaneOutcome",
        "ReleaseOutcome",
        "build_lane",
        "build_release",
        "documented_route",
        "plan_build",
        "release_facts",
    ),
    "._image": (
        "ImageBuildInputs",
        "ImageBuildOptions",
        "ImageOutcome",
        "build_image_with_sboms",
        "carried_lane",
        "image_backend",
        "image_epoch",
        "read_image_inputs",
        "resolve_image_build",
        "run_image_lane",
        "sbom_renderer",
    ),
    "._inputs": (
        "check_release_inputs",
        "lane_staged_dir",
    ),
    "._native": (
        "read_native_inputs",
        "run_native_lane",
    ),
    "._plan": (
        "CHECKS",
        "BuildPlan",
        "ImageInputs",
        "ImageWork",
        "LanePlan",
        "NativeInputs",
        "NativeWork",
        "PlannedMember",
        "lane_phase",
        "plan_carried_lane",
        "plan_image_lane",
        "plan_native_lane",
    ),
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "CHECKS",
    "OUTPUT_MARKER",
    "RELEASE_MANIFEST_NAME",
    "BuildPlan",
    "ImageBuildInputs",
    "ImageBuildOptions",
    "ImageInputs",
    "ImageOutcome",
    "ImageWork",
    "LaneOutcome",
    "LanePlan",
    "NativeInputs",
    "NativeWork",
    "PlannedMember",
    "ReleaseOutcome",
    "build_image_with_sboms",
    "build_lane",
    "build_release",
    "carried_lane",
    "check_release_inputs",
    "documented_route",
    "image_backend",
    "image_epoch",
    "lane_phase",
    "lane_staged_dir",
    "plan_build",
    "plan_carried_lane",
    "plan_image_lane",
    "plan_native_lane",
    "read_image_inputs",
    "read_native_inputs",
    "release_facts",
    "resolve_image_build",
    "run_image_lane",
    "run_native_lane",
    "sbom_renderer",
]
