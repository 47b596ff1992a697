"""Bearer keys: generation and the minimum length rule (reference: "at least 32 bytes",
"documented key generation produces 64 characters").

A key is 32 bytes of OS randomness written as 64 lowercase hex characters. The key file holds
exactly those 64 ASCII bytes (no newline), mode 0600, and is never overwritten.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release.atomic import write_bytes
from ninfer_release.errors import DefinitionError, InputError, Problem
from ninfer_release.winpaths import SERVICE_ACCOUNT_MARK

#: Smallest accepted bearer key, in bytes (reference).
MIN_KEY_BYTES = 32
#: Random bytes behind a generated key; hex doubles it to 64 characters (reference).
KEY_RANDOM_BYTES = 32
#: The characters of a generated key: lowercase hex (what ``secrets.token_hex`` writes).
KEY_ALPHABET = "0123456789abcdef"


@dataclass(frozen=True, kw_only=True)
class AclGrant:
    """One access-control entry: a well-known ``sid`` with its ``name``, or the engine's account
    (``winpaths.SERVICE_ACCOUNT_MARK``, which the route block names: its service's virtual account).

    ``rights`` is ``full``, ``modify`` or ``read`` (icacls ``F``, ``M``, ``R``).
    """

    rights: str
    sid: str | None = None
    name: str | None = None

    def as_dict(self) -> dict[str, Any]:
        if self.sid is None:
            return {"name": SERVICE_ACCOUNT_MARK, "rights": self.rights}
        return {"sid": self.sid, "name": self.name, "rights": self.rights}


SYSTEM = AclGrant(sid="S-1-5-18", name="NT AUTHORITY\\SYSTEM", rights="full")
ADMINISTRATORS = AclGrant(sid="S-1-5-32-544", name="BUILTIN\\Administrators", rights="full")


@dataclass(frozen=True, kw_only=True)
class KeyFileSpec:
    """What a bearer key file holds and who may read it: data an installer acts on (ours).

    Exactly ``chars`` bytes (``random_bytes`` of OS randomness as lowercase hex), ASCII, no BOM,
    no newline, never overwritten; the ACL has inheritance disabled and grants SYSTEM and
    Administrators full control and the engine's account read — no other principal (so not
    ``BUILTIN\\Users``). Rationale: docs/install-layout.md ("Bearer key").
    """

    min_bytes: int = MIN_KEY_BYTES
    random_bytes: int = KEY_RANDOM_BYTES
    alphabet: str = KEY_ALPHABET
    grants: tuple[AclGrant, ...] = (SYSTEM, ADMINISTRATORS, AclGrant(rights="read"))

    @property
    def chars(self) -> int:
        """Length of the key file in bytes (= characters: hex doubles the random bytes)."""
        return 2 * self.random_bytes

    def as_dict(self) -> dict[str, Any]:
        """The route block's description of the key (no key in it)."""
        return {
            "min_bytes": self.min_bytes,
            "generated_chars": self.chars,
            "file_bytes": self.chars,
            "random_bytes": self.random_bytes,
            "randomness": "operating-system CSPRNG",
            "alphabet": self.alphabet,
            "encoding": "ascii",
            "bom": False,
            "trailing_newline": False,
            "overwrite_existing": False,
            "acl": {"inheritance": "disabled", "grants": [g.as_dict() for g in self.grants]},
            "stored_in_assets": False,
        }


#: The bearer key file every native route block describes and ``profile keygen`` writes.
KEY_FILE_SPEC = KeyFileSpec()


def generate_bearer_key() -> str:
    """A new bearer key: 64 lowercase hex characters from 32 bytes of OS randomness (``secrets``)."""
    return secrets.token_hex(KEY_RANDOM_BYTES)


def check_bearer_key(key: str, *, where: str = "bearer key") -> None:
    """Refuse a key shorter than 32 bytes (UTF-8) or holding whitespace/control characters.

    Raises:
        DefinitionError: the key is too short or not printable ASCII (reference: "at least 32 bytes").
    """
    problems: list[str] = []
    size = len(key.encode("utf-8"))
    if size < MIN_KEY_BYTES:
        problems.append(f"bearer key is {size} bytes; at least {MIN_KEY_BYTES} are required")
    if not all(0x21 <= ord(ch) <= 0x7E for ch in key):
        problems.append("bearer key must be printable ASCII without spaces or line breaks")
    if problems:
        raise DefinitionError(problems=[Problem(file=where, message=m) for m in problems])


def write_bearer_key(path: Path) -> str:
    """Generate a bearer key and write it to ``path`` (64 bytes, no newline, mode 0600).

    Returns the key so the caller may show it when asked (``profile keygen --print``); it is
    never logged.

    Raises:
        InputError: ``path`` already exists (never overwritten).
    """
    key = generate_bearer_key()
    check_bearer_key(key)
    write_bytes(path, key.encode("ascii"), mode=0o600, overwrite=False)
    return key


def read_bearer_key(path: Path) -> str:
    """Read and check a bearer key file (as written by :func:`write_bearer_key`; one final LF allowed).

    Raises:
        InputError: the file is missing or unreadable.
        DefinitionError: the key is shorter than 32 bytes or not printable ASCII (reference).
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(problems=[Problem(file=str(path), message=f"cannot read: {exc.strerror}")]) from None
    text = raw[:-1] if raw.endswith(b"\n") else raw
    try:
        key = text.decode("ascii")
    except UnicodeDecodeError:
        raise DefinitionError(problems=[Problem(file=str(path), message="bearer key is not ASCII")]) from None
    check_bearer_key(key, where=str(path))
    return key
