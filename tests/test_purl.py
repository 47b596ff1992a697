"""purl handling (C32): canonical spelling with sorted qualifiers; comparison of parsed purls."""

from __future__ import annotations

import pytest
from packageurl import PackageURL

from ninfer_release.errors import InputError
from ninfer_release.sbom import canonical_purl, normalize_purl, purls_equal

C32 = "pkg:generic/zlib@1.3.1%2Bwin64?arch=x86_64&download_url=https://example.invalid/a%20b%3Fc%3Dd"


def test_c32_canonical_purl_encodes_plus_and_sorts_qualifiers() -> None:
    # Qualifiers given in the case's order (download_url first): the output sorts them.
    got = canonical_purl(
        "generic",
        None,
        "zlib",
        "1.3.1+win64",
        {"download_url": "https://example.invalid/a b?c=d", "arch": "x86_64"},
        None,
    )
    assert got == C32


def test_c32_parsing_returns_the_plus_version() -> None:
    assert PackageURL.from_string(C32).version == "1.3.1+win64"
    assert PackageURL.from_string("pkg:generic/zlib@1.3.1+win64").version == "1.3.1+win64"
    assert (
        normalize_purl(
            "pkg:generic/zlib@1.3.1+win64?download_url=https://example.invalid/a%20b%3Fc%3Dd&arch=x86_64"
        )
        == C32
    )


def test_c32_purls_compare_parsed_not_as_strings() -> None:
    reordered = "pkg:generic/zlib@1.3.1+win64?download_url=https://example.invalid/a%20b%3Fc%3Dd&arch=x86_64"
    assert reordered != C32
    assert purls_equal(reordered, C32)
    assert not purls_equal(
        C32, "pkg:generic/zlib@1.3.1?arch=x86_64&download_url=https://example.invalid/a%20b%3Fc%3Dd"
    )
    assert not purls_equal(
        C32, "pkg:generic/zlib@1.3.1%2Bwin64?arch=arm64&download_url=https://example.invalid/a%20b%3Fc%3Dd"
    )


def test_purls_equal_refuses_a_non_purl() -> None:
    with pytest.raises(InputError, match="not a valid purl"):
        purls_equal("zlib 1.3.1", C32)
