"""A small collector of typed reads over parsed YAML: every problem at once, file + field path.

Each ``get_*`` returns the typed value, or ``None`` after recording a problem; callers keep going
so one run reports everything (CONVENTIONS "Errors" 8). Unknown keys get a difflib close match.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from ninfer_release.errors import DefinitionError, NinferError, Problem

T = TypeVar("T")

_MISSING = object()

#: Keys that were removed on purpose; present anywhere → error, never an alias (reference: "K5").
OBSOLETE_KEYS: Mapping[str, str] = {
    "max_private_continuations": (
        "obsolete setting (--max-private-continuations was removed in v0.13.1); "
        "delete it, no alias exists — extra_device_state_slots counts extra slots"
    ),
    "host_state_budget_bytes": "obsolete: replaced by the one byte-exact shared_host_budget_bytes",
    "host_kv_budget_bytes": "obsolete: replaced by the one byte-exact shared_host_budget_bytes",
}

HEX40 = re.compile(r"^[0-9a-f]{40}$")
SHORT_HEX = re.compile(r"^[0-9a-f]{7,40}$")


def control_chars(text: str) -> list[str]:
    """The control/format characters in ``text`` as ``U+XXXX`` (C0, DEL, C1, bidi overrides...).

    Profile strings are single-line values that reach hashed config bytes; a CR would survive
    Jinja (case C43 note) and a bidi override would hide what a value says.
    """
    return sorted({f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")})


def suggest(key: str, allowed: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest allowed key, or empty."""
    match = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


class Checker:
    """Collects :class:`Problem` entries for one file."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def add(self, field: str, message: str) -> None:
        """Record one problem at ``field`` (dotted path; empty for the whole file)."""
        self.problems.append(Problem(file=self.file, field=field, message=message))

    def raise_if_any(self, error: type[NinferError] = DefinitionError) -> None:
        """Raise ``error`` carrying every recorded problem, if there is any."""
        if self.problems:
            raise error(problems=self.problems)

    # -- whole-tree checks ------------------------------------------------------------------

    def scan_strings(self, value: Any, where: str = "") -> None:
        """Flag control characters in every key and string value, and obsolete keys, anywhere."""
        if isinstance(value, dict):
            for k, v in value.items():
                path = f"{where}.{k}" if where else k
                bad = control_chars(k)
                if bad:
                    self.add(where, f"key {k!r} contains control character(s) {', '.join(bad)}")
                if k in OBSOLETE_KEYS:
                    self.add(path, OBSOLETE_KEYS[k])
                self.scan_strings(v, path)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.scan_strings(v, f"{where}[{i}]")
        elif isinstance(value, str):
            bad = control_chars(value)
            if bad:
                self.add(
                    where, f"contains control character(s) {', '.join(bad)} (CR, LF, TAB... not allowed)"
                )

    def document(self, data: Any) -> dict[str, Any]:
        """The top level of a loaded YAML document as a mapping, its strings already scanned.

        Raises:
            DefinitionError: the document is not a mapping (exit 3).
        """
        root = self.mapping(data, "")
        if root is None:
            self.raise_if_any()
            raise AssertionError("unreachable")  # pragma: no cover - mapping() recorded a problem
        self.scan_strings(root)
        return root

    # -- mappings ---------------------------------------------------------------------------

    def mapping(self, value: Any, field: str) -> dict[str, Any] | None:
        """``value`` as a mapping, or ``None`` after recording a problem."""
        if isinstance(value, dict):
            return value
        self.add(field, f"must be a mapping, got {_kind(value)}")
        return None

    def keys(
        self,
        data: Mapping[str, Any],
        field: str,
        *,
        required: Collection[str],
        optional: Collection[str] = (),
    ) -> None:
        """Record missing required keys and unknown keys (with a close match)."""
        allowed = set(required) | set(optional)
        for key in data:
            if key in allowed or key in OBSOLETE_KEYS:  # obsolete keys are reported by scan_strings
                continue
            self.add(_join(field, key), f"unknown key{suggest(key, allowed)}")
        for key in required:
            if key not in data:
                self.add(_join(field, key), "required key is missing")

    # -- scalars ----------------------------------------------------------------------------

    def _get(self, data: Mapping[str, Any], field: str, key: str, required: bool) -> Any:
        if key not in data:
            return _MISSING
        value = data[key]
        if value is None and not required:
            return _MISSING
        return value

    def get_str(
        self,
        data: Mapping[str, Any],
        field: str,
        key: str,
        *,
        required: bool = True,
        pattern: re.Pattern[str] | None = None,
        choices: Collection[str] | None = None,
        max_len: int = 1000,
        what: str = "",
    ) -> str | None:
        """A string value (no control chars; optional regex / choice set / length bound)."""
        path = _join(field, key)
        value = self._get(data, field, key, required)
        if value is _MISSING:
            return None
        if not isinstance(value, str):
            hint = " (quote it)" if isinstance(value, int | float) and not isinstance(value, bool) else ""
            self.add(path, f"must be a string, got {_kind(value)}{hint}")
            return None
        if control_chars(value):
            return None  # already reported by scan_strings
        if not value:
            self.add(path, "must not be empty")
            return None
        if len(value) > max_len:
            self.add(path, f"longer than {max_len} characters ({len(value)})")
            return None
        if choices is not None and value not in choices:
            self.add(path, f"{value!r} is not one of {', '.join(sorted(choices))}{suggest(value, choices)}")
            return None
        if pattern is not None and not pattern.fullmatch(value):
            self.add(path, f"{value!r} is not {what or 'valid'}")
            return None
        return value

    def get_int(
        self,
        data: Mapping[str, Any],
        field: str,
        key: str,
        *,
        required: bool = True,
        minimum: int | None = None,
        maximum: int | None = None,
        unit: str = "",
    ) -> int | None:
        """A whole number (never a bool, never a float such as ``2048.0``) within bounds."""
        path = _join(field, key)
        value = self._get(data, field, key, required)
        if value is _MISSING:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.add(path, f"must be a whole number{f' of {unit}' if unit else ''}, got {_kind(value)}")
            return None
        if minimum is not None and value < minimum:
            self.add(path, f"{value} is below the minimum {minimum}{f' {unit}' if unit else ''}")
            return None
        if maximum is not None and value > maximum:
            self.add(path, f"{value} is above the maximum {maximum}{f' {unit}' if unit else ''}")
            return None
        return value

    def get_bool(
        self, data: Mapping[str, Any], field: str, key: str, *, required: bool = True
    ) -> bool | None:
        """A ``true``/``false`` value."""
        value = self._get(data, field, key, required)
        if value is _MISSING:
            return None
        if not isinstance(value, bool):
            self.add(_join(field, key), f"must be true or false, got {_kind(value)}")
            return None
        return value

    def get_decimal(
        self, data: Mapping[str, Any], field: str, key: str, *, required: bool = True
    ) -> Decimal | None:
        """An exact decimal written as a quoted string (``"14787.734375"``); floats are refused."""
        path = _join(field, key)
        value = self._get(data, field, key, required)
        if value is _MISSING:
            return None
        if not isinstance(value, str):
            self.add(path, f'must be an exact decimal in quotes (e.g. "14787.734375"), got {_kind(value)}')
            return None
        if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", value):
            self.add(path, f"{value!r} is not a plain non-negative decimal number")
            return None
        try:
            return Decimal(value)
        except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
            self.add(path, f"{value!r} is not a decimal number")
            return None

    def get_list(
        self, data: Mapping[str, Any], field: str, key: str, *, required: bool = True
    ) -> list[Any] | None:
        """A list value."""
        value = self._get(data, field, key, required)
        if value is _MISSING:
            return None
        if not isinstance(value, list):
            self.add(_join(field, key), f"must be a list, got {_kind(value)}")
            return None
        return value

    def get_mapping(
        self, data: Mapping[str, Any], field: str, key: str, *, required: bool = True
    ) -> dict[str, Any] | None:
        """A nested mapping value."""
        value = self._get(data, field, key, required)
        if value is _MISSING:
            return None
        return self.mapping(value, _join(field, key))


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
