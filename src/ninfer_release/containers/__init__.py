"""containers — OCI images for the container lane: daemonless build, docker backend, carry.

Inputs: an image recipe (``containers/<name>.yaml``, parsed by :func:`parse_recipe`), the lane's
staged inputs (``DIR/rtx5090/``), rendered config/profile bytes (:class:`RenderedInputs`), and a
base image — an OCI layout on disk or a registry reference pinned by digest (a tag is refused).

Outputs of :func:`build_image`: an OCI image layout, one tar that ``docker load``, skopeo
(``oci-archive:``) and umoci accept, and a build record (:class:`ImageBuildResult`). Layers are
deterministic (sorted entries, uid/gid 0, no owner names, mtime = source-date epoch, modes
0644/0755, gzip without name or mtime); ``created`` and our history entries come from the epoch,
so two builds give the same manifest digest (DESIGN.md §5, §7; cases C24, C36, C37).

Backends (:class:`ImageBackend`): :class:`OciBackend` (default, daemonless) and the docker SDK
backend (:class:`DockerBackend`), which loads, tags, smoke-runs (``--network none``) and pushes,
treating an ``errorDetail`` in the Engine API's 200 stream as a failure (C39).

Carry (:func:`carry_image`): re-verify a published image by digest against a registry (or record
it as unverified offline) and record it; nothing is rebuilt.

Terms: *manifest digest* — ``sha256:`` of the exact manifest bytes, the image's identity;
*diff id* — ``sha256:`` of an uncompressed layer tar; *semantic config digest* — what the
container lane binds (RFC 8785 SHA-256 of the parsed engine config).
"""

from typing import TYPE_CHECKING

from ninfer_release.lazyexports import lazy_exports

if TYPE_CHECKING:  # the real imports, for type checkers; at run time each loads on first use
    from ninfer_release.containers._base import BaseLocation, parse_base
    from ninfer_release.containers._base_scan import BasePackage, read_base_packages
    from ninfer_release.containers._build import (
        BoundInput,
        BuiltLayer,
        ImageBackend,
        ImageBuildRequest,
        ImageBuildResult,
        ImagePlan,
        LaidOutImage,
        OciBackend,
        RenderedInputs,
        build_image,
        check_inputs,
        finish_image,
        image_config,
        plan_image,
        read_build_result,
        write_image_layout,
    )
    from ninfer_release.containers._carry import CarryRecord, CheckedBlob, carry_image, check_labels
    from ninfer_release.containers._docker_backend import DockerBackend, PushTarget, docker_host
    from ninfer_release.containers._layers import (
        LayerBlob,
        LayerEntry,
        LayerFile,
        check_layer_path,
        gzip_bytes,
        gzip_header,
        write_layer,
    )
    from ninfer_release.containers._layout import (
        INDEX_FILE,
        LAYOUT_BYTES,
        LAYOUT_FILE,
        LAYOUT_VERSION,
        MT_CONFIG,
        MT_EMPTY,
        MT_INDEX,
        MT_LAYER_GZIP,
        MT_LAYER_TAR,
        MT_MANIFEST,
        REF_NAME,
        blob_dir,
        blob_path,
        empty_index,
        ref_name,
        retag,
        write_blob,
        write_index,
        write_layout_file,
    )
    from ninfer_release.containers._load import StagedImageInfo, load_recipe, read_build_info, render_inputs
    from ninfer_release.containers._recipe import ImageRecipe, LayerItem, LayerSpec, SmokeSpec, parse_recipe
    from ninfer_release.containers._registry import (
        ImageReference,
        RegistryClient,
        RegistryHTTPError,
        parse_reference,
    )
    from ninfer_release.containers._samples import (
        SAMPLE_EPOCH,
        check_sample_base_tool,
        make_sample_base_layout,
        make_sample_rtx5090_inputs,
        sample_layout_step,
        stand_in_commit,
    )
    from ninfer_release.containers._sbom_records import (
        ImageComponentRecord,
        ImageLayerRecord,
        ImageSbomRecords,
        image_sbom_records,
    )

_EXPORTS = {
    "._base": (
        "BaseLocation",
        "parse_base",
    ),
    "._base_scan": (
        "BasePackage",
        "read_base_packages",
    ),
    "._build": (
        "BoundInput",
        "BuiltLayer",
        "ImageBackend",
        "ImageBuildRequest",
        "ImageBuildResult",
        "ImagePlan",
        "LaidOutImage",
        "OciBackend",
        "RenderedInputs",
        "build_image",
        "check_inputs",
        "finish_image",
        "image_config",
        "plan_image",
        "read_build_result",
        "write_image_layout",
    ),
    "._carry": (
        "CarryRecord",
        "CheckedBlob",
        "carry_image",
        "check_labels",
    ),
    "._docker_backend": (
        "DockerBackend",
        "PushTarget",
        "docker_host",
    ),
    "._layers": (
        "LayerBlob",
        "LayerEntry",
        "LayerFile",
        "check_layer_path",
        "gzip_bytes",
        "gzip_header",
        "write_layer",
    ),
    "._layout": (
        "INDEX_FILE",
        "LAYOUT_BYTES",
        "LAYOUT_FILE",
        "LAYOUT_VERSION",
        "MT_CONFIG",
        "MT_EMPTY",
        "MT_INDEX",
        "MT_LAYER_GZIP",
        "MT_LAYER_TAR",
        "MT_MANIFEST",
        "REF_NAME",
        "blob_dir",
        "blob_path",
        "empty_index",
        "ref_name",
        "retag",
        "write_blob",
        "write_index",
        "write_layout_file",
    ),
    "._load": (
        "StagedImageInfo",
        "load_recipe",
        "read_build_info",
        "render_inputs",
    ),
    "._recipe": (
        "ImageRecipe",
        "LayerItem",
        "LayerSpec",
        "SmokeSpec",
        "parse_recipe",
    ),
    "._registry": (
        "ImageReference",
        "RegistryClient",
        "RegistryHTTPError",
        "parse_reference",
    ),
    "._samples": (
        "SAMPLE_EPOCH",
        "check_sample_base_tool",
        "make_sample_base_layout",
        "make_sample_rtx5090_inputs",
        "sample_layout_step",
        "stand_in_commit",
    ),
    "._sbom_records": (
        "ImageComponentRecord",
        "ImageLayerRecord",
        "ImageSbomRecords",
        "image_sbom_records",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "INDEX_FILE",
    "LAYOUT_BYTES",
    "LAYOUT_FILE",
    "LAYOUT_VERSION",
    "MT_CONFIG",
    "MT_EMPTY",
    "MT_INDEX",
    "MT_LAYER_GZIP",
    "MT_LAYER_TAR",
    "MT_MANIFEST",
    "REF_NAME",
    "SAMPLE_EPOCH",
    "BaseLocation",
    "BasePackage",
    "BoundInput",
    "BuiltLayer",
    "CarryRecord",
    "CheckedBlob",
    "DockerBackend",
    "ImageBackend",
    "ImageBuildRequest",
    "ImageBuildResult",
    "ImageComponentRecord",
    "ImageLayerRecord",
    "ImagePlan",
    "ImageRecipe",
    "ImageReference",
    "ImageSbomRecords",
    "LaidOutImage",
    "LayerBlob",
    "LayerEntry",
    "LayerFile",
    "LayerItem",
    "LayerSpec",
    "OciBackend",
    "PushTarget",
    "RegistryClient",
    "RegistryHTTPError",
    "RenderedInputs",
    "SmokeSpec",
    "StagedImageInfo",
    "blob_dir",
    "blob_path",
    "build_image",
    "carry_image",
    "check_inputs",
    "check_labels",
    "check_layer_path",
    "check_sample_base_tool",
    "docker_host",
    "empty_index",
    "finish_image",
    "gzip_bytes",
    "gzip_header",
    "image_config",
    "image_sbom_records",
    "load_recipe",
    "make_sample_base_layout",
    "make_sample_rtx5090_inputs",
    "parse_base",
    "parse_recipe",
    "parse_reference",
    "plan_image",
    "read_base_packages",
    "read_build_info",
    "read_build_result",
    "ref_name",
    "render_inputs",
    "retag",
    "sample_layout_step",
    "stand_in_commit",
    "write_blob",
    "write_image_layout",
    "write_index",
    "write_layer",
    "write_layout_file",
]
