"""``export-verifier``: write the stdlib-only set verifier for installer hosts (issue 12).

The exported file *is* :mod:`._standalone_verifier`, byte for byte: one source, so the verifier
an installer runs cannot drift from the one the package tests (tests/test_export_verifier.py
runs it beside ``verify`` over tampered sets).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ninfer_release import atomic, hashing
from ninfer_release.errors import InputError, Problem

MODULE = "_standalone_verifier.py"


def verifier_source() -> bytes:
    """The exact bytes of the standalone verifier (the package module's source)."""
    return resources.files(__package__).joinpath(MODULE).read_bytes()


def export_verifier(out: Path) -> str:
    """Write the verifier to ``out`` (mode 0755); returns its SHA-256 (hex).

    The same bytes already at ``out`` are left as they are; other bytes are never overwritten.

    Raises:
        InputError: ``out`` exists with other bytes, or is a directory (exit 4).
    """
    data = verifier_source()
    if out.is_dir():
        raise InputError(problems=[Problem(file=str(out), message="is a directory; name a file")])
    if out.exists() and not (out.is_file() and out.read_bytes() == data):
        raise InputError(problems=[Problem(file=str(out), message="already exists; refusing to overwrite")])
    if not out.exists():
        atomic.write_bytes(out, data, mode=0o755, overwrite=False)
    return hashing.sha256_bytes(data)
