"""RFC 3987 IRI syntax checks as regular expressions, and a lean jsonschema import (no lark).

Why this exists: jsonschema's ``_format`` module imports ``rfc3987_syntax`` when it is installed
(it is, as a dependency of cyclonedx-python-lib's ``json-validation`` extra), and that module
compiles 39 Earley grammars with lark *at import time* — 3–8 s on this project's 2-core machines,
paid by every ``verify`` run (DESIGN.md §11: verify ≤ 1.1× ``sha256sum -c``). The CycloneDX 1.6
schemas use only the ``date-time``, ``idn-email``, ``iri-reference`` and ``uri`` formats, and
the ABNF of RFC 3987 §2.2 is regular, so the two IRI formats are checked here by a translation
of that ABNF into one regular expression each (microseconds per value), and jsonschema is
imported with ``rfc3987_syntax`` (and the other modules behind formats those schemas never use)
hidden, so that its grammars are never built. The checkers the schemas need are jsonschema's
own; IRI values are still checked, not skipped. The ``uri`` / ``uri-reference`` checkers
(``rfc3986_validator``, which compiles its RFC 3986 expressions at import: ~11 ms of every
``verify``, issue 13) are jsonschema's same two functions registered under the same names, with
the module imported on their first call: only the JSF signature schema uses ``uri``.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import re
import sys
import threading

# RFC 3987 §2.2: ucschar and iprivate code point ranges.
_UCS_RANGES = (
    (0xA0, 0xD7FF),
    (0xF900, 0xFDCF),
    (0xFDF0, 0xFFEF),
    *((p << 16, (p << 16) | 0xFFFD) for p in range(1, 14)),
    (0xE1000, 0xEFFFD),
)
_PRIVATE_RANGES = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))

# The ABNF over ASCII; non-ASCII characters are checked and mapped first (see _ascii_form).
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_IPCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_ISEGMENT = rf"{_IPCHAR}*"
_ISEGMENT_NZ = rf"{_IPCHAR}+"
_ISEGMENT_NZ_NC = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}@]|{_PCT})+"
_IUSERINFO = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*"
_IREG_NAME = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*"  # also covers IPv4address
_IP_LITERAL = r"\[(?P<ip>[^\[\]/?#@]*)\]"  # content checked by _ip_literal_ok
_IAUTHORITY = rf"(?:{_IUSERINFO}@)?(?:{_IP_LITERAL}|{_IREG_NAME})(?::[0-9]*)?"
_IPATH_ABEMPTY = rf"(?:/{_ISEGMENT})*"
_IPATH_ABSOLUTE = rf"/(?:{_ISEGMENT_NZ}(?:/{_ISEGMENT})*)?"
_IPATH_ROOTLESS = rf"{_ISEGMENT_NZ}(?:/{_ISEGMENT})*"
_IPATH_NOSCHEME = rf"{_ISEGMENT_NZ_NC}(?:/{_ISEGMENT})*"
_IQUERY = rf"(?:{_IPCHAR}|[/?])*"
_IFRAGMENT = rf"(?:{_IPCHAR}|[/?])*"
_TAIL = rf"(?:\?{_IQUERY})?(?:#{_IFRAGMENT})?"
_SCHEME = r"[A-Za-z][A-Za-z0-9+\-.]*"

#: ``IRI = scheme ":" ihier-part [ "?" iquery ] [ "#" ifragment ]``
_IRI = re.compile(
    rf"{_SCHEME}:(?://{_IAUTHORITY}{_IPATH_ABEMPTY}|{_IPATH_ABSOLUTE}|{_IPATH_ROOTLESS}|){_TAIL}"
)
#: ``irelative-ref = irelative-part [ "?" iquery ] [ "#" ifragment ]``
_IRELATIVE_REF = re.compile(
    rf"(?://{_IAUTHORITY}{_IPATH_ABEMPTY}|{_IPATH_ABSOLUTE}|{_IPATH_NOSCHEME}|){_TAIL}"
)
_IPV_FUTURE = re.compile(rf"[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~{_SUB_DELIMS}:]+")
#: Stands for an allowed non-ASCII character: in iunreserved (so in every i-component), but not
#: in a scheme, port, IPv6 address or IPvFuture's hex.
_STAND_IN = "~"


def _in_ranges(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


def _ascii_form(value: str) -> str | None:
    """``value`` with each allowed non-ASCII character replaced by ``~``; None if one is not allowed.

    ``ucschar`` may appear in every i-component; ``iprivate`` only in ``iquery``, which starts
    at the first ``?`` that precedes any ``#`` and ends at the next ``#`` (RFC 3987 §2.2).
    """
    if value.isascii():
        return value
    query = value.find("?")
    hash_ = value.find("#")
    if query != -1 and hash_ != -1 and hash_ < query:
        query = -1
    query_end = hash_ if hash_ != -1 else len(value)
    out = []
    for i, ch in enumerate(value):
        code = ord(ch)
        if code < 0x80:
            out.append(ch)
        elif _in_ranges(code, _UCS_RANGES) or (
            query != -1 and query < i < query_end and _in_ranges(code, _PRIVATE_RANGES)
        ):
            out.append(_STAND_IN)
        else:
            return None
    return "".join(out)


def _ip_literal_ok(match: re.Match[str], original: str) -> bool:
    """``IP-literal = "[" ( IPv6address / IPvFuture ) "]"`` (no zone identifier)."""
    if match.group("ip") is None:
        return True
    ip = original[match.start("ip") : match.end("ip")]  # the unmapped characters
    if _IPV_FUTURE.fullmatch(ip):
        return True
    if "%" in ip:
        return False
    try:
        ipaddress.IPv6Address(ip)
    except ValueError:
        return False
    return True


def is_iri(value: str) -> bool:
    """True if ``value`` matches the ``IRI`` rule of RFC 3987 §2.2 (absolute, with a scheme)."""
    mapped = _ascii_form(value)
    m = _IRI.fullmatch(mapped) if mapped is not None else None
    return m is not None and _ip_literal_ok(m, value)


def is_iri_reference(value: str) -> bool:
    """True if ``value`` matches ``IRI-reference = IRI / irelative-ref`` of RFC 3987 §2.2."""
    if is_iri(value):
        return True
    mapped = _ascii_form(value)
    m = _IRELATIVE_REF.fullmatch(mapped) if mapped is not None else None
    return m is not None and _ip_literal_ok(m, value)


_IMPORT_LOCK = threading.Lock()
#: Optional modules jsonschema's ``_format`` imports at import time, none of which backs a format
#: the CycloneDX 1.6 schemas use (``date-time``, ``idn-email``, ``iri-reference``, ``uri``):
#: rfc3987_syntax (iri, iri-reference: lark grammars, seconds), uri_template (uri-template),
#: webcolors (color), isoduration (duration), fqdn (hostname), jsonpointer (json-pointer),
#: idna (idn-hostname). Together about 0.1 s of CPU besides the lark grammars.
UNUSED_FORMAT_MODULES = (
    "rfc3987_syntax",
    "uri_template",
    "webcolors",
    "isoduration",
    "fqdn",
    "jsonpointer",
    "idna",
)
#: Format modules jsonschema's ``_format`` imports at import time whose checkers are registered
#: again after the import, loading the module on first use (:func:`_register_deferred_uri`).
DEFERRED_FORMAT_MODULES = ("rfc3986_validator",)


def import_jsonschema_lean() -> None:
    """Import jsonschema without the format modules the CycloneDX schemas do not need.

    For the duration of the import only, each of :data:`UNUSED_FORMAT_MODULES` that is not yet
    imported is ``None`` in ``sys.modules``, which makes jsonschema's guarded imports fail and
    skip those format checkers (above all the lark-based ``iri``/``iri-reference`` ones; callers
    register :func:`is_iri` / :func:`is_iri_reference` instead). The modules stay importable
    afterwards. A no-op when jsonschema is already imported (its checkers are then replaced by
    ours in the validators this package builds, so behaviour is the same either way).
    """
    with _IMPORT_LOCK:
        if "jsonschema" in sys.modules:
            return
        deferred = [
            n for n in DEFERRED_FORMAT_MODULES if n not in sys.modules and importlib.util.find_spec(n)
        ]
        hidden = [name for name in (*UNUSED_FORMAT_MODULES, *deferred) if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]
        try:
            import jsonschema  # type: ignore[import-untyped]  # noqa: F401 - the import is the point
        finally:
            for name in hidden:
                if sys.modules.get(name, ...) is None:
                    del sys.modules[name]
        if deferred:
            _register_deferred_uri()


def _register_deferred_uri() -> None:
    """Register jsonschema's ``uri`` (all drafts) and ``uri-reference`` (draft 6 on, raising
    ``ValueError``) checkers as jsonschema 4.26 ``_format`` does with ``rfc3986_validator``
    installed and ``rfc3987`` absent, importing ``rfc3986_validator`` on the first call.

    Nothing is registered when jsonschema already has a ``uri`` checker (``rfc3987`` installed:
    jsonschema's own branch). Registered globally, like jsonschema's own, so every validator in
    the process sees the same formats whether or not this lean import ran first.
    """
    from jsonschema import _format

    if "uri" in _format.draft7_format_checker.checkers:
        return

    def is_uri(instance: object) -> object:
        if not isinstance(instance, str):
            return True
        from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]

        return validate_rfc3986(instance, rule="URI")

    def is_uri_reference(instance: object) -> object:
        if not isinstance(instance, str):
            return True
        from rfc3986_validator import validate_rfc3986

        return validate_rfc3986(instance, rule="URI_reference")

    _format._checks_drafts(name="uri")(is_uri)
    _format._checks_drafts(
        draft6="uri-reference",
        draft7="uri-reference",
        draft201909="uri-reference",
        draft202012="uri-reference",
        raises=ValueError,
    )(is_uri_reference)
