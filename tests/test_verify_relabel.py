"""Relabelling one fact of a set and re-sealing every digest around it is caught by ``verify``
(DESIGN.md §3: evidence is never relabelled; §4: the records bind each other).

The forger here edits one field of one record, then updates everything a digest covers: the
provenance subjects (entries 1-7), the component manifest's entries (1-9) and ``SHA256SUMS``. Only
the cross-record identity check can tell.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flow_support import cli, release_out, reseal, stem

LANE = "rtx4090"
S = stem(LANE)
PROGRAM_FILES = "C:\\Program Files\\OMP NInfer\\v0.7.0-qwen38-4090-beta.2"


def _dump(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _rebind(set_dir: Path) -> None:
    """Make every digest in the set agree with the files as they now are."""

    def sha(name: str) -> str:
        return hashlib.sha256((set_dir / name).read_bytes()).hexdigest()

    prov_path = set_dir / f"{S}.provenance.json"
    prov = json.loads(prov_path.read_bytes())
    for subject in prov["subject"]:
        subject["digest"]["sha256"] = sha(subject["name"])
    prov_path.write_bytes(_dump(prov))
    man_path = set_dir / f"{S}.manifest.json"
    man = json.loads(man_path.read_bytes())
    for entry in man["entries"]:
        entry["sha256"] = sha(entry["name"])
        entry["size"] = (set_dir / entry["name"]).stat().st_size
    man_path.write_bytes(_dump(man))
    reseal(set_dir)


def _relabel(set_dir: Path, suffix: str, path: tuple[str, ...], value: Any) -> None:
    record = set_dir / f"{S}{suffix}"
    doc = json.loads(record.read_bytes())
    cur = doc
    for key in path[:-1]:
        cur = cur[key]
    assert cur[path[-1]] != value
    cur[path[-1]] = value
    record.write_bytes(_dump(doc))
    _rebind(set_dir)


@pytest.fixture
def copy(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    dst = tmp_path / LANE
    shutil.copytree(release_out(tmp_path_factory) / LANE, dst)
    return dst


def test_rebinding_alone_keeps_the_set_valid(copy: Path) -> None:
    """Control: re-binding an unchanged set changes nothing a verifier could object to."""
    _rebind(copy)
    assert cli("verify", copy).code == 0


@pytest.mark.parametrize(
    ("suffix", "path", "value", "named"),
    [
        (".manifest.json", ("qualification",), "qualified", ".qualification.json"),
        (".qualification.json", ("status",), "qualified", ".qualification.json"),
        (".manifest.json", ("component_tag",), "v0.7.0-qwen38-4090", ".manifest.json"),
        (".manifest.json", ("profile_id",), "qwen38-4090-native-v0.7.0-beta.1", ".profile.json"),
        (".manifest.json", ("source_commit",), "eecb437f" + "0" * 32, ".qualification.json"),
        (".manifest.json", ("lane",), "rtx3090", ".route.json"),
        (
            ".route.json",
            ("release_instance_id",),
            "v0.7.0-qwen38-4090-beta.2-0000000000000000",
            ".route.json",
        ),
        (".route.json", ("install", "checkpoint_dir"), "cache/x/session-checkpoints-v3", ".route.json"),
        # Issue 8 §3: the route's paths are where the config reads (the old route said secrets\ while
        # the config read bearer.key), and no writable path is under Program Files.
        (".route.json", ("install", "key_file"), PROGRAM_FILES + "\\bearer.key", ".route.json"),
        (".route.json", ("bearer_key", "file"), PROGRAM_FILES + "\\secrets\\bearer.key", ".route.json"),
        (".route.json", ("install", "data_root"), PROGRAM_FILES, ".route.json"),
        (".route.json", ("install", "model_path"), "models/qwen3_8_27b-v3.ninfer", ".route.json"),
        (".route.json", ("install", "config"), "C:\\ninfer.toml", ".route.json"),
        (
            ".qualification.json",
            ("bound_to", "profile_id"),
            "qwen38-3090-native-v0.7.0-beta.2",
            ".qualification.json",
        ),
        (
            ".provenance.json",
            ("predicate", "buildDefinition", "externalParameters", "release"),
            "v0.13.0",
            ".provenance.json",
        ),
    ],
)
def test_relabelled_fact_is_caught(
    copy: Path, suffix: str, path: tuple[str, ...], value: Any, named: str
) -> None:
    _relabel(copy, suffix, path, value)
    res = cli("verify", copy)
    assert res.code == 5, res.text
    lines = res.err.splitlines()
    assert any(line.startswith(f"error: {copy}: {S}{named}: ") for line in lines), lines
    assert not any("SHA-256 mismatch" in line for line in lines), lines


def test_relabelled_unqualified_set_cannot_be_published_as_qualified(copy: Path, tmp_path: Path) -> None:
    """The point of the check: ``unqualified`` relabelled ``qualified`` would otherwise be published
    without ``--draft``. It is refused (exit 7) and nothing is written to the store."""
    _relabel(copy, ".manifest.json", ("qualification",), "qualified")
    store = tmp_path / "store"
    res = cli("publish", copy, "--to", f"dir://{store}")
    assert res.code == 7, res.text
    assert "does not verify" in res.err and f"{S}.qualification.json" in res.err
    assert not (store / "index.json").exists()
