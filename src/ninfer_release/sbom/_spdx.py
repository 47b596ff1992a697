"""SPDX 2.3 JSON file inventory of a Windows package (spdx-tools 0.8.5).

The document lists every file of the package except itself: it is stored inside the zip, so it
cannot carry its own hash. It is named in ``packageVerificationCodeExcludedFiles`` instead and
left out of the file list, the CONTAINS relationships and the verification code (SPDX 2.3 §7.9).
The package (the zip) has no checksum for the same reason: the zip contains this document.
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ninfer_release import strictjson
from ninfer_release.digests import is_sha256_hex
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.jsonbytes import LazyArray, MadeOnRead, dump_indented_into, dumps_indented_bytes
from ninfer_release.reproducible import datetime_utc
from ninfer_release.sbom._ids import (
    SPDX_ID_RE,
    check_base_uri,
    spdx_file_id,
    spdx_package_id,
    uri_part,
    uuid5_url,
)
from ninfer_release.sbom._license import normalize_license_expression, parse_license, require_license_texts
from ninfer_release.sbom._records import FileRecord, Outcome, attempt
from ninfer_release.sbom._spdx_fast import (
    CanonicalFiles,
    _id_is_clean,
    _parse_licenses,
    parse_skeleton,
    split_checked,
    validate_canonical,
)
from ninfer_release.sbom._spdx_skeleton import clean_skeleton
from ninfer_release.sbom._spdx_validate import _license_texts, validate_full_document

if TYPE_CHECKING:
    from ninfer_release.sbom._spdx_stream import Streamed

_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_BAD_PATH_CHARS = re.compile(r'[\\<>:"|?*\x00-\x1f]')

SPDX_WHERE = "spdx"


def zip_path_problem(path: str) -> str | None:
    """Why ``path`` is not a clean zip-relative POSIX path, or ``None`` when it is."""
    if not path:
        return "empty path"
    if path.startswith(("/", "./")):
        return "must be zip-relative without a leading '/' or './'"
    if _BAD_PATH_CHARS.search(path):
        return 'contains a backslash, a control character or one of <>:"|?*'
    if any(part in ("", ".", "..") for part in path.split("/")):
        return "has an empty, '.' or '..' segment"
    return None


def package_verification_code(sha1s: Sequence[str]) -> str:
    """SPDX 2.3 §7.9 package verification code: SHA-1 of the sorted lowercase SHA-1s, concatenated.

    The caller leaves out the excluded files (the SPDX document itself). Example (C26): the SHA-1s
    of ``A`` and ``B`` give ``859572ac3bd09bc4f777a4ce6cb326e3251ee29a``.

    Raises:
        InputError: an entry is not 40 hex digits.
    """
    lowered = [s.lower() for s in sha1s]
    bad = [s for s in lowered if not _HEX40.match(s)]
    if bad:
        raise InputError(
            problems=[Problem(file=SPDX_WHERE, field="sha1", message=f"{b!r} is not a SHA-1") for b in bad]
        )
    return hashlib.sha1("".join(sorted(lowered)).encode("ascii"), usedforsecurity=False).hexdigest()


_TEXT_SUFFIXES = (".txt", ".md", ".toml", ".json", ".yaml", ".yml", ".ini", ".cfg", ".csv", ".html")
_BINARY_SUFFIXES = (".dll", ".exe", ".sys", ".so", ".bin", ".pyd", ".lib", ".ninfer")
_ARCHIVE_SUFFIXES = (".zip", ".tar", ".gz", ".tgz", ".xz", ".7z")


def _file_type(path: str) -> str:
    """SPDX 2.3 §8.3 file type from the name: BINARY, TEXT, ARCHIVE, or OTHER."""
    lower = path.lower()
    if lower.endswith(_BINARY_SUFFIXES):
        return "BINARY"
    if lower.endswith(_TEXT_SUFFIXES) or lower.rsplit("/", 1)[-1] in (
        "license",
        "notice",
        "copying",
        "readme",
    ):
        return "TEXT"
    if lower.endswith(_ARCHIVE_SUFFIXES):
        return "ARCHIVE"
    return "OTHER"


def _content_identity(files: Sequence[FileRecord]) -> str:
    """SHA-256 (hex) of the ``<sha256>  <path>`` lines of ``files`` sorted by path, hashed line by
    line (issue 13: the 10 MB of lines at 100k files are never joined)."""
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.path):
        digest.update(f"{f.sha256}  {f.path}\n".encode())
    return digest.hexdigest()


def spdx_namespace(
    *, namespace_base: str, package_name: str, release_id: str, files: Sequence[FileRecord]
) -> str:
    """The document namespace: ``<base>/<name>-<release>-<uuid5>`` (C28).

    ``name`` and ``release`` are made URI-safe (``1.0#3`` → ``1.0-3``); the UUIDv5 derives from the
    base, the release identity and the file contents, so it is reproducible and differs whenever
    the package's bytes do.

    Raises:
        DefinitionError: ``namespace_base`` is not an absolute http(s) URI without fragment.
    """
    base = check_base_uri(namespace_base, where=SPDX_WHERE, field="namespace_base")
    identity = f"{base}/{package_name}/{release_id}?content={_content_identity(files)}"
    return f"{base}/{uri_part(package_name)}-{uri_part(release_id)}-{uuid5_url(identity)}"


def _check_files(files: Sequence[FileRecord], spdx_file_path: str) -> list[FileRecord]:
    problems: list[Problem] = []
    if (why := zip_path_problem(spdx_file_path)) is not None:
        problems.append(
            Problem(file=SPDX_WHERE, field="spdx_file_path", message=f"{spdx_file_path!r}: {why}")
        )
    seen: set[str] = set()
    kept: list[FileRecord] = []
    for record in files:
        field = f"files[{record.path}]"
        if (why := zip_path_problem(record.path)) is not None:
            problems.append(Problem(file=SPDX_WHERE, field=field, message=why))
        if record.path in seen:
            problems.append(Problem(file=SPDX_WHERE, field=field, message="listed twice"))
        seen.add(record.path)
        if not _HEX40.match(record.sha1):
            problems.append(Problem(file=SPDX_WHERE, field=f"{field}.sha1", message="not 40 lowercase hex"))
        if not is_sha256_hex(record.sha256):
            problems.append(Problem(file=SPDX_WHERE, field=f"{field}.sha256", message="not 64 lowercase hex"))
        if record.size < 0:
            problems.append(Problem(file=SPDX_WHERE, field=f"{field}.size", message="negative size"))
        # The document cannot list itself (its hash is not known while it is being written).
        if record.path != spdx_file_path:
            kept.append(record)
    if problems:
        raise InputError(problems=problems)
    return sorted(kept, key=lambda r: r.path)


@dataclass(frozen=True, kw_only=True)
class _Licenses:
    expressions: dict[str, str]  # original text → normalized expression
    refs: set[str]


def _normalize_all(
    files: Sequence[FileRecord], declared_license: str | None, concluded_license: str | None
) -> _Licenses:
    expressions: dict[str, str] = {}
    refs: set[str] = set()
    problems: list[Problem] = []
    # Each field's name is made only for a text not seen before (100k files share a few).
    wanted: Iterator[tuple[FileRecord | str, str | None]] = itertools.chain(
        ((f, f.license) for f in files),
        (("declared_license", declared_license), ("concluded_license", concluded_license)),
    )
    for where, text in wanted:
        if text is None or text in expressions:
            continue
        field = where if isinstance(where, str) else f"files[{where.path}]"
        try:
            normalized = normalize_license_expression(text, where=SPDX_WHERE, field=field)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        expressions[text] = normalized.expression
        refs.update(normalized.license_refs)
    if problems:
        raise InputError(problems=problems)
    return _Licenses(expressions=expressions, refs=refs)


class _LicenseParser:
    """Concluded/declared licence objects by original text: one parse per distinct expression
    (100k files share a few); ``None`` is NOASSERTION."""

    def __init__(self, licenses: _Licenses) -> None:
        self._licenses = licenses
        self._parsed: dict[str, Any] = {}

    def __call__(self, text: str | None) -> Any:
        from spdx_tools.spdx.model.spdx_no_assertion import SpdxNoAssertion

        if text is None:
            return SpdxNoAssertion()
        if text not in self._parsed:
            self._parsed[text] = parse_license(self._licenses.expressions[text])
        return self._parsed[text]


def claim_file_id(ids: dict[str, str], path: str, *, where: str) -> str:
    """The SPDXID of ``path`` (C27), recorded in ``ids`` (SPDXID → path).

    Raises:
        IntegrityError: another path already has that SPDXID (a SHA-256 prefix collision: refused,
            never guessed).
    """
    file_id = spdx_file_id(path)
    if file_id in ids:
        raise IntegrityError(
            problems=[
                Problem(
                    file=where,
                    field=f"files[{path}]",
                    message=f"SPDXID {file_id} collides with {ids[file_id]}",
                )
            ]
        )
    ids[file_id] = path
    return file_id


def _inventory_files(kept: Sequence[FileRecord], license_of: _LicenseParser) -> list[Any]:
    """One SPDX File per record (see :func:`_file_model`).

    Raises:
        IntegrityError: two paths would share an SPDXID.
    """
    ids: dict[str, str] = {}
    return [_file_model(r, claim_file_id(ids, r.path, where=SPDX_WHERE), license_of) for r in kept]


def _file_model(record: FileRecord, spdx_id: str, license_of: _LicenseParser) -> Any:
    """The SPDX File of a record: ``./<path>``, SHA1 + SHA256, type from the name (SPDX 2.3 §8)."""
    from spdx_tools.spdx.model.checksum import Checksum, ChecksumAlgorithm
    from spdx_tools.spdx.model.file import File, FileType
    from spdx_tools.spdx.model.spdx_no_assertion import SpdxNoAssertion

    return File(
        name=f"./{record.path}",
        spdx_id=spdx_id,
        checksums=[
            Checksum(ChecksumAlgorithm.SHA1, record.sha1),
            Checksum(ChecksumAlgorithm.SHA256, record.sha256),
        ],
        file_types=[FileType[_file_type(record.path)]],
        license_concluded=license_of(record.license),
        copyright_text=record.copyright if record.copyright is not None else SpdxNoAssertion(),
        comment=record.comment,
    )


@dataclass(frozen=True, kw_only=True)
class _InventoryFields:
    """The scalar arguments of :func:`spdx_file_inventory`, resolved once (see its docstring)."""

    package_name: str
    package_version: str
    package_file_name: str
    supplier: str
    download_location: str | None
    spdx_file_path: str
    namespace_base: str
    document_name: str
    epoch: int
    creator_tool: str
    declared_license: str | None
    release_id: str | None
    package_purl: str | None
    homepage: str | None
    package_comment: str | None
    concluded_license: str | None
    package_copyright: str | None
    document_comment: str | None


def _inventory_package(
    fields: _InventoryFields, *, spdx_id: str, verification: Any, license_of: _LicenseParser
) -> Any:
    """The one Package (purpose APPLICATION, files analyzed, built at the epoch, purl when given)."""
    from spdx_tools.spdx.model.actor import Actor, ActorType
    from spdx_tools.spdx.model.package import (
        ExternalPackageRef,
        ExternalPackageRefCategory,
        Package,
        PackagePurpose,
    )
    from spdx_tools.spdx.model.spdx_no_assertion import SpdxNoAssertion

    external_refs = []
    if fields.package_purl is not None:
        external_refs.append(
            ExternalPackageRef(ExternalPackageRefCategory.PACKAGE_MANAGER, "purl", fields.package_purl)
        )
    return Package(
        spdx_id=spdx_id,
        name=fields.package_name,
        download_location=fields.download_location if fields.download_location else SpdxNoAssertion(),
        version=fields.package_version,
        file_name=fields.package_file_name,
        supplier=Actor(ActorType.ORGANIZATION, fields.supplier),
        files_analyzed=True,
        verification_code=verification,
        homepage=fields.homepage,
        license_concluded=license_of(fields.concluded_license),
        license_declared=license_of(fields.declared_license),
        copyright_text=fields.package_copyright if fields.package_copyright else SpdxNoAssertion(),
        comment=fields.package_comment,
        external_references=external_refs,
        primary_package_purpose=PackagePurpose.APPLICATION,
        built_date=datetime_utc(fields.epoch).replace(tzinfo=None),
    )


def spdx_creation_info(
    *, name: str, namespace: str, creator_tool: str, supplier: str, epoch: int, comment: str | None
) -> Any:
    """SPDX 2.3 creation info: tool and organisation creators, ``created`` = ``epoch`` (seconds, UTC)."""
    from spdx_tools.spdx.model.actor import Actor, ActorType
    from spdx_tools.spdx.model.document import CreationInfo

    return CreationInfo(
        spdx_version="SPDX-2.3",
        spdx_id="SPDXRef-DOCUMENT",
        name=name,
        document_namespace=namespace,
        creators=[Actor(ActorType.TOOL, creator_tool), Actor(ActorType.ORGANIZATION, supplier)],
        created=datetime_utc(epoch).replace(tzinfo=None),
        data_license="CC0-1.0",
        document_comment=comment,
    )


def spdx_extracted_licenses(texts: Mapping[str, str]) -> list[Any]:
    """``hasExtractedLicensingInfos`` (SPDX 2.3 §10): one entry per ``LicenseRef-`` id with its text."""
    from spdx_tools.spdx.model.extracted_licensing_info import ExtractedLicensingInfo

    return [
        ExtractedLicensingInfo(
            license_id=ref, extracted_text=text, license_name=ref.removeprefix("LicenseRef-")
        )
        for ref, text in texts.items()
    ]


def spdx_file_inventory(
    *,
    package_name: str,
    package_version: str,
    package_file_name: str,
    supplier: str,
    download_location: str | None,
    files: Sequence[FileRecord],
    spdx_file_path: str,
    namespace_base: str,
    document_name: str,
    epoch: int,
    creator_tool: str,
    declared_license: str | None,
    extracted_licenses: Mapping[str, str],
    release_id: str | None = None,
    package_purl: str | None = None,
    homepage: str | None = None,
    package_comment: str | None = None,
    concluded_license: str | None = None,
    package_copyright: str | None = None,
    document_comment: str | None = None,
    into: Path | None = None,
) -> bytes:
    """The SPDX 2.3 JSON document (bytes) inventorying the files of one package; with ``into``,
    written to that file as it is rendered and ``b""`` returned (issue 13: with 100k files the
    document is 93 MB, never held whole).

    Shape: one Package (the zip, ``packageFileName`` = ``package_file_name``) DESCRIBED by the
    document and CONTAINing every File; each File named ``./<path>`` with SHA1 and SHA256;
    ``packageVerificationCode`` over all files but the document itself, which is listed as
    ``./<spdx_file_path>`` in ``packageVerificationCodeExcludedFiles`` (C26, SPDX 2.3 §7.9) and is
    not in the file list (a record with that path in ``files`` is dropped). SPDXIDs are
    sanitized and disambiguated by a hash of the original path (C27). ``documentNamespace`` is
    ``<namespace_base>/<name>-<release_id>-<uuid5>`` (C28; ``release_id`` defaults to
    ``package_version``). ``created`` is ``epoch`` (seconds, UTC). Licence expressions are
    normalized (C29) and every ``LicenseRef-`` used gets ``hasExtractedLicensingInfos`` from
    ``extracted_licenses`` (id → text). The package carries ``package_purl`` as a purl external
    reference, ``concluded_license`` (default NOASSERTION) and ``package_copyright`` (default
    NOASSERTION); ``document_comment`` is the document's comment. Output: the spdx-tools JSON
    writer's bytes (4-space indent, ASCII, deterministic for a deterministic model) plus one LF.

    Raises:
        DefinitionError: ``namespace_base`` is not an absolute http(s) URI without fragment.
        InputError: a path, digest or licence expression is invalid, or a LicenseRef has no text.
        IntegrityError: spdx-tools' full validation reports anything (all messages listed).
    """

    kept = _check_files(files, spdx_file_path)
    licenses = _normalize_all(kept, declared_license, concluded_license)
    texts = require_license_texts(licenses.refs, extracted_licenses, where=SPDX_WHERE)
    fields = _InventoryFields(
        package_name=package_name,
        package_version=package_version,
        package_file_name=package_file_name,
        supplier=supplier,
        download_location=download_location,
        spdx_file_path=spdx_file_path,
        namespace_base=namespace_base,
        document_name=document_name,
        epoch=epoch,
        creator_tool=creator_tool,
        declared_license=declared_license,
        release_id=release_id,
        package_purl=package_purl,
        homepage=homepage,
        package_comment=package_comment,
        concluded_license=concluded_license,
        package_copyright=package_copyright,
        document_comment=document_comment,
    )
    return _inventory_document(fields, kept, licenses, texts, into)


def _inventory_document(
    fields: _InventoryFields,
    kept: Sequence[FileRecord],
    licenses: _Licenses,
    texts: Mapping[str, str],
    into: Path | None,
) -> bytes:
    """The checked, path-sorted records ``kept`` as one SPDX document: namespace, files, package,
    creation info, DESCRIBES/CONTAINS, licence texts; validated, then written (to ``into`` when
    given, then ``b""`` is returned).

    Raises:
        DefinitionError: ``namespace_base`` is not an absolute http(s) URI without fragment.
        IntegrityError: two paths would share an SPDXID, or spdx-tools' validation reports anything.
    """
    from spdx_tools.spdx.model.document import Document
    from spdx_tools.spdx.model.package import PackageVerificationCode
    from spdx_tools.spdx.model.relationship import Relationship, RelationshipType

    namespace = spdx_namespace(
        namespace_base=fields.namespace_base,
        package_name=fields.package_name,
        release_id=fields.release_id if fields.release_id is not None else fields.package_version,
        files=kept,
    )
    license_of = _LicenseParser(licenses)
    package_id = spdx_package_id(fields.package_name)
    verification = PackageVerificationCode(
        value=package_verification_code([r.sha1 for r in kept]),
        excluded_files=[f"./{fields.spdx_file_path}"],
    )
    package = _inventory_package(fields, spdx_id=package_id, verification=verification, license_of=license_of)
    creation = spdx_creation_info(
        name=fields.document_name,
        namespace=namespace,
        creator_tool=fields.creator_tool,
        supplier=fields.supplier,
        epoch=fields.epoch,
        comment=fields.document_comment,
    )
    skeleton = Document(
        creation_info=creation,
        packages=[package],
        files=[],
        relationships=[Relationship("SPDXRef-DOCUMENT", RelationshipType.DESCRIBES, package_id)],
        extracted_licensing_info=spdx_extracted_licenses(texts),
    )
    if _PER_FILE_MODELS:
        document = _with_file_models(skeleton, kept, license_of, package_id)
        _validate_model(document)
        return _write(document) if into is None else _write(document, into=into)
    files = _file_entries(kept, license_of, package_id)
    _validate_model(skeleton, files)
    return _write(skeleton, files) if into is None else _write(skeleton, files, into=into)


# The reference path (tests/test_spdx_fast.py): a spdx-tools File and Relationship per file, as
# the document was built before; the bytes and the validation verdict must equal the default path's.
_PER_FILE_MODELS = False


def _with_file_models(
    skeleton: Any, kept: Sequence[FileRecord], license_of: _LicenseParser, package_id: str
) -> Any:
    """``skeleton`` with a spdx-tools File per record and a CONTAINS relationship to each."""
    from spdx_tools.spdx.model.relationship import Relationship, RelationshipType

    spdx_files = _inventory_files(kept, license_of)
    skeleton.files = spdx_files
    skeleton.relationships += [
        Relationship(package_id, RelationshipType.CONTAINS, f.spdx_id) for f in spdx_files
    ]
    return skeleton


def _file_entries(kept: Sequence[FileRecord], license_of: _LicenseParser, package_id: str) -> CanonicalFiles:
    """The file entries and CONTAINS relationships of the records, as spdx-tools' JSON writer
    writes the File and Relationship :func:`_with_file_models` builds (same keys in the same
    order, same values; ``FileConverter`` / ``RelationshipConverter`` of spdx-tools 0.8.5), with
    each licence text's parse for the validator. The entries are made from the records each time
    they are read (:class:`~ninfer_release.jsonbytes.MadeOnRead`; issue 13: 100k dicts were ~250 MB).

    Raises:
        IntegrityError: two paths would share an SPDXID.
    """
    claimed: dict[str, str] = {}
    texts: dict[str | None, str] = {}
    parsed: dict[str, Any] = {}
    ids: list[str] = []
    for record in kept:
        if record.license not in texts:
            expression = license_of(record.license)
            texts[record.license] = str(expression)
            parsed[str(expression)] = expression
        ids.append(claim_file_id(claimed, record.path, where=SPDX_WHERE))
    entries = MadeOnRead(range(len(kept)), lambda i: _file_entry(kept[i], ids[i], texts))
    relationships = MadeOnRead(ids, lambda spdx_id: _contains(package_id, spdx_id))

    def model(i: int) -> Any:  # an unclean entry is validated as the File model of its record
        return _file_model(kept[i], ids[i], license_of)

    return CanonicalFiles(entries=entries, relationships=relationships, licenses=parsed, file_model=model)


def _file_entry(record: FileRecord, spdx_id: str, texts: Mapping[str | None, str]) -> dict[str, Any]:
    """The SPDX file entry of ``record`` (SPDXID ``spdx_id``, its licence text in ``texts``), keys
    in the order of spdx-tools 0.8.5's ``FileConverter``."""
    entry: dict[str, Any] = {
        "SPDXID": spdx_id,
        "checksums": [
            {"algorithm": "SHA1", "checksumValue": record.sha1},
            {"algorithm": "SHA256", "checksumValue": record.sha256},
        ],
    }
    if record.comment is not None:
        entry["comment"] = record.comment
    entry["copyrightText"] = record.copyright if record.copyright is not None else "NOASSERTION"
    entry["fileName"] = f"./{record.path}"
    entry["fileTypes"] = [_file_type(record.path)]
    entry["licenseConcluded"] = texts[record.license]
    return entry


def _contains(package_id: str, file_id: str) -> dict[str, Any]:
    """The CONTAINS relationship from ``package_id`` to ``file_id`` (``RelationshipConverter``'s keys)."""
    return {
        "spdxElementId": package_id,
        "relatedSpdxElement": file_id,
        "relationshipType": "CONTAINS",
    }


def _validate_model(document: Any, files: CanonicalFiles | None = None) -> None:
    """spdx-tools' full validation of ``document`` (followed by ``files``, see ``ExtraFiles``).

    Raises:
        IntegrityError: one problem per message (field: the element's SPDXID).
    """
    messages = validate_full_document(document, "SPDX-2.3", extra=files)
    if messages:
        raise IntegrityError(
            problems=[
                Problem(file=SPDX_WHERE, field=str(m.context.spdx_id or ""), message=m.validation_message)
                for m in messages
            ]
        )


def _write(document: Any, files: CanonicalFiles | None = None, *, into: Path | None = None) -> bytes:
    """spdx-tools' JSON writer's bytes for ``document`` (followed by ``files``' entries and
    relationships) plus one LF; with ``into``, written to that file as rendered and ``b""`` returned.

    What ``write_document_to_stream(document, stream, validate=False, converter=…)`` of
    spdx-tools 0.8.5 does — deduplicate, convert, ``json.dump(…, indent=4)`` — with the last step
    by :func:`ninfer_release.jsonbytes.dumps_indented_bytes` (the same text, ~2× faster; compared
    with the library's writer in ``tests/test_spdx_fast.py``), encoded as written and each file
    entry made as it is written (issue 13: never the whole text, nor a dict per file, at once).
    """
    from spdx_tools.spdx.writer.write_utils import convert, validate_and_deduplicate

    converter: Any = None if files is None else _converter_with(files, lazy=True)
    document = validate_and_deduplicate(document, False, True)
    # The document is a JSON object: its text ends with "}", so "+ LF" is the library's
    # ``rstrip("\n") + "\n"``.
    converted = convert(document, converter)
    if into is None:
        return dumps_indented_bytes(converted, indent=4, end="\n")
    with into.open("wb") as sink:
        dump_indented_into(converted, sink, indent=4, end="\n")
    return b""


def _library_write(document: Any, files: CanonicalFiles | None = None) -> bytes:
    """The reference for :func:`_write`: spdx-tools' own JSON writer (tests compare the bytes)."""
    from spdx_tools.spdx.writer.json.json_writer import write_document_to_stream

    stream = io.StringIO(newline="\n")
    converter = None if files is None else _converter_with(files, lazy=False)
    write_document_to_stream(document, stream, validate=False, converter=converter)
    return (stream.getvalue().rstrip("\n") + "\n").encode("utf-8")


def _converter_with(files: CanonicalFiles, *, lazy: bool) -> Any:
    """spdx-tools' ``DocumentConverter``, with ``files``' entries after the document's files and
    its relationships after the document's (each already in the converter's JSON form; ``lazy``:
    as a :class:`~ninfer_release.jsonbytes.LazyArray`, made as written, else as lists)."""
    converter = _converter_class()()
    converter.files = files
    converter.lazy = lazy
    return converter


@functools.cache
def _converter_class() -> Any:
    """The converter class of :func:`_converter_with`, made once: a class made per call holds its
    closure in a reference cycle, and with it every file entry until the collector runs."""
    from spdx_tools.spdx.jsonschema.document_converter import DocumentConverter
    from spdx_tools.spdx.jsonschema.document_properties import DocumentProperty

    class _WithFiles(DocumentConverter):
        files: CanonicalFiles
        lazy: bool

        def _get_property_value(self, *args: Any) -> Any:  # (document, property[, document])
            value = super()._get_property_value(*args)
            json_property = args[1]
            if json_property == DocumentProperty.FILES:
                return self._then(value, self.files.entries)
            if json_property == DocumentProperty.RELATIONSHIPS:
                return self._then(value, self.files.relationships)
            return value

        def _then(self, value: Any, extra: Sequence[Any]) -> Any:
            """``value`` (a list or ``None``) followed by ``extra``; ``None`` when both are empty."""
            if not value and not extra:
                return None
            return LazyArray(value or [], extra) if self.lazy else [*(value or []), *extra]

    return _WithFiles


def _parse_document(data: bytes) -> tuple[Any, list[str]]:
    """spdx-tools' model of ``data`` (SPDX JSON), or ``None`` with the parse messages."""
    try:
        raw = strictjson.parse_object(data, source=SPDX_WHERE, error=IntegrityError)
    except IntegrityError as exc:
        return None, [str(exc)]
    return _parse_raw(hoist_implicit_relationships(raw))


def _parse_raw(raw: dict[str, Any]) -> tuple[Any, list[str]]:
    """spdx-tools' model of a hoisted JSON object, or ``None`` with the parse messages."""
    from spdx_tools.spdx.parser.error import SPDXParsingError
    from spdx_tools.spdx.parser.jsonlikedict.json_like_dict_parser import JsonLikeDictParser

    try:
        return JsonLikeDictParser().parse(raw), []  # type: ignore[no-untyped-call]
    except SPDXParsingError as exc:
        return None, [str(m) for m in exc.get_messages()]  # type: ignore[no-untyped-call]


_SPECIAL = ("NONE", "NOASSERTION")


def _all_str(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(v, str) and v not in _SPECIAL for v in values)


def hoist_implicit_relationships(raw: dict[str, Any]) -> dict[str, Any]:
    """``documentDescribes`` and packages' ``hasFiles`` as explicit relationships, in O(n).

    spdx-tools' JSON parser turns each of those ids into a DESCRIBES / CONTAINS relationship
    unless an equal one (or its inverse DESCRIBED_BY / CONTAINED_BY) is already listed, testing
    that by scanning the whole relationship list per id: O(n^2) for a package with 100k files
    (``RelationshipParser.check_if_relationship_exists``). This does the same with a set, adds the
    relationships in the parser's order (listed ones, then the described ids, then each package's
    files) and removes the two fields, so the parser builds an equal document without the scans.
    A document whose fields are not all well-typed strings is returned unchanged (the parser then
    reports them as it always does).
    """
    describes = raw.get("documentDescribes")
    packages = raw.get("packages")
    with_files = (
        [p for p in packages if isinstance(p, dict) and "hasFiles" in p] if isinstance(packages, list) else []
    )
    if describes is None and not with_files:
        return raw
    listed = raw.get("relationships", [])
    doc_id = raw.get("SPDXID")
    if (
        not isinstance(doc_id, str)
        or not isinstance(listed, list)
        or (describes is not None and not _all_str(describes))
        or not all(isinstance(p.get("SPDXID"), str) and _all_str(p["hasFiles"]) for p in with_files)
        or not all(
            isinstance(r, dict)
            and all(
                isinstance(r.get(k), str) for k in ("spdxElementId", "relationshipType", "relatedSpdxElement")
            )
            for r in listed
        )
    ):
        return raw

    def related(value: str) -> tuple[str, str]:  # the parser turns NONE / NOASSERTION into objects
        return ("special", value) if value in _SPECIAL else ("id", value)

    existing = {
        (
            r["spdxElementId"],
            r["relationshipType"].replace("-", "_").upper(),
            related(r["relatedSpdxElement"]),
        )
        for r in listed
    }
    added: list[dict[str, str]] = []
    for target in dict.fromkeys(describes or []):
        if (doc_id, "DESCRIBES", ("id", target)) in existing or (
            target,
            "DESCRIBED_BY",
            ("id", doc_id),
        ) in existing:
            continue
        added.append({"spdxElementId": doc_id, "relationshipType": "DESCRIBES", "relatedSpdxElement": target})
    existing |= {(doc_id, "DESCRIBES", ("id", r["relatedSpdxElement"])) for r in added}
    for package in with_files:
        pid = package["SPDXID"]
        for file_id in dict.fromkeys(package["hasFiles"]):
            if (pid, "CONTAINS", ("id", file_id)) in existing or (
                file_id,
                "CONTAINED_BY",
                ("id", pid),
            ) in existing:
                continue
            added.append(
                {"spdxElementId": pid, "relationshipType": "CONTAINS", "relatedSpdxElement": file_id}
            )
    out = {k: v for k, v in raw.items() if k != "documentDescribes"}
    out["packages"] = [
        {k: v for k, v in p.items() if k != "hasFiles"} if isinstance(p, dict) else p for p in packages or []
    ]
    if packages is None:
        del out["packages"]
    out["relationships"] = [*listed, *added]
    return out


@dataclass(frozen=True)
class _FileFacts:
    """What the checks beyond spdx-tools read of one File: name, SPDXID, SHA-1 values."""

    name: str
    spdx_id: str
    sha1s: tuple[str, ...]


def validate_spdx_bytes(data: bytes) -> list[str]:
    """spdx-tools' messages for an SPDX 2.3 JSON document (empty = valid).

    Parses, then runs ``validate_full_spdx_document`` (what ``pyspdxtools -i`` does), and also
    checks what spdx-tools does not: file names must be ``./``-relative POSIX paths without
    backslashes, each package's verification code must be the one its listed files give
    (SPDX 2.3 §7.9, C26), and the bytes must end with exactly one LF. A document whose per-file
    part has the canonical shape is validated without a model object per file, with the same
    messages (``sbom._spdx_fast``); any other goes through spdx-tools' parser unchanged.
    """
    try:
        raw = strictjson.parse_object(data, source=SPDX_WHERE, error=IntegrityError)
    except IntegrityError as exc:
        return [str(exc)]
    return _validate_parsed(raw, data)


def _validate_parsed(raw: dict[str, Any], data: bytes) -> list[str]:
    """:func:`validate_spdx_bytes` of the parsed JSON object ``raw`` (``data``: its bytes)."""
    try:
        return _validate_object(raw, data)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        # spdx-tools' parser assumes JSON objects where a hostile document has a string, null or
        # a list (``"checksums": "x"``, a file entry or relationship ``null``, ``"files": null``):
        # a verdict on the document, never a crash of verify (exit 5, not 1).
        return [f"not an SPDX document spdx-tools can parse: {type(exc).__name__}: {exc}"]


def _validate_object(raw: dict[str, Any], data: bytes) -> list[str]:
    """:func:`validate_spdx_bytes` of the parsed JSON object ``raw`` (``data``: its bytes)."""
    hoisted = hoist_implicit_relationships(raw)
    verdict = validate_canonical(hoisted)
    if verdict is not None:
        entries = verdict.files.entries
        return _own_checks(
            list(verdict.messages), verdict.skeleton, lambda: map(_entry_facts, entries), data[-2:]
        )
    document, messages = _parse_raw(hoisted)
    if document is None:
        return messages
    out = [m.validation_message for m in validate_full_document(document, "SPDX-2.3")]
    facts = [_model_facts(f) for f in document.files]
    return _own_checks(out, document, lambda: facts, data[-2:])


def _own_checks(
    out: list[str], document: Any, facts: Callable[[], Iterable[_FileFacts]], tail: bytes
) -> list[str]:
    """``out`` and what spdx-tools does not check, in this order: file names, file SPDXIDs, each
    package's verification code, the one final LF. ``facts`` gives the files' facts (each call
    anew); ``tail``: the document's last two bytes."""
    for f in facts():
        if not f.name.startswith("./") or zip_path_problem(f.name[2:]) is not None:
            out.append(f"file {f.name!r}: not a './'-relative zip path")
    for f in facts():
        if not SPDX_ID_RE.match(f.spdx_id):
            out.append(f"file {f.name!r}: SPDXID {f.spdx_id!r} is invalid")

    def sha1s_without(excluded: frozenset[str]) -> list[str]:
        return [s for f in facts() if f.name not in excluded for s in f.sha1s]

    out.extend(_verification_code_problems(document.packages, sha1s_without))
    if not tail.endswith(b"\n") or tail.endswith(b"\n\n"):
        out.append("document must end with exactly one LF")
    return out


def _entry_facts(entry: Mapping[str, Any]) -> _FileFacts:
    """The facts of a canonical file entry (``sbom._spdx_fast.split_canonical``)."""
    sha1s = tuple(c["checksumValue"] for c in entry["checksums"] if c["algorithm"] == "SHA1")
    return _FileFacts(name=entry["fileName"], spdx_id=entry["SPDXID"], sha1s=sha1s)


def _model_facts(file: Any) -> _FileFacts:
    """The facts of an spdx-tools File."""
    from spdx_tools.spdx.model.checksum import ChecksumAlgorithm

    sha1s = tuple(c.value for c in file.checksums if c.algorithm == ChecksumAlgorithm.SHA1)
    return _FileFacts(name=file.name, spdx_id=file.spdx_id, sha1s=sha1s)


def _verification_code_problems(
    packages: Sequence[Any], sha1s_without: Callable[[frozenset[str]], list[str]]
) -> list[str]:
    """Recompute each package's verification code from the listed files (spdx-tools does not).

    ``sha1s_without(excluded)``: every SHA-1 value of the listed files whose ``fileName`` is not
    in ``excluded``, in document order."""
    out: list[str] = []
    # Packages with the same exclusions share one computation: O(files) per distinct exclusion set.
    expected_by_excluded: dict[frozenset[str], str | None] = {}
    for package in packages:
        code = package.verification_code
        if code is None:
            continue
        excluded = frozenset(code.excluded_files)
        if excluded not in expected_by_excluded:
            sha1s = sha1s_without(excluded)
            try:
                expected_by_excluded[excluded] = package_verification_code(sha1s)
            except InputError as exc:
                out.extend(str(p) for p in exc.problems)
                expected_by_excluded[excluded] = None
        expected = expected_by_excluded[excluded]
        if expected is None:
            continue
        if code.value != expected:
            out.append(
                f"package {package.spdx_id}: packageVerificationCode {code.value} != {expected} of its files"
            )
    return out


@dataclass(frozen=True)
class SpdxCheck:
    """One strict parse of an SPDX document, for a verifier: :func:`validate_spdx_bytes`'s
    ``messages`` and the outcome of :func:`parse_spdx_files` for the same bytes (its map, or the
    very exception it raises), so the document is parsed once (issue 13)."""

    messages: list[str]
    files: Outcome[dict[str, tuple[str, str]]]


def check_spdx_bytes(data: bytes) -> SpdxCheck:
    """:func:`validate_spdx_bytes` and :func:`parse_spdx_files` of ``data`` from one strict parse
    (the file map is taken before validation runs). A document that does not parse as an object
    gets what each function gives for it on its own."""
    try:
        raw = strictjson.parse_object(data, source=SPDX_WHERE, error=IntegrityError)
    except IntegrityError as exc:
        return SpdxCheck(messages=[str(exc)], files=attempt(parse_spdx_files, data))
    files = attempt(_spdx_files_of, raw)
    return SpdxCheck(messages=_validate_parsed(raw, data), files=files)


def check_spdx_file(path: Path, *, limit: int) -> tuple[SpdxCheck, str] | None:
    """:func:`check_spdx_bytes` of the document in ``path`` and its SHA-256, read piece by piece
    without holding its bytes or a dict per file (``sbom._spdx_stream``; issue 13), or ``None``
    when the document is not a clean one the canonical fast path takes whole: the caller then reads
    it (within ``limit`` bytes) and calls :func:`check_spdx_bytes`, which gives every message of
    such a document. For a document read here, the messages and the file map are those
    :func:`check_spdx_bytes` gives for its bytes (``tests/test_spdx_stream.py``). Cost: one
    strict decode of each file entry and a few comparisons; nothing per file is built twice."""
    from ninfer_release.sbom._spdx_stream import NotClean, read_streamed

    streamed = read_streamed(path, limit=limit)
    if streamed is None:
        return None
    try:
        messages = _check_streamed(streamed)
    except (NotClean, AttributeError, TypeError, KeyError, IndexError, ValueError):
        return None  # the whole-document path gives its verdict on it
    if messages is None:
        return None
    refused = package_checksum_problems(streamed.skeleton.get("packages"))
    files = Outcome(value=streamed.files, error=IntegrityError(problems=refused) if refused else None)
    return SpdxCheck(messages=messages, files=files), streamed.sha256


def _check_streamed(streamed: Streamed) -> list[str] | None:
    """:func:`validate_spdx_bytes`'s messages for a clean streamed document (``None``: its
    skeleton or a licence text does not parse). Its file entries give no message of their own
    (``_spdx_stream._Reader.file``); what is left to check is the skeleton (clean without
    spdx-tools when ``sbom._spdx_skeleton.clean_skeleton`` says so, else spdx-tools' rules, with
    the files and the ``CONTAINS`` tail as :class:`_StreamedExtra`), the verification codes and
    the final LF.

    Raises:
        NotClean: a licence text or a tail relationship's source would give a message.
    """
    relationships = streamed.skeleton.get("relationships", [])
    split = split_checked(streamed.skeleton, streamed.file_ids, [], ())
    if split is None or type(relationships) is not list:
        return None
    skeleton_raw = split[0]
    skeleton_raw["relationships"] = relationships
    packages: Sequence[Any] | None = clean_skeleton(
        skeleton_raw, streamed.file_ids, streamed.licenses, streamed.contains_from
    )
    if packages is not None:
        out: list[str] = []  # spdx-tools certainly gives no message (sbom._spdx_skeleton)
    else:
        checked = _library_check_streamed(streamed, skeleton_raw)
        if checked is None:
            return None
        out, packages = checked
    files = streamed.files

    def sha1s_without(excluded: frozenset[str]) -> list[str]:
        # Every fileName is "./" + its path (``_Reader.file``).
        paths = {e[2:] for e in excluded if e.startswith("./")}
        return [v[0] for p, v in files.items() if p not in paths]

    out.extend(_verification_code_problems(packages, sha1s_without))
    if not streamed.tail.endswith(b"\n") or streamed.tail.endswith(b"\n\n"):
        out.append("document must end with exactly one LF")
    return out


def _library_check_streamed(streamed: Streamed, skeleton_raw: dict[str, Any]) -> tuple[list[str], Any] | None:
    """spdx-tools' messages for a streamed document's skeleton (with the files and the tail as
    :class:`_StreamedExtra`) and its packages, or ``None`` when the skeleton or a licence text does
    not parse.

    Raises:
        NotClean: a licence text or a tail relationship's source would give a message.
    """
    licenses = _parse_licenses(streamed.licenses)
    if licenses is None:
        return None
    skeleton = parse_skeleton(skeleton_raw)
    if skeleton is None:
        return None
    extra = _StreamedExtra(streamed, licenses)
    out = [m.validation_message for m in validate_full_document(skeleton, "SPDX-2.3", extra=extra)]
    return out, skeleton.packages


class _StreamedExtra:
    """The files and ``CONTAINS`` tail of a streamed document as ``sbom._spdx_validate.ExtraFiles``:
    each entry was clean when read, so spdx-tools' per-file rules give no message for it once its
    licence text and the tail's sources are clean here (else :class:`NotClean`)."""

    def __init__(self, streamed: Streamed, licenses: Mapping[str, Any]) -> None:
        self.streamed = streamed
        self.licenses = licenses

    @property
    def file_ids(self) -> Sequence[str]:
        return self.streamed.file_ids

    def check_files(self, out: Any, document: Any, version: str, index: Any) -> None:
        """Nothing to add, once every licence text is clean (``CanonicalFiles.check_files``)."""
        from spdx_tools.spdx.model.spdx_no_assertion import SpdxNoAssertion
        from spdx_tools.spdx.model.spdx_none import SpdxNone

        from ninfer_release.sbom._spdx_stream import NotClean

        for parsed in self.licenses.values():
            if not isinstance(parsed, SpdxNoAssertion | SpdxNone) and _license_texts(parsed, index):
                raise NotClean

    def check_relationships(self, out: Any, version: str, index: Any) -> None:
        """Nothing to add, once every source of the tail is clean (each target is a listed file,
        clean when read): ``CanonicalFiles.check_relationships``."""
        from ninfer_release.sbom._spdx_stream import NotClean

        for spdx_id in self.streamed.contains_from:
            if not _id_is_clean(spdx_id, index):
                raise NotClean


def parse_spdx_files(data: bytes) -> dict[str, tuple[str, str]]:
    """Zip path → (SHA-1, SHA-256) of every File in an SPDX JSON document.

    The path is the file name without its ``./`` prefix, as a zip member is named.

    Raises:
        IntegrityError: the bytes are not SPDX JSON, or a file lacks a SHA-1 or SHA-256.
    """
    return _spdx_files_of(strictjson.parse(data, source=SPDX_WHERE, error=IntegrityError))


def _spdx_files_of(raw: Any) -> dict[str, tuple[str, str]]:
    """:func:`parse_spdx_files` of the parsed document ``raw``."""
    files = raw.get("files", []) if isinstance(raw, dict) else None
    if not isinstance(files, list):
        raise IntegrityError(problems=[Problem(file=SPDX_WHERE, field="files", message="not a list")])
    refused = package_checksum_problems(raw.get("packages"))
    if refused:
        raise IntegrityError(problems=refused)
    return _files_map(files)


def package_checksum_problems(packages: Any) -> list[Problem]:
    """A ``checksums`` field on a package of ``packages`` (the document's ``packages`` value):
    our writer gives the package (the zip) none, as the zip holds this very document (module
    docstring), so a digest there is one nothing checks and a consumer may take (hostile review,
    2026-12-04). Anything but a list of objects holds none (the validation reports its shape)."""
    return [
        Problem(
            file=SPDX_WHERE,
            field=f"packages[{p.get('SPDXID')}].checksums",
            message="a package checksum, which ninfer-release never writes (the zip holds this document)",
        )
        for p in (packages if isinstance(packages, list) else [])
        if isinstance(p, dict) and "checksums" in p
    ]


def _files_map(files: Iterable[Any]) -> dict[str, tuple[str, str]]:
    """:func:`parse_spdx_files` of the document's ``files`` entries."""
    return _checksum_map(
        (
            str(entry.get("fileName", "")) if isinstance(entry, dict) else "",
            [
                (str(c.get("algorithm")), str(c.get("checksumValue")))
                for c in (entry.get("checksums") or [] if isinstance(entry, dict) else [])
                if isinstance(c, dict)
            ],
        )
        for entry in files
    )


#: The file checksums our writer gives every File (``_file_entry``): exactly these, each once.
FILE_CHECKSUMS = ("SHA1", "SHA256")


def _checksum_map(files: Iterable[tuple[str, Iterable[tuple[str, str]]]]) -> dict[str, tuple[str, str]]:
    """:func:`parse_spdx_files` of ``(fileName, ((algorithm, checksumValue), …))`` per file (a
    value already lowercase is kept, not copied). Each file has exactly the checksums our writer
    writes (:data:`FILE_CHECKSUMS`), each once: a second SHA256 is a digest a consumer taking the
    first (or the last) would read unchecked, and an MD5 or SHA512 one nothing here compares
    (hostile review, 2026-12-04)."""
    out: dict[str, tuple[str, str]] = {}
    problems: list[Problem] = []
    for name, pairs in files:
        sums, refused = _file_sums(name, pairs)
        if refused:
            problems.extend(refused)
            continue
        path = name.removeprefix("./")
        if "SHA1" not in sums or "SHA256" not in sums:
            problems.append(Problem(file=SPDX_WHERE, field=f"files[{name}]", message="needs SHA1 and SHA256"))
            continue
        if path in out:
            problems.append(Problem(file=SPDX_WHERE, field=f"files[{name}]", message="listed twice"))
        out[path] = (sums["SHA1"], sums["SHA256"])
    if problems:
        raise IntegrityError(problems=problems)
    return out


def _file_sums(name: str, pairs: Iterable[tuple[str, str]]) -> tuple[dict[str, str], list[Problem]]:
    """Algorithm -> lowercase value of one file's checksums, and why they are not our writer's
    (an algorithm it does not write, or one given twice)."""
    sums: dict[str, str] = {}
    problems: list[Problem] = []
    field = f"files[{name}].checksums"
    for algorithm, value in pairs:
        if algorithm not in FILE_CHECKSUMS:
            message = f"{algorithm!r} is not SHA1 or SHA256, the checksums ninfer-release writes"
            problems.append(Problem(file=SPDX_WHERE, field=field, message=message))
        elif algorithm in sums:
            message = f"{algorithm} is given more than once"
            problems.append(Problem(file=SPDX_WHERE, field=field, message=message))
        else:
            sums[algorithm] = _lower(value)
    return sums, problems


def _lower(value: str) -> str:
    lowered = value.lower()
    return value if lowered == value else lowered


def cross_check_spdx(
    data: bytes, members: Mapping[str, tuple[str, str]], *, spdx_file_path: str
) -> list[Problem]:
    """Problems between an SPDX document and the zip it describes (empty = consistent).

    ``members`` maps every zip member path to its (SHA-1, SHA-256). Every member except the
    document itself (``spdx_file_path``) must be listed with equal digests, nothing else may be
    listed, and the document must be the verification code's excluded file (C26).

    Raises:
        IntegrityError: the bytes are not an SPDX JSON document with SHA1/SHA256 per file.
    """
    where = spdx_file_path
    listed = parse_spdx_files(data)
    problems: list[Problem] = []
    for path in sorted(set(members) | set(listed)):
        if path == spdx_file_path:
            if path in listed:
                problems.append(Problem(file=where, field=path, message="the document lists itself"))
            continue
        if path not in listed:
            problems.append(Problem(file=where, field=path, message="zip member not in the SPDX file list"))
        elif path not in members:
            problems.append(Problem(file=where, field=path, message="listed in SPDX but not in the zip"))
        elif tuple(d.lower() for d in members[path]) != listed[path]:
            problems.append(Problem(file=where, field=path, message="SPDX checksums differ from the member"))
    raw = strictjson.parse_object(data, source=where, error=IntegrityError)
    for package in raw.get("packages", []):
        code = package.get("packageVerificationCode") or {}
        excluded = code.get("packageVerificationCodeExcludedFiles", [])
        if excluded != [f"./{spdx_file_path}"]:
            problems.append(
                Problem(
                    file=where,
                    field="packageVerificationCodeExcludedFiles",
                    message=f"{excluded!r} is not ['./{spdx_file_path}']",
                )
            )
    return problems
