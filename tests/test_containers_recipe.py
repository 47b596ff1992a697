"""Image recipes: the repo's 5090 recipe, and every problem of a bad recipe reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from containers_support import RECIPE, small_recipe
from ninfer_release.containers import load_recipe, parse_recipe
from ninfer_release.errors import ExitCode, InputError

DIGEST = "sha256:" + "0" * 64


def test_repo_recipe_declares_the_5090_lane() -> None:
    r = load_recipe(RECIPE)
    assert r.lane == "rtx5090"
    assert r.profile == "qwen38-5090-v0.13.0"
    assert r.config_binding == "semantic"
    assert r.base_digest.startswith("sha256:") and len(r.base_digest) == 71
    assert r.ports == (18082,)
    assert r.checkpoint_mount == "/checkpoints-v013"
    assert r.user == "10001:10001"
    assert r.entrypoint == ("/opt/ninfer/bin/ninfer-server",)
    assert [layer.name for layer in r.layers] == ["runtime", "server", "config"]
    assert r.rendered_kinds == frozenset({"config", "profile"})
    assert {s for _, s in r.staged_sources} == {"bin/ninfer-server", "runtime/ninfer-runtime.tar.gz"}
    assert r.smoke is not None and r.smoke.args == ("--self-test",)


def test_bad_recipe_reports_every_problem_with_file_and_field() -> None:
    data = small_recipe(
        "latest",
        base={"digest": "ghcr.io/x/base:latest"},
        user="0",
        config_binding="bytes",
        ports=[18082, 70000],
        labels={"org.opencontainers.image.version": "v1"},
        layers=[
            {
                "name": "engine",
                "entries": [
                    {"staged": "engine.cfg", "dest": "../etc/engine.cfg"},
                    {"staged": "x", "dest": "opt/x", "mode": 755},
                ],
            }
        ],
    )
    with pytest.raises(InputError) as info:
        parse_recipe(data, file="containers/bad.yaml")
    assert info.value.exit_code == ExitCode.INPUT
    fields = {p.field for p in info.value.problems}
    assert {
        "base.digest",
        "user",
        "config_binding",
        "ports[1]",
        "labels.org.opencontainers.image.version",
        "layers[0].entries[0].dest",
        "layers[0].entries[1].mode",
    } <= fields
    assert all(p.file == "containers/bad.yaml" for p in info.value.problems)
    by_field = {p.field: p.message for p in info.value.problems}
    assert "not a tag" in by_field["base.digest"]
    assert "escapes the image root" in by_field["layers[0].entries[0].dest"]


def test_unknown_key_and_entry_kind() -> None:
    data = small_recipe(DIGEST, layerz=[])
    data["layers"] = [{"name": "x", "entries": [{"dest": "opt/x"}]}]
    with pytest.raises(InputError) as info:
        parse_recipe(data, file="r.yaml")
    text = str(info.value)
    assert "unknown keys ['layerz']" in text
    assert "needs exactly one of staged/archive/rendered/dir" in text


def test_recipe_yaml_loaded_through_profiles_loader(tmp_path: Path) -> None:
    """Invalid YAML in a recipe is an input error (exit 4), named by file and line."""
    p = tmp_path / "r.yaml"
    p.write_text("schema: 1\nlane: [\n")
    with pytest.raises(InputError) as info:
        load_recipe(p)
    assert str(p) in str(info.value)


def test_checkpoint_mount_must_be_a_layer_directory() -> None:
    """Issue 8 §4: a mount no ``dir:`` entry creates would be made root-owned by the engine at run
    time, unwritable by the image user; the recipe is refused naming the field."""
    data = small_recipe(DIGEST)
    data["layers"][0]["entries"] = [e for e in data["layers"][0]["entries"] if "dir" not in e]
    with pytest.raises(InputError) as info:
        parse_recipe(data, file="containers/x.yaml")
    assert [p.field for p in info.value.problems] == ["checkpoint_mount"]
    assert "root-owned" in info.value.problems[0].message
    assert parse_recipe(small_recipe(DIGEST), file="containers/x.yaml").owner == (10001, 10001)


def test_smoke_checkpoint_probe_is_a_plain_name() -> None:
    data = small_recipe(DIGEST, smoke={"args": ["--self-test"], "expect": "ok", "checkpoint_probe": "../x"})
    with pytest.raises(InputError) as info:
        parse_recipe(data, file="containers/x.yaml")
    assert [p.field for p in info.value.problems] == ["smoke.checkpoint_probe"]
    assert load_recipe(RECIPE).smoke is not None
    assert load_recipe(RECIPE).smoke.checkpoint_probe == "self-test.ckpt"  # type: ignore[union-attr]
