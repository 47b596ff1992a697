"""The file, config-hash and rollback blocks a release manifest and a set's component manifest share.

A leaf of the ``manifests`` stage (only :mod:`ninfer_release.jsonrecord` below it):
``releases/_records.py`` (the records ``verify`` reads) imports these three without loading the
release-manifest records of :mod:`ninfer_release.manifests._records`, which re-exports them
(issue 13: ``verify``'s start-up cost). Each is a frozen :class:`~ninfer_release.jsonrecord.JsonRecord`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ninfer_release.jsonrecord import JsonRecord


@dataclass(frozen=True, kw_only=True)
class FileRef(JsonRecord):
    """A published file: its name, public URL, size in bytes and SHA-256 (lowercase hex)."""

    RECORD_KIND = "a file reference"

    name: str
    url: str
    size: int
    sha256: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``to_json``)."""
        return self.to_json()


@dataclass(frozen=True, kw_only=True)
class ConfigHash(JsonRecord):
    """``config``: which config hash a lane binds — ``bytes`` (native) or ``semantic`` (image)."""

    RECORD_KIND = "a config hash"

    hash_kind: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class Rollback(JsonRecord):
    """``rollback``: the lane's rollback state; ``directions`` is 0 for ``not_applicable``."""

    RECORD_KIND = "a rollback block"

    state: str | None
    directions: int | None

    @classmethod
    def of(cls, state: str | None) -> Rollback:
        """The block of a lane in rollback ``state`` (``directions`` 0 when not applicable)."""
        return cls(state=state, directions=0 if state == "not_applicable" else None)
