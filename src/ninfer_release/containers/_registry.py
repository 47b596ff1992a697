"""A small read-only OCI distribution client (OCI distribution-spec v1.1 "pull"), every digest verified.

``GET /v2/<repo>/manifests/<digest>`` with the manifest ``Accept`` types and
``GET /v2/<repo>/blobs/<digest>``; plain HTTP for loopback hosts (a local mirror), HTTPS otherwise;
anonymous bearer tokens when the registry asks for them (RFC 6750 challenge). Bytes are never
trusted: a manifest or blob whose SHA-256 differs from the digest asked for is an integrity failure.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ninfer_release.errors import BackendError, InputError, IntegrityError
from ninfer_release.hashing import CHUNK

from ._oci import DOCKER_TO_OCI, INDEX_TYPES, MT_MANIFEST, Descriptor, check_bytes, is_digest

ACCEPT = ", ".join(
    [
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    ]
)
_REPO = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


class RegistryHTTPError(BackendError):
    """The registry answered with an HTTP error (``status``), e.g. 404 manifest unknown."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, kw_only=True)
class ImageReference:
    """A parsed image reference ``registry/repository[:tag]@sha256:<hex>`` (digest required)."""

    registry: str
    repository: str
    tag: str | None
    digest: str

    def __str__(self) -> str:
        tag = f":{self.tag}" if self.tag else ""
        return f"{self.registry}/{self.repository}{tag}@{self.digest}"

    def on(self, registry: str) -> ImageReference:
        """The same repository path and digest on another registry host (a mirror)."""
        return ImageReference(registry=registry, repository=self.repository, tag=self.tag, digest=self.digest)


def parse_reference(text: str, *, where: str = "image reference") -> ImageReference:
    """Parse ``text``; a reference without a ``@sha256:`` digest (a bare tag) is refused.

    Raises:
        InputError: malformed, or not pinned by digest.
    """
    name, at, digest = text.partition("@")
    if not at:
        raise InputError(
            f"{where}: {text!r} is not pinned by digest; a tag alone can move (use NAME@sha256:...)"
        )
    if not is_digest(digest):
        raise InputError(f"{where}: {digest!r} is not a full sha256:<64 hex> digest")
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, rest
    else:
        registry, path = "docker.io", name
        if "/" not in path:
            path = f"library/{path}"
    tag: str | None = None
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        path, _, tag = path.rpartition(":")
        if not _TAG.match(tag):
            raise InputError(f"{where}: tag {tag!r} is malformed")
    if not _REPO.match(path):
        raise InputError(f"{where}: repository {path!r} is malformed")
    return ImageReference(registry=registry, repository=path, tag=tag, digest=digest)


def _is_loopback(host: str) -> bool:
    return host.rsplit(":", 1)[0] in LOOPBACK or host in LOOPBACK


class RegistryClient:
    """Pull-only registry access for one host; ``timeout`` in seconds per request."""

    def __init__(self, registry: str, *, timeout: float = 60.0) -> None:
        self.registry = registry
        api_host = "registry-1.docker.io" if registry == "docker.io" else registry
        self.base = f"{'http' if _is_loopback(registry) else 'https'}://{api_host}"
        self.timeout = timeout
        self._token: str | None = None

    def _open(self, path: str, *, accept: str | None = None) -> BinaryIO:
        url = self.base + path
        for attempt in range(2):
            headers = {"User-Agent": "ninfer-release"}
            if accept:
                headers["Accept"] = accept
            if self._token:
                headers["Authorization"] = f"Bearer {self._token}"
            req = urllib.request.Request(url, headers=headers)  # noqa: S310 - http(s) only, built above
            try:
                resp: BinaryIO = urllib.request.urlopen(req, timeout=self.timeout)  # noqa: S310
                return resp
            except urllib.error.HTTPError as exc:
                challenge = exc.headers.get("WWW-Authenticate", "") if exc.headers else ""
                if exc.code == 401 and attempt == 0 and challenge.lower().startswith("bearer "):
                    self._token = self._anonymous_token(challenge)
                    continue
                detail = exc.read(400).decode("utf-8", "replace").strip().replace("\n", " ")
                raise RegistryHTTPError(
                    f"{url}: HTTP {exc.code} {exc.reason}: {detail}", status=exc.code
                ) from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise BackendError(f"{url}: registry unreachable ({reason})") from None
        raise BackendError(f"{url}: authorization failed")  # pragma: no cover - loop always returns/raises

    def _anonymous_token(self, challenge: str) -> str:
        params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        realm = params.pop("realm", "")
        if not realm.startswith("https://") and not realm.startswith("http://127.0.0.1"):
            raise BackendError(f"{self.registry}: token realm {realm!r} is not https")
        url = realm + "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as resp:  # noqa: S310
                doc = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise BackendError(f"{realm}: anonymous token request failed ({exc})") from None
        token = doc.get("token") or doc.get("access_token")
        if not isinstance(token, str):
            raise BackendError(f"{realm}: no token in answer")
        return token

    def manifest(self, repository: str, digest: str) -> tuple[str, bytes]:
        """Media type and exact bytes of manifest ``digest``, verified.

        Raises:
            BackendError: the registry cannot be reached or refuses. IntegrityError: digest mismatch.
        """
        with self._open(f"/v2/{repository}/manifests/{digest}", accept=ACCEPT) as resp:
            media = str(getattr(resp, "headers", {}).get("Content-Type", "")).split(";")[0].strip()
            data = resp.read()
        check_bytes(data, digest, None, where=f"{self.registry}/{repository}@{digest}")
        if not media or media in ("application/json", "application/octet-stream"):
            media = str(json.loads(data).get("mediaType", MT_MANIFEST))
        return media, data

    def blob_bytes(self, repository: str, desc: Descriptor) -> bytes:
        """A small blob (config) in memory, verified against ``desc``."""
        with self._open(f"/v2/{repository}/blobs/{desc.digest}") as resp:
            data = resp.read(desc.size + 1)
        check_bytes(data, desc.digest, desc.size, where=f"{self.registry}/{repository} blob")
        return data

    def blob_to(self, repository: str, desc: Descriptor, dest: Path | None) -> None:
        """Stream a blob to ``dest`` (or only hash it when ``dest`` is None), verified against ``desc``.

        Raises:
            IntegrityError: digest or size differs (``dest`` is removed).
        """
        h = hashlib.sha256()
        size = 0
        out = dest.open("wb") if dest is not None else None
        try:
            with self._open(f"/v2/{repository}/blobs/{desc.digest}") as resp:
                while chunk := resp.read(CHUNK):
                    h.update(chunk)
                    size += len(chunk)
                    if out is not None:
                        out.write(chunk)
        finally:
            if out is not None:
                out.close()
        got = "sha256:" + h.hexdigest()
        if got != desc.digest or size != desc.size:
            if dest is not None:
                dest.unlink(missing_ok=True)
            raise IntegrityError(
                f"{self.registry}/{repository}: blob has digest {got} ({size} bytes), "
                f"expected {desc.digest} ({desc.size})"
            )


def oci_media_type(media: str) -> str:
    """The OCI media type for a docker schema-2 one (same bytes), else ``media`` unchanged."""
    return DOCKER_TO_OCI.get(media, media)


def is_index(media: str) -> bool:
    """True for an OCI image index or a docker manifest list."""
    return media in INDEX_TYPES
