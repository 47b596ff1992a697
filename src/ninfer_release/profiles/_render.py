"""Config rendering: Jinja2 template + values → exact UTF-8/LF bytes and their two hashes.

Rules (DESIGN.md §5, cases C42/C43):

* Jinja2 with ``StrictUndefined`` (an undefined variable is an error), ``keep_trailing_newline``
  (C42: ``port={{ port }}`` + LF renders ``port=8080\\n``), autoescape off, sandboxed, no loader
  (no ``include``/``extends``: a template is one self-contained file).
* Template source: strict UTF-8, no BOM. CRLF line ends (a Windows ``core.autocrlf`` checkout)
  are accepted and normalised to LF (C43); a lone CR is refused (it is not a line end on any
  current system and would be ambiguous).
* Values: no control characters in any string (a CR in a *value* survives Jinja, C43 note).
* Output: ``bytes``, UTF-8, LF only, no BOM, independent of locale and OS; never text mode.
* Configs (:func:`render_config`) are then parsed back with ``tomllib`` and every profile value
  must be present at its key with the intended type and value; the semantic digest is SHA-256 of
  the RFC 8785 canonical JSON of the parsed document.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ninfer_release.errors import DefinitionError, InputError, Problem
from ninfer_release.hashing import sha256_bytes
from ninfer_release.jsonbytes import semantic_sha256
from ninfer_release.profiles._check import control_chars
from ninfer_release.profiles._layout import InstallLayout, install_layout
from ninfer_release.profiles._profile import CONFIG_SCHEMA, Profile

#: Largest template we read, in bytes (ours).
MAX_TEMPLATE_BYTES = 256 * 1024


@dataclass(frozen=True, kw_only=True)
class RenderedTemplate:
    """Rendered text as exact bytes (UTF-8, LF) and their SHA-256."""

    template: Path
    data: bytes
    bytes_sha256: str


@dataclass(frozen=True, kw_only=True)
class RenderedConfig:
    """A profile's engine config: exact ``data`` bytes, both hashes, the parsed TOML.

    ``bytes_sha256`` binds the exact bytes (native lanes); ``semantic_sha256`` binds the parsed
    content in RFC 8785 canonical JSON (the container lane). Never mix them (DESIGN.md §5).
    """

    profile_id: str
    template: Path
    data: bytes
    bytes_sha256: str
    semantic_sha256: str
    parsed: Mapping[str, Any]

    @property
    def size(self) -> int:
        """Length of ``data`` in bytes."""
        return len(self.data)


def toml_literal(value: Any) -> str:
    """``value`` as a TOML literal: the ``toml`` filter templates use for every value.

    Strings become basic strings with ``\\`` and ``"`` escaped; decimals become strings (exact);
    lists become inline arrays. ``None`` has no TOML form (leave the key out instead).

    Raises:
        TypeError: ``None`` or an unsupported type.
        ValueError: a string holding control characters.
    """
    if isinstance(value, jinja2.Undefined):
        str(value)  # StrictUndefined raises UndefinedError naming the variable
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return toml_literal(str(value))
    if isinstance(value, str):
        if control_chars(value):
            raise ValueError(f"string {value!r} holds control characters")
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    raise TypeError(f"{type(value).__name__} value {value!r} has no TOML form here")


def _environment() -> jinja2.Environment:
    env = ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        newline_sequence="\n",
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
        cache_size=0,
    )
    env.filters["toml"] = toml_literal
    return env


def _value_problems(values: Any, where: str, file: str, out: list[Problem]) -> None:
    if isinstance(values, Mapping):
        for k, v in values.items():
            _value_problems(v, f"{where}.{k}" if where else str(k), file, out)
    elif isinstance(values, list | tuple):
        for i, v in enumerate(values):
            _value_problems(v, f"{where}[{i}]", file, out)
    elif isinstance(values, str):
        bad = control_chars(values)
        if bad:
            out.append(
                Problem(
                    file=file,
                    field=where,
                    message=f"value contains control character(s) {', '.join(bad)} (C43)",
                )
            )


def _read_template(path: Path) -> str:
    file = str(path)
    try:
        if not path.is_file():
            raise DefinitionError(problems=[Problem(file=file, message="template not found")])
        with path.open("rb") as f:
            raw = f.read(MAX_TEMPLATE_BYTES + 1)
    except OSError as exc:
        raise InputError(problems=[Problem(file=file, message=f"cannot read: {exc.strerror}")]) from None
    problems: list[str] = []
    if len(raw) > MAX_TEMPLATE_BYTES:
        problems.append(f"larger than {MAX_TEMPLATE_BYTES} bytes")
    if not raw.strip():
        problems.append("empty template")
    if raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        problems.append("starts with a byte-order mark; save as UTF-8 without BOM")
    lone_cr = raw.replace(b"\r\n", b"").find(b"\r")
    if lone_cr >= 0:
        line = raw.replace(b"\r\n", b"\n")[:lone_cr].count(b"\n") + 1
        problems.append(f"line {line}: lone CR byte (only LF or CRLF line ends are accepted)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        problems.append(f"line {line}: not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})")
        text = ""
    if problems:
        raise DefinitionError(problems=[Problem(file=file, message=m) for m in problems])
    # C43: a CRLF checkout renders exactly like its LF original.
    return text.replace("\r\n", "\n")


def render_template(template_path: Path, values: Mapping[str, Any]) -> RenderedTemplate:
    """Render one Jinja2 template file with ``values`` into exact UTF-8/LF bytes.

    Generic (the output need not be TOML): cases C42 and C43 render ``engine.cfg``-style files
    through this. See the module docstring for the rules.

    Raises:
        DefinitionError: BOM, lone CR, non-UTF-8, syntax error (with line), undefined variable,
            a value with control characters, or output that is not clean UTF-8/LF.
        InputError: the template cannot be read.
    """
    file = str(template_path)
    problems: list[Problem] = []
    _value_problems(values, "", file, problems)
    text = _read_template(template_path)
    if problems:
        raise DefinitionError(problems=problems)
    env = _environment()
    try:
        out = env.from_string(text).render(dict(values))
    except jinja2.TemplateSyntaxError as exc:
        raise DefinitionError(
            problems=[Problem(file=file, message=f"line {exc.lineno}: template syntax error: {exc.message}")]
        ) from None
    except jinja2.UndefinedError as exc:
        raise DefinitionError(
            problems=[Problem(file=file, message=f"undefined variable: {exc.message}")]
        ) from None
    except (jinja2.TemplateError, TypeError, ValueError) as exc:
        raise DefinitionError(problems=[Problem(file=file, message=f"cannot render: {exc}")]) from None
    bad = control_chars(out.replace("\n", "").replace("\t", ""))
    if bad or "\r" in out:
        raise DefinitionError(
            problems=[
                Problem(file=file, message=f"rendered output holds control character(s) {', '.join(bad)}")
            ]
        )
    data = out.encode("utf-8")
    return RenderedTemplate(template=template_path, data=data, bytes_sha256=sha256_bytes(data))


def _layout_of(profile: Profile) -> InstallLayout | None:
    return install_layout(profile) if profile.kind == "native" else None


def template_values(profile: Profile) -> dict[str, Any]:
    """The variables a profile's template sees: every public profile value, ``args`` and ``layout``.

    Keys mirror :meth:`Profile.public_dict` (exact MiB as a decimal string); ``None`` means
    "not stated" and the template leaves that key out. ``layout`` (native profiles only) holds
    the :class:`~ninfer_release.profiles.InstallLayout` fields, the one source of every installed
    path the config names (``docs/install-layout.md``).
    """
    values = profile.public_dict()
    values.pop("args")
    values["args"] = list(profile.args)
    values["config_schema"] = profile.config_schema
    layout = _layout_of(profile)
    if layout is not None:
        values["layout"] = {
            "data_root": layout.data_root,
            "key_file": layout.key_file,
            "model": layout.model,
            "cache_root": layout.cache_root,
            "checkpoint_dir_template": layout.checkpoint_dir_template,
        }
    return values


def expected_config(profile: Profile) -> dict[str, Any]:
    """Where each profile value must land in the config (TOML key path → value; ``None`` = absent).

    This is the config schema 4 layout (ours); :func:`render_config` checks the parsed output
    against it, so a template that drops or mangles a value is refused, naming the key.
    """
    spec = profile.speculation
    mib = profile.shared_host_budget_mib
    layout = _layout_of(profile)
    return {
        "config_schema": profile.config_schema,
        "profile_id": profile.id,
        "component_tag": profile.component_tag,
        "paths.data_root": None if layout is None else layout.data_root,
        "model.file": profile.model_file,
        "model.path": None if layout is None else layout.model,
        "model.sha256": profile.model_sha256,
        "model.context_tokens": profile.context_tokens,
        "model.kv_capacity_tokens": profile.kv_capacity_tokens,
        "model.kv_cache_dtype": profile.kv_cache_dtype,
        "model.vision": profile.vision,
        "speculation.mode": None if spec is None else spec.mode,
        "speculation.lm_head_draft": None if spec is None else spec.lm_head_draft,
        "speculation.dflash2": None if spec is None else spec.dflash2,
        "scheduler.concurrent_requests": profile.concurrent_requests,
        "scheduler.pending_timeout_ms": profile.pending_timeout_ms,
        "scheduler.extra_device_state_slots": profile.extra_device_state_slots,
        "scheduler.prefill_chunk_tokens": profile.prefill_chunk_tokens,
        "scheduler.admission_headroom_mib": profile.admission_headroom_mib,
        "scheduler.keep_warm_ms": profile.keep_warm_ms,
        "memory.shared_host_budget_bytes": profile.shared_host_budget_bytes,
        "memory.shared_host_budget_mib": None if mib is None else str(mib),
        "memory.host_memory_floor_mib": profile.host_memory_floor_mib,
        "gpu.name": profile.gpu,
        "gpu.cuda_arch": profile.cuda_arch,
        "gpu.power_limit_w": profile.gpu_power_limit_w,
        "server.host": profile.endpoint.host,
        "server.port": profile.endpoint.port,
        "server.auth": profile.endpoint.auth,
        "server.bearer_key_file": profile.endpoint.key_file if layout is None else layout.key_file,
        "checkpoint.root": profile.checkpoint.root if layout is None else layout.cache_root,
        "checkpoint.dir_template": profile.checkpoint.dir_template
        if layout is None
        else layout.checkpoint_dir_template,
        "checkpoint.mount": profile.checkpoint.mount,
        "checkpoint.schema": profile.checkpoint.schema,
        "checkpoint.require_origin_auth": profile.checkpoint.require_origin_auth,
        "checkpoint.strict_origin_config": profile.strict_origin_config,
        "engine.args": list(profile.args),
    }


_ABSENT = object()


def _lookup(doc: Mapping[str, Any], dotted: str) -> Any:
    node: Any = doc
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def check_config(profile: Profile, parsed: Mapping[str, Any], file: str) -> list[Problem]:
    """Every mismatch between the parsed config and :func:`expected_config`, one per key."""
    problems: list[Problem] = []
    for key, want in expected_config(profile).items():
        got = _lookup(parsed, key)
        if want is None:
            if got is not _ABSENT:
                problems.append(
                    Problem(file=file, field=key, message=f"must be absent (not stated), got {got!r}")
                )
        elif got is _ABSENT:
            problems.append(
                Problem(file=file, field=key, message=f"missing from the rendered config (want {want!r})")
            )
        elif not _same(got, want):
            problems.append(Problem(file=file, field=key, message=f"rendered as {got!r}, want {want!r}"))
    return problems


def render_config(profile: Profile, *, templates_dir: Path | None = None) -> RenderedConfig:
    """Render ``profile``'s engine config (TOML, config schema 4) and hash it both ways.

    ``templates_dir`` defaults to ``templates/`` beside the profile file. The output is parsed
    back with ``tomllib`` and checked value by value (:func:`expected_config`).

    Raises:
        DefinitionError: template problems (see :func:`render_template`), TOML that does not
            parse, a value dropped or mangled (named by its key), or a wrong ``config_schema``.
    """
    tdir = templates_dir if templates_dir is not None else profile.path.parent / "templates"
    template_path = tdir / profile.template
    rendered = render_template(template_path, template_values(profile))
    file = f"{template_path} (rendering {profile.id})"
    try:
        parsed = tomllib.loads(rendered.data.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DefinitionError(
            problems=[Problem(file=file, message=f"rendered config is not TOML: {exc}")]
        ) from None
    problems = check_config(profile, parsed, file)
    if profile.config_schema is None and parsed.get("config_schema") not in (None, CONFIG_SCHEMA):
        problems.append(Problem(file=file, field="config_schema", message="unexpected config schema"))
    try:
        semantic = semantic_sha256(parsed)
    except (TypeError, ValueError) as exc:
        problems.append(Problem(file=file, message=f"rendered config has no canonical JSON form: {exc}"))
        semantic = ""
    if problems:
        raise DefinitionError(problems=problems)
    return RenderedConfig(
        profile_id=profile.id,
        template=template_path,
        data=rendered.data,
        bytes_sha256=rendered.bytes_sha256,
        semantic_sha256=semantic,
        parsed=MappingProxyType(parsed),
    )
