"""Signed attestations (issue 14): DSSE envelopes in Sigstore bundles over the provenance and SHA256SUMS.

Round trips: ``sign`` then ``verify --key`` on a local set; ``publish --sign`` then ``verify --key`` on
a dir:// store, a files:// store and a loopback registry (referrer tagged ``<tag>.sigstore``). Failures
are exit 5 with one line: a wrong key, a signature over other bytes, a missing signature under
``--require-signature``, and a flipped byte in a signed statement (naming it). Signatures never enter
the 11-file set.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from conftest import unavailable
from flow_support import Result, cli, registry_namespace, release_out, stem
from ninfer_release.releases._signing import (
    BUNDLE_MEDIA_TYPE,
    INTOTO_PAYLOAD_TYPE,
    Bundle,
    load_verifying_key,
    pae,
)

LANE = "rtx4090"
TAG = "v0.7.0-qwen38-4090-beta.2"
BUNDLES = (f"{stem(LANE)}.provenance.json.sigstore.json", "SHA256SUMS.sigstore.json")


def _write_keys(directory: Path, kind: str) -> tuple[Path, Path]:
    key: Any
    if kind == "ed25519":
        key = ed25519.Ed25519PrivateKey.generate()
    elif kind == "p256":
        key = ec.generate_private_key(ec.SECP256R1())
    else:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private, public = directory / f"{kind}.pem", directory / f"{kind}.pub"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, tuple[Path, Path]]:
    folder = tmp_path / "keys"
    folder.mkdir()
    return {kind: _write_keys(folder, kind) for kind in ("ed25519", "p256", "rsa")}


@pytest.fixture
def local_set(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path / LANE
    shutil.copytree(release_out(tmp_path_factory) / LANE, target)
    return target


def _one_failure(result: Result) -> str:
    assert result.code == 5, result.text
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    return lines[0]


def test_pae_is_the_dsse_v1_encoding() -> None:
    """DSSE protocol v1.0's example: PAE("http://example.com/HelloWorld", "hello world")."""
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


@pytest.mark.parametrize("kind", ["ed25519", "p256"])
def test_sign_then_verify_a_local_set(local_set: Path, keys: dict[str, tuple[Path, Path]], kind: str) -> None:
    private, public = keys[kind]
    before = sorted(p.name for p in local_set.iterdir())
    result = cli("sign", local_set, "--key", private)
    assert result.code == 0, result.text
    signatures = local_set.parent / f"{LANE}.sigstore"
    assert sorted(p.name for p in signatures.iterdir()) == sorted(BUNDLES)
    assert sorted(p.name for p in local_set.iterdir()) == before  # never inside the 11-file set
    doc = json.loads((signatures / BUNDLES[0]).read_bytes())
    assert doc["mediaType"] == BUNDLE_MEDIA_TYPE
    assert doc["dsseEnvelope"]["payloadType"] == INTOTO_PAYLOAD_TYPE
    provenance = (local_set / f"{stem(LANE)}.provenance.json").read_bytes()
    assert base64.b64decode(doc["dsseEnvelope"]["payload"]) == provenance
    verified = cli("--json", "verify", local_set, "--key", public, "--require-signature")
    assert verified.code == 0, verified.text
    checked = json.loads(verified.out)["checked"]
    assert sum(1 for c in checked if "signature by" in c) == 2
    key_id = load_verifying_key(public).key_id[:16]
    assert json.loads(verified.out)["signatures"] == f"signed by {key_id}"
    line = cli("verify", local_set, "--key", public).out.splitlines()[-1]
    assert line.startswith(f"{local_set}: OK (") and f"; signed by {key_id};" in line


@pytest.mark.parametrize("kind", ["ed25519", "p256"])
def test_every_signature_sign_writes_verifies_with_securesystemslib(
    local_set: Path, keys: dict[str, tuple[Path, Path]], kind: str
) -> None:
    """An outside verifier (securesystemslib's DSSE ``Envelope.verify``, not this project's code)
    checks each bundle's envelope with the public key, and its payload is the signed file."""
    try:
        from securesystemslib import dsse
        from securesystemslib.exceptions import VerificationError
        from securesystemslib.signer._key import SSlibKey
    except ImportError:
        unavailable("securesystemslib is not installed (a dev dependency: ./dev setup installs it)")

    private, public = keys[kind]
    assert cli("sign", local_set, "--key", private).code == 0
    pub = serialization.load_pem_public_key(public.read_bytes())
    for name in BUNDLES:
        envelope_doc = json.loads((local_set.parent / f"{LANE}.sigstore" / name).read_bytes())["dsseEnvelope"]
        key = SSlibKey.from_crypto(pub, keyid=envelope_doc["signatures"][0]["keyid"])
        envelope = dsse.Envelope.from_dict(envelope_doc)
        assert list(envelope.verify([key], 1)) == [key.keyid]
        signed = local_set / name.removesuffix(".sigstore.json")
        assert envelope.payload == signed.read_bytes()
        # and a flipped payload byte is refused by the same outside verifier
        envelope.payload = bytes([envelope.payload[0] ^ 1]) + envelope.payload[1:]
        with pytest.raises(VerificationError):
            envelope.verify([key], 1)


def test_verify_key_of_an_unsigned_or_partly_signed_set_says_so(
    local_set: Path, keys: dict[str, tuple[Path, Path]]
) -> None:
    private, public = keys["ed25519"]
    unsigned = cli("verify", local_set, "--key", public)
    assert unsigned.code == 0 and "; unsigned;" in unsigned.out.splitlines()[-1]
    assert json.loads(cli("--json", "verify", local_set, "--key", public).out)["signatures"] == "unsigned"
    assert cli("sign", local_set, "--key", private).code == 0
    (local_set.parent / f"{LANE}.sigstore" / "SHA256SUMS.sigstore.json").unlink()
    partly = cli("verify", local_set, "--key", public)
    assert partly.code == 0 and "; partly signed;" in partly.out.splitlines()[-1]
    # without --key the verdict says nothing of signatures (none were looked at)
    plain = json.loads(cli("--json", "verify", local_set).out)
    assert plain["signatures"] is None


def test_wrong_key_is_exit_5_one_line(local_set: Path, keys: dict[str, tuple[Path, Path]]) -> None:
    assert cli("sign", local_set, "--key", keys["ed25519"][0]).code == 0
    line = _one_failure(cli("verify", local_set, "--key", keys["p256"][1]))
    assert "signature does not verify with key" in line


def test_missing_signature_fails_only_when_required(
    local_set: Path, keys: dict[str, tuple[Path, Path]]
) -> None:
    public = keys["ed25519"][1]
    assert cli("verify", local_set, "--key", public).code == 0
    line = _one_failure(cli("verify", local_set, "--key", public, "--require-signature"))
    assert "no signature (--require-signature)" in line


def test_signature_over_other_bytes_is_exit_5(
    local_set: Path, keys: dict[str, tuple[Path, Path]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The other lane's signatures (valid, same key) do not sign this set's bytes."""
    private, public = keys["ed25519"]
    other = local_set.parent / "rtx3090"
    shutil.copytree(release_out(tmp_path_factory) / "rtx3090", other)
    assert cli("sign", other, "--key", private).code == 0
    mine = local_set.parent / f"{LANE}.sigstore"
    mine.mkdir()
    shutil.copy(other.parent / "rtx3090.sigstore" / "SHA256SUMS.sigstore.json", mine)
    line = _one_failure(cli("verify", local_set, "--key", public))
    assert ": SHA256SUMS.sigstore.json: signs other bytes than SHA256SUMS" in line


def test_a_flipped_byte_in_a_signed_statement_fails_naming_it(
    local_set: Path, keys: dict[str, tuple[Path, Path]]
) -> None:
    private, public = keys["p256"]
    assert cli("sign", local_set, "--key", private).code == 0
    path = local_set.parent / f"{LANE}.sigstore" / BUNDLES[0]
    doc = json.loads(path.read_bytes())
    payload = bytearray(base64.b64decode(doc["dsseEnvelope"]["payload"]))
    payload[len(payload) // 2] ^= 0x01
    doc["dsseEnvelope"]["payload"] = base64.b64encode(bytes(payload)).decode()
    path.write_text(json.dumps(doc))
    line = _one_failure(cli("verify", local_set, "--key", public))
    assert f": {BUNDLES[0]}: signature does not verify" in line  # only the changed one
    assert "signed statement was changed" in line


def test_keys_that_are_not_ed25519_or_p256_are_refused(
    local_set: Path, keys: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    result = cli("sign", local_set, "--key", keys["rsa"][0])
    assert result.code == 4 and "rsa.pem" in result.err and "Ed25519 or ECDSA P-256" in result.err
    result = cli("verify", local_set, "--key", tmp_path / "absent.pub")
    assert result.code == 4 and "absent.pub" in result.err
    assert not (local_set.parent / f"{LANE}.sigstore").exists()


def test_an_existing_other_signature_is_never_overwritten(
    local_set: Path, keys: dict[str, tuple[Path, Path]]
) -> None:
    assert cli("sign", local_set, "--key", keys["ed25519"][0]).code == 0
    result = cli("sign", local_set, "--key", keys["p256"][0])
    assert result.code == 4 and "exists with other bytes" in result.err


def _publish_and_verify(local_set: Path, target: str, keys: dict[str, tuple[Path, Path]]) -> str:
    private, public = keys["ed25519"]
    published = cli("publish", local_set, "--to", target, "--draft", "--sign", private)
    assert published.code == 0, published.text
    assert "signatures published" in published.out
    reference = f"{target}:{TAG}.draft"
    verified = cli("verify", reference, "--key", public, "--require-signature")
    assert verified.code == 0, verified.text
    assert "signature does not verify" in _one_failure(cli("verify", reference, "--key", keys["p256"][1]))
    return reference


def test_publish_sign_then_verify_on_a_dir_store(
    local_set: Path, keys: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    _publish_and_verify(local_set, f"dir://{tmp_path / 'store'}", keys)


def test_publish_sign_then_verify_on_a_files_store(
    local_set: Path, keys: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    root = tmp_path / "files"
    _publish_and_verify(local_set, f"files://{root}", keys)
    # Beside the tag, never in it: DIR/<tag>/ holds the 11 files and nothing else.
    assert sorted(p.name for p in (root / f"{TAG}.draft.sigstore").iterdir()) == sorted(BUNDLES)
    assert len(list((root / f"{TAG}.draft").iterdir())) == 11
    # A flipped byte in a stored signed statement fails verify, naming the bundle.
    path = root / f"{TAG}.draft.sigstore" / "SHA256SUMS.sigstore.json"
    bundle = Bundle.parse(path.read_bytes(), where="test")
    flipped = bytearray(bundle.payload)
    flipped[0] ^= 0x01
    path.write_bytes(
        Bundle(
            payload_type=bundle.payload_type,
            payload=bytes(flipped),
            key_id=bundle.key_id,
            signature=bundle.signature,
        ).to_bytes()
    )
    line = _one_failure(cli("verify", f"files://{root}:{TAG}.draft", "--key", keys["ed25519"][1]))
    assert ": SHA256SUMS.sigstore.json: signature does not verify" in line


def test_publish_sign_then_verify_on_a_registry_as_a_referrer(
    local_set: Path,
    keys: dict[str, tuple[Path, Path]],
    registry: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from ninfer_release.registry import RegistryClient, referrers_of

    repo = registry_namespace(tmp_path_factory, "signing")
    _publish_and_verify(local_set, f"oci://{registry}/{repo}", keys)
    client = RegistryClient(registry)
    manifest = client.get_manifest(repo, f"{TAG}.draft")
    assert manifest is not None
    import hashlib

    found = referrers_of(
        client,
        repo,
        "sha256:" + hashlib.sha256(manifest.data).hexdigest(),
        artifact_type=BUNDLE_MEDIA_TYPE,
    )
    assert len(found) == 1
    # image-spec 1.1: the referrer says what it is in artifactType; its config is the empty descriptor
    signatures = client.get_manifest(repo, f"{TAG}.draft.sigstore")
    assert signatures is not None
    doc = json.loads(signatures.data)
    assert doc["artifactType"] == BUNDLE_MEDIA_TYPE
    assert doc["config"] == {
        "mediaType": "application/vnd.oci.empty.v1+json",
        "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
        "size": 2,
    }


def test_publish_with_a_bad_key_publishes_nothing(
    local_set: Path, keys: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    result = cli("publish", local_set, "--to", f"dir://{store}", "--draft", "--sign", keys["rsa"][0])
    assert result.code == 4, result.text
    assert not store.exists()
