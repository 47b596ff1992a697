"""The linear SPDX validator: same messages as spdx-tools, and linear in the number of files.

``sbom._spdx_validate.validate_full_document`` must return exactly what spdx-tools 0.8.5
``validate_full_spdx_document`` returns (message text *and* context, same order) on small valid and
invalid documents, and must not scan the document once per element.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from spdx_tools.common.spdx_licensing import spdx_licensing
from spdx_tools.spdx.model import (
    Actor,
    ActorType,
    Annotation,
    AnnotationType,
    Checksum,
    ChecksumAlgorithm,
    CreationInfo,
    Document,
    ExternalDocumentRef,
    ExtractedLicensingInfo,
    File,
    Package,
    PackageVerificationCode,
    Relationship,
    RelationshipType,
    Snippet,
    SpdxNoAssertion,
    SpdxNone,
)
from spdx_tools.spdx.validation.document_validator import validate_full_spdx_document

from ninfer_release.sbom import spdx_file_inventory, validate_spdx_bytes
from ninfer_release.sbom._spdx_validate import validate_full_document

WHEN = datetime(2026, 11, 20)


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def _file(i: int, **over: Any) -> File:
    args: dict[str, Any] = {
        "name": f"./bin/f{i}.dll",
        "spdx_id": f"SPDXRef-File-{i}",
        "checksums": [Checksum(ChecksumAlgorithm.SHA1, _sha1(str(i)))],
        "license_concluded": spdx_licensing.parse("MIT"),
    }
    args.update(over)
    return File(**args)


def _document(n_files: int = 3, version: str = "SPDX-2.3") -> Document:
    creation = CreationInfo(
        spdx_version=version,
        spdx_id="SPDXRef-DOCUMENT",
        name="doc",
        document_namespace="https://example.invalid/spdx/doc-1",
        creators=[Actor(ActorType.TOOL, "t-1")],
        created=WHEN,
        external_document_refs=[
            ExternalDocumentRef(
                "DocumentRef-other",
                "https://example.invalid/other",
                Checksum(ChecksumAlgorithm.SHA1, _sha1("o")),
            )
        ],
    )
    package = Package(
        spdx_id="SPDXRef-Package",
        name="pkg",
        download_location=SpdxNoAssertion(),
        files_analyzed=True,
        verification_code=PackageVerificationCode(value=_sha1("code")),
        license_declared=spdx_licensing.parse("Apache-2.0 OR LicenseRef-Mine"),
    )
    files = [_file(i) for i in range(n_files)]
    relationships = [Relationship("SPDXRef-DOCUMENT", RelationshipType.DESCRIBES, "SPDXRef-Package")]
    relationships += [Relationship("SPDXRef-Package", RelationshipType.CONTAINS, f.spdx_id) for f in files]
    return Document(
        creation_info=creation,
        packages=[package],
        files=files,
        relationships=relationships,
        extracted_licensing_info=[
            ExtractedLicensingInfo(license_id="LicenseRef-Mine", extracted_text="mine")
        ],
    )


_STILL_VALID = {
    "valid",
    "relationship to NONE",
    "external id known",
    "DESCRIBED_BY instead",
    "snippet of a file",
    "annotation on the package",
}


def _steps(*edits: Callable[[Document], object]) -> Callable[[Document], None]:
    """One mutation made of several edits of the document, applied in order."""

    def apply(d: Document) -> None:
        for edit in edits:
            edit(d)

    return apply


def _mutations() -> Iterator[tuple[str, Callable[[Document], None]]]:
    """(name, change) pairs, each making the small document invalid in one rule (or keeping it valid)."""
    yield "valid", lambda d: None
    yield "bad file id", lambda d: setattr(d.files[0], "spdx_id", "SPDXRef-bad_id")
    yield "duplicate ids", lambda d: setattr(d.files[1], "spdx_id", d.files[0].spdx_id)
    yield (
        "relationship to nothing",
        lambda d: d.relationships.append(
            Relationship("SPDXRef-Package", RelationshipType.CONTAINS, "SPDXRef-Missing")
        ),
    )
    yield (
        "relationship from nothing",
        lambda d: d.relationships.append(
            Relationship("SPDXRef-Ghost", RelationshipType.DEPENDS_ON, "SPDXRef-Package")
        ),
    )
    yield (
        "relationship to NONE",
        lambda d: d.relationships.append(
            Relationship("SPDXRef-Package", RelationshipType.DEPENDS_ON, SpdxNone())
        ),
    )
    yield (
        "relationship with two colons",
        lambda d: d.relationships.append(
            Relationship("a:b:c", RelationshipType.DEPENDS_ON, "SPDXRef-Package")
        ),
    )
    yield (
        "external id known",
        lambda d: d.relationships.append(
            Relationship("SPDXRef-Package", RelationshipType.DEPENDS_ON, "DocumentRef-other:SPDXRef-X")
        ),
    )
    yield (
        "external id unknown and malformed",
        lambda d: d.relationships.append(
            Relationship("SPDXRef-Package", RelationshipType.DEPENDS_ON, "DocumentRef-nope:SPDXRef_x")
        ),
    )
    yield "no DESCRIBES", lambda d: setattr(d, "relationships", d.relationships[1:])
    yield (
        "DESCRIBED_BY instead",
        lambda d: setattr(
            d,
            "relationships",
            [
                Relationship("SPDXRef-Package", RelationshipType.DESCRIBED_BY, "SPDXRef-DOCUMENT"),
                *d.relationships[1:],
            ],
        ),
    )
    yield (
        "unknown LicenseRef",
        lambda d: setattr(d.files[2], "license_concluded", spdx_licensing.parse("LicenseRef-Unknown")),
    )
    yield (
        "unknown LicenseRef in list",
        lambda d: setattr(
            d.files[1],
            "license_info_in_file",
            [spdx_licensing.parse("MIT"), spdx_licensing.parse("LicenseRef-Nope")],
        ),
    )
    yield (
        "external LicenseRef",
        lambda d: setattr(
            d.files[1],
            "license_concluded",
            spdx_licensing.parse("DocumentRef-gone:LicenseRef-X AND DocumentRef-other:Bad"),
        ),
    )
    yield (
        "exception as licence",
        lambda d: setattr(d.files[0], "license_concluded", spdx_licensing.parse("MIT WITH Apache-2.0")),
    )
    yield from _more_mutations()


def _more_mutations() -> Iterator[tuple[str, Callable[[Document], None]]]:
    """The rest of :func:`_mutations` (one generator would pass the 80-line limit)."""
    yield (
        "file without SHA1 and absolute",
        _steps(
            lambda d: setattr(d.files[0], "checksums", [Checksum(ChecksumAlgorithm.SHA256, "0" * 64)]),
            lambda d: setattr(d.files[0], "name", "/abs"),
        ),
    )
    yield (
        "package files_analyzed false with files",
        _steps(
            lambda d: setattr(d.packages[0], "files_analyzed", False),
            lambda d: d.relationships.append(
                Relationship(d.files[0].spdx_id, RelationshipType.CONTAINED_BY, "SPDXRef-Package")
            ),
        ),
    )
    yield (
        "license_info_from_files without analysis",
        _steps(
            lambda d: setattr(d.packages[0], "verification_code", None),
            lambda d: setattr(d.packages[0], "files_analyzed", False),
            lambda d: setattr(d, "relationships", d.relationships[:1]),
            lambda d: setattr(d.packages[0], "license_info_from_files", [spdx_licensing.parse("MIT")]),
        ),
    )
    yield (
        "license_info_from_files analysed",
        lambda d: setattr(d.packages[0], "license_info_from_files", [spdx_licensing.parse("LicenseRef-Who")]),
    )
    yield (
        "snippet of a package",
        lambda d: d.snippets.append(
            Snippet(
                "SPDXRef-Snippet",
                "SPDXRef-Package",
                (5, 2),
                license_concluded=spdx_licensing.parse("LicenseRef-No"),
            )
        ),
    )
    yield (
        "snippet of a file",
        lambda d: d.snippets.append(Snippet("SPDXRef-Snippet", d.files[0].spdx_id, (1, 2))),
    )
    yield (
        "annotation on nothing",
        lambda d: d.annotations.append(
            Annotation(
                "SPDXRef-Nowhere", AnnotationType.REVIEW, Actor(ActorType.PERSON, "Jane"), WHEN, "looked"
            )
        ),
    )
    yield (
        "annotation on the package",
        lambda d: d.annotations.append(
            Annotation("SPDXRef-Package", AnnotationType.OTHER, Actor(ActorType.PERSON, "Jane"), WHEN, "ok")
        ),
    )
    yield (
        "bad extracted licence id",
        lambda d: d.extracted_licensing_info.append(
            ExtractedLicensingInfo(license_id="LicenseRef-bad id", extracted_text="")
        ),
    )
    yield "bad namespace", lambda d: setattr(d.creation_info, "document_namespace", "no uri#frag")
    yield "unsupported version", lambda d: setattr(d.creation_info, "spdx_version", "SPDX-2.1")


@pytest.mark.parametrize(("name", "change"), list(_mutations()), ids=[n for n, _ in _mutations()])
@pytest.mark.parametrize("version", ["SPDX-2.3", "SPDX-2.2"])
def test_same_messages_as_spdx_tools(name: str, change: Callable[[Document], None], version: str) -> None:
    document = _document(version=version)
    change(document)
    ours = validate_full_document(copy.deepcopy(document))
    theirs = validate_full_spdx_document(copy.deepcopy(document))
    assert ours == theirs
    # The mutations really are invalid; 2.2 also lacks mandatory fields (licence info, copyright).
    assert bool(theirs) == (name not in _STILL_VALID or version == "SPDX-2.2")


def test_a_requested_version_other_than_the_documents_is_reported_like_spdx_tools() -> None:
    document = _document()
    assert validate_full_document(document, "SPDX-2.2") == validate_full_spdx_document(document, "SPDX-2.2")
    assert validate_full_document(document, "SPDX-2.2")


def test_the_single_package_document_needs_no_describes() -> None:
    document = _document(n_files=0)
    document.relationships = []
    assert validate_full_document(document) == validate_full_spdx_document(document) == []


class _CountingList(list[Any]):
    """A list that counts how often it is iterated (each ``for`` / comprehension over it)."""

    def __init__(self, items: list[Any]) -> None:
        super().__init__(items)
        self.iterations = 0

    def __iter__(self) -> Iterator[Any]:
        self.iterations += 1
        return super().__iter__()


@pytest.mark.parametrize("n_files", [50, 400])
def test_the_file_list_is_walked_a_fixed_number_of_times(n_files: int) -> None:
    # spdx-tools rebuilds the id list (a walk of all files) for every relationship: ~n walks.
    document = _document(n_files=n_files)
    counting = _CountingList(document.files)
    document.files = counting
    assert validate_full_document(document) == []
    assert counting.iterations <= 5


def _records(n: int) -> list[Any]:
    from ninfer_release.sbom import FileRecord

    return [
        FileRecord(
            path=f"bin/x/f{i:05d}.bin",
            size=1,
            sha1=_sha1(str(i)),
            sha256=hashlib.sha256(b"%d" % i).hexdigest(),
            license="MIT",
        )
        for i in range(n)
    ]


def test_generation_and_bytes_validation_agree_with_spdx_tools_on_a_real_document() -> None:
    from ninfer_release.sbom._spdx import _parse_document

    data = spdx_file_inventory(
        package_name="p",
        package_version="1.0",
        package_file_name="p.zip",
        supplier="S",
        download_location=None,
        files=_records(30),
        spdx_file_path="sbom/p.spdx.json",
        namespace_base="https://example.invalid/spdx",
        document_name="d",
        epoch=0,
        creator_tool="t-1",
        declared_license=None,
        extracted_licenses={},
    )
    assert validate_spdx_bytes(data) == []
    document, _ = _parse_document(data)
    assert (
        validate_full_spdx_document(document, "SPDX-2.3")
        == validate_full_document(document, "SPDX-2.3")
        == []
    )


def _rel(origin: str, kind: str, target: str, **extra: str) -> dict[str, str]:
    return {"spdxElementId": origin, "relationshipType": kind, "relatedSpdxElement": target, **extra}


def _raw_with_implicit_relationships(n: int) -> dict[str, Any]:
    files = [
        {
            "SPDXID": f"SPDXRef-F{i}",
            "fileName": f"./f{i}",
            "checksums": [{"algorithm": "SHA1", "checksumValue": _sha1(str(i))}],
        }
        for i in range(n)
    ]
    return {
        "SPDXID": "SPDXRef-DOCUMENT",
        "spdxVersion": "SPDX-2.3",
        "name": "d",
        "dataLicense": "CC0-1.0",
        "documentNamespace": "https://example.invalid/d",
        "creationInfo": {"created": "2026-11-20T00:00:00Z", "creators": ["Tool: t"]},
        "documentDescribes": ["SPDXRef-P", "SPDXRef-P", "SPDXRef-Q"],
        "packages": [
            {"SPDXID": "SPDXRef-P", "name": "p", "downloadLocation": "NOASSERTION", "filesAnalyzed": False,
             "hasFiles": [f["SPDXID"] for f in files] + ["SPDXRef-F0"]},
            {"SPDXID": "SPDXRef-Q", "name": "q", "downloadLocation": "NOASSERTION", "filesAnalyzed": False,
             "hasFiles": ["SPDXRef-F1"]},
        ],
        "files": files,
        "relationships": [
            _rel("SPDXRef-Q", "DESCRIBED_BY", "SPDXRef-DOCUMENT"),
            _rel("SPDXRef-F2", "CONTAINED_BY", "SPDXRef-P"),
            _rel("SPDXRef-P", "CONTAINS", "SPDXRef-F3", comment="listed with a comment"),
            _rel("SPDXRef-P", "DEPENDS_ON", "NONE"),
        ],
    }  # fmt: skip


def test_hoisted_implicit_relationships_parse_to_the_same_document() -> None:
    from spdx_tools.spdx.parser.jsonlikedict.json_like_dict_parser import JsonLikeDictParser

    from ninfer_release.sbom._spdx import hoist_implicit_relationships

    raw = _raw_with_implicit_relationships(6)
    hoisted = hoist_implicit_relationships(copy.deepcopy(raw))
    assert "documentDescribes" not in hoisted and all("hasFiles" not in p for p in hoisted["packages"])
    # spdx-tools leaves JsonLikeDictParser.__init__ unannotated (a fresh parser per document, as before)
    theirs = JsonLikeDictParser().parse(copy.deepcopy(raw))  # type: ignore[no-untyped-call]
    ours = JsonLikeDictParser().parse(hoisted)  # type: ignore[no-untyped-call]
    assert ours == theirs
    assert validate_full_document(ours) == validate_full_spdx_document(theirs)  # files_analyzed false + files


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.__setitem__("documentDescribes", ["SPDXRef-P", 7]),
        lambda d: d["packages"][0].__setitem__("hasFiles", ["NONE"]),
        lambda d: d["relationships"].append({"spdxElementId": "SPDXRef-P", "relationshipType": 3}),
        lambda d: d.__setitem__("SPDXID", None),
    ],
)
def test_ill_typed_documents_are_left_to_the_parser(change: Callable[[dict[str, Any]], None]) -> None:
    from ninfer_release.sbom._spdx import hoist_implicit_relationships

    raw = _raw_with_implicit_relationships(3)
    change(raw)
    assert hoist_implicit_relationships(raw) is raw


def test_parsing_many_has_files_does_not_scan_per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from spdx_tools.spdx.parser.jsonlikedict.relationship_parser import RelationshipParser

    from ninfer_release.sbom._spdx import _parse_document

    calls = [0]
    original = RelationshipParser.check_if_relationship_exists

    def counted(self: Any, *args: Any, **kwargs: Any) -> bool:
        calls[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(RelationshipParser, "check_if_relationship_exists", counted)
    document, messages = _parse_document(json.dumps(_raw_with_implicit_relationships(300)).encode())
    assert messages == [] and document is not None and len(document.relationships) >= 300
    assert calls[0] == 0  # upstream: one scan of every relationship per described id and per file
