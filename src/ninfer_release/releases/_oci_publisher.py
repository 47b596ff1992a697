"""The registry adapter (``oci://HOST[:PORT]/REPO``): the only module that talks to registries.

Uses oras-py's :class:`oras.client.OrasClient` for the HTTP session, auth challenges and the
distribution URL scheme, but not ``OrasClient.push``: push re-serialises the manifest with
``requests``' JSON (so its digest could not equal the directory store's), has no
``artifactType``, reads every blob whole into memory, and takes titles from paths relative to the
working directory (C41). Instead the exact :class:`ArtifactPlan` bytes are uploaded through the
OCI distribution API: ``HEAD``/``POST``/``PUT`` blobs (streamed from the file), then ``PUT`` the
manifest under each tag. No ``chdir``, no temp dir, no path in any title.

Requests go through the undecorated ``do_request`` (auth challenges kept): oras's retry decorator
sleeps minutes on a refused connection and would re-send a consumed streamed body.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import oras.client
import requests

from ninfer_release.errors import IntegrityError, Problem, PublishError
from ninfer_release.releases._publish import (
    INDEX_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    ArtifactPlan,
    Blob,
    StorePublisher,
    is_loopback_host,
)

_CHUNK = 1 << 20  # 1 MiB


def _request_failure(host: str, method: str, exc: requests.RequestException) -> str:
    """One line for a failed registry request: the host and the cause the person can act on
    (``connection refused``, ``timed out``, a TLS error), not the HTTP library's retry internals."""
    if isinstance(exc, requests.Timeout):
        return f"registry {host} did not answer {method} in time (timed out)"
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    cause: OSError | None = None
    while pending:  # the innermost OS error in the chain (urllib3 wraps it two or three times)
        e = pending.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.strerror:
            cause = e
        linked = (e.__cause__, e.__context__, getattr(e, "reason", None), *e.args)
        pending += [x for x in linked if isinstance(x, BaseException)]
    if isinstance(exc, requests.ConnectionError) and cause is not None:
        return f"registry {host} unreachable: {cause.strerror}"
    if isinstance(exc, requests.ConnectionError):
        return f"registry {host} unreachable"
    return f"registry request {method} to {host} failed: {exc.__class__.__name__}"


class OciPublisher(StorePublisher):
    """Publisher over an OCI distribution registry repository ``host/repository``.

    ``insecure`` (plain HTTP) defaults to true only for loopback hosts (127.*, localhost, [::1]).
    """

    def __init__(self, *, host: str, repository: str, insecure: bool | None = None) -> None:
        self.host = host
        self.repository = repository
        self.insecure = is_loopback_host(host) if insecure is None else insecure
        self._client = oras.client.OrasClient(hostname=host, insecure=self.insecure)
        self._container = self._client.get_container(f"{host}/{repository}")
        self._scheme = "http" if self.insecure else "https"
        raw = getattr(type(self._client).do_request, "__wrapped__", type(self._client).do_request)
        self._do: Callable[..., requests.Response] = functools.partial(raw, self._client)

    def url(self, ref: str | None = None) -> str:
        """``oci://HOST/REPO[:TAG|@DIGEST]``."""
        base = f"oci://{self.host}/{self.repository}"
        if ref is None:
            return base
        return f"{base}@{ref}" if ref.startswith("sha256:") else f"{base}:{ref}"

    # -- HTTP ----------------------------------------------------------------------------------

    def _request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        try:
            return self._do(url, method, **kwargs)
        except requests.RequestException as exc:
            raise PublishError(
                problems=[Problem(file=self.url(), message=_request_failure(self.host, method, exc))]
            ) from exc

    def _fail(self, what: str, response: requests.Response) -> PublishError:
        detail = response.reason or ""
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            errors = response.json().get("errors") or []
            detail = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in errors) or detail
        return PublishError(
            problems=[Problem(file=self.url(), message=f"{what}: HTTP {response.status_code} {detail}")]
        )

    def _manifest_url(self, ref: str) -> str:
        return f"{self._scheme}://{self._container.manifest_url(ref)}"

    def _blob_url(self, digest: str) -> str:
        return f"{self._scheme}://{self._container.get_blob_url(digest)}"

    # -- primitives ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        # A registry offers no lock and no compare-and-swap on tags; publish() re-checks after the
        # put instead (docs/publishing.md, "Concurrency").
        yield

    def _read_manifest(self, ref: str) -> bytes | None:
        response = self._request(
            "GET", self._manifest_url(ref), headers={"Accept": f"{MANIFEST_MEDIA_TYPE}, {INDEX_MEDIA_TYPE}"}
        )
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise self._fail(f"reading manifest {ref}", response)
        return bytes(response.content)

    def _put_blob(self, blob: Blob) -> None:
        head = self._request("HEAD", self._blob_url(blob.digest))
        if head.status_code == 200:
            return
        start = self._request(
            "POST", f"{self._scheme}://{self._container.upload_blob_url()}", headers={"Content-Length": "0"}
        )
        location = start.headers.get("Location", "")
        if start.status_code != 202 or not location:
            raise self._fail(f"starting upload of {blob.title or blob.digest}", start)
        if not location.startswith(("http://", "https://")):
            location = f"{self._scheme}://{self.host}{location}"
        url = f"{location}{'&' if '?' in location else '?'}digest={blob.digest}"
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(blob.size)}
        if blob.data is not None:
            response = self._request("PUT", url, data=blob.data, headers=headers)
        else:
            assert blob.path is not None
            with blob.path.open("rb") as body:  # streamed by requests, never read whole
                response = self._request("PUT", url, data=body, headers=headers)
        if response.status_code == 400 and "DIGEST_INVALID" in response.text:
            raise IntegrityError(
                problems=[
                    Problem(
                        file=str(blob.path or blob.title),
                        message=f"registry says the bytes are not {blob.digest}: changed while publishing?",
                    )
                ]
            )
        if response.status_code != 201:
            raise self._fail(f"uploading {blob.title or blob.digest}", response)

    def _put_manifest(self, plan: ArtifactPlan, tags: Sequence[str]) -> None:
        for tag in tags:
            response = self._request(
                "PUT",
                self._manifest_url(tag),
                data=plan.manifest,
                headers={"Content-Type": MANIFEST_MEDIA_TYPE},
            )
            if response.status_code != 201:
                raise self._fail(f"putting manifest {plan.digest} as {tag}", response)
            said = response.headers.get("Docker-Content-Digest")
            if said and said != plan.digest:
                raise IntegrityError(
                    problems=[
                        Problem(file=self.url(tag), message=f"registry stored {said}, we sent {plan.digest}")
                    ]
                )

    def _chunks(self, response: requests.Response) -> Iterator[bytes]:
        try:
            yield from response.iter_content(chunk_size=_CHUNK)
        except requests.RequestException as exc:
            raise PublishError(
                problems=[
                    Problem(
                        file=self.url(), message=f"reading a blob failed: {exc.__class__.__name__}: {exc}"
                    )
                ]
            ) from exc

    @contextlib.contextmanager
    def _open_blob(self, digest: str) -> Iterator[Iterator[bytes]]:
        response = self._request("GET", self._blob_url(digest), stream=True)
        try:
            if response.status_code != 200:
                raise self._fail(f"reading blob {digest}", response)
            yield self._chunks(response)
        finally:
            response.close()
