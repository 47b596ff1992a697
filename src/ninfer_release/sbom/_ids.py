"""Deterministic identifiers: SPDXIDs (C27), URI-safe name parts (C28), content-derived UUIDs (C33)."""

from __future__ import annotations

import hashlib
import re
import uuid
from urllib.parse import urlsplit

from ninfer_release.errors import DefinitionError, Problem

_NOT_ID = re.compile(r"[^A-Za-z0-9.-]+")
_NOT_URI_PART = re.compile(r"[^A-Za-z0-9._~-]+")
SPDX_ID_RE = re.compile(r"^SPDXRef-[A-Za-z0-9.-]+$")


def short_hash(text: str, length: int = 8) -> str:
    """First ``length`` hex digits of the SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def sanitize_id_part(text: str) -> str:
    """``text`` with every run of characters outside ``[A-Za-z0-9.-]`` replaced by one ``-``."""
    return _NOT_ID.sub("-", text).strip("-") or "x"


def spdx_file_id(path: str) -> str:
    """The SPDXID of the file at zip path ``path``: ``SPDXRef-File-<sanitized>-<hash8>``.

    The sanitized name keeps it readable; the short SHA-256 of the *original* path keeps
    ``bin/Qt6Core_d.dll`` and ``bin/Qt6Core-d.dll`` apart (C27; SPDX 2.3 §8.2 idstring).
    """
    return f"SPDXRef-File-{sanitize_id_part(path)}-{short_hash(path)}"


def spdx_package_id(name: str) -> str:
    """The SPDXID of the package ``name``: ``SPDXRef-Package-<sanitized>`` (C27)."""
    return f"SPDXRef-Package-{sanitize_id_part(name)}"


def uri_part(text: str) -> str:
    """``text`` made safe as one URI path segment: runs outside RFC 3986 unreserved → ``-`` (C28).

    ``1.0#3`` → ``1.0-3``.
    """
    return _NOT_URI_PART.sub("-", text).strip("-") or "x"


def check_base_uri(base: str, *, where: str, field: str) -> str:
    """``base`` without a trailing ``/`` after checking it is an absolute http(s) URI without fragment.

    Catches typos such as ``https//example.invalid/spdx`` (C28).

    Raises:
        DefinitionError: not ``http``/``https`` with a host, or has a query or fragment.
    """
    parts = urlsplit(base)
    problem = None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        problem = "is not an absolute http(s) URI with a host (typo such as 'https//'?)"
    elif parts.fragment or "#" in base:
        problem = "must not contain a fragment ('#')"
    elif parts.query:
        problem = "must not contain a query ('?')"
    elif any(ch.isspace() for ch in base):
        problem = "must not contain whitespace"
    if problem:
        raise DefinitionError(problems=[Problem(file=where, field=field, message=f"{base!r} {problem}")])
    return base.rstrip("/")


def uuid5_url(identity: str) -> uuid.UUID:
    """RFC 4122 UUIDv5 of ``identity`` in the URL namespace (reproducible serials, C33)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, identity)
