"""SPDX licence expressions: unknown ids become ``LicenseRef-<id>``, free text is refused (C29)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ninfer_release.errors import InputError, Problem
from ninfer_release.sbom._records import NormalizedLicense

# SPDX 2.3 Annex D: idstring = 1*(ALPHA / DIGIT / "-" / "." ); a licence id may end in "+".
_ID = re.compile(r"^[A-Za-z0-9.-]+\+?$")
_REF = re.compile(r"^(?:DocumentRef-[A-Za-z0-9.-]+:)?LicenseRef-[A-Za-z0-9.-]+$")
log = logging.getLogger(__name__)
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_OPERATORS = {"AND", "OR", "WITH"}
_SPECIAL = {"NOASSERTION", "NONE"}

HINT = (
    "write a licence that is not on the SPDX list as LicenseRef-<id> with its text in sbom/licenses/<id>.txt"
)


@cache
def _known() -> tuple[dict[str, str], frozenset[str]]:
    """SPDX licence list of spdx-tools' licensing: lowercase key → canonical key, and exceptions."""
    from spdx_tools.common.spdx_licensing import spdx_licensing

    keys: dict[str, str] = {}
    exceptions: set[str] = set()
    for key, symbol in spdx_licensing.known_symbols.items():
        if key.startswith("LicenseRef-"):
            continue  # scancode's LicenseRef-scancode-* are not SPDX list ids
        keys[key.lower()] = key
        # Deprecated list ids (GPL-2.0, GPL-2.0+) are aliases of their current ids.
        for alias in getattr(symbol, "aliases", ()):
            if _ID.match(alias) and not alias.startswith("LicenseRef-"):
                keys.setdefault(alias.lower(), key)
        if getattr(symbol, "is_exception", False):
            exceptions.add(key)
    return keys, frozenset(exceptions)


def normalize_license_expression(text: str, *, where: str = "license", field: str = "") -> NormalizedLicense:
    """Make ``text`` a valid SPDX 2.3 licence expression (C29; SPDX 2.3 Annex D).

    Known ids are spelled canonically (``mit`` → ``MIT``); an id that is not on the SPDX list but
    is a valid idstring becomes ``LicenseRef-<id>`` (``MIT AND Custom-EULA`` →
    ``MIT AND LicenseRef-Custom-EULA``); operators are upper-cased. Free text (characters outside
    letters, digits, ``.``, ``-``, or words without operators between them) is never turned into
    an expression.

    Raises:
        InputError: ``text`` is free text or not a well-formed expression; the message names
            ``where``/``field`` and the offending word.
    """

    def fail(message: str) -> InputError:
        return InputError(problems=[Problem(file=where, field=field, message=f"{text!r}: {message}")])

    stripped = text.strip()
    if not stripped:
        raise fail("empty licence expression")
    if stripped.upper() in _SPECIAL:
        return NormalizedLicense(expression=stripped.upper(), license_refs=())
    out: list[str] = []
    refs: set[str] = set()
    previous = ""
    for token in _TOKEN.findall(stripped):
        spelled = _spell_token(token, previous, fail)
        out.append(spelled.text)
        if spelled.ref is not None:
            refs.add(spelled.ref)
        upper = token.upper()
        previous = upper if upper in _OPERATORS else token
    rewritten = " ".join(out).replace("( ", "(").replace(" )", ")")
    _check_structure(rewritten, fail)
    return NormalizedLicense(expression=rewritten, license_refs=tuple(sorted(refs)))


@dataclass(frozen=True, kw_only=True)
class _Spelled:
    """One token of an expression as written out, and the ``LicenseRef-`` it uses (if any)."""

    text: str
    ref: str | None = None


def _spell_token(token: str, previous: str, fail: Callable[[str], InputError]) -> _Spelled:
    """A parenthesis, an operator (upper-cased), a LicenseRef, an exception after ``WITH``, or a
    licence id (SPDX 2.3 Annex D).

    Raises:
        InputError (from ``fail``): the token is free text, a misplaced exception, or not listed.
    """
    keys, exceptions = _known()
    upper = token.upper()
    if token in ("(", ")"):
        return _Spelled(text=token)
    if upper in _OPERATORS:
        return _Spelled(text=upper)
    if _REF.match(token):
        return _Spelled(
            text=token, ref=token.split(":", 1)[-1] if token.startswith("DocumentRef-") else token
        )
    if not _ID.match(token):
        raise fail(f"{token!r} is not a licence id (free text is not an SPDX expression); {HINT}")
    if previous == "WITH":
        canonical = keys.get(token.lower())
        if canonical is None or canonical not in exceptions:
            raise fail(f"{token!r} after WITH is not an SPDX licence exception id")
        return _Spelled(text=canonical)
    if token.endswith("+") and token.lower() in keys:
        return _Spelled(text=keys[token.lower()])  # a deprecated "or later" alias such as GPL-2.0+
    return _spell_id(token, keys, exceptions, fail)


def _spell_id(
    token: str, keys: Mapping[str, str], exceptions: frozenset[str], fail: Callable[[str], InputError]
) -> _Spelled:
    """A licence id (optionally ``+``): its canonical list spelling, else ``LicenseRef-<id>`` (C29).

    Raises:
        InputError (from ``fail``): an exception id outside ``WITH``, or an unlisted ``id+`` /
            NONE / NOASSERTION inside an expression.
    """
    plus = token.endswith("+")
    bare = token[:-1] if plus else token
    canonical = keys.get(bare.lower())
    if canonical is not None and canonical in exceptions:
        raise fail(f"{token!r} is a licence exception; it may only follow WITH")
    if canonical is not None:
        return _Spelled(text=canonical + ("+" if plus else ""))
    if plus or bare.upper() in _SPECIAL:
        raise fail(f"{token!r} is not on the SPDX licence list; {HINT}")
    ref = f"LicenseRef-{bare}"
    return _Spelled(text=ref, ref=ref)


def _check_structure(expression: str, fail: Callable[[str], InputError]) -> None:
    from license_expression import ExpressionError
    from spdx_tools.common.spdx_licensing import spdx_licensing

    try:
        parsed = spdx_licensing.parse(expression, validate=False, simple=False)
    except ExpressionError as exc:
        raise fail(f"not a well-formed licence expression: {exc}") from None
    except (IndexError, TypeError, ValueError, AttributeError):
        # license-expression 30.4 crashes on some malformed input (``( )``, ``()``) instead of
        # raising its ExpressionError; a parser crash on our input is still "not well-formed".
        raise fail("not a well-formed licence expression") from None
    if parsed is None:
        raise fail("empty licence expression")


def combine_licenses(expressions: Iterable[str]) -> str | None:
    """The conjunction of normalized licence ``expressions``: every licence that applies, ANDed.

    Top-level ``AND`` terms are split and de-duplicated, terms are sorted, and a term holding ``OR``
    is parenthesized (``AND`` binds tighter than ``OR``; SPDX 2.3 Annex D). ``NOASSERTION``/``NONE``
    terms are dropped. Example: ``["Apache-2.0 AND MIT", "MIT", "BSD-2-Clause OR MIT"]`` →
    ``"(BSD-2-Clause OR MIT) AND Apache-2.0 AND MIT"``. ``None`` when nothing is left.
    """
    terms: set[str] = set()
    for expression in expressions:
        text = expression.strip()
        if "(" in text or " OR " in text:
            terms.add(text if text.startswith("(") and text.endswith(")") else f"({text})")
        else:
            terms.update(part.strip() for part in text.split(" AND "))
    terms -= {"NOASSERTION", "NONE", ""}
    return " AND ".join(sorted(terms)) if terms else None


def parse_license(expression: str) -> object:
    """spdx-tools' ``LicenseExpression`` for an already normalized expression string."""
    from spdx_tools.common.spdx_licensing import spdx_licensing

    return spdx_licensing.parse(expression)


def license_text_path(licenses_dir: Path, license_ref: str) -> Path:
    """Where the curated text of ``license_ref`` lives: ``<licenses_dir>/<id>.txt``.

    ``<id>`` is the part after ``LicenseRef-`` (docs/staged-inputs.md); a file named with the full
    ``LicenseRef-<id>.txt`` is accepted too.
    """
    bare = license_ref.removeprefix("LicenseRef-")
    primary = licenses_dir / f"{bare}.txt"
    if primary.is_file():
        return primary
    alternative = licenses_dir / f"{license_ref}.txt"
    return alternative if alternative.is_file() else primary


def load_license_texts(
    license_refs: Iterable[str], *, licenses_dir: Path, shipped: Mapping[str, Path] | None = None
) -> dict[str, str]:
    """Read the text of each ``LicenseRef-…`` id (UTF-8, LF kept) into id → text.

    ``shipped`` maps the zip paths of the package's files to where their bytes are read: when the
    package ships ``licenses/<id>.txt`` (or ``licenses/LicenseRef-<id>.txt``), *that* text is the
    one extracted — the licence the user actually receives (issue 8 item 7: the NVIDIA and
    Microsoft texts come from their wheels). Only an id the package ships no text for falls back
    to the curated ``<licenses_dir>/<id>.txt``, with a warning (those are reviewed references).

    Raises:
        InputError: one problem per id whose text file is missing, empty or not UTF-8.
    """
    texts: dict[str, str] = {}
    problems: list[Problem] = []
    for ref in sorted(set(license_refs)):
        path = _shipped_text(shipped or {}, ref)
        if path is None:
            path = license_text_path(licenses_dir, ref)
            if shipped is not None:
                log.warning("%s: the package ships no licence text; using the curated %s", ref, path)
        try:
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            problems.append(Problem(file=str(path), message=f"no licence text for {ref}; {HINT}"))
            continue
        except UnicodeDecodeError as exc:
            problems.append(Problem(file=str(path), message=f"licence text is not UTF-8: {exc}"))
            continue
        if not text.strip():
            problems.append(Problem(file=str(path), message=f"licence text for {ref} is empty"))
            continue
        texts[ref] = text
    if problems:
        raise InputError(problems=problems)
    return texts


def _shipped_text(shipped: Mapping[str, Path], license_ref: str) -> Path | None:
    bare = license_ref.removeprefix("LicenseRef-")
    for name in (f"licenses/{bare}.txt", f"licenses/{license_ref}.txt"):
        if name in shipped:
            return shipped[name]
    return None


def require_license_texts(
    license_refs: Iterable[str], texts: Mapping[str, str], *, where: str
) -> dict[str, str]:
    """The texts of ``license_refs`` from ``texts``, sorted by id.

    Raises:
        InputError: one problem per id without (non-empty) text.
    """
    picked: dict[str, str] = {}
    problems: list[Problem] = []
    for ref in sorted(set(license_refs)):
        text = texts.get(ref)
        if text is None or not text.strip():
            problems.append(Problem(file=where, field=ref, message=f"no extracted licence text; {HINT}"))
        else:
            picked[ref] = text
    if problems:
        raise InputError(problems=problems)
    return picked


def license_refs_of(expressions: Iterable[str | None], *, where: str = "license") -> tuple[str, ...]:
    """Every ``LicenseRef-…`` id the (normalized) ``expressions`` use, sorted; ``None`` is skipped.

    Feed the result to :func:`load_license_texts` to build ``extracted_licenses``.

    Raises:
        InputError: an expression is free text or malformed (all problems listed).
    """
    refs: set[str] = set()
    problems: list[Problem] = []
    for text in expressions:
        if text is None:
            continue
        try:
            refs.update(normalize_license_expression(text, where=where).license_refs)
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems=problems)
    return tuple(sorted(refs))
