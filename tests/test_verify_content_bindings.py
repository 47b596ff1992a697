"""What the records state is what the config holds (second hostile review, 2026-12-04): a
re-sealed config with another model SHA-256, more engine args or a ``[debug]`` section, a profile
with another component tag or model, and a provenance binding other config bytes each verified
OK in both verifiers, because only digests and a few identity fields were compared."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_support import TAGS, release_out, stem
from ninfer_release.releases import _standalone_verifier as standalone
from ninfer_release.releases import _verify
from reseal_support import ORDER, _propagate, both_fail, both_verdicts, members_of, rebuild

LANE = "rtx4090"
S = stem(LANE)


def test_both_verifiers_hold_one_config_table() -> None:
    assert _verify.CONFIG_FROM_PROFILE == standalone.CONFIG_FROM_PROFILE
    assert _verify.CONFIG_FROM_LAYOUT == standalone.CONFIG_FROM_LAYOUT


@pytest.mark.parametrize("lane", ["rtx4090", "rtx3090"])
def test_the_table_names_every_key_the_template_renders(
    tmp_path_factory: pytest.TempPathFactory, lane: str
) -> None:
    import tomllib

    cfg = tomllib.loads((release_out(tmp_path_factory) / lane / f"{stem(lane)}.config.toml").read_text())
    allowed = {k for k, _ in _verify.CONFIG_FROM_PROFILE} | set(_verify.CONFIG_FROM_LAYOUT)
    assert set(_verify._leaves(cfg)) <= allowed
    profile = json.loads((release_out(tmp_path_factory) / lane / f"{stem(lane)}.profile.json").read_bytes())
    for key, field_path in _verify.CONFIG_FROM_PROFILE:  # left out exactly when the profile has None
        assert (_verify._dotted(cfg, key) is None) == (_verify._dotted(profile, field_path) is None), key


def _resealed(
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    *,
    config: Callable[[str], str] = lambda t: t,
    profile: Callable[[dict[str, Any]], None] = lambda d: None,
) -> Path:
    """The sample set with its config text and profile record edited (the zip's copies too) and
    every binding re-sealed."""
    d = tmp_path / "set"
    shutil.copytree(release_out(tmp_path_factory) / LANE, d)
    old_cfg = (d / f"{S}.config.toml").read_bytes()
    new_cfg = config(old_cfg.decode()).encode()
    text = (d / f"{S}.profile.json").read_text()
    text = text.replace(hashlib.sha256(old_cfg).hexdigest(), hashlib.sha256(new_cfg).hexdigest())
    doc = json.loads(text)
    profile(doc)
    new_profile = json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n"
    members = [
        (n, new_cfg if n == "config/ninfer.toml" else new_profile if n.startswith("profile/") else b)
        for n, b in members_of(d, S)
    ]
    rebuild(d, S, TAGS[LANE], members, entries={"config.toml": new_cfg, "profile.json": new_profile})
    return d


def _model_sha(doc: dict[str, Any]) -> None:
    doc["model"]["sha256"] = "0" * 64


def _component_tag(doc: dict[str, Any]) -> None:
    doc["component_tag"] = "v0.0.0"


CASES: dict[str, tuple[dict[str, Any], str]] = {
    "control": ({}, ""),
    "config-model-sha256": (
        {"config": lambda t: t.replace('sha256 = "81f924d4', 'sha256 = "00000000')},
        "model.sha256 is '00000000",
    ),
    "config-engine-args": (
        {"config": lambda t: t.replace('args = ["--lm-head-draft"', 'args = ["--evil", "--lm-head-draft"')},
        "engine.args is ['--evil'",
    ),
    "config-cuda-arch": (
        {"config": lambda t: t.replace('cuda_arch = "sm_89"', 'cuda_arch = "sm_90"')},
        "gpu.cuda_arch is 'sm_90'",
    ),
    "config-debug-section": (
        {"config": lambda t: t + "\n[debug]\nallow_remote = true\n"},
        "debug.allow_remote is no key the config's template writes",
    ),
    "profile-model-sha256": ({"profile": _model_sha}, "model.json: sha256 is not"),
    "profile-component-tag": ({"profile": _component_tag}, "component_tag"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_resealed_config_or_profile_that_says_otherwise_fails_both_verifiers(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, case: str
) -> None:
    edits, says = CASES[case]
    d = _resealed(tmp_path_factory, tmp_path, **edits)
    if not says:  # the control: the editing and re-sealing alone leave nothing to find
        (ours, ours_err), (alone, alone_err) = both_verdicts(d, tmp_path)
        assert (ours, alone) == (0, 0), (ours_err, alone_err)
        return
    both_fail(d, tmp_path, says)


@pytest.mark.parametrize("key", ["config_bytes_sha256", "model_sha256"])
def test_a_provenance_binding_other_config_or_model_bytes_fails_both_verifiers(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, key: str
) -> None:
    d = tmp_path / "set"
    shutil.copytree(release_out(tmp_path_factory) / LANE, d)
    before = {ext: (d / f"{S}.{ext}").read_bytes() for ext in ORDER}
    path = d / f"{S}.provenance.json"
    doc = json.loads(path.read_bytes())
    doc["predicate"]["buildDefinition"]["internalParameters"][key] = "1" * 64
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    _propagate(d, S, TAGS[LANE], before)
    both_fail(d, tmp_path, f"internalParameters.{key} is not")
