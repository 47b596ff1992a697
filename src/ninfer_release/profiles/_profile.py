"""Deployment profiles: ``profiles/<profile-id>.yaml`` → a frozen, validated :class:`Profile`.

Two kinds (ours):

* ``native`` — a Windows lane's engine profile. Every value of the reference table
  (``release-v0.13.1.md`` "Native deployment profiles") is required and checked.
* ``container`` — the carried RTX 5090 profile. Only what is known of it is required (strict-origin
  config, checkpoint mount, endpoint, model, flags); engine settings the release notes do not state
  are ``None`` and, when given, are checked with the same rules.

Rules (reference "Rules that come with them", DESIGN.md §4, issue 2 §4): the obsolete
``max_private_continuations`` / ``--max-private-continuations`` is an error (no alias); a product
profile must carry ``--session-checkpoint-require-origin-auth``; the endpoint is loopback and
bearer-authenticated; no key in a public profile, and any key given is at least 32 bytes;
context ≤ KV capacity; the shared host budget is one exact whole number of bytes whose MiB form
agrees exactly; config schema 4, checkpoint schema 3, checkpoint directory
``cache/<release-instance-id>/session-checkpoints-v3``; the profile id equals the file stem and is
at most 120 characters; no control characters in any string (case C43 note).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from ninfer_release.digests import SHA256_HEX
from ninfer_release.profiles._check import SHORT_HEX, Checker, suggest
from ninfer_release.profiles._keys import MIN_KEY_BYTES
from ninfer_release.profiles._yaml import load_yaml_data

#: Profile schema written in every profile file (ours).
PROFILE_SCHEMA = 1
#: Engine config schema the native lanes use (reference: "config schema 4").
CONFIG_SCHEMA = 4
#: Checkpoint store schema (reference: "checkpoint schema 3").
CHECKPOINT_SCHEMA = 3
#: The only accepted checkpoint directory form; the route block supplies the id (reference).
CHECKPOINT_DIR_TEMPLATE = "cache/<release-instance-id>/session-checkpoints-v3"
CHECKPOINT_ROOT = "cache"
#: Longest accepted profile id (issue 2 §4).
MAX_PROFILE_ID = 120
#: 1 MiB in bytes: the shared host budget's two forms must agree exactly (reference).
MIB = 1_048_576

PROFILE_ID = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?")
LANE_ID = re.compile(r"[a-z0-9][a-z0-9-]*")
#: A component tag (reference table "Lanes"): ``v0.7.0-qwen38-4090-beta.2``.
COMPONENT_TAG = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+-[0-9a-z][0-9a-z.-]*[0-9a-z]")
CUDA_ARCH = re.compile(r"sm_[0-9]{2,3}[a-z]?")
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
TEMPLATE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\.j2")
SPEC_MODE = re.compile(r"none|mtp[1-9]")
KV_DTYPES = ("int8", "fp8", "fp16", "bf16")

#: Launch flags we know (ours, from the reference): name → (takes a value, setting it mirrors).
KNOWN_FLAGS: dict[str, tuple[bool, str]] = {
    "--lm-head-draft": (False, "speculation.lm_head_draft"),
    "--device-state-slots": (True, "extra_device_state_slots"),
    "--admission-headroom-mib": (True, "admission_headroom_mib"),
    "--session-checkpoint-require-origin-auth": (False, "checkpoint.require_origin_auth"),
}
#: Flags removed on purpose: present → error, never an alias (reference "K5").
OBSOLETE_FLAGS = {"--max-private-continuations": "obsolete (removed in v0.13.1); delete it, no alias exists"}
REQUIRED_FLAG = "--session-checkpoint-require-origin-auth"

ProfileKind = Literal["native", "container"]


@dataclass(frozen=True, kw_only=True)
class Speculation:
    """Speculative decoding: ``mode`` (``mtp3``), LM-head drafting, DFlash2 (reference: off)."""

    mode: str
    lm_head_draft: bool
    dflash2: bool


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """The engine's public endpoint: loopback ``host`` and ``port``, ``auth`` ``bearer``.

    ``key_file`` is where the installer writes the generated bearer key (relative to the install
    root, ours); the key itself is never in a profile, config or asset.
    """

    host: str
    port: int
    auth: str
    key_file: str


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """Session checkpoint store: native ``dir_template`` under ``root``, or a container ``mount``."""

    root: str | None
    dir_template: str | None
    mount: str | None
    schema: int | None
    require_origin_auth: bool


@dataclass(frozen=True, kw_only=True)
class Profile:
    """A validated deployment profile (public, nonsecret). Units are in the field names.

    Engine settings are ``None`` only on a container profile whose published value is not stated.
    """

    path: Path
    id: str
    kind: ProfileKind
    lane: str
    component_tag: str | None
    carried: bool
    carried_from: str | None
    gpu: str
    cuda_arch: str | None
    template: str
    config_schema: int | None
    model_file: str
    model_sha256: str
    context_tokens: int | None
    kv_capacity_tokens: int | None
    kv_cache_dtype: str | None
    speculation: Speculation | None
    concurrent_requests: int | None
    pending_timeout_ms: int | None
    extra_device_state_slots: int | None
    prefill_chunk_tokens: int | None
    shared_host_budget_bytes: int | None
    shared_host_budget_mib: Decimal | None
    admission_headroom_mib: int | None
    keep_warm_ms: int | None
    vision: bool | None
    host_memory_floor_mib: int | None
    gpu_power_limit_w: int | None
    endpoint: Endpoint
    checkpoint: Checkpoint
    strict_origin_config: str | None
    published_config_sha256: str | None
    flags: tuple[str, ...]

    @property
    def args(self) -> tuple[str, ...]:
        """The launch flags as argv tokens: ``"--x 640"`` becomes ``("--x", "640")``."""
        return tuple(tok for flag in self.flags for tok in flag.split(" "))

    def public_dict(self) -> dict[str, Any]:
        """The public profile as JSON-ready data (the ``<stem>.profile.json`` asset's body).

        Nonsecret by construction: a profile cannot hold a key. ``None`` means "not stated".
        The exact budget in MiB is a string (exact decimal). ``published_config_sha256`` (the
        upstream beta.2 bytes' hash, not ours) is left out so it cannot be mistaken for ours.
        """
        spec = self.speculation
        return {
            "profile_schema": PROFILE_SCHEMA,
            "profile_id": self.id,
            "kind": self.kind,
            "lane": self.lane,
            "component_tag": self.component_tag,
            "carried": self.carried,
            "carried_from": self.carried_from,
            "gpu": self.gpu,
            "cuda_arch": self.cuda_arch,
            "config_schema": self.config_schema,
            "model": {"local_name": self.model_file, "sha256": self.model_sha256},
            "context_tokens": self.context_tokens,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "kv_cache_dtype": self.kv_cache_dtype,
            "speculation": None
            if spec is None
            else {"mode": spec.mode, "lm_head_draft": spec.lm_head_draft, "dflash2": spec.dflash2},
            "concurrent_requests": self.concurrent_requests,
            "pending_timeout_ms": self.pending_timeout_ms,
            "extra_device_state_slots": self.extra_device_state_slots,
            "prefill_chunk_tokens": self.prefill_chunk_tokens,
            "shared_host_budget_bytes": self.shared_host_budget_bytes,
            "shared_host_budget_mib": None
            if self.shared_host_budget_mib is None
            else str(self.shared_host_budget_mib),
            "admission_headroom_mib": self.admission_headroom_mib,
            "keep_warm_ms": self.keep_warm_ms,
            "vision": self.vision,
            "host_memory_floor_mib": self.host_memory_floor_mib,
            "gpu_power_limit_w": self.gpu_power_limit_w,
            "endpoint": {
                "host": self.endpoint.host,
                "port": self.endpoint.port,
                "auth": self.endpoint.auth,
                "key_file": self.endpoint.key_file,
                "key_min_bytes": MIN_KEY_BYTES,
                "key_generation": "64 hex characters from 32 bytes of OS randomness "
                "(ninfer-release profile keygen --out FILE)",
            },
            "checkpoint": {
                "root": self.checkpoint.root,
                "dir_template": self.checkpoint.dir_template,
                "mount": self.checkpoint.mount,
                "schema": self.checkpoint.schema,
                "require_origin_auth": self.checkpoint.require_origin_auth,
            },
            "strict_origin_config": self.strict_origin_config,
            "flags": list(self.flags),
            "args": list(self.args),
        }


_COMMON_REQUIRED = (
    "profile_schema",
    "profile_id",
    "kind",
    "lane",
    "gpu",
    "template",
    "model_file",
    "model_sha256",
    "endpoint",
    "checkpoint",
    "flags",
)
_SETTINGS = (
    "component_tag",
    "config_schema",
    "cuda_arch",
    "context_tokens",
    "kv_capacity_tokens",
    "kv_cache_dtype",
    "speculation",
    "concurrent_requests",
    "pending_timeout_ms",
    "extra_device_state_slots",
    "prefill_chunk_tokens",
    "shared_host_budget_bytes",
    "shared_host_budget_mib",
    "admission_headroom_mib",
    "keep_warm_ms",
    "vision",
)
_OPTIONAL = (
    "carried",
    "carried_from",
    "strict_origin_config",
    "host_memory_floor_mib",
    "gpu_power_limit_w",
    "published_config_sha256",
    "description",
)


def load_profile(path: Path) -> Profile:
    """Load and validate ``profiles/<profile-id>.yaml`` into a :class:`Profile`.

    Every problem is reported at once, each naming the file and the field path.

    Raises:
        InputError: the file is missing or unreadable (exit 4).
        DefinitionError: anything invalid (exit 3); rules in the module docstring.
    """
    data = load_yaml_data(path)
    c = Checker(str(path))
    root = c.document(data)
    kind = c.get_str(root, "", "kind", choices=("native", "container"))
    native = kind != "container"
    c.keys(
        root,
        "",
        required=_COMMON_REQUIRED + (_SETTINGS if native else ()),
        optional=_OPTIONAL + (() if native else _SETTINGS),
    )
    profile = _build(c, path, root, "container" if kind == "container" else "native")
    c.raise_if_any()
    assert profile is not None
    return profile


@dataclass(frozen=True, kw_only=True)
class _Identity:
    """Which profile this is: id, lane, component tag, carried-ness, GPU and CUDA arch (``None``: bad)."""

    id: str | None
    lane: str | None
    component_tag: str | None
    carried: bool
    carried_from: str | None
    gpu: str | None
    cuda_arch: str | None


@dataclass(frozen=True, kw_only=True)
class _Files:
    """The config template, config schema and model file the profile names (``None``: bad)."""

    template: str | None
    config_schema: int | None
    model_file: str | None
    model_sha256: str | None


@dataclass(frozen=True, kw_only=True)
class _Engine:
    """The engine settings (reference table "Native deployment profiles"); units in the names."""

    context_tokens: int | None
    kv_capacity_tokens: int | None
    kv_cache_dtype: str | None
    speculation: Speculation | None
    concurrent_requests: int | None
    pending_timeout_ms: int | None
    extra_device_state_slots: int | None
    prefill_chunk_tokens: int | None


@dataclass(frozen=True, kw_only=True)
class _Host:
    """Host-side settings: the shared budget (bytes and exact MiB), headroom, warmth, vision, limits."""

    shared_host_budget_bytes: int | None
    shared_host_budget_mib: Decimal | None
    admission_headroom_mib: int | None
    keep_warm_ms: int | None
    vision: bool | None
    host_memory_floor_mib: int | None
    gpu_power_limit_w: int | None


@dataclass(frozen=True, kw_only=True)
class _Origin:
    """The strict-origin config digest and the upstream published config's SHA-256 (optional)."""

    strict_origin_config: str | None
    published_config_sha256: str | None


def _identity(c: Checker, path: Path, d: dict[str, Any], native: bool) -> _Identity:
    """Profile schema, id (= file stem, ≤ 120 chars), lane, component tag, carried, GPU, CUDA arch."""
    schema = c.get_int(d, "", "profile_schema")
    if schema is not None and schema != PROFILE_SCHEMA:
        c.add("profile_schema", f"{schema} is not the supported profile schema {PROFILE_SCHEMA}")
    pid = c.get_str(
        d, "", "profile_id", pattern=PROFILE_ID, what="a profile id ([a-z0-9.-])", max_len=MAX_PROFILE_ID
    )
    if pid is not None and path.name != f"{pid}.yaml":
        c.add("profile_id", f"{pid!r} does not match the file name {path.name!r} (expected {pid}.yaml)")
    lane = c.get_str(d, "", "lane", pattern=LANE_ID, what="a lane id")
    component_tag = c.get_str(
        d,
        "",
        "component_tag",
        required=native,
        pattern=COMPONENT_TAG,
        what="a component tag like v0.7.0-x-beta.2",
    )
    carried = c.get_bool(d, "", "carried", required=False) or False
    carried_from = c.get_str(d, "", "carried_from", required=False)
    if carried and carried_from is None and "carried_from" not in d:
        c.add("carried_from", "required for a carried profile (the record of the release it comes from)")
    if native and carried:
        c.add("carried", "a native profile is built fresh; only a container profile can be carried")
    gpu = c.get_str(d, "", "gpu", max_len=200)
    cuda_arch = c.get_str(
        d, "", "cuda_arch", required=native, pattern=CUDA_ARCH, what="a CUDA arch like sm_89"
    )
    return _Identity(
        id=pid,
        lane=lane,
        component_tag=component_tag,
        carried=carried,
        carried_from=carried_from,
        gpu=gpu,
        cuda_arch=cuda_arch,
    )


def _files(c: Checker, d: dict[str, Any], native: bool) -> _Files:
    """The template (``*.j2``), config schema (4, reference), model file name and SHA-256."""
    template = c.get_str(d, "", "template", pattern=TEMPLATE_NAME, what="a template file name ending in .j2")
    config_schema = c.get_int(d, "", "config_schema", required=native)
    if config_schema is not None and config_schema != CONFIG_SCHEMA:
        c.add("config_schema", f"{config_schema} is not the required config schema {CONFIG_SCHEMA}")
    model_file = c.get_str(d, "", "model_file", pattern=FILE_NAME, what="a plain file name")
    model_sha256 = c.get_str(d, "", "model_sha256", pattern=SHA256_HEX, what="64 lowercase hex digits")
    return _Files(
        template=template, config_schema=config_schema, model_file=model_file, model_sha256=model_sha256
    )


def _prefill_chunk(c: Checker, d: dict[str, Any], native: bool, context: int | None) -> int | None:
    """``prefill_chunk_tokens``: ours, a power of two no larger than ``context_tokens``."""
    chunk = c.get_int(d, "", "prefill_chunk_tokens", required=native, minimum=1, unit="tokens")
    if chunk is not None:
        # ours: the engine schedules prefill in power-of-two chunks no larger than the context.
        if chunk & (chunk - 1):
            c.add("prefill_chunk_tokens", f"{chunk} is not a power of two")
        elif context is not None and chunk > context:
            c.add("prefill_chunk_tokens", f"{chunk} tokens exceed context_tokens {context}")
    return chunk


def _engine(c: Checker, d: dict[str, Any], native: bool) -> _Engine:
    """Context ≤ KV capacity, KV dtype, speculation, concurrency, timeouts, slots, prefill chunk."""
    context = c.get_int(d, "", "context_tokens", required=native, minimum=1, unit="tokens")
    kv_cap = c.get_int(d, "", "kv_capacity_tokens", required=native, minimum=1, unit="tokens")
    if context is not None and kv_cap is not None and context > kv_cap:
        c.add("context_tokens", f"{context} tokens exceed kv_capacity_tokens {kv_cap}")
    kv_dtype = c.get_str(d, "", "kv_cache_dtype", required=native, choices=KV_DTYPES)
    speculation = _speculation(c, d, native)
    concurrent = c.get_int(d, "", "concurrent_requests", required=native, minimum=1, maximum=64)
    pending = c.get_int(d, "", "pending_timeout_ms", required=native, minimum=1, maximum=3_600_000, unit="ms")
    slots = c.get_int(d, "", "extra_device_state_slots", required=native, minimum=0, maximum=64, unit="slots")
    return _Engine(
        context_tokens=context,
        kv_capacity_tokens=kv_cap,
        kv_cache_dtype=kv_dtype,
        speculation=speculation,
        concurrent_requests=concurrent,
        pending_timeout_ms=pending,
        extra_device_state_slots=slots,
        prefill_chunk_tokens=_prefill_chunk(c, d, native, context),
    )


def _host(c: Checker, d: dict[str, Any], native: bool) -> _Host:
    """The shared host budget (two exact forms), admission headroom, keep-warm, vision, limits."""
    budget = _budget(c, d, native)
    headroom = c.get_int(
        d, "", "admission_headroom_mib", required=native, minimum=1, maximum=65536, unit="MiB"
    )
    keep_warm = c.get_int(d, "", "keep_warm_ms", required=native, minimum=0, maximum=86_400_000, unit="ms")
    vision = c.get_bool(d, "", "vision", required=native)
    floor = c.get_int(d, "", "host_memory_floor_mib", required=False, minimum=1, unit="MiB")
    power = c.get_int(d, "", "gpu_power_limit_w", required=False, minimum=1, maximum=2000, unit="W")
    return _Host(
        shared_host_budget_bytes=budget.in_bytes,
        shared_host_budget_mib=budget.in_mib,
        admission_headroom_mib=headroom,
        keep_warm_ms=keep_warm,
        vision=vision,
        host_memory_floor_mib=floor,
        gpu_power_limit_w=power,
    )


def _origin(c: Checker, d: dict[str, Any], carried: bool) -> _Origin:
    """The strict-origin config (required when carried), the published config digest, the description."""
    strict = c.get_str(d, "", "strict_origin_config", required=False, pattern=SHORT_HEX, what="a hex digest")
    if carried and strict is None and "strict_origin_config" not in d:
        c.add("strict_origin_config", "required for a carried profile (its published strict-origin config)")
    published = c.get_str(
        d, "", "published_config_sha256", required=False, pattern=SHA256_HEX, what="64 lowercase hex digits"
    )
    c.get_str(d, "", "description", required=False, max_len=2000)
    return _Origin(strict_origin_config=strict, published_config_sha256=published)


def _build(c: Checker, path: Path, d: dict[str, Any], kind: ProfileKind) -> Profile | None:
    """Check each field group of mapping ``d`` in turn; the profile, or ``None`` if anything is bad."""
    native = kind == "native"
    ident = _identity(c, path, d, native)
    files = _files(c, d, native)
    engine = _engine(c, d, native)
    host = _host(c, d, native)
    endpoint = _endpoint(c, d)
    checkpoint = _checkpoint(c, d, native)
    origin = _origin(c, d, ident.carried)
    flags = _flags(c, d, engine.speculation, engine.extra_device_state_slots, host.admission_headroom_mib)
    if c.problems or endpoint is None or checkpoint is None or flags is None:
        return None
    return _assemble(path, kind, ident, files, engine, host, endpoint, checkpoint, origin, flags)


def _assemble(
    path: Path,
    kind: ProfileKind,
    ident: _Identity,
    files: _Files,
    engine: _Engine,
    host: _Host,
    endpoint: Endpoint,
    checkpoint: Checkpoint,
    origin: _Origin,
    flags: tuple[str, ...],
) -> Profile | None:
    """The :class:`Profile` of the checked groups, or ``None`` when a required value is missing."""
    if (
        ident.id is None
        or ident.lane is None
        or ident.gpu is None
        or files.template is None
        or files.model_file is None
        or files.model_sha256 is None
    ):
        return None
    return Profile(
        path=path,
        id=ident.id,
        kind=kind,
        lane=ident.lane,
        component_tag=ident.component_tag,
        carried=ident.carried,
        carried_from=ident.carried_from,
        gpu=ident.gpu,
        cuda_arch=ident.cuda_arch,
        template=files.template,
        config_schema=files.config_schema,
        model_file=files.model_file,
        model_sha256=files.model_sha256,
        context_tokens=engine.context_tokens,
        kv_capacity_tokens=engine.kv_capacity_tokens,
        kv_cache_dtype=engine.kv_cache_dtype,
        speculation=engine.speculation,
        concurrent_requests=engine.concurrent_requests,
        pending_timeout_ms=engine.pending_timeout_ms,
        extra_device_state_slots=engine.extra_device_state_slots,
        prefill_chunk_tokens=engine.prefill_chunk_tokens,
        shared_host_budget_bytes=host.shared_host_budget_bytes,
        shared_host_budget_mib=host.shared_host_budget_mib,
        admission_headroom_mib=host.admission_headroom_mib,
        keep_warm_ms=host.keep_warm_ms,
        vision=host.vision,
        host_memory_floor_mib=host.host_memory_floor_mib,
        gpu_power_limit_w=host.gpu_power_limit_w,
        endpoint=endpoint,
        checkpoint=checkpoint,
        strict_origin_config=origin.strict_origin_config,
        published_config_sha256=origin.published_config_sha256,
        flags=flags,
    )


def _speculation(c: Checker, d: dict[str, Any], native: bool) -> Speculation | None:
    s = c.get_mapping(d, "", "speculation", required=native)
    if s is None:
        return None
    c.keys(s, "speculation", required=("mode", "lm_head_draft", "dflash2"))
    mode = c.get_str(s, "speculation", "mode", pattern=SPEC_MODE, what="none or mtpN (e.g. mtp3)")
    draft = c.get_bool(s, "speculation", "lm_head_draft")
    dflash2 = c.get_bool(s, "speculation", "dflash2")
    if draft and mode == "none":
        c.add("speculation.lm_head_draft", "LM-head drafting needs a speculation mode other than none")
    if mode is None or draft is None or dflash2 is None:
        return None
    return Speculation(mode=mode, lm_head_draft=draft, dflash2=dflash2)


@dataclass(frozen=True, kw_only=True)
class _Budget:
    """The shared host budget in its two forms: whole bytes and exact MiB (``None``: bad or absent)."""

    in_bytes: int | None
    in_mib: Decimal | None


def _budget(c: Checker, d: dict[str, Any], native: bool) -> _Budget:
    """Both forms of the shared host budget, which must agree exactly (1 MiB = 1,048,576 bytes; reference)."""
    raw = d.get("shared_host_budget_bytes")
    if isinstance(raw, float):
        c.add("shared_host_budget_bytes", f"{raw!r} is not an exact whole number of bytes (write an integer)")
        budget = None
    else:
        budget = c.get_int(d, "", "shared_host_budget_bytes", required=native, minimum=1, unit="bytes")
    mib = c.get_decimal(d, "", "shared_host_budget_mib", required=native)
    if budget is not None and mib is not None and mib * MIB != budget:
        exact = budget / Decimal(MIB)
        c.add(
            "shared_host_budget_mib",
            f"{mib} MiB is {mib * MIB} bytes, not shared_host_budget_bytes {budget} (= {exact} MiB); "
            "the two forms must agree exactly",
        )
    if not native and ("shared_host_budget_bytes" in d) != ("shared_host_budget_mib" in d):
        c.add(
            "shared_host_budget_mib",
            "give both shared_host_budget_bytes and shared_host_budget_mib, or neither",
        )
    return _Budget(in_bytes=budget, in_mib=mib)


def _endpoint(c: Checker, d: dict[str, Any]) -> Endpoint | None:
    e = c.get_mapping(d, "", "endpoint")
    if e is None:
        return None
    c.keys(e, "endpoint", required=("host", "port", "auth", "key_file"), optional=("bearer_key",))
    host = c.get_str(e, "endpoint", "host")
    if host is not None:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            c.add(
                "endpoint.host",
                f"{host!r} is not an IP address; the public endpoint is loopback only (127.0.0.1 or ::1)",
            )
            host = None
        else:
            if not loopback:
                c.add("endpoint.host", f"{host} is not loopback; the public endpoint is loopback only")
                host = None
    port = c.get_int(e, "endpoint", "port", minimum=1, maximum=65535)
    auth = c.get_str(e, "endpoint", "auth", choices=("bearer",))
    key_file = c.get_str(e, "endpoint", "key_file")
    if key_file is not None:
        p = PurePosixPath(key_file)
        if (
            p.is_absolute()
            or ".." in p.parts
            or "\\" in key_file
            or not all(FILE_NAME.fullmatch(x) for x in p.parts)
        ):
            c.add("endpoint.key_file", f"{key_file!r} must be a relative POSIX path of plain names")
            key_file = None
    if "bearer_key" in e:
        key = e["bearer_key"]
        if isinstance(key, str) and len(key.encode("utf-8")) < MIN_KEY_BYTES:
            c.add(
                "endpoint.bearer_key",
                f"bearer key is {len(key.encode('utf-8'))} bytes; at least {MIN_KEY_BYTES} are required",
            )
        c.add(
            "endpoint.bearer_key",
            "a key must never be in a public profile; the installer generates it into endpoint.key_file",
        )
    if host is None or port is None or auth is None or key_file is None:
        return None
    return Endpoint(host=host, port=port, auth=auth, key_file=key_file)


def _checkpoint(c: Checker, d: dict[str, Any], native: bool) -> Checkpoint | None:
    k = c.get_mapping(d, "", "checkpoint")
    if k is None:
        return None
    if native:
        c.keys(k, "checkpoint", required=("dir", "schema", "require_origin_auth"))
    else:
        c.keys(k, "checkpoint", required=("mount", "require_origin_auth"), optional=("schema",))
    dir_template = mount = None
    if native:
        dir_template = c.get_str(k, "checkpoint", "dir")
        if dir_template is not None and dir_template != CHECKPOINT_DIR_TEMPLATE:
            c.add("checkpoint.dir", f"{dir_template!r} is not the required form {CHECKPOINT_DIR_TEMPLATE!r}")
    else:
        mount = c.get_str(
            k,
            "checkpoint",
            "mount",
            pattern=re.compile(r"/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*"),
            what="an absolute container path",
        )
    schema = c.get_int(k, "checkpoint", "schema", required=native)
    if native and schema is not None and schema != CHECKPOINT_SCHEMA:
        c.add("checkpoint.schema", f"{schema} is not the required checkpoint schema {CHECKPOINT_SCHEMA}")
    origin = c.get_bool(k, "checkpoint", "require_origin_auth")
    if origin is False:
        c.add("checkpoint.require_origin_auth", "product profiles require origin authentication (true)")
    if origin is None or (native and dir_template is None) or (not native and mount is None):
        return None
    return Checkpoint(
        root=CHECKPOINT_ROOT if native else None,
        dir_template=dir_template,
        mount=mount,
        schema=schema,
        require_origin_auth=origin,
    )


def _flag_problem(item: object) -> str:
    """Why launch-flag string ``item`` is refused on its own (``""``: accepted); see :data:`KNOWN_FLAGS`.

    A flag is ``--name`` or ``--name <whole number>`` (one space, never ``=``); obsolete flags are
    errors with no alias (reference "K5").
    """
    if not isinstance(item, str):
        return "must be a string such as '--device-state-slots 2'"
    name, _, value = item.partition(" ")
    base = name.split("=", 1)[0]
    if base in OBSOLETE_FLAGS:
        return f"{base} is {OBSOLETE_FLAGS[base]}"
    if base not in KNOWN_FLAGS:
        return f"unknown flag {base!r}{suggest(base, KNOWN_FLAGS)}"
    if "=" in name:
        return f"write {base!r} and its value separated by one space, not '='"
    takes_value, _setting = KNOWN_FLAGS[base]
    if takes_value and not re.fullmatch(r"[0-9]+", value):
        return f"{base} needs one whole-number value, e.g. '{base} 2'"
    if not takes_value and value:
        return f"{base} takes no value"
    return ""


def _check_mirrors(
    c: Checker,
    seen: dict[str, str | None],
    speculation: Speculation | None,
    slots: int | None,
    headroom: int | None,
) -> None:
    """Each flag that mirrors a setting says what the setting says; the required flag is there.

    ``seen`` maps each given flag to its value (``None``: no value). Rules: reference
    "Rules that come with them" (``--session-checkpoint-require-origin-auth`` on every profile).
    """
    expect: dict[str, str | None] = {
        "--device-state-slots": None if slots is None else str(slots),
        "--admission-headroom-mib": None if headroom is None else str(headroom),
    }
    for flag, want in expect.items():
        setting = KNOWN_FLAGS[flag][1]
        if want is None:
            if flag in seen:
                c.add("flags", f"{flag} is given but {setting} is not")
        elif flag not in seen:
            c.add("flags", f"{flag} {want} is missing (it mirrors {setting})")
        elif seen[flag] != want:
            c.add("flags", f"{flag} {seen[flag]} disagrees with {setting} {want}")
    if speculation is not None and speculation.lm_head_draft != ("--lm-head-draft" in seen):
        c.add("flags", "--lm-head-draft must be given exactly when speculation.lm_head_draft is true")
    if REQUIRED_FLAG not in seen:
        c.add("flags", f"{REQUIRED_FLAG} is missing; product profiles require it")


def _flags(
    c: Checker,
    d: dict[str, Any],
    speculation: Speculation | None,
    slots: int | None,
    headroom: int | None,
) -> tuple[str, ...] | None:
    """The ``flags`` list, each flag checked and given once, mirroring its setting; ``None`` if any is bad."""
    raw = c.get_list(d, "", "flags")
    if raw is None:
        return None
    seen: dict[str, str | None] = {}
    flags: list[str] = []
    before = len(c.problems)
    for i, item in enumerate(raw):
        problem = _flag_problem(item)
        if problem:
            c.add(f"flags[{i}]", problem)
            continue
        name, _, value = item.partition(" ")
        if name in seen:
            c.add(f"flags[{i}]", f"{name} is given twice")
            continue
        seen[name] = value or None
        flags.append(item)
    _check_mirrors(c, seen, speculation, slots, headroom)
    if len(c.problems) != before:
        return None
    return tuple(flags)
