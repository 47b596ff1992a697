"""The skeleton of a canonical SPDX 2.3 document, judged clean without spdx-tools (issue 13).

``verify`` of a set our builder wrote spent ~0.3 s of CPU importing spdx-tools (its beartype-
checked model, parser, validators and licence list) only to learn that the few dozen values of
the document's *skeleton* (header, creation info, packages, extracted licences, the relationships
before the per-file ``CONTAINS`` tail) give no message. :func:`clean_skeleton` decides that with
plain comparisons. It is *sound, not complete*: it answers "clean" (the packages' verification
codes) only for the narrow shape ``sbom._spdx.spdx_file_inventory`` writes, where every value it
looks at passes spdx-tools 0.8.5's JSON-like parser and ``validate_full_spdx_document`` (rules
mirrored by ``sbom._spdx_validate``) without a message; anything else, or anything it is not sure
of, answers ``None`` and the caller runs the unchanged library path, so every reported message is
still spdx-tools' own text.

Rule groups and why "clean" implies no library message (``tests/test_spdx_skeleton.py`` holds the
verdicts against the library on the builder's documents and one-rule mutations):

* exact key sets and JSON types per object, so the parser's ``dict.get`` calls see exactly the
  values checked here and its beartype-checked constructors get the types they declare;
* the header: ``SPDXID`` ``SPDXRef-DOCUMENT``, ``spdxVersion`` ``SPDX-2.3``, ``dataLicense``
  ``CC0-1.0`` (``validate_creation_info``); ``documentNamespace`` ``http(s)://host/path`` of
  unreserved characters only (an absolute URI without fragment for ``uritools``);
* dates: ``YYYY-MM-DDTHH:MM:SSZ`` in ASCII digits that ``datetime`` accepts (the parser's
  ``strptime("%Y-%m-%dT%H:%M:%SZ")`` then succeeds too);
* actors: ``Tool: <name>`` / ``Organization: <name>`` with a name without parentheses, control
  characters or surrounding space (``ActorParser``: a name, no e-mail);
* ids: :data:`_ID` (ASCII, a subset of ``is_valid_internal_spdx_id``, no colon), all distinct
  (document, files, packages), every relationship end and tail source one of them;
* packages: ``filesAnalyzed`` true, a 40-digit lowercase verification code without absolute
  excluded names, download location / homepage judged by the library's own URL expressions
  (copied verbatim, compared with the library's in the tests), a ``PACKAGE_MANAGER``/``purl``
  reference matching the library's ``PURL_REGEX``, a ``primaryPackagePurpose`` enum name;
* licence expressions: ``NOASSERTION``, ``NONE``, or ids of :data:`_KNOWN_LICENSES` (each checked
  against spdx-tools' licensing in the tests) and the document's extracted ``LicenseRef-`` ids,
  joined by `` AND `` / `` OR `` (no parentheses, no ``WITH``);
* extracted licences: ``LicenseRef-`` id, non-empty text, a name;
* relationships: ``DESCRIBES`` / ``CONTAINS`` between listed ids, one ``DESCRIBES`` from the
  document (the document is not one lone package: it has files).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

#: An SPDX id the fast path accepts: a subset of spdx-tools' ``^SPDXRef-[\da-zA-Z.-]+$`` (whose
#: ``\d`` and ``$`` also let Unicode digits and a final LF through), used with ``fullmatch``.
_ID = re.compile(r"SPDXRef-[A-Za-z0-9.-]+")
_LICENSE_REF = re.compile(r"LicenseRef-[A-Za-z0-9.-]+")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z")
_NAMESPACE = re.compile(r"https?://[A-Za-z0-9.-]+(?:/[A-Za-z0-9._~-]+)*")
_ACTOR_NAME = re.compile(r"[^\x00-\x1f\x7f-\x9f()]+")
_HEX40 = re.compile(r"[0-9a-f]{40}")
_EXPRESSION = re.compile(r"[A-Za-z0-9.+-]+(?: (?:AND|OR) [A-Za-z0-9.+-]+)*")
_OPERATOR = re.compile(r" (?:AND|OR) ")

#: spdx-tools 0.8.5 ``uri_validators.url_pattern`` and ``download_location_pattern``, verbatim
#: (``tests/test_spdx_skeleton.py`` compares them with the library's), used as the library does.
URL_PATTERN = (
    "(http:\\/\\/www\\.|https:\\/\\/www\\.|http:\\/\\/|https:\\/\\/|ssh:\\/\\/|git:\\/\\/|svn:\\/\\/|sftp:"
    "\\/\\/|ftp:\\/\\/)?([\\w\\-.!~*'()%;:&=+$,]+@)?[a-z0-9]+([\\-\\.]{1}[a-z0-9]+){0,100}\\.[a-z]{2,5}"
    "(:[0-9]{1,5})?(\\/.*)?"
)
DOWNLOAD_LOCATION_PATTERN = (
    "^((((git|hg|svn|bzr)\\+)?"
    + URL_PATTERN
    + ")|(git\\+git@[a-zA-Z0-9\\.\\-]+:[a-zA-Z0-9/\\\\.@\\-]+)|(bzr\\+lp:[a-zA-Z0-9\\.\\-]+))$"
)
#: spdx-tools 0.8.5 ``external_package_ref_validator.PURL_REGEX``, verbatim.
PURL_REGEX = r"^pkg:.+(\/.+)?\/.+(@.+)?(\?.+)?(#.+)?$"
_PURL = re.compile(PURL_REGEX)
#: A prefix the library's ``url_pattern`` matches whenever this does with at most 100 ``.``/``-``
#: in the host group (its ``([\-\.]{1}[a-z0-9]+){0,100}``): the scheme, then the host as that
#: expression spells it, in lower case. Compiling ``url_pattern`` itself takes ~7 ms (the bounded
#: repetition), so it is compiled only for a location this does not match.
_SIMPLE_URL = re.compile(r"https?://([a-z0-9]+(?:[.-][a-z0-9]+)*)\.[a-z]{2,5}")


@functools.cache
def _library_url() -> re.Pattern[str]:
    return re.compile(URL_PATTERN, re.IGNORECASE)


@functools.cache
def _library_download() -> re.Pattern[str]:
    return re.compile(DOWNLOAD_LOCATION_PATTERN, re.IGNORECASE)


def is_url(value: str) -> bool:
    """spdx-tools' ``validate_url(value) == []`` (``url_pattern``, case-insensitive, ``match``)."""
    m = _SIMPLE_URL.match(value)
    if m is not None and m.group(1).count(".") + m.group(1).count("-") <= 100:
        return True
    return _library_url().match(value) is not None


def is_download_location(value: str) -> bool:
    """spdx-tools' ``validate_download_location(value) == []``."""
    return is_url(value) or _library_download().match(value) is not None


#: spdx-tools' ``PackagePurpose`` names (the tests compare them with the library's enum).
PACKAGE_PURPOSES = frozenset(
    {
        "APPLICATION", "FRAMEWORK", "LIBRARY", "CONTAINER", "OPERATING_SYSTEM", "DEVICE",
        "FIRMWARE", "SOURCE", "ARCHIVE", "FILE", "INSTALL", "OTHER",
    }
)  # fmt: skip
#: Relationship types the fast path accepts (members of spdx-tools' ``RelationshipType``, valid
#: in SPDX 2.3).
RELATIONSHIP_TYPES = frozenset({"DESCRIBES", "CONTAINS"})
#: SPDX licence list ids the fast path accepts, exactly so spelled: each is a known, non-exception
#: symbol of spdx-tools' licensing that parses strictly, alone and joined by AND / OR
#: (``tests/test_spdx_skeleton.py``). Any other id makes the document take the library path.
_KNOWN_LICENSES = frozenset(
    {
        "0BSD", "AFL-2.1", "Apache-2.0", "Artistic-2.0", "BSD-1-Clause", "BSD-2-Clause",
        "BSD-3-Clause", "BSL-1.0", "bzip2-1.0.6", "CC-BY-4.0", "CC0-1.0", "curl", "EPL-2.0",
        "FTL", "GPL-2.0-only", "GPL-2.0-or-later", "GPL-3.0-only", "GPL-3.0-or-later", "IJG",
        "ISC", "LGPL-2.1-only", "LGPL-2.1-or-later", "LGPL-3.0-only", "LGPL-3.0-or-later",
        "Libpng", "libpng-2.0", "MIT", "MIT-0", "MPL-2.0", "NCSA", "OpenSSL", "PSF-2.0",
        "Python-2.0", "Unicode-DFS-2016", "Unlicense", "X11", "Zlib",
    }
)  # fmt: skip

#: spdx-tools' ``FileType`` names (what a file entry's ``fileTypes`` may hold; the tests compare
#: them with the library's enum).
FILE_TYPES = frozenset(
    {
        "SOURCE", "BINARY", "ARCHIVE", "APPLICATION", "AUDIO", "IMAGE", "TEXT", "VIDEO",
        "DOCUMENTATION", "SPDX", "OTHER",
    }
)  # fmt: skip
#: spdx-tools' ``checksum_validator.algorithm_length`` of SHA1 and SHA256 (hex digits).
SHA1_DIGITS, SHA256_DIGITS = 40, 64

_TOP_KEYS = frozenset(
    {
        "SPDXID", "comment", "creationInfo", "dataLicense", "documentNamespace",
        "hasExtractedLicensingInfos", "name", "packages", "relationships", "spdxVersion",
    }
)  # fmt: skip
_TOP_REQUIRED = frozenset(_TOP_KEYS - {"comment", "hasExtractedLicensingInfos"})
_PACKAGE_KEYS = frozenset(
    {
        "SPDXID", "builtDate", "comment", "copyrightText", "downloadLocation", "externalRefs",
        "filesAnalyzed", "homepage", "licenseConcluded", "licenseDeclared", "name",
        "packageFileName", "packageVerificationCode", "primaryPackagePurpose", "supplier",
        "versionInfo",
    }
)  # fmt: skip
_PACKAGE_REQUIRED = ("SPDXID", "name", "downloadLocation", "packageVerificationCode")
_PACKAGE_STRINGS = ("comment", "copyrightText", "packageFileName", "versionInfo")
_CODE_KEYS = frozenset({"packageVerificationCodeExcludedFiles", "packageVerificationCodeValue"})
_REF_KEYS = frozenset({"referenceCategory", "referenceLocator", "referenceType"})
_EXTRACTED_KEYS = frozenset({"extractedText", "licenseId", "name"})
_RELATIONSHIP_KEYS = frozenset({"spdxElementId", "relationshipType", "relatedSpdxElement"})
_SPECIAL = ("NOASSERTION", "NONE")


@dataclass(frozen=True)
class VerificationCode:
    """A package's ``packageVerificationCode``: ``value`` (40 hex digits) and ``excluded_files``."""

    value: str
    excluded_files: list[str]


@dataclass(frozen=True)
class SkeletonPackage:
    """What the checks beyond spdx-tools read of a package: its SPDXID and verification code."""

    spdx_id: str
    verification_code: VerificationCode


def is_date(value: Any) -> bool:
    """``value`` is ``YYYY-MM-DDTHH:MM:SSZ`` (ASCII digits) naming a real UTC second."""
    m = _DATE.fullmatch(value) if type(value) is str else None
    if m is None:
        return False
    try:
        year, month, day, hour, minute, second = (int(g) for g in m.groups())
        datetime(year, month, day, hour, minute, second)  # a calendar check only
    except ValueError:
        return False
    return True


def is_actor(value: Any, kinds: tuple[str, ...]) -> bool:
    """``"<Kind>: <name>"`` for a kind of ``kinds`` and a name without parentheses, control
    characters or surrounding whitespace (spdx-tools' ActorParser gives a name and no e-mail)."""
    if type(value) is not str:
        return False
    kind, sep, name = value.partition(": ")
    return bool(sep) and kind in kinds and _ACTOR_NAME.fullmatch(name) is not None and name.strip() == name


def is_clean_license(text: Any, refs: Collection[str]) -> bool:
    """``text`` parses and validates without a message in spdx-tools (``NOASSERTION``, ``NONE``,
    or :data:`_KNOWN_LICENSES` ids and ``refs`` joined by AND / OR)."""
    if type(text) is not str:
        return False
    if text in _SPECIAL:
        return True
    if _EXPRESSION.fullmatch(text) is None:
        return False
    return all(t in _KNOWN_LICENSES or t in refs for t in _OPERATOR.split(text))


def _extracted_refs(raw: Mapping[str, Any]) -> set[str] | None:
    """The ``LicenseRef-`` ids of clean ``hasExtractedLicensingInfos`` entries, or ``None``."""
    infos = raw["hasExtractedLicensingInfos"]
    if type(infos) is not list or not infos:
        return None
    refs: set[str] = set()
    for info in infos:
        if not (
            type(info) is dict
            and info.keys() == _EXTRACTED_KEYS
            and type(info["licenseId"]) is str
            and _LICENSE_REF.fullmatch(info["licenseId"])
            and type(info["extractedText"]) is str
            and info["extractedText"]
            and type(info["name"]) is str
            and info["name"]
        ):
            return None
        refs.add(info["licenseId"])
    return refs


def _header_is_clean(raw: Mapping[str, Any]) -> bool:
    """The document-level members and ``creationInfo``."""
    if not (_TOP_KEYS.issuperset(raw) and _TOP_REQUIRED.issubset(raw)):
        return False
    info = raw["creationInfo"]
    return (
        raw["SPDXID"] == "SPDXRef-DOCUMENT"
        and raw["spdxVersion"] == "SPDX-2.3"
        and raw["dataLicense"] == "CC0-1.0"
        and type(raw["name"]) is str
        and type(raw.get("comment", "")) is str
        and type(raw["documentNamespace"]) is str
        and _NAMESPACE.fullmatch(raw["documentNamespace"]) is not None
        and type(info) is dict
        and info.keys() == {"created", "creators"}
        and is_date(info["created"])
        and type(info["creators"]) is list
        and bool(info["creators"])
        and all(is_actor(c, ("Tool", "Organization")) for c in info["creators"])
    )


def _is_name(value: Any, names: frozenset[str]) -> bool:
    """``value`` is a string of ``names`` (an unhashable JSON value answers ``False``, not
    ``TypeError``: :func:`clean_skeleton` raises nothing)."""
    return type(value) is str and value in names


def _location_is_clean(value: Any, check: Callable[[str], bool]) -> bool:
    """``NOASSERTION`` / ``NONE`` or a string the library's URL expressions accept (``check``)."""
    if type(value) is not str:
        return False
    return value in _SPECIAL or check(value)


def _refs_are_clean(refs: Any) -> bool:
    """A non-empty list of ``PACKAGE_MANAGER`` / ``purl`` references matching ``PURL_REGEX``."""
    if type(refs) is not list or not refs:
        return False
    return all(
        type(r) is dict
        and r.keys() == _REF_KEYS
        and r["referenceCategory"] == "PACKAGE_MANAGER"
        and r["referenceType"] == "purl"
        and type(r["referenceLocator"]) is str
        and _PURL.match(r["referenceLocator"]) is not None
        for r in refs
    )


def _code_of(code: Any) -> VerificationCode | None:
    """The verification code of a clean ``packageVerificationCode`` object, or ``None``."""
    if type(code) is not dict or code.keys() != _CODE_KEYS:
        return None
    value, excluded = code["packageVerificationCodeValue"], code["packageVerificationCodeExcludedFiles"]
    if type(value) is not str or _HEX40.fullmatch(value) is None or type(excluded) is not list:
        return None
    if not all(type(e) is str and not e.startswith("/") for e in excluded):
        return None
    return VerificationCode(value=value, excluded_files=list(excluded))


def _package_values_are_clean(package: dict[str, Any], refs: Collection[str]) -> bool:
    """The values of a package object with the allowed keys (see :func:`_package_of`)."""
    get = package.get
    supplier = get("supplier", "NOASSERTION")
    return (
        type(package["SPDXID"]) is str
        and _ID.fullmatch(package["SPDXID"]) is not None
        and type(package["name"]) is str
        and get("filesAnalyzed", True) is True
        and all(type(get(k, "")) is str for k in _PACKAGE_STRINGS)
        and _location_is_clean(package["downloadLocation"], is_download_location)
        and ("homepage" not in package or _location_is_clean(package["homepage"], is_url))
        and (supplier == "NOASSERTION" or is_actor(supplier, ("Organization",)))
        and ("builtDate" not in package or is_date(package["builtDate"]))
        and _is_name(get("primaryPackagePurpose", "OTHER"), PACKAGE_PURPOSES)
        and ("externalRefs" not in package or _refs_are_clean(package["externalRefs"]))
        and all(is_clean_license(get(k, "NONE"), refs) for k in ("licenseConcluded", "licenseDeclared"))
    )


def _package_of(package: Any, refs: Collection[str]) -> SkeletonPackage | None:
    """The facts of a clean package object, or ``None`` (not sure)."""
    if type(package) is not dict or not _PACKAGE_KEYS.issuperset(package):
        return None
    if not all(k in package for k in _PACKAGE_REQUIRED) or not _package_values_are_clean(package, refs):
        return None
    code = _code_of(package["packageVerificationCode"])
    return None if code is None else SkeletonPackage(spdx_id=package["SPDXID"], verification_code=code)


def _relationships_are_clean(relationships: Any, ids: Collection[str]) -> bool:
    """Relationships of :data:`RELATIONSHIP_TYPES` between listed ids, one DESCRIBES from the document."""
    if type(relationships) is not list:
        return False
    describes = False
    for r in relationships:
        if not (
            type(r) is dict
            and r.keys() == _RELATIONSHIP_KEYS
            and _is_name(r["relationshipType"], RELATIONSHIP_TYPES)
            and type(r["spdxElementId"]) is str
            and type(r["relatedSpdxElement"]) is str
            and r["spdxElementId"] in ids
            and r["relatedSpdxElement"] in ids
        ):
            return False
        from_document = r["spdxElementId"] == "SPDXRef-DOCUMENT"
        describes = describes or (r["relationshipType"] == "DESCRIBES" and from_document)
    return describes


def clean_skeleton(
    raw: Mapping[str, Any],
    file_ids: Sequence[str],
    file_licenses: Iterable[str],
    contains_from: Iterable[str],
) -> list[SkeletonPackage] | None:
    """The packages of a skeleton spdx-tools certainly gives no message for, or ``None``.

    ``raw``: the document's top-level object without ``files``, its ``relationships`` those before
    the ``CONTAINS`` tail; ``file_ids``: the listed files' SPDXIDs, each already one spdx-tools'
    per-file rules accept (``sbom._spdx_stream._Reader.file``) and distinct; ``file_licenses``:
    their distinct ``licenseConcluded`` texts; ``contains_from``: the tail's distinct sources
    (each tail target is a listed file). ``None`` = not sure: run the library path.
    Raises nothing.
    """
    if not file_ids or not _header_is_clean(raw):
        return None
    refs = _extracted_refs(raw) if "hasExtractedLicensingInfos" in raw else set()
    packages = raw["packages"]
    if refs is None or type(packages) is not list or not packages:
        return None
    found: list[SkeletonPackage] = []
    for package in packages:
        facts = _package_of(package, refs)
        if facts is None:
            return None
        found.append(facts)
    package_ids = [p.spdx_id for p in found]
    ids = {"SPDXRef-DOCUMENT", *file_ids, *package_ids}
    if len(ids) != 1 + len(file_ids) + len(package_ids):
        return None  # a duplicate id: the library words it
    if not all(_ID.fullmatch(i) for i in file_ids):
        return None
    if not _relationships_are_clean(raw["relationships"], ids):
        return None
    if not all(is_clean_license(t, refs) for t in file_licenses):
        return None
    if not all(type(s) is str and s in ids for s in contains_from):
        return None
    return found
