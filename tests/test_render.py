"""Config rendering: exact bytes, both hashes, the round-trip check, cases C42 and C43."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from conftest import RunCli, need_tool
from ninfer_release.atomic import write_bytes
from ninfer_release.errors import DefinitionError
from ninfer_release.profiles import (
    expected_config,
    load_profile,
    load_yaml_data,
    render_config,
    render_template,
    toml_literal,
)

REPO = Path(__file__).resolve().parent.parent
PROFILES = REPO / "profiles"
P4090 = PROFILES / "qwen38-4090-native-v0.7.0-beta.2.yaml"
P3090 = PROFILES / "qwen38-3090-native-v0.7.0-beta.2.yaml"
P5090 = PROFILES / "qwen38-5090-v0.13.0.yaml"

# The reference table (shared/reference/release-v0.13.1.md, "Native deployment profiles"), as
# TOML key path -> value in our config schema 4 layout.
REFERENCE = {
    P4090: {
        "profile_id": "qwen38-4090-native-v0.7.0-beta.2",
        "config_schema": 4,
        "model.context_tokens": 131072,
        "model.kv_capacity_tokens": 131072,
        "model.kv_cache_dtype": "int8",
        "model.vision": False,
        "model.file": "qwen3_8_27b-v3.ninfer",
        "model.sha256": "81f924d440c27261d820c19a9f8d45794c5aee410f8a68bd358133fa8c0375da",
        "speculation.mode": "mtp3",
        "speculation.lm_head_draft": True,
        "speculation.dflash2": False,
        "scheduler.concurrent_requests": 1,
        "scheduler.pending_timeout_ms": 30000,
        "scheduler.extra_device_state_slots": 2,
        "scheduler.prefill_chunk_tokens": 2048,
        "scheduler.admission_headroom_mib": 640,
        "scheduler.keep_warm_ms": 60000,
        "memory.shared_host_budget_bytes": 15506063360,
        "memory.shared_host_budget_mib": "14787.734375",
        "memory.host_memory_floor_mib": 32768,
        "gpu.cuda_arch": "sm_89",
        "server.host": "127.0.0.1",
        "server.port": 18082,
        "server.auth": "bearer",
        "checkpoint.dir_template": "cache/<release-instance-id>/session-checkpoints-v3",
        "checkpoint.schema": 3,
        "checkpoint.require_origin_auth": True,
    },
    P3090: {
        "profile_id": "qwen38-3090-native-v0.7.0-beta.2",
        "config_schema": 4,
        "model.context_tokens": 131072,
        "model.kv_capacity_tokens": 131072,
        "model.kv_cache_dtype": "int8",
        "model.vision": False,
        "speculation.mode": "mtp3",
        "speculation.lm_head_draft": True,
        "speculation.dflash2": False,
        "scheduler.concurrent_requests": 1,
        "scheduler.pending_timeout_ms": 30000,
        "scheduler.extra_device_state_slots": 4,
        "scheduler.prefill_chunk_tokens": 1024,
        "scheduler.admission_headroom_mib": 768,
        "scheduler.keep_warm_ms": 0,
        "memory.shared_host_budget_bytes": 12284837888,
        "memory.shared_host_budget_mib": "11715.734375",
        "gpu.cuda_arch": "sm_86",
        "gpu.power_limit_w": 300,
        "server.host": "127.0.0.1",
        "server.port": 18082,
        "server.auth": "bearer",
        "checkpoint.dir_template": "cache/<release-instance-id>/session-checkpoints-v3",
        "checkpoint.schema": 3,
        "checkpoint.require_origin_auth": True,
    },
}
FLAGS = {
    P4090: [
        "--lm-head-draft",
        "--device-state-slots",
        "2",
        "--admission-headroom-mib",
        "640",
        "--session-checkpoint-require-origin-auth",
    ],
    P3090: [
        "--lm-head-draft",
        "--device-state-slots",
        "4",
        "--admission-headroom-mib",
        "768",
        "--session-checkpoint-require-origin-auth",
    ],
}


def _get(doc: Mapping[str, Any], dotted: str) -> Any:
    """The value at ``a.b.c`` of a parsed JSON/TOML document (any JSON type)."""
    for part in dotted.split("."):
        doc = doc[part]
    return doc


# --- C42 / C43 ---------------------------------------------------------------------------------


def test_c42_trailing_newline_is_kept(tmp_path: Path) -> None:
    """C42: ``port={{ port }}`` + LF with profile ``port: 8080`` renders ``port=8080\\n``."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "engine.cfg.j2").write_bytes(b"port={{ port }}\n")
    (tmp_path / "profile.yaml").write_bytes(b"port: 8080\n")
    values = load_yaml_data(tmp_path / "profile.yaml")
    out = render_template(templates / "engine.cfg.j2", values)
    assert out.data == b"port=8080\n"
    assert out.bytes_sha256 == "732322f37243042be9e5af21441ccfeed748f1cc2dacce6a9cc8cf31b4207083"
    assert not hashlib.sha256(b"port=8080").hexdigest().startswith(out.bytes_sha256[:8])  # 80e85c8b…


def test_c43_crlf_template_renders_lf_bytes(tmp_path: Path) -> None:
    """C43: a CRLF checkout of the template renders to LF bytes, hash of the bytes written."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "engine.cfg.j2").write_bytes(b"listen={{ host }}:{{ port }}\r\nworkers={{ workers }}\r\n")
    (tmp_path / "profile.yaml").write_bytes(b"host: 0.0.0.0\nport: 8080\nworkers: 4\n")
    out = render_template(templates / "engine.cfg.j2", load_yaml_data(tmp_path / "profile.yaml"))
    assert out.data == b"listen=0.0.0.0:8080\nworkers=4\n"
    written = tmp_path / "engine.cfg"
    write_bytes(written, out.data)
    assert written.read_bytes() == b"listen=0.0.0.0:8080\nworkers=4\n"
    expected = "997028499c62e15bc143e271fbb5b1a0eec6de4a60f21e5b7c0f230b6ae152ac"
    assert out.bytes_sha256 == expected == hashlib.sha256(written.read_bytes()).hexdigest()
    crlf = hashlib.sha256(b"listen=0.0.0.0:8080\r\nworkers=4\r\n").hexdigest()
    assert crlf.startswith("c8b36baf") and crlf != out.bytes_sha256
    # The LF original renders to the very same bytes.
    (templates / "lf.cfg.j2").write_bytes(b"listen={{ host }}:{{ port }}\nworkers={{ workers }}\n")
    assert (
        render_template(templates / "lf.cfg.j2", load_yaml_data(tmp_path / "profile.yaml")).data == out.data
    )


def test_c43_cr_inside_a_value_is_refused(tmp_path: Path) -> None:
    """C43 note: Jinja passes a CR in a *value* through; we refuse it, naming the value."""
    (tmp_path / "engine.cfg.j2").write_bytes(b"listen={{ host }}:{{ port }}\n")
    with pytest.raises(DefinitionError) as err:
        render_template(tmp_path / "engine.cfg.j2", {"host": "0.0.0.0\r", "port": 8080})
    assert err.value.lines == [
        f"{tmp_path / 'engine.cfg.j2'}: host: value contains control character(s) U+000D (C43)"
    ]


def test_undefined_variable_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "t.j2").write_bytes(b"port={{ prot }}\n")
    with pytest.raises(DefinitionError, match="'prot' is undefined"):
        render_template(tmp_path / "t.j2", {"port": 1})


def test_render_is_independent_of_locale_and_os_text_mode(tmp_path: Path) -> None:
    """Same bytes from a child process under another locale and a non-UTF-8 preferred encoding."""
    here = render_config(load_profile(P4090)).data
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "latin-1"}
    out = tmp_path / "c.toml"
    cmd = [sys.executable, "-m", "ninfer_release", "profile", "render", str(P4090), "--out", str(out)]
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    assert out.read_bytes() == here


# --- product profiles ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", [P4090, P3090], ids=["rtx4090", "rtx3090"])
def test_native_config_is_exact_and_carries_every_reference_value(path: Path) -> None:
    prof = load_profile(path)
    first, second = render_config(prof), render_config(load_profile(path))
    assert first.data == second.data
    assert first.bytes_sha256 == second.bytes_sha256 == hashlib.sha256(first.data).hexdigest()
    data = first.data
    assert b"\r" not in data and not data.startswith(b"\xef\xbb\xbf")
    assert data.endswith(b"\n") and not data.endswith(b"\n\n")
    data.decode("utf-8")
    parsed = tomllib.loads(data.decode("utf-8"))
    for key, want in REFERENCE[path].items():
        got = _get(parsed, key)
        assert (type(got), got) == (type(want), want), key
    assert parsed["engine"]["args"] == FLAGS[path]
    assert b"max-private-continuations" not in data and b"max_private_continuations" not in data
    assert first.parsed == parsed
    assert first.semantic_sha256 != first.bytes_sha256


def test_3090_config_has_no_host_floor_and_4090_no_power_limit() -> None:
    """Values the reference does not state are absent, never invented."""
    p4 = tomllib.loads(render_config(load_profile(P4090)).data.decode())
    p3 = tomllib.loads(render_config(load_profile(P3090)).data.decode())
    assert "power_limit_w" not in p4["gpu"]
    assert "host_memory_floor_mib" not in p3["memory"]


def test_semantic_hash_ignores_comments_and_layout_bytes_hash_does_not(tmp_path: Path) -> None:
    prof = load_profile(P4090)
    base = render_config(prof)
    templates = tmp_path / "templates"
    templates.mkdir()
    text = (PROFILES / "templates" / "native-engine.toml.j2").read_text()
    (templates / "native-engine.toml.j2").write_text("# another comment\n" + text.replace(" = ", "="))
    other = render_config(prof, templates_dir=templates)
    assert other.bytes_sha256 != base.bytes_sha256
    assert other.semantic_sha256 == base.semantic_sha256


def test_container_profile_renders_its_known_bindings() -> None:
    cfg = render_config(load_profile(P5090))
    parsed = tomllib.loads(cfg.data.decode())
    assert parsed["checkpoint"] == {
        "mount": "/checkpoints-v013",
        "require_origin_auth": True,
        "strict_origin_config": "751d22dc",
    }
    assert parsed["server"]["port"] == 18082
    assert parsed["engine"]["args"] == ["--session-checkpoint-require-origin-auth"]


def test_toml_literal_escapes_and_refuses() -> None:
    assert toml_literal('a"b\\c') == '"a\\"b\\\\c"'
    assert toml_literal([1, True, "x"]) == '[1, true, "x"]'
    assert tomllib.loads("v = " + toml_literal('a"b\\c'))["v"] == 'a"b\\c'
    with pytest.raises(TypeError):
        toml_literal(None)
    with pytest.raises(ValueError, match="control"):
        toml_literal("a\rb")


# --- CLI -----------------------------------------------------------------------------------------


def test_cli_render_prints_the_hash_of_the_written_file(run_cli: RunCli, tmp_path: Path) -> None:
    sha256sum = need_tool("sha256sum")
    out = tmp_path / "configs" / "c.toml"
    code, stdout, err = run_cli("profile", "render", str(P4090), "--out", str(out))
    assert code == 0, err
    printed = dict(line.split()[:2] for line in stdout.splitlines()[1:])
    real = subprocess.run([sha256sum, str(out)], check=True, capture_output=True, text=True).stdout.split()[0]
    assert printed["bytes_sha256"] == real
    assert printed["semantic_sha256"] == render_config(load_profile(P4090)).semantic_sha256
    assert out.stat().st_mode & 0o777 == 0o644


def test_cli_render_json_and_overwrite_rules(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "c.toml"
    code, stdout, _ = run_cli("--json", "profile", "render", str(P3090), "--out", str(out))
    assert code == 0
    doc = json.loads(stdout)
    assert set(doc) >= {"profile_id", "bytes_sha256", "semantic_sha256", "path"}
    assert doc["profile_id"] == "qwen38-3090-native-v0.7.0-beta.2" and doc["written"] is True
    assert doc["bytes_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    # Same bytes again: left alone, not an error.
    code, stdout, _ = run_cli("--json", "profile", "render", str(P3090), "--out", str(out))
    assert code == 0 and json.loads(stdout)["written"] is False
    # Other bytes: refused (user data is never lost) unless --force.
    out.write_bytes(b"mine\n")
    code, stdout, err = run_cli("profile", "render", str(P3090), "--out", str(out))
    assert code == 4 and "refusing to overwrite" in err and out.read_bytes() == b"mine\n"
    code, _, _ = run_cli("profile", "render", str(P3090), "--out", str(out), "--force")
    assert code == 0 and out.read_bytes() == render_config(load_profile(P3090)).data


def test_cli_validate_accepts_the_product_profiles(run_cli: RunCli) -> None:
    code, stdout, err = run_cli("profile", "validate", str(P4090), str(P3090), str(P5090))
    assert (code, err) == (0, "")
    assert len(stdout.splitlines()) == 3


def test_cli_render_into_an_unwritable_place_is_exit_4(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"x")
    code, out, err = run_cli("profile", "render", str(P4090), "--out", str(tmp_path / "file" / "c.toml"))
    assert (code, out) == (4, "")
    assert "cannot write" in err and "Traceback" not in err


# Golden hashes of our rendered configs. They change only when a profile or template changes on
# purpose; then update them from `./dev release` (which prints both hashes per lane) in the same commit.
GOLDEN = {
    P4090: (
        "ecea71ab26fb050ca46b65bf20319be203e79be0ade6e99481f09037ad30ac88",
        "a31662a7bb8465c727831e015335bdac6293d90e534fe25321612239901f9e56",
    ),
    P3090: (
        "406995d91138112a25bc000b020a91978632b5930acb211c6fe42fb8d240632a",
        "01f849e74c71360bc894b956815d26ea152c4062b54d1c7bb54656f556770cde",
    ),
    P5090: (
        "53494cdf7c205da37a69a7af99caa55ea6303f1b84abcd3cbdb13d0abaca3bea",
        "2f238ca18057574528b681a1b35e3e211ee4f3736bb8ed5cb2f63c2b7f1cf867",
    ),
}


@pytest.mark.parametrize("path", list(GOLDEN), ids=["rtx4090", "rtx3090", "rtx5090"])
def test_config_hashes_are_pinned(path: Path) -> None:
    cfg = render_config(load_profile(path))
    assert (cfg.bytes_sha256, cfg.semantic_sha256) == GOLDEN[path]
    # Never the upstream beta.2 bytes' hash: ours are different bytes (reference table note).
    assert cfg.bytes_sha256 != load_profile(path).published_config_sha256


def test_every_profile_setting_has_a_config_key() -> None:
    """Each Profile field reaches the config (expected_config), except the listed metadata."""
    metadata = {
        "path",
        "kind",
        "lane",
        "carried",
        "carried_from",
        "template",
        "published_config_sha256",
        "flags",
    }
    covered = {
        "config_schema", "id", "model_file", "model_sha256", "context_tokens", "kv_capacity_tokens",
        "kv_cache_dtype", "vision", "speculation", "concurrent_requests", "pending_timeout_ms",
        "extra_device_state_slots", "prefill_chunk_tokens", "admission_headroom_mib", "keep_warm_ms",
        "shared_host_budget_bytes", "shared_host_budget_mib", "host_memory_floor_mib", "gpu", "cuda_arch",
        "gpu_power_limit_w", "endpoint", "checkpoint", "strict_origin_config", "component_tag",
    }  # fmt: skip
    fields = {f.name for f in dataclasses.fields(load_profile(P4090))}
    assert fields == metadata | covered
    keys = set(expected_config(load_profile(P4090)))
    assert len(keys) == 37 and "engine.args" in keys
    assert {"component_tag", "paths.data_root", "model.path"} <= keys
