"""The per-file fast path of SPDX validation (``sbom._spdx_fast``) against spdx-tools.

On a document our writer produced and on one-rule mutations of its file entries and CONTAINS
relationships, :func:`validate_canonical` must give spdx-tools 0.8.5's own verdict and messages
(``JsonLikeDictParser`` + ``validate_full_spdx_document``, texts in order), and
``validate_spdx_bytes`` the same list as its library path. A document outside the canonical shape
must take the library path (``validate_canonical`` returns ``None``). A clean file costs no model
object.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from spdx_tools.spdx.parser.error import SPDXParsingError
from spdx_tools.spdx.parser.jsonlikedict.file_parser import FileParser
from spdx_tools.spdx.parser.jsonlikedict.json_like_dict_parser import JsonLikeDictParser
from spdx_tools.spdx.validation.document_validator import validate_full_spdx_document

from ninfer_release.errors import IntegrityError
from ninfer_release.sbom import FileRecord, _spdx, spdx_file_inventory, validate_spdx_bytes
from ninfer_release.sbom._spdx_fast import split_canonical, validate_canonical

Raw = dict[str, Any]


def _record(i: int, path: str, license: str | None = "MIT", **over: Any) -> FileRecord:
    return FileRecord(
        path=path,
        size=i,
        sha1=hashlib.sha1(b"%d" % i, usedforsecurity=False).hexdigest(),
        sha256=hashlib.sha256(b"%d" % i).hexdigest(),
        license=license,
        **over,
    )


def _document_bytes() -> bytes:
    records = [
        _record(0, "bin/a.dll", copyright="Copyright \u00a9 A", comment="PE: FileVersion 1"),
        _record(1, "bin/A.dll", license="Apache-2.0 OR MIT"),
        _record(2, "licenses/odd name (1)+[x].txt", license="LicenseRef-Odd"),
        _record(3, "lib/\u00e9t\u00e9/x.bin", license=None),
        _record(4, "bin/a_dll", license="GPL-2.0-only WITH Classpath-exception-2.0"),
    ]
    return spdx_file_inventory(
        package_name="p",
        package_version="1.0",
        package_file_name="p.zip",
        supplier="S",
        download_location=None,
        files=records,
        spdx_file_path="sbom/p.spdx.json",
        namespace_base="https://example.invalid/spdx",
        document_name="d",
        epoch=0,
        creator_tool="t-1",
        declared_license="MIT",
        extracted_licenses={"LicenseRef-Odd": "odd terms"},
    )


def _raw() -> Raw:
    raw: Raw = json.loads(_document_bytes())
    return raw


def _encode(raw: Raw) -> bytes:
    return (json.dumps(raw, indent=4) + "\n").encode()


def _spdx_tools_messages(raw: Raw) -> list[str] | None:
    """spdx-tools' own messages for ``raw`` (``None`` when its parser refuses it)."""
    try:
        document = JsonLikeDictParser().parse(copy.deepcopy(raw))  # type: ignore[no-untyped-call]
    except SPDXParsingError:
        return None
    return [m.validation_message for m in validate_full_spdx_document(document, "SPDX-2.3")]


def _library_path(raw: Raw, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(_spdx, "validate_canonical", lambda _raw: None)
        return validate_spdx_bytes(_encode(raw))


def _file(raw: Raw, i: int) -> Raw:
    entry: Raw = raw["files"][i]
    return entry


def _contains(raw: Raw, i: int) -> Raw:
    relationship: Raw = raw["relationships"][1 + i]
    return relationship


def _set_file(i: int, key: str, value: Any) -> Callable[[Raw], None]:
    return lambda raw: _file(raw, i).__setitem__(key, value)


def _set_sum(i: int, which: int, value: str) -> Callable[[Raw], None]:
    return lambda raw: _file(raw, i)["checksums"][which].__setitem__("checksumValue", value)


def _set_origin(i: int, value: str) -> Callable[[Raw], None]:
    return lambda raw: _contains(raw, i).__setitem__("spdxElementId", value)


_ONE_RULE: dict[str, Callable[[Raw], None]] = {
    "clean": lambda raw: None,
    "bad SPDXID": _set_file(0, "SPDXID", "SPDXRef-a_b"),
    "SPDXID with a newline": _set_file(0, "SPDXID", "SPDXRef-a\n"),
    "external SPDXID": _set_file(0, "SPDXID", "DocumentRef-x:SPDXRef-a"),
    "two colons": _set_file(0, "SPDXID", "a:b:c"),
    "duplicate file id": lambda raw: _file(raw, 1).__setitem__("SPDXID", _file(raw, 0)["SPDXID"]),
    "file id = package id": lambda raw: _file(raw, 1).__setitem__("SPDXID", raw["packages"][0]["SPDXID"]),
    "unknown LicenseRef": _set_file(1, "licenseConcluded", "LicenseRef-Nope"),
    "unknown licence id": _set_file(1, "licenseConcluded", "Foo-1.0"),
    "exception as licence": _set_file(1, "licenseConcluded", "Classpath-exception-2.0"),
    "NONE licence": _set_file(1, "licenseConcluded", "NONE"),
    "lowercase noassertion": _set_file(1, "licenseConcluded", "noassertion"),
    "no licence": lambda raw: _file(raw, 1).pop("licenseConcluded"),
    "absolute name": _set_file(0, "fileName", "/bin/a.dll"),
    "name without ./": _set_file(0, "fileName", "bin/a.dll"),
    "backslash name": _set_file(0, "fileName", "./bin\\a.dll"),
    "no SHA1": lambda raw: _file(raw, 0)["checksums"].pop(0),
    "uppercase SHA1": _set_sum(0, 0, "A" * 40),
    "short SHA256": _set_sum(0, 1, "a" * 63),
    "SHA1 with a newline": _set_sum(0, 0, "a" * 40 + "\n"),
    "wrong SHA1 (verification code)": _set_sum(2, 0, "b" * 40),
    "no fileTypes": lambda raw: _file(raw, 0).pop("fileTypes"),
    "CONTAINS from nowhere": _set_origin(0, "SPDXRef-Nowhere"),
    "CONTAINS from a bad id": _set_origin(1, "SPDXRef-x y"),
    "CONTAINS from outside": _set_origin(1, "DocumentRef-x:SPDXRef-a"),
    "CONTAINS of the document": _set_origin(2, "SPDXRef-DOCUMENT"),
    "no DESCRIBES": lambda raw: raw["relationships"].pop(0),
    "no CONTAINS": lambda raw: raw.__setitem__("relationships", raw["relationships"][:1]),
    "CONTAINS before DESCRIBES": lambda raw: raw["relationships"].append(raw["relationships"].pop(0)),
    "file listed twice": lambda raw: raw["files"].append(copy.deepcopy(_file(raw, 0))),
}  # fmt: skip


_VALID = {
    "clean",
    "NONE licence",
    "lowercase noassertion",
    "no licence",
    "no fileTypes",
    "CONTAINS of the document",
    "no CONTAINS",
    "CONTAINS before DESCRIBES",
}


@pytest.mark.parametrize("name", list(_ONE_RULE))
def test_canonical_documents_get_spdx_tools_verdict_and_messages(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = _raw()
    _ONE_RULE[name](raw)
    verdict = validate_canonical(copy.deepcopy(raw))
    assert verdict is not None  # every mutation above keeps the canonical shape
    assert verdict.messages == _spdx_tools_messages(raw)
    assert validate_spdx_bytes(_encode(raw)) == _library_path(raw, monkeypatch)
    assert (name in _VALID) == (validate_spdx_bytes(_encode(raw)) == [])


_NOT_CANONICAL: dict[str, Callable[[Raw], None]] = {
    "no checksums": _set_file(0, "checksums", []),
    "SPDX-2.2": lambda raw: raw.__setitem__("spdxVersion", "SPDX-2.2"),
    "another key": _set_file(0, "noticeText", "n"),
    "file annotations": _set_file(0, "annotations", []),
    "licence list in file": _set_file(0, "licenseInfoInFiles", ["MIT"]),
    "MD5": lambda raw: _file(raw, 0)["checksums"].append({"algorithm": "MD5", "checksumValue": "0" * 32}),
    "unknown algorithm": lambda raw: _file(raw, 0)["checksums"][0].__setitem__("algorithm", "SHA-1"),
    "checksum extra key": lambda raw: _file(raw, 0)["checksums"][0].__setitem__("x", 1),
    "unknown file type": _set_file(0, "fileTypes", ["EXECUTABLE"]),
    "file type not a list": _set_file(0, "fileTypes", "TEXT"),
    "name not a string": _set_file(0, "fileName", 7),
    "null comment": _set_file(0, "comment", None),
    "no SPDXID": lambda raw: _file(raw, 0).pop("SPDXID"),
    "unparsable licence": _set_file(0, "licenseConcluded", "MIT AND ("),
    "files not analyzed": lambda raw: raw["packages"][0].__setitem__("filesAnalyzed", False),
    "files a dict": lambda raw: raw.__setitem__("files", {}),
    "no files": lambda raw: raw.__setitem__("files", []),
    "related id a list": lambda raw: raw["relationships"].append(
        {"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "CONTAINS", "relatedSpdxElement": []}
    ),
    "related id an object": lambda raw: _contains(raw, 0).__setitem__("relatedSpdxElement", {"a": 1}),
    "broken skeleton": lambda raw: raw["packages"][0].__setitem__("supplier", "nobody"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(_NOT_CANONICAL))
def test_other_documents_take_the_library_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _raw()
    _NOT_CANONICAL[name](raw)
    assert validate_canonical(copy.deepcopy(raw)) is None
    assert validate_spdx_bytes(_encode(raw)) == _library_path(raw, monkeypatch)


def test_contains_in_the_middle_is_validated_with_the_skeleton(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _raw()
    raw["relationships"].insert(1, {**_contains(raw, 3), "comment": "c"})
    split = split_canonical(copy.deepcopy(raw))
    assert split is not None and len(split[2]) == len(raw["files"])  # the tail after the commented one
    verdict = validate_canonical(copy.deepcopy(raw))
    assert verdict is not None and verdict.messages == _spdx_tools_messages(raw) == []
    assert validate_spdx_bytes(_encode(raw)) == _library_path(raw, monkeypatch) == []


def test_a_clean_file_costs_no_model_object(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _raw()
    _file(raw, 3)["checksums"][0]["checksumValue"] = "x"
    parsed: list[str] = []
    original = FileParser.parse_file

    def counted(self: FileParser, entry: Raw) -> Any:
        parsed.append(entry["fileName"])
        return original(self, entry)

    monkeypatch.setattr(FileParser, "parse_file", counted)
    messages = validate_spdx_bytes(_encode(raw))
    assert parsed == [_file(raw, 3)["fileName"]]  # only the unclean entry goes through the library
    assert any("must consist of 40 lowercase hexadecimal digits" in m for m in messages)


def _odd_records() -> list[FileRecord]:
    paths = [
        "bin/a.dll",
        "bin/A.dll",
        "bin/a_dll",
        "bin/a-dll",
        "licenses/odd name (1)+[x].txt",
        "lib/\u00e9t\u00e9/\u4e2d\u6587.bin",
        "x/y/z/LICENSE",
        "archive.tar.gz",
        "readme",
        "quote'and`back`tick.json",
    ]
    licenses = [
        "MIT",
        "Apache-2.0 OR MIT",
        "LicenseRef-Odd",
        None,
        "GPL-2.0-only WITH Classpath-exception-2.0",
        "(MIT AND BSD-3-Clause) OR Apache-2.0",
        "BSD-2-Clause",
        "ISC OR MIT",
        "mit",
        "LicenseRef-Odd AND MIT",
    ]
    extras: list[dict[str, str | None]] = [
        {"copyright": "Copyright \u00a9 A", "comment": "PE: FileVersion 1"},
        {"copyright": "", "comment": ""},
        {"copyright": None, "comment": "line\nbreak\ttab"},
        {},
    ]
    return [
        _record(i, path, license=licenses[i % len(licenses)], **extras[i % len(extras)])
        for i, path in enumerate(paths)
    ]


def _inventory_kwargs(records: list[FileRecord]) -> dict[str, Any]:
    return {
        "package_name": "p",
        "package_version": "1.0",
        "package_file_name": "p.zip",
        "supplier": "S",
        "download_location": None,
        "files": records,
        "spdx_file_path": "sbom/p.spdx.json",
        "namespace_base": "https://example.invalid/spdx",
        "document_name": "d",
        "epoch": 0,
        "creator_tool": "t-1",
        "declared_license": "MIT",
        "extracted_licenses": {"LicenseRef-Odd": "odd terms"},
        "package_purl": "pkg:generic/p@1.0",
        "document_comment": "c",
    }


def _both_paths(kwargs: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """(default path, per-file model path): the bytes, or the error raised."""
    results: list[Any] = []
    for per_file_models in (False, True):
        with monkeypatch.context() as m:
            m.setattr(_spdx, "_PER_FILE_MODELS", per_file_models)
            try:
                results.append(spdx_file_inventory(**kwargs))
            except IntegrityError as exc:
                results.append(exc.problems)
    return results[0], results[1]


@pytest.mark.parametrize("n_extra", [0, 1, 40])
def test_written_bytes_equal_spdx_tools_per_file_model_path(
    n_extra: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = _odd_records() + [_record(100 + i, f"licenses/extra/f{i:03d}.txt") for i in range(n_extra)]
    fast, reference = _both_paths(_inventory_kwargs(records), monkeypatch)
    assert isinstance(fast, bytes) and fast == reference
    assert validate_spdx_bytes(fast) == []
    assert validate_canonical(json.loads(fast)) is not None  # what we write is canonical


@pytest.mark.parametrize("text", ["NOASSERTION", "NONE", "noassertion"])
def test_a_file_the_model_path_refuses_is_refused_alike(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # spdx-tools takes a licence expression "NOASSERTION" built by its licensing parser for an
    # unknown id; the reader would parse the written text as the special value. The writer
    # validates the model it would have built, so the verdict stays the model path's.
    records = [*_odd_records()[:3], _record(7, "bin/n.dll", license=text)]
    fast, reference = _both_paths(_inventory_kwargs(records), monkeypatch)
    assert fast == reference


def test_writing_builds_no_file_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from spdx_tools.spdx.model import File

    built = [0]
    original = File.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        built[0] += 1
        original(self, *args, **kwargs)

    monkeypatch.setattr(File, "__init__", counted)
    data = _document_bytes()
    assert built[0] == 0 and b'"fileName": "./bin/a.dll"' in data


@pytest.mark.parametrize("per_file_models", [False, True])
def test_written_bytes_equal_spdx_tools_json_writer(
    per_file_models: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_write`` (our indent writer after the library's convert step) gives the bytes of
    spdx-tools' own ``write_document_to_stream`` (issue 13)."""
    records = _odd_records() + [_record(100 + i, f"licenses/extra/f{i:03d}.txt") for i in range(25)]
    monkeypatch.setattr(_spdx, "_PER_FILE_MODELS", per_file_models)
    ours = spdx_file_inventory(**_inventory_kwargs(records))
    monkeypatch.setattr(_spdx, "_write", _spdx._library_write)
    assert spdx_file_inventory(**_inventory_kwargs(records)) == ours
