"""Typed field access on a parsed JSON document that collects problems (foundation leaf).

Used where an input's JSON (``build-info.json``, ``dependencies.lock.json``, the samples' pins)
is checked field by field, so that every problem is reported at once with its file and field
path instead of stopping at the first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ninfer_release.errors import Problem


class FieldReader:
    """Read fields of one JSON document (``file``), appending a :class:`Problem` per bad field.

    Each accessor returns a neutral value (``""``, ``0``, ``False``, ``[]``) for a bad field so the
    caller can go on and collect the rest.
    """

    def __init__(self, file: str, problems: list[Problem]) -> None:
        self.file = file
        self.problems = problems

    def bad(self, field: str, message: str) -> None:
        """Record one problem at ``field``."""
        self.problems.append(Problem(file=self.file, field=field, message=message))

    def text(
        self, obj: Mapping[str, Any], key: str, where: str, pattern: re.Pattern[str] | None = None
    ) -> str:
        """A non-empty string at ``where.key``, optionally matching ``pattern`` in full."""
        field = f"{where}.{key}" if where else key
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            self.bad(field, f"missing or not a non-empty string (got {value!r})")
            return ""
        if pattern is not None and not pattern.fullmatch(value):
            self.bad(field, f"{value!r} does not match {pattern.pattern}")
        return value

    def integer(self, obj: Mapping[str, Any], key: str, where: str) -> int:
        """A non-negative integer (not a bool) at ``where.key``."""
        value = obj.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            self.bad(f"{where}.{key}", f"missing or not a non-negative integer (got {value!r})")
            return 0
        return value

    def flag(self, obj: Mapping[str, Any], key: str, where: str) -> bool:
        """A boolean at ``where.key``."""
        value = obj.get(key)
        if not isinstance(value, bool):
            self.bad(f"{where}.{key}", f"missing or not true/false (got {value!r})")
            return False
        return value

    def objects(
        self, obj: Mapping[str, Any], key: str, where: str = ""
    ) -> list[tuple[str, Mapping[str, Any]]]:
        """The objects of the list at ``where.key``, each with its field path (``key[i]``)."""
        field = f"{where}.{key}" if where else key
        value = obj.get(key)
        if not isinstance(value, list):
            self.bad(field, f"missing or not a list (got {type(value).__name__})")
            return []
        out: list[tuple[str, Mapping[str, Any]]] = []
        for i, item in enumerate(value):
            if isinstance(item, dict):
                out.append((f"{field}[{i}]", item))
            else:
                self.bad(f"{field}[{i}]", "not an object")
        return out

    def items(self, obj: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
        """The objects of the list at top-level ``key`` (paths as :meth:`objects`)."""
        return [item for _, item in self.objects(obj, key)]

    def known_keys(self, obj: Mapping[str, Any], where: str, allowed: Iterable[str]) -> None:
        """Record every key of ``obj`` that is not in ``allowed``."""
        allowed = set(allowed)
        for key in obj:
            if key not in allowed:
                self.bad(
                    f"{where}.{key}" if where else key, f"unknown field; expected one of {sorted(allowed)}"
                )
