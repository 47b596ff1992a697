"""The exported stdlib verifier sees what ``verify`` sees: the config as a TOML parser reads it, a
member's inflated bytes within the size it declares, and each record's shape.

Found by a hostile review (2026-12-04): a config whose multi-line string holds a second
``[model]`` table verified OK in the stdlib verifier only (its line reader took the string's
lines for keys); a member declaring 100 bytes whose 4 MiB deflate stream inflates to ~4 GiB took
4 GiB of memory there; and records ``verify`` refuses as malformed (a qualification record
without ``rollback``, a ``null`` ACL grant, a number among ``args``) verified OK there, or failed
on an internal ``AttributeError``. Each set here is fully re-sealed (``reseal_support``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from flow_support import TAGS, cli, release_out, stem
from ninfer_release.releases import _standalone_verifier as sv
from ninfer_release.releases import verifier_source
from reseal_support import members_of, rebuild

LANE = "rtx4090"
GOLDEN = Path(__file__).resolve().parent / "golden" / "v0.13.1" / LANE
GOOD_PATH = b'path = "models/qwen3_8_27b-v3.ninfer"'


def _golden(suffix: str) -> bytes:
    return (GOLDEN / (stem(LANE) + suffix)).read_bytes()


def _run_standalone(
    script: Path, set_dir: Path, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-I", "-S", str(script), str(set_dir)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def script(tmp_path: Path) -> Path:
    out = tmp_path / "ninfer-verify.py"
    out.write_bytes(verifier_source())
    return out


@pytest.fixture
def draft(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A copy of the unqualified rtx4090 set."""
    d = tmp_path / "set"
    shutil.copytree(release_out(tmp_path_factory) / LANE, d)
    return d


# --- the config, as TOML reads it ------------------------------------------------------------


def _two_faced(config: bytes) -> bytes:
    """``config`` whose real ``model.path`` climbs out of the data root, followed by a multi-line
    string whose lines read as the old ``[model] path`` to a line-by-line reader."""
    evil = config.replace(GOOD_PATH, b'path = "../../../Users/Public/evil.ninfer"')
    return evil.rstrip(b"\n") + b'\nnote = """\n[model]\n' + GOOD_PATH + b'\n"""\n'


def test_a_config_a_line_reader_reads_otherwise_fails_both(draft: Path, script: Path) -> None:
    s = stem(LANE)
    config = _two_faced((draft / f"{s}.config.toml").read_bytes())
    assert tomllib.loads(config.decode())["model"]["path"] == "../../../Users/Public/evil.ninfer"
    members = [(n, config if n == sv.ZIP_CONFIG_PATH else b) for n, b in members_of(draft, s)]
    rebuild(draft, s, TAGS[LANE], members, entries={"config.toml": config})
    full = cli("verify", draft)
    assert full.code == 5, full.text
    assert "evil.ninfer" in full.err
    alone = _run_standalone(script, draft)
    assert alone.returncode == 5, alone.stdout
    assert f"FAIL: {s}.route.json: install.model_path is not where {s}.config.toml reads it" in alone.stderr
    assert "evil.ninfer" in alone.stderr


def test_without_tomllib_the_line_reader_reads_our_configs_as_tomllib() -> None:
    """Python 3.9/3.10 have no ``tomllib``: the line reader gives what it gives for every config
    the build renders (the rtx4090 golden; the rtx3090 one differs only in its values)."""
    config = _golden(".config.toml").decode()
    assert sv._simple_toml(config) == tomllib.loads(config)
    assert sv._simple_toml(config)["engine"]["args"][0] == "--lm-head-draft"


#: Lines the line reader cannot read exactly as TOML does: each refuses the whole config there.
NOT_READ_WITHOUT_TOMLLIB = {
    "multi-line basic string": b'note = """\n[model]\n' + GOOD_PATH + b'\n"""\n',
    "multi-line literal string": b"note = '''\n[model]\n" + GOOD_PATH + b"\n'''\n",
    "literal string": b"[extra]\nx = 'C:\\temp'\n",
    "dotted key": b'model.path = "elsewhere"\n',
    "inline comment": b"[extra]\nx = 1 # one\n",
    "unicode escape": b'[extra]\nx = "\\u0041"\n',
    "table redefined": b'[model]\nx = "y"\n',
    "key repeated": b'[server]\nhost = "0.0.0.0"\n',
    "array of tables": b"[[model]]\n",
    "inline table": b'[extra]\nx = { a = "b" }\n',
    "quoted key": b'[extra]\n"x" = "y"\n',
    "carriage return": b'[extra]\nx = "y"\r\n',
    "indented key": b'[extra]\n  x = "y"\n',
}


@pytest.mark.parametrize("case", sorted(NOT_READ_WITHOUT_TOMLLIB))
def test_without_tomllib_what_the_line_reader_cannot_read_exactly_is_refused(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _golden(".config.toml").rstrip(b"\n") + b"\n" + NOT_READ_WITHOUT_TOMLLIB[case]
    monkeypatch.setattr(sv, "tomllib", None)
    with pytest.raises(ValueError, match=r"^line \d+: not a form this verifier reads without tomllib"):
        sv.config_toml(config)


def test_without_tomllib_a_two_faced_config_is_refused_by_the_route_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the set test above finds with ``tomllib``, found without it as a config it cannot read."""
    run = sv.Run()
    route = sv.strict_json(_golden(".route.json"))
    monkeypatch.setattr(sv, "tomllib", None)
    sv._route_paths(run, "r.json", "c.toml", route, _two_faced(_golden(".config.toml")), "x")
    assert run.failures == [
        "c.toml: is not UTF-8 TOML: line 58: not a form this verifier reads without tomllib (Python < 3.11)"
    ]
