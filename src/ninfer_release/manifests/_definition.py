"""The staged release manifest (``manifests/<version>.yaml``) → a frozen, validated :class:`Release`.

Loading validates the manifest *and* every profile it names (``<repo>/profiles/<id>.yaml``) and
every carried record (``releases/<version>/<lane>.yaml``), and cross-checks them: a profile's
lane, GPU, CUDA arch, kind and model must match the lane naming it; a carried record must match
its lane and profile. Rules (reference release-v0.13.1.md, DESIGN.md §3, issue 2 §4): a fresh
build's source is a full 40-hex commit; component tags are unique and never a superseded tag;
``components.native_model`` is refused (only ``components.model`` binds the model); the
publication base URL is an absolute ``https://`` URL (C28: ``https//x`` is refused at load time).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from ninfer_release.digests import SHA256_HEX
from ninfer_release.errors import DefinitionError, InputError, NinferError, Problem
from ninfer_release.manifests._carried import VERSION, CarriedImage
from ninfer_release.manifests._lanes import CUDA_VERSION, Lane, _lanes
from ninfer_release.profiles import RenderedConfig, load_yaml_data, render_config
from ninfer_release.profiles._check import HEX40, SHORT_HEX, Checker
from ninfer_release.profiles._profile import (
    COMPONENT_TAG,
    FILE_NAME,
    Profile,
    load_profile,
)
from ninfer_release.reproducible import MAX_EPOCH, source_date_epoch

#: Manifest schema (ours).
MANIFEST_SCHEMA = 1
#: Default per-asset budget (bytes): GitHub release assets must be under 2 GiB, so 2 GiB - 1.
DEFAULT_ASSET_BUDGET = (2 << 30) - 1


@dataclass(frozen=True, kw_only=True)
class ModelBinding:
    """``components.model``: the one model binding every lane uses (reference "Model binding")."""

    repository: str
    revision: str
    artifact: str
    size: int
    sha256: str
    local_name: str
    container_version: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``<stem>.model.json`` body); ``size`` in bytes."""
        return {
            "repository": self.repository,
            "revision": self.revision,
            "artifact": self.artifact,
            "size": self.size,
            "sha256": self.sha256,
            "local_name": self.local_name,
            "container_version": self.container_version,
        }


@dataclass(frozen=True, kw_only=True)
class ClientBinding:
    """``components.client``: the Oh My Pi client, carried unmodified (``source`` short as published)."""

    name: str
    version: str
    source: str
    mode: str


@dataclass(frozen=True, kw_only=True)
class Superseded:
    """A published-then-superseded component tag: never reused or relabelled."""

    tag: str
    source: str
    successor: str


@dataclass(frozen=True, kw_only=True)
class Release:
    """The validated release definition, with every profile it names.

    ``lanes`` and ``profiles`` are read-only mappings ordered by lane id / profile id.
    ``source_date_epoch`` already has ``SOURCE_DATE_EPOCH`` applied.
    """

    path: Path
    repo_root: Path
    version: str
    product: str
    state: str
    published_product_version: str | None
    candidate_commit: str
    source_date_epoch: int
    publication_base_url: str
    #: Largest size (bytes) any one published asset may have (``asset_budget_bytes``, ours):
    #: GitHub rejects release assets of 2 GiB or more, so the default is just under that.
    asset_budget: int
    model: ModelBinding
    client: ClientBinding
    upstream_base: str | None
    native_cuda_version: str | None
    superseded: tuple[Superseded, ...]
    lanes: Mapping[str, Lane]
    profiles: Mapping[str, Profile]
    #: ``predecessor`` (ours): the repo-relative folder holding the predecessor release's published
    #: route blocks, ``<lane>.route.json``; ``None`` when no lane has one (e.g. v0.13.1's rebased
    #: native lanes). A lane's route block that changed against its predecessor's needs a
    #: ``documented_routes.<lane>.document_change`` (release notes: every changed block has one).
    predecessor: str | None = None
    #: ``documented_routes.<lane>.document_change``: lane id → why its published blocks changed.
    document_changes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def asset_url(self, component_tag: str, name: str) -> str:
        """Public URL of asset ``name`` of component ``component_tag``: ``{base}/{tag}/{name}`` (ours).

        Raises:
            DefinitionError: ``name`` is not a plain file name or the tag is not one of the lanes'.
        """
        if not FILE_NAME.fullmatch(name):
            raise DefinitionError(f"asset name {name!r} is not a plain file name")
        if component_tag not in {lane.component_tag for lane in self.lanes.values()}:
            raise DefinitionError(f"{component_tag!r} is not a component tag of release {self.version}")
        return f"{self.publication_base_url}/{component_tag}/{name}"

    def profile_of(self, lane_id: str) -> Profile:
        """The profile of lane ``lane_id``."""
        return self.profiles[self.lanes[lane_id].profile_id]

    def lane_of_tag(self, component_tag: str) -> Lane | None:
        """The lane whose component tag is ``component_tag``, if any."""
        return next((lane for lane in self.lanes.values() if lane.component_tag == component_tag), None)

    def store_owner(self, path: str) -> Lane | None:
        """The lane whose publication repository a store's repository or directory ``path`` is
        (:meth:`Lane.owns_store_path`), or ``None`` when it is no lane's (e.g. a shared store).
        Unambiguous: the loader refuses a repository that ends another one's."""
        return next((lane for lane in self.lanes.values() if lane.owns_store_path(path)), None)


def check_base_url(url: str) -> str | None:
    """Why ``url`` is not an acceptable publication base URL, or ``None`` (case C28).

    Absolute ``https`` URL with a host, no user info, query, fragment, whitespace or trailing slash.
    """
    if any(ch.isspace() for ch in url):
        return "contains whitespace"
    parts = urlsplit(url)
    if parts.scheme != "https" or not url.startswith("https://"):
        return "is not an absolute https:// URL"
    if not parts.hostname or "@" in parts.netloc:
        return "has no host (or carries user info)"
    if parts.query or parts.fragment or "#" in url or "?" in url:
        return "must not carry a query or fragment"
    if url.endswith("/"):
        return "must not end with '/'"
    return None


_TOP_REQUIRED = (
    "schema",
    "product",
    "version",
    "candidate_commit",
    "source_date_epoch",
    "publication_base_url",
    "components",
    "lanes",
)
_TOP_OPTIONAL = (
    "state",
    "published_product_version",
    "native_line",
    "superseded",
    "asset_budget_bytes",
    "predecessor",
    "documented_routes",
)


@dataclass(frozen=True, kw_only=True)
class _Top:
    """The definition's top-level scalars as read (``None``: missing or invalid, reported)."""

    product: str | None
    version: str | None
    state: str
    published: str | None
    candidate: str | None
    epoch: int | None
    base_url: str | None
    budget: int | None


def _top(c: Checker, d: dict[str, Any]) -> _Top:
    """Read and check the top-level keys and scalars (schema, product, version, ..., budget)."""
    c.keys(d, "", required=_TOP_REQUIRED, optional=_TOP_OPTIONAL)
    schema = c.get_int(d, "", "schema")
    if schema is not None and schema != MANIFEST_SCHEMA:
        c.add("schema", f"{schema} is not the supported manifest schema {MANIFEST_SCHEMA}")
    product = c.get_str(d, "", "product")
    version = c.get_str(d, "", "version", pattern=VERSION, what="a version like v0.13.1")
    state = c.get_str(d, "", "state", required=False, choices=("candidate", "published")) or "candidate"
    published = c.get_str(
        d, "", "published_product_version", required=False, pattern=VERSION, what="a version"
    )
    candidate = c.get_str(d, "", "candidate_commit", pattern=HEX40, what="a full 40-hex commit")
    epoch = c.get_int(d, "", "source_date_epoch", minimum=0, maximum=MAX_EPOCH, unit="seconds")
    base_url = c.get_str(d, "", "publication_base_url")
    budget = c.get_int(d, "", "asset_budget_bytes", required=False, minimum=1, unit="bytes")
    if base_url is not None:
        why = check_base_url(base_url)
        if why is not None:
            c.add("publication_base_url", f"{base_url!r} {why}")
            base_url = None
    return _Top(
        product=product,
        version=version,
        state=state,
        published=published,
        candidate=candidate,
        epoch=epoch,
        base_url=base_url,
        budget=budget,
    )


def _native_line(c: Checker, d: dict[str, Any]) -> tuple[str | None, str | None]:
    """``native_line``: ``(upstream_base, cuda_version)``, both ``None`` when absent."""
    native_line = c.get_mapping(d, "", "native_line", required=False)
    if native_line is None:
        return None, None
    c.keys(native_line, "native_line", required=("upstream_base", "cuda_version"))
    upstream = c.get_str(
        native_line, "native_line", "upstream_base", pattern=HEX40, what="a full 40-hex commit"
    )
    cuda = c.get_str(
        native_line, "native_line", "cuda_version", pattern=CUDA_VERSION, what="a quoted version like 13.3"
    )
    return upstream, cuda


def _check_native_cuda(c: Checker, lanes: list[Lane], native_cuda: str | None) -> None:
    """Reference: "Native packages use CUDA 13.3" — one CUDA version for the whole native line.

    A lane without a (valid) cuda_version was reported where it was read; no "None differs".
    """
    if native_cuda is None:
        return
    for lane in lanes:
        if lane.kind == "windows-zip" and lane.cuda_version is not None and lane.cuda_version != native_cuda:
            c.add(
                f"lanes.{lane.id}.cuda_version",
                f"{lane.cuda_version} differs from native_line.cuda_version {native_cuda}",
            )


@dataclass
class _CrossDocuments:
    """Cross-document checks of the lanes in lane-id order: each problem in a profile or record is
    reported with its own file; the profiles loaded on the way."""

    file: str
    root_dir: Path
    superseded_tags: set[str]
    model: ModelBinding | None
    problems: list[Problem] = field(default_factory=list)
    profiles: dict[str, Profile] = field(default_factory=dict)
    seen_tags: dict[str, str] = field(default_factory=dict)
    seen_profiles: dict[str, str] = field(default_factory=dict)

    def bad(self, where: str, message: str) -> None:
        self.problems.append(Problem(file=self.file, field=where, message=message))

    def lane(self, lane: Lane) -> None:
        """One lane: its tag is unique and not superseded; its profile is its own, loads and agrees."""
        where = f"lanes.{lane.id}"
        tag = lane.component_tag
        if tag in self.seen_tags:
            self.bad(f"{where}.component_tag", f"{tag} is also the tag of lane {self.seen_tags[tag]}")
        self.seen_tags.setdefault(tag, lane.id)
        if tag in self.superseded_tags:
            self.bad(f"{where}.component_tag", f"{tag} was superseded; a superseded tag is never reused")
        if lane.profile_id in self.seen_profiles:
            self.bad(
                f"{where}.profile",
                f"profile {lane.profile_id} is already used by lane {self.seen_profiles[lane.profile_id]}",
            )
            return
        self.seen_profiles[lane.profile_id] = lane.id
        profile = self._profile(where, lane.profile_id)
        if profile is not None:
            self.profiles[profile.id] = profile
            self.problems.extend(_cross_check(self.file, where, lane, profile, self.model))

    def _profile(self, where: str, profile_id: str) -> Profile | None:
        profile_path = self.root_dir / "profiles" / f"{profile_id}.yaml"
        try:
            return load_profile(profile_path)
        except InputError:
            self.bad(f"{where}.profile", f"no such profile: {profile_path}")
        except NinferError as exc:
            self.problems.extend(exc.problems or [Problem(file=str(profile_path), message=str(exc))])
        return None

    def successors(self, superseded: tuple[Superseded, ...]) -> None:
        """Each superseded tag's successor is a lane's component tag."""
        for s in superseded:
            if s.successor not in self.seen_tags:
                self.bad("superseded", f"successor {s.successor} of {s.tag} is not a lane's component tag")


def load_release(path: Path, *, env: Mapping[str, str], repo_root: Path | None = None) -> Release:
    """Load and validate a staged release manifest and everything it names.

    Profiles are read from ``<repo_root>/profiles/<id>.yaml`` and carried records from
    ``<repo_root>/<carried_from>``; ``repo_root`` defaults to the manifest's parent's parent.
    ``SOURCE_DATE_EPOCH`` in ``env`` overrides ``source_date_epoch`` (DESIGN.md §5).

    Raises:
        InputError: the manifest file is missing (exit 4).
        DefinitionError: every problem in the manifest, its profiles and records, at once (exit 3).
    """
    root_dir = repo_root if repo_root is not None else path.resolve().parent.parent
    c = Checker(str(path))
    d = c.document(load_yaml_data(path))
    top = _top(c, d)
    model, client = _components(c, d)
    upstream, native_cuda = _native_line(c, d)
    superseded = _superseded(c, d)
    lanes = _lanes(c, d, root_dir)
    predecessor, document_changes = _documented_routes(c, d, root_dir, {lane.id for lane in lanes})
    _check_native_cuda(c, lanes, native_cuda)
    cross = _CrossDocuments(
        file=str(path), root_dir=root_dir, superseded_tags={s.tag for s in superseded}, model=model
    )
    for lane in sorted(lanes, key=lambda x: x.id):
        cross.lane(lane)
    cross.problems.extend(_repository_problems(str(path), lanes))
    cross.successors(superseded)
    problems = [*c.problems, *cross.problems]
    if problems:
        raise DefinitionError(problems=problems)
    assert top.product and top.version and top.candidate and top.epoch is not None and top.base_url
    assert model and client
    return Release(
        path=path,
        repo_root=root_dir,
        version=top.version,
        product=top.product,
        state=top.state,
        published_product_version=top.published,
        candidate_commit=top.candidate,
        source_date_epoch=source_date_epoch(top.epoch, env),
        publication_base_url=top.base_url,
        asset_budget=DEFAULT_ASSET_BUDGET if top.budget is None else top.budget,
        model=model,
        client=client,
        upstream_base=upstream,
        native_cuda_version=native_cuda,
        superseded=superseded,
        lanes=MappingProxyType({lane.id: lane for lane in sorted(lanes, key=lambda x: x.id)}),
        profiles=MappingProxyType(dict(sorted(cross.profiles.items()))),
        predecessor=predecessor,
        document_changes=MappingProxyType(dict(sorted(document_changes.items()))),
    )


def _documented_routes(
    c: Checker, d: dict[str, Any], root_dir: Path, lane_ids: set[str]
) -> tuple[str | None, dict[str, str]]:
    """``predecessor`` (a folder of the repo) and ``documented_routes.<lane>.document_change``."""
    predecessor = c.get_str(d, "", "predecessor", required=False)
    if predecessor is not None:
        if predecessor.startswith("/") or "\\" in predecessor or ".." in predecessor.split("/"):
            c.add("predecessor", f"{predecessor!r} is not a relative folder of the repository")
            predecessor = None
        elif not (root_dir / predecessor).is_dir():
            c.add("predecessor", f"{predecessor!r}: no such folder under {root_dir}")
            predecessor = None
    changes: dict[str, str] = {}
    documented = c.get_mapping(d, "", "documented_routes", required=False) or {}
    for lane_id, item in documented.items():
        f = f"documented_routes.{lane_id}"
        if lane_id not in lane_ids:
            c.add(f, f"no such lane; lanes: {', '.join(sorted(lane_ids))}")
            continue
        entry = c.mapping(item, f)
        if entry is None:
            continue
        c.keys(entry, f, required=("document_change",))
        text = c.get_str(entry, f, "document_change")
        if text is not None:
            changes[lane_id] = text
    return predecessor, changes


def _repository_problems(file: str, lanes: list[Lane]) -> list[Problem]:
    """Each lane's publication repository is its own: no two equal, none ending in ``/`` + another
    (so a store path names at most one lane, :meth:`Release.store_owner`)."""
    problems: list[Problem] = []
    named = sorted((lane for lane in lanes if lane.publication_repository), key=lambda x: x.id)
    for lane in named:
        for other in named:
            if other.id != lane.id and lane.owns_store_path(str(other.publication_repository)):
                problems.append(
                    Problem(
                        file=file,
                        field=f"lanes.{other.id}.publication_repository",
                        message=f"{other.publication_repository} would also be lane {lane.id}'s store "
                        f"({lane.publication_repository}); each lane publishes to its own repository",
                    )
                )
    return problems


def _components(c: Checker, d: dict[str, Any]) -> tuple[ModelBinding | None, ClientBinding | None]:
    comps = c.get_mapping(d, "", "components")
    if comps is None:
        return None, None
    if "native_model" in comps:
        c.add(
            "components.native_model",
            "removed in v0.13.1: every lane binds components.model; delete the native_model override",
        )
    c.keys(comps, "components", required=("model", "client"), optional=("native_model",))
    model = None
    m = c.get_mapping(comps, "components", "model")
    if m is not None:
        f = "components.model"
        c.keys(
            m,
            f,
            required=(
                "repository",
                "revision",
                "artifact",
                "size",
                "sha256",
                "local_name",
                "container_version",
            ),
        )
        repo = c.get_str(m, f, "repository")
        if repo is not None and check_base_url(repo) is not None:
            c.add(f"{f}.repository", f"{repo!r} {check_base_url(repo)}")
            repo = None
        revision = c.get_str(m, f, "revision", pattern=HEX40, what="a full 40-hex commit")
        artifact = c.get_str(m, f, "artifact", pattern=FILE_NAME, what="a plain file name")
        size = c.get_int(m, f, "size", minimum=1, unit="bytes")
        sha = c.get_str(m, f, "sha256", pattern=SHA256_HEX, what="64 lowercase hex digits")
        local = c.get_str(m, f, "local_name", pattern=FILE_NAME, what="a plain file name")
        cver = c.get_int(m, f, "container_version", minimum=1)
        if repo and revision and artifact and size and sha and local and cver:
            model = ModelBinding(
                repository=repo,
                revision=revision,
                artifact=artifact,
                size=size,
                sha256=sha,
                local_name=local,
                container_version=cver,
            )
    client = None
    cl = c.get_mapping(comps, "components", "client")
    if cl is not None:
        f = "components.client"
        c.keys(cl, f, required=("name", "version", "source", "mode"))
        name = c.get_str(cl, f, "name")
        ver = c.get_str(cl, f, "version", pattern=re.compile(r"[0-9]+\.[0-9]+\.[0-9]+"), what="a version")
        src = c.get_str(cl, f, "source", pattern=SHORT_HEX, what="a hex commit")
        mode = c.get_str(cl, f, "mode", choices=("carry",))
        if name and ver and src and mode:
            client = ClientBinding(name=name, version=ver, source=src, mode=mode)
    return model, client


def _superseded(c: Checker, d: dict[str, Any]) -> tuple[Superseded, ...]:
    items = c.get_list(d, "", "superseded", required=False)
    out: list[Superseded] = []
    for i, item in enumerate(items or []):
        f = f"superseded[{i}]"
        s = c.mapping(item, f)
        if s is None:
            continue
        c.keys(s, f, required=("tag", "source", "successor"))
        tag = c.get_str(s, f, "tag", pattern=COMPONENT_TAG, what="a component tag")
        src = c.get_str(s, f, "source", pattern=SHORT_HEX, what="a hex commit")
        succ = c.get_str(s, f, "successor", pattern=COMPONENT_TAG, what="a component tag")
        if tag and succ and tag == succ:
            c.add(f"{f}.successor", "a superseded tag cannot be its own successor")
        elif tag and src and succ:
            out.append(Superseded(tag=tag, source=src, successor=succ))
    return tuple(out)


def _shown(value: object) -> str:
    """A definition value for a message: its repr, or ``not set`` (never the word ``None``)."""
    return "not set" if value is None else repr(value)


def _cross_check(file: str, where: str, lane: Lane, p: Profile, model: ModelBinding | None) -> list[Problem]:
    """The lane's profile (and carried record) agree with the lane and with ``components.model``."""
    out = [
        Problem(file=file, field=f"{where}.{fld}", message=msg)
        for fld, msg in _profile_disagreements(lane, p)
    ]
    if model is not None:
        out += [
            Problem(file=file, field=f"{where}.profile", message=m) for m in _model_disagreements(p, model)
        ]
    if lane.carried is not None:
        out += _record_disagreements(where, lane, lane.carried, p)
    return out


def _profile_disagreements(lane: Lane, p: Profile) -> list[tuple[str, str]]:
    """``(lane field, message)`` for each way profile ``p`` is not the lane's."""
    out: list[tuple[str, str]] = []
    if p.lane != lane.id:
        out.append(("profile", f"profile {p.id} is for lane {p.lane!r}, not {lane.id!r}"))
    if p.component_tag is not None and p.component_tag != lane.component_tag:
        out.append(
            (
                "component_tag",
                f"{lane.component_tag!r} differs from profile {p.id}'s component_tag {p.component_tag!r}",
            )
        )
    if p.gpu != lane.gpu:
        out.append(("gpu", f"{_shown(lane.gpu)} differs from profile {p.id}'s gpu {p.gpu!r}"))
    # A native lane's missing or invalid cuda_arch was already reported as such where it was read.
    if p.cuda_arch != lane.cuda_arch and not (lane.cuda_arch is None and lane.kind == "windows-zip"):
        out.append(
            ("cuda_arch", f"{_shown(lane.cuda_arch)} differs from profile {p.id}'s cuda_arch {p.cuda_arch!r}")
        )
    want_kind = "native" if lane.kind == "windows-zip" else "container"
    if p.kind != want_kind:
        out.append(("profile", f"a {lane.kind} lane needs a {want_kind} profile; {p.id} is {p.kind}"))
    if p.carried != (lane.mode == "carry"):
        out.append(("mode", f"lane mode {lane.mode} but profile {p.id} has carried={str(p.carried).lower()}"))
    return out


def _model_disagreements(p: Profile, model: ModelBinding) -> list[str]:
    """How profile ``p``'s model differs from ``components.model``."""
    out: list[str] = []
    if p.model_sha256 != model.sha256:
        out.append(
            f"profile {p.id} binds model {p.model_sha256[:8]}…, not components.model {model.sha256[:8]}…"
        )
    if p.model_file != model.local_name:
        out.append(
            f"profile {p.id} loads {p.model_file!r}, not components.model.local_name {model.local_name!r}"
        )
    return out


def _record_disagreements(where: str, lane: Lane, rec: CarriedImage, p: Profile) -> list[Problem]:
    """Each field of a carried record that disagrees with its lane or profile, in the record's file."""
    return [
        Problem(file=str(rec.path), field=field, message=f"{got!r} disagrees with {want!r} ({where})")
        for field, got, want in (
            ("lane", rec.lane, lane.id),
            ("component_tag", rec.component_tag, lane.component_tag),
            ("source", rec.source, lane.source_commit),
            ("profile", rec.profile_id, p.id),
            ("strict_origin_config", rec.strict_origin_config, p.strict_origin_config),
            ("checkpoint_mount", rec.checkpoint_mount, p.checkpoint.mount),
            ("model_sha256", rec.model_sha256, p.model_sha256),
        )
        if got != want
    ]


def render_release(release: Release, *, templates_dir: Path | None = None) -> Mapping[str, RenderedConfig]:
    """Render every lane's config of ``release``; keyed by lane id, in lane-id order.

    ``templates_dir`` defaults to ``<repo_root>/profiles/templates``.

    Raises:
        DefinitionError: every lane's rendering problems, at once.
    """
    tdir = templates_dir if templates_dir is not None else release.repo_root / "profiles" / "templates"
    out: dict[str, RenderedConfig] = {}
    problems: list[Problem] = []
    for lane_id in release.lanes:
        try:
            out[lane_id] = render_config(release.profile_of(lane_id), templates_dir=tdir)
        except DefinitionError as exc:
            problems.extend(exc.problems)
    if problems:
        raise DefinitionError(problems=problems)
    return out
