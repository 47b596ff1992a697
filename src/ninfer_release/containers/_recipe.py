"""Image recipes (``containers/<name>.yaml``): what goes into a container lane's image.

A recipe is data, parsed once into a frozen :class:`ImageRecipe`; every problem is reported at
once with the recipe file and the field path (exit 4). See ``docs/containers.md`` for the format.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ninfer_release import strictjson
from ninfer_release.digests import is_digest
from ninfer_release.errors import InputError, Problem

from ._layers import EXEC_MODE, layer_path_problem

RECIPE_SCHEMA = 1
REQUIRED_LABELS = (
    "org.opencontainers.image.version",
    "org.opencontainers.image.revision",
    "org.opencontainers.image.source",
    "org.opencontainers.image.created",
)
RENDERED_KINDS = ("config", "profile")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_USER = re.compile(r"^[1-9][0-9]*(:[0-9]+)?$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_TOP_KEYS = frozenset(
    {
        "schema", "lane", "image", "source", "profile", "config_binding", "platform", "base", "user",
        "workdir", "env", "entrypoint", "cmd", "ports", "checkpoint_mount", "labels", "layers", "smoke",
        "description",
    }
)  # fmt: skip
_ENTRY_KEYS = frozenset({"staged", "archive", "rendered", "dir", "dest", "mode", "bind"})

EntrySource = Literal["staged", "archive", "rendered", "dir"]


@dataclass(frozen=True, kw_only=True)
class LayerItem:
    """One recipe entry: ``kind`` says where bytes come from; ``dest`` is the in-image path (relative).

    * ``staged``: the staged file ``source`` (relative to the lane's inputs dir) at ``dest``;
    * ``archive``: the staged tar(.gz) ``source`` unpacked under ``dest``;
    * ``rendered``: ``source`` is ``config`` or ``profile``, rendered by the profiles stage;
    * ``dir``: an empty directory ``dest`` (e.g. a mount point).
    """

    kind: EntrySource
    source: str
    dest: str
    mode: int
    field_path: str
    bind: str = ""  # binding name: the build labels io.ninfer.binding.<bind>.sha256 with the input's digest


@dataclass(frozen=True, kw_only=True)
class LayerSpec:
    """A layer of the recipe: ``name`` (goes into history ``created_by``) and its items."""

    name: str
    items: tuple[LayerItem, ...]


@dataclass(frozen=True, kw_only=True)
class SmokeSpec:
    """How the docker backend smoke-runs the image: arguments, and text the output must contain.

    ``checkpoint_probe`` names a file the smoke command writes into the checkpoint mount; the
    backend then checks it exists there, owned by the image user, on a named and on an anonymous
    volume (issue 8 §4). Empty: no probe.
    """

    args: tuple[str, ...]
    expect: str
    checkpoint_probe: str = ""


@dataclass(frozen=True, kw_only=True)
class ImageRecipe:
    """A parsed image recipe (see ``docs/containers.md``); ``file`` is where it was read from."""

    file: str
    lane: str
    image: str  # repository name without tag/digest, e.g. ghcr.io/alphastorm/ninfer-runtime
    source_url: str
    profile: str
    config_binding: Literal["semantic"]
    os: str
    architecture: str
    base_digest: str
    base_name: str
    user: str
    workdir: str
    env: tuple[tuple[str, str], ...]
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    ports: tuple[int, ...]
    checkpoint_mount: str
    labels: Mapping[str, str] = field(default_factory=dict)
    layers: tuple[LayerSpec, ...]
    smoke: SmokeSpec | None = None
    #: Who supplies the base image (``base.supplier``; optional): the image SBOM's base supplier.
    base_supplier: str = ""

    @property
    def owner(self) -> tuple[int, int]:
        """The image user as numeric ``(uid, gid)``; gid 0 when the recipe gives only a UID."""
        uid, _, gid = self.user.partition(":")
        return int(uid), int(gid or 0)

    @property
    def staged_sources(self) -> tuple[tuple[str, str], ...]:
        """(field path, staged relative path) of every staged file and archive the recipe names."""
        return tuple(
            (item.field_path, item.source)
            for layer in self.layers
            for item in layer.items
            if item.kind in ("staged", "archive")
        )

    @property
    def rendered_kinds(self) -> frozenset[str]:
        """Which rendered inputs (``config``, ``profile``) the recipe uses."""
        return frozenset(i.source for layer in self.layers for i in layer.items if i.kind == "rendered")


def _str(
    data: Mapping[str, Any], key: str, problems: list[Problem], file: str, *, required: bool = True
) -> str:
    value = data.get(key)
    if value is None:
        if required:
            problems.append(Problem(file=file, field=key, message="required"))
        return ""
    if not isinstance(value, str) or not value:
        problems.append(Problem(file=file, field=key, message=f"must be a non-empty string, got {value!r}"))
        return ""
    return value


def _str_list(value: Any, fld: str, problems: list[Problem], file: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(Problem(file=file, field=fld, message="must be a list of strings"))
        return ()
    return tuple(value)


def _mode(value: Any) -> int | None:
    # YAML 1.2 reads an unquoted 0755 as decimal 755: modes are written quoted ("0755") or as 0o755.
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value in (0o644, EXEC_MODE) else None
    if isinstance(value, str) and re.fullmatch(r"0?o?[0-7]{3}", value):
        return int(value.replace("o", ""), 8)
    return None


def _abs_path(value: str, fld: str, problems: list[Problem], file: str) -> str:
    if not value.startswith("/"):
        problems.append(
            Problem(file=file, field=fld, message=f"{value!r} must be an absolute path in the image")
        )
        return value
    if value != "/" and (msg := layer_path_problem(value)) is not None:
        problems.append(Problem(file=file, field=fld, message=msg))
    return value


@dataclass(frozen=True, kw_only=True)
class _ItemHead:
    """The part of a recipe entry every kind has: which kind, its source and its in-image ``dest``."""

    kind: EntrySource
    source: str
    dest: str


def _item_head(raw: Any, fld: str, problems: list[Problem], file: str) -> _ItemHead | None:
    """Kind, source and dest of entry ``raw``, or None (a problem recorded) when one is unusable."""
    if not isinstance(raw, dict):
        problems.append(Problem(file=file, field=fld, message="must be a mapping"))
        return None
    unknown = sorted(set(raw) - _ENTRY_KEYS)
    if unknown:
        problems.append(
            Problem(file=file, field=fld, message=f"unknown keys {unknown}; known: {sorted(_ENTRY_KEYS)}")
        )
    kinds = [k for k in ("staged", "archive", "rendered", "dir") if k in raw]
    if len(kinds) != 1:
        problems.append(
            Problem(file=file, field=fld, message="needs exactly one of staged/archive/rendered/dir")
        )
        return None
    kind: EntrySource = kinds[0]  # type: ignore[assignment]
    source = raw[kind]
    if not isinstance(source, str) or not source:
        problems.append(Problem(file=file, field=f"{fld}.{kind}", message="must be a non-empty string"))
        return None
    dest = source if kind == "dir" else raw.get("dest")
    if not isinstance(dest, str) or not dest:
        problems.append(
            Problem(file=file, field=f"{fld}.dest", message="required (the path inside the image)")
        )
        return None
    return _ItemHead(kind=kind, source=source, dest=dest)


def _item_source_problems(head: _ItemHead, fld: str, problems: list[Problem], file: str) -> bool:
    """Record problems of the entry's paths and source (C15 layer paths); True when there were any."""
    kind, source = head.kind, head.source
    checked = [(f"{fld}.dest" if kind != "dir" else f"{fld}.dir", head.dest)]
    if kind in ("staged", "archive"):
        checked.append((f"{fld}.{kind}", source))
    found = [
        Problem(file=file, field=sub, message=msg)
        for sub, p in checked
        if (msg := layer_path_problem(p)) is not None
    ]
    if kind == "staged" and source.startswith("/"):
        found.append(Problem(file=file, field=f"{fld}.staged", message="must be relative to the inputs dir"))
    if kind == "rendered" and source not in RENDERED_KINDS:
        found.append(
            Problem(file=file, field=f"{fld}.rendered", message=f"must be one of {list(RENDERED_KINDS)}")
        )
    problems.extend(found)
    return bool(found)


def _item_bind(
    raw: Mapping[str, Any], kind: EntrySource, fld: str, problems: list[Problem], file: str
) -> bool:
    """Record a problem when ``bind`` is not a lowercase name on a staged file or archive; True if so."""
    bind = raw.get("bind", "")
    if bind and (not isinstance(bind, str) or not _NAME.match(bind) or kind not in ("staged", "archive")):
        problems.append(
            Problem(
                file=file,
                field=f"{fld}.bind",
                message="a lowercase binding name, on a staged file or archive",
            )
        )
        return True
    return False


def _parse_item(raw: Any, fld: str, problems: list[Problem], file: str) -> LayerItem | None:
    """One layer entry (``layers[i].entries[j]``), or None when it has a problem (recorded)."""
    head = _item_head(raw, fld, problems, file)
    if head is None:
        return None
    bad = _item_source_problems(head, fld, problems, file)
    mode = _mode(raw.get("mode", 0o644))
    if mode not in (0o644, EXEC_MODE):
        problems.append(
            Problem(
                file=file, field=f"{fld}.mode", message='must be "0644" or "0755" (quoted) or 0o644/0o755'
            )
        )
        bad = True
    bad = _item_bind(raw, head.kind, fld, problems, file) or bad
    if bad or mode is None:
        return None
    return LayerItem(
        kind=head.kind,
        source=head.source,
        dest=head.dest.strip("/"),
        mode=mode,
        field_path=fld,
        bind=str(raw.get("bind", "")),
    )


@dataclass(frozen=True, kw_only=True)
class _Base:
    """The recipe's ``base`` block: pinned digest, name and (optional) supplier."""

    digest: str = ""
    name: str = ""
    supplier: str = ""


def _check_top(data: Mapping[str, Any], problems: list[Problem], file: str) -> None:
    """Unknown top-level keys and the schema number."""
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        problems.append(Problem(file=file, message=f"unknown keys {unknown}; known: {sorted(_TOP_KEYS)}"))
    if not strictjson.json_equal(data.get("schema"), RECIPE_SCHEMA):
        problems.append(Problem(file=file, field="schema", message=f"must be {RECIPE_SCHEMA}"))


def _parse_image_name(data: Mapping[str, Any], problems: list[Problem], file: str) -> str:
    """``image``: a repository name without tag or digest."""
    image = _str(data, "image", problems, file)
    if image and ("@" in image or ":" in image.rsplit("/", 1)[-1]):
        problems.append(Problem(file=file, field="image", message="a repository name without tag or digest"))
    return image


def _check_binding(data: Mapping[str, Any], problems: list[Problem], file: str) -> None:
    """``config_binding`` must be ``semantic`` (DESIGN.md §5: the container lane's config digest)."""
    if data.get("config_binding") != "semantic":
        problems.append(
            Problem(
                file=file,
                field="config_binding",
                message="the container lane binds the 'semantic' config digest",
            )
        )


@dataclass(frozen=True, kw_only=True)
class _Platform:
    """The image platform (OCI image-spec ``os`` / ``architecture``)."""

    os: str = "linux"
    architecture: str = "amd64"


def _parse_platform(data: Mapping[str, Any]) -> _Platform:
    """``platform``; linux/amd64 for what is not given (or when it is not a mapping)."""
    platform = data.get("platform") or {}
    if not isinstance(platform, dict):
        return _Platform()
    return _Platform(
        os=str(platform.get("os", "linux")), architecture=str(platform.get("architecture", "amd64"))
    )


def _parse_base(data: Mapping[str, Any], problems: list[Problem], file: str) -> _Base:
    """``base``: pinned by a full ``sha256:`` digest (a tag is refused, C36)."""
    base = data.get("base")
    if not isinstance(base, dict):
        problems.append(Problem(file=file, field="base", message="required: {digest: sha256:..., name: ...}"))
        return _Base()
    out = _Base(
        digest=str(base.get("digest", "")),
        name=str(base.get("name", "")),
        supplier=str(base.get("supplier", "")),
    )
    if not is_digest(out.digest):
        problems.append(
            Problem(
                file=file,
                field="base.digest",
                message=f"{out.digest!r}: pin the base by a full sha256:<64 hex> digest, not a tag",
            )
        )
    return out


def _parse_user(data: Mapping[str, Any], problems: list[Problem], file: str) -> str:
    """``user``: a non-root numeric ``UID[:GID]``."""
    user = str(data.get("user", ""))
    if not _USER.match(user):
        problems.append(
            Problem(file=file, field="user", message=f"{user!r}: must be a non-root numeric UID[:GID]")
        )
    return user


def _parse_env(data: Mapping[str, Any], problems: list[Problem], file: str) -> tuple[tuple[str, str], ...]:
    """``env``: ``(NAME, value)`` pairs in recipe order (an int value becomes its decimal string)."""
    env_raw = data.get("env") or {}
    if not isinstance(env_raw, dict):
        problems.append(Problem(file=file, field="env", message="must be a mapping NAME: value"))
        return ()
    env: list[tuple[str, str]] = []
    for k, v in env_raw.items():
        if not isinstance(k, str) or not _ENV_NAME.match(k):
            problems.append(Problem(file=file, field=f"env.{k}", message="not a valid variable name"))
        elif not isinstance(v, str | int) or isinstance(v, bool):
            problems.append(Problem(file=file, field=f"env.{k}", message="value must be a string"))
        else:
            env.append((k, str(v)))
    return tuple(env)


def _parse_entrypoint(data: Mapping[str, Any], problems: list[Problem], file: str) -> tuple[str, ...]:
    """``entrypoint``: a required exec-form list."""
    entrypoint = _str_list(data.get("entrypoint"), "entrypoint", problems, file)
    if not entrypoint:
        problems.append(Problem(file=file, field="entrypoint", message="required (exec form list)"))
    return entrypoint


def _parse_ports(data: Mapping[str, Any], problems: list[Problem], file: str) -> tuple[int, ...]:
    """``ports``: TCP port numbers 1..65535."""
    ports_raw = data.get("ports") or []
    if not isinstance(ports_raw, list):
        problems.append(Problem(file=file, field="ports", message="must be a list of TCP ports"))
        return ()
    ports: list[int] = []
    for i, p in enumerate(ports_raw):
        if not isinstance(p, int) or isinstance(p, bool) or not 0 < p < 65536:
            problems.append(Problem(file=file, field=f"ports[{i}]", message=f"{p!r} is not a TCP port"))
        else:
            ports.append(p)
    return tuple(ports)


def _parse_labels(data: Mapping[str, Any], problems: list[Problem], file: str) -> dict[str, str]:
    """``labels``: string values; the four OCI labels the build sets may not be given."""
    labels_raw = data.get("labels") or {}
    if not isinstance(labels_raw, dict):
        problems.append(Problem(file=file, field="labels", message="must be a mapping"))
        return {}
    labels: dict[str, str] = {}
    for k, v in labels_raw.items():
        if k in REQUIRED_LABELS:
            problems.append(
                Problem(
                    file=file,
                    field=f"labels.{k}",
                    message="set by the build (version, revision, source, created)",
                )
            )
        elif not isinstance(v, str):
            problems.append(Problem(file=file, field=f"labels.{k}", message="value must be a string"))
        else:
            labels[str(k)] = v
    return labels


def _parse_layer(
    layer: Any, fld: str, names: set[str], problems: list[Problem], file: str
) -> LayerSpec | None:
    """One ``layers[i]`` (``{name, entries}``); ``names`` collects the names seen so far (unique)."""
    if not isinstance(layer, dict):
        problems.append(Problem(file=file, field=fld, message="must be a mapping {name, entries}"))
        return None
    name = layer.get("name")
    if not isinstance(name, str) or not _NAME.match(name) or name in names:
        problems.append(
            Problem(file=file, field=f"{fld}.name", message=f"{name!r}: needs a unique lowercase name")
        )
    else:
        names.add(name)
    entries = layer.get("entries")
    if not isinstance(entries, list) or not entries:
        problems.append(Problem(file=file, field=f"{fld}.entries", message="required: a non-empty list"))
        return None
    items = [_parse_item(e, f"{fld}.entries[{ei}]", problems, file) for ei, e in enumerate(entries)]
    return LayerSpec(name=str(name), items=tuple(i for i in items if i is not None))


def _parse_layers(data: Mapping[str, Any], problems: list[Problem], file: str) -> tuple[LayerSpec, ...]:
    """``layers``: a non-empty list of uniquely named layers, in image order."""
    layers_raw = data.get("layers")
    if not isinstance(layers_raw, list) or not layers_raw:
        problems.append(Problem(file=file, field="layers", message="required: a non-empty list"))
        layers_raw = []
    names: set[str] = set()
    parsed = [
        _parse_layer(layer, f"layers[{li}]", names, problems, file) for li, layer in enumerate(layers_raw)
    ]
    return tuple(layer for layer in parsed if layer is not None)


def _parse_smoke(data: Mapping[str, Any], problems: list[Problem], file: str) -> SmokeSpec | None:
    """``smoke`` (optional): ``{args, expect, checkpoint_probe}`` for the docker backend's smoke run."""
    smoke_raw = data.get("smoke")
    if smoke_raw is None:
        return None
    if not isinstance(smoke_raw, dict):
        problems.append(Problem(file=file, field="smoke", message="must be a mapping {args, expect}"))
        return None
    unknown_smoke = sorted(set(smoke_raw) - {"args", "expect", "checkpoint_probe"})
    if unknown_smoke:
        problems.append(Problem(file=file, field="smoke", message=f"unknown keys {unknown_smoke}"))
    probe = smoke_raw.get("checkpoint_probe", "")
    if not isinstance(probe, str) or (probe and not _NAME.match(probe)):
        problems.append(
            Problem(
                file=file,
                field="smoke.checkpoint_probe",
                message=f"{probe!r}: a plain lowercase file name in the checkpoint mount",
            )
        )
        probe = ""
    return SmokeSpec(
        args=_str_list(smoke_raw.get("args"), "smoke.args", problems, file),
        expect=str(smoke_raw.get("expect", "")),
        checkpoint_probe=probe,
    )


def _check_mount_dir(mount: str, layers: Sequence[LayerSpec], problems: list[Problem], file: str) -> None:
    """The checkpoint mount must be made by a ``dir:`` entry (else the engine makes it root-owned)."""
    mount_dirs = [
        i for layer in layers for i in layer.items if i.kind == "dir" and "/" + i.dest == mount.rstrip("/")
    ]
    if mount != "/" and not mount_dirs:
        problems.append(
            Problem(
                file=file,
                field="checkpoint_mount",
                message=f"{mount} is created by no 'dir:' layer entry; without one the engine makes it "
                "root-owned and the image user cannot write checkpoints",
            )
        )


def parse_recipe(data: Any, *, file: str) -> ImageRecipe:
    """Parse a recipe mapping (already loaded from YAML/JSON) into an :class:`ImageRecipe`.

    Checks: schema 1; base pinned by a full ``sha256:`` digest (a tag is refused); in-image paths
    stay inside the root; modes 0644/0755; a non-root ``user``; ports; the container lane binds
    the ``semantic`` config digest (DESIGN.md §5); the checkpoint mount is a declared volume.
    One step per field group, in file order, so the problems come in the order of the fields.

    Raises:
        InputError: every problem at once, each naming ``file`` and the field path.
    """
    problems: list[Problem] = []
    if not isinstance(data, dict):
        raise InputError(problems=[Problem(file=file, message="recipe must be a mapping")])
    _check_top(data, problems, file)
    lane = _str(data, "lane", problems, file)
    image = _parse_image_name(data, problems, file)
    source_url = _str(data, "source", problems, file)
    profile = _str(data, "profile", problems, file)
    _check_binding(data, problems, file)
    platform = _parse_platform(data)
    base = _parse_base(data, problems, file)
    user = _parse_user(data, problems, file)
    workdir = _abs_path(str(data.get("workdir", "/")), "workdir", problems, file)
    env = _parse_env(data, problems, file)
    entrypoint = _parse_entrypoint(data, problems, file)
    cmd = _str_list(data.get("cmd"), "cmd", problems, file)
    ports = _parse_ports(data, problems, file)
    mount = _abs_path(
        _str(data, "checkpoint_mount", problems, file) or "/", "checkpoint_mount", problems, file
    )
    labels = _parse_labels(data, problems, file)
    layers = _parse_layers(data, problems, file)
    smoke = _parse_smoke(data, problems, file)
    _check_mount_dir(mount, layers, problems, file)
    if problems:
        raise InputError(problems=problems)
    return ImageRecipe(
        file=file,
        lane=lane,
        image=image,
        source_url=source_url,
        profile=profile,
        config_binding="semantic",
        os=platform.os,
        architecture=platform.architecture,
        base_digest=base.digest,
        base_name=base.name,
        base_supplier=base.supplier,
        user=user,
        workdir=workdir,
        env=env,
        entrypoint=entrypoint,
        cmd=cmd,
        ports=ports,
        checkpoint_mount=mount,
        labels=labels,
        layers=layers,
        smoke=smoke,
    )


def env_list(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """``NAME=value`` strings in recipe order (the order docker shows; it is part of the config bytes)."""
    return [f"{k}={v}" for k, v in pairs]
