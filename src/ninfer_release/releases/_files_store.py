"""The files store (``files://DIR``): a set laid out as ``DIR/<tag>/<name>``, as URLs promise.

Every route block, manifest and SBOM names an asset ``{publication_base_url}/{tag}/{name}``
(``Release.asset_url``). A files store is exactly that tree, so a static web server (nginx), an
S3 bucket or a release host serves it unchanged: ``DIR/<tag>/`` holds the 11 files of one set and
nothing else. Drafts go to ``DIR/<tag>.draft/`` (replaceable); ``<tag>`` is immutable.

Rules (the same as the other stores, :class:`~._publish.StorePublisher`):

* same bytes at ``<tag>`` → ``already_published``; other bytes (any name, size or digest
  differing) → :class:`PublishError` (exit 7) naming the tag and the first file that differs;
* a tag appears complete or not at all: the set is copied (verified against the plan's digests
  and sizes) into ``DIR/.ninfer-tmp/<tag>/``, fsynced, and the directory renamed to ``DIR/<tag>``
  in one ``rename(2)``;
* concurrent publishers are serialised by the flock of :mod:`._store_io` (same as ``dir://``).

A draft is replaced by renaming the old draft into the staging directory and the new one into
place: while the lock is held, a reader can briefly see no draft (never half of one).
``latest`` is an OCI store feature: asking for it is refused. Supersession markers are files
beside the tag directories, ``DIR/<tag>.superseded`` (the marker manifest's exact bytes, as an OCI
store tags them), so a web server serving ``DIR`` serves them at ``{base}/{tag}.superseded``;
publishing a final writes ``DIR/<tag>.draft.superseded`` when ``DIR/<tag>.draft/`` is there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ninfer_release import hashing, strictjson
from ninfer_release.atomic import fsync_path, write_bytes
from ninfer_release.checksums import parse_sha256sums, sums_bound
from ninfer_release.errors import InputError, IntegrityError, Problem, PublishError
from ninfer_release.releases._contract import ENTRY_SUFFIXES
from ninfer_release.releases._publish import (
    DRAFT_SUFFIX,
    MANIFEST_MEDIA_TYPE,
    MAX_MARKER_BYTES,
    SIGNATURES_SUFFIX,
    SIGNATURES_TYPE,
    SUMS_NAME,
    SUPERSEDED_SUFFIX,
    ArtifactPlan,
    Blob,
    PublishRequest,
    PublishResult,
    PulledFile,
    PulledSet,
    blob_of_bytes,
    default_media_type,
    is_bare_name,
    is_valid_tag,
    plan_draft_retirement,
    plan_publish,
    plan_supersession,
    read_supersession,
)
from ninfer_release.releases._store_io import LOCK_NAME, TMP_NAME, locked_store, write_verified

#: Written into a files:// root by its first publish: a non-empty root without it is not ours
#: and is never written into (the rule ``dir://`` applies with ``oci-layout``; issue 36).
STORE_MARKER = ".ninfer-files-store"
STORE_MARKER_BYTES = b'{"written_by":"ninfer-release","kind":"files-store"}\n'


class FilesStore:
    """Publisher over a ``<tag>/<name>`` tree at ``root`` (created on first publish)."""

    def __init__(self, root: Path) -> None:
        self.root = root.absolute()

    def url(self, ref: str | None = None) -> str:
        """``files://ROOT`` or, for a tag, ``files://ROOT/<tag>`` (the tag's directory)."""
        return f"files://{self.root}" if ref is None else f"files://{self.root}/{ref}"

    def _listing(self, tag: str) -> dict[str, tuple[str, int]] | None:
        """``name -> (sha256 hex, size)`` of the files under ``ROOT/<tag>``, or ``None`` if absent."""
        directory = self.root / tag
        if not directory.is_dir():
            return None
        out: dict[str, tuple[str, int]] = {}
        for p in sorted(directory.iterdir()):
            if p.is_symlink() or not p.is_file():
                out[p.name] = ("not a regular file", -1)
                continue
            out[p.name] = (hashing.sha256_file(p), p.stat().st_size)
        return out

    def resolve(self, ref: str) -> str | None:
        """``sha256:`` of ``ROOT/<ref>/SHA256SUMS`` (the digest that pins the set), or ``None``."""
        if not is_valid_tag(ref):
            raise InputError(
                problems=[Problem(file=self.url(), field="ref", message=f"{ref!r} is not a tag")]
            )
        sums = self.root / ref / SUMS_NAME
        return "sha256:" + hashing.sha256_file(sums) if sums.is_file() else None

    def publish(self, request: PublishRequest) -> PublishResult:
        """Publish the set under ``ROOT/<tag>`` (or ``ROOT/<tag>.draft``); see the module rules.

        Raises:
            InputError, IntegrityError: see :func:`~._publish.plan_publish`.
            PublishError: ``<tag>`` holds other bytes, ``latest`` was asked for, or the store
                cannot be written (exit 7).
            Whatever ``request.gate`` raises (passed first: this store overlaps nothing with it).
        """
        if request.gate is not None:
            request.gate()
        plan = plan_publish(request)
        if request.move_latest:
            raise PublishError(f"{self.url()}: latest: a files:// store keeps no 'latest' tag")
        want = {b.title: (b.digest.removeprefix("sha256:"), b.size) for b in plan.layers}
        sums_digest = next(b.digest for b in plan.layers if b.title == SUMS_NAME)
        tag = request.tag
        target_tag = tag + DRAFT_SUFFIX if request.draft else tag
        self._refuse_foreign_directory()
        try:
            with locked_store(self.root, prepare=self._mark) as staging:
                self._refuse_superseded(tag)
                for existing in (tag, target_tag):
                    self._refuse_non_directory(existing)
                    current = self._listing(existing)
                    if current == want:
                        retired = None if request.draft else self._retire_draft(tag, request.epoch, staging)
                        return PublishResult(
                            status="already_published",
                            ref=self.url(existing),
                            manifest_digest=sums_digest,
                            retired_draft=retired,
                        )
                    if current is not None and existing == tag:
                        raise PublishError(
                            f"{self.url(tag)}: tag {tag} already holds other bytes "
                            f"({_first_difference(current, want)}); tags are immutable — "
                            "publish under a new tag"
                        )
                stage = staging / target_tag
                stage.mkdir()
                for blob in plan.layers:
                    write_verified(blob, stage / str(blob.title))
                # Only a draft can already be there: the tag itself was refused above.
                self._commit(stage, target_tag, staging)
                retired = None if request.draft else self._retire_draft(tag, request.epoch, staging)
        except OSError as exc:
            raise PublishError(
                problems=[
                    Problem(file=str(self.root), message=f"cannot write the store: {exc.strerror or exc}")
                ]
            ) from exc
        return PublishResult(
            status="published", ref=self.url(target_tag), manifest_digest=sums_digest, retired_draft=retired
        )

    def _superseded_by(self, tag: str) -> str | None:
        """The successor named by ``ROOT/<tag>.superseded`` (:func:`~._publish.read_supersession`),
        else ``None``.

        Raises:
            IntegrityError: the record is there but is no marker of ``tag`` (exit 5).
        """
        name = tag + SUPERSEDED_SUFFIX
        path = self.root / name
        if not is_valid_tag(name) or not os.path.lexists(path):
            return None
        data = strictjson.read_regular(path, limit=MAX_MARKER_BYTES, error=IntegrityError)
        return read_supersession(data, tag=tag, source=self.url(name))

    def _refuse_superseded(self, tag: str) -> None:
        by = self._superseded_by(tag)
        if by is not None:
            raise PublishError(
                f"{self.url(tag)}: tag {tag} was superseded by {by}; a superseded tag is never "
                "reused — publish under a new tag"
            )

    def _write_marker(self, plan: ArtifactPlan, staging: Path) -> None:
        """Write the marker ``plan`` as ``ROOT/<plan.tag>`` (its manifest bytes; one rename)."""
        stage = staging / plan.tag
        write_verified(blob_of_bytes(plan.manifest, MANIFEST_MEDIA_TYPE), stage)
        stage.rename(self.root / plan.tag)
        fsync_path(self.root)

    def _retire_draft(self, tag: str, epoch: int, staging: Path) -> str | None:
        """With the final ``tag`` here, mark ``ROOT/<tag>.draft/`` (when there) superseded by it
        (:func:`~._publish.plan_draft_retirement`); the marker's URL, else ``None``. With the lock held."""
        draft = tag + DRAFT_SUFFIX
        if not (self.root / draft).is_dir():
            return None
        plan = plan_draft_retirement(tag=tag, epoch=epoch)
        if self._superseded_by(draft) is None:
            self._write_marker(plan, staging)
        return self.url(plan.tag)

    def _refuse_foreign_directory(self) -> None:
        """Never turn a directory with other content (a set, ``$HOME``) into a store: the root must
        be absent, empty, or hold :data:`STORE_MARKER` (written by the first publish), as a
        ``dir://`` root must hold ``oci-layout``.

        Raises:
            PublishError: the root is not a directory, or is a non-empty directory without the marker.
        """
        if self.root.is_symlink() or (self.root.exists() and not self.root.is_dir()):
            raise PublishError(
                problems=[Problem(file=str(self.root), message="store path is not a directory")]
            )
        if not self.root.is_dir() or (self.root / STORE_MARKER).is_file():
            return
        ours = {LOCK_NAME, TMP_NAME}
        entries = (p.name for p in self.root.iterdir())
        if any(n not in ours and not n.startswith(f".{STORE_MARKER}.") for n in entries):
            message = f"not a files:// store (no {STORE_MARKER}) and not empty; refusing to write into it"
            raise PublishError(problems=[Problem(file=str(self.root), message=message)])

    def _mark(self) -> None:
        """Write :data:`STORE_MARKER` into a new store (called with the lock held)."""
        marker = self.root / STORE_MARKER
        if not marker.is_file():
            write_bytes(marker, STORE_MARKER_BYTES, overwrite=False)

    def _refuse_non_directory(self, name: str) -> None:
        """Anything but a real directory at ``ROOT/<name>`` (a regular file, a symlink, a FIFO) is
        refused, never replaced: it is not a tag this store wrote.

        Raises:
            PublishError: ``ROOT/<name>`` exists and is not a directory (exit 7).
        """
        path = self.root / name
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            message = "exists and is not a tag directory (a file or a symlink); refusing to replace it"
            raise PublishError(problems=[Problem(file=str(path), message=message)])

    def _commit(self, stage: Path, name: str, staging: Path) -> None:
        """Make the complete directory ``stage`` the store's ``ROOT/<name>`` in one rename.

        A directory already there (a draft being replaced) is first moved into ``staging``.
        """
        stage.chmod(0o755)
        fsync_path(stage)
        final = self.root / name
        if final.exists():
            final.rename(staging / f"{name}.old")
        # The commit point: before this rename the name is absent, after it complete.
        stage.rename(final)
        fsync_path(self.root)

    def supersede(self, tag: str, *, by: str, epoch: int) -> PublishResult:
        """Record that ``tag`` was superseded by ``by``: the marker file ``ROOT/<tag>.superseded``
        (:func:`~._publish.plan_supersession` bytes, no ``subject``: a files store keeps no
        manifest). ``ROOT/<tag>/`` stays as published; publishing to it is refused from now on.

        Raises:
            InputError: bad tags.
            PublishError: ``tag`` is already recorded as superseded by something else, or the
                store cannot be written (exit 7).
            IntegrityError: a record is there that is no marker of ``tag`` (exit 5).
        """
        plan = plan_supersession(tag=tag, by=by, epoch=epoch, subject=None)
        try:
            with locked_store(self.root) as staging:
                existing = self._superseded_by(tag)
                if existing is None:
                    self._write_marker(plan, staging)
                    return PublishResult(
                        status="published", ref=self.url(plan.tag), manifest_digest=plan.digest
                    )
                same = (self.root / plan.tag).read_bytes() == plan.manifest  # bounded: read above
        except OSError as exc:
            raise PublishError(
                problems=[
                    Problem(file=str(self.root), message=f"cannot write the store: {exc.strerror or exc}")
                ]
            ) from exc
        if not same:  # as in an OCI store: a marker is never replaced, even by the same successor
            raise PublishError(f"{self.url(tag)}: tag {tag} is already recorded as superseded by {existing}")
        return PublishResult(status="already_published", ref=self.url(plan.tag), manifest_digest=plan.digest)

    def attach_signatures(self, tag: str, bundles: Mapping[str, bytes], *, epoch: int) -> PublishResult:
        """Write ``bundles`` beside the tag: ``ROOT/<tag>.sigstore/<name>.sigstore.json`` (one
        rename, like a tag; ``epoch`` is unused here: file times are not part of a files store).

        The same bundles again → ``already_published``; other bundles are never replaced, except a
        draft's (a draft is replaceable itself).

        Raises:
            PublishError: ``<tag>`` is not in the store, other signatures are there, or the store
                cannot be written (exit 7).
        """
        del epoch
        name = tag + SIGNATURES_SUFFIX
        if not is_valid_tag(name) or self._listing(tag) is None:
            raise PublishError(f"{self.url(tag)}: nothing published at {tag} to attach signatures to")
        want = {n: (hashing.sha256_bytes(d), len(d)) for n, d in bundles.items()}
        sums_digest = "sha256:" + hashing.sha256_file(self.root / tag / SUMS_NAME)
        self._refuse_foreign_directory()
        try:
            with locked_store(self.root, prepare=self._mark) as staging:
                self._refuse_non_directory(name)
                current = self._listing(name)
                if current == want:
                    return PublishResult(
                        status="already_published", ref=self.url(name), manifest_digest=sums_digest
                    )
                if current is not None and not tag.endswith(DRAFT_SUFFIX):
                    raise PublishError(
                        f"{self.url(name)}: other signatures are already there; signatures are never replaced"
                    )
                stage = staging / name
                stage.mkdir()
                for bundle_name, data in sorted(bundles.items()):
                    if not is_bare_name(bundle_name):
                        raise PublishError(f"{self.url(name)}: {bundle_name!r} is not a bare file name")
                    write_verified(
                        Blob(
                            media_type=SIGNATURES_TYPE,
                            digest="sha256:" + hashing.sha256_bytes(data),
                            size=len(data),
                            title=bundle_name,
                            data=data,
                        ),
                        stage / bundle_name,
                    )
                self._commit(stage, name, staging)  # only a draft's signatures are replaced
        except OSError as exc:
            raise PublishError(
                problems=[
                    Problem(file=str(self.root), message=f"cannot write the store: {exc.strerror or exc}")
                ]
            ) from exc
        return PublishResult(status="published", ref=self.url(name), manifest_digest=sums_digest)

    def pull_signatures(self, tag: str, *, subject: str | None) -> dict[str, bytes] | None:
        """The bundles in ``ROOT/<tag>.sigstore/`` (name → bytes), ``None`` when there are none.

        ``subject`` is not needed here: each bundle's payload is checked against the set itself.
        """
        del subject
        directory = self.root / (tag + SIGNATURES_SUFFIX)
        if not directory.is_dir():
            return None
        out: dict[str, bytes] = {}
        for path in sorted(directory.iterdir()):
            if path.is_file() and path.name.endswith(".sigstore.json") and path.stat().st_size <= 16 << 20:
                out[path.name] = path.read_bytes()
        return out

    def pull(self, ref: str, dest: Path) -> PulledSet:
        """Copy the set at ``ROOT/<ref>`` into the existing directory ``dest``, each file verified.

        ``SHA256SUMS`` names the files; each listed file is copied through a verified write and
        must match its listed digest. Files not listed are not copied (the set verifier then
        reports what is missing or extra).

        Raises:
            InputError: ``ref`` is not a tag or not in the store; ``dest`` missing or a file exists.
            IntegrityError: a file does not match ``SHA256SUMS``; a listed name is not bare.
        """
        url = self.url(ref)
        directory = self.root / ref
        if not is_valid_tag(ref) or not (directory / SUMS_NAME).is_file():
            raise InputError(problems=[Problem(file=url, message="not found")])
        # Bounded before reading: a store's SHA256SUMS is not trusted (issue 9).
        sums_bytes = strictjson.read_regular(
            directory / SUMS_NAME, limit=sums_bound(len(ENTRY_SUFFIXES)), error=IntegrityError
        )
        listed = parse_sha256sums(sums_bytes, source=f"{url}/{SUMS_NAME}").as_dict()
        bad = [n for n in listed if not is_bare_name(n)]
        if bad:
            raise IntegrityError(
                problems=[Problem(file=url, field=n, message="not a bare file name") for n in bad]
            )
        wanted = {**listed, SUMS_NAME: hashing.sha256_bytes(sums_bytes)}
        superseded_by = self._superseded_by(ref)  # an unreadable record stops before any copy
        files: list[PulledFile] = []
        for name, sha in sorted(wanted.items()):
            src = directory / name
            if not src.is_file():
                continue  # reported by the set verifier as missing
            blob = Blob(
                media_type=default_media_type(name) or "application/octet-stream",
                digest="sha256:" + sha,
                size=src.stat().st_size,
                title=name,
                path=src,
            )
            try:
                write_verified(blob, dest / name)
            except FileExistsError:
                raise InputError(
                    problems=[Problem(file=str(dest / name), message="already exists; refusing to overwrite")]
                ) from None
            files.append(PulledFile(name=name, size=blob.size, sha256=sha, media_type=blob.media_type))
        return PulledSet(
            ref=url,
            manifest_digest="sha256:" + wanted[SUMS_NAME],
            dest=dest,
            files=tuple(files),
            annotations={},
            superseded_by=superseded_by,
        )


def _first_difference(current: dict[str, tuple[str, int]], want: dict[str | None, tuple[str, int]]) -> str:
    # Name an entry before SHA256SUMS: which file differs is what the reader wants to know.
    for name in sorted(set(current) | {str(n) for n in want}, key=lambda n: (n == SUMS_NAME, n)):
        if current.get(name) != want.get(name):
            if name not in current:
                return f"{name} is missing there"
            if name not in want:
                return f"{name} is there but not in this set"
            return f"{name} is {current[name][0]}, this set's is {want[name][0]}"
    return "unknown"
