"""Signed attestations of a set: DSSE envelopes in Sigstore bundles, with a local key pair (offline).

What is signed (issue 14): the set's provenance statement (``<stem>.provenance.json``, payload type
``application/vnd.in-toto+json``) and its ``SHA256SUMS`` (payload type :data:`SUMS_PAYLOAD_TYPE`),
each as the exact bytes of the file. ``SHA256SUMS`` pins every other entry, so its signature covers
the whole set; the provenance's says who built it from what.

Format: one Sigstore bundle v0.3 per signed file, ``<file name>.sigstore.json``
(``mediaType`` :data:`BUNDLE_MEDIA_TYPE`, ``verificationMaterial.publicKey.hint`` = key id,
``dsseEnvelope`` = payload, payload type and one signature). Sigstore's bundle is chosen over
cosign's bare key-pair signature files because it is one self-describing JSON document per
signature that carries the DSSE envelope itself (payload type included); an outside DSSE verifier
reads that envelope (securesystemslib, docs/publishing.md; sigstore-python refuses key-pair
bundles); with a key pair and no transparency log it needs no network (``tlogEntries`` is empty —
nothing is uploaded anywhere). Keys: Ed25519 or ECDSA P-256 (SHA-256), PEM (PKCS#8 private key,
SubjectPublicKeyInfo public key), through ``cryptography``. The key id is the SHA-256 (hex) of the
public key's DER SubjectPublicKeyInfo.

DSSE: the signature is over ``PAE(payloadType, payload)`` =
``"DSSEv1" SP LEN(type) SP type SP LEN(payload) SP payload`` (DSSE protocol v1.0).

Signatures never enter the 11-file set: they are stored beside it (``<set>.sigstore/`` for a local
set, ``<tag>.sigstore`` in a store; see docs/publishing.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import strictjson
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.releases._contract import SUMS_NAME, AssetNames

BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
#: Payload type of a signed ``SHA256SUMS`` (GNU ``sha256sum`` text, LF).
SUMS_PAYLOAD_TYPE = "application/vnd.omp-ninfer.sha256sums+text"
BUNDLE_SUFFIX = ".sigstore.json"
#: Suffix of the directory (beside a set or a files:// tag) or OCI tag holding a set's signatures.
SIGNATURES_SUFFIX = ".sigstore"
#: The environment variable holding the passphrase of an encrypted private key (never a flag).
PASSPHRASE_ENV = "NINFER_SIGNING_KEY_PASSPHRASE"  # noqa: S105 - the variable's name, not a secret
#: Upper bound on a key file or a bundle, in bytes (a bundle of a 64 KiB provenance is ~90 KiB).
MAX_KEY_BYTES = 64 << 10
MAX_BUNDLE_BYTES = 4 << 20


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding of ``payload`` (the bytes that are signed)."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def _read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path`` (a key, a set file or a bundle), at most ``limit``.

    Through :func:`ninfer_release.strictjson.read_regular`: opened non-blocking and type-checked
    before any read, so a FIFO or a device at ``--key`` is refused instead of waited on.

    Raises:
        InputError: missing, not a regular file, larger than ``limit`` or unreadable (exit 4).
    """
    return strictjson.read_regular(path, limit=limit, missing=f"{what} not found")


def _key_id(public_key: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def _check_algorithm(key: Any, where: str) -> str:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if isinstance(key, ed25519.Ed25519PrivateKey | ed25519.Ed25519PublicKey):
        return "ed25519"
    if isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey) and isinstance(
        key.curve, ec.SECP256R1
    ):
        return "ecdsa-p256-sha256"
    raise InputError(
        problems=[Problem(file=where, message="not an Ed25519 or ECDSA P-256 key (the algorithms allowed)")]
    )


@dataclass(frozen=True, kw_only=True)
class SigningKey:
    """A loaded private key: ``algorithm`` (``ed25519`` / ``ecdsa-p256-sha256``) and its key id."""

    key: Any
    key_id: str
    algorithm: str

    def sign(self, message: bytes) -> bytes:
        """The raw signature of ``message`` (Ed25519: 64 bytes; ECDSA: DER over SHA-256)."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        if self.algorithm == "ed25519":
            return bytes(self.key.sign(message))
        return bytes(self.key.sign(message, ec.ECDSA(hashes.SHA256())))


@dataclass(frozen=True, kw_only=True)
class VerifyingKey:
    """A loaded public key: ``algorithm`` and key id (SHA-256 of its DER SubjectPublicKeyInfo)."""

    key: Any
    key_id: str
    algorithm: str

    def verifies(self, signature: bytes, message: bytes) -> bool:
        """Whether ``signature`` is this key's signature of ``message``."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        try:
            if self.algorithm == "ed25519":
                self.key.verify(signature, message)
            else:
                self.key.verify(signature, message, ec.ECDSA(hashes.SHA256()))
        except (InvalidSignature, ValueError):
            return False
        return True


def load_signing_key(path: Path, env: Mapping[str, str] | None = None) -> SigningKey:
    """The PEM private key at ``path`` (PKCS#8 or traditional; encrypted with the passphrase in
    ``$NINFER_SIGNING_KEY_PASSPHRASE``).

    Raises:
        InputError: missing, unreadable, over 64 KiB, not a PEM private key, wrong passphrase, or
            not Ed25519 / ECDSA P-256 (exit 4).
    """
    from cryptography.hazmat.primitives import serialization

    data = _read_bounded(path, MAX_KEY_BYTES, "private key")
    passphrase = (os.environ if env is None else env).get(PASSPHRASE_ENV)
    try:
        key = serialization.load_pem_private_key(
            data, password=passphrase.encode("utf-8") if passphrase else None
        )
    except (ValueError, TypeError) as exc:
        message = f"not a PEM private key (or the passphrase in ${PASSPHRASE_ENV} is wrong): {exc}"
        raise InputError(problems=[Problem(file=str(path), message=message)]) from None
    algorithm = _check_algorithm(key, str(path))
    return SigningKey(key=key, key_id=_key_id(key.public_key()), algorithm=algorithm)


def load_verifying_key(path: Path) -> VerifyingKey:
    """The PEM public key (SubjectPublicKeyInfo) at ``path``.

    Raises:
        InputError: missing, unreadable, not a PEM public key, or not Ed25519 / ECDSA P-256 (exit 4).
    """
    from cryptography.hazmat.primitives import serialization

    data = _read_bounded(path, MAX_KEY_BYTES, "public key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise InputError(problems=[Problem(file=str(path), message=f"not a PEM public key: {exc}")]) from None
    algorithm = _check_algorithm(key, str(path))
    return VerifyingKey(key=key, key_id=_key_id(key), algorithm=algorithm)


@dataclass(frozen=True, kw_only=True)
class Bundle:
    """One Sigstore bundle v0.3 holding a DSSE envelope with one signature (key-pair material)."""

    payload_type: str
    payload: bytes
    key_id: str
    signature: bytes

    def to_bytes(self) -> bytes:
        """The bundle as JSON bytes (sorted keys, LF; :func:`ninfer_release.jsonbytes.dumps_stable`)."""
        return dumps_stable(
            {
                "mediaType": BUNDLE_MEDIA_TYPE,
                "verificationMaterial": {"publicKey": {"hint": self.key_id}, "tlogEntries": []},
                "dsseEnvelope": {
                    "payload": base64.b64encode(self.payload).decode("ascii"),
                    "payloadType": self.payload_type,
                    "signatures": [
                        {"keyid": self.key_id, "sig": base64.b64encode(self.signature).decode("ascii")}
                    ],
                },
            }
        )

    @classmethod
    def parse(cls, data: bytes, *, where: str) -> Bundle:
        """Strictly read a bundle written by :meth:`to_bytes` (or any v0.3 bundle with one DSSE
        signature and a public-key hint).

        Raises:
            IntegrityError: not JSON, another media type, not a DSSE bundle, bad base64, or not
                exactly one signature (exit 5, naming ``where`` and the field).
        """

        def bad(field: str, message: str) -> IntegrityError:
            return IntegrityError(problems=[Problem(file=where, field=field, message=message)])

        # The one strict reader (duplicate keys, depth, number forms): a bundle of 100,000
        # nested "[" is refused, never a RecursionError.
        doc = strictjson.parse(data, source=where, error=IntegrityError)
        if not isinstance(doc, dict) or doc.get("mediaType") != BUNDLE_MEDIA_TYPE:
            raise bad("mediaType", f"not a Sigstore bundle ({BUNDLE_MEDIA_TYPE})")
        envelope = doc.get("dsseEnvelope")
        if not isinstance(envelope, dict):
            raise bad("dsseEnvelope", "missing: only DSSE bundles are signed here")
        signatures = envelope.get("signatures")
        if not isinstance(signatures, list) or len(signatures) != 1 or not isinstance(signatures[0], dict):
            raise bad("dsseEnvelope.signatures", "must hold exactly one signature")
        payload_type = envelope.get("payloadType")
        if not isinstance(payload_type, str):
            raise bad("dsseEnvelope.payloadType", "missing")
        try:
            payload = base64.b64decode(str(envelope.get("payload", "")), validate=True)
            signature = base64.b64decode(str(signatures[0].get("sig", "")), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise bad("dsseEnvelope", f"bad base64: {exc}") from None
        hint = ((doc.get("verificationMaterial") or {}).get("publicKey") or {}).get("hint")
        key_id = signatures[0].get("keyid") or hint
        return cls(payload_type=payload_type, payload=payload, key_id=str(key_id or ""), signature=signature)


def signed_files(names: AssetNames) -> tuple[tuple[str, str], ...]:
    """``(file name, payload type)`` of what a set's signatures cover: provenance and SHA256SUMS."""
    return ((names.provenance, INTOTO_PAYLOAD_TYPE), (SUMS_NAME, SUMS_PAYLOAD_TYPE))


def bundle_name(file_name: str) -> str:
    """``<file name>.sigstore.json``: where the signature of ``file_name`` is stored."""
    return file_name + BUNDLE_SUFFIX


def sign_set(set_dir: Path, names: AssetNames, key: SigningKey) -> dict[str, bytes]:
    """Bundle name → bundle bytes signing the set's provenance and ``SHA256SUMS`` with ``key``.

    Raises:
        InputError: a signed file is missing or unreadable (exit 4).
    """
    out: dict[str, bytes] = {}
    for name, payload_type in signed_files(names):
        payload = _read_bounded(set_dir / name, MAX_BUNDLE_BYTES, "set file")
        bundle = Bundle(
            payload_type=payload_type,
            payload=payload,
            key_id=key.key_id,
            signature=key.sign(pae(payload_type, payload)),
        )
        out[bundle_name(name)] = bundle.to_bytes()
    return out


def check_signatures(
    set_dir: Path,
    names: AssetNames,
    bundles: Mapping[str, bytes],
    key: VerifyingKey,
    *,
    require: bool,
) -> tuple[list[str], list[str]]:
    """(failures, checks) of the set's signatures, each failure one line naming the bundles.

    Each signed file's bundle (from ``bundles``: bundle name → bytes) must parse, carry the payload
    type of that file, be a valid signature by ``key`` over its DSSE PAE, and sign exactly the
    file's bytes in ``set_dir``. A missing bundle is a failure only with ``require``
    (``--require-signature``); a bundle present but wrong always is. Bundles failing for the same
    reason share one line (a wrong key is one finding, not one per file).
    """
    by_reason: dict[str, list[str]] = {}
    checks: list[str] = []
    for name, payload_type in signed_files(names):
        label = bundle_name(name)
        reason = _signature_problem(set_dir, name, payload_type, bundles.get(label), key, require)
        if reason is None:
            if label in bundles:
                checks.append(f"{label}: {key.algorithm} signature by {key.key_id[:16]} over {name}")
            continue
        by_reason.setdefault(reason, []).append(label)
    failures = [f"{', '.join(labels)}: {reason}" for reason, labels in by_reason.items()]
    return failures, checks


def _signature_problem(
    set_dir: Path, name: str, payload_type: str, data: bytes | None, key: VerifyingKey, require: bool
) -> str | None:
    """Why the bundle ``data`` of the set file ``name`` is not a good signature, or ``None``."""
    if data is None:
        return "no signature (--require-signature)" if require else None
    try:
        bundle = Bundle.parse(data, where=bundle_name(name))
    except IntegrityError as exc:
        return "; ".join(f"{p.field}: {p.message}" if p.field else p.message for p in exc.problems)
    if bundle.payload_type != payload_type:
        return f"payload type {bundle.payload_type!r}, not {payload_type!r}"
    if not key.verifies(bundle.signature, pae(bundle.payload_type, bundle.payload)):
        return (
            f"signature does not verify with key {key.key_id[:16]} (signed by another key, or the "
            "signed statement was changed)"
        )
    try:
        actual = (set_dir / name).read_bytes()
    except OSError:
        return f"{name} is missing from the set"
    if actual != bundle.payload:
        signed, found = (hashlib.sha256(b).hexdigest()[:16] for b in (bundle.payload, actual))
        return f"signs other bytes than {name} (signed sha256 {signed}, file sha256 {found})"
    return None


def read_bundles(directory: Path, names: AssetNames) -> dict[str, bytes]:
    """The bundles of ``names`` found in ``directory`` (absent ones are left out).

    Raises:
        InputError: a bundle exists but cannot be read or is over the size bound (exit 4).
    """
    out: dict[str, bytes] = {}
    for name, _ in signed_files(names):
        path = directory / bundle_name(name)
        if path.is_file():
            out[bundle_name(name)] = _read_bounded(path, MAX_BUNDLE_BYTES, "Sigstore bundle")
    return out


def signatures_dir_for(set_dir: Path) -> Path:
    """Where a local set's signatures live by default: the sibling ``<set dir>.sigstore/``."""
    absolute = set_dir.absolute()
    return absolute.parent / (absolute.name + SIGNATURES_SUFFIX)


def write_bundles(directory: Path, bundles: Mapping[str, bytes]) -> list[Path]:
    """Write ``bundles`` into ``directory`` (created), each atomically; identical bytes are kept.

    A different bundle already there is never overwritten (a user's data is not lost).

    Raises:
        InputError: a bundle file already exists with other bytes (exit 4).
    """
    from ninfer_release.atomic import write_bytes

    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    problems: list[Problem] = []
    for name, data in sorted(bundles.items()):
        path = directory / name
        if path.exists():
            if path.is_file() and path.read_bytes() == data:
                written.append(path)
                continue
            problems.append(
                Problem(file=str(path), message="exists with other bytes; remove it to sign again")
            )
            continue
        write_bytes(path, data, overwrite=False)
        written.append(path)
    if problems:
        raise InputError(problems=problems)
    return written
