"""manifests — the release manifest: every config hash and component binding of a release.

Inputs: lane results (``<lane>.lane.json``), one per lane, written by ``build lane`` (native
lanes) or by carrying/building the container lane. Output: ``release-manifest.json`` — the release
facts once (product, version, candidate, ``components.model``, client, superseded tags, the
definition's digest) and per lane its component tag, mode, source, profile id, config hash (bytes
SHA-256 for native lanes, semantic SHA-256 for the container lane, never mixed) and the
``SHA256SUMS`` digest with the 10 entries, or the image digests for the container lane.
Invariant: assembling the same lane results gives the same bytes, whatever process built them.
"""

from ninfer_release.manifests._assemble import (
    LANE_RESULT_KIND,
    MANIFEST_KIND,
    MAX_RELEASE_MANIFEST_BYTES,
    LaneResult,
    assemble_release_manifest,
    lane_result_name,
    load_lane_result,
)

__all__ = [
    "LANE_RESULT_KIND",
    "MANIFEST_KIND",
    "MAX_RELEASE_MANIFEST_BYTES",
    "LaneResult",
    "assemble_release_manifest",
    "lane_result_name",
    "load_lane_result",
]
