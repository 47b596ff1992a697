"""releases — the native asset set (10 hashed entries + ``SHA256SUMS``), verify and publish.

Inputs: a lane's rendered config, loaded staged tree and package recipe (from the lower stages).
Outputs: the 11-file asset set of DESIGN.md §4, written atomically (:func:`build_native_set`);
consumer verification of a set on disk (:func:`verify_set`); publishing a sealed set as one
immutable OCI artifact to a registry or a directory store (:func:`open_publisher`).

Terms: *entry* — one of the 10 hashed files; *set* — the entries plus ``SHA256SUMS``;
*stem* — ``ninfer-<component-tag>-windows-x64``; *release-instance id* — changes whenever the
package bytes do (:func:`release_instance_id`).
"""

from ninfer_release.releases._contract import (
    ENTRY_SUFFIXES,
    SUMS_NAME,
    ZIP_CONFIG_PATH,
    AssetNames,
    names_for_tag,
    package_stem,
    stem_from_names,
)
from ninfer_release.releases._fetch_flow import FetchReport, fetch_route, fetch_set
from ninfer_release.releases._flows import LocatedReport, publish_set, supersede_tags, verify_location
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
from ninfer_release.releases._records import FileRef, LaneFacts, Receipt, release_instance_id
from ninfer_release.releases._seal import (
    SealedSet,
    build_native_set,
    load_receipts,
    package_plan,
    profile_asset,
)
from ninfer_release.releases._verify import VerifyReport, verify_set

__all__ = [
    "ANN_REVISION",
    "ARTIFACT_TYPE",
    "ENTRY_SUFFIXES",
    "SUMS_NAME",
    "SUPERSESSION_TYPE",
    "ZIP_CONFIG_PATH",
    "AssetNames",
    "DirTarget",
    "FetchProgress",
    "FetchReport",
    "Fetched",
    "FileRef",
    "FilesTarget",
    "HttpPolicy",
    "LaneFacts",
    "LocatedReport",
    "OciTarget",
    "PublishRequest",
    "PublishResult",
    "Publisher",
    "PulledFile",
    "PulledSet",
    "Receipt",
    "SealedSet",
    "VerifyReport",
    "build_native_set",
    "fetch_route",
    "fetch_set",
    "is_prerelease",
    "load_receipts",
    "names_for_tag",
    "open_publisher",
    "package_plan",
    "package_stem",
    "parse_target",
    "plan_publish",
    "profile_asset",
    "publish_set",
    "release_instance_id",
    "stem_from_names",
    "supersede_tags",
    "verify_location",
    "verify_set",
]
