"""``sbom._spdx_skeleton.clean_skeleton``: "clean" only when spdx-tools reports no message.

Differential against the library path (spdx-tools' JSON-like parser and the linear validator of
``sbom._spdx_validate``, equal to ``validate_full_spdx_document``): the builder's documents (the
golden sample lane and value variants of it) take the fast path and the library agrees they are
clean; every one-rule mutation of a field the predicate looks at either falls back (``None``) or
is clean per the library. The copied constants are compared with the library's own, and each
licence id of the allow-list is checked with spdx-tools' licensing.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ninfer_release.sbom import _spdx_skeleton as sk
from ninfer_release.sbom import check_spdx_bytes, check_spdx_file
from ninfer_release.sbom._spdx import _parse_raw, hoist_implicit_relationships
from ninfer_release.sbom._spdx_fast import license_texts, split_canonical
from ninfer_release.sbom._spdx_validate import validate_full_document

Raw = dict[str, Any]
_GOLDEN = (
    Path(__file__).parent / "golden/v0.13.1/rtx4090/ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64.spdx.json"
)
_PACKAGE = "SPDXRef-Package-ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64"


def _golden() -> Raw:
    raw: Raw = json.loads(_GOLDEN.read_bytes())
    return raw


def _library_messages(raw: Raw) -> list[str]:
    """spdx-tools' parse messages, else its validation messages, for the whole document (a crash
    of its parser is a verdict too: ``validate_spdx_bytes`` words it as a message)."""
    try:
        document, messages = _parse_raw(hoist_implicit_relationships(copy.deepcopy(raw)))
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        return [f"crash: {exc}"]
    if document is None:
        return messages or ["parse failed"]
    return [m.validation_message for m in validate_full_document(document, "SPDX-2.3")]


def _fast(raw: Raw) -> list[sk.SkeletonPackage] | None:
    split = split_canonical(hoist_implicit_relationships(copy.deepcopy(raw)))
    if split is None:
        return None
    skeleton, files, contains = split
    sources = list(dict.fromkeys(r["spdxElementId"] for r in contains))
    return sk.clean_skeleton(skeleton, [f["SPDXID"] for f in files], license_texts(files), sources)


def _sound(raw: Raw) -> list[sk.SkeletonPackage] | None:
    """The fast verdict, asserted sound: "clean" only if the library reports nothing."""
    fast = _fast(raw)
    if fast is not None:
        assert _library_messages(raw) == []
    return fast


# ---------------------------------------------------------------- the copies are the library's


def test_copied_expressions_are_the_librarys() -> None:
    from spdx_tools.spdx.validation import external_package_ref_validator, uri_validators

    assert uri_validators.url_pattern == sk.URL_PATTERN
    assert uri_validators.download_location_pattern == sk.DOWNLOAD_LOCATION_PATTERN
    assert sk.PURL_REGEX == external_package_ref_validator.PURL_REGEX


def test_copied_enums_and_lengths_are_the_librarys() -> None:
    from spdx_tools.spdx.model.checksum import ChecksumAlgorithm
    from spdx_tools.spdx.model.file import FileType
    from spdx_tools.spdx.model.package import (
        CATEGORY_TO_EXTERNAL_PACKAGE_REF_TYPES,
        ExternalPackageRefCategory,
        PackagePurpose,
    )
    from spdx_tools.spdx.model.relationship import RelationshipType
    from spdx_tools.spdx.validation.checksum_validator import algorithm_length

    assert frozenset(PackagePurpose.__members__) == sk.PACKAGE_PURPOSES
    assert frozenset(FileType.__members__) == sk.FILE_TYPES
    assert set(RelationshipType.__members__) >= sk.RELATIONSHIP_TYPES
    assert "purl" in CATEGORY_TO_EXTERNAL_PACKAGE_REF_TYPES[ExternalPackageRefCategory.PACKAGE_MANAGER]
    assert algorithm_length[ChecksumAlgorithm.SHA1] == str(sk.SHA1_DIGITS)
    assert algorithm_length[ChecksumAlgorithm.SHA256] == str(sk.SHA256_DIGITS)


_LOCATIONS = [
    "https://github.com/alphastorm/omp-ninfer/releases/download/v1/x.zip",
    "http://example.com",
    "HTTPS://EXAMPLE.COM/x",
    "https://a-b.c-d.example.org:8080/x?y#z",
    "https://localhost/x",
    "https://example.c",
    "https://example.toolong/x",
    "https://-a.com",
    "https://a..b.com",
    "ftp://a.b.com",
    "git+https://github.com/a/b.git",
    "git+git@github.com:a/b.git",
    "bzr+lp:a.b",
    "example.com/x",
    "www.example.com",
    "https://" + ".".join(["a"] * 101) + ".com",
    "https://" + ".".join(["a"] * 102) + ".com",
    "not a url",
    "",
    "https://exa mple.com",
    "https://example.com\n",
    "https://\u0663.com",
]


@pytest.mark.parametrize("value", _LOCATIONS)
def test_url_checks_are_the_librarys(value: str) -> None:
    from spdx_tools.spdx.validation.uri_validators import validate_download_location, validate_url

    assert sk.is_url(value) == (validate_url(value) == [])
    assert sk.is_download_location(value) == (validate_download_location(value) == [])


def _with_license(raw: Raw, text: str) -> Raw:
    out = copy.deepcopy(raw)
    out["packages"][0]["licenseConcluded"] = text
    return out


@pytest.mark.parametrize("license_id", sorted(sk._KNOWN_LICENSES))
def test_each_allowed_licence_id_is_clean_in_the_library(license_id: str) -> None:
    raw = _golden()
    for text in (
        license_id,
        f"{license_id} AND MIT",
        f"Apache-2.0 OR {license_id} AND LicenseRef-NVIDIA-CUDA-EULA",
    ):
        assert _sound(_with_license(raw, text)) is not None, text


# ---------------------------------------------------------------- the builder's documents


def test_the_golden_document_takes_the_fast_path() -> None:
    packages = _sound(_golden())
    assert packages is not None
    assert [p.spdx_id for p in packages] == [_PACKAGE]
    assert packages[0].verification_code.excluded_files == [
        "./sbom/ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64.spdx.json"
    ]


def _pkg(key: str, value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        if value is _DROP:
            del raw["packages"][0][key]
        else:
            raw["packages"][0][key] = value

    return edit


def _top(key: str, value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        if value is _DROP:
            del raw[key]
        else:
            raw[key] = value

    return edit


def _info(key: str, value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        if value is _DROP:
            del raw["creationInfo"][key]
        else:
            raw["creationInfo"][key] = value

    return edit


_DROP = object()


def _no_extracted(raw: Raw) -> None:
    del raw["hasExtractedLicensingInfos"]
    for f in raw["files"]:
        f["licenseConcluded"] = "NOASSERTION"
    raw["packages"][0]["licenseConcluded"] = "MIT"


#: What the builder may also write (optional fields absent or present): fast and clean.
_VARIANTS: dict[str, Callable[[Raw], None]] = {
    "no document comment": _top("comment", _DROP),
    "no extracted licences": lambda r: _no_extracted(r),
    "homepage": _pkg("homepage", "https://github.com/alphastorm/omp-ninfer"),
    "package comment": _pkg("comment", "a comment (with parentheses)"),
    "download NOASSERTION": _pkg("downloadLocation", "NOASSERTION"),
    "declared licence": _pkg("licenseDeclared", "Apache-2.0 OR MIT"),
    "no purl": _pkg("externalRefs", _DROP),
    "copyright NOASSERTION": _pkg("copyrightText", "NOASSERTION"),
    "http namespace": _top("documentNamespace", "http://example.com/spdx/a-b.c_d~e"),
    "leap day": _info("created", "2028-02-29T23:59:59Z"),
}


@pytest.mark.parametrize("name", list(_VARIANTS))
def test_builder_variants_take_the_fast_path(name: str) -> None:
    raw = _golden()
    _VARIANTS[name](raw)
    assert _sound(raw) is not None


def test_the_sample_lanes_documents_take_the_fast_path(tmp_path_factory: pytest.TempPathFactory) -> None:
    from flow_support import release_out

    found = sorted((release_out(tmp_path_factory)).glob("*/*.spdx.json"))
    assert found
    for path in found:
        assert _sound(json.loads(path.read_bytes())) is not None, path


# ---------------------------------------------------------------- one-rule mutations


def _rel(index: int, key: str, value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        raw["relationships"][index][key] = value

    return edit


def _extracted(key: str, value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        if value is _DROP:
            del raw["hasExtractedLicensingInfos"][0][key]
        else:
            raw["hasExtractedLicensingInfos"][0][key] = value

    return edit


def _code(key: str, value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        raw["packages"][0]["packageVerificationCode"][key] = value

    return edit


def _ref(key: str, value: Any) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        if value is _DROP:
            del raw["packages"][0]["externalRefs"][0][key]
        else:
            raw["packages"][0]["externalRefs"][0][key] = value

    return edit


def _second_package(same_id: bool) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        other = copy.deepcopy(raw["packages"][0])
        if not same_id:
            other["SPDXID"] = "SPDXRef-Other"
        raw["packages"].append(other)

    return edit


def _tail_source(value: str) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        raw["relationships"][-1]["spdxElementId"] = value

    return edit


def _file_licence(value: str) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        raw["files"][0]["licenseConcluded"] = value

    return edit


def _file_id_to(value: str) -> Callable[[Raw], None]:
    def edit(raw: Raw) -> None:
        old = raw["files"][0]["SPDXID"]
        raw["files"][0]["SPDXID"] = value
        for r in raw["relationships"]:
            if r["relatedSpdxElement"] == old:
                r["relatedSpdxElement"] = value

    return edit


_MUTATIONS: dict[str, Callable[[Raw], None]] = {
    # header
    "document id": _top("SPDXID", "SPDXRef-DOC"),
    "version 2.2": _top("spdxVersion", "SPDX-2.2"),
    "version other": _top("spdxVersion", "SPDX-3.0"),
    "data licence": _top("dataLicense", "CC0-1.1"),
    "name wrong type": _top("name", 5),
    "name missing": _top("name", _DROP),
    "comment wrong type": _top("comment", ["x"]),
    "namespace not a URI": _top("documentNamespace", "not a uri"),
    "namespace fragment": _top("documentNamespace", "https://example.com/a#b"),
    "namespace no scheme": _top("documentNamespace", "//example.com/a"),
    "namespace missing": _top("documentNamespace", _DROP),
    "namespace wrong type": _top("documentNamespace", 1),
    "extra key snippets": _top("snippets", []),
    "extra key annotations": _top("annotations", [{"annotator": "Tool: x"}]),
    "extra key externalDocumentRefs": _top(
        "externalDocumentRefs", [{"externalDocumentId": "DocumentRef-x", "spdxDocument": "https://x.org"}]
    ),
    "documentDescribes": _top("documentDescribes", [_PACKAGE]),
    "creation info missing": _top("creationInfo", _DROP),
    "creation info wrong type": _top("creationInfo", "x"),
    # creation info
    "created month 13": _info("created", "2026-13-01T00:00:00Z"),
    "created 30 February": _info("created", "2026-02-30T00:00:00Z"),
    "created space": _info("created", "2026-11-20 00:00:00Z"),
    "created offset": _info("created", "2026-11-20T00:00:00+00:00"),
    "created second 60": _info("created", "2026-11-20T00:00:60Z"),
    "created hour 24": _info("created", "2026-11-20T24:00:00Z"),
    "created short year": _info("created", "226-11-20T00:00:00Z"),
    "created year 0": _info("created", "0000-11-20T00:00:00Z"),
    "created unicode digit": _info("created", "2026-11-2\u0663T00:00:00Z"),
    "created final LF": _info("created", "2026-11-20T00:00:00Z\n"),
    "created missing": _info("created", _DROP),
    "created wrong type": _info("created", 20261120),
    "creators empty": _info("creators", []),
    "creators wrong type": _info("creators", "Tool: x"),
    "creator person": _info("creators", ["Person: Jane"]),
    "creator tool without name": _info("creators", ["Tool: "]),
    "creator organization email": _info("creators", ["Organization: A (a@b.c)"]),
    "creator organization parens empty": _info("creators", ["Organization: A ()"]),
    "creator unknown kind": _info("creators", ["Robot: x"]),
    "creator no space": _info("creators", ["Tool:x"]),
    "creator LF": _info("creators", ["Tool: x\n"]),
    "creator trailing space": _info("creators", ["Organization: A "]),
    "creator wrong type": _info("creators", [1]),
    "creation comment": _info("comment", "x"),
    "licence list version": _info("licenseListVersion", "3.x"),
    # packages
    "package id underscore": _pkg("SPDXID", "SPDXRef-a_b"),
    "package id colon": _pkg("SPDXID", "DocumentRef-x:SPDXRef-a"),
    "package id unicode digit": _pkg("SPDXID", "SPDXRef-\u0663"),
    "package id final LF": _pkg("SPDXID", "SPDXRef-a\n"),
    "package id is the document's": _pkg("SPDXID", "SPDXRef-DOCUMENT"),
    "package id missing": _pkg("SPDXID", _DROP),
    "package name wrong type": _pkg("name", 1),
    "package name missing": _pkg("name", _DROP),
    "download not a URL": _pkg("downloadLocation", "not a url"),
    "download empty": _pkg("downloadLocation", ""),
    "download NONE lowercase": _pkg("downloadLocation", "none"),
    "download wrong type": _pkg("downloadLocation", 1),
    "download missing": _pkg("downloadLocation", _DROP),
    "download git form": _pkg("downloadLocation", "git+git@github.com:a/b.git"),
    "homepage not a URL": _pkg("homepage", "x"),
    "homepage wrong type": _pkg("homepage", ["https://x.org"]),
    "files analyzed false": _pkg("filesAnalyzed", False),
    "files analyzed string": _pkg("filesAnalyzed", "true"),
    "verification code 39 digits": _code("packageVerificationCodeValue", "e" * 39),
    "verification code uppercase": _code("packageVerificationCodeValue", "E" * 40),
    "verification code final LF": _code("packageVerificationCodeValue", "e" * 40 + "\n"),
    "verification code wrong type": _code("packageVerificationCodeValue", 1),
    "excluded absolute": _code("packageVerificationCodeExcludedFiles", ["/sbom/x.spdx.json"]),
    "excluded wrong type": _code("packageVerificationCodeExcludedFiles", "./x"),
    "excluded item wrong type": _code("packageVerificationCodeExcludedFiles", [1]),
    "verification code missing": _pkg("packageVerificationCode", _DROP),
    "verification code extra key": _code("comment", "x"),
    "concluded unknown id": _pkg("licenseConcluded", "Foo-1.0"),
    "concluded unknown ref": _pkg("licenseConcluded", "LicenseRef-Unknown"),
    "concluded dangling operator": _pkg("licenseConcluded", "MIT AND"),
    "concluded parentheses": _pkg("licenseConcluded", "(MIT OR Apache-2.0)"),
    "concluded lowercase id": _pkg("licenseConcluded", "mit"),
    "concluded lowercase operator": _pkg("licenseConcluded", "MIT and Apache-2.0"),
    "concluded WITH": _pkg("licenseConcluded", "Apache-2.0 WITH LLVM-exception"),
    "concluded exception alone": _pkg("licenseConcluded", "LLVM-exception"),
    "concluded deprecated id": _pkg("licenseConcluded", "GPL-2.0"),
    "concluded noassertion lowercase": _pkg("licenseConcluded", "noassertion"),
    "concluded NONE inside": _pkg("licenseConcluded", "MIT AND NONE"),
    "concluded empty": _pkg("licenseConcluded", ""),
    "concluded wrong type": _pkg("licenseConcluded", ["MIT"]),
    "concluded double space": _pkg("licenseConcluded", "MIT  AND Apache-2.0"),
    "concluded external ref": _pkg("licenseConcluded", "DocumentRef-x:LicenseRef-y"),
    "declared unknown": _pkg("licenseDeclared", "Foo-1.0"),
    "supplier person": _pkg("supplier", "Person: Jane"),
    "supplier email": _pkg("supplier", "Organization: OMP (a@b.c)"),
    "supplier empty name": _pkg("supplier", "Organization: "),
    "supplier wrong type": _pkg("supplier", {"name": "OMP"}),
    "built date bad": _pkg("builtDate", "2026-11-20T00:00Z"),
    "built date wrong type": _pkg("builtDate", 0),
    "purpose unknown": _pkg("primaryPackagePurpose", "APP"),
    "purpose lowercase": _pkg("primaryPackagePurpose", "application"),
    "purpose wrong type": _pkg("primaryPackagePurpose", 1),
    "external refs empty": _pkg("externalRefs", []),
    "external refs wrong type": _pkg("externalRefs", {}),
    "ref category security": _ref("referenceCategory", "SECURITY"),
    "ref category unknown": _ref("referenceCategory", "NOPE"),
    "ref type npm": _ref("referenceType", "npm"),
    "ref type unknown": _ref("referenceType", "nope"),
    "ref locator not a purl": _ref("referenceLocator", "generic/omp/ninfer@1"),
    "ref locator wrong type": _ref("referenceLocator", 1),
    "ref locator missing": _ref("referenceLocator", _DROP),
    "ref comment": _ref("comment", "x"),
    "package checksums": _pkg("checksums", [{"algorithm": "SHA1", "checksumValue": "0" * 39}]),
    "package licence info from files": _pkg("licenseInfoFromFiles", ["Foo-1.0"]),
    "package has files": _pkg("hasFiles", ["SPDXRef-Nope"]),
    "package version wrong type": _pkg("versionInfo", 1),
    "package file name wrong type": _pkg("packageFileName", 1),
    "package copyright wrong type": _pkg("copyrightText", 1),
    "package comment wrong type": _pkg("comment", 1),
    "package originator": _pkg("originator", "Person: x (y)"),
    "second package": _second_package(same_id=False),
    "duplicate package id": _second_package(same_id=True),
    "no packages": _top("packages", []),
    "packages wrong type": _top("packages", {}),
    "package wrong type": _top("packages", ["x"]),
    # extracted licences
    "extracted id space": _extracted("licenseId", "LicenseRef-a b"),
    "extracted id not a ref": _extracted("licenseId", "Foo"),
    "extracted id underscore": _extracted("licenseId", "LicenseRef-Microsoft_VC"),
    "extracted id wrong type": _extracted("licenseId", 1),
    "extracted text empty": _extracted("extractedText", ""),
    "extracted text missing": _extracted("extractedText", _DROP),
    "extracted text wrong type": _extracted("extractedText", 1),
    "extracted name missing": _extracted("name", _DROP),
    "extracted name wrong type": _extracted("name", 1),
    "extracted see also": _extracted("seeAlsos", ["not a url"]),
    "extracted empty list": _top("hasExtractedLicensingInfos", []),
    "extracted wrong type": _top("hasExtractedLicensingInfos", {}),
    "extracted entry wrong type": _top("hasExtractedLicensingInfos", ["x"]),
    # relationships
    "describes removed": lambda r: r["relationships"].pop(0),
    "describes to nothing": _rel(0, "relatedSpdxElement", "SPDXRef-Nope"),
    "describes from nothing": _rel(0, "spdxElementId", "SPDXRef-Nope"),
    "describes to NONE": _rel(0, "relatedSpdxElement", "NONE"),
    "describes to NOASSERTION": _rel(0, "relatedSpdxElement", "NOASSERTION"),
    "describes type lowercase": _rel(0, "relationshipType", "describes"),
    "describes type unknown": _rel(0, "relationshipType", "DESCRIBEZ"),
    "describes type other": _rel(0, "relationshipType", "DEPENDS_ON"),
    "describes type wrong type": _rel(0, "relationshipType", 1),
    "describes end wrong type": _rel(0, "spdxElementId", 1),
    "describes end colon": _rel(0, "relatedSpdxElement", "DocumentRef-a:SPDXRef-b"),
    "describes comment": _rel(0, "comment", "x"),
    "relationships wrong type": _top("relationships", {}),
    # the per-file part the skeleton is judged with
    "tail source unknown": _tail_source("SPDXRef-Nope"),
    "tail source bad id": _tail_source("SPDXRef-a_b"),
    "tail source document": _tail_source("SPDXRef-DOCUMENT"),
    "file licence unknown ref": _file_licence("LicenseRef-Missing"),
    "file licence unknown id": _file_licence("Foo-1.0"),
    "file licence WITH": _file_licence("Apache-2.0 WITH LLVM-exception"),
    "file id is the package's": _file_id_to(_PACKAGE),
    "file id is the document's": _file_id_to("SPDXRef-DOCUMENT"),
}


@pytest.mark.parametrize("name", list(_MUTATIONS))
def test_a_mutation_falls_back_or_is_clean_in_the_library(name: str) -> None:
    raw = _golden()
    _MUTATIONS[name](raw)
    _sound(raw)


def test_most_mutations_fall_back() -> None:
    """Not vacuous: the library rejects most mutations, and each of those falls back here."""
    rejected = 0
    for name, mutate in _MUTATIONS.items():
        raw = _golden()
        mutate(raw)
        if _library_messages(raw):
            rejected += 1
            assert _fast(raw) is None, name
    assert rejected >= 100


def test_combinations_of_allowed_licences_are_clean() -> None:
    raw = _golden()
    ids = [*sorted(sk._KNOWN_LICENSES)[:6], "LicenseRef-NVIDIA-CUDA-EULA"]
    for a, b in itertools.combinations(ids, 2):
        for op in ("AND", "OR"):
            assert _sound(_with_license(raw, f"{a} {op} {b} {op} {a}")) is not None


# ---------------------------------------------------------------- end to end


def _write(tmp_path: Path, raw: Raw) -> Path:
    path = tmp_path / "doc.spdx.json"
    path.write_bytes((json.dumps(raw, indent=2, ensure_ascii=False) + "\n").encode())
    return path


def test_a_valid_document_off_the_fast_path_still_verifies(tmp_path: Path) -> None:
    raw = _golden()
    raw["packages"][0]["licenseDeclared"] = "(Apache-2.0 OR MIT)"  # valid, not the canonical shape
    assert _fast(raw) is None
    assert _library_messages(raw) == []
    path = _write(tmp_path, raw)
    got = check_spdx_file(path, limit=1 << 26)
    assert got is not None and got[0].messages == []
    assert check_spdx_bytes(path.read_bytes()).messages == []


def test_an_invalid_document_fails_with_the_librarys_message(tmp_path: Path) -> None:
    raw = _golden()
    raw["packages"][0]["licenseConcluded"] = "Apache-2.0 AND LicenseRef-Unknown"
    path = _write(tmp_path, raw)
    got = check_spdx_file(path, limit=1 << 26)
    assert got is not None
    want = check_spdx_bytes(path.read_bytes()).messages
    assert got[0].messages == want
    assert any("Unrecognized license reference: LicenseRef-Unknown" in m for m in want)


@pytest.mark.parametrize("name", sorted(_MUTATIONS))
def test_check_spdx_file_of_a_mutation_equals_the_whole_path(tmp_path: Path, name: str) -> None:
    raw = _golden()
    _MUTATIONS[name](raw)
    path = _write(tmp_path, raw)
    data = path.read_bytes()
    got = check_spdx_file(path, limit=1 << 26)
    if got is not None:
        assert got[0].messages == check_spdx_bytes(data).messages
