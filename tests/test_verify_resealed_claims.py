"""verify of a set whose records are edited and every binding re-sealed (digests, sizes, the
release instance id, SHA256SUMS): a record that states a contract constant other than the
contract's, or a claim that disagrees with the config or the component manifest, fails with
exit 5 naming the record and the field — checksums alone cannot tell such a set apart.

Found by a type-confusion sweep of every field of every record: each edit below used to verify OK.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_support import cli, release_out
from test_attack_fast_sbom import _STEM, LANE, _resealed
from test_attack_fast_sbom import _at as _at_path

Raw = dict[str, Any]


def _at(*path: str | int, value: Any) -> Callable[[Raw], None]:
    """The edit that sets the field at ``path`` to ``value``."""
    return _at_path(path, value)


_INTERNAL = ("predicate", "buildDefinition", "internalParameters")

#: name -> (record kind, edit, the record named in the message, words the message holds)
_CASES: dict[str, tuple[str, Callable[[Raw], None], str, str]] = {
    "manifest schema 7": ("manifest", _at("schema", value=7), "manifest", "schema"),
    "manifest kind": ("manifest", _at("kind", value="x"), "manifest", "kind"),
    "model schema 7": ("model", _at("schema", value=7), "model", "schema"),
    "model binding": ("model", _at("binding", value="x"), "model", "binding"),
    "qualification schema 7": ("qualification", _at("schema", value=7), "qualification", "schema"),
    "route schema 7": ("route", _at("schema", value=7), "route", "schema"),
    "route port": ("route", _at("endpoint", "port", value=7), "route", "endpoint.port is 7"),
    "route host": ("route", _at("endpoint", "host", value="x"), "route", "endpoint.host is 'x'"),
    "route auth": ("route", _at("endpoint", "auth", value="none"), "route", "auth"),
    "route not loopback": ("route", _at("endpoint", "loopback_only", value=False), "route", "loopback_only"),
    "route key in assets": (
        "route",
        _at("bearer_key", "stored_in_assets", value=True),
        "route",
        "stored_in_assets",
    ),
    "route writable program root": (
        "route",
        _at("install", "program_root_writable", value=True),
        "route",
        "program_root_writable",
    ),
    "route checkpoint schema": (
        "route",
        _at("install", "checkpoint_schema", value=7),
        "route",
        "checkpoint_schema",
    ),
    "route cuda arch": ("route", _at("hardware", "cuda_arch", value="sm_86"), "route", "hardware.cuda_arch"),
    "route cuda runtime": (
        "route",
        _at("hardware", "cuda_runtime_version", value=None),
        "route",
        "hardware.cuda_runtime_version",
    ),
    "route model url": (
        "route",
        _at("model", "url", value="https://example.invalid/x"),
        "route",
        "model binding",
    ),
    "route model revision": ("route", _at("model", "revision", value="x"), "route", "model binding"),
    "route model resume": ("route", _at("model", "resume_onto_older_version", value=True), "route", "resume"),
    "provenance cuda arch": (
        "provenance",
        _at(*_INTERNAL, "cuda_arch", value="sm_86"),
        "provenance",
        "cuda_arch",
    ),
    "provenance epoch": (
        "provenance",
        _at(*_INTERNAL, "source_date_epoch", value=7),
        "provenance",
        "source_date_epoch",
    ),
}


@pytest.fixture
def copy_set(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    dst = tmp_path / LANE
    shutil.copytree(release_out(tmp_path_factory) / LANE, dst)
    return dst


def _edited(set_dir: Path, kind: str, edit: Callable[[Raw], None]) -> None:
    path = set_dir / f"{_STEM}.{kind}.json"
    data = path.read_bytes()
    raw: Raw = json.loads(data)
    edit(raw)
    indent = 4 if b'\n    "' in data[:200] else 2
    _resealed(set_dir, kind, (json.dumps(raw, indent=indent) + "\n").encode())


def test_a_resealed_set_with_a_harmless_record_edit_still_verifies(copy_set: Path) -> None:
    """Control: the re-sealing binds everything, so each failure below is the claim's own."""
    _edited(copy_set, "route", _at("hardware", "exclusive", value="edited"))
    res = cli("verify", copy_set)
    assert res.code == 0, res.text


@pytest.mark.parametrize("name", list(_CASES))
def test_a_resealed_set_with_a_false_claim_fails_naming_the_record(copy_set: Path, name: str) -> None:
    kind, edit, record, words = _CASES[name]
    _edited(copy_set, kind, edit)
    res = cli("verify", copy_set)
    assert res.code == 5, res.text
    assert "internal error" not in res.err, res.err
    lines = [line for line in res.err.splitlines() if f"{_STEM}.{record}.json" in line and words in line]
    assert lines, res.err


_STANDALONE = Path(__file__).parents[1] / "src/ninfer_release/releases/_standalone_verifier.py"


@pytest.mark.parametrize("name", ["control", *_CASES])
def test_the_standalone_verifier_gives_the_same_verdict(copy_set: Path, name: str) -> None:
    """``export-verifier``'s stdlib-only file checks the same claims (its docstring promises it)."""
    if name == "control":
        _edited(copy_set, "route", _at("hardware", "exclusive", value="edited"))
    else:
        kind, edit, record, _ = _CASES[name]
        _edited(copy_set, kind, edit)
    res = subprocess.run(
        [sys.executable, "-I", str(_STANDALONE), str(copy_set)], capture_output=True, text=True, timeout=120
    )
    if name == "control":
        assert res.returncode == 0, res.stderr
        return
    assert res.returncode == 5, res.stderr
    assert f"FAIL: {_STEM}.{record}.json" in res.stderr, res.stderr
