"""The per-file part of an SPDX 2.3 JSON document, validated without a model object per file.

spdx-tools builds a beartype-checked ``File`` (with ``Checksum`` objects and a licence expression)
and a ``Relationship`` per file while parsing, then validates each; at 10k files that is most of
what ``verify`` and the build's self-check spend on the SPDX document. For a document whose
per-file part has the *canonical shape* (what :func:`sbom.spdx_file_inventory` writes; see
:func:`split_canonical`), the files and the CONTAINS relationships to them stay JSON dicts:

* the rest of the document (the *skeleton*: packages, creation info, licences, other
  relationships) is parsed and validated by spdx-tools' parser and our linear validator as before
  (``sbom._spdx_validate.validate_full_document`` with this module's :class:`CanonicalFiles` as
  its ``extra`` files, so the messages keep spdx-tools' order);
* each file entry and relationship is tested by a predicate that holds only when spdx-tools'
  per-file rules (``validate_file_within_document``, ``validate_checksum``, ``validate_spdx_id``,
  ``validate_license_expression``; relationship ends ``validate_relationship``) give no message
  for it, using the library's own regular expressions and checksum lengths; an entry for which it
  does not hold is parsed by spdx-tools' ``FileParser`` / ``RelationshipParser`` and validated by
  the library's rules, so every message is the library's own text;
* a licence expression is parsed by spdx-tools' parser once per distinct text.

Anything else (another SPDX version, another key or type in a file entry, a checksum other than
SHA1/SHA256, a licence text spdx-tools cannot parse, a package with ``filesAnalyzed`` other than
true, a skeleton spdx-tools cannot parse) makes :func:`split_canonical` / :func:`validate_canonical`
return ``None``, and the caller takes the unchanged library path. ``tests/test_spdx_fast.py``
holds the verdicts and messages equal to the library path on small documents and one-rule
mutations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ninfer_release.sbom._spdx_skeleton import FILE_TYPES
from ninfer_release.sbom._spdx_validate import (
    _Index,
    _license_texts,
    _Out,
    check_file,
    check_relationship,
    validate_full_document,
)

_FILE_KEYS = frozenset(
    {"SPDXID", "checksums", "comment", "copyrightText", "fileName", "fileTypes", "licenseConcluded"}
)
_FILE_REQUIRED = ("SPDXID", "checksums", "fileName")
_FILE_STRINGS = ("SPDXID", "fileName", "comment", "copyrightText", "licenseConcluded")
_CHECKSUM_KEYS = frozenset({"algorithm", "checksumValue"})
_ALGORITHMS = ("SHA1", "SHA256")
_RELATIONSHIP_KEYS = frozenset({"spdxElementId", "relationshipType", "relatedSpdxElement"})


def _is_canonical_file(entry: Any, file_types: frozenset[str]) -> bool:
    """A dict with only the keys our writer uses, each of the type spdx-tools' parser accepts.

    Plain loops, not ``all()`` over generators: this runs once per file (issue 13).
    """
    if type(entry) is not dict or not _FILE_KEYS.issuperset(entry):
        return False
    for k in _FILE_REQUIRED:
        if k not in entry:
            return False
    for k in _FILE_STRINGS:
        if k in entry and type(entry[k]) is not str:
            return False
    if not _canonical_checksums(entry["checksums"]):
        return False
    types = entry.get("fileTypes", [])
    return type(types) is list and all(type(t) is str and t in file_types for t in types)


def _canonical_checksums(sums: Any) -> bool:
    """A non-empty list of ``{algorithm: SHA1|SHA256, checksumValue: <string>}``."""
    if type(sums) is not list or not sums:
        return False
    for c in sums:
        if not (
            type(c) is dict
            and c.keys() == _CHECKSUM_KEYS
            and c["algorithm"] in _ALGORITHMS
            and type(c["checksumValue"]) is str
        ):
            return False
    return True


def _is_file_contains(relationship: Any, file_ids: Container[str]) -> bool:
    """``{spdxElementId, relationshipType: CONTAINS, relatedSpdxElement: <a file's id>}``, nothing else."""
    return (
        type(relationship) is dict
        and relationship.keys() == _RELATIONSHIP_KEYS
        and relationship["relationshipType"] == "CONTAINS"
        and type(relationship["spdxElementId"]) is str
        and type(relationship["relatedSpdxElement"]) is str
        and relationship["relatedSpdxElement"] in file_ids
    )


def _checksum_patterns() -> dict[str, re.Pattern[str]]:
    """spdx-tools' ``validate_checksum`` expression for SHA1 and SHA256 (``algorithm_length``)."""
    from spdx_tools.spdx.model.checksum import ChecksumAlgorithm
    from spdx_tools.spdx.validation.checksum_validator import algorithm_length

    return {a: re.compile("^[0-9a-f]{" + algorithm_length[ChecksumAlgorithm[a]] + "}$") for a in _ALGORITHMS}


def _id_is_clean(spdx_id: str, index: _Index) -> bool:
    """``validate_spdx_id(spdx_id, document, check_document=True)`` gives no message."""
    from spdx_tools.spdx.validation.spdx_id_validators import is_valid_internal_spdx_id

    return ":" not in spdx_id and is_valid_internal_spdx_id(spdx_id) and spdx_id in index.all_ids


@dataclass(frozen=True)
class CanonicalFiles:
    """The canonical file entries and CONTAINS relationships of a document, as JSON dicts.

    ``entries``: the ``files`` list; ``relationships``: the CONTAINS tail of ``relationships``;
    ``licenses``: each distinct ``licenseConcluded`` text → its licence object (spdx-tools' parse
    of it when reading); ``file_model(i)``: the spdx-tools File an unclean ``entries[i]`` is
    validated as (default: spdx-tools' ``FileParser`` of the entry; the writer passes the model it
    would have built). Implements ``sbom._spdx_validate.ExtraFiles``.
    """

    entries: Sequence[dict[str, Any]]
    relationships: Sequence[dict[str, Any]]
    licenses: dict[str, Any]
    file_model: Callable[[int], Any] | None = None

    @property
    def file_ids(self) -> Sequence[str]:
        """Every entry's SPDXID, in document order."""
        return [e["SPDXID"] for e in self.entries]

    def check_files(self, out: _Out, document: Any, version: str, index: _Index) -> None:
        """The messages of spdx-tools' per-file rules, in order (the library's, for an unclean entry)."""
        from spdx_tools.spdx.model.spdx_no_assertion import SpdxNoAssertion
        from spdx_tools.spdx.model.spdx_none import SpdxNone
        from spdx_tools.spdx.parser.jsonlikedict.file_parser import FileParser
        from spdx_tools.spdx.validation.spdx_id_validators import is_valid_internal_spdx_id

        clean_license = {
            text: isinstance(parsed, SpdxNoAssertion | SpdxNone) or not _license_texts(parsed, index)
            for text, parsed in self.licenses.items()
        }
        patterns = _checksum_patterns()
        for i, entry in enumerate(self.entries):
            sums = entry["checksums"]
            clean = (
                ":" not in entry["SPDXID"]
                and is_valid_internal_spdx_id(entry["SPDXID"])
                and ("licenseConcluded" not in entry or clean_license[entry["licenseConcluded"]])
                and not entry["fileName"].startswith("/")
                and any(c["algorithm"] == "SHA1" for c in sums)
                and all(patterns[c["algorithm"]].match(c["checksumValue"]) for c in sums)
            )
            if not clean:
                model = self.file_model(i) if self.file_model is not None else FileParser().parse_file(entry)  # type: ignore[no-untyped-call]
                check_file(out, document, model, version, index)

    def check_relationships(self, out: _Out, version: str, index: _Index) -> None:
        """The messages of spdx-tools' relationship rules, in order (the library's, for an unclean one)."""
        from spdx_tools.spdx.parser.jsonlikedict.relationship_parser import RelationshipParser

        clean: dict[str, bool] = {}  # the verdict per id: a document repeats its package's id per file

        def is_clean(spdx_id: str) -> bool:
            verdict = clean.get(spdx_id)
            if verdict is None:
                verdict = clean[spdx_id] = _id_is_clean(spdx_id, index)
            return verdict

        for relationship in self.relationships:
            if not (is_clean(relationship["spdxElementId"]) and is_clean(relationship["relatedSpdxElement"])):
                model = RelationshipParser().parse_relationship(relationship)  # type: ignore[no-untyped-call]
                check_relationship(out, model, version, index)


def split_canonical(raw: dict[str, Any]) -> tuple[dict[str, Any], Sequence[Any], Sequence[Any]] | None:
    """``(skeleton, files, contains)`` of a canonical SPDX 2.3 JSON object, or ``None``.

    Canonical: ``spdxVersion`` is ``SPDX-2.3``; ``files`` is a non-empty list of entries with only
    the keys SPDXID, checksums (a non-empty list of SHA1/SHA256 ``{algorithm, checksumValue}``),
    comment, copyrightText, fileName, fileTypes (FileType names), licenseConcluded, all strings
    where spdx-tools wants one; every package has ``filesAnalyzed`` absent or true and no
    ``hasFiles``, and there is no ``documentDescribes`` (both hoisted); ``relationships`` a list.
    ``contains`` is its longest tail of bare ``CONTAINS`` relationships to listed files; the
    skeleton is ``raw`` without ``files`` and with the other relationships. ``raw`` must already
    have its implicit relationships hoisted (``sbom._spdx.hoist_implicit_relationships``).
    """
    files = raw.get("files")
    relationships = raw.get("relationships", [])
    if type(files) is not list or type(relationships) is not list:
        return None
    types = file_types()
    if not all(_is_canonical_file(f, types) for f in files):
        return None
    return split_checked(raw, files, relationships, {f["SPDXID"] for f in files})


def file_types() -> frozenset[str]:
    """spdx-tools' FileType names (what a canonical entry's ``fileTypes`` may hold): the copy
    ``sbom._spdx_skeleton.FILE_TYPES``, compared with the library's enum in the tests."""
    return FILE_TYPES


def is_canonical_file(entry: Any, types: frozenset[str]) -> bool:
    """Whether one file entry has the canonical shape (:func:`split_canonical`; ``types``:
    :func:`file_types`)."""
    return _is_canonical_file(entry, types)


def split_checked(
    raw: Mapping[str, Any],
    files: Sequence[Any],
    relationships: Sequence[Any],
    file_ids: Container[str],
) -> tuple[dict[str, Any], Sequence[Any], Sequence[Any]] | None:
    """:func:`split_canonical` of ``raw`` whose ``files`` (every entry canonical) and
    ``relationships`` (a sequence) are given apart; ``file_ids``: the entries' SPDXIDs. The
    ``contains`` tail is ``relationships[cut:]`` (a slice of the given sequence)."""
    packages = raw.get("packages", [])
    if raw.get("spdxVersion") != "SPDX-2.3" or not files or type(packages) is not list:
        return None
    if not all(type(p) is dict and p.get("filesAnalyzed", True) is True for p in packages):
        return None
    if "documentDescribes" in raw or any("hasFiles" in p for p in packages):
        # Not hoisted (a special value in them): spdx-tools' parser would add CONTAINS from
        # ``hasFiles`` to the skeleton, and the tail would be checked twice. The library path.
        return None
    cut = len(relationships)
    while cut > 0 and _is_file_contains(relationships[cut - 1], file_ids):
        cut -= 1
    skeleton = {k: v for k, v in raw.items() if k != "files"}
    skeleton["relationships"] = list(relationships[:cut])
    return skeleton, files, relationships[cut:]


def license_texts(entries: Iterable[dict[str, Any]]) -> list[str]:
    """Each distinct ``licenseConcluded`` of ``entries``, in first-seen order."""
    return list(dict.fromkeys(e["licenseConcluded"] for e in entries if "licenseConcluded" in e))


def _parse_licenses(texts: Iterable[str]) -> dict[str, Any] | None:
    """Each distinct ``licenseConcluded`` text → spdx-tools' parse, or ``None`` if one does not parse."""
    from spdx_tools.spdx.parser.error import SPDXParsingError
    from spdx_tools.spdx.parser.jsonlikedict.license_expression_parser import LicenseExpressionParser

    parsed: dict[str, Any] = {}
    for text in texts:
        try:
            parsed[text] = LicenseExpressionParser.parse_license_expression(text)
        except SPDXParsingError:
            return None
    return parsed


@dataclass(frozen=True)
class CanonicalVerdict:
    """What :func:`validate_canonical` found: spdx-tools' messages (texts, in order), the
    skeleton's model (packages, creation info) and the per-file part as dicts."""

    messages: list[str]
    skeleton: Any
    files: CanonicalFiles


def validate_canonical(raw: dict[str, Any]) -> CanonicalVerdict | None:
    """spdx-tools' full validation of a canonical document (see :func:`split_canonical`), or
    ``None`` when ``raw`` is not canonical or its skeleton or a licence text does not parse (the
    caller then parses and validates the whole document with the library). Cost: linear in the
    files, one licence parse per distinct text; no model object per clean file.
    """
    split = split_canonical(raw)
    if split is None:
        return None
    skeleton_raw, entries, contains = split
    return validate_split(skeleton_raw, entries, contains, license_texts(entries))


def parse_skeleton(skeleton_raw: dict[str, Any]) -> Any:
    """The spdx-tools ``Document`` of a split skeleton (its files and ``CONTAINS`` tail taken out), or
    ``None`` when spdx-tools' JSON-like parser refuses it (the caller then checks the document whole)."""
    from spdx_tools.spdx.parser.error import SPDXParsingError
    from spdx_tools.spdx.parser.jsonlikedict.json_like_dict_parser import JsonLikeDictParser

    try:
        return JsonLikeDictParser().parse(skeleton_raw)  # type: ignore[no-untyped-call]
    except SPDXParsingError:
        return None


def validate_split(
    skeleton_raw: dict[str, Any],
    entries: Sequence[dict[str, Any]],
    contains: Sequence[dict[str, Any]],
    texts: Iterable[str],
) -> CanonicalVerdict | None:
    """:func:`validate_canonical` of a document already split (:func:`split_canonical`, or the
    streamed reader ``sbom._spdx_stream``); ``texts``: the distinct ``licenseConcluded`` values of
    ``entries``. ``None`` when the skeleton or a licence text does not parse."""
    licenses = _parse_licenses(texts)
    if licenses is None:
        return None
    skeleton = parse_skeleton(skeleton_raw)
    if skeleton is None:
        return None
    files = CanonicalFiles(entries=entries, relationships=contains, licenses=licenses)
    messages = validate_full_document(skeleton, "SPDX-2.3", extra=files)
    return CanonicalVerdict(messages=[m.validation_message for m in messages], skeleton=skeleton, files=files)
