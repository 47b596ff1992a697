"""A frozen, slotted value class made by hand: equality, hash, repr and immutability from one key.

``StagedFile`` and ``PlanEntry`` are slotted classes (one per staged file and plan entry: ~190 B
each instead of a dataclass's ~620 B with its ``__dict__``, issue 13 at 100k files) whose fields
are partly derived; :class:`FrozenKeyed` gives them what ``@dataclass(frozen=True)`` gave.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class FrozenKeyed:
    """Equal, hashed and shown by ``_key()`` (the values of :attr:`_FIELDS`, in order); assignment
    and deletion raise ``dataclasses.FrozenInstanceError`` (set fields with ``object.__setattr__``
    in ``__init__``)."""

    __slots__ = ()
    #: The field names ``_key()`` returns the values of, for the repr.
    _FIELDS: tuple[str, ...] = ()

    def _key(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._key() == other._key()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={v!r}" for n, v in zip(self._FIELDS, self._key(), strict=True))
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
