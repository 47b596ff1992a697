"""Profiles: the reference values, validation rules, the safe YAML loader, bearer keys."""

from __future__ import annotations

import dataclasses
import os
import re
from decimal import Decimal
from pathlib import Path

import pytest

from conftest import RunCli
from ninfer_release.errors import DefinitionError, InputError
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.profiles import (
    check_bearer_key,
    generate_bearer_key,
    load_profile,
    load_yaml_data,
    read_bearer_key,
    write_bearer_key,
)

REPO = Path(__file__).resolve().parent.parent
P4090 = REPO / "profiles" / "qwen38-4090-native-v0.7.0-beta.2.yaml"
P3090 = REPO / "profiles" / "qwen38-3090-native-v0.7.0-beta.2.yaml"
P5090 = REPO / "profiles" / "qwen38-5090-v0.13.0.yaml"


def test_4090_profile_holds_the_reference_values() -> None:
    p = load_profile(P4090)
    assert p.id == "qwen38-4090-native-v0.7.0-beta.2" and p.lane == "rtx4090" and p.cuda_arch == "sm_89"
    assert (p.context_tokens, p.kv_capacity_tokens, p.kv_cache_dtype) == (131072, 131072, "int8")
    assert p.speculation is not None
    assert (p.speculation.mode, p.speculation.lm_head_draft, p.speculation.dflash2) == ("mtp3", True, False)
    assert (p.concurrent_requests, p.pending_timeout_ms) == (1, 30000)
    assert (p.extra_device_state_slots, p.prefill_chunk_tokens) == (2, 2048)
    assert p.shared_host_budget_bytes == 15_506_063_360
    assert p.shared_host_budget_mib == Decimal("14787.734375")
    assert (p.admission_headroom_mib, p.keep_warm_ms, p.vision) == (640, 60000, False)
    assert (p.endpoint.host, p.endpoint.port, p.endpoint.auth) == ("127.0.0.1", 18082, "bearer")
    assert (p.host_memory_floor_mib, p.gpu_power_limit_w) == (32768, None)
    assert p.checkpoint.dir_template == "cache/<release-instance-id>/session-checkpoints-v3"
    assert (p.checkpoint.schema, p.checkpoint.require_origin_auth, p.config_schema) == (3, True, 4)
    assert p.published_config_sha256 == "b21cdaf8b5edeed4e7d498edf5dbfae77a993145f1d511a8e1aa1b7bdab42950"
    assert "--session-checkpoint-require-origin-auth" in p.flags
    assert p.args == (
        "--lm-head-draft",
        "--device-state-slots",
        "2",
        "--admission-headroom-mib",
        "640",
        "--session-checkpoint-require-origin-auth",
    )


def test_3090_profile_holds_the_reference_values() -> None:
    p = load_profile(P3090)
    assert p.id == "qwen38-3090-native-v0.7.0-beta.2" and p.cuda_arch == "sm_86"
    assert (p.extra_device_state_slots, p.prefill_chunk_tokens) == (4, 1024)
    assert p.shared_host_budget_bytes == 12_284_837_888
    assert p.shared_host_budget_mib == Decimal("11715.734375")
    assert (p.admission_headroom_mib, p.keep_warm_ms) == (768, 0)
    assert (p.host_memory_floor_mib, p.gpu_power_limit_w) == (None, 300)
    assert p.published_config_sha256 == "b49aad9915dd333f14cc7a3f0bb269aec124b38112e8ea984af3f569fe2dac75"
    assert ("--device-state-slots 4" in p.flags) and ("--admission-headroom-mib 768" in p.flags)


def test_5090_profile_is_carried_and_records_what_is_known() -> None:
    p = load_profile(P5090)
    assert (p.kind, p.carried, p.lane) == ("container", True, "rtx5090")
    assert p.strict_origin_config == "751d22dc"
    assert p.checkpoint.mount == "/checkpoints-v013" and p.checkpoint.require_origin_auth
    assert p.endpoint.port == 18082
    assert p.context_tokens is None and p.shared_host_budget_bytes is None  # not stated: not invented


def test_profile_is_frozen() -> None:
    p = load_profile(P4090)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.context_tokens = 1  # type: ignore[misc]


def test_public_dict_is_json_ready_and_secret_free() -> None:
    for path in (P4090, P3090, P5090):
        d = load_profile(path).public_dict()
        data = dumps_stable(d)
        assert b"bearer_key" not in data
        assert d["endpoint"]["key_min_bytes"] == 32
    d = load_profile(P4090).public_dict()
    assert d["shared_host_budget_mib"] == "14787.734375" and d["shared_host_budget_bytes"] == 15506063360
    assert "published_config_sha256" not in d  # their bytes' hash must not pass for ours


def _profile_text(**subs: str) -> str:
    text = P4090.read_text()
    for old, new in subs.items():
        assert old in text
        text = text.replace(old, new, 1)
    return text


def _write(tmp_path: Path, text: str | bytes, name: str = "qwen38-4090-native-v0.7.0-beta.2.yaml") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    text = P4090.read_text()
    text = text.replace("host: 127.0.0.1", "host: 192.168.1.10").replace(
        "context_tokens: 131072", "context_tokens: 262144"
    )
    text = text.replace("  - --session-checkpoint-require-origin-auth\n", "").replace(
        "config_schema: 4", "config_schema: 3"
    )
    with pytest.raises(DefinitionError) as err:
        load_profile(_write(tmp_path, text))
    fields = [p.field for p in err.value.problems]
    assert fields == ["config_schema", "context_tokens", "endpoint.host", "flags"]
    assert all(p.file == str(tmp_path / "qwen38-4090-native-v0.7.0-beta.2.yaml") for p in err.value.problems)


def test_obsolete_setting_has_no_alias_even_nested(tmp_path: Path) -> None:
    text = _profile_text(**{"  dflash2: false": "  dflash2: false\n  max_private_continuations: 8"})
    with pytest.raises(DefinitionError) as err:
        load_profile(_write(tmp_path, text))
    assert [p.field for p in err.value.problems] == ["speculation.max_private_continuations"]


def test_budget_must_agree_to_the_byte(tmp_path: Path) -> None:
    """Bytes == MiB × 1,048,576 exactly: one byte off is an error (reference: byte-exact budget)."""
    text = _profile_text(**{"15506063360 ": "15506063361 "})
    with pytest.raises(DefinitionError, match="must agree exactly"):
        load_profile(_write(tmp_path, text))


def test_ipv6_loopback_endpoint_is_accepted(tmp_path: Path) -> None:
    p = load_profile(_write(tmp_path, _profile_text(**{"host: 127.0.0.1": 'host: "::1"'})))
    assert p.endpoint.host == "::1"


def test_missing_profile_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        load_profile(tmp_path / "nope.yaml")


# --- the YAML loader -----------------------------------------------------------------------------


def test_yaml_uses_core_schema_scalars(tmp_path: Path) -> None:
    p = _write(
        tmp_path, "a: yes\nb: on\nc: 0644\nd: 1:30\ne: 2026-11-20\nf: true\ng: 0x10\nh: ~\ni: 1.5\nj: '<<'\n"
    )
    assert load_yaml_data(p) == {
        "a": "yes",
        "b": "on",
        "c": 644,
        "d": "1:30",
        "e": "2026-11-20",
        "f": True,
        "g": 16,
        "h": None,
        "i": 1.5,
        "j": "<<",
    }


def test_yaml_refuses_merge_keys_as_merges(tmp_path: Path) -> None:
    assert load_yaml_data(_write(tmp_path, "x:\n  <<: {a: 1}\n")) == {"x": {"<<": {"a": 1}}}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"a: &x 1\nb: *x\n", "anchor &x is not allowed"),
        (b"a: 1\na: 2\n", "duplicate key 'a'"),
        (b"1: a\n", "not a string"),
        (b"\xff\xfea\x00:\x00", "byte-order mark"),
        (b"a: \x80\n", "not UTF-8"),
        (b"", "empty file"),
        (b"   \n\n", "empty file"),
        (b"a: 1\n---\nb: 2\n", "invalid YAML"),
        (b"a: !!binary aGVsbG8=\n", "bytes values are not allowed"),
        (b"a: !!set {x, y}\n", "set values are not allowed"),
        (b"a: " + b"[" * 40 + b"]" * 40 + b"\n", "nested deeper than 32"),
        (b"a: [" + b"1," * 30_000 + b"]\n", "more than 20000 nodes"),
    ],
)
def test_yaml_refuses_unsafe_or_malformed_input(tmp_path: Path, content: bytes, message: str) -> None:
    with pytest.raises(DefinitionError, match=re.escape(message)):
        load_yaml_data(_write(tmp_path, content, "x.yaml"))


def test_yaml_refuses_oversized_file(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match="larger than"):
        load_yaml_data(_write(tmp_path, b"a: '" + b"x" * (1 << 20) + b"'\n", "x.yaml"))


def test_yaml_error_class_is_chosen_by_the_caller(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="duplicate key"):
        load_yaml_data(_write(tmp_path, b"a: 1\na: 2\n", "x.yaml"), error=InputError)


# --- bearer keys ---------------------------------------------------------------------------------


def test_generated_key_is_64_hex_characters() -> None:
    keys = {generate_bearer_key() for _ in range(8)}
    assert len(keys) == 8
    assert all(re.fullmatch(r"[0-9a-f]{64}", k) for k in keys)


def test_short_key_is_refused_wherever_given() -> None:
    with pytest.raises(DefinitionError, match="31 bytes; at least 32"):
        check_bearer_key("k" * 31)
    check_bearer_key("k" * 32)
    with pytest.raises(DefinitionError, match="printable ASCII"):
        check_bearer_key("k" * 40 + "\n")


def test_write_bearer_key_mode_0600_and_never_overwrites(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        key = write_bearer_key(tmp_path / "keys" / "bearer.key")
    finally:
        os.umask(old)
    path = tmp_path / "keys" / "bearer.key"
    assert path.read_bytes() == key.encode() and len(key) == 64
    assert path.stat().st_mode & 0o777 == 0o600
    with pytest.raises(InputError, match="refusing to overwrite"):
        write_bearer_key(path)
    assert path.read_bytes() == key.encode()


def test_cli_keygen_prints_the_key_only_when_asked(run_cli: RunCli, tmp_path: Path) -> None:
    code, out, err = run_cli("profile", "keygen", "--out", str(tmp_path / "a.key"))
    key = (tmp_path / "a.key").read_text()
    assert code == 0 and key not in out and key not in err
    code, out, _ = run_cli("profile", "keygen", "--out", str(tmp_path / "b.key"), "--print")
    assert code == 0 and (tmp_path / "b.key").read_text() in out.splitlines()
    code, out, err = run_cli("profile", "keygen", "--out", str(tmp_path / "a.key"))
    assert code == 4 and "refusing to overwrite" in err and (tmp_path / "a.key").read_text() == key


def test_read_bearer_key_checks_length(tmp_path: Path) -> None:
    key = write_bearer_key(tmp_path / "k")
    assert read_bearer_key(tmp_path / "k") == key
    (tmp_path / "short").write_bytes(b"0123456789abcdef\n")
    with pytest.raises(DefinitionError, match="16 bytes; at least 32"):
        read_bearer_key(tmp_path / "short")
    with pytest.raises(InputError):
        read_bearer_key(tmp_path / "missing")
