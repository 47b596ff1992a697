"""Publishing a sealed asset set as one immutable OCI artifact (DESIGN.md §8; docs/publishing.md).

Terms:

* *target*: where sets are published — ``oci://HOST[:PORT]/REPO[:TAG|@DIGEST]`` (an OCI registry)
  or ``dir://PATH[:TAG|@DIGEST]`` (an OCI image layout on disk, the embedded default).
* *artifact*: one OCI image manifest per set. ``artifactType`` and ``config.mediaType`` are both
  :data:`ARTIFACT_TYPE`; the config blob is ``{}``; one layer per file, titled with the bare file
  name (C41), sorted by name; annotations name the component tag, the ``SHA256SUMS`` digest, the
  source commit (caller-supplied ``org.opencontainers.image.revision``) and the creation time from
  the source-date epoch — nothing from the host, the clock or the set's directory, so the manifest
  (and its digest) is identical whichever directory or backend it is published from.
* *tags*: ``<tag>`` is immutable; ``<tag>.draft`` is a mutable staging tag; ``<tag>.superseded``
  tags a supersession marker that forbids reusing ``<tag>``; ``latest`` moves only on an explicit,
  non-prerelease, non-draft publish.

This module holds the value types, the pure planning (manifest bytes), target parsing, and the
immutability rules (:class:`StorePublisher`). The two adapters only move bytes:
:mod:`._oci_publisher` (over :mod:`ninfer_release.registry`, the one registry client) and
:mod:`._dir_store`.
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ninfer_release import checksums, hashing, jsonbytes, reproducible, strictjson
from ninfer_release.containers import MT_EMPTY, MT_INDEX, MT_MANIFEST, REF_NAME
from ninfer_release.digests import is_digest, is_sha256_hex
from ninfer_release.errors import InputError, IntegrityError, Problem, PublishError
from ninfer_release.progress import SILENT, Counter, Progress

if TYPE_CHECKING:  # the registry client (requests) loads only when a registry is opened
    from ninfer_release.registry import RegistryOptions

#: The artifact type of an asset set (``artifactType`` and ``config.mediaType``).
ARTIFACT_TYPE = "application/vnd.omp-ninfer.asset-set.v1"
#: The artifact type of a supersession marker (tagged ``<tag>.superseded``).
SUPERSESSION_TYPE = "application/vnd.omp-ninfer.supersession.v1"
#: The artifact type of a set's signatures (Sigstore bundles; tagged ``<tag>.sigstore``, a referrer
#: of the set's manifest): the media type of a Sigstore bundle, as sigstore clients look it up.
SIGNATURES_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
SIGNATURES_SUFFIX = ".sigstore"
#: The OCI media types, defined once with the layout writer (``containers``).
MANIFEST_MEDIA_TYPE = MT_MANIFEST
INDEX_MEDIA_TYPE = MT_INDEX
#: OCI image-spec 1.1 "empty descriptor" media type (the marker's one layer).
EMPTY_MEDIA_TYPE = MT_EMPTY
#: The config blob of every artifact we write: the two bytes ``{}``.
EMPTY_JSON = b"{}"

ANN_TITLE = "org.opencontainers.image.title"
ANN_CREATED = "org.opencontainers.image.created"
ANN_REF_NAME = REF_NAME
#: The source commit; the caller passes it in :attr:`PublishRequest.annotations`.
ANN_REVISION = "org.opencontainers.image.revision"
ANN_COMPONENT_TAG = "vnd.omp-ninfer.component-tag"
#: ``sha256:<hex>`` of the set's ``SHA256SUMS`` (the one digest that pins the set).
ANN_SHA256SUMS = "vnd.omp-ninfer.sha256sums"
ANN_SUPERSEDED_TAG = "vnd.omp-ninfer.superseded-tag"
ANN_SUPERSEDED_BY = "vnd.omp-ninfer.superseded-by"
_RESERVED_ANNOTATIONS = frozenset({ANN_TITLE, ANN_CREATED, ANN_REF_NAME, ANN_COMPONENT_TAG, ANN_SHA256SUMS})

SUMS_NAME = "SHA256SUMS"
LATEST_TAG = "latest"
DRAFT_SUFFIX = ".draft"
SUPERSEDED_SUFFIX = ".superseded"
#: Tags are at most 128 characters; a publishable tag leaves room for ``.draft.superseded``
#: (the marker that retires its draft once the final is published).
MAX_TAG_LENGTH = 128 - len(DRAFT_SUFFIX + SUPERSEDED_SUFFIX)
#: A supersession marker is about 600 bytes; a record past this bound is not one (read bounded).
MAX_MARKER_BYTES = 64 << 10

#: Default media type per file, by name suffix (longest match first).
DEFAULT_MEDIA_TYPES: tuple[tuple[str, str], ...] = (
    (".spdx.json", "application/spdx+json"),
    (".cdx.json", "application/vnd.cyclonedx+json"),
    (".json", "application/json"),
    (".zip", "application/zip"),
    (".toml", "application/toml"),
)

# OCI distribution-spec grammars.
_TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_REPO_RE = re.compile(r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*")
_HOST_RE = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?"
)
#: A bare, portable file name: what a layer title may be (C41). No separators, no traversal.
_BARE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,254}")
#: Semver-style pre-release markers inside a component tag (``...-beta.2``, ``-rc1``, ``-alpha``).
_PRERELEASE_RE = re.compile(
    r"(?:alpha|beta|rc|pre|preview|dev|nightly|snapshot)(?:[.]?[0-9]+)*", re.IGNORECASE
)
_VERSION_CORE_RE = re.compile(r"v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


# --- value types ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PublishRequest:
    """What to publish: ``files`` (bare names, incl. ``SHA256SUMS``) of ``set_dir`` under ``tag``.

    ``annotations`` are added to the manifest (pass the source commit as
    :data:`ANN_REVISION`); reserved keys (title, created, ref name, component tag, SHA256SUMS
    digest) are computed and may not be given. ``media_types`` overrides the per-file defaults
    (:data:`DEFAULT_MEDIA_TYPES`, ``SHA256SUMS`` → ``text/plain``). ``epoch`` (seconds) is the
    source-date epoch, written as ``org.opencontainers.image.created``. ``draft`` publishes under
    the mutable ``<tag>.draft``; ``move_latest`` also tags ``latest`` (refused for prereleases and
    drafts).
    """

    set_dir: Path
    tag: str
    files: Sequence[str]
    annotations: Mapping[str, str] = field(default_factory=dict)
    media_types: Mapping[str, str] = field(default_factory=dict)
    draft: bool = False
    epoch: int
    move_latest: bool = False
    #: Name -> digest and size the set verification established for these files (from
    #: :func:`~._flows.publish_set`); the plan uses them instead of hashing the set again. Never a
    #: weaker check: each store's upload hashes what it copies and refuses bytes other than the
    #: digest (``write_verified``; the registry's ``PUT ?digest=``), so a file changed since is
    #: caught there. ``None``: the plan hashes every file.
    verified: Mapping[str, FileDigest] | None = None
    #: Called (and must return) before anything becomes visible — the manifest put under a tag,
    #: ``latest`` moved — and before any result is returned, ``already_published`` included;
    #: raising refuses the publish. :func:`~._flows.publish_set` passes "the verification running
    #: meanwhile passed and established exactly the ``verified`` digests", so blobs upload while
    #: the set is still being verified (docs/publishing.md, "Verification overlaps the upload").
    #: ``None``: nothing to wait for (the set was verified before the request was made).
    gate: Callable[[], None] | None = None


@dataclass(frozen=True, kw_only=True)
class FileDigest:
    """A file's SHA-256 (64 lowercase hex) and size in bytes, as a verification read them."""

    sha256: str
    size: int

    def __post_init__(self) -> None:
        if not is_sha256_hex(self.sha256) or self.size < 0:
            raise ValueError(f"not a SHA-256 and size: {self.sha256!r}, {self.size!r}")


PublishStatus = Literal["published", "already_published"]


@dataclass(frozen=True, kw_only=True)
class PublishResult:
    """Outcome of a publish: ``ref`` is ``oci://HOST/REPO:TAG`` or ``dir://PATH:TAG``."""

    status: PublishStatus
    ref: str
    manifest_digest: str
    latest_moved: bool = False
    #: The ref of the marker retiring ``<tag>.draft`` when publishing the final found a draft
    #: (:func:`plan_draft_retirement`; written now or before), else ``None``.
    retired_draft: str | None = None


@dataclass(frozen=True, kw_only=True)
class PulledFile:
    """One file written by :meth:`Publisher.pull`, verified against its layer descriptor."""

    name: str
    size: int
    sha256: str
    media_type: str


@dataclass(frozen=True, kw_only=True)
class PulledSet:
    """A set pulled into ``dest``: every layer verified by digest and size, titles bare names."""

    ref: str
    manifest_digest: str
    dest: Path
    files: tuple[PulledFile, ...]
    annotations: Mapping[str, str]
    #: The successor tag when the pulled tag has a supersession marker, else ``None``.
    superseded_by: str | None = None


@dataclass(frozen=True, kw_only=True)
class Blob:
    """A content descriptor plus where its bytes come from (``path`` or ``data``)."""

    media_type: str
    digest: str  # "sha256:<64 hex>"
    size: int  # bytes
    title: str | None = None
    path: Path | None = None
    data: bytes | None = None

    def descriptor(self) -> dict[str, Any]:
        """The OCI descriptor of this blob (title annotation only when it has one)."""
        d: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest, "size": self.size}
        if self.title is not None:
            d["annotations"] = {ANN_TITLE: self.title}
        return d


@dataclass(frozen=True, kw_only=True)
class ArtifactPlan:
    """Everything a backend writes for one artifact: blobs, exact manifest bytes and digest."""

    tag: str
    artifact_type: str
    config: Blob
    layers: tuple[Blob, ...]
    manifest: bytes
    digest: str

    @property
    def blobs(self) -> tuple[Blob, ...]:
        """Layers then config (the manifest goes after all of them)."""
        return (*self.layers, self.config)

    @property
    def upload_order(self) -> tuple[Blob, ...]:
        """:attr:`blobs` largest first (then by title): the one long transfer of a set (its zip)
        starts before the small ones, so nothing waits for it longer than it must. The manifest
        (its bytes, its digest) does not depend on the order."""
        return tuple(sorted(self.blobs, key=lambda b: (-b.size, b.title or "")))


@dataclass(frozen=True, kw_only=True)
class OciTarget:
    """``oci://HOST[:PORT]/REPO[:TAG|@DIGEST]``."""

    host: str  # with the port, e.g. "127.0.0.1:5000"
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def reference(self) -> str | None:
        """The digest if given, else the tag (``None`` when neither)."""
        return self.digest or self.tag

    def url(self, ref: str | None = None) -> str:
        """``oci://HOST/REPO`` with ``:TAG`` or ``@DIGEST`` for ``ref``."""
        return _with_ref(f"oci://{self.host}/{self.repository}", ref)


@dataclass(frozen=True, kw_only=True)
class FilesTarget:
    """``files://PATH[:TAG]`` — a ``<tag>/<name>`` tree laid out as ``publication_base_url`` promises."""

    path: Path
    tag: str | None = None

    @property
    def digest(self) -> None:
        """Always ``None``: a files store is addressed by tag only."""
        return None

    @property
    def reference(self) -> str | None:
        """The tag, if given."""
        return self.tag

    def url(self, ref: str | None = None) -> str:
        """``files://PATH`` with ``:TAG`` for ``ref``."""
        return _with_ref(f"files://{self.path}", ref)


@dataclass(frozen=True, kw_only=True)
class DirTarget:
    """``dir://PATH[:TAG|@DIGEST]`` — an OCI image layout directory."""

    path: Path
    tag: str | None = None
    digest: str | None = None

    @property
    def reference(self) -> str | None:
        """The digest if given, else the tag (``None`` when neither)."""
        return self.digest or self.tag

    def url(self, ref: str | None = None) -> str:
        """``dir://PATH`` with ``:TAG`` or ``@DIGEST`` for ``ref``."""
        return _with_ref(f"dir://{self.path}", ref)


Target = OciTarget | DirTarget | FilesTarget


def _with_ref(base: str, ref: str | None) -> str:
    if ref is None:
        return base
    return f"{base}@{ref}" if ref.startswith("sha256:") else f"{base}:{ref}"


@runtime_checkable
class Publisher(Protocol):
    """A place sets are published to and pulled from (registry or directory store)."""

    def publish(self, request: PublishRequest) -> PublishResult:
        """Publish a set; see :meth:`StorePublisher.publish`."""
        ...

    def pull(self, ref: str, dest: Path) -> PulledSet:
        """Download every file of the set at ``ref`` (tag or digest) into ``dest``."""
        ...

    def resolve(self, ref: str) -> str | None:
        """The manifest digest ``ref`` (tag or digest) points to, or ``None``."""
        ...

    def url(self, ref: str | None = None) -> str:
        """The target URL (``oci://…`` or ``dir://…``) of ``ref`` in this store."""
        ...

    def supersede(self, tag: str, *, by: str, epoch: int) -> PublishResult:
        """Record that ``tag`` is superseded by ``by``; ``tag`` can never be published again."""
        ...

    def attach_signatures(self, tag: str, bundles: Mapping[str, bytes], *, epoch: int) -> PublishResult:
        """Store the signatures (bundle name → bytes) of the set at ``tag`` beside it."""
        ...

    def pull_signatures(self, tag: str, *, subject: str | None) -> dict[str, bytes] | None:
        """The signatures stored beside ``tag`` (bundle name → bytes), or ``None`` when none."""
        ...


# --- pure helpers -----------------------------------------------------------------------------


def is_valid_tag(tag: str) -> bool:
    """Whether ``tag`` matches the OCI distribution tag grammar ``[A-Za-z0-9_][A-Za-z0-9._-]{0,127}``."""
    return _TAG_RE.fullmatch(tag) is not None


def is_bare_name(name: str) -> bool:
    """Whether ``name`` is a bare, portable file name (no ``/``, ``\\``, ``..``, drive, control).

    The only names allowed as layer titles, on publish and on pull (C41).
    """
    return _BARE_NAME_RE.fullmatch(name) is not None and name not in {".", ".."} and ".." not in name


def is_prerelease(tag: str) -> bool:
    """Whether a component tag is a pre-release: a ``-``-separated part after the version core
    is a pre-release marker (``alpha``, ``beta``, ``rc``, ``pre``, ``preview``, ``dev``, ``nightly``,
    ``snapshot``, optionally numbered: ``beta.2``, ``rc1``), or the tag has no version core.

    ``v0.7.0-qwen38-4090-beta.2`` is a pre-release; ``v0.7.0-qwen38-4090`` and ``v1.2.3`` are not.
    A tag that is not a version at all counts as a pre-release (it can never move ``latest``).
    """
    head, _, rest = tag.partition("-")
    if _VERSION_CORE_RE.fullmatch(head.split("+", 1)[0]) is None:
        return True
    rest = rest.split("+", 1)[0]
    return any(_PRERELEASE_RE.fullmatch(part) for part in rest.split("-") if part)


def default_media_type(name: str) -> str | None:
    """The media type of a set file by name (``SHA256SUMS`` → ``text/plain``), or ``None``."""
    if name == SUMS_NAME:
        return "text/plain"
    for suffix, media_type in DEFAULT_MEDIA_TYPES:
        if name.endswith(suffix):
            return media_type
    return None


def blob_of_bytes(data: bytes, media_type: str) -> Blob:
    """An in-memory blob."""
    return Blob(
        media_type=media_type, digest="sha256:" + hashing.sha256_bytes(data), size=len(data), data=data
    )


def render_manifest(
    *,
    artifact_type: str,
    config: Blob,
    layers: Sequence[Blob],
    annotations: Mapping[str, str],
    subject: Mapping[str, Any] | None = None,
) -> bytes:
    """Exact manifest bytes: RFC 8785 canonical JSON of an OCI image manifest (image-spec 1.1).

    ``artifactType`` is set alongside ``config.mediaType`` so both image-spec 1.0 readers (which
    read the config media type) and 1.1 readers (``artifactType``) see the type.
    """
    manifest: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "artifactType": artifact_type,
        "config": config.descriptor(),
        "layers": [layer.descriptor() for layer in layers],
    }
    if annotations:
        manifest["annotations"] = dict(annotations)
    if subject is not None:
        manifest["subject"] = dict(subject)
    return jsonbytes.canonical_json(manifest)


def _check_request(request: PublishRequest) -> list[Problem]:
    """Every problem of ``request`` at once: its tag, epoch, files, media types and annotations."""
    where = str(request.set_dir)
    problems = _tag_problems(request.tag, where)
    if request.epoch < 0:
        problems.append(Problem(file=where, field="epoch", message=f"{request.epoch} is negative"))
    if isinstance(request.files, str):
        problems.append(Problem(file=where, field="files", message="a sequence of names, not one string"))
    names = [] if isinstance(request.files, str) else list(request.files)
    if SUMS_NAME not in names:
        problems.append(Problem(file=where, field="files", message=f"{SUMS_NAME} is not among the files"))
    seen: set[str] = set()
    for name in names:
        if name in seen:
            problems.append(Problem(file=where, field="files", message=f"{name!r} is listed twice"))
        seen.add(name)
        problems.extend(_file_problems(request, name, where))
    for name in request.media_types:
        if name not in seen:
            problems.append(Problem(file=where, field=f"media_types.{name}", message="not one of the files"))
    problems.extend(_annotation_problems(request.annotations, where))
    return problems


def _tag_problems(tag: str, where: str) -> list[Problem]:
    """Why ``tag`` cannot name a publication: invalid, too long for its markers, or reserved."""
    if not is_valid_tag(tag):
        return [Problem(file=where, field="tag", message=f"{tag!r} is not a valid OCI tag")]
    if len(tag) > MAX_TAG_LENGTH:
        message = f"longer than {MAX_TAG_LENGTH} (room for '{DRAFT_SUFFIX}{SUPERSEDED_SUFFIX}')"
        return [Problem(file=where, field="tag", message=message)]
    if tag == LATEST_TAG or tag.endswith((DRAFT_SUFFIX, SUPERSEDED_SUFFIX)):
        message = f"{tag!r} is reserved ('latest', '*{DRAFT_SUFFIX}', '*{SUPERSEDED_SUFFIX}')"
        return [Problem(file=where, field="tag", message=message)]
    return []


def _file_problems(request: PublishRequest, name: str, where: str) -> list[Problem]:
    """Why the listed ``name`` cannot be published: not a bare name, not a regular file of the
    set directory, or of no known media type."""
    if not is_bare_name(name):
        message = f"{name!r} is not a bare file name (C41: titles are names)"
        return [Problem(file=where, field="files", message=message)]
    problems = []
    path = request.set_dir / name
    if path.is_symlink() or not path.is_file():
        problems.append(Problem(file=str(path), message="not a regular file in the set directory"))
    if request.media_types.get(name, default_media_type(name)) is None:
        problems.append(Problem(file=str(path), field="media_types", message="no media type known; give one"))
    return problems


def _annotation_problems(annotations: Mapping[str, str], where: str) -> list[Problem]:
    """Annotations publishing computes itself, and keys or values that are not strings."""
    problems = []
    for key, value in annotations.items():
        if key in _RESERVED_ANNOTATIONS:
            message = "reserved; computed on publish"
            problems.append(Problem(file=where, field=f"annotations.{key}", message=message))
        elif not key or not isinstance(value, str):
            message = "keys and values must be strings"
            problems.append(Problem(file=where, field=f"annotations.{key}", message=message))
    return problems


def _hashed(path: Path) -> tuple[str, int]:
    """``(sha256 hex, size)`` of the file at ``path``, read once.

    Raises:
        InputError: it cannot be read (exit 4).
    """
    counted = Counter()
    try:
        return hashing.sha256_file(path, progress=counted), counted.nbytes
    except OSError as exc:
        raise InputError(
            problems=[Problem(file=str(path), message=f"cannot read: {exc.strerror or exc}")]
        ) from None


def plan_publish(request: PublishRequest) -> ArtifactPlan:
    """Hash the set's files once and build the artifact: layers by name, exact manifest bytes.

    The set must agree with its own ``SHA256SUMS``: every listed file is among ``files`` with the
    same digest, and every other file is listed (publishing is irreversible, so a set that
    contradicts itself is refused here too).

    Raises:
        InputError: the request is malformed (tag, files, media types, annotations) — all problems.
        PublishError: ``move_latest`` on a draft or a prerelease (never tagged ``latest``).
        IntegrityError: ``SHA256SUMS`` is not canonical GNU text (any parser warning or error of
            :func:`ninfer_release.checksums.parse_sha256sums`) or disagrees with the files.
    """
    problems = _check_request(request)
    if problems:
        raise InputError(problems=problems)
    if request.move_latest and (request.draft or is_prerelease(request.tag)):
        what = "a draft" if request.draft else f"{request.tag} is a prerelease; a prerelease"
        raise PublishError(f"{request.set_dir}: latest: {what} is never tagged latest")
    layers: list[Blob] = []
    digests: dict[str, str] = {}
    verified = request.verified or {}
    for name in sorted(request.files):
        path = request.set_dir / name
        known = verified.get(name)
        hexdigest, size = (known.sha256, known.size) if known is not None else _hashed(path)
        digests[name] = hexdigest
        media_type = request.media_types.get(name) or default_media_type(name)
        assert media_type is not None  # checked above
        layers.append(
            Blob(media_type=media_type, digest="sha256:" + hexdigest, size=size, title=name, path=path)
        )
    sums_path = request.set_dir / SUMS_NAME
    sums_data = strictjson.read_regular(
        sums_path, limit=checksums.sums_bound(len(request.files)), error=IntegrityError
    )
    parsed = checksums.parse_sha256sums(sums_data, source=str(sums_path))
    if parsed.errors or parsed.warnings:
        # Only the canonical GNU form is published: what is immutable must be unambiguous.
        raise IntegrityError(problems=[*parsed.errors, *parsed.warnings])
    sums = parsed.as_dict()
    mismatch: list[Problem] = []
    for name, hexdigest in sorted(sums.items()):
        if name not in digests:
            mismatch.append(
                Problem(file=str(sums_path), field=name, message="listed but not among the files")
            )
        elif digests[name] != hexdigest:
            mismatch.append(
                Problem(file=str(sums_path), field=name, message=f"says {hexdigest}, file is {digests[name]}")
            )
    for name in sorted(set(digests) - set(sums) - {SUMS_NAME}):
        mismatch.append(Problem(file=str(sums_path), field=name, message="file is not listed"))
    if mismatch:
        raise IntegrityError(problems=mismatch)
    annotations = {
        **request.annotations,
        ANN_COMPONENT_TAG: request.tag,
        ANN_SHA256SUMS: "sha256:" + digests[SUMS_NAME],
        ANN_CREATED: reproducible.iso8601(request.epoch),
    }
    config = blob_of_bytes(EMPTY_JSON, ARTIFACT_TYPE)
    manifest = render_manifest(
        artifact_type=ARTIFACT_TYPE, config=config, layers=layers, annotations=annotations
    )
    return ArtifactPlan(
        tag=request.tag,
        artifact_type=ARTIFACT_TYPE,
        config=config,
        layers=tuple(layers),
        manifest=manifest,
        digest="sha256:" + hashing.sha256_bytes(manifest),
    )


def _is_publishable(tag: object) -> bool:
    """Whether ``tag`` may name a publication (a valid tag, not ``latest``, ``*.draft`` or
    ``*.superseded``): what a supersession names on both sides."""
    return (
        isinstance(tag, str)
        and is_valid_tag(tag)
        and tag != LATEST_TAG
        and not tag.endswith((DRAFT_SUFFIX, SUPERSEDED_SUFFIX))
    )


def plan_supersession(*, tag: str, by: str, epoch: int, subject: tuple[str, int] | None) -> ArtifactPlan:
    """The supersession marker for ``tag``: an empty artifact of :data:`SUPERSESSION_TYPE` naming
    the successor ``by``, with ``subject`` = (digest, size) of the superseded manifest if known.

    Raises:
        InputError: ``tag`` or ``by`` is not a publishable tag, or they are equal.
    """
    problems: list[Problem] = []
    for fld, value in (("tag", tag), ("by", by)):
        if not _is_publishable(value):
            problems.append(
                Problem(file="supersede", field=fld, message=f"{value!r} is not a publishable tag")
            )
    if tag == by:
        problems.append(Problem(file="supersede", field="by", message="a tag cannot supersede itself"))
    if epoch < 0:
        problems.append(Problem(file="supersede", field="epoch", message=f"{epoch} is negative"))
    if problems:
        raise InputError(problems=problems)
    return _marker_plan(tag=tag, by=by, epoch=epoch, subject=subject)


def plan_draft_retirement(*, tag: str, epoch: int) -> ArtifactPlan:
    """The marker that retires ``<tag>.draft`` once ``tag`` itself is published: the supersession
    marker of ``<tag>.draft`` (tagged ``<tag>.draft.superseded``) naming ``tag`` as its successor.
    It has no ``subject``: a draft promoted unchanged has the final's very manifest, and a referrer
    of that manifest would read, to a tool that lists referrers, as the final being superseded.
    The draft keeps its bytes (the receipts of the hardware run are bound to them); verify of it
    names the final (docs/publishing.md, "A final retires its draft").

    Raises:
        InputError: ``tag`` is not a publishable tag, or ``epoch`` is negative.
    """
    if not _is_publishable(tag) or len(tag) > MAX_TAG_LENGTH or epoch < 0:
        raise InputError(
            problems=[Problem(file="publish", field="tag", message=f"{tag!r} has no draft to retire")]
        )
    return _marker_plan(tag=tag + DRAFT_SUFFIX, by=tag, epoch=epoch, subject=None)


def _marker_plan(*, tag: str, by: str, epoch: int, subject: tuple[str, int] | None) -> ArtifactPlan:
    """The marker artifact (``<tag>.superseded``) for checked ``tag`` and ``by``."""
    config = blob_of_bytes(EMPTY_JSON, SUPERSESSION_TYPE)
    layer = blob_of_bytes(EMPTY_JSON, EMPTY_MEDIA_TYPE)
    subject_desc = (
        None
        if subject is None
        else {"mediaType": MANIFEST_MEDIA_TYPE, "digest": subject[0], "size": subject[1]}
    )
    annotations = {
        ANN_SUPERSEDED_TAG: tag,
        ANN_SUPERSEDED_BY: by,
        ANN_CREATED: reproducible.iso8601(epoch),
    }
    manifest = render_manifest(
        artifact_type=SUPERSESSION_TYPE,
        config=config,
        layers=[layer],
        annotations=annotations,
        subject=subject_desc,
    )
    return ArtifactPlan(
        tag=tag + SUPERSEDED_SUFFIX,
        artifact_type=SUPERSESSION_TYPE,
        config=config,
        layers=(layer,),
        manifest=manifest,
        digest="sha256:" + hashing.sha256_bytes(manifest),
    )


def read_supersession(data: bytes, *, tag: str, source: str) -> str:
    """The successor that the supersession record ``data`` (read at ``source``, the marker of
    ``tag``: ``<tag>.superseded``) names. The one reader of a record, for every store kind and
    every use: publish refuses to reuse ``tag``, pull and verify report the successor.

    The record must be a manifest of :data:`SUPERSESSION_TYPE` (``artifactType`` or
    ``config.mediaType``) of at most :data:`MAX_MARKER_BYTES`, whose annotations name ``tag`` as
    the superseded tag and a publishable tag as its successor (:func:`successor_named`). A record
    that is there but is not such a marker is never read as "not superseded" nor as an unnamed
    successor: it raises.

    Raises:
        IntegrityError: one problem naming ``source`` and the field that is off (exit 5).
    """
    if len(data) > MAX_MARKER_BYTES:
        raise IntegrityError(
            problems=[
                Problem(
                    file=source, message=f"larger than {MAX_MARKER_BYTES} bytes: not a supersession marker"
                )
            ]
        )
    doc = strictjson.parse_object(data, source=source, error=IntegrityError)
    config = doc.get("config")
    kind = doc.get("artifactType") or (config.get("mediaType") if isinstance(config, dict) else None)
    if kind != SUPERSESSION_TYPE:
        raise IntegrityError(
            problems=[
                Problem(file=source, field="artifactType", message=f"{kind!r} is not {SUPERSESSION_TYPE}")
            ]
        )
    return successor_named(doc.get("annotations"), tag=tag, source=source)


def successor_named(annotations: object, *, tag: str, source: str) -> str:
    """The successor the annotations of ``tag``'s supersession marker name (a manifest's, or a
    referrer descriptor's, which copies them): :data:`ANN_SUPERSEDED_TAG` must be ``tag`` and
    :data:`ANN_SUPERSEDED_BY` a publishable tag other than ``tag``.

    Raises:
        IntegrityError: one problem naming ``source`` and the annotation (exit 5).
    """
    ann = annotations if isinstance(annotations, dict) else {}
    named, by = ann.get(ANN_SUPERSEDED_TAG), ann.get(ANN_SUPERSEDED_BY)
    if named != tag:
        field_name, message = ANN_SUPERSEDED_TAG, f"{named!r} is not {tag!r}"
    elif not _is_publishable(by) or by == tag:
        field_name, message = ANN_SUPERSEDED_BY, f"{by!r} is not a publishable successor tag"
    else:
        return str(by)
    raise IntegrityError(problems=[Problem(file=source, field=f"annotations.{field_name}", message=message)])


@dataclass(frozen=True, kw_only=True)
class ParsedManifest:
    """A set manifest read back: its layers (bare titles) and annotations."""

    layers: tuple[Blob, ...]
    annotations: Mapping[str, str]
    artifact_type: str


def parse_manifest(data: bytes, *, ref: str, expect_type: str = ARTIFACT_TYPE) -> ParsedManifest:
    """Parse and check manifest bytes read from a store: media type, artifact type, and every layer
    (``sha256`` digest, non-negative size, bare unique title — C41: no ``/``, ``..``, absolute).

    Raises:
        IntegrityError: anything is off (all problems at once).
    """
    doc = strictjson.parse_object(data, source=ref, error=IntegrityError)
    problems: list[Problem] = []
    if doc.get("mediaType") != MANIFEST_MEDIA_TYPE:
        problems.append(
            Problem(file=ref, field="mediaType", message=f"{doc.get('mediaType')!r} is not an OCI manifest")
        )
    raw_config = doc.get("config")
    config: dict[str, Any] = raw_config if isinstance(raw_config, dict) else {}
    artifact_type = doc.get("artifactType") or config.get("mediaType")
    if artifact_type != expect_type:
        problems.append(
            Problem(file=ref, field="artifactType", message=f"{artifact_type!r} is not {expect_type}")
        )
    raw_layers = doc.get("layers")
    if not isinstance(raw_layers, list):
        problems.append(Problem(file=ref, field="layers", message="missing"))
        raw_layers = []
    layers: list[Blob] = []
    titles: set[str] = set()
    for i, layer in enumerate(raw_layers):
        blob = _layer(layer, f"layers[{i}]", ref, titles, problems)
        if blob is not None:
            layers.append(blob)
    annotations = doc.get("annotations") or {}
    if not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values()):
        problems.append(Problem(file=ref, field="annotations", message="not a string map"))
        annotations = {}
    if problems:
        raise IntegrityError(problems=problems)
    return ParsedManifest(layers=tuple(layers), annotations=annotations, artifact_type=str(artifact_type))


def _layer(layer: object, fld: str, ref: str, titles: set[str], problems: list[Problem]) -> Blob | None:
    """The layer descriptor ``layer`` as a blob, or None with its problems appended to ``problems``
    (digest, size, media type, a bare title not in ``titles``; the title is then added to it)."""
    if not isinstance(layer, dict):
        problems.append(Problem(file=ref, field=fld, message="not an object"))
        return None
    digest, size, media_type = layer.get("digest"), layer.get("size"), layer.get("mediaType")
    raw_ann = layer.get("annotations")
    title = (raw_ann if isinstance(raw_ann, dict) else {}).get(ANN_TITLE)
    found: list[Problem] = []
    if not is_digest(digest):
        found.append(Problem(file=ref, field=f"{fld}.digest", message=f"{digest!r} is not a sha256 digest"))
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        found.append(Problem(file=ref, field=f"{fld}.size", message=f"{size!r} is not a size"))
    if not isinstance(media_type, str):
        found.append(Problem(file=ref, field=f"{fld}.mediaType", message="missing"))
    if not isinstance(title, str) or not is_bare_name(title):
        message = f"{title!r} is not a bare file name (C41); refused"
        found.append(Problem(file=ref, field=f"{fld}.title", message=message))
    elif title in titles:
        found.append(Problem(file=ref, field=f"{fld}.title", message=f"{title} appears twice"))
    problems.extend(found)
    if found:
        return None
    assert isinstance(title, str) and isinstance(digest, str) and isinstance(size, int)
    titles.add(title)
    return Blob(media_type=str(media_type), digest=digest, size=size, title=title)


# --- target parsing ---------------------------------------------------------------------------


def _split_ref(rest: str) -> tuple[str, str | None, str | None]:
    """Split ``X@sha256:…`` or ``X:TAG`` (tag after the last ``:`` with no ``/``) from ``X``."""
    if "@" in rest:
        base, _, digest = rest.rpartition("@")
        return base, None, digest
    base, sep, tail = rest.rpartition(":")
    if sep and base and "/" not in tail:
        return base, tail, None
    return rest, None, None


def parse_target(url: str) -> Target:
    """Parse ``oci://HOST[:PORT]/REPO[:TAG|@sha256:HEX]``, ``dir://PATH[:TAG|@sha256:HEX]`` or
    ``files://PATH[:TAG]``.

    A ``dir://`` or ``files://`` path whose last component contains ``:`` is read as ``PATH:TAG``.

    Raises:
        InputError: malformed URL, one line naming what is wrong (exit 4).
    """

    def bad(message: str) -> InputError:
        return InputError(problems=[Problem(file=url, field="target", message=message)])

    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in {"oci", "dir", "files"}:
        raise bad(_TARGET_USAGE)
    base, tag, digest = _split_ref(rest)
    if tag is not None and not is_valid_tag(tag):
        raise bad(f"{tag!r} is not a valid OCI tag")
    if digest is not None and not is_digest(digest):
        raise bad(f"{digest!r} is not sha256:<64 lowercase hex>")
    if scheme == "oci":
        return _oci_target(base, tag, digest, bad)
    if not base:
        raise bad(f"missing PATH ({_TARGET_USAGE})")
    if scheme == "dir":
        return DirTarget(path=Path(base), tag=tag, digest=digest)
    if digest is not None:
        raise bad("a files:// store is addressed by tag, not by digest")
    return FilesTarget(path=Path(base), tag=tag)


def refuse_store_in_set(target: Target, set_dir: Path, url: str) -> None:
    """Refuse a local store (``dir://``, ``files://``) that is the set's own directory or lies
    inside it: writing there would add entries to the sealed set, which then fails verify.

    Raises:
        PublishError: the store path is ``set_dir`` or inside it (exit 7).
    """
    from ninfer_release.atomic import within

    path = getattr(target, "path", None)
    if isinstance(target, (DirTarget, FilesTarget)) and path is not None and within(path, set_dir):
        message = f"is inside the set {set_dir}; a store must lie outside the set it publishes"
        raise PublishError(problems=[Problem(file=url, field="target", message=message)])


_TARGET_USAGE = "expected oci://HOST[:PORT]/REPO[:TAG], dir://PATH[:TAG] or files://PATH"


def _oci_target(
    base: str, tag: str | None, digest: str | None, bad: Callable[[str], InputError]
) -> OciTarget:
    """``HOST[:PORT]/REPO`` of an ``oci://`` target, checked; ``bad`` makes the one-line error."""
    host, slash, repo = base.partition("/")
    if not slash or not host or not repo:
        raise bad(f"missing HOST or REPO ({_TARGET_USAGE})")
    if _HOST_RE.fullmatch(host) is None:
        raise bad(f"{host!r} is not HOST[:PORT]")
    port = host.rsplit(":", 1)[1] if ":" in host and not host.endswith("]") else None
    if port is not None and not (port.isdigit() and 0 < int(port) <= 65535):
        raise bad(f"port {port!r} is not in 1-65535")
    if _REPO_RE.fullmatch(repo) is None:
        raise bad(f"{repo!r} is not a repository name (lowercase, [a-z0-9._-/])")
    return OciTarget(host=host, repository=repo, tag=tag, digest=digest)


def open_publisher(
    target: str | Target,
    *,
    options: RegistryOptions | None = None,
    progress: Progress = SILENT,
) -> Publisher:
    """The publisher for a target URL or parsed target (its tag/digest is not used here).

    Registries are reached through :mod:`ninfer_release.registry` with ``options`` (default:
    from the environment): HTTPS first; plain HTTP only for loopback hosts whose port does not
    speak TLS, or hosts named with ``--insecure-registry``. ``progress`` gets a step per blob
    moved (file name, size) and its bytes.

    Raises:
        InputError: malformed URL.
    """
    parsed = parse_target(target) if isinstance(target, str) else target
    if isinstance(parsed, DirTarget):
        from ninfer_release.releases._dir_store import DirStore  # adapters load on demand

        return DirStore(parsed.path)
    if isinstance(parsed, FilesTarget):
        from ninfer_release.releases._files_store import FilesStore

        return FilesStore(parsed.path)
    from ninfer_release.releases._oci_publisher import OciPublisher

    return OciPublisher(host=parsed.host, repository=parsed.repository, options=options, progress=progress)


# --- the rules, over a minimal store ----------------------------------------------------------


def plan_signatures(
    *, tag: str, bundles: Mapping[str, bytes], epoch: int, subject: tuple[str, int]
) -> ArtifactPlan:
    """The signatures artifact of the set at ``tag``: one layer per Sigstore bundle (titled with
    its name, media type :data:`SIGNATURES_TYPE`), ``artifactType`` :data:`SIGNATURES_TYPE`, the
    empty config descriptor (``application/vnd.oci.empty.v1+json``, image-spec 1.1), ``subject`` =
    (digest, size) of the set's manifest (so an OCI registry lists it as a referrer), tagged
    ``<tag>.sigstore``.

    Raises:
        InputError: ``tag`` is not a tag, or a bundle name is not a bare file name.
    """
    problems: list[Problem] = []
    if not is_valid_tag(tag + SIGNATURES_SUFFIX):
        problems.append(Problem(file="sign", field="tag", message=f"{tag!r} cannot carry signatures"))
    bad = [n for n in bundles if not is_bare_name(n)]
    problems += [Problem(file="sign", field=n, message="not a bare file name") for n in bad]
    if problems:
        raise InputError(problems=problems)
    # image-spec 1.1 ("Guidelines for artifact usage"): an artifact with no config of its own has
    # the empty descriptor as config and says what it is in artifactType.
    config = blob_of_bytes(EMPTY_JSON, EMPTY_MEDIA_TYPE)
    layers = [
        Blob(
            media_type=SIGNATURES_TYPE,
            digest="sha256:" + hashing.sha256_bytes(data),
            size=len(data),
            title=name,
            data=data,
        )
        for name, data in sorted(bundles.items())
    ]
    manifest = render_manifest(
        artifact_type=SIGNATURES_TYPE,
        config=config,
        layers=layers,
        annotations={ANN_CREATED: reproducible.iso8601(epoch)},
        subject={"mediaType": MANIFEST_MEDIA_TYPE, "digest": subject[0], "size": subject[1]},
    )
    return ArtifactPlan(
        tag=tag + SIGNATURES_SUFFIX,
        artifact_type=SIGNATURES_TYPE,
        config=config,
        layers=tuple(layers),
        manifest=manifest,
        digest="sha256:" + hashing.sha256_bytes(manifest),
    )


class StorePublisher(abc.ABC):
    """Immutability, drafts, supersession, ``latest`` and verified pulls, in one place.

    Adapters implement the byte-moving primitives (``_lock``, ``_read_manifest``, ``_put_blob``,
    ``_put_manifest``, ``_open_blob``, ``url``); the same :class:`ArtifactPlan` is written by
    both, so the manifest digest is the same on a registry and in a directory store.
    """

    # -- primitives ----------------------------------------------------------------------------

    @abc.abstractmethod
    def url(self, ref: str | None = None) -> str:
        """The target URL of ``ref`` in this store."""

    @abc.abstractmethod
    def _lock(self) -> contextlib.AbstractContextManager[None]:
        """Exclusive section for check-then-write (exact for the directory store)."""

    @abc.abstractmethod
    def _read_manifest(self, ref: str) -> bytes | None:
        """Manifest bytes at tag or digest ``ref``, or ``None`` when absent."""

    @abc.abstractmethod
    def _put_blob(self, blob: Blob) -> None:
        """Store ``blob`` unless present, verifying its digest and size."""

    def _put_blobs(self, blobs: Sequence[Blob]) -> None:
        """Store every blob of ``blobs`` (:meth:`_put_blob`), in that order; the registry adapter
        sends the small ones beside the first (``OciPublisher._put_blobs``)."""
        for blob in blobs:
            self._put_blob(blob)

    @abc.abstractmethod
    def _put_manifest(self, plan: ArtifactPlan, tags: Sequence[str]) -> None:
        """Store the manifest and point each of ``tags`` at it."""

    @abc.abstractmethod
    def _open_blob(self, digest: str) -> contextlib.AbstractContextManager[Iterator[bytes]]:
        """The blob's bytes, in chunks."""

    def _open_layer(self, layer: Blob) -> contextlib.AbstractContextManager[Iterator[bytes]]:
        """A layer's bytes, in chunks; adapters that report progress use its title and size."""
        return self._open_blob(layer.digest)

    # -- Publisher -----------------------------------------------------------------------------

    def resolve(self, ref: str) -> str | None:
        """The manifest digest at tag or digest ``ref``, or ``None`` when absent.

        Raises:
            InputError: ``ref`` is neither a tag nor a ``sha256:`` digest.
            PublishError: the store cannot be read.
        """
        _check_ref(ref, self.url())
        data = self._read_manifest(ref)
        return None if data is None else "sha256:" + hashing.sha256_bytes(data)

    def _superseded_by(self, tag: str, manifest: bytes | None) -> str | None:
        """The successor named by ``tag``'s supersession marker (``<tag>.superseded``), else
        ``None``. ``manifest``: the bytes at ``tag`` as the caller just read them (``None``: none
        there); an adapter that also looks for markers among their referrers uses them instead
        of reading the tag again."""
        marker_tag = tag + SUPERSEDED_SUFFIX
        data = self._read_manifest(marker_tag) if is_valid_tag(marker_tag) else None
        if data is None:
            return None
        return read_supersession(data, tag=tag, source=self.url(marker_tag))

    def publish(self, request: PublishRequest) -> PublishResult:
        """Publish the set as one artifact under ``request.tag`` (DESIGN.md §8).

        Identical bytes already at the tag → ``already_published``. The tag pointing to other
        bytes, or a supersession marker for it, → refused. A draft goes to ``<tag>.draft``
        (replaceable); a final retires its draft (:meth:`_retire_draft`). ``latest`` moves only
        with ``move_latest`` on a non-prerelease. ``request.gate`` is passed before the manifest is
        put and before any result is returned; the refusals above need no gate.

        Raises:
            InputError, IntegrityError: see :func:`plan_publish`.
            PublishError: refused (immutability, supersession, concurrent publish) or the store
                failed (exit 7).
            Whatever ``request.gate`` raises.
        """
        plan = plan_publish(request)
        tag = request.tag
        gate = request.gate or _open_gate
        with self._lock():
            _check_ref(tag, self.url())
            at_tag = self._read_manifest(tag)  # read once: the supersession check uses it too
            by = self._superseded_by(tag, at_tag)
            if by is not None:
                raise PublishError(
                    f"{self.url(tag)}: tag {tag} was superseded by {by}; a superseded tag is never "
                    "reused — publish under a new tag"
                )
            current = None if at_tag is None else "sha256:" + hashing.sha256_bytes(at_tag)
            if current == plan.digest:
                gate()  # the same claimed digests are no proof that these bytes are the verified ones
                moved = (not request.draft) and self._move_latest(plan, request)
                return PublishResult(
                    status="already_published",
                    ref=self.url(tag),
                    manifest_digest=plan.digest,
                    latest_moved=moved,
                    retired_draft=None if request.draft else self._retire_draft(tag, request.epoch),
                )
            if current is not None and request.draft:
                # The draft tag is free, but a draft of a tag already released would be installed
                # as a candidate for bytes that can never go out: say so instead of "immutable".
                raise PublishError(
                    f"{self.url(tag)}: tag {tag} already points to {current}, so a draft of it "
                    f"(this set, {plan.digest}) could never be released; tags are immutable — "
                    "build and publish under a new tag"
                )
            if current is not None:
                raise PublishError(
                    f"{self.url(tag)}: tag {tag} already points to {current}; this set is {plan.digest}; "
                    "tags are immutable — publish under a new tag"
                )
            target_tag = tag + DRAFT_SUFFIX if request.draft else tag
            if request.draft and self.resolve(target_tag) == plan.digest:
                gate()
                return PublishResult(
                    status="already_published", ref=self.url(target_tag), manifest_digest=plan.digest
                )
            self._put_blobs(plan.upload_order)
            # Blobs are content-addressed and invisible without a manifest: the manifest is what
            # publishes, so it waits for the gate (a refused set leaves only unreferenced blobs).
            gate()
            self._put_manifest(plan, [target_tag])
            # A registry has no compare-and-swap on tags: check again after the put and report a
            # concurrent writer instead of claiming a tag someone else holds (docs/publishing.md).
            # A draft tag is replaceable by design: a later writer of it is no conflict.
            if not request.draft:
                self._check_won(tag, plan)
            moved = (not request.draft) and self._move_latest(plan, request)
            retired = None if request.draft else self._retire_draft(tag, request.epoch)
        url = self.url(target_tag)
        return PublishResult(
            status="published",
            ref=url,
            manifest_digest=plan.digest,
            latest_moved=moved,
            retired_draft=retired,
        )

    def _check_won(self, tag: str, plan: ArtifactPlan) -> None:
        """Raise :class:`PublishError` unless ``tag`` now holds ``plan`` (a rival publish won)."""
        after = self.resolve(tag)
        if after != plan.digest:
            raise PublishError(
                f"{self.url(tag)}: conflict: tag {tag} now points to {after}, not to this set "
                f"{plan.digest}; another publish of the same tag won"
            )

    def _retire_draft(self, tag: str, epoch: int) -> str | None:
        """With the final ``tag`` published, mark ``<tag>.draft`` (when there) superseded by it
        (:func:`plan_draft_retirement`); the ref of its marker, else ``None``. Called with the
        lock held. A draft already retired is left as it is (a marker is never replaced)."""
        draft = tag + DRAFT_SUFFIX
        data = self._read_manifest(draft)
        if data is None:
            return None
        plan = plan_draft_retirement(tag=tag, epoch=epoch)
        if self._superseded_by(draft, data) is None:
            for blob in plan.blobs:
                self._put_blob(blob)
            self._put_manifest(plan, [plan.tag])
        return self.url(plan.tag)

    def _move_latest(self, plan: ArtifactPlan, request: PublishRequest) -> bool:
        if not request.move_latest:
            return False
        if self.resolve(LATEST_TAG) == plan.digest:
            return False
        self._put_manifest(plan, [LATEST_TAG])
        return True

    def supersede(self, tag: str, *, by: str, epoch: int) -> PublishResult:
        """Record that ``tag`` was superseded by ``by``: a marker tagged ``<tag>.superseded``.

        ``tag`` itself stays as published; publishing to it again is refused from now on. The
        marker's ``subject`` is the superseded manifest when the tag exists here.

        Raises:
            InputError: bad tags.
            PublishError: ``tag`` is already recorded as superseded by something else, or the
                store failed.
        """
        with self._lock():
            data = self._read_manifest(tag) if is_valid_tag(tag) else None
            subject = None if data is None else ("sha256:" + hashing.sha256_bytes(data), len(data))
            plan = plan_supersession(tag=tag, by=by, epoch=epoch, subject=subject)
            existing = self._superseded_by(tag, data)
            if existing is not None:
                if self.resolve(plan.tag) == plan.digest:
                    return PublishResult(
                        status="already_published", ref=self.url(plan.tag), manifest_digest=plan.digest
                    )
                raise PublishError(
                    f"{self.url(tag)}: tag {tag} is already recorded as superseded by {existing}"
                )
            for blob in plan.blobs:
                self._put_blob(blob)
            self._put_manifest(plan, [plan.tag])
        return PublishResult(status="published", ref=self.url(plan.tag), manifest_digest=plan.digest)

    def attach_signatures(self, tag: str, bundles: Mapping[str, bytes], *, epoch: int) -> PublishResult:
        """Store ``bundles`` as the signatures artifact of the set at ``tag`` (:func:`plan_signatures`).

        The same signatures again → ``already_published``; other signatures already attached are
        never replaced (refused, like a tag) — except a draft's, which is replaceable itself.

        Raises:
            PublishError: nothing is published at ``tag``, other signatures are attached, or the
                store failed (exit 7).
        """
        with self._lock():
            data = self._read_manifest(tag)
            if data is None:
                raise PublishError(f"{self.url(tag)}: nothing published at {tag} to attach signatures to")
            subject = ("sha256:" + hashing.sha256_bytes(data), len(data))
            plan = plan_signatures(tag=tag, bundles=bundles, epoch=epoch, subject=subject)
            current = self.resolve(plan.tag)
            if current == plan.digest:
                return PublishResult(
                    status="already_published", ref=self.url(plan.tag), manifest_digest=plan.digest
                )
            # A draft is replaceable, and so are its signatures; a tag's signatures are not.
            if current is not None and not tag.endswith(DRAFT_SUFFIX):
                raise PublishError(
                    f"{self.url(plan.tag)}: other signatures are already attached ({current}); "
                    "signatures are never replaced"
                )
            for blob in plan.blobs:
                self._put_blob(blob)
            self._put_manifest(plan, [plan.tag])
        return PublishResult(status="published", ref=self.url(plan.tag), manifest_digest=plan.digest)

    def pull_signatures(self, tag: str, *, subject: str | None) -> dict[str, bytes] | None:
        """The bundles attached to the set at ``tag`` (name → bytes), ``None`` when none are.

        ``subject`` (the set's manifest digest, when known) must be the artifact's ``subject``:
        signatures of other bytes are not these bytes' signatures.

        Raises:
            IntegrityError: the signatures artifact is malformed, names another subject, or a blob
                does not match its digest (exit 5).
        """
        url = self.url(tag + SIGNATURES_SUFFIX)
        data = self._read_manifest(tag + SIGNATURES_SUFFIX) if is_valid_tag(tag + SIGNATURES_SUFFIX) else None
        if data is None:
            return None
        parsed = parse_manifest(data, ref=url, expect_type=SIGNATURES_TYPE)
        subject_desc = strictjson.parse_object(data, source=url, error=IntegrityError).get("subject")
        named = subject_desc.get("digest") if isinstance(subject_desc, dict) else None
        if subject is not None and named != subject:
            raise IntegrityError(
                problems=[Problem(file=url, field="subject", message=f"signs {named}, not the set {subject}")]
            )
        out: dict[str, bytes] = {}
        for layer in parsed.layers:
            if layer.size > 16 << 20:
                raise IntegrityError(
                    problems=[Problem(file=url, field=str(layer.title), message="too large")]
                )
            with self._open_blob(layer.digest) as chunks:
                blob = b"".join(chunks)
            if "sha256:" + hashing.sha256_bytes(blob) != layer.digest or len(blob) != layer.size:
                raise IntegrityError(
                    problems=[
                        Problem(file=url, field=str(layer.title), message="blob does not match its digest")
                    ]
                )
            out[str(layer.title)] = blob
        return out

    def pull(self, ref: str, dest: Path) -> PulledSet:
        """Download every layer of the set at ``ref`` into the existing directory ``dest``.

        Each blob is streamed to ``dest/<title>`` while its SHA-256 and size are checked against
        the descriptor; titles must be bare names (C41), so no path-traversal option exists. An
        existing file in ``dest`` is never overwritten.

        Raises:
            InputError: ``ref`` not found, store unreadable, ``dest`` missing or a file exists.
            IntegrityError: manifest or blob bytes do not match their digests; unsafe titles.
        """
        _check_ref(ref, self.url())
        try:
            return self._pull(ref, dest)
        except PublishError as exc:  # the store could not be read: an input problem here
            raise InputError(
                problems=exc.problems or [Problem(file=self.url(ref), message=str(exc))]
            ) from exc

    def _pull(self, ref: str, dest: Path) -> PulledSet:
        url = self.url(ref)
        data = self._read_manifest(ref)
        if data is None:
            raise InputError(problems=[Problem(file=url, message="not found")])
        digest = "sha256:" + hashing.sha256_bytes(data)
        if ref.startswith("sha256:") and digest != ref:
            raise IntegrityError(problems=[Problem(file=url, message=f"manifest bytes hash to {digest}")])
        parsed = parse_manifest(data, ref=url)
        if not dest.is_dir():
            raise InputError(
                problems=[Problem(file=str(dest), message="pull destination is not a directory")]
            )
        existing = [layer.title for layer in parsed.layers if (dest / str(layer.title)).exists()]
        if existing:
            raise InputError(
                problems=[
                    Problem(file=str(dest / str(t)), message="already exists; refusing to overwrite")
                    for t in existing
                ]
            )
        files: list[PulledFile] = []
        for layer in parsed.layers:
            files.append(self._pull_layer(layer, dest, url))
        by = None if ref.startswith("sha256:") else self._superseded_by(ref, data)
        return PulledSet(
            ref=url,
            manifest_digest=digest,
            dest=dest,
            files=tuple(files),
            annotations=dict(parsed.annotations),
            superseded_by=by,
        )

    def _pull_layer(self, layer: Blob, dest: Path, url: str) -> PulledFile:
        title = str(layer.title)
        final = dest / title
        partial = dest / f".{title}.partial"
        h = hashlib.sha256()
        size = 0
        try:
            with self._open_layer(layer) as chunks, partial.open("xb") as out:
                for chunk in chunks:
                    size += len(chunk)
                    if size > layer.size:
                        break
                    h.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            got = "sha256:" + h.hexdigest()
            if size != layer.size or got != layer.digest:
                seen = f"more than {layer.size} bytes" if size > layer.size else f"{size} bytes / {got}"
                message = f"blob is {seen}; descriptor says {layer.size} bytes / {layer.digest}"
                raise IntegrityError(problems=[Problem(file=url, field=title, message=message)])
            partial.replace(final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()
            raise
        return PulledFile(name=title, size=size, sha256=h.hexdigest(), media_type=layer.media_type)


def _open_gate() -> None:
    """The gate of a request that has none: nothing to wait for."""


def _check_ref(ref: str, where: str) -> None:
    if not (is_valid_tag(ref) or is_digest(ref)):
        raise InputError(
            problems=[Problem(file=where, field="ref", message=f"{ref!r} is not a tag or sha256 digest")]
        )
