"""The one definition of a SHA-256 digest, as the project writes it (foundation; no package imports).

Two spellings, both lowercase only (DESIGN.md §5: every digest the tool writes is lowercase hex):

* a bare hex digest, 64 characters ``[0-9a-f]`` — ``sha256`` fields, ``SHA256SUMS`` lines, cache keys;
* an OCI digest, ``sha256:<64 hex>`` — descriptors, image references, registry digests (the only
  algorithm accepted, OCI image-spec "Digests").

The patterns are unanchored: use them with ``fullmatch`` (as the field readers' ``pattern=`` do), or
compose them (``IMAGE_REF``). The predicates take any object, so a parsed JSON value is checked
without a type test first. ``Digest`` is the typed form of the OCI spelling.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TypeGuard

SHA256_HEX = re.compile(r"[0-9a-f]{64}")
"""64 lowercase hex characters (use with ``fullmatch``)."""

SHA256_HEX_ANY_CASE = re.compile(r"[0-9A-Fa-f]{64}")
"""64 hex characters of either case: recognises a digest-shaped value that a stricter check then
rejects as not lowercase (``SHA256SUMS`` as other tools write it, receipts' ``*_sha256`` fields)."""

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
"""``sha256:`` and 64 lowercase hex characters (use with ``fullmatch``)."""

ALGORITHM = "sha256"


def is_sha256_hex(value: object) -> TypeGuard[str]:
    """True for a string of exactly 64 lowercase hex characters (no prefix, no trailing newline)."""
    return isinstance(value, str) and SHA256_HEX.fullmatch(value) is not None


def is_digest(value: object) -> TypeGuard[str]:
    """True for a string ``sha256:<64 lowercase hex>`` exactly (no trailing newline)."""
    return isinstance(value, str) and DIGEST.fullmatch(value) is not None


@dataclass(frozen=True)
class Digest:
    """A SHA-256 digest: ``hex`` is its 64 lowercase hex characters; ``str()`` is ``sha256:<hex>``."""

    hex: str

    def __post_init__(self) -> None:
        if not is_sha256_hex(self.hex):
            raise ValueError(f"not 64 lowercase hex characters: {self.hex!r}")

    @classmethod
    def parse(cls, text: str) -> Digest:
        """``"sha256:<64 lowercase hex>"`` -> Digest; anything else is ValueError naming the text."""
        if not is_digest(text):
            raise ValueError(f"not a sha256:<64 lowercase hex> digest: {text!r}")
        return cls(text.removeprefix(ALGORITHM + ":"))

    @classmethod
    def of_bytes(cls, data: bytes) -> Digest:
        """The digest of ``data``."""
        return cls(hashlib.sha256(data).hexdigest())

    def __str__(self) -> str:
        return f"{ALGORITHM}:{self.hex}"
