"""The CycloneDX validator's IRI format checks (RFC 3987 §2.2 as regular expressions).

jsonschema's own ``iri``/``iri-reference`` checkers compile lark grammars at import (seconds per
``verify``); ours must still reject what the schema forbids.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ninfer_release.sbom import validate_cyclonedx_bytes
from ninfer_release.sbom._iri import is_iri, is_iri_reference


@pytest.mark.parametrize(
    ("value", "iri", "reference"),
    [
        ("https://github.com/nlohmann/json/archive/9cca280a.tar.gz", True, True),
        ("git+https://github.com/fmtlib/fmt.git#0c9fce2f", True, True),
        ("urn:uuid:3f1c1b2e-0000-5000-8000-000000000000", True, True),
        ("mailto:release@example.org", True, True),
        ("http://例え.jp/パス?q=値#frag", True, True),  # ucschar
        ("http://a/b?\ue000", True, True),  # iprivate is allowed in the query only
        ("http://a/b#\ue000", False, False),
        ("http://a/\ue000?q", False, False),  # iprivate in the path
        ("http://a/b#x?\ue000", False, False),  # a '?' after '#' does not start a query
        ("\u00e9:foo", False, False),  # no non-ASCII letters in a scheme
        ("http://[v1.\u00e9]/", False, False),  # nor in an IPvFuture literal
        ("http://a/\ufffe", False, False),  # a noncharacter is not ucschar
        ("http://a/\ud800", False, False),  # nor is a lone surrogate
        ("http://[::1]:8080/x", True, True),
        ("http://[v1.fe]/", True, True),
        ("http://[::1%25eth0]/", False, False),  # no zone identifiers in RFC 3987
        ("http://[1.2.3.4]/", False, False),
        ("http://u:p@host:8080/p", True, True),
        ("http://host:port/", False, False),
        ("//host/path", False, True),
        ("relative/path", False, True),
        ("#fragment", False, True),
        ("", False, True),
        (":no-scheme", False, False),
        ("./a:b", False, True),
        ("a b", False, False),
        ("http://exa mple.com/", False, False),
        ("http://x/%zz", False, False),
        ("http://x/<tag>", False, False),
        ("http://x/\x7f", False, False),
    ],
)
def test_iri_rules(value: str, iri: bool, reference: bool) -> None:
    assert is_iri(value) is iri
    assert is_iri_reference(value) is reference


def _minimal_bom(url: str) -> bytes:
    doc = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "serialNumber": "urn:uuid:3f1c1b2e-0000-5000-8000-000000000000",
        "version": 1,
        "components": [
            {
                "bom-ref": "vendored:fmt@11.0.2",
                "type": "library",
                "name": "fmt",
                "version": "11.0.2",
                "externalReferences": [{"type": "source-distribution", "url": url}],
            }
        ],
    }
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def test_a_schema_invalid_iri_still_fails_cyclonedx_validation() -> None:
    assert validate_cyclonedx_bytes(_minimal_bom("https://github.com/fmtlib/fmt/archive/v11.tar.gz")) == []
    messages = validate_cyclonedx_bytes(_minimal_bom("https://github.com/fmt lib/<fmt>"))
    assert messages == [
        "schema: $.components[0].externalReferences[0].url: "
        "'https://github.com/fmt lib/<fmt>' is not valid under any of the given schemas"
    ]


def test_an_unknown_property_fails_the_strict_schema() -> None:
    doc = json.loads(_minimal_bom("https://example.org/x"))
    doc["components"][0]["colour"] = "blue"
    messages = validate_cyclonedx_bytes((json.dumps(doc) + "\n").encode())
    assert len(messages) == 1
    assert messages[0].startswith("schema: $.components[0]: Additional properties are not allowed")


def test_validation_does_not_load_lark() -> None:
    """A fresh process validates a CycloneDX document without importing rfc3987_syntax/lark: a
    valid one without jsonschema either (``sbom._cdx_schema``), an invalid one with jsonschema."""
    code = (
        "import json, sys\n"
        "from ninfer_release.sbom import validate_cyclonedx_bytes\n"
        "data = sys.stdin.buffer.read()\n"
        "names = ('lark', 'rfc3987_syntax', 'jsonschema')\n"
        "assert validate_cyclonedx_bytes(data) == []\n"
        "print(sorted(m for m in names if m in sys.modules))\n"
        "doc = json.loads(data)\n"
        "doc['components'][0]['colour'] = 'blue'\n"
        "assert validate_cyclonedx_bytes((json.dumps(doc) + '\\n').encode()) != []\n"
        "print(sorted(m for m in names if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=_minimal_bom("https://example.org/x"),
        capture_output=True,
        check=True,
    )
    assert out.stdout.decode().split("\n")[:2] == ["[]", "['jsonschema']"]


def test_date_time_format_is_still_checked() -> None:
    """Only format modules the CycloneDX schemas never use are skipped: date-time still fails."""
    doc = json.loads(_minimal_bom("https://example.org/x"))
    doc["metadata"] = {"timestamp": "yesterday"}
    messages = validate_cyclonedx_bytes((json.dumps(doc) + "\n").encode())
    assert messages == ["schema: $.metadata.timestamp: 'yesterday' is not a 'date-time'"]


_URI_SAMPLES = ("https://example.com/a?b#c", "urn:x:y", "http://a b", "../rel/x", "no scheme", "", "%zz", 7)


def test_the_deferred_uri_checkers_give_rfc3986_validators_verdicts() -> None:
    # issue 13: rfc3986_validator loads on the first uri check, not with jsonschema; the checkers
    # are registered under jsonschema's names and drafts with its verdicts.
    from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]

    from ninfer_release.sbom._cyclonedx import _strict_validator

    checker = _strict_validator().format_checker
    for value in _URI_SAMPLES:
        for fmt, rule in (("uri", "URI"), ("uri-reference", "URI_reference")):
            expected = not isinstance(value, str) or bool(validate_rfc3986(value, rule=rule))
            assert checker.conforms(value, fmt) is expected, (fmt, value)


def test_jsonschema_keeps_its_uri_formats_per_draft_after_the_lean_import() -> None:
    code = (
        "from ninfer_release.sbom._iri import import_jsonschema_lean; import_jsonschema_lean(); import sys; "
        "from jsonschema import _format as f; "
        "print(sorted(d for d, c in f._draft_checkers.items() if 'uri' in c.checkers), "
        "sorted(d for d, c in f._draft_checkers.items() if 'uri-reference' in c.checkers), "
        "'rfc3986_validator' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = proc.stdout.split()
    assert " ".join(out) == (
        "['draft201909', 'draft202012', 'draft3', 'draft4', 'draft6', 'draft7'] "
        "['draft201909', 'draft202012', 'draft6', 'draft7'] False"
    )
