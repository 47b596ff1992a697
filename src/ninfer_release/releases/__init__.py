"""releases — the native asset set (10 hashed entries + ``SHA256SUMS``), verify and publish.

Inputs: a lane's rendered config, loaded staged tree and package recipe (from the lower stages).
Outputs: the 11-file asset set of DESIGN.md §4, sealed from a built package (:func:`seal_native_set`;
the build stage plans and builds the package);
qualification receipts, schema 2 (:class:`Receipt`: one strict ``parse``, one ``to_bytes``;
:func:`read_receipts`, :func:`bind_receipts`, :func:`receipt_template`); consumer verification of
a set on disk (:func:`verify_set`); what changed between two releases, per lane
(:func:`diff_releases`); publishing a sealed set as one immutable OCI artifact to a registry or a
directory store (:func:`open_publisher`).

Terms: *entry* — one of the 10 hashed files; *set* — the entries plus ``SHA256SUMS``;
*stem* — ``ninfer-<component-tag>-windows-x64``; *release-instance id* — changes whenever the
package bytes do (:func:`release_instance_id`).
"""

from typing import TYPE_CHECKING

from ninfer_release.lazyexports import lazy_exports

if TYPE_CHECKING:  # the real imports, for type checkers; at run time each loads on first use
    from ninfer_release.releases._budget import check_package_budget
    from ninfer_release.releases._contract import (
        ENTRY_SUFFIXES,
        SUMS_NAME,
        ZIP_CONFIG_PATH,
        AssetNames,
        names_for_tag,
        package_stem,
        stem_from_names,
        zip_spdx_path,
    )
    from ninfer_release.releases._diff import (
        ComponentChanges,
        FieldChange,
        LaneDiff,
        ReleaseDiff,
        diff_releases,
        route_changes,
    )
    from ninfer_release.releases._export import export_verifier, verifier_source
    from ninfer_release.releases._fetch_flow import FetchReport, fetch_route, fetch_set
    from ninfer_release.releases._flows import (
        LocatedReport,
        MarkerPlacement,
        SignatureCheck,
        plan_supersession,
        publish_set,
        qualification_phrase,
        store_path,
        supersede_tags,
        verify_location,
    )
    from ninfer_release.releases._http_fetch import Fetched, FetchProgress, HttpPolicy
    from ninfer_release.releases._publish import (
        ANN_REVISION,
        ARTIFACT_TYPE,
        SUPERSESSION_TYPE,
        DirTarget,
        FilesTarget,
        OciTarget,
        Publisher,
        PublishRequest,
        PublishResult,
        PulledFile,
        PulledSet,
        is_prerelease,
        open_publisher,
        parse_target,
        plan_publish,
    )
    from ninfer_release.releases._receipts import (
        RECEIPT_SCHEMA,
        Binding,
        BoundReceipt,
        Equivalence,
        GateLedger,
        LoadedReceipt,
        Qualification,
        Receipt,
        Scratch,
        bind_receipts,
        merge_gates,
        read_receipt_file,
        read_receipts,
        receipt_template,
    )
    from ninfer_release.releases._records import FileRef, LaneFacts, release_instance_id
    from ninfer_release.releases._seal import (
        BuiltPackage,
        SealedSet,
        SealInputs,
        lane_facts,
        package_plan,
        profile_asset,
        seal_native_set,
    )
    from ninfer_release.releases._sign_flow import sign_local, sign_published
    from ninfer_release.releases._signing import load_signing_key, load_verifying_key
    from ninfer_release.releases._toolchain import ResolvedDistribution, installed_toolchain
    from ninfer_release.releases._verify import VerifyReport, verify_set

_EXPORTS = {
    "._budget": ("check_package_budget",),
    "._contract": (
        "ENTRY_SUFFIXES",
        "SUMS_NAME",
        "ZIP_CONFIG_PATH",
        "AssetNames",
        "names_for_tag",
        "package_stem",
        "stem_from_names",
        "zip_spdx_path",
    ),
    "._diff": (
        "ComponentChanges",
        "FieldChange",
        "LaneDiff",
        "ReleaseDiff",
        "diff_releases",
        "route_changes",
    ),
    "._export": (
        "export_verifier",
        "verifier_source",
    ),
    "._fetch_flow": (
        "FetchReport",
        "fetch_route",
        "fetch_set",
    ),
    "._flows": (
        "LocatedReport",
        "MarkerPlacement",
        "SignatureCheck",
        "plan_supersession",
        "store_path",
        "publish_set",
        "qualification_phrase",
        "supersede_tags",
        "verify_location",
    ),
    "._http_fetch": (
        "Fetched",
        "FetchProgress",
        "HttpPolicy",
    ),
    "._publish": (
        "ANN_REVISION",
        "ARTIFACT_TYPE",
        "SUPERSESSION_TYPE",
        "DirTarget",
        "FilesTarget",
        "OciTarget",
        "Publisher",
        "PublishRequest",
        "PublishResult",
        "PulledFile",
        "PulledSet",
        "is_prerelease",
        "open_publisher",
        "parse_target",
        "plan_publish",
    ),
    "._receipts": (
        "RECEIPT_SCHEMA",
        "Binding",
        "BoundReceipt",
        "Equivalence",
        "GateLedger",
        "LoadedReceipt",
        "Qualification",
        "Receipt",
        "Scratch",
        "bind_receipts",
        "merge_gates",
        "read_receipt_file",
        "read_receipts",
        "receipt_template",
    ),
    "._records": (
        "FileRef",
        "LaneFacts",
        "release_instance_id",
    ),
    "._seal": (
        "BuiltPackage",
        "SealedSet",
        "SealInputs",
        "lane_facts",
        "package_plan",
        "profile_asset",
        "seal_native_set",
    ),
    "._toolchain": ("ResolvedDistribution", "installed_toolchain"),
    "._sign_flow": (
        "sign_local",
        "sign_published",
    ),
    "._signing": (
        "load_signing_key",
        "load_verifying_key",
    ),
    "._verify": (
        "VerifyReport",
        "verify_set",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "ANN_REVISION",
    "ARTIFACT_TYPE",
    "ENTRY_SUFFIXES",
    "RECEIPT_SCHEMA",
    "SUMS_NAME",
    "SUPERSESSION_TYPE",
    "ZIP_CONFIG_PATH",
    "AssetNames",
    "Binding",
    "BoundReceipt",
    "BuiltPackage",
    "ComponentChanges",
    "DirTarget",
    "Equivalence",
    "FetchProgress",
    "FetchReport",
    "Fetched",
    "FieldChange",
    "FileRef",
    "FilesTarget",
    "GateLedger",
    "HttpPolicy",
    "LaneDiff",
    "LaneFacts",
    "LoadedReceipt",
    "LocatedReport",
    "MarkerPlacement",
    "OciTarget",
    "PublishRequest",
    "PublishResult",
    "Publisher",
    "PulledFile",
    "PulledSet",
    "Qualification",
    "Receipt",
    "ReleaseDiff",
    "ResolvedDistribution",
    "Scratch",
    "SealInputs",
    "SealedSet",
    "SignatureCheck",
    "VerifyReport",
    "bind_receipts",
    "check_package_budget",
    "diff_releases",
    "export_verifier",
    "fetch_route",
    "fetch_set",
    "installed_toolchain",
    "is_prerelease",
    "lane_facts",
    "load_signing_key",
    "load_verifying_key",
    "merge_gates",
    "names_for_tag",
    "open_publisher",
    "package_plan",
    "package_stem",
    "parse_target",
    "plan_publish",
    "plan_supersession",
    "profile_asset",
    "publish_set",
    "qualification_phrase",
    "read_receipt_file",
    "read_receipts",
    "receipt_template",
    "release_instance_id",
    "route_changes",
    "seal_native_set",
    "sign_local",
    "sign_published",
    "stem_from_names",
    "store_path",
    "supersede_tags",
    "verifier_source",
    "verify_location",
    "verify_set",
    "zip_spdx_path",
]
