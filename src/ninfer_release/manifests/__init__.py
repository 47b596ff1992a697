"""manifests — the release definition and the release manifest.

The release definition (``manifests/<version>.yaml``, "the staged manifest" of the release notes) is
read here (:func:`load_release`): a frozen, validated :class:`Release` with its lanes, the profiles
they name and the records of carried containers (``releases/<version>/<lane>.yaml``,
:func:`load_carried_record`); every problem is reported at once (file + field path). Stages below
``releases`` (``packaging``, ``containers``, ``sbom``) use its types, so this stage sits just above
``profiles`` (docs/architecture.md).

The release manifest: every config hash and component binding of a release. Its records
(:class:`ReleaseManifest`, the lane entries, :class:`LaneResult`) are typed (``_records.py``),
each with one ``to_bytes()`` and one strict ``parse()``.

Exports load lazily (:mod:`ninfer_release.lazyexports`): ``verify`` reads the records without
loading the definition loader (YAML, Jinja2).

Inputs: lane results (``<lane>.lane.json``), one per lane, written by ``build lane`` (native
lanes) or by carrying/building the container lane. Output: ``release-manifest.json`` — the release
facts once (product, version, candidate, ``components.model``, client, superseded tags, the
definition's digest) and per lane its component tag, mode, source, profile id, config hash (bytes
SHA-256 for native lanes, semantic SHA-256 for the container lane, never mixed) and the
``SHA256SUMS`` digest with the 10 entries, or the image digests for the container lane.
Invariant: assembling the same lane results gives the same bytes, whatever process built them.
"""

from typing import TYPE_CHECKING

from ninfer_release.lazyexports import lazy_exports

if TYPE_CHECKING:  # the real imports, for type checkers; at run time each loads on first use
    from ninfer_release.manifests._assemble import (
        MAX_RELEASE_MANIFEST_BYTES,
        assemble_release_manifest,
        lane_result_name,
        load_lane_result,
    )
    from ninfer_release.manifests._carried import CarriedImage, load_carried_record
    from ninfer_release.manifests._definition import (
        DEFAULT_ASSET_BUDGET,
        ClientBinding,
        ModelBinding,
        Release,
        Superseded,
        check_base_url,
        load_release,
        render_release,
    )
    from ninfer_release.manifests._lanes import Lane
    from ninfer_release.manifests._records import (
        LANE_RESULT_KIND,
        MANIFEST_KIND,
        BaseImageRef,
        CarriedBindings,
        CarriedConfig,
        CarriedLaneEntry,
        DocumentedRoutes,
        ImageLaneEntry,
        ImageOutputs,
        LaneEntry,
        LaneResult,
        NativeLaneEntry,
        OutputRef,
        ReleaseFacts,
        ReleaseManifest,
        SbomOutputs,
        lane_entry_type,
    )
    from ninfer_release.manifests._refs import ConfigHash, FileRef, Rollback

_EXPORTS = {
    "._assemble": (
        "MAX_RELEASE_MANIFEST_BYTES",
        "assemble_release_manifest",
        "lane_result_name",
        "load_lane_result",
    ),
    "._definition": (
        "DEFAULT_ASSET_BUDGET",
        "ClientBinding",
        "ModelBinding",
        "Release",
        "Superseded",
        "check_base_url",
        "load_release",
        "render_release",
    ),
    "._carried": (
        "CarriedImage",
        "load_carried_record",
    ),
    "._lanes": ("Lane",),
    "._refs": ("ConfigHash", "FileRef", "Rollback"),
    "._records": (
        "BaseImageRef",
        "CarriedBindings",
        "CarriedConfig",
        "ImageOutputs",
        "OutputRef",
        "SbomOutputs",
        "LANE_RESULT_KIND",
        "MANIFEST_KIND",
        "CarriedLaneEntry",
        "DocumentedRoutes",
        "ImageLaneEntry",
        "LaneEntry",
        "LaneResult",
        "NativeLaneEntry",
        "ReleaseFacts",
        "ReleaseManifest",
        "lane_entry_type",
    ),
}

__all__ = [
    "DEFAULT_ASSET_BUDGET",
    "LANE_RESULT_KIND",
    "MANIFEST_KIND",
    "MAX_RELEASE_MANIFEST_BYTES",
    "BaseImageRef",
    "CarriedBindings",
    "CarriedConfig",
    "CarriedImage",
    "CarriedLaneEntry",
    "ClientBinding",
    "ConfigHash",
    "DocumentedRoutes",
    "FileRef",
    "ImageLaneEntry",
    "ImageOutputs",
    "Lane",
    "LaneEntry",
    "LaneResult",
    "ModelBinding",
    "NativeLaneEntry",
    "OutputRef",
    "Release",
    "ReleaseFacts",
    "ReleaseManifest",
    "Rollback",
    "SbomOutputs",
    "Superseded",
    "assemble_release_manifest",
    "check_base_url",
    "lane_entry_type",
    "lane_result_name",
    "load_carried_record",
    "load_lane_result",
    "load_release",
    "render_release",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
