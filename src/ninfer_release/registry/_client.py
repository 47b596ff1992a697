"""The one registry client (OCI distribution-spec v1.1): manifests, blobs, uploads, referrers.

Everything that talks HTTP to a registry goes through :class:`RegistryClient`: publishing sets
(``releases``), pulling them for ``verify oci://…``, carrying images by digest and pushing built
images (``containers``). Bytes are never trusted: manifests read by digest and every blob are
checked against their digest and size by the callers' stores, and a manifest ``PUT`` is checked
against the ``Docker-Content-Digest`` the registry reports.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import requests
import urllib3.exceptions

from ninfer_release.progress import SILENT, Progress
from ninfer_release.transport import release

from ._options import RegistryOptions
from ._transport import (
    Body,
    FileRange,
    RegistryError,
    Transport,
    error_detail,
    exchange,
    read_capped,
    shrank,
)

#: Blob transfers report through the one progress protocol: a step per file (its name, its size),
#: advanced by the bytes moved.

MANIFEST_ACCEPT = ", ".join(
    [
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    ]
)
_STREAM_CHUNK = 1 << 20
#: Bytes per piece of an in-memory upload body. The bodies are iterables, not file-likes: urllib3
#: reads a file-like body 16 KiB at a time, and each piece must take the GIL back from the publish
#: verification's thread (up to the 5 ms switch interval): 23,700 hand-overs for a 388 MB blob.
_UPLOAD_PIECE = 4 << 20
#: Bytes per piece of a file's upload body (a :class:`FileRange`: sent by the kernel, no memory
#: held): between pieces a cancelled upload stops (:class:`_Window`), 12 times in a 388 MB blob.
_FILE_PIECE = 32 << 20
_MIN_CHUNK = 64 * 1024  # the smallest PATCH chunk tried after 413s
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
_OK = frozenset({200})
_OK_OR_ABSENT = frozenset({200, 404})
_CREATED = frozenset({201})
_ACCEPTED = frozenset({202})


def index_entries(data: bytes, *, where: str) -> list[dict[str, Any]]:
    """The ``manifests`` descriptors of an OCI image index (referrers answer or fallback tag).

    Raises:
        RegistryError: not JSON, or not an object with a ``manifests`` list (``protocol``).
    """
    try:
        doc = json.loads(data)
    except ValueError:
        doc = None
    manifests = doc.get("manifests") if isinstance(doc, dict) else None
    if not isinstance(manifests, list):
        raise RegistryError(f"{where}: not an image index", kind="protocol")
    return [m for m in manifests if isinstance(m, dict)]


@dataclass(frozen=True, kw_only=True)
class BlobSource:
    """A blob to upload: ``digest`` (``sha256:<hex>``), ``size`` in bytes, and its bytes — ``data``
    in memory or a file ``path`` (streamed, opened again for each attempt). ``name`` is shown in
    progress and errors."""

    digest: str
    size: int
    data: bytes | None = None
    path: Path | None = None
    name: str = ""

    def open(self) -> BinaryIO:
        """A fresh stream of the blob's bytes."""
        if self.data is not None:
            import io

            return io.BytesIO(self.data)
        assert self.path is not None
        return self.path.open("rb")


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """A manifest as read: exact ``data``, ``media_type`` (from Content-Type or the body) and the
    SHA-256 ``digest`` of the bytes."""

    data: bytes
    media_type: str
    digest: str


@dataclass(frozen=True, kw_only=True)
class ManifestPut:
    """What a manifest ``PUT`` did: ``status`` ``published`` or ``already_published`` (the
    refused put found these very bytes at the tag), the ``digest``, and the ``OCI-Subject``
    header when the registry processed a ``subject`` (it has the referrers API)."""

    status: str
    digest: str
    oci_subject: str | None


def _fatal(exc: RegistryError) -> bool:
    """Whether a failed blob upload must not be retried: auth, the deadline, a cancelled upload,
    or a refusal (4xx other than 408, 413, 429) that is not a digest mismatch (the file changed:
    restart)."""
    return exc.kind in ("auth", "deadline", "cancelled") or (
        exc.status is not None
        and exc.status < 500
        and exc.code != "DIGEST_INVALID"
        and exc.status not in (408, 413, 429)
    )


class _Window:
    """``length`` bytes of a blob's ``stream`` from ``offset``, as a request body: an iterable
    (Content-Length kept, never a file-like) that starts from ``offset`` each time it is iterated
    (a body is sent again on a retry or after a 401).

    A file's bytes go as :class:`~._transport.FileRange` pieces of at most :data:`_FILE_PIECE`,
    which the connection sends from the file itself (``os.sendfile`` on plain HTTP); an in-memory
    blob's as ``bytes`` of at most :data:`_UPLOAD_PIECE`. Each piece's length goes to ``report``
    (when given) as it is handed over. Before each piece, a set ``cancel`` raises
    :class:`RegistryError` (``cancelled``). A stream shorter than the window raises
    :class:`RegistryError` (``protocol``, ``DIGEST_INVALID``) where its bytes end.
    """

    def __init__(
        self,
        stream: BinaryIO,
        offset: int,
        length: int,
        *,
        name: str = "",
        report: Callable[[int], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self._stream = stream
        self._offset = offset
        self._length = length
        self._name = name
        self._report = report
        self._cancel = cancel
        self._is_file = _has_fileno(stream)

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[FileRange | bytes]:
        pos, end = self._offset, self._offset + self._length
        if not self._is_file:
            self._stream.seek(pos)
        while pos < end:
            _stop_if(self._cancel, self._name)
            piece: FileRange | bytes
            if self._is_file:
                piece = FileRange(self._stream, pos, min(_FILE_PIECE, end - pos), self._name)
            else:
                piece = self._stream.read(min(_UPLOAD_PIECE, end - pos))
                if not piece:
                    raise shrank(self._name)
            pos += len(piece)
            if self._report is not None:
                self._report(len(piece))
            yield piece


def _has_fileno(stream: BinaryIO) -> bool:
    """Whether ``stream`` is an OS file (its bytes can be sent by the kernel)."""
    try:
        stream.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return False
    return True


def _stop_if(cancel: threading.Event | None, name: str) -> None:
    """Raise :class:`RegistryError` (``cancelled``) when ``cancel`` is set."""
    if cancel is not None and cancel.is_set():
        raise RegistryError(f"{name or 'upload'}: upload cancelled", kind="cancelled")


class RegistryClient:
    """One registry host (``HOST[:PORT]``; ``docker.io`` means Docker Hub) for one command.

    ``options`` (default: :meth:`RegistryOptions.from_env`) sets trust, timeouts, retries and
    upload sizes; ``progress`` gets a step per blob transfer (its name, its size) and its bytes. The
    overall deadline counts from construction. Thread-safe for concurrent blob transfers.
    """

    def __init__(
        self, host: str, *, options: RegistryOptions | None = None, progress: Progress = SILENT
    ) -> None:
        self.host = host
        self.options = options if options is not None else RegistryOptions.from_env()
        self.progress = progress
        self._http = Transport(host, self.options)
        self._chunked = False  # set after a 413: this host caps request bodies
        self._chunk_size = self.options.chunk_size
        self._lock = threading.Lock()

    def remaining(self) -> float:
        """Seconds left of this client's overall deadline (``options.deadline`` from construction)."""
        return self._http.remaining()

    @property
    def plain_http_allowed(self) -> bool:
        """Whether plain HTTP may be used after HTTPS fails: a loopback host whose port does not
        speak TLS, or a host named in ``insecure_hosts`` (``--insecure-registry``)."""
        return self._http.insecure

    # -- manifests -------------------------------------------------------------------------------

    def get_manifest(self, repo: str, ref: str, *, accept: str = MANIFEST_ACCEPT) -> Manifest | None:
        """The manifest at tag or digest ``ref``, or ``None`` when the registry says 404.

        Raises:
            RegistryError: any other failure; a body over ``max_manifest`` bytes (``protocol``).
        """
        path = f"/v2/{repo}/manifests/{ref}"
        with self._call("GET", path, repo=repo, ok=_OK_OR_ABSENT, headers={"Accept": accept}) as resp:
            if resp.status_code == 404:
                return None
            data = read_capped(resp, self.options.max_manifest, what=f"{self.host}/{repo} manifest {ref}")
            media = resp.headers.get("Content-Type", "").split(";")[0].strip()
        return Manifest(data=data, media_type=media, digest="sha256:" + hashlib.sha256(data).hexdigest())

    def put_manifest(self, repo: str, ref: str, data: bytes, media_type: str) -> ManifestPut:
        """Store manifest ``data`` under tag or digest ``ref``.

        Transient failures (5xx, 429, connection errors) are retried — a manifest ``PUT`` of the
        same bytes is idempotent. A refusal (4xx) is never retried blindly: the tag is read
        back, and when it already holds exactly these bytes (a concurrent publisher of the same
        set won) the answer is ``already_published``.

        Raises:
            RegistryError: refused and the tag holds other bytes (or nothing); the registry
                reports a digest other than ours.
        """
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        path = f"/v2/{repo}/manifests/{ref}"
        with exchange(self._http, "PUT", path):
            resp = self._http.request(
                "PUT",
                path,
                repo=repo,
                push=True,
                headers={"Content-Type": media_type},
                body=Body(make=lambda: data, length=len(data)),
            )
            try:
                status = resp.status_code
                said = resp.headers.get("Docker-Content-Digest")
                subject = resp.headers.get("OCI-Subject")
                failure = None if status == 201 else self._fail("PUT", path, resp)
            finally:
                release(resp)
        if failure is None:
            if said and said != digest:
                raise RegistryError(
                    f"{self.host}/{repo}:{ref}: registry stored {said}, we sent {digest}", kind="protocol"
                )
            return ManifestPut(status="published", digest=digest, oci_subject=subject)
        if failure.status is not None and 400 <= failure.status < 500 and failure.status != 401:
            back = self.get_manifest(repo, ref)
            if back is not None and back.digest == digest:
                return ManifestPut(status="already_published", digest=digest, oci_subject=None)
        raise failure

    def referrers(
        self, repo: str, digest: str, *, artifact_type: str | None = None
    ) -> list[dict[str, Any]] | None:
        """The descriptors referring to ``digest`` (OCI referrers API), or ``None`` when the
        registry has no referrers API (404): use the ``sha256-<hex>`` tag-schema fallback then."""
        path = f"/v2/{repo}/referrers/{digest}"
        params = {"artifactType": artifact_type} if artifact_type else None
        accept = {"Accept": INDEX_MEDIA_TYPE}
        with self._call("GET", path, repo=repo, ok=_OK_OR_ABSENT, params=params, headers=accept) as resp:
            if resp.status_code == 404:
                return None
            what = f"{self.host}/{repo} referrers of {digest}"
            data = read_capped(resp, self.options.max_manifest, what=what)
        return index_entries(data, where=what)

    # -- blobs: reading --------------------------------------------------------------------------

    def blob_bytes(self, repo: str, digest: str, *, cap: int | None = None) -> bytes:
        """A small blob (a config) in memory, at most ``cap`` bytes (default ``max_config``).

        Raises:
            RegistryError: not found, refused, or larger than the cap.
        """
        limit = self.options.max_config if cap is None else cap
        path = f"/v2/{repo}/blobs/{digest}"
        with self._call("GET", path, repo=repo) as resp:
            return read_capped(resp, limit, what=f"{self.host}/{repo} blob {digest}")

    @contextlib.contextmanager
    def open_blob(self, repo: str, digest: str, *, size: int, name: str = "") -> Iterator[Iterator[bytes]]:
        """The blob's bytes in chunks, never more than ``size + 1`` bytes (the caller verifies).

        Raises:
            RegistryError: not found, refused, unreachable, deadline.
        """
        path = f"/v2/{repo}/blobs/{digest}"
        label = name or digest
        with self._call("GET", path, repo=repo, seconds=self._http.remaining()) as resp:
            yield self._chunks(resp, size, label)

    def _chunks(self, resp: requests.Response, size: int, label: str) -> Iterator[bytes]:
        got = 0
        self.progress.step(label, size)
        for chunk in resp.raw.stream(_STREAM_CHUNK, decode_content=False):
            got += len(chunk)
            self.progress.advance(len(chunk))
            yield chunk
            if got > size:
                return

    # -- blobs: uploading ------------------------------------------------------------------------

    def has_blob(self, repo: str, digest: str, size: int | None = None) -> bool:
        """Whether ``repo`` already holds the blob (``HEAD``; size checked when given)."""
        path = f"/v2/{repo}/blobs/{digest}"
        with exchange(self._http, "HEAD", path):
            resp = self._http.request("HEAD", path, repo=repo, push=True)
            release(resp)
        if resp.status_code == 404:
            return False
        if resp.status_code != 200:
            raise self._fail("HEAD", path, resp)
        length = resp.headers.get("Content-Length")
        return size is None or length is None or length == str(size)

    def push_blob(
        self,
        repo: str,
        blob: BlobSource,
        *,
        mount_from: str | None = None,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> str:
        """Upload ``blob`` unless ``repo`` has it; returns ``present``, ``mounted`` or ``uploaded``.

        ``HEAD`` first; then a cross-repository mount from ``mount_from`` (same registry) when
        given; then a monolithic ``PUT`` for blobs up to ``monolithic_max`` bytes, else (or after
        a 413) a chunked upload: ``POST``, ``PATCH`` with ``Content-Range`` per ``chunk_size``,
        final ``PUT ?digest=``. A chunk that fails transiently resumes its session from the bytes
        the registry holds (:meth:`_put_chunked`); any other failed upload is restarted from the
        beginning, at most ``retries`` times. A 413 on a chunk halves ``chunk_size`` (down to
        64 KiB) and tries again at once without counting as a retry: a body cap is found in at
        most 14 halvings from the 1 GiB default. ``progress`` (default: the client's) gets the
        blob's step and bytes: a caller uploading blobs side by side gives each thread its own.
        ``cancel``: once set (another thread's upload failed), the upload stops before its next
        request or its next :data:`_FILE_PIECE` of body, and is not retried.

        Raises:
            RegistryError: refused or failed after the retries; ``code`` ``DIGEST_INVALID`` when
                the registry computed another digest (the file changed while publishing);
                ``kind`` ``cancelled`` when ``cancel`` was set.
        """
        _stop_if(cancel, blob.name)
        if self.has_blob(repo, blob.digest, blob.size):
            return "present"
        attempt = 0
        while True:
            chunk_size = self._chunk_size
            try:
                _stop_if(cancel, blob.name)
                return self._upload(repo, blob, mount_from if attempt == 0 else None, progress, cancel)
            except RegistryError as exc:
                if _fatal(exc):
                    raise
                if self.has_blob(repo, blob.digest, blob.size):
                    return "present"  # a concurrent publisher of the same bytes finished it
                if exc.status == 413 and self._chunk_size < chunk_size:
                    continue  # a cap on bodies: smaller chunks now, not a failed attempt (bounded)
                attempt += 1
                if attempt > self.options.retries or self._http.remaining() <= 0:
                    raise
                self._http._sleep(attempt, None)

    def _upload(
        self,
        repo: str,
        blob: BlobSource,
        mount_from: str | None,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> str:
        """One upload attempt of :meth:`push_blob`: a mount, a monolithic ``PUT`` or chunks."""
        location, mounted = self._start_upload(repo, blob, mount_from)
        if mounted:
            return "mounted"
        if not self._chunked and blob.size <= self.options.monolithic_max:
            try:
                self._put_monolithic(repo, blob, location, progress, cancel)
                return "uploaded"
            except RegistryError as exc:
                if exc.status != 413:
                    raise
                with self._lock:
                    self._chunked = True  # this host caps bodies: chunk from now on
            location, _ = self._start_upload(repo, blob, None)
        return self._put_chunked(repo, blob, location, progress, cancel)

    def _start_upload(self, repo: str, blob: BlobSource, mount_from: str | None) -> tuple[str, bool]:
        path = f"/v2/{repo}/blobs/uploads/"
        params = {"mount": blob.digest, "from": mount_from} if mount_from and mount_from != repo else None
        ok = frozenset({201, 202}) if params else frozenset({202})
        start = {"Content-Length": "0"}
        with self._call(
            "POST", path, repo=repo, ok=ok, name=blob.name, push=True, params=params, headers=start
        ) as resp:
            if resp.status_code == 201:
                return "", True
            location = resp.headers.get("Location", "")
        if not location:
            raise RegistryError(
                f"POST {self.host}{path} ({blob.name}): 202 without a Location", kind="protocol"
            )
        return self._absolute(location), False

    def _absolute(self, location: str) -> str:
        if location.startswith(("http://", "https://")):
            return location
        return self._http.base() + location

    def _put_monolithic(
        self,
        repo: str,
        blob: BlobSource,
        location: str,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        report = self._reporter(blob, progress)
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(blob.size)}
        with blob.open() as stream:
            body = _Window(stream, 0, blob.size, name=blob.name, report=report, cancel=cancel)
            with self._call(
                "PUT",
                location,
                repo=repo,
                ok=_CREATED,
                seconds=self._http.remaining(),
                name=blob.name,
                push=True,
                retry=False,
                params={"digest": blob.digest},
                headers=headers,
                body=Body(make=lambda: body, length=blob.size),
            ):
                pass

    def _put_chunked(
        self,
        repo: str,
        blob: BlobSource,
        location: str,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> str:
        """``PATCH`` the blob in ``chunk_size`` pieces, then the final ``PUT ?digest=``; returns
        ``uploaded``, or ``present`` when a resume finds the blob already there.

        A chunk that fails transiently (connection, 408, 429, 5xx) resumes the same session: a
        ``HEAD`` of the blob first (a concurrent publisher may have finished it), then a ``GET`` of
        the upload URL, whose ``Range: 0-<last>`` says how many bytes the registry holds, and the
        upload goes on from the byte after it (distribution spec, "Upload progress"; docker does
        the same), at most ``retries`` times. A session the registry no longer knows, or that
        holds no byte yet, is not resumed: the error goes to :meth:`push_blob`, which restarts.
        """
        offset = 0
        resumes = 0
        while True:
            try:
                location = self._patch_from(repo, blob, location, offset, progress, cancel)
                break
            except RegistryError as exc:
                if not _resumable(exc) or resumes >= self.options.retries or self._http.remaining() <= 0:
                    raise
                resumes += 1
                self._http._sleep(resumes, None)
                if self.has_blob(repo, blob.digest, blob.size):
                    return "present"
                status = self._upload_status(repo, location)
                if status is None:
                    raise
                location, offset = status
        _stop_if(cancel, blob.name)
        with self._call(
            "PUT",
            location,
            repo=repo,
            ok=_CREATED,
            name=blob.name,
            push=True,
            retry=False,
            params={"digest": blob.digest},
            headers={"Content-Length": "0"},
        ):
            pass
        return "uploaded"

    def _patch_from(
        self,
        repo: str,
        blob: BlobSource,
        location: str,
        offset: int,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> str:
        """Send the blob's bytes from ``offset`` on as ``PATCH`` chunks; the session's next URL.

        Each chunk's body is sent from the file (:class:`_Window`), so a large ``chunk_size``
        costs no memory: a 388 MB blob goes in a few requests, as docker and skopeo send it.
        """
        report = self._reporter(blob, progress)
        with blob.open() as stream:
            while offset < blob.size:
                n = min(self._chunk_size, blob.size - offset)
                if stream.seek(0, os.SEEK_END) < offset + n:  # the window seeks back itself
                    raise shrank(blob.name or blob.digest)
                window = _Window(stream, offset, n, name=blob.name or blob.digest, cancel=cancel)
                location = self._patch(repo, blob, location, offset, window)
                offset += n
                report(n)
        return location

    def _patch(self, repo: str, blob: BlobSource, location: str, offset: int, chunk: _Window) -> str:
        """One ``PATCH`` of ``chunk`` at ``offset``; the session's next URL (its ``Location``)."""
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Range": f"{offset}-{offset + len(chunk) - 1}",
            "Content-Length": str(len(chunk)),
        }
        try:
            with self._call(
                "PATCH",
                location,
                repo=repo,
                ok=_ACCEPTED,
                seconds=self._http.remaining(),
                name=blob.name,
                push=True,
                retry=False,
                headers=headers,
                body=Body(make=lambda: chunk, length=len(chunk)),
            ) as resp:
                return self._absolute(resp.headers.get("Location", "") or location)
        except RegistryError as exc:
            if exc.status == 413:  # even a chunk is too big here: smaller ones next time
                with self._lock:
                    self._chunk_size = max(_MIN_CHUNK, self._chunk_size // 2)
            raise

    def _upload_status(self, repo: str, location: str) -> tuple[str, int] | None:
        """``(session URL, next offset)`` of an upload session from its ``GET`` (``204`` with
        ``Range: 0-<last>``), or ``None`` when it cannot be resumed: gone (404 or any other
        answer), unreadable, or holding no byte (``0-0`` is also what an empty session says)."""
        try:
            with self._call("GET", location, repo=repo, ok=frozenset({204}), push=True, retry=False) as resp:
                held = resp.headers.get("Range", "")
                next_url = self._absolute(resp.headers.get("Location", "") or location)
        except RegistryError:
            return None
        start, sep, end = held.partition("-")
        if start != "0" or not sep or not end.isdigit() or int(end) == 0:
            return None
        return next_url, int(end) + 1

    def _reporter(self, blob: BlobSource, progress: Progress | None = None) -> Callable[[int], None]:
        """The blob's step begins on ``progress`` (default: the client's); its bytes advance it."""
        to = self.progress if progress is None else progress
        to.step(blob.name or blob.digest, blob.size)
        return to.advance

    # -- one exchange ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _call(
        self,
        method: str,
        url: str,
        *,
        repo: str,
        ok: frozenset[int] = _OK,
        seconds: float | None = None,
        name: str = "",
        **kwargs: Any,
    ) -> Iterator[requests.Response]:
        """One exchange under its watchdog (``seconds``, default the request deadline): the answer
        when its status is in ``ok`` (released afterwards: :func:`~._transport.release`), else the
        :class:`RegistryError`."""
        with exchange(self._http, method, url, seconds):
            resp = self._http.request(method, url, repo=repo, **kwargs)
            try:
                if resp.status_code not in ok:
                    raise self._fail(method, url, resp, name=name)
                yield resp
            finally:
                release(resp)

    # -- errors ----------------------------------------------------------------------------------

    def _fail(self, method: str, url: str, resp: requests.Response, *, name: str = "") -> RegistryError:
        try:
            code, detail = error_detail(resp)
        except (requests.RequestException, urllib3.exceptions.HTTPError):
            code, detail = "", resp.reason or ""
        what = f" ({name})" if name else ""
        where = url.split("?", 1)[0]
        if "://" not in where:
            where = f"{self.host}{where}"
        return RegistryError(
            f"{method} {where}{what}: HTTP {resp.status_code} {detail}".rstrip(),
            kind="http",
            status=resp.status_code,
            code=code,
        )

    def close(self) -> None:
        """Close pooled connections."""
        self._http.close()


def _resumable(exc: RegistryError) -> bool:
    """Whether an upload chunk failed transiently (connection, 408, 429, 5xx): its session may
    still hold the bytes before it. A refusal (other 4xx, a digest mismatch) is not resumed."""
    if exc.kind == "unreachable":
        return True
    return (
        exc.status is not None
        and (exc.status >= 500 or exc.status in (408, 429))
        and exc.code != "DIGEST_INVALID"
    )
