"""Streaming SHA-256 / SHA-1 of files and bytes (foundation leaf).

Files are read in 1 MiB chunks so memory stays flat whatever the file size.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ninfer_release.progress import SILENT, Progress

CHUNK = 1 << 20  # 1 MiB


@dataclass(frozen=True, kw_only=True)
class Digests:
    """Size in bytes and lowercase hex digests of one byte stream."""

    size: int
    sha256: str
    sha1: str


def sha256_bytes(data: bytes) -> str:
    """Lowercase hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, *, progress: Progress = SILENT) -> str:
    """Lowercase hex SHA-256 of the file at ``path``, streamed.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            progress.advance(len(chunk))
    return h.hexdigest()


def digests_of_bytes(data: bytes) -> Digests:
    """Size, SHA-256 and SHA-1 of an in-memory byte string."""
    return Digests(
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        sha1=hashlib.sha1(data, usedforsecurity=False).hexdigest(),
    )


def digests_of_file(path: Path, *, progress: Progress = SILENT) -> Digests:
    """Size, SHA-256 and SHA-1 of a file, in one streamed read."""
    h256 = hashlib.sha256()
    h1 = hashlib.sha1(usedforsecurity=False)
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h256.update(chunk)
            h1.update(chunk)
            size += len(chunk)
            progress.advance(len(chunk))
    return Digests(size=size, sha256=h256.hexdigest(), sha1=h1.hexdigest())
