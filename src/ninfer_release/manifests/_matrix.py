"""The CI lane matrix of a release definition (``manifest lanes MANIFEST --json``; issue 33 item 8).

The workflow's build jobs come from this, never from a list written into the workflow: one entry
per lane of the definition, in the order the definition's lanes load.
"""

from __future__ import annotations

from typing import Any, Literal

from ninfer_release.manifests._definition import Release
from ninfer_release.manifests._lanes import Lane

#: ``native``: a Windows zip built fresh; ``image``: an OCI image built; ``carried``: bytes of an
#: earlier release, re-verified by digest, nothing built.
MatrixKind = Literal["native", "image", "carried"]


def matrix_kind(lane: Lane) -> MatrixKind:
    """The CI job kind of ``lane``: ``carried`` for ``mode: carry`` whatever its kind, else
    ``native`` for ``windows-zip`` and ``image`` for ``oci-image`` (docs/release-definition.md)."""
    if lane.mode == "carry":
        return "carried"
    return "native" if lane.kind == "windows-zip" else "image"


def lane_matrix(release: Release) -> dict[str, Any]:
    """The lane matrix of ``release``: ``{"version", "lanes": [{"lane", "kind", "component_tag",
    "profile_id", "mode"}...]}`` in ``Release.lanes`` order, plus ``"native"`` (the native lane ids, the
    lanes a final publication needs qualified). Pure: raises nothing (the definition is valid)."""
    lanes = [
        {
            "lane": lane_id,
            "kind": matrix_kind(lane),
            "component_tag": lane.component_tag,
            "profile_id": lane.profile_id,
            "mode": lane.mode,
        }
        for lane_id, lane in release.lanes.items()
    ]
    return {
        "version": release.version,
        "lanes": lanes,
        "native": [e["lane"] for e in lanes if e["kind"] == "native"],
    }
