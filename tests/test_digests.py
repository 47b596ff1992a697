"""ninfer_release.digests: the one SHA-256 digest pattern, its predicates and the Digest type."""

from __future__ import annotations

import pytest

from ninfer_release.digests import DIGEST, SHA256_HEX, Digest, is_digest, is_sha256_hex

HEX = "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("value", "hex_ok", "digest_ok"),
    [
        (HEX, True, False),
        ("sha256:" + HEX, False, True),
        (HEX.upper(), False, False),
        ("sha256:" + HEX.upper(), False, False),
        (HEX + "\n", False, False),
        ("sha256:" + HEX + "\n", False, False),
        (HEX[:-1], False, False),
        ("sha512:" + HEX, False, False),
        (" " + HEX, False, False),
        (None, False, False),
        (64, False, False),
    ],
)
def test_predicates_accept_exactly_the_lowercase_spellings(
    value: object, hex_ok: bool, digest_ok: bool
) -> None:
    assert is_sha256_hex(value) is hex_ok
    assert is_digest(value) is digest_ok


def test_patterns_are_unanchored_for_fullmatch_and_composition() -> None:
    assert SHA256_HEX.fullmatch(HEX)
    assert DIGEST.search(f"127.0.0.1:5000/ninfer/runtime@sha256:{HEX}")


def test_digest_parses_prints_and_hashes() -> None:
    digest = Digest.parse("sha256:" + HEX)
    assert digest.hex == HEX
    assert str(digest) == "sha256:" + HEX
    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert str(Digest.of_bytes(b"")) == "sha256:" + empty


@pytest.mark.parametrize("text", [HEX, "sha256:" + HEX.upper(), "sha256:" + HEX + "\n", "sha256:"])
def test_digest_parse_rejects_other_spellings(text: str) -> None:
    with pytest.raises(ValueError, match="not a sha256:<64 lowercase hex> digest"):
        Digest.parse(text)


def test_digest_rejects_a_bad_hex() -> None:
    with pytest.raises(ValueError, match="not 64 lowercase hex"):
        Digest("ABC")
