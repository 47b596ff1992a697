"""Qualification receipts at build time (DESIGN.md §3, docs/staged-inputs.md): receipts (schema 2)
bind the exact package, config, profile and source; sealing never changes the package; evidence is
never relabelled; the qualification record carries a gate ledger.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from flow_support import (
    NATIVE_LANES,
    OTHER_EPOCH,
    RELEASE,
    cli,
    draft_receipt,
    ok,
    package_sha256,
    qualified_out,
    receipt,
    release_manifest,
    release_out,
    samples,
    stem,
    tree_digests,
)


def _write(directory: Path, name: str, doc: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def _seal_lane(factory: pytest.TempPathFactory, tmp_path: Path, receipts: Path, *extra: str) -> Any:
    return cli(
        "build", "lane", "rtx4090", "--release", RELEASE, "--inputs", samples(factory),
        "--out", tmp_path / "out", "--receipts", receipts, *extra,
    )  # fmt: skip


def _scratch_receipt(draft: Path, **equivalence: str) -> dict[str, Any]:
    """A port-only scratch run of ``draft`` (its own bytes), with equivalence evidence naming the
    draft's public package and config; ``equivalence`` overrides its fields."""
    public = draft_receipt(draft)
    evidence = {
        "package_sha256": public["package_sha256"],
        "config_sha256": public["config_sha256"],
        "evidence": "config differs from the public one only in endpoint.port (18181 vs 18080)",
        **equivalence,
    }
    return draft_receipt(
        draft,
        config_sha256="ab" * 32,
        package_sha256="cd" * 32,
        scratch={"variant": "port-only", "equivalence": evidence},
    )


def _qualification(set_dir: Path, lane: str = "rtx4090") -> dict[str, Any]:
    doc = json.loads((set_dir / f"{stem(lane)}.qualification.json").read_bytes())
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize("lane", NATIVE_LANES)
def test_qualifying_changes_only_the_qualification_records(
    tmp_path_factory: pytest.TempPathFactory, lane: str
) -> None:
    """Receipts do not touch the package: zip, SBOMs, config, profile, model and route are
    byte-identical; only qualification.json, the records that digest it (provenance, component
    manifest) and SHA256SUMS differ. The release-instance id stays, since the package bytes do."""
    unq = tree_digests(release_out(tmp_path_factory) / lane)
    qual = tree_digests(qualified_out(tmp_path_factory) / lane)
    s = stem(lane)
    assert sorted(n for n in unq if unq[n] != qual[n]) == sorted(
        [f"{s}.qualification.json", f"{s}.provenance.json", f"{s}.manifest.json", "SHA256SUMS"]
    )
    doc = _qualification(qualified_out(tmp_path_factory) / lane, lane)
    assert doc["status"] == "qualified"
    assert [r["name"] for r in doc["receipts"]] == ["run-1.json"]
    entry = release_manifest(tmp_path_factory)["lanes"][lane]
    assert doc["bound_to"]["config_bytes_sha256"] == entry["config"]["sha256"]
    assert doc["bound_to"]["package_sha256"] == package_sha256(entry)
    qm = json.loads((qualified_out(tmp_path_factory) / "release-manifest.json").read_bytes())
    assert qm["lanes"][lane]["qualification"] == "qualified"
    assert qm["lanes"][lane]["release_instance_id"] == entry["release_instance_id"]


@pytest.mark.parametrize("lane", NATIVE_LANES)
def test_sealed_zip_is_byte_identical_to_the_draft_zip(
    tmp_path_factory: pytest.TempPathFactory, lane: str
) -> None:
    """Sealing never changes the package: the sealed zip is the draft zip, byte for byte, and the
    package SHA-256 the receipt names is the one both SHA256SUMS list."""
    name = f"{stem(lane)}.zip"
    draft = (release_out(tmp_path_factory) / lane / name).read_bytes()
    sealed = (qualified_out(tmp_path_factory) / lane / name).read_bytes()
    assert sealed == draft
    digest = hashlib.sha256(draft).hexdigest()
    for root in (release_out(tmp_path_factory), qualified_out(tmp_path_factory)):
        assert f"{digest}  {name}\n" in (root / lane / "SHA256SUMS").read_text()
    # Why it can be: qualification is an outer entry only, never a package member.
    with zipfile.ZipFile(release_out(tmp_path_factory) / lane / name) as z:
        assert not [m for m in z.namelist() if "qualification" in m or "receipt" in m]
    receipt_doc = json.loads(
        (qualified_out(tmp_path_factory).parent / "receipts" / lane / "run-1.json").read_bytes()
    )
    assert receipt_doc["package_sha256"] == digest


def test_qualification_record_binds_each_receipt_and_its_gates(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Per receipt: what it bound (package, config, profile, source), how (public), its own SHA-256;
    plus the merged gate ledger with pass / fail / not_applicable counts."""
    out = qualified_out(tmp_path_factory)
    path = out.parent / "receipts" / "rtx4090" / "run-1.json"
    doc = _qualification(out / "rtx4090")
    entry = release_manifest(tmp_path_factory)["lanes"]["rtx4090"]
    (rec,) = doc["receipts"]
    assert rec["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert rec["binding"] == "public"
    assert rec["bound"] == {
        "package_sha256": package_sha256(entry),
        "config_sha256": entry["config"]["sha256"],
        "profile_id": entry["profile_id"],
        "source_commit": entry["source_commit"],
    }
    assert rec["measurements"] == {"c1_decode_tok_s": 150.94}
    assert doc["schema"] == 2
    assert doc["gates"] == {
        "merged": {"G1": "pass", "G2": "pass", "G22": "not_applicable"},
        "counts": {"pass": 2, "fail": 0, "not_applicable": 1},
        "failed": [],
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("config_sha256", "ab" * 32),
        ("package_sha256", "cd" * 32),
        ("source_commit", "eecb437f" + "0" * 32),
        ("profile_id", "qwen38-4090-native-v0.7.0-beta.1"),
    ],
)
def test_receipt_naming_other_bytes_is_refused(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, field: str, value: str
) -> None:
    """A receipt for this lane naming another package, config, source commit or profile: exit 5, the
    receipt file and field named; the output directory is not created (DESIGN.md §3)."""
    doc = draft_receipt(release_out(tmp_path_factory) / "rtx4090", **{field: value})
    _write(tmp_path / "receipts", "beta1.json", doc)
    out = tmp_path / "out"
    res = cli(
        "build", "release", RELEASE, "--inputs", samples(tmp_path_factory), "--out", out,
        "--receipts", tmp_path / "receipts", "--offline",
    )  # fmt: skip
    assert res.code == 5, res.text
    assert f"beta1.json: {field}: names {value!r}" in res.err
    assert "never relabelled" in res.err
    assert not out.exists()


@pytest.mark.parametrize(
    "change",
    ["licence text", "dll and its lock entry"],
)
def test_receipt_for_the_draft_refuses_a_rebuild_with_other_package_bytes(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, change: str
) -> None:
    """Issue 8's relabelling: a receipt written for the draft, then a packaged file changed (a
    licence text; a DLL together with its lock entry). The rebuild differs only in the package, so
    config, profile and source still agree -- and the receipt is refused on package_sha256 (exit 5)."""
    staged = tmp_path / "staged"
    shutil.copytree(samples(tmp_path_factory), staged)
    lane_dir = staged / "rtx4090"
    if change == "licence text":
        with (lane_dir / "licenses" / "fmt-MIT.txt").open("ab") as f:
            f.write(b"\n")
    else:
        dll = lane_dir / "bin" / "dstorage.dll"
        dll.write_bytes(dll.read_bytes() + b"\0")
        lock_path = lane_dir / "dependencies.lock.json"
        lock = json.loads(lock_path.read_bytes())
        for r in lock["redistributables"]:
            if r["file"] == "bin/dstorage.dll":
                r["sha256"] = hashlib.sha256(dll.read_bytes()).hexdigest()
        lock_path.write_text(json.dumps(lock, indent=2) + "\n")
    _write(
        tmp_path / "receipts" / "rtx4090",
        "run-1.json",
        draft_receipt(release_out(tmp_path_factory) / "rtx4090"),
    )
    out = tmp_path / "out"
    res = cli(
        "build", "lane", "rtx4090", "--release", RELEASE, "--inputs", staged, "--out", out,
        "--receipts", tmp_path / "receipts",
    )  # fmt: skip
    assert res.code == 5, res.text
    lines = [line for line in res.err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "run-1.json: package_sha256: names" in lines[0], res.err
    assert not out.exists()


def test_schema_1_receipt_is_refused_saying_what_to_add(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    doc = draft_receipt(release_out(tmp_path_factory) / "rtx4090", schema=1)
    del doc["package_sha256"]
    _write(tmp_path / "receipts", "old.json", doc)
    res = _seal_lane(tmp_path_factory, tmp_path, tmp_path / "receipts")
    assert res.code == 4, res.text
    assert 'old.json: schema: a schema 1 receipt binds no package: add "package_sha256"' in res.err
    assert "SHA256SUMS" in res.err and '"schema": 2' in res.err
    assert not (tmp_path / "out").exists()


def test_receipt_missing_a_binding_field_is_an_input_error(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    doc = receipt("rtx4090", "0" * 64, "1" * 64)
    del doc["config_sha256"]
    _write(tmp_path / "receipts", "r.json", doc)
    res = _seal_lane(tmp_path_factory, tmp_path, tmp_path / "receipts")
    assert res.code == 4, res.text
    assert "r.json: config_sha256: missing" in res.err


def test_failed_gate_leaves_the_set_unqualified(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A failed gate in any receipt: the set is sealed ``unqualified``, the ledger shows the failure,
    and verify says so (``--require-qualified`` exits 5)."""
    draft = release_out(tmp_path_factory) / "rtx4090"
    _write(tmp_path / "receipts" / "rtx4090", "run-1.json", draft_receipt(draft))
    _write(
        tmp_path / "receipts" / "rtx4090",
        "run-2.json",
        draft_receipt(draft, gates={"G1": "pass", "G15": "fail", "G22": "not_applicable"}),
    )
    ok(_seal_lane(tmp_path_factory, tmp_path, tmp_path / "receipts"))
    set_dir = tmp_path / "out" / "rtx4090"
    doc = _qualification(set_dir)
    assert doc["status"] == "unqualified"
    assert doc["gates"] == {
        "merged": {"G1": "pass", "G2": "pass", "G15": "fail", "G22": "not_applicable"},
        "counts": {"pass": 2, "fail": 1, "not_applicable": 1},
        "failed": ["G15"],
    }
    res = cli("--json", "verify", set_dir)
    assert res.code == 0, res.text
    assert json.loads(res.out)["qualification"] == "unqualified"
    res = cli("verify", set_dir, "--require-qualified")
    assert res.code == 5, res.text


def test_scratch_receipt_without_equivalence_cannot_qualify(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A port-only scratch run names its own config and package; without equivalence evidence it
    cannot qualify the public package (exit 5, naming scratch.equivalence)."""
    doc = draft_receipt(
        release_out(tmp_path_factory) / "rtx4090",
        config_sha256="ab" * 32,
        package_sha256="cd" * 32,
        scratch={"variant": "port-only"},
    )
    _write(tmp_path / "receipts" / "rtx4090", "scratch.json", doc)
    res = _seal_lane(tmp_path_factory, tmp_path, tmp_path / "receipts")
    assert res.code == 5, res.text
    assert "scratch.json: scratch.equivalence: a scratch run (port-only)" in res.err
    assert not (tmp_path / "out").exists()


def test_scratch_receipt_naming_the_public_bytes_is_refused(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    doc = draft_receipt(release_out(tmp_path_factory) / "rtx4090", scratch={"variant": "port-only"})
    _write(tmp_path / "receipts" / "rtx4090", "scratch.json", doc)
    res = _seal_lane(tmp_path_factory, tmp_path, tmp_path / "receipts")
    assert res.code == 5, res.text
    assert "scratch.json: scratch: names the public package's own bytes" in res.err


def test_scratch_receipt_with_equivalence_is_shown_as_such(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """With equivalence evidence naming the public bytes, the scratch run qualifies, and the record
    keeps it distinct: binding ``scratch_equivalence``, its own bytes, the evidence."""
    draft = release_out(tmp_path_factory) / "rtx4090"
    public = draft_receipt(draft)
    doc = _scratch_receipt(draft)
    _write(tmp_path / "receipts" / "rtx4090", "scratch.json", doc)
    ok(_seal_lane(tmp_path_factory, tmp_path, tmp_path / "receipts"))
    rec = _qualification(tmp_path / "out" / "rtx4090")
    assert rec["status"] == "qualified"
    (entry,) = rec["receipts"]
    assert entry["binding"] == "scratch_equivalence"
    assert entry["bound"]["package_sha256"] == "cd" * 32 and entry["bound"]["config_sha256"] == "ab" * 32
    assert entry["scratch"] == doc["scratch"]
    assert entry["scratch"]["equivalence"]["package_sha256"] == public["package_sha256"]
    assert rec["bound_to"]["package_sha256"] == public["package_sha256"]
    res = cli("verify", tmp_path / "out" / "rtx4090", "--require-qualified")
    assert res.code == 0, res.text
    # No run installed these very bytes: the verdict says so (hostile review of issue 8).
    assert "OK (qualified by scratch equivalence only: 2 pass, 0 fail, 1 not applicable; " in res.out
    doc = json.loads(cli("--json", "verify", tmp_path / "out" / "rtx4090").out)
    assert doc["bindings"] == {"public": 0, "scratch_equivalence": 1}


def test_scratch_equivalence_naming_other_public_bytes_is_refused(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    doc = _scratch_receipt(release_out(tmp_path_factory) / "rtx4090", package_sha256="ef" * 32)
    _write(tmp_path / "receipts" / "rtx4090", "scratch.json", doc)
    res = _seal_lane(tmp_path_factory, tmp_path, tmp_path / "receipts")
    assert res.code == 5, res.text
    assert "scratch.json: scratch.equivalence.package_sha256: names" in res.err


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"notes": "key " + "a1" * 32}, "notes"),
        ({"measurements": {"auth": "Bearer abcdefghijklmnopqrstuvwxyz012345"}}, "measurements.auth"),
        ({"notes": "pushed with ghp_" + "A" * 36}, "notes"),
        ({"notes": "token=hunter2hunter2"}, "notes"),
        ({"notes": "hf_" + "b" * 34}, "notes"),
        ({"measurements": {"log": "C:\\Users\\alice\\ninfer\\log.txt"}}, "measurements.log"),
        ({"measurements": {"log": "c:/users/bob/x"}}, "measurements.log"),
        ({"notes": "ran from /home/carol/ninfer"}, "notes"),
        ({"measurements": {"password": 1}}, "measurements.password"),
    ],
)
def test_receipt_holding_a_secret_or_user_path_is_refused(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, override: dict[str, Any], field: str
) -> None:
    """Receipts are mirrored byte for byte into a public asset: secret- or user-path-shaped values
    are refused (exit 4) naming the field, and the value itself is never echoed."""
    doc = draft_receipt(release_out(tmp_path_factory) / "rtx4090", **override)
    _write(tmp_path / "receipts", "run.json", doc)
    res = _seal_lane(tmp_path_factory, tmp_path, tmp_path / "receipts")
    assert res.code == 4, res.text
    assert f"run.json: {field}: " in res.err and "receipts are public" in res.err
    for value in ("a1" * 32, "hunter2", "alice", "carol", "A" * 36):
        assert value not in res.err
    assert not (tmp_path / "out").exists()


def test_release_instance_id_changes_with_the_bytes(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """DESIGN.md §4: the release-instance id (and so the checkpoint directory) changes whenever the
    component's bytes do -- here a rebuild under another source-date epoch."""
    out = tmp_path / "out"
    ok(
        cli(
            "build", "lane", "rtx4090", "--release", RELEASE, "--inputs", samples(tmp_path_factory),
            "--out", out, env={"SOURCE_DATE_EPOCH": OTHER_EPOCH},
        )
    )  # fmt: skip
    s = stem("rtx4090")
    first = json.loads((release_out(tmp_path_factory) / "rtx4090" / f"{s}.route.json").read_bytes())
    second = json.loads((out / "rtx4090" / f"{s}.route.json").read_bytes())
    assert first["package"]["sha256"] != second["package"]["sha256"]
    assert first["release_instance_id"] != second["release_instance_id"]
    for doc in (first, second):
        assert doc["release_instance_id"] == f"{doc['component_tag']}-{doc['package']['sha256'][:16]}"
        ckpt = f"cache/{doc['release_instance_id']}/session-checkpoints-v3"  # the release notes' form
        data_root = doc["install"]["data_root"]
        assert doc["install"]["checkpoint_dir"] == data_root + "\\" + ckpt.replace("/", "\\")


def test_failure_in_a_later_lane_leaves_nothing(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``build release`` seals rtx4090, then a receipt of rtx3090 names other bytes: exit 5, and
    neither ``--out`` nor any staging directory is left beside it (OUT appears complete or not at all)."""
    receipts = tmp_path / "receipts"
    drafts = release_out(tmp_path_factory)
    _write(receipts / "rtx4090", "run-1.json", draft_receipt(drafts / "rtx4090"))
    _write(receipts / "rtx3090", "run-1.json", draft_receipt(drafts / "rtx3090", config_sha256="cd" * 32))
    work = tmp_path / "work"
    work.mkdir()
    res = cli(
        "build", "release", RELEASE, "--inputs", samples(tmp_path_factory), "--out", work / "out",
        "--receipts", receipts, "--offline",
    )  # fmt: skip
    assert res.code == 5, res.text
    assert "rtx3090" in res.err and "config_sha256" in res.err
    assert list(work.iterdir()) == []


def test_receipt_template_round_trips_through_parse(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``receipt_template`` (what ``receipt new`` builds on) names the draft's lane, source, profile,
    config and package; ``Receipt.parse(to_bytes())`` gives the same record back, bytes stable."""
    from ninfer_release.releases import Receipt, receipt_template

    draft = release_out(tmp_path_factory) / "rtx4090"
    tmpl = receipt_template(draft)
    entry = release_manifest(tmp_path_factory)["lanes"]["rtx4090"]
    assert (tmpl.lane, tmpl.source_commit, tmpl.profile_id) == (
        "rtx4090",
        entry["source_commit"],
        entry["profile_id"],
    )
    assert (tmpl.config_sha256, tmpl.package_sha256) == (entry["config"]["sha256"], package_sha256(entry))
    data = tmpl.to_bytes()
    assert Receipt.parse(data, source="t.json") == tmpl
    assert Receipt.parse(data, source="t.json").to_bytes() == data
    assert data.endswith(b"}\n") and json.loads(data)["schema"] == 2
