"""The daemonless image build: plan (pure), then execute (I/O) into an atomically staged directory.

Output directory (``--out DIR``), written via :func:`ninfer_release.atomic.staged_directory` so a
failed build leaves nothing behind:

``layout/``   OCI image layout (``oci-layout``, ``index.json`` → the image manifest, ``blobs/sha256``)
``image.tar`` the same layout plus a docker ``manifest.json`` (``docker load`` / ``oci-archive:``, C37)
``image.json`` the build record (:meth:`ImageBuildResult.as_bytes`)
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import shutil
import tarfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ninfer_release.atomic import fsync_path, staged_directory
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.hashing import CHUNK, Digests, digests_of_file
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.progress import SILENT, Progress
from ninfer_release.reproducible import DIR_MODE, FILE_MODE, iso8601

from ._archive_layer import NotStreamable, open_tar_stream, write_archive_layer
from ._base import BaseLocation, fetch_base, parse_base
from ._gunzip import GzipError
from ._layers import (
    EXEC_MODE,
    HashingReader,
    LayerBlob,
    LayerEntry,
    LayerFile,
    Ordered,
    default_workers,
    layer_path_problem,
    retain_freed_memory,
    symlink_escapes,
    write_layer,
)
from ._layout import INDEX_FILE, LAYOUT_FILE, MT_LAYER_GZIP, blob_dir, blob_path
from ._oci import Descriptor, ImageParts, WrittenImage, finish_layout, json_blob, write_archive
from ._recipe import ImageRecipe, LayerItem, LayerSpec, env_list
from ._registry import oci_media_type

log = logging.getLogger(__name__)

_COMMIT_HEX = frozenset("0123456789abcdef")
LABEL_PREFIX = "io.ninfer."


@dataclass(frozen=True, kw_only=True)
class RenderedInputs:
    """Generated inputs of a container lane: the engine config bytes and the public profile document.

    ``config_semantic_sha256`` is what the container lane binds (DESIGN.md §5); the bytes digest is
    recorded beside it for information only.
    """

    profile_id: str
    config: bytes
    config_semantic_sha256: str
    config_bytes_sha256: str
    profile_document: bytes | None = None


@dataclass(frozen=True, kw_only=True)
class ImageBuildRequest:
    """Everything one image build needs, resolved up front.

    ``inputs`` is the lane's staged directory (e.g. ``DIR/rtx5090``); ``base`` a ``--base`` argument
    (layout or pinned reference); ``version`` the component tag; ``revision`` the full 40-hex source
    commit; ``epoch`` the source-date epoch in seconds; ``repo_tags`` the docker tags written into
    the archive's ``manifest.json`` (default ``<recipe image>:<version>``).
    """

    recipe: ImageRecipe
    inputs: Path
    base: str
    out: Path
    version: str
    revision: str
    epoch: int
    rendered: RenderedInputs | None = None
    repo_tags: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BuiltLayer:
    """One layer of the built image (base or ours): descriptor fields, diff id, and for ours the files."""

    name: str
    digest: str
    diff_id: str
    size: int
    media_type: str
    from_base: bool
    files: tuple[LayerFile, ...] = ()
    symlinks: tuple[tuple[str, str], ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The layer as a JSON object (files with path, mode, size, sha256, sha1, origin)."""
        out: dict[str, Any] = {
            "name": self.name,
            "digest": self.digest,
            "diff_id": self.diff_id,
            "size": self.size,
            "media_type": self.media_type,
            "from_base": self.from_base,
        }
        if not self.from_base:
            out["files"] = [
                {"path": f.path, "mode": f"{f.mode:04o}", "size": f.size, "sha256": f.sha256, "sha1": f.sha1,
                 "origin": f.origin}
                for f in self.files
            ]  # fmt: skip
            out["symlinks"] = [{"path": p, "target": t} for p, t in self.symlinks]
        return out


@dataclass(frozen=True, kw_only=True)
class BoundInput:
    """A staged input bound into the image by digest (a recipe item with ``bind``)."""

    name: str
    staged_path: str
    size: int
    sha256: str
    sha1: str


@dataclass(frozen=True, kw_only=True)
class ImageBuildResult:
    """What a build produced; paths are absolute, the record (:meth:`as_bytes`) holds only relative ones."""

    lane: str
    image: str
    version: str
    revision: str
    created: str
    out: Path
    layout: Path
    archive: Path
    archive_sha256: str
    archive_size: int
    ref_name: str
    repo_tags: tuple[str, ...]
    manifest_digest: str
    manifest_size: int
    config_digest: str
    config_size: int
    base_digest: str
    base_name: str
    base_source: str
    layers: tuple[BuiltLayer, ...]
    labels: Mapping[str, str]
    bound_inputs: tuple[BoundInput, ...] = ()
    profile_id: str = ""
    config_semantic_sha256: str = ""
    config_bytes_sha256: str = ""
    backend: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reference(self) -> str:
        """``<image>@<manifest digest>``: the identity of what was built."""
        return f"{self.image}@{self.manifest_digest}"

    def as_json(self) -> dict[str, Any]:
        """The build record as a JSON object (stable keys, no absolute paths)."""
        return {
            "schema": 1,
            "lane": self.lane,
            "image": self.image,
            "reference": self.reference,
            "version": self.version,
            "revision": self.revision,
            "created": self.created,
            "manifest": {"digest": self.manifest_digest, "size": self.manifest_size},
            "config": {"digest": self.config_digest, "size": self.config_size},
            "base": {"digest": self.base_digest, "name": self.base_name},
            "layers": [layer.as_json() for layer in self.layers],
            "labels": dict(self.labels),
            "bound_inputs": [
                {"name": b.name, "path": b.staged_path, "size": b.size, "sha256": b.sha256, "sha1": b.sha1}
                for b in self.bound_inputs
            ],
            "engine_config": {
                "profile": self.profile_id,
                "binding": "semantic",
                "semantic_sha256": self.config_semantic_sha256,
                "bytes_sha256": self.config_bytes_sha256,
            },
            "outputs": {
                "layout": "layout",
                "ref_name": self.ref_name,
                "archive": {"path": "image.tar", "sha256": self.archive_sha256, "size": self.archive_size},
                "repo_tags": list(self.repo_tags),
            },
            "backend": dict(self.backend),
        }

    def as_bytes(self) -> bytes:
        """The build record's exact bytes (``jsonbytes.dumps_stable``)."""
        return dumps_stable(self.as_json())


class ImageBackend(Protocol):
    """Where a built image goes after the daemonless assembly (DESIGN.md §7, CONVENTIONS 4).

    ``deliver`` runs inside the staged output directory: if it raises, nothing is left behind
    and the image is not recorded. It returns facts to record (e.g. the pushed reference).
    """

    name: str

    def deliver(self, result: ImageBuildResult) -> Mapping[str, Any]:
        """Load / tag / smoke-run / push ``result`` (or nothing, for the OCI backend)."""
        ...


class OciBackend:
    """The default, daemonless backend: the layout and archive *are* the delivery."""

    name = "oci"

    def deliver(self, result: ImageBuildResult) -> Mapping[str, Any]:
        """Nothing to do beyond writing the layout and archive."""
        return {"name": self.name}


# --- plan ----------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ImagePlan:
    """The pure part of a build: labels, annotations, config fields and the layer items, in order."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    created: str
    layers: tuple[LayerSpec, ...]
    ref_name: str
    repo_tags: tuple[str, ...]


def plan_image(request: ImageBuildRequest) -> ImagePlan:
    """Plan a build without touching disk: labels (OCI + ``io.ninfer.*``), annotations, tags.

    Raises:
        InputError: ``revision`` is not a full 40-hex commit, ``version`` is empty or not a valid
            tag, or the recipe needs rendered inputs that were not given.
    """
    recipe = request.recipe
    problems: list[Problem] = []
    rev = request.revision
    if len(rev) != 40 or not set(rev) <= _COMMIT_HEX:
        problems.append(
            Problem(
                file=recipe.file,
                field="revision",
                message=f"{rev!r}: a fresh build needs the full 40-hex source commit (a short prefix is no identity)",  # noqa: E501
            )
        )
    if not request.version or any(c in request.version for c in " /:@"):
        problems.append(
            Problem(file=recipe.file, field="version", message=f"{request.version!r} is not a tag")
        )
    needs = recipe.rendered_kinds
    if needs and request.rendered is None:
        problems.append(
            Problem(
                file=recipe.file,
                field="layers",
                message=f"needs rendered {sorted(needs)} (profile {recipe.profile})",
            )
        )
    if request.rendered is not None and "profile" in needs and request.rendered.profile_document is None:
        problems.append(
            Problem(file=recipe.file, field="layers", message="needs the rendered profile document")
        )
    if request.rendered is not None and request.rendered.profile_id != recipe.profile:
        problems.append(
            Problem(
                file=recipe.file,
                field="profile",
                message=f"rendered for {request.rendered.profile_id!r}; recipe names {recipe.profile!r}",
            )
        )
    if problems:
        raise InputError(problems=problems)
    created = iso8601(request.epoch)
    labels = dict(recipe.labels)
    labels.update(
        {
            "org.opencontainers.image.version": request.version,
            "org.opencontainers.image.revision": request.revision,
            "org.opencontainers.image.source": recipe.source_url,
            "org.opencontainers.image.created": created,
            "org.opencontainers.image.base.digest": recipe.base_digest,
            LABEL_PREFIX + "lane": recipe.lane,
            LABEL_PREFIX + "profile": recipe.profile,
            LABEL_PREFIX + "checkpoint-mount": recipe.checkpoint_mount,
        }
    )
    if recipe.base_name:
        labels["org.opencontainers.image.base.name"] = recipe.base_name
    if request.rendered is not None:
        labels[LABEL_PREFIX + "config.semantic-sha256"] = request.rendered.config_semantic_sha256
    annotations = {
        k: v
        for k, v in labels.items()
        if k.startswith("org.opencontainers.image.") and k != "org.opencontainers.image.base.name"
    }
    if recipe.base_name:
        annotations["org.opencontainers.image.base.name"] = recipe.base_name
    tags = request.repo_tags or (f"{recipe.image}:{request.version}",)
    return ImagePlan(
        labels=labels,
        annotations=annotations,
        created=created,
        layers=recipe.layers,
        ref_name=request.version,
        repo_tags=tuple(tags),
    )


def image_config(
    *,
    base_config: Mapping[str, Any],
    recipe: ImageRecipe,
    plan: ImagePlan,
    diff_ids: Sequence[str],
) -> dict[str, Any]:
    """The image config JSON object: base config with the recipe applied (pure).

    ``created`` and every history entry we add are the source-date epoch (C36); the base's
    history entries are kept as the base recorded them. Env: the base's variables, overridden
    and extended in recipe order.
    """
    base_cfg = dict(base_config.get("config") or {})
    env: dict[str, str] = {}
    for item in base_cfg.get("Env") or []:
        k, _, v = str(item).partition("=")
        env[k] = v
    for k, v in recipe.env:
        env[k] = v
    labels = dict(base_cfg.get("Labels") or {})
    labels.update(plan.labels)
    cfg: dict[str, Any] = {
        "Env": env_list(list(env.items())),
        "Entrypoint": list(recipe.entrypoint),
        "Cmd": list(recipe.cmd),
        "User": recipe.user,
        "WorkingDir": recipe.workdir,
        "Labels": labels,
        "ExposedPorts": {f"{p}/tcp": {} for p in recipe.ports},
        "Volumes": {recipe.checkpoint_mount: {}},
    }
    if not recipe.cmd:
        del cfg["Cmd"]
    history = [dict(h) for h in base_config.get("history") or []]
    recipe_name = Path(recipe.file).name  # never the path as typed: it would vary between machines
    for spec in plan.layers:
        history.append(
            {
                "created": plan.created,
                "created_by": f"ninfer-release: layer {spec.name} ({recipe_name})",
                "comment": f"{recipe.lane} {spec.name}",
            }
        )
    history.append(
        {
            "created": plan.created,
            "created_by": f"ninfer-release: config ({recipe_name})",
            "empty_layer": True,
        }
    )
    return {
        "architecture": recipe.architecture,
        "os": recipe.os,
        "created": plan.created,
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": list(diff_ids)},
        "history": history,
    }


# --- execute -------------------------------------------------------------------------------------


def _staged_file(
    inputs: Path, rel: str, *, recipe: ImageRecipe, fld: str, problems: list[Problem]
) -> Path | None:
    path = inputs / rel
    root = inputs.resolve()
    try:
        real = path.resolve(strict=True)
    except (FileNotFoundError, RuntimeError):
        problems.append(Problem(file=recipe.file, field=fld, message=f"staged file {path} does not exist"))
        return None
    if not real.is_relative_to(root):
        problems.append(
            Problem(file=recipe.file, field=fld, message=f"{path} resolves outside the inputs dir")
        )
        return None
    if not real.is_file():
        problems.append(Problem(file=recipe.file, field=fld, message=f"{path} is not a regular file"))
        return None
    return real


def check_inputs(request: ImageBuildRequest) -> BaseLocation:
    """Check, before writing anything, that every staged input exists and the base argument is usable.

    Raises:
        InputError: all missing or unsafe staged files at once; a base given by tag only.
    """
    problems: list[Problem] = []
    if not request.inputs.is_dir():
        problems.append(Problem(file=str(request.inputs), message="inputs directory does not exist"))
    else:
        for fld, rel in request.recipe.staged_sources:
            _staged_file(request.inputs, rel, recipe=request.recipe, fld=fld, problems=problems)
    try:
        base = parse_base(request.base)
    except InputError as exc:
        problems.extend(exc.problems or [Problem(file="--base", message=str(exc).removeprefix("--base: "))])
        base = BaseLocation(text=request.base)
    if problems:
        raise InputError(problems=problems)
    return base


@dataclass(frozen=True, kw_only=True)
class _Unpacked:
    """A staged archive unpacked for a layer: its entries and the digests of the archive's bytes."""

    entries: tuple[LayerEntry, ...]
    digests: Digests


def _archive_entries(archive: Path, item: LayerItem, scratch: Path, *, recipe: ImageRecipe) -> _Unpacked:
    """Unpack the regular files of a staged tar(.gz) into ``scratch``; entries under ``item.dest``.

    The archive is read once, as a stream: the same read unpacks it and digests its bytes.
    """
    where = f"{recipe.file}: {item.field_path}.archive ({item.source})"
    problems: list[Problem] = []
    ordered = Ordered()  # the archive's own digests, on a helper thread while it is inflated
    with contextlib.closing(ordered), archive.open("rb") as raw:
        reader = HashingReader(raw, ordered=ordered)
        try:
            tar = open_tar_stream(raw, reader)
        except (tarfile.TarError, GzipError, OSError) as exc:
            raise InputError(f"{where}: not a readable tar archive ({exc})") from None
        with tar:
            try:
                entries = tuple(_unpack_members(tar, item, scratch, where=where, problems=problems))
            except (tarfile.TarError, GzipError, EOFError) as exc:
                raise InputError(f"{where}: not a readable tar archive ({exc})") from None
            while reader.read(CHUNK):  # the rest (end-of-archive padding, gzip trailer) is part of the bytes
                pass
        ordered.drain()
    if problems:
        raise InputError(problems=problems)
    sha256, sha1 = reader.hexdigests()
    return _Unpacked(entries=entries, digests=Digests(size=reader.size, sha256=sha256, sha1=sha1))


def _unpack_members(
    tar: tarfile.TarFile, item: LayerItem, scratch: Path, *, where: str, problems: list[Problem]
) -> Iterator[LayerEntry]:
    """The layer entries of the members of the streamed ``tar``, regular files unpacked into
    ``scratch``; problems (unsafe paths, duplicates, other member types) go to ``problems``."""
    seen: set[str] = set()
    for n, member in enumerate(tar):
        name = member.name.removeprefix("./").rstrip("/")
        if name in ("", "."):
            continue
        msg = layer_path_problem(member.name) if not member.name.startswith("/") else "absolute path"
        if msg is not None:
            problems.append(Problem(file=where, field=member.name, message=msg))
            continue
        if name in seen:
            problems.append(Problem(file=where, field=name, message="appears twice in the archive"))
            continue
        seen.add(name)
        entry = _member_entry(tar, member, n, name, item, scratch, where=where, problems=problems)
        if entry is not None:
            yield entry


def _member_entry(
    tar: tarfile.TarFile,
    member: tarfile.TarInfo,
    n: int,
    name: str,
    item: LayerItem,
    scratch: Path,
    *,
    where: str,
    problems: list[Problem],
) -> LayerEntry | None:
    """The layer entry of archive member ``n`` (``name``, checked safe): a directory, a symlink
    inside the archive, or a regular file unpacked into ``scratch``; else a problem and ``None``."""
    dest = f"{item.dest}/{name}"
    origin = f"{item.source}!{name}"
    if member.isdir():
        return LayerEntry(path=dest, kind="dir", mode=DIR_MODE, origin=origin)
    if member.issym():
        target = member.linkname
        if target.startswith("/") or symlink_escapes(name, target):
            why = f"symlink to {target!r} leaves the archive"
            problems.append(Problem(file=where, field=name, message=why))
            return None
        return LayerEntry(path=dest, kind="symlink", target=target, origin=origin)
    if not member.isreg():
        why = "not a regular file, directory or symlink (refused)"
        problems.append(Problem(file=where, field=name, message=why))
        return None
    src = tar.extractfile(member)
    assert src is not None
    out = scratch / f"{n:06d}"
    with src, out.open("wb") as f:
        shutil.copyfileobj(src, f, CHUNK)
    mode = EXEC_MODE if member.mode & 0o111 else FILE_MODE
    return LayerEntry(path=dest, kind="file", mode=mode, source=out, origin=origin)


@dataclass(frozen=True, kw_only=True)
class _LayerInputs:
    """The entries of one of our layers, and the staged archives it binds (their digests known)."""

    entries: tuple[LayerEntry, ...]
    bound: tuple[BoundInput, ...]


def _layer_entries(spec: LayerSpec, request: ImageBuildRequest, scratch: Path) -> _LayerInputs:
    """Entries of layer ``spec``: directories (the checkpoint mount owned by the image user),
    rendered files, staged files and unpacked staged archives, in recipe order.

    Raises:
        InputError: a staged input is missing or unsafe, or an archive holds an unsafe member.
    """
    recipe = request.recipe
    entries: list[LayerEntry] = []
    bound: list[BoundInput] = []
    for item in spec.items:
        if item.kind == "dir":
            # The checkpoint mount belongs to the image user: a volume mounted there (named or
            # anonymous) is initialised from this directory, ownership included, so the non-root
            # engine can save checkpoints (issue 8 §4). Every other entry stays root-owned.
            uid, gid = recipe.owner if "/" + item.dest == recipe.checkpoint_mount.rstrip("/") else (0, 0)
            entries.append(
                LayerEntry(
                    path=item.dest, kind="dir", mode=DIR_MODE, uid=uid, gid=gid, origin=item.field_path
                )
            )
        elif item.kind == "rendered":
            assert request.rendered is not None
            data = request.rendered.config if item.source == "config" else request.rendered.profile_document
            assert data is not None
            origin = f"rendered:{item.source}:{request.rendered.profile_id}"
            entries.append(LayerEntry(path=item.dest, kind="file", mode=item.mode, data=data, origin=origin))
        else:
            problems: list[Problem] = []
            path = _staged_file(
                request.inputs, item.source, recipe=recipe, fld=item.field_path, problems=problems
            )
            if path is None:
                raise InputError(problems=problems)
            if item.kind == "staged":
                # a bound staged file's digests come from the layer write (one read, C-perf)
                entries.append(
                    LayerEntry(path=item.dest, kind="file", mode=item.mode, source=path, origin=item.source)
                )
                continue
            sub = scratch / f"{spec.name}-{len(entries)}"
            sub.mkdir()
            unpacked = _archive_entries(path, item, sub, recipe=recipe)
            d = unpacked.digests
            entries.extend(unpacked.entries)
            if item.bind:
                bound.append(
                    BoundInput(
                        name=item.bind, staged_path=item.source, size=d.size, sha256=d.sha256, sha1=d.sha1
                    )
                )
    return _LayerInputs(entries=tuple(entries), bound=tuple(bound))


def _staged_bindings(spec: LayerSpec, blob: LayerBlob) -> list[BoundInput]:
    """Bound staged files of a layer, with the digests computed while the layer was written."""
    by_path = {f.path: f for f in blob.files}
    out: list[BoundInput] = []
    for item in spec.items:
        if item.kind == "staged" and item.bind:
            f = by_path[item.dest]
            out.append(
                BoundInput(name=item.bind, staged_path=item.source, size=f.size, sha256=f.sha256, sha1=f.sha1)
            )
    return out


def _check_base_pin(recipe: ImageRecipe, base_loc: BaseLocation, base: ImageParts) -> None:
    """The fetched base must be the one the recipe pins (its manifest digest, or the pinned reference's).

    Raises:
        IntegrityError: the base has another digest (C36: bytes are bound by digest; exit 5).
    """
    pinned = {base.manifest_digest}
    if base_loc.reference is not None:
        pinned.add(base_loc.reference.digest)
    if recipe.base_digest not in pinned:
        raise IntegrityError(
            problems=[
                Problem(
                    file=recipe.file,
                    field="base.digest",
                    message=f"pins {recipe.base_digest}; --base {base_loc.text} is {base.manifest_digest}",
                )
            ]
        )


def _base_layers(base: ImageParts, base_loc: BaseLocation) -> list[BuiltLayer]:
    """The base image's layers as :class:`BuiltLayer` (``base-<i>``), diff ids from its config.

    Raises:
        IntegrityError: the config lists another number of diff ids than the manifest has layers.
    """
    base_diff_ids = list((base.config.get("rootfs") or {}).get("diff_ids") or [])
    if len(base_diff_ids) != len(base.layers):
        raise IntegrityError(
            f"{base_loc.text}: config lists {len(base_diff_ids)} diff_ids for {len(base.layers)} layers"
        )
    return [
        BuiltLayer(
            name=f"base-{i}",
            digest=d.digest,
            diff_id=base_diff_ids[i],
            size=d.size,
            media_type=oci_media_type(d.media_type),
            from_base=True,
        )
        for i, d in enumerate(base.layers)
    ]


@dataclass(frozen=True, kw_only=True)
class _OwnLayers:
    """Our layers as written into the layout, and the inputs they bind (in recipe order)."""

    layers: tuple[BuiltLayer, ...]
    bound: tuple[BoundInput, ...]


def _write_own_layers(
    plan: ImagePlan,
    request: ImageBuildRequest,
    layout: Path,
    scratch: Path,
    say: Callable[[str], None],
    syncer: Ordered,
) -> _OwnLayers:
    """Write each planned layer (deterministic tar+gzip, C24) into ``layout``'s blobs via ``scratch``.

    The layers are independent, so up to :func:`default_workers` of them are written at once
    (one thread each; the heavy parts — inflating, deflating, hashing, file I/O — release the
    GIL): unpacking the staged runtime archive on one core no longer leaves the other idle while
    a second layer waits. Each layer's bytes depend only on its own entries, so the image is the
    same whatever the order the threads run in. The first failing layer (in recipe order) raises.
    Each blob, once in place, is flushed to disk on ``syncer`` while the other layers are written.
    """
    for spec in plan.layers:
        say(f"layer {spec.name}")
    retain_freed_memory()
    workers = max(1, min(len(plan.layers), default_workers()))
    with ThreadPoolExecutor(workers, thread_name_prefix="layer") as pool:
        futures = [pool.submit(_write_one_layer, spec, request, layout, scratch) for spec in plan.layers]
        try:
            for done in as_completed(futures):
                if done.exception() is None:
                    syncer.submit(fsync_path, blob_path(layout, done.result()[0].digest))
            written = [f.result() for f in futures]
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return _OwnLayers(
        layers=tuple(layer for layer, _ in written), bound=tuple(b for _, bound in written for b in bound)
    )


def _write_one_layer(
    spec: LayerSpec, request: ImageBuildRequest, layout: Path, scratch: Path
) -> tuple[BuiltLayer, list[BoundInput]]:
    """Write layer ``spec`` into ``layout``'s blobs (via ``scratch``); returns it and the inputs it
    binds (archives first, then staged files, as the recipe lists them)."""
    tmp = scratch / f"layer-{spec.name}.tar.gz"
    streamed = _write_streamed_layer(spec, request, tmp)
    if streamed is not None:
        blob, bound = streamed
    else:
        inputs = _layer_entries(spec, request, scratch)
        blob = write_layer(inputs.entries, tmp, epoch=request.epoch)
        bound = [*inputs.bound, *_staged_bindings(spec, blob)]
    dest = blob_path(layout, blob.digest)
    tmp.replace(dest)
    dest.chmod(FILE_MODE)
    layer = BuiltLayer(
        name=spec.name,
        digest=blob.digest,
        diff_id=blob.diff_id,
        size=blob.size,
        media_type=MT_LAYER_GZIP,
        from_base=False,
        files=blob.files,
        symlinks=blob.symlinks,
    )
    return layer, bound


def _write_streamed_layer(
    spec: LayerSpec, request: ImageBuildRequest, tmp: Path
) -> tuple[LayerBlob, list[BoundInput]] | None:
    """Layer ``spec`` written to ``tmp`` in one pass over its staged archive, when it is a single
    archive whose members come in layer order (:mod:`._archive_layer`); else ``None`` (nothing
    reported: the general path then reads the archive and reports what it finds)."""
    if len(spec.items) != 1 or spec.items[0].kind != "archive":
        return None
    item = spec.items[0]
    path = _staged_file(request.inputs, item.source, recipe=request.recipe, fld=item.field_path, problems=[])
    if path is None:
        return None
    try:
        layer = write_archive_layer(path, item, tmp, epoch=request.epoch)
    except NotStreamable as exc:
        log.debug("layer %s: written through scratch files (%s)", spec.name, exc)
        return None
    d = layer.archive
    bound = [BoundInput(name=item.bind, staged_path=item.source, size=d.size, sha256=d.sha256, sha1=d.sha1)]
    return layer.blob, bound if item.bind else []


def _bind_labels(plan: ImagePlan, bound: Sequence[BoundInput]) -> ImagePlan:
    """``plan`` with one ``io.ninfer.binding.<name>.sha256`` label per bound input added."""
    labels = dict(plan.labels)
    for bi in bound:
        labels[f"{LABEL_PREFIX}binding.{bi.name}.sha256"] = bi.sha256
    return dataclasses.replace(plan, labels=labels)


def _build_result(
    request: ImageBuildRequest,
    *,
    plan: ImagePlan,
    base: ImageParts,
    base_loc: BaseLocation,
    layers: Sequence[BuiltLayer],
    bound: Sequence[BoundInput],
    layout: Path,
    image: WrittenImage,
) -> ImageBuildResult:
    """The build record of an image laid out in ``layout``, before its archive (empty digest, size 0)
    and its backend delivery."""
    recipe = request.recipe
    return ImageBuildResult(
        lane=recipe.lane,
        image=recipe.image,
        version=request.version,
        revision=request.revision,
        created=plan.created,
        out=request.out,
        layout=layout,
        archive=layout.parent / "image.tar",
        archive_sha256="",
        archive_size=0,
        ref_name=plan.ref_name,
        repo_tags=plan.repo_tags,
        manifest_digest=image.manifest.digest,
        manifest_size=image.manifest.size,
        config_digest=image.config.digest,
        config_size=image.config.size,
        base_digest=base.manifest_digest,
        base_name=recipe.base_name,
        base_source=base_loc.text,
        layers=tuple(layers),
        labels=dict(plan.labels),
        bound_inputs=tuple(bound),
        profile_id=recipe.profile,
        config_semantic_sha256=request.rendered.config_semantic_sha256 if request.rendered else "",
        config_bytes_sha256=request.rendered.config_bytes_sha256 if request.rendered else "",
    )


@dataclass(frozen=True, kw_only=True)
class LaidOutImage:
    """An image written into a staging directory up to its OCI layout (:func:`write_image_layout`).

    ``result`` is the build record so far — every digest of the image, but no archive yet (empty
    ``archive_sha256``, ``archive_size`` 0) and no backend facts: enough for the SBOMs, which
    :func:`finish_image` lets the caller render while it writes ``image.tar``. ``syncer`` is the
    helper thread that flushes the written blobs to disk in the background
    (:func:`finish_image` waits for it and stops it; :meth:`close` stops it after a failure).
    """

    request: ImageBuildRequest
    stage: Path
    plan: ImagePlan
    image: WrittenImage
    result: ImageBuildResult
    syncer: Ordered

    def close(self) -> None:
        """Stop the background flushing (idempotent)."""
        self.syncer.close()


def write_image_layout(
    request: ImageBuildRequest, stage: Path, *, progress: Progress = SILENT, timeout: float = 60.0
) -> LaidOutImage:
    """Check the inputs, plan, and write the image's OCI layout into the empty directory ``stage``
    (``stage/layout``): base blobs (verified, pinned), our layers, config, manifest, index.

    The caller owns ``stage`` (an :func:`~ninfer_release.atomic.staged_directory`) and finishes the
    image with :func:`finish_image`; :func:`build_image` does both.

    Raises:
        InputError, IntegrityError, BackendError: as :func:`build_image`.
    """
    base_loc = check_inputs(request)
    plan = plan_image(request)
    return _lay_out(request, stage, base_loc, plan, say=progress.step, timeout=timeout)


def _lay_out(
    request: ImageBuildRequest,
    stage: Path,
    base_loc: BaseLocation,
    plan: ImagePlan,
    *,
    say: Callable[[str], None],
    timeout: float,
) -> LaidOutImage:
    """:func:`write_image_layout` once the inputs are checked and the image planned."""
    recipe = request.recipe
    stage.chmod(DIR_MODE)  # mkdtemp made it 0700
    layout = stage / "layout"
    scratch = stage / ".scratch"
    layout.mkdir()
    scratch.mkdir()
    blob_dir(layout, mode=DIR_MODE)
    syncer = Ordered()
    try:
        say(f"base {base_loc.text}")
        base = fetch_base(base_loc, layout, os_=recipe.os, arch=recipe.architecture, timeout=timeout)
        _check_base_pin(recipe, base_loc, base)
        layers = _base_layers(base, base_loc)
        own = _write_own_layers(plan, request, layout, scratch, say, syncer)
        layers.extend(own.layers)
        plan = _bind_labels(plan, own.bound)
        config = image_config(
            base_config=base.config, recipe=recipe, plan=plan, diff_ids=[layer.diff_id for layer in layers]
        )
        shutil.rmtree(scratch)
        image = finish_layout(
            layout,
            config_bytes=json_blob(config),
            layers=[Descriptor(media_type=x.media_type, digest=x.digest, size=x.size) for x in layers],
            ref_name=plan.ref_name,
            annotations=plan.annotations,
            staged=True,  # the caller's staged directory flushes every file before it appears
        )
        # ... and finds them clean: they are flushed here in the background, beside image.tar,
        # instead of one journal commit each after it.
        for path in (
            blob_path(layout, image.config.digest),
            blob_path(layout, image.manifest.digest),
            layout / INDEX_FILE,
            layout / LAYOUT_FILE,
        ):
            syncer.submit(fsync_path, path)
    except BaseException:
        syncer.close()
        raise
    result = _build_result(
        request,
        plan=plan,
        base=base,
        base_loc=base_loc,
        layers=layers,
        bound=own.bound,
        layout=layout,
        image=image,
    )
    return LaidOutImage(request=request, stage=stage, plan=plan, image=image, result=result, syncer=syncer)


def finish_image(
    laid: LaidOutImage, *, backend: ImageBackend | None = None, progress: Progress = SILENT
) -> ImageBuildResult:
    """Write ``image.tar`` (C37) beside the layout, hand the image to ``backend`` (default: OCI
    only) and write ``image.json``; returns the record (paths inside ``laid.stage``).

    The archive and every blob are flushed to disk before the backend runs (on the helper thread,
    while the layers were still being written), so the caller's final flush of the staging
    directory finds them clean.

    Raises:
        BackendError: the docker backend failed (6).
    """
    say = progress.step
    backend = backend or OciBackend()
    request, layout = laid.request, laid.stage / "layout"
    try:
        say("archive image.tar")
        archive = laid.stage / "image.tar"
        info = write_archive(layout, laid.image, archive, repo_tags=laid.plan.repo_tags, epoch=request.epoch)
        for d in (layout, layout / "blobs", layout / "blobs" / "sha256"):
            d.chmod(DIR_MODE)
        laid.syncer.submit(fsync_path, archive)
        laid.syncer.drain()
    finally:
        laid.close()
    result = dataclasses.replace(laid.result, archive_sha256=info.sha256, archive_size=info.size)
    say(f"backend {backend.name}")
    delivered = backend.deliver(result)
    result = _with(result, backend=dict(delivered), out=request.out)
    (laid.stage / "image.json").write_bytes(result.as_bytes())
    return result


def build_image(
    request: ImageBuildRequest,
    *,
    backend: ImageBackend | None = None,
    progress: Progress = SILENT,
    timeout: float = 60.0,
) -> ImageBuildResult:
    """Build the image daemonlessly into ``request.out`` and hand it to ``backend`` (default: OCI only).

    Steps: check inputs (all problems at once) → plan → fetch the base (verified, must equal the
    recipe's pinned digest) → write our deterministic layers → config / manifest / index
    (:func:`write_image_layout`) → archive → backend delivery → record (:func:`finish_image`).
    Two builds from the same inputs and epoch give the same manifest digest (C36).

    Raises:
        InputError: missing staged files, unsafe paths, base given by tag, existing ``out`` (exit 4).
        IntegrityError: the base does not have the pinned digest, or a blob differs from its digest (5).
        BackendError: the registry or the docker backend failed (6).
    """
    base_loc = check_inputs(request)
    plan = plan_image(request)
    with staged_directory(request.out) as stage:
        laid = _lay_out(request, stage, base_loc, plan, say=progress.step, timeout=timeout)
        result = finish_image(laid, backend=backend, progress=progress)
    return _with(result, backend=dict(result.backend), out=request.out)


def _layer_file(f: Mapping[str, Any]) -> LayerFile:
    return LayerFile(
        path=f["path"],
        mode=int(f["mode"], 8),
        size=f["size"],
        sha256=f["sha256"],
        sha1=f["sha1"],
        origin=f["origin"],
    )


def read_build_result(out: Path) -> ImageBuildResult:
    """Read a build's output directory back into an :class:`ImageBuildResult` (from ``image.json``).

    The layout's index and the archive are checked against the record: the index must name the
    recorded manifest digest and the archive must have the recorded SHA-256.

    Raises:
        InputError: no readable record. IntegrityError: the layout or archive differs from the record.
    """
    path = out / "image.json"
    try:
        doc = json.loads(path.read_bytes())
        layers = tuple(
            BuiltLayer(
                name=lay["name"],
                digest=lay["digest"],
                diff_id=lay["diff_id"],
                size=lay["size"],
                media_type=lay["media_type"],
                from_base=lay["from_base"],
                files=tuple(_layer_file(f) for f in lay.get("files", [])),
                symlinks=tuple((s["path"], s["target"]) for s in lay.get("symlinks", [])),
            )
            for lay in doc["layers"]
        )
        engine = doc["engine_config"]
        outputs = doc["outputs"]
        result = ImageBuildResult(
            lane=doc["lane"],
            image=doc["image"],
            version=doc["version"],
            revision=doc["revision"],
            created=doc["created"],
            out=out,
            layout=out / outputs["layout"],
            archive=out / outputs["archive"]["path"],
            archive_sha256=outputs["archive"]["sha256"],
            archive_size=outputs["archive"]["size"],
            ref_name=outputs["ref_name"],
            repo_tags=tuple(outputs["repo_tags"]),
            manifest_digest=doc["manifest"]["digest"],
            manifest_size=doc["manifest"]["size"],
            config_digest=doc["config"]["digest"],
            config_size=doc["config"]["size"],
            base_digest=doc["base"]["digest"],
            base_name=doc["base"]["name"],
            base_source="",
            layers=layers,
            labels=doc["labels"],
            bound_inputs=tuple(
                BoundInput(
                    name=b["name"], staged_path=b["path"], size=b["size"], sha256=b["sha256"], sha1=b["sha1"]
                )
                for b in doc["bound_inputs"]
            ),
            profile_id=engine["profile"],
            config_semantic_sha256=engine["semantic_sha256"],
            config_bytes_sha256=engine["bytes_sha256"],
            backend=doc.get("backend", {}),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a readable image build record ({type(exc).__name__}: {exc})") from None
    index = json.loads((result.layout / "index.json").read_bytes())
    named = [m.get("digest") for m in index.get("manifests", [])]
    if named != [result.manifest_digest]:
        raise IntegrityError(
            f"{result.layout}/index.json names {named}, record says {result.manifest_digest}"
        )
    got = digests_of_file(result.archive)
    if got.sha256 != result.archive_sha256:
        raise IntegrityError(f"{result.archive}: sha256 {got.sha256}, record says {result.archive_sha256}")
    return result


def _with(result: ImageBuildResult, *, backend: Mapping[str, Any], out: Path) -> ImageBuildResult:
    return dataclasses.replace(
        result, backend=backend, out=out, layout=out / "layout", archive=out / "image.tar"
    )
