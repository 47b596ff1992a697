"""Linear-time full validation of an SPDX 2.2/2.3 document model (spdx-tools 0.8.5 rules).

spdx-tools 0.8.5 ``validate_full_spdx_document`` is quadratic in the number of elements: every
relationship (and annotation) check rebuilds the list of all SPDX ids and scans it
(``is_spdx_id_present_in_document``), every snippet scans the file list, every licence expression
rebuilds the list of extracted licence ids, and a package with ``files_analyzed: false`` filters
all relationships and builds an id list per relationship (upstream spdx/tools-python #742, #790,
#818). A package of 10k files took ~47 s of CPU to build and ~23 s to verify.

:func:`validate_full_document` applies exactly the same rules, in the same order, with the same
messages and contexts: it calls spdx-tools' own per-element validators wherever they do not look
at the whole document (creation info, ``validate_file``, ``validate_package``, ``validate_snippet``,
actors, extracted licensing infos) and replaces only the whole-document look-ups with one index of
sets and dicts built once (:class:`_Index`). Licence expressions are validated once per distinct
expression text (the verdict depends only on the text and the document's fixed id sets).

Why not our own rule set: the rules stay spdx-tools' (the library we rely on for SPDX); what is
ours is only the look-up structure, and ``tests/test_spdx_validate.py`` checks that the messages
equal ``validate_full_spdx_document``'s on small valid and invalid documents, so a change of
upstream rules shows up as a test failure, not as silent drift.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

_SUPPORTED_VERSIONS = ("SPDX-2.2", "SPDX-2.3")


@dataclass
class _Index:
    """Whole-document look-ups, each built once in O(n)."""

    all_ids: set[str]
    file_ids: set[str]
    package_ids: set[str]
    snippet_ids: set[str]
    external_refs: set[str]
    license_refs: set[str]
    by_type_origin: dict[tuple[Any, str], list[Any]]
    by_type_target: dict[tuple[Any, str], list[Any]]
    license_cache: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, document: Any, extra_file_ids: Iterable[str] = ()) -> _Index:
        """The index of ``document`` plus the ids of files held outside its model (:class:`ExtraFiles`)."""
        by_origin: dict[tuple[Any, str], list[Any]] = defaultdict(list)
        by_target: dict[tuple[Any, str], list[Any]] = defaultdict(list)
        for r in document.relationships:
            by_origin[(r.relationship_type, r.spdx_element_id)].append(r)
            if isinstance(r.related_spdx_element_id, str):  # NONE/NOASSERTION never name a package
                by_target[(r.relationship_type, r.related_spdx_element_id)].append(r)
        file_ids = {f.spdx_id for f in document.files} | set(extra_file_ids)
        package_ids = {p.spdx_id for p in document.packages}
        snippet_ids = {s.spdx_id for s in document.snippets}
        return cls(
            all_ids={document.creation_info.spdx_id} | file_ids | package_ids | snippet_ids,
            file_ids=file_ids,
            package_ids=package_ids,
            snippet_ids=snippet_ids,
            external_refs={r.document_ref_id for r in document.creation_info.external_document_refs},
            license_refs={e.license_id for e in document.extracted_licensing_info},
            by_type_origin=by_origin,
            by_type_target=by_target,
        )

    def element_type(self, spdx_id: Any) -> str | None:
        """``spdx_element_utils.get_element_type_from_spdx_id``, as a name (same precedence)."""
        if spdx_id in self.package_ids:
            return "Package"
        if spdx_id in self.file_ids:
            return "File"
        if spdx_id in self.snippet_ids:
            return "Snippet"
        return None


def _spdx_id_messages(
    spdx_id: str, index: _Index, *, check_document: bool = False, check_files: bool = False
) -> list[str]:
    """``spdx_id_validators.validate_spdx_id`` with set look-ups (same messages, same order)."""
    from spdx_tools.spdx.validation.spdx_id_validators import (
        is_valid_external_doc_ref_id,
        is_valid_internal_spdx_id,
    )

    messages: list[str] = []
    split_id = spdx_id.split(":")
    if len(split_id) > 2:
        return [
            "spdx_id must not contain more than one colon in order to separate the external document "
            f"reference id from the internal SPDX id, but is: {spdx_id}"
        ]
    if len(split_id) == 2:
        if not is_valid_external_doc_ref_id(split_id[0]):
            messages.append(
                "the external document reference part of spdx_id must only contain letters, numbers, "
                '".", "-" and "+" and must begin with "DocumentRef-", '
                f"but is: {split_id[0]}"
            )
        if not is_valid_internal_spdx_id(split_id[1]):
            messages.append(
                'the internal SPDX id part of spdx_id must only contain letters, numbers, "." and "-" '
                f'and must begin with "SPDXRef-", but is: {split_id[1]}'
            )
        if split_id[0] not in index.external_refs:
            messages.append(
                f'did not find the external document reference "{split_id[0]}" in the SPDX document'
            )
        return messages
    if not is_valid_internal_spdx_id(spdx_id):
        messages.append(
            'spdx_id must only contain letters, numbers, "." and "-" and must begin with "SPDXRef-", but is: '
            f"{spdx_id}"
        )
    if check_document and spdx_id not in index.all_ids:
        messages.append(f'did not find the referenced spdx_id "{spdx_id}" in the SPDX document')
    if check_files and spdx_id not in index.file_ids:
        messages.append(f'did not find the referenced spdx_id "{spdx_id}" in the SPDX document\'s files')
    return messages


def _license_texts(expression: Any, index: _Index) -> list[str]:
    """``license_expression_validator.validate_license_expression``'s messages for one expression."""
    from license_expression import ExpressionError, ExpressionParseError
    from spdx_tools.common.spdx_licensing import spdx_licensing

    key = str(expression)
    cached = index.license_cache.get(key)
    if cached is not None:
        return cached
    messages: list[str] = []
    for token in spdx_licensing.validate(expression).invalid_symbols:
        if ":" in token:
            split_token = token.split(":")
            if len(split_token) != 2:
                messages.append(
                    f"Too many colons in license reference: {token}. "
                    "A license reference must only contain a single colon to "
                    "separate an external document reference from the license reference."
                )
            else:
                if not split_token[1].startswith("LicenseRef-"):
                    messages.append(
                        f'A license reference must start with "LicenseRef-", but is: {split_token[1]} '
                        f"in external license reference {token}."
                    )
                if split_token[0] not in index.external_refs:
                    messages.append(
                        f'Did not find the external document reference "{split_token[0]}" '
                        f"in the SPDX document. From the external license reference {token}."
                    )
        elif token not in index.license_refs:
            messages.append(
                f"Unrecognized license reference: {token}. license_expression must only use IDs from the "
                f"license list or extracted licensing info, but is: {expression}"
            )
    try:
        spdx_licensing.parse(key, validate=True, strict=True)
    except ExpressionParseError as err:
        messages.append(f"{err}. for license_expression: {expression}")
    except ExpressionError:
        pass  # invalid symbols: reported above from validate(), as upstream does
    index.license_cache[key] = messages
    return messages


class _Out:
    """The message list being built (``ValidationMessage`` objects of spdx-tools)."""

    def __init__(self) -> None:
        from spdx_tools.spdx.validation.validation_message import ValidationMessage

        self.messages: list[Any] = []
        self._message = ValidationMessage

    def add(self, texts: Iterable[str], context: Any) -> None:
        self.messages.extend(self._message(t, context) for t in texts)

    def extend(self, messages: Iterable[Any]) -> None:
        self.messages.extend(messages)


def _licenses(out: _Out, expressions: Any, index: _Index, parent_id: str, context: Any = None) -> None:
    """One expression (``validate_license_expression``) or a list (``..._expressions``)."""
    from spdx_tools.spdx.model.spdx_no_assertion import SpdxNoAssertion
    from spdx_tools.spdx.model.spdx_none import SpdxNone
    from spdx_tools.spdx.validation.validation_message import SpdxElementType, ValidationContext

    kind = SpdxElementType.LICENSE_EXPRESSION
    if isinstance(expressions, list):
        shared = ValidationContext(parent_id=parent_id, element_type=kind, full_element=expressions)
        for expression in expressions:
            _licenses(out, expression, index, parent_id, shared)
        return
    if expressions is None or isinstance(expressions, SpdxNoAssertion | SpdxNone):
        return
    texts = _license_texts(expressions, index)
    if texts:
        ctx = context or ValidationContext(parent_id=parent_id, element_type=kind, full_element=expressions)
        out.add(texts, ctx)


def _element_context(document: Any, element: Any, kind: str) -> Any:
    """The context spdx-tools gives an element's messages (``kind``: PACKAGE, FILE or SNIPPET)."""
    from spdx_tools.spdx.validation.validation_message import SpdxElementType, ValidationContext

    return ValidationContext(
        spdx_id=element.spdx_id,
        parent_id=document.creation_info.spdx_id,
        element_type=SpdxElementType[kind],
        full_element=element,
    )


def _packages(out: _Out, document: Any, version: str, index: _Index) -> None:
    from spdx_tools.spdx.model.relationship import RelationshipType
    from spdx_tools.spdx.validation.package_validator import validate_package

    for package in document.packages:
        ctx = _element_context(document, package, "PACKAGE")
        out.add(_spdx_id_messages(package.spdx_id, index), ctx)
        if not package.files_analyzed:
            contains = index.by_type_origin.get((RelationshipType.CONTAINS, package.spdx_id), [])
            contained = index.by_type_target.get((RelationshipType.CONTAINED_BY, package.spdx_id), [])
            combined = [r for r in contains if index.element_type(r.related_spdx_element_id) == "File"] + [
                r for r in contained if index.element_type(r.spdx_element_id) == "File"
            ]
            if combined:
                out.add(
                    [f"package must contain no elements if files_analyzed is False, but found {combined}"],
                    ctx,
                )
        _licenses(out, package.license_concluded, index, package.spdx_id)
        from_files = package.license_info_from_files
        if from_files:
            if not package.files_analyzed:
                out.add(
                    [
                        "license_info_from_files must be None if files_analyzed is False, "
                        f"but is: {from_files}"
                    ],
                    ctx,
                )
            else:
                _licenses(out, from_files, index, package.spdx_id)
        _licenses(out, package.license_declared, index, package.spdx_id)
        out.extend(validate_package(package, version, ctx))


def check_file(out: _Out, document: Any, file: Any, version: str, index: _Index) -> None:
    """spdx-tools' ``validate_file_within_document`` for one File model, with the index's look-ups."""
    from spdx_tools.spdx.validation.file_validator import validate_file

    ctx = _element_context(document, file, "FILE")
    out.add(_spdx_id_messages(file.spdx_id, index), ctx)
    _licenses(out, file.license_concluded, index, file.spdx_id)
    _licenses(out, file.license_info_in_file, index, file.spdx_id)
    out.extend(validate_file(file, version, ctx))


def _files(out: _Out, document: Any, version: str, index: _Index) -> None:
    for file in document.files:
        check_file(out, document, file, version, index)


def _snippets(out: _Out, document: Any, version: str, index: _Index) -> None:
    from spdx_tools.spdx.validation.snippet_validator import validate_snippet

    for snippet in document.snippets:
        ctx = _element_context(document, snippet, "SNIPPET")
        out.add(_spdx_id_messages(snippet.spdx_id, index), ctx)
        out.add(_spdx_id_messages(snippet.file_spdx_id, index, check_files=True), ctx)
        _licenses(out, snippet.license_concluded, index, snippet.spdx_id)
        _licenses(out, snippet.license_info_in_snippet, index, snippet.spdx_id)
        out.extend(validate_snippet(snippet, version, ctx))


def _annotations(out: _Out, document: Any, index: _Index) -> None:
    from spdx_tools.spdx.validation.actor_validator import validate_actor
    from spdx_tools.spdx.validation.validation_message import SpdxElementType, ValidationContext

    for annotation in document.annotations:
        ctx = ValidationContext(element_type=SpdxElementType.ANNOTATION, full_element=annotation)
        out.extend(validate_actor(annotation.annotator, "annotation"))
        out.add(_spdx_id_messages(annotation.spdx_id, index, check_document=True), ctx)


def _relationships(out: _Out, document: Any, version: str, index: _Index) -> None:
    for relationship in document.relationships:
        check_relationship(out, relationship, version, index)


def check_relationship(out: _Out, relationship: Any, version: str, index: _Index) -> None:
    """spdx-tools' ``validate_relationship`` for one Relationship model, with the index's look-ups."""
    from spdx_tools.spdx.model.relationship import RelationshipType
    from spdx_tools.spdx.model.spdx_no_assertion import SpdxNoAssertion
    from spdx_tools.spdx.model.spdx_none import SpdxNone
    from spdx_tools.spdx.validation.validation_message import SpdxElementType, ValidationContext

    not_in_22 = (RelationshipType.SPECIFICATION_FOR, RelationshipType.REQUIREMENT_DESCRIPTION_FOR)
    ctx = ValidationContext(element_type=SpdxElementType.RELATIONSHIP, full_element=relationship)
    out.add(_spdx_id_messages(relationship.spdx_element_id, index, check_document=True), ctx)
    related = relationship.related_spdx_element_id
    if not isinstance(related, SpdxNone | SpdxNoAssertion):
        out.add(_spdx_id_messages(related, index, check_document=True), ctx)
    if version == "SPDX-2.2" and relationship.relationship_type in not_in_22:
        out.add([f"{relationship.relationship_type} is not supported in SPDX-2.2"], ctx)


def _version_messages(out: _Out, document: Any, spdx_version: str | None) -> str | None:
    """The version to validate against, or None (messages added) when it is unsupported or differs
    from the document's: spdx-tools then stops, as the rest depends on the version."""
    from spdx_tools.spdx.validation.validation_message import SpdxElementType, ValidationContext

    document_version = document.creation_info.spdx_version
    context = ValidationContext(spdx_id=document.creation_info.spdx_id, element_type=SpdxElementType.DOCUMENT)
    version = spdx_version or document_version
    if document_version not in _SUPPORTED_VERSIONS:
        out.add(
            [
                'only SPDX versions "SPDX-2.2" and "SPDX-2.3" are supported, '
                f"but the document's spdx_version is: {document_version}"
            ],
            context,
        )
    elif version != document_version:
        out.add(
            [
                f"provided SPDX version {version} does not match "
                f"the document's SPDX version {document_version}"
            ],
            context,
        )
    if not out.messages:
        return str(version)
    out.add(
        [
            "There are issues concerning the SPDX version of the document. "
            "As subsequent validation relies on the correct version, "
            "the validation process has been cancelled."
        ],
        context,
    )
    return None


def _describes(out: _Out, document: Any, *, has_extra_files: bool) -> None:
    """A document that is not one lone package needs a ``DESCRIBES`` (or ``DESCRIBED_BY``) relationship."""
    from spdx_tools.spdx.model.relationship import RelationshipType
    from spdx_tools.spdx.model.relationship_filters import (
        filter_by_type_and_origin,
        filter_by_type_and_target,
    )
    from spdx_tools.spdx.validation.validation_message import SpdxElementType, ValidationContext

    document_id = document.creation_info.spdx_id
    describes = filter_by_type_and_origin(document.relationships, RelationshipType.DESCRIBES, document_id)
    described_by = filter_by_type_and_target(
        document.relationships, RelationshipType.DESCRIBED_BY, document_id
    )
    only_a_single_package = (
        len(document.packages) == 1 and not document.files and not has_extra_files and not document.snippets
    )
    if not only_a_single_package and not describes + described_by:
        out.add(
            [
                f'there must be at least one relationship "{document_id} DESCRIBES ..." or "... DESCRIBED_BY '
                f'{document_id}" when there is not only a single package present'
            ],
            ValidationContext(spdx_id=document_id, element_type=SpdxElementType.DOCUMENT),
        )


def _unique_ids(out: _Out, document: Any, extra_ids: Iterable[str]) -> None:
    """Every SPDXID (document, files, packages, snippets) appears once."""
    from spdx_tools.spdx.validation.validation_message import SpdxElementType, ValidationContext

    seen: set[str] = set()
    duplicated: set[str] = set()
    for spdx_id in _all_ids_in_order(document, extra_ids):
        if spdx_id in seen:
            duplicated.add(spdx_id)
        seen.add(spdx_id)
    if duplicated:
        out.add(
            [
                "every spdx_id must be unique within the document, but found the following duplicates: "
                f"{sorted(duplicated)}"
            ],
            ValidationContext(spdx_id=document.creation_info.spdx_id, element_type=SpdxElementType.DOCUMENT),
        )


class ExtraFiles(Protocol):
    """Files held outside the document model, after its own files, and CONTAINS relationships to
    them, after its own relationships (``sbom._spdx_fast``: the canonical per-file part of a JSON
    document, checked without a model object per file). No package of the document may have
    ``files_analyzed: false`` (its rule looks at the relationships of the model only)."""

    @property
    def file_ids(self) -> Sequence[str]:
        """Every extra File's SPDXID, in document order."""
        ...

    def check_files(self, out: _Out, document: Any, version: str, index: _Index) -> None:
        """Add the messages :func:`check_file` would give each extra File, in order."""
        ...

    def check_relationships(self, out: _Out, version: str, index: _Index) -> None:
        """Add the messages :func:`check_relationship` would give each extra relationship, in order."""
        ...


def validate_full_document(
    document: Any, spdx_version: str | None = None, extra: ExtraFiles | None = None
) -> list[Any]:
    """spdx-tools' ``validate_full_spdx_document(document, spdx_version)``, in O(n).

    ``document`` is a ``spdx_tools.spdx.model.Document``; returns the same list of
    ``ValidationMessage`` (message text and context, same order) that spdx-tools 0.8.5 returns,
    empty when valid. With ``extra``, the document is validated as if its files and relationships
    were followed by ``extra``'s. Cost: one pass over the elements plus one licence-expression
    check per distinct expression text. Raises nothing for an invalid document.
    """
    from spdx_tools.spdx.validation.creation_info_validator import validate_creation_info
    from spdx_tools.spdx.validation.extracted_licensing_info_validator import (
        validate_extracted_licensing_infos,
    )

    out = _Out()
    version = _version_messages(out, document, spdx_version)
    if version is None:
        return out.messages
    extra_ids = extra.file_ids if extra is not None else ()
    index = _Index.of(document, extra_ids)
    out.extend(validate_creation_info(document.creation_info, version))
    _packages(out, document, version, index)
    _files(out, document, version, index)
    if extra is not None:
        extra.check_files(out, document, version, index)
    _snippets(out, document, version, index)
    _annotations(out, document, index)
    _relationships(out, document, version, index)
    if extra is not None:
        extra.check_relationships(out, version, index)
    out.extend(validate_extracted_licensing_infos(document.extracted_licensing_info))
    _describes(out, document, has_extra_files=bool(extra_ids))
    _unique_ids(out, document, extra_ids)
    return out.messages


def _all_ids_in_order(document: Any, extra_ids: Iterable[str]) -> Iterable[str]:
    yield document.creation_info.spdx_id
    yield from (f.spdx_id for f in document.files)
    yield from extra_ids
    yield from (p.spdx_id for p in document.packages)
    yield from (s.spdx_id for s in document.snippets)


def prewarm_imports() -> None:
    """Import the spdx-tools validators :func:`validate_full_document` uses (for a prewarm thread)."""
    from spdx_tools.spdx.validation import (  # noqa: F401
        actor_validator,
        creation_info_validator,
        extracted_licensing_info_validator,
        file_validator,
        package_validator,
        snippet_validator,
    )
