"""Package URLs (purl): one canonical spelling, compared parsed (C32)."""

from __future__ import annotations

from collections.abc import Mapping

from packageurl import PackageURL

from ninfer_release.errors import InputError, Problem


def canonical_purl(
    type: str,
    namespace: str | None,
    name: str,
    version: str | None = None,
    qualifiers: Mapping[str, str] | None = None,
    subpath: str | None = None,
) -> str:
    """The canonical purl string: percent-encoded components, qualifiers sorted by key.

    ``+`` in a version is encoded as ``%2B`` so that no parser can read it as a space; the
    qualifier order given is irrelevant. Example (C32): ``generic``/``zlib``/``1.3.1+win64`` with
    ``download_url=https://example.invalid/a b?c=d`` and ``arch=x86_64`` →
    ``pkg:generic/zlib@1.3.1%2Bwin64?arch=x86_64&download_url=https://example.invalid/a%20b%3Fc%3Dd``.
    Rule source: purl-spec (package-url/purl-spec PURL-SPECIFICATION.rst, "qualifiers … sorted").

    Raises:
        InputError: a component is invalid (empty name, bad type).
    """
    try:
        purl = PackageURL(
            type=type,
            namespace=namespace or None,
            name=name,
            version=version or None,
            qualifiers=dict(sorted((qualifiers or {}).items())),
            subpath=subpath or None,
        )
    except ValueError as exc:
        raise InputError(
            problems=[Problem(file="purl", field=name, message=f"invalid purl: {exc}")]
        ) from None
    return str(purl.to_string())


def parse_purl(text: str, *, where: str = "purl") -> PackageURL:
    """Parse ``text`` as a purl.

    Raises:
        InputError: ``text`` is not a purl (message names ``where``).
    """
    try:
        return PackageURL.from_string(text)
    except ValueError as exc:
        raise InputError(
            problems=[Problem(file=where, field="purl", message=f"{text!r} is not a valid purl: {exc}")]
        ) from None


def normalize_purl(text: str, *, where: str = "purl") -> str:
    """Re-spell ``text`` canonically (qualifiers sorted, components encoded once).

    Raises:
        InputError: ``text`` is not a purl.
    """
    return str(parse_purl(text, where=where).to_string())


def purls_equal(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` name the same package: compared parsed, never as strings (C32).

    Qualifier order and percent-encoding differences (``+`` vs ``%2B``) do not matter; the
    type's normalisation rules (e.g. lowercase ``pypi`` names) apply.

    Raises:
        InputError: either string is not a purl.
    """
    pa, pb = parse_purl(a), parse_purl(b)
    return bool(pa.to_dict(encode=False) == pb.to_dict(encode=False))
