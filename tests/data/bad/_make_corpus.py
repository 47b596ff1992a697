"""Regenerate the bad-input corpus (run deliberately: ``.venv/bin/python tests/data/bad/_make_corpus.py``).

Each case is a directory ``<name>/`` holding the malformed input(s) and ``case.json``:
``command`` (``profile`` = ``profile validate`` and ``profile render``; ``manifest`` = ``manifest check``
against this repo's profiles), ``target`` (path inside the case dir), ``exit`` (3 or 4) and
``expect``: ``[field, message substring]`` pairs that must each appear on one stderr line that also
names the file. Mutations start from the real RTX 4090 profile, its template and the v0.13.1 manifest.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PID = "qwen38-4090-native-v0.7.0-beta.2"
PROFILE = (REPO / "profiles" / f"{PID}.yaml").read_text(encoding="utf-8")
TEMPLATE = (REPO / "profiles" / "templates" / "native-engine.toml.j2").read_text(encoding="utf-8")
MANIFEST = (REPO / "manifests" / "v0.13.1.yaml").read_text(encoding="utf-8")
PPATH = f"profiles/{PID}.yaml"
TPATH = "profiles/templates/native-engine.toml.j2"


def sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def case(
    name: str,
    files: dict[str, bytes | str],
    target: str,
    expect: list[tuple[str, str]],
    *,
    command: str = "profile",
    exit_code: int = 3,
) -> None:
    d = HERE / name
    for rel, content in files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    d.mkdir(parents=True, exist_ok=True)
    spec = {"command": command, "target": target, "exit": exit_code, "expect": [list(e) for e in expect]}
    (d / "case.json").write_bytes((json.dumps(spec, indent=2) + "\n").encode())


def profile_case(
    name: str,
    text: str | bytes,
    expect: list[tuple[str, str]],
    *,
    file: str = PPATH,
    template: str | bytes = TEMPLATE,
) -> None:
    case(name, {file: text, TPATH: template}, file, expect)


def template_case(name: str, template: str | bytes, expect: list[tuple[str, str]]) -> None:
    case(name, {PPATH: PROFILE, TPATH: template}, PPATH, expect)


def manifest_case(name: str, text: str, expect: list[tuple[str, str]]) -> None:
    case(name, {"manifests/v0.13.1.yaml": text}, "manifests/v0.13.1.yaml", expect, command="manifest")


def main() -> None:
    for old in HERE.iterdir():
        if old.is_dir():
            shutil.rmtree(old)
    _yaml_cases()
    _type_cases()
    _rule_cases()
    _rule_cases_2()
    _template_cases()
    _manifest_cases()
    _manifest_cases_2()


def _yaml_cases() -> None:
    # --- YAML itself ------------------------------------------------------------------------
    profile_case(
        "yaml-syntax", PROFILE.replace("speculation:\n", "speculation: [\n", 1), [("", "invalid YAML")]
    )
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )
    profile_case("yaml-bomb", bomb, [("", "anchor &a is not allowed")])
    profile_case("empty-file", "", [("", "empty file")])
    profile_case("comments-only", "# nothing here\n\n", [("", "empty file")])
    profile_case(
        "non-utf8",
        PROFILE.encode("utf-8").replace(b"# Deployment", b"# Deploy\xffment", 1),
        [("", "not UTF-8")],
    )
    profile_case("bom-profile", b"\xef\xbb\xbf" + PROFILE.encode("utf-8"), [("", "byte-order mark")])
    profile_case(
        "duplicate-key",
        sub(PROFILE, "kv_capacity_tokens: 131072\n", "kv_capacity_tokens: 131072\ncontext_tokens: 65536\n"),
        [("", "duplicate key 'context_tokens'")],
    )
    profile_case(
        "python-tag",
        sub(PROFILE, "vision: false", "vision: !!python/object:os.system [id]"),
        [("", "invalid YAML")],
    )
    profile_case("not-a-mapping", "- just\n- a list\n", [("", "must be a mapping")])


def _type_cases() -> None:
    # --- types and keys ---------------------------------------------------------------------
    t = sub(PROFILE, "context_tokens: 131072", 'context_tokens: "131072"')
    t = sub(t, "vision: false", "vision: no")
    t = sub(t, "port: 18082", 'port: "18082"')
    t = sub(t, "prefill_chunk_tokens: 2048", "prefill_chunk_tokens: 2048.0")
    profile_case(
        "wrong-types",
        t,
        [
            ("context_tokens", "must be a whole number"),
            ("vision", "must be true or false"),
            ("endpoint.port", "must be a whole number"),
            ("prefill_chunk_tokens", "must be a whole number"),
        ],
    )
    profile_case(
        "unknown-key",
        sub(PROFILE, "context_tokens: 131072", "contxt_tokens: 131072"),
        [
            ("contxt_tokens", "unknown key (did you mean 'context_tokens'?)"),
            ("context_tokens", "required key is missing"),
        ],
    )
    profile_case(
        "unknown-nested-key",
        sub(PROFILE, "  dflash2: false", "  dflash: false"),
        [("speculation.dflash", "did you mean 'dflash2'?"), ("speculation.dflash2", "required key")],
    )
    profile_case(
        "bad-kind", sub(PROFILE, "kind: native", "kind: natve"), [("kind", "did you mean 'native'?")]
    )


def _rule_cases() -> None:
    # --- the rules --------------------------------------------------------------------------
    profile_case(
        "obsolete-setting",
        sub(PROFILE, "concurrent_requests: 1", "concurrent_requests: 1\nmax_private_continuations: 8"),
        [("max_private_continuations", "obsolete")],
    )
    profile_case(
        "obsolete-flag",
        sub(PROFILE, "  - --lm-head-draft\n", "  - --lm-head-draft\n  - --max-private-continuations 8\n"),
        [("flags[1]", "--max-private-continuations is obsolete")],
    )
    profile_case(
        "missing-origin-auth-flag",
        sub(PROFILE, "  - --session-checkpoint-require-origin-auth\n", ""),
        [("flags", "--session-checkpoint-require-origin-auth is missing")],
    )
    profile_case(
        "origin-auth-false",
        sub(PROFILE, "  require_origin_auth: true", "  require_origin_auth: false"),
        [("checkpoint.require_origin_auth", "require origin authentication")],
    )
    profile_case(
        "short-bearer-key",
        sub(PROFILE, "  auth: bearer", '  auth: bearer\n  bearer_key: "0123456789abcdef"'),
        [("endpoint.bearer_key", "16 bytes; at least 32")],
    )
    profile_case(
        "endpoint-not-loopback",
        sub(PROFILE, "host: 127.0.0.1", "host: 0.0.0.0"),
        [("endpoint.host", "not loopback")],
    )
    profile_case(
        "endpoint-hostname",
        sub(PROFILE, "host: 127.0.0.1", "host: localhost"),
        [("endpoint.host", "not an IP address")],
    )
    profile_case(
        "endpoint-no-auth",
        sub(PROFILE, "  auth: bearer", "  auth: none"),
        [("endpoint.auth", "not one of bearer")],
    )
    profile_case(
        "context-over-kv",
        sub(PROFILE, "context_tokens: 131072", "context_tokens: 262144"),
        [("context_tokens", "exceed kv_capacity_tokens 131072")],
    )
    profile_case(
        "budget-mib-mismatch",
        sub(PROFILE, '"14787.734375"', '"14787.7"'),
        [("shared_host_budget_mib", "must agree exactly")],
    )
    profile_case(
        "budget-mib-float",
        sub(PROFILE, '"14787.734375"', "14787.734375"),
        [("shared_host_budget_mib", "exact decimal in quotes")],
    )


def _rule_cases_2() -> None:
    profile_case(
        "budget-not-whole",
        sub(PROFILE, "15506063360 ", "15506063360.5 "),
        [("shared_host_budget_bytes", "not an exact whole number of bytes")],
    )
    profile_case(
        "prefill-chunk-invalid",
        sub(PROFILE, "prefill_chunk_tokens: 2048", "prefill_chunk_tokens: 3000"),
        [("prefill_chunk_tokens", "not a power of two")],
    )
    t = sub(PROFILE, "extra_device_state_slots: 2 ", "extra_device_state_slots: -1 ")
    profile_case("device-slots-invalid", t, [("extra_device_state_slots", "below the minimum 0")])
    t = sub(PROFILE, "admission_headroom_mib: 640", "admission_headroom_mib: 0")
    profile_case("headroom-invalid", t, [("admission_headroom_mib", "below the minimum 1")])
    profile_case(
        "flag-disagrees",
        sub(PROFILE, "--device-state-slots 2", "--device-state-slots 3"),
        [("flags", "--device-state-slots 3 disagrees with extra_device_state_slots 2")],
    )
    profile_case(
        "flag-unknown",
        sub(PROFILE, "  - --lm-head-draft\n", "  - --lm-head-draft\n  - --device-state-slot 2\n"),
        [("flags[1]", "did you mean '--device-state-slots'?")],
    )
    profile_case(
        "profile-id-mismatch",
        sub(PROFILE, f"profile_id: {PID}", "profile_id: qwen38-4090-native-v0.7.0"),
        [("profile_id", "does not match the file name")],
    )
    long_id = "q" * 121
    profile_case(
        "profile-id-too-long",
        sub(PROFILE, f"profile_id: {PID}", f"profile_id: {long_id}"),
        [("profile_id", "longer than 120 characters")],
        file=f"profiles/{long_id}.yaml",
    )
    profile_case(
        "checkpoint-dir-form",
        sub(PROFILE, "cache/<release-instance-id>/session-checkpoints-v3", "cache/session-checkpoints-v3"),
        [("checkpoint.dir", "not the required form")],
    )
    t = sub(PROFILE, "config_schema: 4", "config_schema: 3")
    t = sub(t, "  schema: 3", "  schema: 2")
    profile_case(
        "schemas-wrong",
        t,
        [
            ("config_schema", "required config schema 4"),
            ("checkpoint.schema", "required checkpoint schema 3"),
        ],
    )
    profile_case(
        "control-char-value",
        sub(PROFILE, "gpu: NVIDIA GeForce RTX 4090", 'gpu: "NVIDIA GeForce\\rRTX 4090"'),
        [("gpu", "U+000D")],
    )


def _template_cases() -> None:
    # --- templates ----------------------------------------------------------------------------
    template_case(
        "template-syntax",
        sub(TEMPLATE, "{% if host_memory_floor_mib is not none %}", "{% if %}"),
        [("", "template syntax error")],
    )
    template_case(
        "template-undefined",
        sub(TEMPLATE, "{{ keep_warm_ms | toml }}", "{{ keep_warm | toml }}"),
        [("", "undefined variable: 'keep_warm' is undefined")],
    )
    template_case("template-bom", b"\xef\xbb\xbf" + TEMPLATE.encode(), [("", "byte-order mark")])
    template_case(
        "template-lone-cr", TEMPLATE.replace("\n[model]\n", "\r[model]\n", 1).encode(), [("", "lone CR")]
    )
    template_case(
        "template-non-utf8", TEMPLATE.encode().replace(b"# NInfer", b"# N\xe9Infer", 1), [("", "not UTF-8")]
    )
    template_case(
        "template-drops-value",
        sub(TEMPLATE, "keep_warm_ms = {{ keep_warm_ms | toml }}\n", ""),
        [("scheduler.keep_warm_ms", "missing from the rendered config")],
    )
    template_case(
        "template-mangles-value",
        sub(TEMPLATE, "{{ prefill_chunk_tokens | toml }}", '"{{ prefill_chunk_tokens }}"'),
        [("scheduler.prefill_chunk_tokens", "rendered as '2048', want 2048")],
    )
    template_case(
        "template-not-toml",
        sub(TEMPLATE, "{{ gpu | toml }}", "{{ gpu }}"),
        [("", "rendered config is not TOML")],
    )
    template_case("template-empty", "", [("", "empty template")])
    profile_case(
        "template-missing",
        sub(PROFILE, "template: native-engine.toml.j2", "template: native-engine.tom.j2"),
        [("", "template not found")],
    )
    profile_case(
        "template-path-escape",
        sub(PROFILE, "template: native-engine.toml.j2", "template: ../../etc/passwd.j2"),
        [("template", "not a template file name")],
    )


def _manifest_cases() -> None:
    # --- manifests ----------------------------------------------------------------------------
    manifest_case(
        "manifest-native-model",
        sub(MANIFEST, "  client:\n", "  native_model:\n    sha256: eec39564\n  client:\n"),
        [("components.native_model", "removed in v0.13.1")],
    )
    manifest_case(
        "manifest-duplicate-tag",
        sub(MANIFEST, "component_tag: v0.7.0-qwen38-3090-beta.2", "component_tag: v0.7.0-qwen38-4090-beta.2"),
        [("lanes.rtx4090.component_tag", "also the tag of lane rtx3090")],
    )
    manifest_case(
        "manifest-short-source",
        sub(MANIFEST, "source_commit: 7a25cd72f490183e4113f1e84e68e36d653ddd28", "source_commit: 7a25cd72"),
        [("lanes.rtx4090.source_commit", "not a full 40-hex commit")],
    )
    manifest_case(
        "manifest-branch-source",
        sub(MANIFEST, "source_commit: 7a25cd72f490183e4113f1e84e68e36d653ddd28", "source_commit: main"),
        [("lanes.rtx4090.source_commit", "not a hex commit")],
    )
    manifest_case(
        "manifest-base-url-typo",
        sub(
            MANIFEST,
            "https://github.com/alphastorm/omp-ninfer/releases/download",
            "https//example.invalid/spdx",
        ),
        [("publication_base_url", "not an absolute https:// URL")],
    )
    manifest_case(
        "manifest-cuda-version-float",
        sub(
            MANIFEST,
            'cuda_version: "13.3"\n    gpu: NVIDIA GeForce RTX 4090',
            "cuda_version: 13.3\n    gpu: NVIDIA GeForce RTX 4090",
        ),
        [("lanes.rtx4090.cuda_version", "must be a string, got number 13.3 (quote it)")],
    )


def _manifest_cases_2() -> None:
    manifest_case(
        "manifest-unknown-profile",
        sub(
            MANIFEST, "profile: qwen38-3090-native-v0.7.0-beta.2", "profile: qwen38-3090-native-v0.7.0-beta.3"
        ),
        [("lanes.rtx3090.profile", "no such profile")],
    )
    manifest_case(
        "manifest-superseded-reuse",
        sub(MANIFEST, "component_tag: v0.7.0-qwen38-3090-beta.2", "component_tag: v0.7.0-qwen38-3090-beta.1"),
        [("lanes.rtx3090.component_tag", "superseded tag is never reused")],
    )
    manifest_case(
        "manifest-profile-wrong-lane",
        sub(
            sub(MANIFEST, "profile: qwen38-3090-native-v0.7.0-beta.2", "profile: qwen38-XXXX"),
            "profile: qwen38-4090-native-v0.7.0-beta.2",
            "profile: qwen38-3090-native-v0.7.0-beta.2",
        ).replace("profile: qwen38-XXXX", "profile: qwen38-4090-native-v0.7.0-beta.2"),
        [("lanes.rtx4090.profile", "is for lane 'rtx3090'"), ("lanes.rtx4090.cuda_arch", "differs")],
    )
    manifest_case(
        "manifest-cuda-mismatch",
        sub(
            MANIFEST,
            'cuda_version: "13.3"\n    gpu: NVIDIA GeForce RTX 3090',
            'cuda_version: "13.2"\n    gpu: NVIDIA GeForce RTX 3090',
        ),
        [("lanes.rtx3090.cuda_version", "differs from native_line.cuda_version 13.3")],
    )
    manifest_case(
        "manifest-missing-recipe",
        sub(
            MANIFEST,
            "package_recipe: packaging/windows-native.yaml",
            "package_recipe: packaging/windows-nativ.yaml",
        ),
        [("lanes.rtx4090.package_recipe", "packaging/windows-nativ.yaml does not exist")],
    )
    case("missing-file", {}, "profiles/no-such-profile.yaml", [("", "no such file")], exit_code=4)


if __name__ == "__main__":
    main()
