"""sbom — SPDX 2.3 file inventories and CycloneDX 1.6 dependency inventories.

Inputs are plain records defined here (the lead maps packaging's results onto them):
:class:`FileRecord` (one zip member with SHA-1/SHA-256, licence, copyright), :class:`DependencyRecord`
(one resolved dependency: vendored source, redistributable package with its shipped files, or
the engine's own files) and :class:`PeInfo` (what :func:`read_pe` reads from a DLL/EXE).

Outputs are exact bytes:

* :func:`spdx_file_inventory` — the package's SPDX 2.3 JSON (spdx-tools writer). It lists every
  file of the zip except itself (it is inside the zip and cannot carry its own hash): it is
  named in ``packageVerificationCodeExcludedFiles`` and left out of the verification code.
* :func:`cyclonedx_dependency_inventory` — the lane's CycloneDX 1.6 JSON (cyclonedx-python-lib),
  with a PE-import dependency graph and a PE-version vs lock cross-check.
* :func:`image_cyclonedx` / :func:`image_spdx` (both: :func:`image_sboms`) — the SBOMs of a built
  container image from ``containers.ImageSbomRecords``: CycloneDX 1.6 with the image, its base and
  layers by digest and the components our layers add (engine config with its semantic digest);
  SPDX 2.3 inventory of the files our layers add. Written as ``sbom.cdx.json`` / ``sbom.spdx.json``
  beside the image build's ``image.json``.
* :func:`write_spdx3` — the SPDX 3.0.1 JSON-LD of a sealed set or an image build output, written
  beside it (``sbom spdx3``), from the documents it holds after verifying them (issue 14).
* :func:`draft_lock` — a ``dependencies.lock.json`` draft from a staged tree's PE files and the
  curated catalog, with ``TODO(lock init)`` markers for what neither says (``lock init``).

Invariants: nothing comes from the clock (times from the source-date epoch), namespaces and
serial numbers are UUIDv5 of the release identity (and, for SPDX, the content), identifiers are
explicit and checked unique, and both documents are validated before they are returned. The
verifier side gets :func:`validate_spdx_bytes`, :func:`validate_cyclonedx_bytes`,
:func:`parse_spdx_files` and :func:`parse_cyclonedx_hashes`, and :func:`check_spdx_bytes` /
:func:`check_cyclonedx_bytes` (validation and those maps from one parse of the document), and
:func:`check_spdx_file` / :func:`check_cyclonedx_file` (the same, read from the file piece by
piece when the document is one our writers make; ``None`` otherwise).

Terms: *LicenseRef* — an ``LicenseRef-<id>`` licence not on the SPDX list, whose text is curated in
the repo's ``sbom/licenses/<id>.txt``; *stand-in* — a sample file that is not the real
redistributable, always flagged (``ninfer:stand-in=true``); *bom-ref* — ``file:<zip path>``,
``vendored:<name>@<version>``, ``package:<name>@<version>``, ``tool:<name>@<version>``.
"""

from typing import TYPE_CHECKING

from ninfer_release.lazyexports import lazy_exports

if TYPE_CHECKING:  # the real imports, for type checkers; at run time each loads on first use
    from ninfer_release.sbom._catalog import CatalogEntry, apply_catalog, check_against_catalog, load_catalog
    from ninfer_release.sbom._cyclonedx import (
        PROP_PATH,
        PROP_STAND_IN,
        CdxCheck,
        check_cyclonedx_bytes,
        check_cyclonedx_file,
        cross_check_cyclonedx,
        cyclonedx_dependency_inventory,
        cyclonedx_root_sha256,
        file_bom_ref,
        package_bom_ref,
        parse_cyclonedx_hashes,
        prewarm_validators,
        started_prewarm,
        validate_cyclonedx_bytes,
        vendored_bom_ref,
    )
    from ninfer_release.sbom._ids import check_base_uri, spdx_file_id, spdx_package_id, uri_part, uuid5_url
    from ninfer_release.sbom._image import (
        IMAGE_CDX_NAME,
        IMAGE_SPDX_NAME,
        ImageSboms,
        image_cyclonedx,
        image_license_refs,
        image_purl,
        image_sbom_digests,
        image_sboms,
        image_spdx,
    )
    from ninfer_release.sbom._license import (
        combine_licenses,
        license_refs_of,
        license_text_path,
        load_license_texts,
        normalize_license_expression,
    )
    from ninfer_release.sbom._lockdraft import DraftedFile, LockDraft, draft_lock
    from ninfer_release.sbom._pe import (
        check_pe_against_lock,
        cuda_version_from_strings,
        pe_component_version,
        pe_version_summary,
        read_pe,
        read_pe_bytes,
        stand_in_marker,
    )
    from ninfer_release.sbom._purl import canonical_purl, normalize_purl, purls_equal
    from ninfer_release.sbom._records import (
        DependencyRecord,
        FileRecord,
        NormalizedLicense,
        PeInfo,
        ShippedFile,
        stands_in_for,
    )
    from ninfer_release.sbom._spdx import (
        SpdxCheck,
        check_spdx_bytes,
        check_spdx_file,
        cross_check_spdx,
        package_verification_code,
        parse_spdx_files,
        spdx_file_inventory,
        spdx_namespace,
        validate_spdx_bytes,
    )
    from ninfer_release.sbom._spdx3_write import Spdx3Written, write_spdx3

_EXPORTS = {
    "._catalog": (
        "CatalogEntry",
        "apply_catalog",
        "check_against_catalog",
        "load_catalog",
    ),
    "._cyclonedx": (
        "PROP_PATH",
        "PROP_STAND_IN",
        "CdxCheck",
        "check_cyclonedx_bytes",
        "check_cyclonedx_file",
        "cross_check_cyclonedx",
        "cyclonedx_dependency_inventory",
        "cyclonedx_root_sha256",
        "file_bom_ref",
        "package_bom_ref",
        "parse_cyclonedx_hashes",
        "prewarm_validators",
        "started_prewarm",
        "validate_cyclonedx_bytes",
        "vendored_bom_ref",
    ),
    "._ids": (
        "check_base_uri",
        "spdx_file_id",
        "spdx_package_id",
        "uri_part",
        "uuid5_url",
    ),
    "._image": (
        "IMAGE_CDX_NAME",
        "IMAGE_SPDX_NAME",
        "ImageSboms",
        "image_cyclonedx",
        "image_license_refs",
        "image_purl",
        "image_sbom_digests",
        "image_sboms",
        "image_spdx",
    ),
    "._license": (
        "combine_licenses",
        "license_refs_of",
        "license_text_path",
        "load_license_texts",
        "normalize_license_expression",
    ),
    "._lockdraft": (
        "DraftedFile",
        "LockDraft",
        "draft_lock",
    ),
    "._pe": (
        "check_pe_against_lock",
        "cuda_version_from_strings",
        "pe_component_version",
        "pe_version_summary",
        "read_pe",
        "read_pe_bytes",
        "stand_in_marker",
    ),
    "._purl": (
        "canonical_purl",
        "normalize_purl",
        "purls_equal",
    ),
    "._records": (
        "DependencyRecord",
        "FileRecord",
        "NormalizedLicense",
        "PeInfo",
        "ShippedFile",
        "stands_in_for",
    ),
    "._spdx3_write": (
        "Spdx3Written",
        "write_spdx3",
    ),
    "._spdx": (
        "SpdxCheck",
        "check_spdx_bytes",
        "check_spdx_file",
        "cross_check_spdx",
        "package_verification_code",
        "parse_spdx_files",
        "spdx_file_inventory",
        "spdx_namespace",
        "validate_spdx_bytes",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "IMAGE_CDX_NAME",
    "IMAGE_SPDX_NAME",
    "PROP_PATH",
    "PROP_STAND_IN",
    "CatalogEntry",
    "CdxCheck",
    "DependencyRecord",
    "DraftedFile",
    "FileRecord",
    "ImageSboms",
    "LockDraft",
    "NormalizedLicense",
    "PeInfo",
    "ShippedFile",
    "Spdx3Written",
    "SpdxCheck",
    "apply_catalog",
    "canonical_purl",
    "check_against_catalog",
    "check_base_uri",
    "check_cyclonedx_bytes",
    "check_cyclonedx_file",
    "check_pe_against_lock",
    "check_spdx_bytes",
    "check_spdx_file",
    "combine_licenses",
    "cross_check_cyclonedx",
    "cross_check_spdx",
    "cuda_version_from_strings",
    "cyclonedx_dependency_inventory",
    "cyclonedx_root_sha256",
    "draft_lock",
    "file_bom_ref",
    "image_cyclonedx",
    "image_license_refs",
    "image_purl",
    "image_sbom_digests",
    "image_sboms",
    "image_spdx",
    "license_refs_of",
    "license_text_path",
    "load_catalog",
    "load_license_texts",
    "normalize_license_expression",
    "normalize_purl",
    "package_bom_ref",
    "package_verification_code",
    "parse_cyclonedx_hashes",
    "parse_spdx_files",
    "pe_component_version",
    "pe_version_summary",
    "prewarm_validators",
    "purls_equal",
    "read_pe",
    "read_pe_bytes",
    "spdx_file_id",
    "spdx_file_inventory",
    "spdx_namespace",
    "spdx_package_id",
    "stand_in_marker",
    "stands_in_for",
    "started_prewarm",
    "uri_part",
    "uuid5_url",
    "validate_cyclonedx_bytes",
    "validate_spdx_bytes",
    "vendored_bom_ref",
    "write_spdx3",
]
