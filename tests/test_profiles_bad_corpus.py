"""The bad-input corpus (``tests/data/bad/``): every malformed profile, template and manifest is
refused by the CLI with exit 3 (4 for a missing file), one ``error:`` line per problem naming the
file and the field, no traceback, and no output file written (issue 2, "Bad input").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import RunCli

BAD = Path(__file__).resolve().parent / "data" / "bad"
REPO = Path(__file__).resolve().parent.parent
CASES = sorted(p.name for p in BAD.iterdir() if (p / "case.json").is_file())


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 25
    kinds = {json.loads((BAD / c / "case.json").read_text())["command"] for c in CASES}
    assert kinds == {"profile", "manifest"}


def _check_lines(err: str, target: Path, expect: list[list[str]]) -> None:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines, "no problem reported"
    for line in lines:
        assert line.startswith("error: "), line
    for field, message in expect:
        wanted = f": {field}: " if field else ": "
        hits = [line for line in lines if str(target.parent) in line and wanted in line and message in line]
        assert hits, f"no line names {field!r} with {message!r}:\n{err}"


@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_refused(name: str, run_cli: RunCli, tmp_path: Path) -> None:
    case_dir = BAD / name
    spec = json.loads((case_dir / "case.json").read_text())
    target = case_dir / spec["target"]
    if spec["command"] == "manifest":
        code, out, err = run_cli("manifest", "check", str(target), "--repo", str(REPO))
        assert (code, out) == (spec["exit"], "")
        _check_lines(err, target.parent.parent, spec["expect"])
        return
    out_file = tmp_path / "out" / "engine.toml"
    code, out, err = run_cli("profile", "render", str(target), "--out", str(out_file))
    assert (code, out) == (spec["exit"], "")
    assert not out_file.exists() and not out_file.parent.exists()
    _check_lines(err, target, spec["expect"])
    code, out, err = run_cli("profile", "validate", str(target))
    assert (code, out) == (spec["exit"], "")
    _check_lines(err, target, spec["expect"])


def test_json_mode_reports_problems_as_one_document(run_cli: RunCli) -> None:
    target = BAD / "wrong-types" / "profiles" / "qwen38-4090-native-v0.7.0-beta.2.yaml"
    code, out, _err = run_cli("--json", "profile", "validate", str(target))
    assert code == 3
    doc = json.loads(out)
    assert doc["ok"] is False and doc["exit_code"] == 3
    assert len(doc["problems"]) == 4  # all at once, not the first only
