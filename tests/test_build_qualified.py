"""Qualification receipts at build time (DESIGN.md §3, docs/staged-inputs.md): receipts bind exact
bytes, qualifying a set changes only its qualification records, and evidence is never relabelled.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from flow_support import (
    NATIVE_LANES,
    OTHER_EPOCH,
    RELEASE,
    cli,
    ok,
    qualified_out,
    receipt,
    release_manifest,
    release_out,
    samples,
    stem,
    tree_digests,
)


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
    doc = json.loads((qualified_out(tmp_path_factory) / lane / f"{s}.qualification.json").read_bytes())
    assert doc["status"] == "qualified"
    assert [r["name"] for r in doc["receipts"]] == ["run-1.json"]
    config = release_manifest(tmp_path_factory)["lanes"][lane]["config"]["sha256"]
    assert doc["bound_to"]["config_bytes_sha256"] == config
    qm = json.loads((qualified_out(tmp_path_factory) / "release-manifest.json").read_bytes())
    assert qm["lanes"][lane]["qualification"] == "qualified"
    assert (
        qm["lanes"][lane]["release_instance_id"]
        == release_manifest(tmp_path_factory)["lanes"][lane]["release_instance_id"]
    )


def test_receipt_digest_is_recorded(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The qualification binding names each receipt by SHA-256 of its exact bytes."""
    out = qualified_out(tmp_path_factory)
    receipts = out.parent / "receipts" / "rtx4090" / "run-1.json"
    doc = json.loads((out / "rtx4090" / f"{stem('rtx4090')}.qualification.json").read_bytes())
    assert doc["receipts"][0]["sha256"] == hashlib.sha256(receipts.read_bytes()).hexdigest()
    assert doc["receipts"][0]["measurements"] == {"c1_decode_tok_s": 150.94}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("config_sha256", "ab" * 32),
        ("source_commit", "eecb437f" + "0" * 32),
        ("profile_id", "qwen38-4090-native-v0.7.0-beta.1"),
    ],
)
def test_receipt_naming_other_bytes_is_refused(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, field: str, value: str
) -> None:
    """A receipt for this lane naming another config, source commit or profile: exit 5, the receipt
    file and field named; the output directory is not created (DESIGN.md §3)."""
    config = release_manifest(tmp_path_factory)["lanes"]["rtx4090"]["config"]["sha256"]
    (tmp_path / "receipts").mkdir()
    (tmp_path / "receipts" / "beta1.json").write_text(
        json.dumps({**receipt("rtx4090", config), field: value})
    )
    out = tmp_path / "out"
    res = cli(
        "build", "release", RELEASE, "--inputs", samples(tmp_path_factory), "--out", out,
        "--receipts", tmp_path / "receipts", "--offline",
    )  # fmt: skip
    assert res.code == 5, res.text
    assert "beta1.json" in res.err and f"{field}: names {value!r}" in res.err
    assert "never relabelled" in res.err
    assert not out.exists()


def test_receipt_missing_a_binding_field_is_an_input_error(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    doc = receipt("rtx4090", "0" * 64)
    del doc["config_sha256"]
    (tmp_path / "receipts").mkdir()
    (tmp_path / "receipts" / "r.json").write_text(json.dumps(doc))
    res = cli(
        "build", "lane", "rtx4090", "--release", RELEASE, "--inputs", samples(tmp_path_factory),
        "--out", tmp_path / "out", "--receipts", tmp_path / "receipts",
    )  # fmt: skip
    assert res.code == 4, res.text
    assert "r.json: config_sha256: missing" in res.err


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
        assert (
            doc["install"]["checkpoint_dir"] == f"cache/{doc['release_instance_id']}/session-checkpoints-v3"
        )


def test_failure_in_a_later_lane_leaves_nothing(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``build release`` seals rtx4090, then a receipt of rtx3090 names other bytes: exit 5, and
    neither ``--out`` nor any staging directory is left beside it (OUT appears complete or not at all)."""
    lanes = release_manifest(tmp_path_factory)["lanes"]
    receipts = tmp_path / "receipts"
    for lane, config in (("rtx4090", lanes["rtx4090"]["config"]["sha256"]), ("rtx3090", "cd" * 32)):
        (receipts / lane).mkdir(parents=True)
        (receipts / lane / "run-1.json").write_text(json.dumps(receipt(lane, config)))
    work = tmp_path / "work"
    work.mkdir()
    res = cli(
        "build", "release", RELEASE, "--inputs", samples(tmp_path_factory), "--out", work / "out",
        "--receipts", receipts, "--offline",
    )  # fmt: skip
    assert res.code == 5, res.text
    assert "rtx3090" in res.err and "config_sha256" in res.err
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("typo.json", {"lane": "rtx4900"}, "lane: 'rtx4900' is not a lane of this release"),
        ("list.json", [1, 2], "top level must be a JSON object"),
    ],
)
def test_receipt_for_no_lane_of_the_release_is_an_input_error(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, name: str, content: object, message: str
) -> None:
    """A misspelt lane (or a receipt that is not an object) never silently leaves a set unqualified."""
    (tmp_path / "receipts").mkdir()
    (tmp_path / "receipts" / name).write_text(json.dumps(content))
    res = cli(
        "build", "lane", "rtx4090", "--release", RELEASE, "--inputs", samples(tmp_path_factory),
        "--out", tmp_path / "out", "--receipts", tmp_path / "receipts",
    )  # fmt: skip
    assert res.code == 4, res.text
    assert f"{name}: {message}" in res.err
    assert "Traceback" not in res.err
    assert not (tmp_path / "out").exists()
