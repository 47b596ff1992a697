"""The built v0.13.1 release carries the reference facts (shared/reference/release-v0.13.1.md),
read back from the assets a consumer downloads -- not from the definition that produced them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flow_support import SOURCE_COMMIT, TAGS, release_manifest, release_out, stem

MODEL: dict[str, object] = {
    "revision": "1cbd84e7221e51186bd7f093a149912d2489625b",
    "sha256": "81f924d440c27261d820c19a9f8d45794c5aee410f8a68bd358133fa8c0375da",
    "size": 20_437_521_664,
}
LANE_FACTS: dict[str, dict[str, object]] = {
    "rtx4090": {"cuda_arch": "sm_89", "host_memory_floor_mib": 32_768, "gpu_power_limit_w": None},
    "rtx3090": {"cuda_arch": "sm_86", "host_memory_floor_mib": None, "gpu_power_limit_w": 300},
}


def _record(factory: pytest.TempPathFactory, lane: str, suffix: str) -> dict[str, Any]:
    path: Path = release_out(factory) / lane / f"{stem(lane)}{suffix}"
    doc = json.loads(path.read_bytes())
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize("lane", ["rtx4090", "rtx3090"])
def test_route_block_states_the_lane_contract(tmp_path_factory: pytest.TempPathFactory, lane: str) -> None:
    route = _record(tmp_path_factory, lane, ".route.json")
    hw = route["hardware"]
    assert {k: hw[k] for k in LANE_FACTS[lane]} == LANE_FACTS[lane]
    assert hw["cuda_version"] == "13.3"
    # Read from the shipped cudart DLL (the pinned nvidia-cuda-runtime 13.3.29 wheel), not assumed.
    assert hw["cuda_runtime_version"] == "13.3.29"
    assert route["endpoint"] == {"auth": "bearer", "host": "127.0.0.1", "loopback_only": True, "port": 18082}
    assert route["bearer_key"]["min_bytes"] == 32 and route["bearer_key"]["generated_chars"] == 64
    assert route["bearer_key"]["stored_in_assets"] is False
    assert {k: route["model"][k] for k in MODEL} == MODEL
    assert route["model"]["store_as"] == "qwen3_8_27b-v3.ninfer"
    assert route["package"]["url"] == (
        f"https://github.com/alphastorm/omp-ninfer/releases/download/{TAGS[lane]}/{stem(lane)}.zip"
    )


@pytest.mark.parametrize("lane", ["rtx4090", "rtx3090"])
def test_component_manifest_states_source_and_lineage(
    tmp_path_factory: pytest.TempPathFactory, lane: str
) -> None:
    man = _record(tmp_path_factory, lane, ".manifest.json")
    assert man["component_tag"] == TAGS[lane] and man["source_commit"] == SOURCE_COMMIT
    assert man["candidate_commit"] == "92dfb13285994f1527711cf464847f07e44613dd"
    assert man["upstream_base"] == "64d10fbf9f8e6bfc79ab0570b94674c5b9997929"
    # First of their lineage: no rollback, zero directions (never an invented predecessor).
    assert man["rollback"] == {"state": "not_applicable", "directions": 0}
    assert man["config"]["hash_kind"] == "bytes"
    model = _record(tmp_path_factory, lane, ".model.json")
    assert {k: model[k] for k in MODEL} == MODEL and model["binding"] == "components.model"


def test_release_manifest_binds_the_model_once_and_carries_the_5090(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    doc = release_manifest(tmp_path_factory)
    assert doc["version"] == "v0.13.1" and doc["state"] == "candidate"
    assert doc["published_product_version"] == "v0.13.0"
    assert {k: doc["components"]["model"][k] for k in MODEL} == MODEL
    assert "native_model" not in doc["components"]
    carried = doc["lanes"]["rtx5090"]
    assert carried["mode"] == "carry" and carried["source_commit"] == "6d4d0a05"
    assert (
        carried["image_digest"] == "sha256:5d10a998a42ba927dd8bbe54d928128e0d97ec7bd55d8dec2846d8681f79a4cd"
    )
    assert carried["config"]["hash_kind"] == "semantic"
    assert carried["verification"] == "unverified"  # built --offline: honest about not re-checking
    assert {s["tag"] for s in doc["superseded"]} == {"v0.7.0-qwen38-4090-beta.1", "v0.7.0-qwen38-3090-beta.1"}
