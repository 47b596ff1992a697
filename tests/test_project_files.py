"""The repository's LICENSE is the full Apache-2.0 text pyproject.toml declares."""

from __future__ import annotations

import hashlib
import tomllib

from flow_support import REPO

#: SHA-256 of the Apache License 2.0 text as Debian ships it (/usr/share/common-licenses/Apache-2.0),
#: the text https://www.apache.org/licenses/LICENSE-2.0.txt serves.
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def test_license_is_the_apache_2_text_pyproject_names() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["license"] == {"text": "Apache-2.0"}
    text = (REPO / "LICENSE").read_bytes()
    assert b"Apache License\n                           Version 2.0, January 2004" in text
    assert b"END OF TERMS AND CONDITIONS" in text and b"APPENDIX: How to apply the Apache License" in text
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256
