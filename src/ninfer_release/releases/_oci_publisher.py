"""The registry adapter (``oci://HOST[:PORT]/REPO``) over the one registry client.

The exact :class:`ArtifactPlan` bytes are uploaded through :class:`ninfer_release.registry.RegistryClient`
(credentials, TLS, chunked uploads, retries, deadlines: docs/publishing.md, "Registry client"):
blobs first (``HEAD`` skips present ones), then the manifest under its tag. Registry failures
become :class:`PublishError` (exit 7); :meth:`StorePublisher.pull` turns them into
:class:`InputError` (exit 4).

A registry has no lock and no compare-and-swap on tags. Publishers *on one host* are serialised
by an advisory lock file per ``HOST/REPO`` (so of N concurrent publishes of one set exactly
one reports ``published``); across hosts the read-back after the put is what detects a rival
(docs/publishing.md, "Concurrency").
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType

from ninfer_release._signals import join_through_signals
from ninfer_release.errors import IntegrityError, Problem, PublishError
from ninfer_release.hashing import sha256_bytes
from ninfer_release.progress import SILENT
from ninfer_release.registry import (
    BlobSource,
    Progress,
    RegistryClient,
    RegistryError,
    RegistryOptions,
    push_artifact,
    referrers_of,
)
from ninfer_release.releases._publish import (
    ANN_SUPERSEDED_TAG,
    INDEX_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    SUPERSESSION_TYPE,
    ArtifactPlan,
    Blob,
    StorePublisher,
    is_valid_tag,
    successor_named,
)

_LOCK_POLL = 0.05  # seconds between attempts to take a host-local publish lock


class _Recorded:
    """Progress kept while a helper thread uploads, handed on in order once it is joined: advances
    belong to the latest step, so two threads reporting at once would count the large blob's
    bytes in a small file's step."""

    def __init__(self) -> None:
        self._calls: list[tuple[str, int | None] | int] = []

    def step(self, message: str, total: int | None = None) -> None:
        self._calls.append((message, total))

    def advance(self, nbytes: int) -> None:
        self._calls.append(nbytes)

    def replay(self, to: Progress) -> None:
        """Report every recorded step and advance to ``to``, in the order they happened."""
        for call in self._calls:
            if isinstance(call, tuple):
                to.step(*call)
            else:
                to.advance(call)


class _BesideUploads:
    """``blobs`` stored one after another by ``put`` on a helper thread (``publish-blobs``) while
    the caller's thread sends the first, largest blob of a set (issue 11: the ten small blobs of
    the ``--full`` set took 0.2 s after its 388 MB zip; a registry takes uploads side by side).

    Entering starts it; leaving joins it, after its current blob when the caller's upload failed
    (a Ctrl-C while joining is raised once it has ended): no upload is left running. Its thread's
    progress goes to :attr:`progress` (``slot.progress``), replayed by the caller afterwards. Its
    first failure is kept in :attr:`error` and sets :attr:`failed`, the caller's ``cancel``: the
    caller's upload stops then instead of sending the rest of a blob that will never be used.
    """

    def __init__(self, put: Callable[[Blob], None], blobs: Sequence[Blob], slot: threading.local) -> None:
        self._put = put
        self._blobs = blobs
        self._slot = slot
        self._stop = threading.Event()
        self.progress = _Recorded()
        self.error: BaseException | None = None
        self.failed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="publish-blobs")

    def _run(self) -> None:
        self._slot.progress = self.progress
        try:
            for blob in self._blobs:
                if self._stop.is_set():
                    return
                self._put(blob)
        except BaseException as exc:  # noqa: BLE001 - raised by the caller's thread after the join
            self.error = exc
            self.failed.set()

    def __enter__(self) -> _BesideUploads:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is not None:
            self._stop.set()
        join_through_signals(self._thread)


def _source(blob: Blob) -> BlobSource:
    return BlobSource(
        digest=blob.digest, size=blob.size, data=blob.data, path=blob.path, name=blob.title or ""
    )


class OciPublisher(StorePublisher):
    """Publisher over an OCI distribution registry repository ``host/repository``.

    ``options`` configure the client (default: :meth:`RegistryOptions.from_env`); ``progress``
    gets a step per blob moved (file name, size) and its bytes.
    """

    def __init__(
        self,
        *,
        host: str,
        repository: str,
        options: RegistryOptions | None = None,
        progress: Progress = SILENT,
    ) -> None:
        self.host = host
        self.repository = repository
        self.client = RegistryClient(host, options=options, progress=progress)
        self.progress = progress
        self._uploading = threading.local()  # .progress: where this thread's uploads report

    @property
    def insecure(self) -> bool:
        """Plain HTTP may be used (loopback without TLS, or ``--insecure-registry``); HTTPS first."""
        return self.client.plain_http_allowed

    def url(self, ref: str | None = None) -> str:
        """``oci://HOST/REPO[:TAG|@DIGEST]``."""
        base = f"oci://{self.host}/{self.repository}"
        if ref is None:
            return base
        return f"{base}@{ref}" if ref.startswith("sha256:") else f"{base}:{ref}"

    def _refused(self, exc: RegistryError) -> PublishError:
        return PublishError(problems=[Problem(file=self.url(), message=str(exc))])

    # -- primitives ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        # Serialises check-then-write among publishers to this repository on this host (threads
        # or processes); a registry offers nothing to lock with, so publish() also re-checks
        # after the put, and the put itself reads the tag back when refused.
        key = hashlib.sha256(f"{self.host}/{self.repository}".encode()).hexdigest()[:32]
        folder = Path(tempfile.gettempdir()) / f"ninfer-release-locks-{os.getuid()}"
        folder.mkdir(mode=0o700, exist_ok=True)
        # The holder may be uploading a large set: wait as long as this command's overall deadline.
        give_up = time.monotonic() + max(self.client.remaining(), 0.0)
        with (folder / f"{key}.lock").open("a") as handle:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > give_up:
                        raise PublishError(
                            problems=[
                                Problem(
                                    file=self.url(), message="another publish on this host holds the lock"
                                )
                            ]
                        ) from exc
                    time.sleep(_LOCK_POLL)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _superseded_by(self, tag: str, manifest: bytes | None) -> str | None:
        # The marker's own tag (<tag>.superseded) first; then the OCI referrers of the tag's
        # manifest (the registry's referrers API, else the sha256-<hex> tag-schema index), which
        # also finds a marker whose tag was deleted or that another tool wrote.
        by = super()._superseded_by(tag, manifest)
        if by is not None or not is_valid_tag(tag) or manifest is None:
            return by
        try:
            found = referrers_of(
                self.client,
                self.repository,
                "sha256:" + sha256_bytes(manifest),
                artifact_type=SUPERSESSION_TYPE,
            )
        except RegistryError as exc:
            raise self._refused(exc) from None
        for desc in found:
            annotations = desc.get("annotations")
            named = annotations.get(ANN_SUPERSEDED_TAG) if isinstance(annotations, dict) else None
            if named is not None and named != tag:
                continue  # the marker of another tag holding the same bytes
            where = f"{self.url()}@{desc.get('digest')} (a supersession referrer of {tag})"
            return successor_named(annotations, tag=tag, source=where)
        return None

    def _read_manifest(self, ref: str) -> bytes | None:
        try:
            found = self.client.get_manifest(
                self.repository, ref, accept=f"{MANIFEST_MEDIA_TYPE}, {INDEX_MEDIA_TYPE}"
            )
        except RegistryError as exc:
            raise self._refused(exc) from None
        return None if found is None else found.data

    def _put_blobs(self, blobs: Sequence[Blob]) -> None:
        """The first blob (the largest: :attr:`ArtifactPlan.upload_order`) on this thread, the
        others meanwhile one after another on a helper thread (:class:`_BesideUploads`); its
        progress is reported after the first's. The first failure raises: this thread's, else
        the helper's (a changed file is an :class:`IntegrityError` from either). A failure on the
        helper cancels this thread's upload before its next 32 MiB of body: the publish fails
        then, not once the largest blob is up.
        """
        if len(blobs) < 2:
            super()._put_blobs(blobs)
            return
        with _BesideUploads(self._put_blob, blobs[1:], self._uploading) as beside:
            try:
                self._put_blob(blobs[0], cancel=beside.failed)
            except RegistryError as exc:
                if exc.kind != "cancelled":
                    raise
        beside.progress.replay(self.progress)
        if beside.error is not None:
            raise beside.error

    def _put_blob(self, blob: Blob, *, cancel: threading.Event | None = None) -> None:
        """Upload ``blob`` unless present; ``cancel`` set stops it (:class:`RegistryError`
        ``cancelled``, the one registry error not turned into a :class:`PublishError`)."""
        progress = getattr(self._uploading, "progress", None)
        try:
            self.client.push_blob(self.repository, _source(blob), progress=progress, cancel=cancel)
        except RegistryError as exc:
            if exc.kind == "cancelled":
                raise
            if exc.code == "DIGEST_INVALID":
                raise IntegrityError(
                    problems=[
                        Problem(
                            file=str(blob.path or blob.title),
                            message=f"registry says the bytes are not {blob.digest}: changed while publishing?",  # noqa: E501
                        )
                    ]
                ) from None
            raise self._refused(exc) from None

    def _put_manifest(self, plan: ArtifactPlan, tags: Sequence[str]) -> None:
        for tag in tags:
            try:
                push_artifact(self.client, self.repository, manifest=plan.manifest, blobs=(), tag=tag)
            except RegistryError as exc:
                if exc.kind == "protocol" and "registry stored" in str(exc):
                    raise IntegrityError(problems=[Problem(file=self.url(tag), message=str(exc))]) from None
                raise self._refused(exc) from None

    def _open_blob(self, digest: str) -> contextlib.AbstractContextManager[Iterator[bytes]]:
        return self._open_layer(Blob(media_type="", digest=digest, size=1 << 62))

    @contextlib.contextmanager
    def _open_layer(self, layer: Blob) -> Iterator[Iterator[bytes]]:
        try:
            with self.client.open_blob(
                self.repository, layer.digest, size=layer.size, name=layer.title or ""
            ) as chunks:
                yield chunks
        except RegistryError as exc:
            raise self._refused(exc) from None
