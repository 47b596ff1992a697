"""Consumer and CI flows over sealed sets: verify a set wherever it is, publish one safely.

* :func:`verify_location` — verify a set in a directory, or pulled from ``oci://`` / ``dir://`` /
  ``files://`` or fetched from ``https://…/<tag>/`` into a private temp dir (never the user's
  directory), then removed; optionally against the ``SHA256SUMS`` digest a release manifest
  binds for the set's component tag, and with ``--key`` its signatures stored beside it (one
  step per kind of location: :func:`_verify_local`, :func:`_verify_store`, :func:`_verify_url`).
* :func:`publish_set` — refuse what must not be published (a set that does not verify; an
  ``unqualified`` set unless it is a draft; a set whose component manifest disagrees with the
  release definition; a target tag other than the set's component tag), then publish it as one
  immutable OCI artifact (DESIGN.md §8), handing the store the digests the verification
  established (:class:`~._publish.FileDigest`) so the set is hashed once. To a registry the
  verification runs on a worker thread while the blobs upload, behind a gate before the manifest
  (:class:`_Verification`; docs/publishing.md, "Verification overlaps the upload").
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ninfer_release import strictjson
from ninfer_release._signals import join_through_signals
from ninfer_release.errors import InputError, IntegrityError, Problem, PublishError
from ninfer_release.progress import SILENT, Progress
from ninfer_release.releases._contract import SUMS_NAME, AssetNames, package_stem, stem_from_names
from ninfer_release.releases._records import ComponentManifest
from ninfer_release.releases._verify import MAX_RECORD_ENTRY, VerifyReport, verify_set

if TYPE_CHECKING:
    from ninfer_release.manifests import Lane, Release
    from ninfer_release.registry import RegistryOptions
    from ninfer_release.releases._http_fetch import FetchProgress, HttpPolicy
    from ninfer_release.releases._publish import FileDigest, PublishResult, Target
    from ninfer_release.releases._signing import VerifyingKey

# The publisher, the HTTP client and the release definition load only in the flows that use them:
# verifying a directory must not pay for them (DESIGN §11, docs/benchmarks.md).

REMOTE_SCHEMES = ("oci://", "dir://", "files://")
URL_SCHEMES = ("https://", "http://")


@dataclass(frozen=True, kw_only=True)
class LocatedReport:
    """A verification report plus where the set came from (a directory or a published reference)."""

    location: str
    manifest_digest: str | None
    report: VerifyReport
    #: Read from a ``<tag>.draft`` reference (a replaceable draft publication).
    draft_reference: bool = False
    #: The successor the store's supersession record of the tag names (``<tag>.superseded``; a
    #: retired draft's is its final), ``None`` when it has none or the set came from a directory.
    superseded_by: str | None = None
    #: With ``verify --key``: ``"signed by <key id, 16 hex>"`` (every signed file's bundle is there
    #: and verifies), ``"partly signed"`` (some bundles are missing), ``"unsigned"`` (none is
    #: there); ``None`` when no key was given. A bundle that fails is a failure either way.
    signatures: str | None = None

    @property
    def draft(self) -> bool:
        """Whether this is a draft: unqualified bytes (publishable only as ``<tag>.draft``), or
        read from a ``<tag>.draft`` reference."""
        return self.draft_reference or self.report.qualification != "qualified"

    def summary(self) -> str:
        """The one-line verdict: a draft or unqualified set never reads as a plain ``OK``.

        ``OK (qualified: 21 pass, 0 fail, 3 not applicable; <stem>, N checks)``,
        ``OK (unqualified draft, not for release; <stem>, N checks)`` or ``FAILED (...)``; a
        superseded tag's adds ``; superseded by <tag>`` after the qualification; with ``--key``,
        ``; signed by <key id>``, ``; partly signed`` or ``; unsigned`` follows (an unsigned set
        is still ``OK`` unless ``--require-signature``: the line says so instead of implying it).
        """
        r = self.report
        verdict = "OK" if r.ok else f"FAILED ({len(r.failures)} failures)"
        state = qualification_phrase(r, draft_reference=self.draft_reference)
        if self.superseded_by is not None:
            state += f"; superseded by {self.superseded_by}"
        if self.signatures is not None:
            state += f"; {self.signatures}"
        return f"{self.location}: {verdict} ({state}; {r.stem}, {len(r.checked)} checks)"

    def as_dict(self) -> dict[str, Any]:
        doc = self.report.as_dict()
        doc["location"] = self.location
        doc["artifact_digest"] = self.manifest_digest
        doc["draft"] = self.draft
        doc["superseded_by"] = self.superseded_by
        doc["signatures"] = self.signatures
        return doc


def qualification_phrase(report: VerifyReport, *, draft_reference: bool = False) -> str:
    """What a verdict says of qualification (every ``OK`` line carries it, so an unqualified set
    never reads as a plain ``OK``): ``qualified: 2 pass, 0 fail, 1 not applicable`` (``qualified by
    scratch equivalence only: …`` when no receipt is a run of the public bytes; ``qualified draft
    (…)`` from a ``<tag>.draft`` reference) or ``unqualified draft, not for release``."""
    if report.qualification != "qualified":
        return f"{report.qualification or 'qualification unknown'} draft, not for release"
    counts = report.gate_counts
    # No run installed these very bytes: the verdict says so (scratch equivalence is a distinct binding).
    scratch_only = not report.bindings.get("public") and bool(report.bindings.get("scratch_equivalence"))
    state = ("qualified by scratch equivalence only: " if scratch_only else "qualified: ") + (
        f"{counts.get('pass', 0)} pass, {counts.get('fail', 0)} fail, "
        f"{counts.get('not_applicable', 0)} not applicable"
        if counts and any(counts.values())
        else "no gates reported"
    )
    return f"qualified draft ({state})" if draft_reference else state


def bound_sums_sha256(release_manifest: Mapping[str, Any], stem: str) -> str | None:
    """The ``SHA256SUMS`` digest ``release_manifest`` binds for the set named ``stem``, if any.

    The lane is found by its component tag (``stem`` is ``ninfer-<component-tag>-windows-x64``,
    DESIGN.md §4), never by the directory or reference the set was read from.
    """
    lanes = release_manifest.get("lanes")
    if not isinstance(lanes, Mapping):
        return None
    for entry in lanes.values():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("component_tag"), str):
            continue
        sums = entry.get("sha256sums")
        if package_stem(entry["component_tag"]) == stem and isinstance(sums, Mapping):
            digest = sums.get("sha256")
            return digest if isinstance(digest, str) else None
    return None


def _verify_dir(
    directory: Path,
    *,
    expected_sums_sha256: str | None,
    release_manifest: Mapping[str, Any] | None,
    progress: Progress,
    known_sha256: Mapping[str, str] | None = None,
) -> VerifyReport:
    unbound: str | None = None
    if release_manifest is not None:
        try:
            stem = stem_from_names(sorted(p.name for p in directory.iterdir()))
        except OSError:
            stem = None
        bound = bound_sums_sha256(release_manifest, stem) if stem is not None else None
        if bound is not None:
            if expected_sums_sha256 is not None and bound != expected_sums_sha256.lower():
                unbound = f"the release manifest binds {bound}, not the {expected_sums_sha256} given"
            expected_sums_sha256 = bound
        elif stem is not None:
            unbound = f"the release manifest binds no set named {stem}"
    report = verify_set(
        directory, expected_sums_sha256=expected_sums_sha256, progress=progress, known_sha256=known_sha256
    )
    if unbound is not None:
        report = replace(report, failures=(*report.failures, f"{SUMS_NAME}: {unbound}"))
    return report


def _looks_like_a_set(directory: Path) -> bool:
    try:
        return any(p.name == SUMS_NAME or p.name.endswith(".zip") for p in directory.iterdir())
    except OSError:
        return True  # let verify_set report why it cannot list it


def verify_location(
    location: str,
    *,
    expected_sums_sha256: str | None = None,
    release_manifest: Mapping[str, Any] | None = None,
    progress: Progress = SILENT,
    http: HttpPolicy | None = None,
    fetch_progress: FetchProgress | None = None,
    require_qualified: bool = False,
    registry: RegistryOptions | None = None,
    transfer: Progress = SILENT,
    signatures: SignatureCheck | None = None,
    refuse_superseded: bool = False,
) -> LocatedReport:
    """Verify the set at ``location``: a directory, ``oci://HOST/REPO:TAG``, ``dir://PATH:TAG``,
    ``files://DIR:TAG`` or ``https://HOST/…/<tag>/`` (fetched by URL with ``http``, see
    :func:`~._fetch_flow.fetch_set`, into a private temp dir).

    ``release_manifest`` (the parsed ``release-manifest.json``): the set's ``SHA256SUMS`` must be
    the digest it binds for the lane whose component tag names the set; a release manifest that
    binds no such lane is a failure (DESIGN.md §4: one digest pins everything).
    ``require_qualified``: an ``unqualified`` set is a failure too (the CLI exits 5).
    ``registry`` configures the registry client (default: the environment); ``transfer`` gets
    a step per file pulled (name, size) and its bytes. ``signatures`` (``verify --key``): the set's
    signatures, stored beside it (a directory's ``<dir>.sigstore/``, a store's ``<tag>.sigstore``,
    a URL's ``…/<tag>.sigstore/``, or ``signatures.directory``), must verify with the key and
    sign this set's exact bytes (:mod:`._signing`); a missing one is a failure only when
    ``signatures.require``. A tag that its store records as superseded (``<tag>.superseded``, read
    by :func:`~._publish.read_supersession`; ``…/<tag>.superseded`` beside a URL's set) has
    :attr:`LocatedReport.superseded_by`; with ``refuse_superseded`` it is a failure (exit 5).

    Raises:
        InputError: the reference is malformed or names nothing (exit 4).
        IntegrityError: a pulled blob does not match its digest, or a supersession record is
            there but is no marker of the tag (exit 5).
    """
    expected = _Expected(sums_sha256=expected_sums_sha256, release_manifest=release_manifest)
    if location.startswith(URL_SCHEMES):
        from ninfer_release.releases._http_fetch import HttpPolicy

        located = _verify_url(location, expected, http or HttpPolicy(), fetch_progress, signatures)
    elif location.startswith(REMOTE_SCHEMES):
        located = _verify_store(location, expected, progress, (registry, transfer), signatures)
    else:
        located = _verify_local(location, expected, progress, signatures)
    return _not_superseded(_required(located, require_qualified), refuse_superseded)


def _not_superseded(located: LocatedReport, refuse: bool) -> LocatedReport:
    """With ``refuse`` (``--refuse-superseded``), a superseded tag fails with one line naming its
    successor (issue 33: a consumer can refuse what its publisher withdrew)."""
    if not refuse or located.superseded_by is None:
        return located
    failure = f"superseded by {located.superseded_by}; --refuse-superseded refuses a superseded tag"
    report = located.report
    return replace(located, report=replace(report, failures=(*report.failures, failure)))


@dataclass(frozen=True, kw_only=True)
class _Expected:
    """What a verified set must also be bound to: a ``SHA256SUMS`` digest given on the command
    line, and the release manifest's binding for its component tag (see :func:`_verify_dir`)."""

    sums_sha256: str | None
    release_manifest: Mapping[str, Any] | None

    def verify(
        self, directory: Path, progress: Progress = SILENT, known_sha256: Mapping[str, str] | None = None
    ) -> VerifyReport:
        return _verify_dir(
            directory,
            expected_sums_sha256=self.sums_sha256,
            release_manifest=self.release_manifest,
            progress=progress,
            known_sha256=known_sha256,
        )

    def verify_fetched(self, directory: Path, known: Mapping[str, str]) -> VerifyReport:
        """:meth:`verify` of a fetched set, with the digests its download established."""
        return self.verify(directory, known_sha256=known)


def _verify_local(
    location: str,
    expected: _Expected,
    progress: Progress,
    signatures: SignatureCheck | None,
) -> LocatedReport:
    """Verify the set directory ``location`` (and its signatures, in ``<dir>.sigstore/``).

    Raises:
        InputError: not a directory, or a directory that is no asset set (exit 4).
    """
    directory = Path(location)
    if not directory.is_dir():
        # Nothing to verify is a missing input (exit 4), not a set that failed (exit 5).
        what = "not a directory" if os.path.lexists(directory) else "no such directory"
        raise InputError(
            problems=[Problem(file=location, message=f"{what} (a set directory, oci:// or dir:// reference)")]
        )
    if not _looks_like_a_set(directory):
        # A directory with neither SHA256SUMS nor a package is the wrong input (exit 4); a set
        # missing one of them is a set that fails (exit 5).
        message = f"not an asset set (no {SUMS_NAME}, no *.zip package)"
        if (directory / "oci-layout").is_file():
            # A dir:// store is an OCI layout holding sets by tag: name the reference to use.
            message += f"; it is a dir:// store: verify dir://{location}:TAG"
        raise InputError(problems=[Problem(file=location, message=message)])
    located = LocatedReport(
        location=location, manifest_digest=None, report=expected.verify(directory, progress)
    )
    if signatures is None:
        return located
    from ninfer_release.releases._signing import read_bundles, signatures_dir_for

    folder = signatures.directory or signatures_dir_for(directory)
    return _signed(located, signatures, directory, lambda names: read_bundles(folder, names))


def _verify_store(
    location: str,
    expected: _Expected,
    progress: Progress,
    client: tuple[RegistryOptions | None, Progress],
    signatures: SignatureCheck | None,
) -> LocatedReport:
    """Pull the set at the store reference ``location`` into a private temp dir and verify it
    there (and its signatures, ``<tag>.sigstore`` beside it); ``client`` is the registry options
    and the transfer progress.

    Raises:
        InputError: a malformed reference, or one that names no tag or digest (exit 4).
    """
    from ninfer_release.releases._publish import DRAFT_SUFFIX, FilesTarget, open_publisher, parse_target

    target = parse_target(location)
    ref = target.reference
    if ref is None:
        raise InputError(
            problems=[Problem(file=location, field="target", message="name a tag or a digest to verify")]
        )
    options, transfer = client
    publisher = open_publisher(target, options=options, progress=transfer)
    with tempfile.TemporaryDirectory(prefix="ninfer-verify-") as tmp:
        dest = Path(tmp) / "set"
        dest.mkdir()
        pulled = publisher.pull(ref, dest)
        located = _named_by(
            LocatedReport(
                location=location,
                manifest_digest=pulled.manifest_digest,
                report=replace(expected.verify(dest, progress), directory=location),
                draft_reference=target.tag is not None and target.tag.endswith(DRAFT_SUFFIX),
                superseded_by=pulled.superseded_by,
            ),
            target.tag,
            # a files:// store keeps no manifest (its pull states no annotations)
            annotations=None if isinstance(target, FilesTarget) else pulled.annotations,
            sums_sha256=next((f.sha256 for f in pulled.files if f.name == SUMS_NAME), None),
        )
        if signatures is None:
            return located
        tag = target.tag

        def stored(names: AssetNames) -> Mapping[str, bytes]:
            del names
            if tag is None:  # by digest: signatures are found by their tag, <tag>.sigstore
                return {}
            return publisher.pull_signatures(tag, subject=pulled.manifest_digest) or {}

        return _signed(located, signatures, dest, stored)


def _named_by(
    located: LocatedReport,
    tag: str | None,
    *,
    annotations: Mapping[str, str] | None = None,
    sums_sha256: str | None = None,
) -> LocatedReport:
    """``located`` failing unless the set is the one its reference names: a reference by ``tag``
    (``<tag>`` or ``<tag>.draft``) holds the set whose component tag is ``tag`` (its stem
    ``ninfer-<tag>-windows-x64``), and a store's manifest ``annotations`` state that component tag
    and the ``SHA256SUMS`` digest pulled (``sums_sha256``). Without this, a store or URL whose
    3090 tag held the 4090 set verified OK, even with ``--release-manifest``, whose binding is
    looked up by the set's own stem (second hostile review, 2026-12-04). By digest: ``tag`` None."""
    from ninfer_release.releases._publish import ANN_COMPONENT_TAG, ANN_SHA256SUMS, DRAFT_SUFFIX

    report = located.report
    if report.stem is None:
        return located  # the set failed to name its files; verify already says so
    failures: list[str] = []
    component = report.stem.removeprefix("ninfer-").removesuffix("-windows-x64")
    if tag is not None and package_stem(tag.removesuffix(DRAFT_SUFFIX)) != report.stem:
        failures.append(f"{located.location}: the reference names tag {tag!r}, but the set is {component!r}")
    if annotations is not None:
        stated = annotations.get(ANN_COMPONENT_TAG)
        if stated != component:
            failures.append(f"{located.location}: manifest component tag {stated!r} is not {component!r}")
        sums = annotations.get(ANN_SHA256SUMS)
        if sums_sha256 is None or sums != "sha256:" + sums_sha256:
            failures.append(f"{located.location}: manifest SHA256SUMS {sums!r} is not the one pulled")
    checked = () if failures else (f"{located.location}: names the set {report.stem}",)
    return replace(
        located,
        report=replace(report, checked=(*report.checked, *checked), failures=(*report.failures, *failures)),
    )


@dataclass(frozen=True, kw_only=True)
class SignatureCheck:
    """What ``verify --key`` asks: the public key, whether a missing signature fails, and (for a
    directory) where its signatures are when not in the sibling ``<dir>.sigstore/``."""

    key: VerifyingKey
    require: bool = False
    directory: Path | None = None


def _signed(
    located: LocatedReport,
    check: SignatureCheck,
    set_dir: Path,
    bundles_of: Callable[[AssetNames], Mapping[str, bytes]],
) -> LocatedReport:
    """``located`` with the signature checks and failures added (one line each)."""
    from ninfer_release.releases._signing import bundle_name, check_signatures, signed_files

    report = located.report
    if report.stem is None:
        return located  # the set itself failed to name its files; verify already says so
    names = AssetNames(stem=report.stem)
    bundles = bundles_of(names)
    failures, checks = check_signatures(set_dir, names, bundles, check.key, require=check.require)
    present = [name for name, _ in signed_files(names) if bundle_name(name) in bundles]
    if not present:
        state = "unsigned"
    elif len(present) < len(signed_files(names)):
        state = "partly signed"
    else:
        state = f"signed by {check.key.key_id[:16]}"
    return replace(
        located,
        signatures=state,
        report=replace(report, checked=(*report.checked, *checks), failures=(*report.failures, *failures)),
    )


def _required(located: LocatedReport, require_qualified: bool) -> LocatedReport:
    """With ``require_qualified``, an unqualified set fails (qualification is part of the promise)."""
    report = located.report
    if not require_qualified or report.qualification == "qualified":
        return located
    where = f"{report.stem}.qualification.json" if report.stem else located.location
    failure = (
        f"{where}: status {report.qualification or 'unknown'}; --require-qualified needs a qualified set"
    )
    return replace(located, report=replace(report, failures=(*report.failures, failure)))


def _verify_url(
    location: str,
    expected: _Expected,
    http: HttpPolicy,
    progress: FetchProgress | None,
    signatures: SignatureCheck | None,
) -> LocatedReport:
    """Fetch the set at ``https://…/<tag>/`` into a private temp dir and verify it there; with
    ``signatures``, also its bundles from ``https://…/<tag>.sigstore/`` (where a ``files://``
    store keeps them, :meth:`~._files_store.FilesStore.attach_signatures`), or from
    ``signatures.directory`` when given."""
    from ninfer_release.releases._fetch_flow import fetch_set
    from ninfer_release.releases._publish import DRAFT_SUFFIX

    with tempfile.TemporaryDirectory(prefix="ninfer-verify-") as tmp:
        set_dir = Path(tmp) / "set"
        fetched = fetch_set(location, set_dir, policy=http, progress=progress, check=expected.verify_fetched)
        sums = next((f.sha256 for f in fetched.files if f.name == SUMS_NAME), None)
        tag = location.rstrip("/").rsplit("/", 1)[-1]
        located = _named_by(
            LocatedReport(
                location=location,
                manifest_digest=None if sums is None else "sha256:" + sums,
                report=replace(fetched.report, directory=location),
                draft_reference=location.rstrip("/").endswith(DRAFT_SUFFIX),
                superseded_by=_url_superseded_by(fetched.url, tag, http),
            ),
            tag,
        )
        # A set that failed is not kept (fetch removes what it added): its verdict stands alone.
        if signatures is None or not located.report.ok:
            return located
        return _signed(located, signatures, set_dir, _url_bundles(fetched.url, http, signatures))


def _url_superseded_by(base: str, tag: str, http: HttpPolicy) -> str | None:
    """The successor named by the supersession record beside a set fetched from ``base``
    (``https://…/<tag>/``): ``https://…/<tag>.superseded``, where a ``files://`` store served as is
    keeps it (:meth:`~._files_store.FilesStore.supersede`). ``None`` when the server answers 404 or
    410; a record that is there but is no marker of ``tag`` raises (never read as "not superseded").

    Raises:
        InputError: the server refused otherwise (exit 4).
        IntegrityError: the record is larger than a marker or is none (exit 5).
    """
    from ninfer_release.releases._http_fetch import HttpFetcher
    from ninfer_release.releases._publish import MAX_MARKER_BYTES, SUPERSEDED_SUFFIX, read_supersession

    url = base.rstrip("/") + SUPERSEDED_SUFFIX
    with HttpFetcher(http) as client:
        data = client.read_if_present(url, cap=MAX_MARKER_BYTES, name=tag + SUPERSEDED_SUFFIX)
    return None if data is None else read_supersession(data, tag=tag, source=url)


def _url_bundles(
    base: str, http: HttpPolicy, signatures: SignatureCheck
) -> Callable[[AssetNames], Mapping[str, bytes]]:
    """Where a set fetched from ``base`` (``https://…/<tag>/``) finds its bundles: the directory
    ``signatures.directory`` when given, else ``…/<tag>.sigstore/<file>.sigstore.json`` by URL
    (an absent one — HTTP 404 or 410 — is left out; size-capped like a stored bundle)."""
    from ninfer_release.releases._signing import read_bundles

    folder = signatures.directory
    if folder is not None:
        return lambda names: read_bundles(folder, names)

    def fetched(names: AssetNames) -> Mapping[str, bytes]:
        from ninfer_release.releases._http_fetch import HttpFetcher, join_url
        from ninfer_release.releases._signing import (
            MAX_BUNDLE_BYTES,
            SIGNATURES_SUFFIX,
            bundle_name,
            signed_files,
        )

        sig_base = base.rstrip("/") + SIGNATURES_SUFFIX + "/"
        out: dict[str, bytes] = {}
        with HttpFetcher(http) as client:
            for name, _ in signed_files(names):
                label = bundle_name(name)
                data = client.read_if_present(join_url(sig_base, label), cap=MAX_BUNDLE_BYTES, name=label)
                if data is not None:
                    out[label] = data
        return out

    return fetched


def _component_manifest(set_dir: Path, names: AssetNames) -> ComponentManifest:
    """The set's component manifest as the typed record sealing wrote (and verify read).

    Raises:
        IntegrityError: not that record (exit 5).
    """
    data = strictjson.read_regular(set_dir / names.manifest, limit=MAX_RECORD_ENTRY, error=IntegrityError)
    return ComponentManifest.parse(data, source=names.manifest)


def publish_set(
    set_dir: Path,
    target: str,
    *,
    draft: bool = False,
    move_latest: bool = False,
    release: Release | None = None,
    registry: RegistryOptions | None = None,
    transfer: Progress = SILENT,
) -> PublishResult:
    """Verify the set in ``set_dir`` and publish it to ``target`` under its component tag.

    ``registry`` configures the registry client (default: the environment); ``transfer`` gets
    a step per file uploaded (name, size) and its bytes. The digests the verification established are
    passed down (:class:`~._publish.FileDigest`), so the set is hashed once; each store's upload
    refuses bytes other than those digests (a file changed after the verification is caught
    there, and nothing is published).

    To a registry (``oci://``) the verification runs on a worker thread while the blobs upload
    (:class:`_Verification`): the set's names, component manifest and ``SHA256SUMS`` digests are
    read first without hashing its entries (:func:`_claimed`), the refusals below are decided on
    them, and the manifest — the only thing that makes a set visible — is put, and any result
    returned (``already_published`` too), only once the verification passed and established
    exactly those digests (:attr:`~._publish.PublishRequest.gate`). A set that does not verify
    leaves no tag and no manifest, only the blobs already uploaded, unreferenced (docs/publishing.md).
    A set whose claims cannot be read, and ``dir://`` / ``files://`` targets, are verified first.

    Raises:
        PublishError: the set does not verify, is ``unqualified`` without ``draft``, disagrees with
            ``release``, the target names another tag, or the store refuses (immutability) (exit 7).
            The verification's failures come first, whatever else went wrong meanwhile.
        InputError: the target is malformed (exit 4).
        IntegrityError: a file changed after the verification (exit 5; on ``oci://`` the registry
            refuses the blob, ``registry says the bytes are not sha256:…``).
    """
    from ninfer_release.releases._publish import OciTarget, parse_target, refuse_store_in_set

    parsed = parse_target(target)  # a malformed target is exit 4 before any work
    refuse_store_in_set(parsed, set_dir, target)
    publication = _Publication(
        set_dir=set_dir,
        target=target,
        parsed=parsed,
        draft=draft,
        move_latest=move_latest,
        release=release,
        registry=registry,
        transfer=transfer,
    )
    claimed = _claimed(set_dir) if isinstance(parsed, OciTarget) else None
    if claimed is None:
        return publication.run(_verified(set_dir), gate=None)
    # The registry client loads now, before the worker's own imports start: two threads importing
    # at once take turns on the GIL, and the uploads would start later.
    import ninfer_release.releases._oci_publisher  # noqa: F401

    with _Verification(set_dir, claimed) as verification:
        try:
            return publication.run(claimed, gate=verification.confirm)
        except Exception as exc:
            # Verifying first would have reported the set's own failures: so does this.
            failure = verification.failure()
            if failure is None or failure is exc:
                raise
            raise failure from exc


@dataclass(frozen=True, kw_only=True)
class _Publication:
    """What :func:`publish_set` was asked: the set directory, the target (as given and parsed), the
    flags, the release definition to agree with, and the registry client's options and progress."""

    set_dir: Path
    target: str
    parsed: Target
    draft: bool
    move_latest: bool
    release: Release | None
    registry: RegistryOptions | None
    transfer: Progress

    def run(self, found: _SetDigests, *, gate: Callable[[], None] | None) -> PublishResult:
        """Refuse what must not be published, then publish ``found`` (``gate``: see
        :attr:`~._publish.PublishRequest.gate`).

        Raises:
            PublishError: see :func:`publish_set` (exit 7).
        """
        from ninfer_release.releases._publish import ANN_REVISION, FilesTarget, PublishRequest, open_publisher

        manifest = found.manifest
        tag = manifest.component_tag
        problems = [
            *_qualification_problems(found.names, manifest, self.draft),
            *_release_problems(self.release, found.names, manifest, self.parsed, self.target),
            *_target_problems(self.parsed, tag, self.target),
        ]
        if problems:
            raise PublishError(problems=problems)
        if isinstance(self.parsed, FilesTarget):
            # A files:// tree is what a release host serves: refuse what it would reject, first.
            # (The release definition's package loads only here: on oci:// the main thread's
            # time before the first upload byte is the publish's start-up, issue 11.)
            from ninfer_release.manifests import DEFAULT_ASSET_BUDGET
            from ninfer_release.releases._budget import refuse_over_budget

            budget = self.release.asset_budget if self.release is not None else DEFAULT_ASSET_BUDGET
            refuse_over_budget(self.set_dir, found.names.all, budget, target=self.target)
        request = PublishRequest(
            set_dir=self.set_dir,
            tag=tag,
            files=list(found.names.all),
            annotations={ANN_REVISION: manifest.source_commit},
            draft=self.draft,
            epoch=manifest.source_date_epoch,
            move_latest=self.move_latest,
            verified=found.digests,
            gate=gate,
        )
        return open_publisher(self.parsed, options=self.registry, progress=self.transfer).publish(request)


@dataclass(frozen=True, kw_only=True)
class _SetDigests:
    """A set's names, component manifest, each file's digest and size as its ``SHA256SUMS`` lists
    them, and ``SHA256SUMS``'s own digest (``sums_sha256``, 64 hex): established by a verification
    (:func:`_verified`), or only claimed until one confirms them (:func:`_claimed`)."""

    names: AssetNames
    manifest: ComponentManifest
    digests: Mapping[str, FileDigest]
    sums_sha256: str


def _refusal(set_dir: Path, failures: Sequence[str]) -> PublishError:
    """A set that does not verify: every failure, one line each (exit 7)."""
    where = str(set_dir)
    return PublishError(problems=[Problem(file=where, message=f"does not verify: {f}") for f in failures])


def _verified(set_dir: Path) -> _SetDigests:
    """Verify the set in ``set_dir``; its names, component manifest and verified digests.

    The digests are the ones the verification established: it checked that every entry hashes
    to what ``SHA256SUMS`` lists, and hashed ``SHA256SUMS`` itself (``sums_sha256``).

    Raises:
        PublishError: the set does not verify (every failure, one line each; exit 7).
    """
    report = verify_set(set_dir)
    if not report.ok:
        raise _refusal(set_dir, report.failures)
    stem = stem_from_names(sorted(p.name for p in set_dir.iterdir()))
    assert stem is not None and report.sums_sha256 is not None  # verify_set found and hashed them
    names = AssetNames(stem=stem)
    return _SetDigests(
        names=names,
        manifest=_component_manifest(set_dir, names),
        digests=_verified_digests(set_dir, names, report.sums_sha256),
        sums_sha256=report.sums_sha256,
    )


def _verified_digests(set_dir: Path, names: AssetNames, sums_sha256: str) -> dict[str, FileDigest]:
    """Name -> digest and size of the 11 files of a set that verified: each entry's SHA-256 as
    ``SHA256SUMS`` lists it (verify checked it is the file's), ``SHA256SUMS``'s own; sizes read now."""
    from ninfer_release.checksums import parse_sha256sums, sums_bound
    from ninfer_release.releases._publish import FileDigest

    sums = strictjson.read_regular(
        set_dir / SUMS_NAME, limit=sums_bound(len(names.entries)), error=IntegrityError
    )
    listed = {**parse_sha256sums(sums, source=SUMS_NAME).as_dict(), SUMS_NAME: sums_sha256}
    return {
        n: FileDigest(sha256=listed[n], size=(set_dir / n).stat().st_size) for n in names.all if n in listed
    }


def _claimed(set_dir: Path) -> _SetDigests | None:
    """What the set in ``set_dir`` claims, read without hashing its entries: exactly the 11 regular
    files, a canonical ``SHA256SUMS`` listing the 10 entries (hashed: it is small), each file's
    size, and the component manifest — whose bytes must hash to what ``SHA256SUMS`` lists for it,
    so the record the refusals are decided on is the one the verification checks.

    ``None`` when any of it cannot be read or does not hold (a malformed set): it is then verified
    before anything else, so its failures are reported as verify words them.
    """
    from ninfer_release.checksums import parse_sha256sums, sums_bound
    from ninfer_release.errors import NinferError
    from ninfer_release.hashing import sha256_bytes
    from ninfer_release.releases._publish import FileDigest

    try:
        listing = sorted(p.name for p in set_dir.iterdir())
        stem = stem_from_names(listing)
        names = AssetNames(stem=stem) if stem is not None else None
        if names is None or sorted(names.all) != listing:
            return None
        paths = {n: set_dir / n for n in names.all}
        if any(p.is_symlink() or not p.is_file() for p in paths.values()):
            return None
        sums = strictjson.read_regular(paths[SUMS_NAME], limit=sums_bound(len(names.entries)))
        parsed = parse_sha256sums(sums, source=SUMS_NAME)
        listed = parsed.as_dict()
        if parsed.errors or parsed.warnings or set(listed) != set(names.entries):
            return None
        data = strictjson.read_regular(paths[names.manifest], limit=MAX_RECORD_ENTRY)
        if sha256_bytes(data) != listed[names.manifest]:
            return None
        manifest = ComponentManifest.parse(data, source=names.manifest)
        hexes = {**listed, SUMS_NAME: sha256_bytes(sums)}
        digests = {n: FileDigest(sha256=hexes[n], size=p.stat().st_size) for n, p in paths.items()}
    except (OSError, ValueError, NinferError):
        return None
    return _SetDigests(names=names, manifest=manifest, digests=digests, sums_sha256=hexes[SUMS_NAME])


#: Niceness of the publish verification's threads (Linux: per thread, inherited by the threads the
#: verification starts): on a machine whose cores are all busy the upload and the registry go first,
#: so the verification takes the CPU they leave, and publish ends about when the upload does.
_VERIFY_NICENESS = 10


def _yield_cpu_to_the_upload() -> None:
    """Lower this thread's CPU priority by :data:`_VERIFY_NICENESS` (Linux ``setpriority`` on the
    thread id; elsewhere, or when refused, nothing changes: only the scheduling order differs)."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + _VERIFY_NICENESS)
    except (AttributeError, OSError):
        pass


def _restore_cpu_priority() -> None:
    """Give the threads that yielded the CPU (:func:`_yield_cpu_to_the_upload`) the calling
    thread's priority back: called when the publish waits for nothing but the verification (every
    blob is up, or nothing is uploaded), so there is no upload left to yield to — on a busy
    machine a +10 verification would otherwise finish last behind other programs' work.

    Linux only; lowering a niceness needs privilege (root, or ``RLIMIT_NICE``): refused, or
    elsewhere, nothing changes. Threads at this thread's priority or better are left alone.
    """
    try:
        base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        tids = [int(t.name) for t in Path("/proc/self/task").iterdir()]
    except (AttributeError, OSError, ValueError):
        return
    for tid in tids:
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) > base:
                os.setpriority(os.PRIO_PROCESS, tid, base)
        except OSError:
            pass  # ended meanwhile, or not allowed


class _Verification:
    """:func:`~._verify.verify_set` of one set on a worker thread, started on entering and joined
    on leaving (an error or Ctrl-C in the main thread never leaves it running; DESIGN §11: hashlib
    and zlib release the GIL, so it overlaps the uploads).

    :meth:`confirm` is the gate: it waits for the verification and refuses unless it passed and
    established exactly the digests the main thread claimed.
    """

    def __init__(self, set_dir: Path, claimed: _SetDigests) -> None:
        self._set_dir = set_dir
        self._claimed = claimed
        self._report: VerifyReport | None = None
        self._error: BaseException | None = None
        self._verdict: list[BaseException | None] = []  # decided once, after the join
        self._thread = threading.Thread(target=self._run, name="publish-verify")

    def _run(self) -> None:
        _yield_cpu_to_the_upload()
        try:
            self._report = verify_set(self._set_dir)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread by confirm()
            self._error = exc

    def __enter__(self) -> _Verification:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._join()

    def _join(self) -> None:
        """Wait for the worker; a Ctrl-C or SIGTERM meanwhile is raised once it has ended (it ends
        when the verification does: there is nothing to cancel it midway)."""
        join_through_signals(self._thread)

    def failure(self) -> BaseException | None:
        """After waiting for the verification: why the claimed set must not be published (the set
        does not verify, the verification raised, or it hashed another ``SHA256SUMS``), else
        ``None``; the same exception object every time. Waiting, the verification's threads get
        their priority back (:func:`_restore_cpu_priority`)."""
        if self._thread.is_alive():
            _restore_cpu_priority()
        self._join()
        if not self._verdict:
            self._verdict.append(self._judge())
        return self._verdict[0]

    def _judge(self) -> BaseException | None:
        claimed = self._claimed
        if self._error is not None:
            return self._error
        report = self._report
        assert report is not None  # the worker ended without an error
        if not report.ok:
            return _refusal(self._set_dir, report.failures)
        if report.stem != claimed.names.stem or report.sums_sha256 != claimed.sums_sha256:
            message = (
                f"does not verify: {SUMS_NAME}: changed while publishing (read as {claimed.sums_sha256}, "
                f"verified as {report.sums_sha256})"
            )
            return PublishError(problems=[Problem(file=str(self._set_dir), message=message)])
        return None

    def confirm(self) -> None:
        """The gate: return only when the verification passed and established the claimed digests.

        Raises:
            PublishError: the set does not verify, or its ``SHA256SUMS`` changed meanwhile (exit 7).
            Whatever the verification raised (an unreadable entry: InputError, exit 4).
        """
        failure = self.failure()
        if failure is not None:
            raise failure


def _qualification_problems(names: AssetNames, manifest: ComponentManifest, draft: bool) -> list[Problem]:
    """An unqualified set is published only as a draft."""
    if manifest.qualification == "qualified" or draft:
        return []
    message = "the set is unqualified; publish it with --draft, or qualify it first"
    return [Problem(file=names.manifest, field="qualification", message=message)]


def _release_problems(
    release: Release | None, names: AssetNames, manifest: ComponentManifest, parsed: Target, target: str
) -> list[Problem]:
    """Where the set disagrees with the release definition: its lane, that lane's store, and
    the component tag, source commit, profile and release the definition names."""
    if release is None:
        return []
    lane = release.lanes.get(manifest.lane)
    if lane is None:
        message = f"lane {manifest.lane!r} is not in {release.path}"
        return [Problem(file=names.manifest, field="lane", message=message)]
    problems = _lane_store_problems(release, lane, parsed, target)
    for key, want in (
        ("component_tag", lane.component_tag),
        ("source_commit", lane.source_commit),
        ("profile_id", lane.profile_id),
        ("release", release.version),
    ):
        have = getattr(manifest, key)
        if have != want:
            message = f"{have!r} disagrees with the release definition ({want!r})"
            problems.append(Problem(file=names.manifest, field=key, message=message))
    return problems


def _target_problems(parsed: Target, tag: str, target: str) -> list[Problem]:
    """A set is published under its own tag, to a repository or tag, never to a digest."""
    problems = []
    if parsed.tag is not None and parsed.tag != tag:
        message = f"the set's component tag is {tag!r}; a set is published under its own tag"
        problems.append(Problem(file=target, field="tag", message=message))
    if parsed.digest is not None:
        problems.append(
            Problem(file=target, field="target", message="publish to a repository or tag, not a digest")
        )
    return problems


def store_path(target: Target) -> str:
    """The path a store is known by: a registry target's repository, or the real path of a
    directory store — ``..`` and symbolic links resolved (:func:`os.path.realpath`) and lower-cased
    (repositories are lower case; on a case-insensitive file system ``OMP-NINFER/RTX3090`` *is*
    ``omp-ninfer/rtx3090``), so a lane's store is its lane's however it is spelt
    (``…/rtx4090/../rtx3090``, a link to it)."""
    from ninfer_release.releases._publish import OciTarget

    if isinstance(target, OciTarget):
        return target.repository
    return Path(os.path.realpath(target.path)).as_posix().lower()


def _lane_store_problems(release: Release, lane: Lane, parsed: Target, target: str) -> list[Problem]:
    """Why ``target`` is not a store for ``lane``'s sets: it is another lane's publication
    repository, or a registry repository that is not ``lane``'s own (issue 8: tags are immutable,
    so a set published to the wrong lane's repository cannot be taken back)."""
    from ninfer_release.releases._publish import OciTarget

    owner = release.store_owner(store_path(parsed))
    mine = lane.publication_repository
    if owner is not None and owner.id != lane.id:
        message = (
            f"is lane {owner.id}'s publication repository ({owner.publication_repository}); "
            f"this set is lane {lane.id}'s" + (f" ({mine})" if mine else "")
        )
        return [Problem(file=target, field="target", message=message)]
    if owner is None and isinstance(parsed, OciTarget) and mine is not None:
        message = (
            f"repository {parsed.repository} is not lane {lane.id}'s publication repository "
            f"({mine}, optionally under a namespace: HOST/NAMESPACE/{mine})"
        )
        return [Problem(file=target, field="target", message=message)]
    return []


@dataclass(frozen=True, kw_only=True)
class MarkerPlacement:
    """Where one superseded tag's marker goes: ``target`` (a store URL), or ``None`` when no store
    given is its lane's (skipped)."""

    tag: str
    successor: str
    lane: str
    target: str | None


def plan_supersession(release: Release, targets: Sequence[str]) -> tuple[MarkerPlacement, ...]:
    """Place each superseded tag's marker (``superseded:`` in the definition) only in its own lane's store.

    The lane of a superseded tag is the lane its successor is the component tag of. A target whose
    repository (or directory) path is a lane's ``publication_repository`` (:meth:`Release.store_owner`)
    gets that lane's markers only; a directory or files store that is no lane's is a store the
    lanes share (tags are unique across lanes) and gets every marker; a registry repository that is
    no lane's is refused. Markers whose lane has no store among ``targets`` are planned as skipped.

    Raises:
        InputError: a malformed target (exit 4).
        PublishError: a registry target that is no lane's publication repository (exit 7).
    """
    from ninfer_release.releases._publish import OciTarget, parse_target

    parsed = [(t, parse_target(t)) for t in targets]
    problems: list[Problem] = []
    stores: list[tuple[str, str | None]] = []  # (target, owning lane id, or None: shared)
    for text, target in parsed:
        owner = release.store_owner(store_path(target))
        if owner is None and isinstance(target, OciTarget):
            known = ", ".join(
                f"{lane.id}: {lane.publication_repository}"
                for lane in release.lanes.values()
                if lane.publication_repository
            )
            problems.append(
                Problem(
                    file=text,
                    field="target",
                    message=f"repository {target.repository} is no lane's publication repository "
                    f"({known or 'the definition names none'}); each lane's markers go to its own",
                )
            )
        stores.append((text, None if owner is None else owner.id))
    if problems:
        raise PublishError(problems=problems)
    out: list[MarkerPlacement] = []
    for s in release.superseded:
        lane = release.lane_of_tag(s.successor)
        assert lane is not None  # the loader refuses a successor that is no lane's tag
        mine: list[str | None] = [store for store, owner in stores if owner in (None, lane.id)]
        for store in mine or [None]:
            out.append(MarkerPlacement(tag=s.tag, successor=s.successor, lane=lane.id, target=store))
    return tuple(out)


def supersede_tags(
    release: Release, targets: Sequence[str], *, registry: RegistryOptions | None = None
) -> list[tuple[MarkerPlacement, PublishResult | None]]:
    """Record each superseded tag of ``release`` in its own lane's store among ``targets``
    (:func:`plan_supersession`); ``None`` for a marker skipped because no store given is its lane's.

    Each old tag stays as published and gets a ``<tag>.superseded`` marker naming its successor;
    from then on publishing to it is refused (DESIGN.md §8). Idempotent: a marker that already
    says the same answers ``already_published``.

    Raises:
        InputError: malformed target (exit 4).
        PublishError: a registry target that is no lane's repository, or a tag already recorded as
            superseded by another successor (exit 7).
    """
    from ninfer_release.releases._publish import open_publisher

    plan = plan_supersession(release, targets)
    publishers = {
        t: open_publisher(t, options=registry) for t in dict.fromkeys(p.target for p in plan if p.target)
    }
    return [
        (
            p,
            None
            if p.target is None
            else publishers[p.target].supersede(p.tag, by=p.successor, epoch=release.source_date_epoch),
        )
        for p in plan
    ]
