"""Hostile per-file mutations: the SBOM fast paths give the library path's verdict and messages.

``validate_spdx_bytes`` checks a canonical per-file part without spdx-tools' per-file models
(``sbom._spdx_fast``) and ``validate_cyclonedx_bytes`` checks evidence occurrences without the
schema walk per entry (``sbom._cdx_fast``). The promise: for ANY input both give exactly what the
library path gives (spdx-tools parse + full validation; the strict CycloneDX 1.6 schema on the
whole document). Here the real documents of a built sample lane (the golden set of
``tests/golden``) get one hostile edit each — what a tool writing SBOMs by hand, or an attacker,
could upload: wrong JSON types per field, colliding ids, ids and digests that pass a ``$``
regular expression only because of a final newline, unicode lookalikes, licence expressions that
are specials, exceptions or unknown references, relationship shapes, implicit relationships
(``documentDescribes`` / ``hasFiles``), occurrence numbers that are floats or booleans, and
JSON-level attacks (duplicate keys, NaN, a BOM, CRLF). Each is checked through both paths:
the message lists (hence the verdicts) must be equal; a raised exception counts as an outcome
and must be the same too.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ninfer_release.sbom import _cyclonedx, _spdx, validate_spdx_bytes
from ninfer_release.sbom._cyclonedx import validate_cyclonedx_bytes

Raw = dict[str, Any]
Mutation = Callable[[Raw], None]
_LANE = Path(__file__).parent / "golden/v0.13.1/rtx4090/ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64"
_LONG = "x" * 5000


@functools.cache
def _golden(suffix: str) -> bytes:
    return Path(f"{_LANE}.{suffix}").read_bytes()


def _load(suffix: str) -> Raw:
    raw: Raw = json.loads(_golden(suffix))
    return raw


def _encode(raw: Raw) -> bytes:
    # ASCII with escapes: a lone surrogate is expressible (as a hostile writer may write it).
    return (json.dumps(raw, indent=2) + "\n").encode()


def _outcome(validate: Callable[[bytes], list[str]], data: bytes) -> list[str] | tuple[str, str]:
    """The messages, or the exception raised (type and text) when the validator crashes."""
    try:
        return validate(data)
    except Exception as exc:  # noqa: BLE001 - a crash is an outcome both paths must share
        return (type(exc).__name__, str(exc))


def _spdx_both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """(fast path, library path) outcomes of ``validate_spdx_bytes``."""
    fast = _outcome(validate_spdx_bytes, data)
    with monkeypatch.context() as m:
        m.setattr(_spdx, "validate_canonical", lambda _raw: None)
        library = _outcome(validate_spdx_bytes, data)
    return fast, library


def _cdx_both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """(fast path, whole-schema path) outcomes of ``validate_cyclonedx_bytes``."""
    fast = _outcome(validate_cyclonedx_bytes, data)
    with monkeypatch.context() as m:
        m.setattr(_cyclonedx, "schema_is_clean", lambda _raw, _validator: False)
        library = _outcome(validate_cyclonedx_bytes, data)
    return fast, library


# --- SPDX ---------------------------------------------------------------------------------------

_FIRST, _MID, _LAST = 0, 5, -1
_WRONG_TYPES: dict[str, Any] = {
    "int": 7,
    "None": None,
    "list": ["x"],
    "empty list": [],
    "dict": {"a": 1},
    "true": True,
    "float": 1.5,
    "empty": "",
    "long": _LONG,
}
_FILE_FIELDS = (
    "SPDXID",
    "fileName",
    "checksums",
    "licenseConcluded",
    "copyrightText",
    "comment",
    "fileTypes",
)


def _f(raw: Raw, i: int) -> Raw:
    entry: Raw = raw["files"][i]
    return entry


def _pkg(raw: Raw) -> Raw:
    package: Raw = raw["packages"][0]
    return package


def _set(i: int, key: str, value: Any) -> Mutation:
    return lambda raw: _f(raw, i).__setitem__(key, copy.deepcopy(value))


def _drop(i: int, key: str) -> Mutation:
    return lambda raw: _f(raw, i).pop(key)


def _sum(i: int, which: int, key: str, value: Any) -> Mutation:
    return lambda raw: _f(raw, i)["checksums"][which].__setitem__(key, value)


def _sums(i: int, value: list[dict[str, Any]]) -> Mutation:
    return lambda raw: _f(raw, i).__setitem__("checksums", copy.deepcopy(value))


def _sha1(raw: Raw, i: int) -> str:
    value: str = _f(raw, i)["checksums"][0]["checksumValue"]
    return value


def _same_id_as(i: int, other: Callable[[Raw], str]) -> Mutation:
    return lambda raw: _f(raw, i).__setitem__("SPDXID", other(raw))


def _contains_rows(raw: Raw) -> list[Raw]:
    return [r for r in raw["relationships"] if r["relationshipType"] == "CONTAINS"]


def _rel(j: int, key: str, value: Any) -> Mutation:
    return lambda raw: _contains_rows(raw)[j].__setitem__(key, copy.deepcopy(value))


def _append_rel(make: Callable[[Raw], Any]) -> Mutation:
    return lambda raw: raw["relationships"].append(make(raw))


def _reverse(raw: Raw) -> None:
    row = _contains_rows(raw)[2]
    row["spdxElementId"], row["relatedSpdxElement"] = row["relatedSpdxElement"], row["spdxElementId"]


def _contained_by(raw: Raw) -> None:
    row = _contains_rows(raw)[2]
    row["spdxElementId"], row["relatedSpdxElement"] = row["relatedSpdxElement"], row["spdxElementId"]
    row["relationshipType"] = "CONTAINED_BY"


def _has_files(ids: Callable[[Raw], Any], keep_contains: bool) -> Mutation:
    def mutate(raw: Raw) -> None:
        _pkg(raw)["hasFiles"] = ids(raw)
        if not keep_contains:
            raw["relationships"] = [r for r in raw["relationships"] if r["relationshipType"] != "CONTAINS"]

    return mutate


def _describes(ids: Callable[[Raw], Any], keep: bool) -> Mutation:
    def mutate(raw: Raw) -> None:
        raw["documentDescribes"] = ids(raw)
        if not keep:
            raw["relationships"] = [r for r in raw["relationships"] if r["relationshipType"] != "DESCRIBES"]

    return mutate


def _unhoisted(bad_file_id: str | None, describes: list[str] | None) -> Mutation:
    """``hasFiles`` listing every file next to the CONTAINS relationships, with a value that makes
    ``hoist_implicit_relationships`` leave the document as it is (``NONE`` in ``hasFiles``, or a
    ``documentDescribes`` special), optionally with the last file's id made invalid."""

    def mutate(raw: Raw) -> None:
        if bad_file_id is not None:
            _name_file(raw, bad_file_id)
        _pkg(raw)["hasFiles"] = [*_file_ids(raw), *([] if describes else ["NONE"])]
        if describes:
            raw["documentDescribes"] = describes

    return mutate


def _file_ids(raw: Raw) -> list[str]:
    return [f["SPDXID"] for f in raw["files"]]


def _swap_files(raw: Raw) -> None:
    raw["files"][0], raw["files"][1] = raw["files"][1], raw["files"][0]


def _name_file(raw: Raw, spdx_id: str) -> None:
    """The last file renamed to ``spdx_id``, and its CONTAINS relationship with it."""
    old = _f(raw, _LAST)["SPDXID"]
    _f(raw, _LAST)["SPDXID"] = spdx_id
    for row in raw["relationships"]:
        if row["relatedSpdxElement"] == old:
            row["relatedSpdxElement"] = spdx_id


def _snippet(file_id: str) -> Raw:
    return {
        "SPDXID": "SPDXRef-Snippet-1",
        "snippetFromFile": file_id,
        "ranges": [
            {
                "startPointer": {"offset": 1, "reference": file_id},
                "endPointer": {"offset": 2, "reference": file_id},
            }
        ],
        "licenseConcluded": "NOASSERTION",
        "copyrightText": "NOASSERTION",
    }


def _annotation(spdx_id: str) -> Raw:
    return {
        "annotationDate": "2026-01-01T00:00:00Z",
        "annotationType": "REVIEW",
        "annotator": "Tool: t",
        "comment": "c",
        "spdxElementId": spdx_id,
    }


def _with_external(raw: Raw, license_text: str) -> None:
    raw["externalDocumentRefs"] = [
        {
            "externalDocumentId": "DocumentRef-ext",
            "spdxDocument": "https://example.invalid/ext",
            "checksum": {"algorithm": "SHA1", "checksumValue": "0" * 40},
        }
    ]
    _f(raw, _MID)["licenseConcluded"] = license_text


def _every_file(raw: Raw, edit: Callable[[Raw], None]) -> None:
    for entry in raw["files"]:
        edit(entry)


def _wrong_types() -> dict[str, Mutation]:
    """Each file field of a middle entry set to each wrong JSON type, or removed."""
    out: dict[str, Mutation] = {"clean": lambda raw: None}
    for field in _FILE_FIELDS:
        for name, value in _WRONG_TYPES.items():
            out[f"{field} {name}"] = _set(_MID, field, value)
        out[f"no {field}"] = _drop(_MID, field)
    return out


_SHA256 = "c" * 64

_SPDX_IDS: dict[str, Mutation] = {
    "SPDXID first file bad": _set(_FIRST, "SPDXID", "SPDXRef-a_b"),
    "SPDXID trailing newline": _set(_MID, "SPDXID", "SPDXRef-File-x\n"),
    "SPDXID trailing CR": _set(_MID, "SPDXID", "SPDXRef-File-x\r"),
    "SPDXID leading space": _set(_MID, "SPDXID", " SPDXRef-File-x"),
    "SPDXID cyrillic e": _set(_MID, "SPDXID", "SPDXRef-Fil\u0435-x"),
    "SPDXID fullwidth digit": _set(_MID, "SPDXID", "SPDXRef-File-\uff11"),
    "SPDXID arabic digit": _set(_MID, "SPDXID", "SPDXRef-File-\u0661"),
    "SPDXID only prefix": _set(_MID, "SPDXID", "SPDXRef-"),
    "SPDXID lowercase prefix": _set(_MID, "SPDXID", "spdxref-File-x"),
    "SPDXID external": _set(_MID, "SPDXID", "DocumentRef-x:SPDXRef-File-x"),
    "SPDXID two colons": _set(_MID, "SPDXID", "a:b:c"),
    "SPDXID NUL": _set(_MID, "SPDXID", "SPDXRef-File\x00x"),
    "SPDXID duplicate of another file": _same_id_as(_MID, lambda raw: _f(raw, 0)["SPDXID"]),
    "SPDXID = package": _same_id_as(_MID, lambda raw: _pkg(raw)["SPDXID"]),
    "SPDXID = document": _same_id_as(_MID, lambda raw: raw["SPDXID"]),
    "SPDXID case variant of another": _same_id_as(_MID, lambda raw: _f(raw, 0)["SPDXID"].upper()),
    "file listed twice": lambda raw: raw["files"].append(copy.deepcopy(_f(raw, 3))),
    "files swapped": _swap_files,
}

_SPDX_DIGESTS: dict[str, Mutation] = {
    "SHA1 uppercase": lambda raw: _sum(_MID, 0, "checksumValue", _sha1(raw, _MID).upper())(raw),
    "SHA256 uppercase": lambda raw: _sum(_MID, 1, "checksumValue", "C" * 64)(raw),
    "SHA1 39 digits": _sum(_MID, 0, "checksumValue", "a" * 39),
    "SHA1 41 digits": _sum(_MID, 0, "checksumValue", "a" * 41),
    "SHA256 63 digits": _sum(_MID, 1, "checksumValue", "a" * 63),
    "SHA256 of SHA1 length": _sum(_MID, 1, "checksumValue", "a" * 40),
    "SHA1 not hex": _sum(_MID, 0, "checksumValue", "g" * 40),
    "SHA1 trailing newline": lambda raw: _sum(_MID, 0, "checksumValue", _sha1(raw, _MID) + "\n")(raw),
    "SHA256 trailing newline": _sum(_MID, 1, "checksumValue", _SHA256 + "\n"),
    "SHA1 arabic digits": _sum(_MID, 0, "checksumValue", "\u0661" * 40),
    "SHA1 fullwidth digits": _sum(_MID, 0, "checksumValue", "\uff11" * 40),
    "SHA1 empty": _sum(_MID, 0, "checksumValue", ""),
    "SHA1 int": _sum(_MID, 0, "checksumValue", 7),
    "SHA1 None": _sum(_MID, 0, "checksumValue", None),
    "algorithm lowercase": _sum(_MID, 0, "algorithm", "sha1"),
    "algorithm int": _sum(_MID, 0, "algorithm", 1),
    "algorithm SHA-1": _sum(_MID, 0, "algorithm", "SHA-1"),
    "checksum extra key": _sum(_MID, 0, "x", 1),
    "checksum not a dict": lambda raw: _f(raw, _MID)["checksums"].__setitem__(0, "SHA1"),
    "only SHA256": lambda raw: _f(raw, _MID)["checksums"].pop(0),
    "SHA256 before SHA1": lambda raw: _f(raw, _MID)["checksums"].reverse(),
    "SHA1 twice, same value": lambda raw: _f(raw, _MID)["checksums"].append(
        copy.deepcopy(_f(raw, _MID)["checksums"][0])
    ),
    "SHA1 twice, other value": lambda raw: _f(raw, _MID)["checksums"].append(
        {"algorithm": "SHA1", "checksumValue": "0" * 40}
    ),
    "SHA1 twice, second bad": lambda raw: _f(raw, _MID)["checksums"].append(
        {"algorithm": "SHA1", "checksumValue": "0" * 40 + "\n"}
    ),
    "SHA256 twice": lambda raw: _f(raw, _MID)["checksums"].append(
        {"algorithm": "SHA256", "checksumValue": _SHA256}
    ),
    "MD5 added": lambda raw: _f(raw, _MID)["checksums"].append(
        {"algorithm": "MD5", "checksumValue": "0" * 32}
    ),
    "SHA512 added": lambda raw: _f(raw, _MID)["checksums"].append(
        {"algorithm": "SHA512", "checksumValue": "0" * 128}
    ),
    "wrong SHA1 (verification code)": _sum(_MID, 0, "checksumValue", "b" * 40),
}

_SPDX_UNKNOWN_KEYS: dict[str, Mutation] = {
    "unknown key": _set(_MID, "x-tool", "y"),
    "noticeText": _set(_MID, "noticeText", "n"),
    "attributionTexts": _set(_MID, "attributionTexts", ["a"]),
    "fileContributors": _set(_MID, "fileContributors", ["c"]),
    "annotations in file": _set(_MID, "annotations", []),
    "licenseInfoInFiles MIT": _set(_MID, "licenseInfoInFiles", ["MIT"]),
    "licenseInfoInFiles NONE": _set(_MID, "licenseInfoInFiles", ["NONE"]),
    "licenseInfoInFiles NOASSERTION": _set(_MID, "licenseInfoInFiles", ["NOASSERTION"]),
    "licenseInfoInFiles unknown ref": _set(_MID, "licenseInfoInFiles", ["LicenseRef-Nope"]),
    "licenseInfoInFiles string": _set(_MID, "licenseInfoInFiles", "MIT"),
    "licenseComments": _set(_MID, "licenseComments", "c"),
}

_SPDX_LICENCES: dict[str, Mutation] = {
    **{
        f"licenseConcluded {text!r}": _set(_MID, "licenseConcluded", text)
        for text in (
            "NONE",
            "NOASSERTION",
            "none",
            "noassertion",
            " NOASSERTION",
            "NOASSERTION\n",
            "Foo-1.0",
            "mit",
            "MIT\n",
            " MIT ",
            "(MIT)",
            "MIT+",
            "GPL-2.0+",
            "MIT OR",
            "MIT AND (",
            "AND",
            "LicenseRef-Nope",
            "LicenseRef-",
            "LicenseRef-NVIDIA-CUDA-EULA",
            "licenseref-nvidia-cuda-eula",
            "LicenseRef-NVIDIA-CUDA-EULA\n",
            "DocumentRef-x:LicenseRef-a",
            "a:b:c",
            "Classpath-exception-2.0",
            "MIT WITH Classpath-exception-2.0",
            "GPL-2.0-only WITH Classpath-exception-2.0",
            "GPL-2.0-only WITH MIT",
            "GPL-2.0-only WITH Foo-exception",
            "GPL-2.0-only WITH LicenseRef-NVIDIA-CUDA-EULA",
            "MIT AND NOASSERTION",
            "NONE OR MIT",
            "MIT AND MIT",
            "Apache-2.0 AND MIT AND LicenseRef-Nope",
            "MIT\u00a0AND Apache-2.0",
            _LONG,
        )
    },
}

_SPDX_NAMES: dict[str, Mutation] = {
    "fileName absolute": _set(_MID, "fileName", "/bin/x.dll"),
    "fileName without ./": _set(_MID, "fileName", "bin/x.dll"),
    "fileName backslash": _set(_MID, "fileName", "./bin\\x.dll"),
    "fileName dotdot": _set(_MID, "fileName", "./../x.dll"),
    "fileName dot only": _set(_MID, "fileName", "./"),
    "fileName newline": _set(_MID, "fileName", "./x\n"),
    "fileName NUL": _set(_MID, "fileName", "./x\x00"),
    "fileName duplicate": lambda raw: _f(raw, _MID).__setitem__("fileName", _f(raw, 0)["fileName"]),
}

_SPDX_FILE_TYPES: dict[str, Mutation] = {
    "fileTypes lowercase": _set(_MID, "fileTypes", ["text"]),
    "fileTypes twice": _set(_MID, "fileTypes", ["TEXT", "TEXT"]),
    "fileTypes OTHER": _set(_MID, "fileTypes", ["OTHER"]),
    "fileTypes SPDX": _set(_MID, "fileTypes", ["SPDX"]),
    "fileTypes None item": _set(_MID, "fileTypes", [None]),
    "fileTypes string": _set(_MID, "fileTypes", "TEXT"),
    "fileTypes unknown": _set(_MID, "fileTypes", ["EXECUTABLE"]),
}

_SPDX_OTHER_STRING_FIELDS: dict[str, Mutation] = {
    "copyrightText NONE": _set(_MID, "copyrightText", "NONE"),
    "copyrightText noassertion": _set(_MID, "copyrightText", "noassertion"),
    "comment unicode": _set(_MID, "comment", "\u202e\ufeff\ud7ff"),
    "comment lone surrogate": _set(_MID, "comment", "\ud800"),
    "SPDXID lone surrogate": _set(_MID, "SPDXID", "SPDXRef-\udc00"),
    "fileName lone surrogate": _set(_MID, "fileName", "./\ud800.dll"),
    "licenseConcluded lone surrogate": _set(_MID, "licenseConcluded", "LicenseRef-\ud800"),
    "SHA256 lone surrogate": _sum(_MID, 1, "checksumValue", "c" * 63 + "\ud800"),
}

_SPDX_ENTRIES: dict[str, Mutation] = {
    "entry None": lambda raw: raw["files"].__setitem__(_MID, None),
    "entry string": lambda raw: raw["files"].__setitem__(_MID, "./x"),
    "entry list": lambda raw: raw["files"].__setitem__(_MID, []),
    "entry empty dict": lambda raw: raw["files"].__setitem__(_MID, {}),
    "files empty": lambda raw: raw.__setitem__("files", []),
    "files a dict": lambda raw: raw.__setitem__("files", {}),
    "files None": lambda raw: raw.__setitem__("files", None),
    "no files key": lambda raw: raw.pop("files"),
}

_SPDX_RELATIONSHIPS: dict[str, Mutation] = {
    "CONTAINS duplicated": _append_rel(lambda raw: copy.deepcopy(_contains_rows(raw)[3])),
    "CONTAINS reversed": _reverse,
    "CONTAINED_BY instead": _contained_by,
    "CONTAINS to a missing file": _rel(_LAST, "relatedSpdxElement", "SPDXRef-File-missing"),
    "CONTAINS to a bad id": _rel(_LAST, "relatedSpdxElement", "SPDXRef-File x"),
    "CONTAINS to NONE": _rel(_LAST, "relatedSpdxElement", "NONE"),
    "CONTAINS to NOASSERTION": _rel(_LAST, "relatedSpdxElement", "NOASSERTION"),
    "CONTAINS to the package": lambda raw: _rel(_LAST, "relatedSpdxElement", _pkg(raw)["SPDXID"])(raw),
    "CONTAINS from a missing id": _rel(_LAST, "spdxElementId", "SPDXRef-Nowhere"),
    "CONTAINS from id with newline": lambda raw: _rel(_LAST, "spdxElementId", _pkg(raw)["SPDXID"] + "\n")(
        raw
    ),
    "CONTAINS from a file": lambda raw: _rel(_LAST, "spdxElementId", _f(raw, 0)["SPDXID"])(raw),
    "CONTAINS from the document": lambda raw: _rel(_LAST, "spdxElementId", raw["SPDXID"])(raw),
    "CONTAINS from external": _rel(_LAST, "spdxElementId", "DocumentRef-x:SPDXRef-a"),
    "CONTAINS from int": _rel(_LAST, "spdxElementId", 7),
    "CONTAINS from None": _rel(_LAST, "spdxElementId", None),
    "CONTAINS to int": _rel(_LAST, "relatedSpdxElement", 7),
    "CONTAINS to None": _rel(_LAST, "relatedSpdxElement", None),
    "CONTAINS type lowercase": _rel(_LAST, "relationshipType", "contains"),
    "CONTAINS type trailing space": _rel(_LAST, "relationshipType", "CONTAINS "),
    "CONTAINS type int": _rel(_LAST, "relationshipType", 1),
    "CONTAINS with comment": _rel(_LAST, "comment", "c"),
    "CONTAINS with comment int": _rel(_LAST, "comment", 1),
    "CONTAINS with extra key": _rel(_LAST, "x", "y"),
    "CONTAINS missing type": lambda raw: _contains_rows(raw)[-1].pop("relationshipType"),
    "CONTAINS not a dict": lambda raw: raw["relationships"].__setitem__(-1, "CONTAINS"),
    "no CONTAINS": lambda raw: raw.__setitem__(
        "relationships", [r for r in raw["relationships"] if r["relationshipType"] != "CONTAINS"]
    ),
    "no relationships": lambda raw: raw.pop("relationships"),
    "relationships a dict": lambda raw: raw.__setitem__("relationships", {}),
    "DESCRIBES last": lambda raw: raw["relationships"].append(raw["relationships"].pop(0)),
    "DESCRIBES a file, at the end": _append_rel(
        lambda raw: {
            "spdxElementId": raw["SPDXID"],
            "relationshipType": "DESCRIBES",
            "relatedSpdxElement": _f(raw, 0)["SPDXID"],
        }
    ),
}

_SPDX_IMPLICIT_RELATIONSHIPS: dict[str, Mutation] = {
    "hasFiles, no CONTAINS": _has_files(_file_ids, keep_contains=False),
    "hasFiles with NONE (not hoisted)": _unhoisted(None, None),
    # Once failed: the fast path reported the CONTAINS message of the bad id twice.
    "hasFiles with NONE (not hoisted), bad file id": _unhoisted("SPDXRef-a_b", None),
    "hasFiles, documentDescribes NOASSERTION (not hoisted), bad file id": _unhoisted(
        "SPDXRef-a_b", ["NOASSERTION"]
    ),
    "hasFiles, documentDescribes NOASSERTION (not hoisted)": _unhoisted(None, ["NOASSERTION"]),
    "hasFiles and CONTAINS": _has_files(_file_ids, keep_contains=True),
    "hasFiles missing file": _has_files(lambda raw: [*_file_ids(raw), "SPDXRef-File-missing"], False),
    "hasFiles duplicated": _has_files(lambda raw: _file_ids(raw) * 2, False),
    "hasFiles int": _has_files(lambda raw: [7], True),
    "hasFiles string": _has_files(lambda raw: _file_ids(raw)[0], True),
    "hasFiles NONE": _has_files(lambda raw: ["NONE"], True),
    "documentDescribes package": _describes(lambda raw: [_pkg(raw)["SPDXID"]], keep=False),
    "documentDescribes package too": _describes(lambda raw: [_pkg(raw)["SPDXID"]], keep=True),
    "documentDescribes a file": _describes(lambda raw: [_f(raw, 0)["SPDXID"]], keep=True),
    "documentDescribes missing": _describes(lambda raw: ["SPDXRef-missing"], keep=False),
    "documentDescribes int": _describes(lambda raw: [7], keep=True),
    "documentDescribes empty": _describes(lambda raw: [], keep=False),
    "file SPDXID NONE, CONTAINS to it": lambda raw: _name_file(raw, "NONE"),
    "file SPDXID NOASSERTION, CONTAINS to it": lambda raw: _name_file(raw, "NOASSERTION"),
    "file SPDXID newline, CONTAINS to it": lambda raw: _name_file(raw, _f(raw, _LAST)["SPDXID"] + "\n"),
    "file SPDXID cyrillic, CONTAINS to it": lambda raw: _name_file(raw, "SPDXRef-\u0430"),
    "file SPDXID external, CONTAINS to it": lambda raw: _name_file(raw, "DocumentRef-ext:SPDXRef-a"),
    "CONTAINS from NONE": _rel(_LAST, "spdxElementId", "NONE"),
    "CONTAINS from NOASSERTION": _rel(_LAST, "spdxElementId", "NOASSERTION"),
}

_SPDX_OTHER_ELEMENTS_NAMING_FILES: dict[str, Mutation] = {
    "snippet of a file": lambda raw: raw.__setitem__("snippets", [_snippet(_f(raw, 0)["SPDXID"])]),
    "snippet of a missing file": lambda raw: raw.__setitem__("snippets", [_snippet("SPDXRef-File-missing")]),
    "snippet id = a file's": lambda raw: raw.__setitem__(
        "snippets", [{**_snippet(_f(raw, 0)["SPDXID"]), "SPDXID": _f(raw, 1)["SPDXID"]}]
    ),
    "annotation of a file": lambda raw: raw.__setitem__("annotations", [_annotation(_f(raw, 0)["SPDXID"])]),
    "annotation of a missing file": lambda raw: raw.__setitem__("annotations", [_annotation("SPDXRef-nope")]),
    "external ref, licence from it": lambda raw: _with_external(raw, "DocumentRef-ext:LicenseRef-a"),
    "external ref, unknown document": lambda raw: _with_external(raw, "DocumentRef-other:LicenseRef-a"),
    "external ref, no LicenseRef-": lambda raw: _with_external(raw, "DocumentRef-ext:MIT"),
    "all files: SHA256 uppercase": lambda raw: _every_file(
        raw,
        lambda f: f["checksums"][1].__setitem__("checksumValue", f["checksums"][1]["checksumValue"].upper()),
    ),
    "all files: licence unknown": lambda raw: _every_file(
        raw, lambda f: f.__setitem__("licenseConcluded", "X-1")
    ),
    "all files: same SPDXID": lambda raw: _every_file(raw, lambda f: f.__setitem__("SPDXID", "SPDXRef-same")),
    "all files: no SHA1": lambda raw: _every_file(raw, lambda f: f["checksums"].pop(0)),
}

_SPDX_PACKAGE: dict[str, Mutation] = {
    "second package, files analyzed false": lambda raw: raw["packages"].append(
        {**copy.deepcopy(_pkg(raw)), "SPDXID": "SPDXRef-p2", "filesAnalyzed": False}
    ),
    "filesAnalyzed false": lambda raw: _pkg(raw).__setitem__("filesAnalyzed", False),
    "filesAnalyzed string": lambda raw: _pkg(raw).__setitem__("filesAnalyzed", "true"),
    "filesAnalyzed absent": lambda raw: _pkg(raw).pop("filesAnalyzed"),
    "package SPDXID = a file's": lambda raw: _pkg(raw).__setitem__("SPDXID", _f(raw, 0)["SPDXID"]),
    "document SPDXID = a file's": lambda raw: raw.__setitem__("SPDXID", _f(raw, 0)["SPDXID"]),
    "extracted licence removed": lambda raw: raw["hasExtractedLicensingInfos"].pop(0),
    "extracted licence id newline": lambda raw: raw["hasExtractedLicensingInfos"][0].__setitem__(
        "licenseId", raw["hasExtractedLicensingInfos"][0]["licenseId"] + "\n"
    ),
    "spdxVersion 2.2": lambda raw: raw.__setitem__("spdxVersion", "SPDX-2.2"),
    "spdxVersion newline": lambda raw: raw.__setitem__("spdxVersion", "SPDX-2.3\n"),
}

_SPDX: dict[str, Mutation] = {
    **_wrong_types(),
    **_SPDX_IDS,
    **_SPDX_DIGESTS,
    **_SPDX_UNKNOWN_KEYS,
    **_SPDX_LICENCES,
    **_SPDX_NAMES,
    **_SPDX_FILE_TYPES,
    **_SPDX_OTHER_STRING_FIELDS,
    **_SPDX_ENTRIES,
    **_SPDX_RELATIONSHIPS,
    **_SPDX_IMPLICIT_RELATIONSHIPS,
    **_SPDX_OTHER_ELEMENTS_NAMING_FILES,
    **_SPDX_PACKAGE,
}


@pytest.mark.parametrize("name", list(_SPDX))
def test_spdx_mutation_gets_the_library_verdict_and_messages(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = _load("spdx.json")
    _SPDX[name](raw)
    fast, library = _spdx_both(_encode(raw), monkeypatch)
    assert fast == library


def test_the_clean_spdx_document_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _spdx_both(_golden("spdx.json"), monkeypatch) == ([], [])


# --- CycloneDX ----------------------------------------------------------------------------------


def _occ(raw: Raw, i: int) -> Any:
    return raw["metadata"]["component"]["evidence"]["occurrences"][i]


def _occurrences(raw: Raw) -> list[Any]:
    found: list[Any] = raw["metadata"]["component"]["evidence"]["occurrences"]
    return found


def _component_with_occurrences(raw: Raw) -> Raw:
    found: Raw = next(c for c in raw["components"] if len(c.get("evidence", {}).get("occurrences", [])) > 1)
    return found


def _oset(i: int, key: str, value: Any) -> Mutation:
    return lambda raw: _occ(raw, i).__setitem__(key, copy.deepcopy(value))


def _odrop(i: int, key: str) -> Mutation:
    return lambda raw: _occ(raw, i).pop(key)


def _oreplace(i: int, value: Any) -> Mutation:
    return lambda raw: _occurrences(raw).__setitem__(i, copy.deepcopy(value))


def _oref_from(i: int, other: Callable[[Raw], Any]) -> Mutation:
    return lambda raw: _occ(raw, i).__setitem__("bom-ref", other(raw))


_OCC_FIELDS = ("location", "bom-ref", "additionalContext", "line", "offset", "symbol")
_OCC_VALUES: dict[str, Any] = {
    **_WRONG_TYPES,
    "zero": 0,
    "negative": -1,
    "float integral": 1.0,
    "float negative": -1.0,
    "false": False,
    "digit string": "1",
    "huge int": 2**70,
    "unicode": "\u0430\u202e\ufeff",
    "newline": "\n",
    "lone surrogate": "\ud800",
}


def _twin_component(raw: Raw) -> None:
    """A copy of a component whose only difference is a later occurrence (equal once cut)."""
    twin = copy.deepcopy(_component_with_occurrences(raw))
    twin["evidence"]["occurrences"][1]["location"] += "-twin"
    raw["components"].append(twin)


def _cdx_mutations() -> dict[str, Mutation]:
    out: dict[str, Mutation] = {"clean": lambda raw: None}
    for where, i in (("first", 0), ("later", 5), ("last", -1)):
        for field in _OCC_FIELDS:
            for name, value in _OCC_VALUES.items():
                out[f"{where}: {field} {name}"] = _oset(i, field, value)
        for field in ("location", "bom-ref", "additionalContext"):
            out[f"{where}: no {field}"] = _odrop(i, field)
        for name, value in {"string": "x", "None": None, "list": [], "empty dict": {}, "int": 1}.items():
            out[f"{where}: occurrence {name}"] = _oreplace(i, value)
        out[f"{where}: extra key"] = _oset(i, "x", "y")
        out[f"{where}: properties key"] = _oset(i, "properties", [{"name": "a", "value": "b"}])
        out[f"{where}: bom-ref of another occurrence"] = _oref_from(i, lambda raw: _occ(raw, 2)["bom-ref"])
        out[f"{where}: bom-ref of a component"] = _oref_from(i, lambda raw: raw["components"][0]["bom-ref"])
        out[f"{where}: bom-ref of the metadata component"] = _oref_from(
            i, lambda raw: raw["metadata"]["component"]["bom-ref"]
        )
    out.update(
        {
            "occurrence duplicated": lambda raw: _occurrences(raw).append(copy.deepcopy(_occ(raw, 3))),
            "occurrences empty": lambda raw: raw["metadata"]["component"]["evidence"].__setitem__(
                "occurrences", []
            ),
            "occurrences a dict": lambda raw: raw["metadata"]["component"]["evidence"].__setitem__(
                "occurrences", {}
            ),
            "occurrences None": lambda raw: raw["metadata"]["component"]["evidence"].__setitem__(
                "occurrences", None
            ),
            "evidence extra key": lambda raw: raw["metadata"]["component"]["evidence"].__setitem__("x", 1),
            "evidence identity": lambda raw: raw["metadata"]["component"]["evidence"].__setitem__(
                "identity", [{"field": "purl", "confidence": 1}]
            ),
            "evidence a list": lambda raw: raw["metadata"]["component"].__setitem__("evidence", []),
            "component: later occurrence bad": lambda raw: _component_with_occurrences(raw)["evidence"][
                "occurrences"
            ][1].__setitem__("line", True),
            "component: later occurrence no location": lambda raw: _component_with_occurrences(raw)[
                "evidence"
            ]["occurrences"][1].pop("location"),
            "component: bom-ref = occurrence's": lambda raw: _component_with_occurrences(raw).__setitem__(
                "bom-ref", _occ(raw, 4)["bom-ref"]
            ),
            "nested component with bad occurrence": lambda raw: _component_with_occurrences(raw).__setitem__(
                "components",
                [
                    {
                        "type": "file",
                        "name": "n",
                        "bom-ref": "nested:n",
                        "evidence": {"occurrences": [{"location": "a"}, {"location": "b", "line": -1}]},
                    }
                ],
            ),
            "component copy differing only in a later occurrence": _twin_component,
            "metadata component a list": lambda raw: raw["metadata"].__setitem__("component", []),
            "specVersion 1.5": lambda raw: raw.__setitem__("specVersion", "1.5"),
        }
    )
    return out


_CDX = _cdx_mutations()


@pytest.mark.parametrize("name", list(_CDX))
def test_cyclonedx_mutation_gets_the_schema_verdict_and_message(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = _load("cdx.json")
    _CDX[name](raw)
    fast, library = _cdx_both(_encode(raw), monkeypatch)
    assert fast == library


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("clean", True),
        ("later: line zero", True),
        ("later: line float integral", True),  # jsonschema: 1.0 is an integer
        ("later: line true", False),  # ... and True is not
        ("later: offset negative", False),
        ("later: bom-ref empty", False),
        ("later: no location", False),
        ("later: extra key", False),
    ],
)
def test_cyclonedx_occurrence_verdicts_are_the_schemas(
    name: str, valid: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = _load("cdx.json")
    _CDX[name](raw)
    fast, library = _cdx_both(_encode(raw), monkeypatch)
    assert fast == library
    assert (fast == []) is valid


# --- JSON-level attacks (before either path) ----------------------------------------------------


def _dup_key(data: bytes, needle: bytes, extra: bytes) -> bytes:
    assert needle in data
    return data.replace(needle, needle + b", " + extra, 1)


def _byte_attacks(key: bytes) -> dict[str, Callable[[bytes], bytes]]:
    return {
        "clean": lambda data: data,
        "duplicate key in an entry": lambda data: _dup_key(data, key, key),
        "NaN value": lambda data: _dup_key(data, key, b'"x-nan": NaN'),
        "Infinity value": lambda data: _dup_key(data, key, b'"x-inf": -Infinity'),
        "huge exponent": lambda data: _dup_key(data, key, b'"x-big": 1e999'),
        "UTF-8 BOM": lambda data: b"\xef\xbb\xbf" + data,
        "CRLF line ends": lambda data: data.replace(b"\n", b"\r\n"),
        "CRLF inside only": lambda data: data[:-1].replace(b"\n", b"\r\n") + b"\n",
        "no final LF": lambda data: data[:-1],
        "two final LFs": lambda data: data + b"\n",
        "trailing garbage": lambda data: data + b"x",
        "lone surrogate escape": lambda data: _dup_key(data, key, b'"x-s": "\\ud800"'),
        "NUL escape": lambda data: _dup_key(data, key, b'"x-z": "\\u0000"'),
        "invalid UTF-8": lambda data: _dup_key(data, key, b'"x-u": "\xff"'),
        "top-level array": lambda data: b"[" + data.rstrip(b"\n") + b"]\n",
    }


def _spdx_key() -> bytes:
    raw = _load("spdx.json")
    return b'"SPDXID": ' + json.dumps(_f(raw, _MID)["SPDXID"]).encode()


def _cdx_key() -> bytes:
    raw = _load("cdx.json")
    return b'"bom-ref": ' + json.dumps(_occ(raw, 5)["bom-ref"]).encode()


_SPDX_BYTES = _byte_attacks(_spdx_key())
_CDX_BYTES = _byte_attacks(_cdx_key())
# What both paths accept (CRLF is JSON whitespace and the bytes still end in one LF; in SPDX an
# extra key in a file entry is ignored by spdx-tools, whatever its string value).
_SPDX_BYTES_ACCEPTED = {"clean", "CRLF line ends", "CRLF inside only", "lone surrogate escape", "NUL escape"}
_CDX_BYTES_ACCEPTED = {"clean", "CRLF line ends", "CRLF inside only"}


@pytest.mark.parametrize("name", list(_SPDX_BYTES))
def test_spdx_json_level_attack_gets_the_library_outcome(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _SPDX_BYTES[name](_golden("spdx.json"))
    fast, library = _spdx_both(data, monkeypatch)
    assert fast == library
    assert (fast == []) == (name in _SPDX_BYTES_ACCEPTED)


@pytest.mark.parametrize("name", list(_CDX_BYTES))
def test_cyclonedx_json_level_attack_gets_the_schema_outcome(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _CDX_BYTES[name](_golden("cdx.json"))
    fast, library = _cdx_both(data, monkeypatch)
    assert fast == library
    assert (fast == []) == (name in _CDX_BYTES_ACCEPTED)
