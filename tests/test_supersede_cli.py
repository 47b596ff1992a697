"""`ninfer-release supersede MANIFEST --to STORE...`: the definition's superseded tags (beta.1) are
recorded, kept, never reused (DESIGN.md §8; reference "Superseded cut") -- each lane's marker only in
that lane's store (issue 8 item 6): a store is a lane's when its repository (or directory) path ends
in the lane's ``publication_repository``; a directory store that is no lane's is shared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, RunCli
from flow_support import registry_namespace
from ninfer_release.releases import open_publisher

MANIFEST = str(REPO / "manifests" / "v0.13.1.yaml")
OLD = {"rtx4090": "v0.7.0-qwen38-4090-beta.1", "rtx3090": "v0.7.0-qwen38-3090-beta.1"}


def _lane_stores(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    """Per-lane stores ``…/omp-ninfer/<lane>``: registry repositories under a private namespace, or
    directory stores under ``tmp_path``."""
    if kind == "dir":
        return {lane: f"dir://{tmp_path / 'stores' / 'omp-ninfer' / lane}" for lane in OLD}
    registry = request.getfixturevalue("registry")
    ns = registry_namespace(request.getfixturevalue("tmp_path_factory"), f"supersede-{tmp_path.name[-12:]}")
    ns = ns.lower().replace("_", "-").strip("-")
    return {lane: f"oci://{registry}/{ns}/omp-ninfer/{lane}" for lane in OLD}


def _has_marker(store: str, tag: str) -> bool:
    return open_publisher(store).resolve(f"{tag}.superseded") is not None


def test_shared_directory_store_gets_every_marker_once(run_cli: RunCli, tmp_path: Path) -> None:
    """A directory store that is no lane's (README: both lanes publish to dir://store) is shared:
    both markers land in it; again, they answer already_published."""
    target = f"dir://{tmp_path / 'store'}"
    code, out, err = run_cli("--json", "supersede", MANIFEST, "--to", target)
    assert code == 0, err
    doc = json.loads(out)
    assert [(s["tag"], s["lane"], s["status"]) for s in doc["superseded"]] == [
        (OLD["rtx4090"], "rtx4090", "published"),
        (OLD["rtx3090"], "rtx3090", "published"),
    ]
    code, out, _ = run_cli("--json", "supersede", MANIFEST, "--to", target)
    assert code == 0
    assert {s["status"] for s in json.loads(out)["superseded"]} == {"already_published"}
    assert all(_has_marker(target, tag) for tag in OLD.values())


@pytest.mark.parametrize("kind", ["dir", "oci"])
def test_each_lanes_marker_lands_only_in_its_own_store(
    run_cli: RunCli, tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """With the per-lane stores of the README, the 3090 beta.1 marker goes to the 3090 store and the
    4090 one to the 4090 store -- never beside the other lane's sets."""
    stores = _lane_stores(kind, tmp_path, request)
    code, out, err = run_cli(
        "--json", "supersede", MANIFEST, "--to", stores["rtx4090"], "--to", stores["rtx3090"]
    )
    assert code == 0, err
    doc = json.loads(out)
    assert sorted((s["lane"], s["status"], s["ref"]) for s in doc["superseded"]) == sorted(
        (lane, "published", f"{stores[lane]}:{OLD[lane]}.superseded") for lane in OLD
    )
    for lane, store in stores.items():
        other = "rtx3090" if lane == "rtx4090" else "rtx4090"
        assert _has_marker(store, OLD[lane])
        assert not _has_marker(store, OLD[other])


def test_one_lane_store_gets_only_its_lanes_marker(run_cli: RunCli, tmp_path: Path) -> None:
    """One lane's store given: its marker is written, the other lane's is reported skipped (not
    written there)."""
    store = f"dir://{tmp_path / 'omp-ninfer' / 'rtx3090'}"
    code, out, err = run_cli("supersede", MANIFEST, "--to", store)
    assert code == 0, err
    assert f"published: {OLD['rtx3090']} superseded by v0.7.0-qwen38-3090-beta.2 ({store}:" in out
    assert f"skipped: {OLD['rtx4090']} (lane rtx4090: none of the stores given is its lane's)" in out
    assert _has_marker(store, OLD["rtx3090"]) and not _has_marker(store, OLD["rtx4090"])


def test_registry_repository_of_no_lane_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    """A registry repository that is no lane's publication repository: exit 7 naming it, nothing
    written (the registry is not even contacted)."""
    code, _, err = run_cli("supersede", MANIFEST, "--to", "oci://127.0.0.1:9/omp-ninfer/everything")
    assert code == 7, err
    assert (
        "oci://127.0.0.1:9/omp-ninfer/everything: target: repository omp-ninfer/everything is no lane's"
        in err
    )
    assert "rtx3090: omp-ninfer/rtx3090, rtx4090: omp-ninfer/rtx4090" in err
    assert "Traceback" not in err


def test_supersede_bad_target_is_input_error(run_cli: RunCli) -> None:
    code, _, err = run_cli("supersede", MANIFEST, "--to", "oci://127.0.0.1:0/x")
    assert code == 4
    assert "Traceback" not in err


def test_a_lane_store_named_through_dot_dot_or_a_link_is_still_that_lanes(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """``dir://…/omp-ninfer/rtx4090/../rtx3090`` and a symbolic link to ``omp-ninfer/rtx3090`` are
    the 3090 store, not a shared one: only the 3090 marker lands there (hostile review of issue 8)."""
    real = tmp_path / "omp-ninfer" / "rtx3090"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    for target in (f"dir://{tmp_path}/omp-ninfer/rtx4090/../rtx3090", f"dir://{tmp_path}/link/"):
        code, out, err = run_cli("--json", "supersede", MANIFEST, "--to", target)
        assert code == 0, err
        placed = [(s["tag"], s["status"]) for s in json.loads(out)["superseded"]]
        assert (OLD["rtx4090"], "skipped") in placed and (OLD["rtx3090"], "skipped") not in placed, placed
        assert _has_marker(f"dir://{real}", OLD["rtx3090"])
        assert not _has_marker(f"dir://{real}", OLD["rtx4090"])
