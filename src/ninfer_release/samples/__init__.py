"""samples — sample inputs for the release pipeline (``ninfer-release samples fetch``).

Input: the repo's ``samples/`` data folder — ``pins.json`` (win_amd64 wheels pinned by version
and SHA-256, and the members used from them), ``lanes.json`` (what each lane tree holds),
``standins/`` (engine and DirectStorage stand-in binaries built reproducibly by
``samples/build-standins.sh``) and ``licenses/``.

Output: ``DIR/rtx4090/`` and ``DIR/rtx3090/``, one *staged engine build* per native lane exactly
as docs/staged-inputs.md defines it (``bin/``, ``licenses/``, ``build-info.json``,
``dependencies.lock.json``), plus the marker ``DIR/.ninfer-samples.json``.

Invariants: wheels are verified against their pins before use and cached outside the repo; only
pinned members are extracted, each verified; the same inputs give byte-identical trees; the
output appears atomically; a directory that is not an unmodified previous samples output is never
written into or deleted. Terms: a *stand-in* is a file that is not the real redistributable (the
DirectStorage DLLs), marked ``stand_in: true`` in the lock.
"""

from ninfer_release.samples._fetch import (
    MARKER,
    LaneLayout,
    LayoutStep,
    SamplesResult,
    StepContext,
    fetch_samples,
)
from ninfer_release.samples._plan import (
    FromBytes,
    FromWheel,
    LanePlan,
    PlannedFile,
    SamplesPlan,
    plan_samples,
)
from ninfer_release.samples._spec import Pins, SamplesSpec, WheelMember, WheelPin, load_spec
from ninfer_release.samples._wheels import WheelUse, default_wheel_cache, ensure_wheel, extract_member

__all__ = [
    "MARKER",
    "FromBytes",
    "FromWheel",
    "LaneLayout",
    "LanePlan",
    "LayoutStep",
    "Pins",
    "PlannedFile",
    "SamplesPlan",
    "SamplesResult",
    "SamplesSpec",
    "StepContext",
    "WheelMember",
    "WheelPin",
    "WheelUse",
    "default_wheel_cache",
    "ensure_wheel",
    "extract_member",
    "fetch_samples",
    "load_spec",
    "plan_samples",
]
