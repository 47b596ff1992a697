"""``verify`` states the qualification of a set (issue 8 item 2): ``qualified`` or an unqualified
draft, in text and ``--json``; ``--require-qualified`` fails an unqualified set (exit 5); the
qualification record must bind this package and follow from its receipts and gate ledger."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_support import TAGS, cli, qualified_out, release_out, stem
from test_verify_relabel import _dump, _rebind, _relabel

LANE = "rtx4090"
S = stem(LANE)


def _verify_json(*args: str | Path) -> tuple[int, dict[str, Any]]:
    res = cli("--json", "verify", *args)
    return res.code, json.loads(res.out)


def test_unqualified_set_reads_as_an_unqualified_draft(tmp_path_factory: pytest.TempPathFactory) -> None:
    set_dir = release_out(tmp_path_factory) / LANE
    res = cli("verify", set_dir)
    assert res.code == 0, res.text
    (line,) = res.out.splitlines()
    assert line.startswith(f"{set_dir}: OK (unqualified draft, not for release; {S}, ")
    assert f"OK ({S}" not in res.out
    code, doc = _verify_json(set_dir)
    assert code == 0 and doc["ok"] is True
    assert doc["qualification"] == "unqualified" and doc["draft"] is True
    assert doc["gates"] == {"pass": 0, "fail": 0, "not_applicable": 0}


def test_qualified_set_reads_as_qualified_with_its_gate_counts(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    set_dir = qualified_out(tmp_path_factory) / LANE
    res = cli("verify", set_dir, "--require-qualified")
    assert res.code == 0, res.text
    assert f"{set_dir}: OK (qualified: 2 pass, 0 fail, 1 not applicable; {S}, " in res.out
    code, doc = _verify_json(set_dir)
    assert code == 0
    assert doc["qualification"] == "qualified" and doc["draft"] is False
    assert doc["gates"] == {"pass": 2, "fail": 0, "not_applicable": 1}


def test_require_qualified_fails_an_unqualified_set(tmp_path_factory: pytest.TempPathFactory) -> None:
    set_dir = release_out(tmp_path_factory) / LANE
    res = cli("verify", set_dir, "--require-qualified")
    assert res.code == 5, res.text
    assert f"{S}.qualification.json: status unqualified; --require-qualified needs a qualified set" in res.err
    res = cli("--json", "verify", set_dir, "--require-qualified")
    assert res.code == 5 and json.loads(res.out)["exit_code"] == 5


def test_qualified_set_read_from_a_draft_tag_is_a_draft(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A qualified set published with ``--draft``, verified from ``<tag>.draft``: qualified, a draft."""
    store = tmp_path / "store"
    res = cli("publish", qualified_out(tmp_path_factory) / LANE, "--to", f"dir://{store}", "--draft")
    assert res.code == 0, res.text
    ref = f"dir://{store}:{TAGS[LANE]}.draft"
    res = cli("verify", ref)
    assert res.code == 0, res.text
    assert f"{ref}: OK (qualified draft (qualified: 2 pass, 0 fail, 1 not applicable); {S}, " in res.out
    code, doc = _verify_json(ref)
    assert code == 0 and doc["qualification"] == "qualified" and doc["draft"] is True
    # --require-qualified judges the bytes: the same qualified set passes it from a draft reference.
    assert cli("verify", ref, "--require-qualified").code == 0


@pytest.fixture
def qualified_copy(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    dst = tmp_path / LANE
    shutil.copytree(qualified_out(tmp_path_factory) / LANE, dst)
    return dst


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("bound_to", "package_sha256"), "ab" * 32, "bound_to.package_sha256 is"),
        (("receipts", 0, "bound", "package_sha256"), "ab" * 32, "does not bind this package and config"),
        (("receipts", 0, "binding"), "scratch", "is not public or scratch_equivalence"),
        (("receipts", 0, "gates", "G1"), "fail", "gates (merged, counts, failed) do not follow"),
        (("gates", "counts", "not_applicable"), 0, "gates (merged, counts, failed) do not follow"),
        (("schema",), 1, "schema 1: only schema 2 binds the package bytes"),
    ],
)
def test_forged_qualification_record_is_caught(
    qualified_copy: Path, path: tuple[Any, ...], value: Any, message: str
) -> None:
    """Edit one field of the qualification record and re-bind every digest around it: verify still
    fails naming the record (a failed gate can never hide behind ``qualified``)."""
    _relabel(qualified_copy, ".qualification.json", path, value)
    res = cli("verify", qualified_copy)
    assert res.code == 5, res.text
    assert any(
        line.startswith(f"error: {qualified_copy}: {S}.qualification.json: ") and message in line
        for line in res.err.splitlines()
    ), res.err


def test_failed_gate_with_status_qualified_is_caught(qualified_copy: Path) -> None:
    """A forger who fails a gate consistently (receipt, merged ledger, counts, failed list) but keeps
    ``qualified``: the status does not follow from the ledger."""
    record = qualified_copy / f"{S}.qualification.json"
    doc = json.loads(record.read_bytes())
    doc["receipts"][0]["gates"]["G1"] = "fail"
    doc["gates"] = {
        "merged": {"G1": "fail", "G2": "pass", "G22": "not_applicable"},
        "counts": {"pass": 1, "fail": 1, "not_applicable": 1},
        "failed": ["G1"],
    }
    record.write_bytes(_dump(doc))
    _rebind(qualified_copy)
    res = cli("verify", qualified_copy)
    assert res.code == 5, res.text
    assert "status 'qualified' does not follow from its 1 receipts, failed gates G1" in res.err


def test_receipts_without_gates_with_status_qualified_are_caught(qualified_copy: Path) -> None:
    """Receipts that report no gates (unfilled templates) are no evidence of a hardware run: a
    record that stays ``qualified`` with a consistent, empty ledger does not verify."""
    record = qualified_copy / f"{S}.qualification.json"
    doc = json.loads(record.read_bytes())
    for receipt in doc["receipts"]:
        receipt["gates"] = {}
    doc["gates"] = {"merged": {}, "counts": {"pass": 0, "fail": 0, "not_applicable": 0}, "failed": []}
    record.write_bytes(_dump(doc))
    _rebind(qualified_copy)
    res = cli("verify", qualified_copy)
    assert res.code == 5, res.text
    n = len(doc["receipts"])
    assert (
        f"status 'qualified' does not follow from its {n} receipts, {n} reporting no gate results" in res.err
    )


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("receipts", 0, "bound", "source_commit"), "0" * 40, "bound.source_commit '" + "0" * 40),
        (("receipts", 0, "bound", "profile_id"), "other-profile", "bound.profile_id 'other-profile'"),
    ],
)
def test_receipt_entry_naming_another_source_or_profile_is_caught(
    qualified_copy: Path, path: tuple[Any, ...], value: Any, message: str
) -> None:
    """A receipt entry of a ``qualified`` record that names another source commit or profile than
    ``bound_to`` is caught like one naming another package: sealing
    refuses such a receipt, so a record holding one was edited (hostile review of issue 8)."""
    _relabel(qualified_copy, ".qualification.json", path, value)
    res = cli("verify", qualified_copy)
    assert res.code == 5, res.text
    assert f"{S}.qualification.json: receipts[0] " in res.err and message in res.err, res.err


def _scratch_calls_itself_public(doc: dict[str, Any]) -> None:
    doc["receipts"][0]["scratch"] = {"variant": "port-only"}


def _scratch_names_the_public_bytes(doc: dict[str, Any]) -> None:
    r = doc["receipts"][0]
    eq = {k: r["bound"][k] for k in ("package_sha256", "config_sha256")}
    r["binding"] = "scratch_equivalence"
    r["scratch"] = {"variant": "port-only", "equivalence": {**eq, "evidence": "same bytes"}}


def _receipt_listed_twice(doc: dict[str, Any]) -> None:
    doc["receipts"].append(dict(doc["receipts"][0], name="run-2.json"))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # A scratch run relabelled public (its scratch block kept) is no run of the public package.
        (_scratch_calls_itself_public, "receipts[0] ('run-1.json') has binding 'public' but carries scratch"),
        # scratch_equivalence whose own bound bytes are the public package's: sealing refuses it.
        (_scratch_names_the_public_bytes, "receipts[0] ('run-1.json') is a scratch run naming the public"),
        # One receipt counted twice (same SHA-256) inflates the evidence; sealing never writes that.
        (_receipt_listed_twice, "receipts[1] ('run-2.json') has the SHA-256 of receipts[0]"),
        # Unknown keys are refused in a receipt, and so in the record that mirrors it: nothing
        # beyond what sealing writes can ride along in a set that verifies. The typed parse names
        # the file and the field path.
        (
            lambda doc: doc.update(approved_by="QA"),
            f"{S}.qualification.json: approved_by: unknown field (not part of a qualification record)",
        ),
        (
            lambda doc: doc["receipts"][0].update(signed_off=True),
            f"{S}.qualification.json: receipts[0].signed_off: unknown field (not part of a receipt entry)",
        ),
        # A gate result that is not a string is named by its path (it was "gates is not an object
        # of gate -> result", naming no gate).
        (
            lambda doc: doc["receipts"][0]["gates"].update(G1=1),
            f"{S}.qualification.json: receipts[0].gates.G1: expected a string",
        ),
    ],
)
def test_receipt_entries_sealing_never_writes_are_caught(
    qualified_copy: Path, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    record = qualified_copy / f"{S}.qualification.json"
    doc = json.loads(record.read_bytes())
    edit(doc)
    record.write_bytes(_dump(doc))
    _rebind(qualified_copy)
    res = cli("verify", qualified_copy)
    assert res.code == 5, res.text
    assert message in res.err, res.err


#: The keys of ``verify --json`` (README "Installer consumer's flow"): stable, on every path.
VERIFY_JSON_KEYS = [
    "artifact_digest",
    "bindings",
    "checked",
    "directory",
    "draft",
    "failures",
    "gates",
    "location",
    "ok",
    "qualification",
    "sha256sums_sha256",
    "signatures",
    "stem",
    "superseded_by",
    "warnings",
]


def test_verify_json_keys_are_the_documented_ones(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    set_dir = release_out(tmp_path_factory) / LANE
    assert cli("publish", set_dir, "--to", f"dir://{store}", "--draft").code == 0
    for location in (set_dir, f"dir://{store}:{TAGS[LANE]}.draft"):
        code, doc = _verify_json(location)
        assert code == 0 and sorted(doc) == VERIFY_JSON_KEYS, doc
        assert sorted(doc["gates"]) == ["fail", "not_applicable", "pass"]
        assert doc["bindings"] == {"public": 0, "scratch_equivalence": 0}
        assert (doc["qualification"], doc["draft"]) == ("unqualified", True)
        assert cli("verify", location, "--require-qualified").code == 5
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert all(f"`{key}`" in readme for key in VERIFY_JSON_KEYS)


def test_a_wholly_forged_qualification_is_caught_by_the_release_manifest(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """The limit of a self-contained set, pinned: a forger turns an unqualified draft into a
    consistent ``qualified`` set (a receipt entry naming the public digests, ledger, status, component
    manifest, provenance, SHA256SUMS all rewritten). The set alone cannot tell — every record agrees —
    but the release manifest's ``SHA256SUMS`` digest does (exit 5): qualification is trusted only as
    far as that anchor (README "Installer consumer's flow")."""
    draft = tmp_path / LANE
    shutil.copytree(release_out(tmp_path_factory) / LANE, draft)
    record = draft / f"{S}.qualification.json"
    doc = json.loads(record.read_bytes())
    b = doc["bound_to"]
    doc["receipts"] = [
        {
            "name": "forged.json",
            "sha256": "12" * 32,
            "binding": "public",
            "bound": {
                "source_commit": b["source_commit"],
                "profile_id": b["profile_id"],
                "config_sha256": b["config_bytes_sha256"],
                "package_sha256": b["package_sha256"],
            },
            "gates": {"G1": "pass"},
            "measurements": {},
        }
    ]
    doc["gates"] = {
        "merged": {"G1": "pass"},
        "counts": {"pass": 1, "fail": 0, "not_applicable": 0},
        "failed": [],
    }
    doc["status"] = "qualified"
    record.write_bytes(_dump(doc))
    manifest = draft / f"{S}.manifest.json"
    man = json.loads(manifest.read_bytes())
    man["qualification"] = "qualified"
    manifest.write_bytes(_dump(man))
    _rebind(draft)
    alone = cli("verify", draft)
    assert alone.code == 0 and "OK (qualified: 1 pass" in alone.out, alone.text
    res = cli("verify", draft, "--release-manifest", release_out(tmp_path_factory) / "release-manifest.json")
    assert res.code == 5, res.text
    assert "is not the" in res.err and "the release manifest binds" in res.err, res.err
