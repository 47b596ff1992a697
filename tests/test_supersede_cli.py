"""`ninfer-release supersede MANIFEST --to STORE`: the definition's superseded tags (beta.1) are
recorded, kept, never reused (DESIGN.md §8; reference "Superseded cut")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO
from ninfer_release.releases import open_publisher

MANIFEST = str(REPO / "manifests" / "v0.13.1.yaml")
OLD = ["v0.7.0-qwen38-4090-beta.1", "v0.7.0-qwen38-3090-beta.1"]


def _targets(tmp_path: Path, registry: str | None) -> str:
    if registry is None:
        return f"dir://{tmp_path / 'store'}"
    return f"oci://{registry}/omp-ninfer/supersede-{tmp_path.name.lower()[-12:].strip('_-') or 'x'}"


@pytest.mark.parametrize("kind", ["dir", "oci"])
def test_supersede_records_every_old_tag_once(run_cli, tmp_path: Path, kind: str, request) -> None:
    registry = request.getfixturevalue("registry") if kind == "oci" else None
    target = _targets(tmp_path, registry)
    code, out, err = run_cli("--json", "supersede", MANIFEST, "--to", target)
    assert code == 0, err
    doc = json.loads(out)
    assert [(s["tag"], s["status"]) for s in doc["superseded"]] == [(t, "published") for t in OLD]
    # Idempotent: the same markers again.
    code, out, _ = run_cli("--json", "supersede", MANIFEST, "--to", target)
    assert code == 0
    assert {s["status"] for s in json.loads(out)["superseded"]} == {"already_published"}
    publisher = open_publisher(target)
    for tag in OLD:
        assert publisher.resolve(f"{tag}.superseded") is not None


def test_supersede_bad_target_is_input_error(run_cli) -> None:
    code, _, err = run_cli("supersede", MANIFEST, "--to", "oci://127.0.0.1:0/x")
    assert code == 4
    assert "Traceback" not in err
