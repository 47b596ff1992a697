"""Image references pinned by digest, and verified image pulls over the one registry client.

``GET /v2/<repo>/manifests/<digest>`` with the manifest ``Accept`` types and
``GET /v2/<repo>/blobs/<digest>`` through :mod:`ninfer_release.registry`. Bytes are never
trusted: a manifest or blob whose SHA-256 differs from the digest asked for is an integrity failure.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ninfer_release.digests import is_digest
from ninfer_release.errors import BackendError, InputError, IntegrityError

if TYPE_CHECKING:  # loaded on first use: an image build from a layout on disk never talks HTTP
    from ninfer_release.registry import RegistryError as SharedRegistryError
    from ninfer_release.registry import RegistryOptions

from ._layout import MT_MANIFEST
from ._oci import DOCKER_TO_OCI, INDEX_TYPES, Descriptor, check_bytes

_REPO = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


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


class RegistryClient:
    """Pull-only image access to one registry host, every digest verified.

    A thin adapter over :class:`ninfer_release.registry.RegistryClient` (the one module that talks
    HTTP to registries: credentials, TLS, retries, deadlines, size caps). ``timeout`` (seconds)
    is the read timeout per socket operation; the rest comes from ``options`` or the
    environment (:meth:`RegistryOptions.from_env`).
    """

    def __init__(
        self, registry: str, *, timeout: float = 60.0, options: RegistryOptions | None = None
    ) -> None:
        from ninfer_release.registry import RegistryClient as SharedClient
        from ninfer_release.registry import RegistryOptions

        self.registry = registry
        base = options if options is not None else RegistryOptions.from_env()
        self._client = SharedClient(
            registry, options=dataclasses.replace(base, read_timeout=min(timeout, base.read_timeout))
        )

    def _http_error(self, exc: SharedRegistryError) -> RegistryHTTPError | SharedRegistryError:
        if exc.status is not None:
            return RegistryHTTPError(str(exc), status=exc.status)
        return exc

    def manifest(self, repository: str, digest: str) -> tuple[str, bytes]:
        """Media type and exact bytes of manifest ``digest``, verified.

        Raises:
            BackendError: the registry cannot be reached or refuses (404: :class:`RegistryHTTPError`).
            IntegrityError: digest mismatch.
        """
        from ninfer_release.registry import MANIFEST_ACCEPT
        from ninfer_release.registry import RegistryError as SharedRegistryError

        where = f"{self.registry}/{repository}@{digest}"
        try:
            found = self._client.get_manifest(repository, digest, accept=MANIFEST_ACCEPT)
        except SharedRegistryError as exc:
            raise self._http_error(exc) from None
        if found is None:
            raise RegistryHTTPError(f"{where}: HTTP 404 manifest unknown", status=404)
        check_bytes(found.data, digest, None, where=where)
        media = found.media_type
        if not media or media in ("application/json", "application/octet-stream"):
            media = str(json.loads(found.data).get("mediaType", MT_MANIFEST))
        return media, found.data

    def blob_bytes(self, repository: str, desc: Descriptor) -> bytes:
        """A small blob (config) in memory, verified against ``desc``."""
        from ninfer_release.registry import RegistryError as SharedRegistryError

        try:
            data = self._client.blob_bytes(repository, desc.digest, cap=desc.size)
        except SharedRegistryError as exc:
            raise self._http_error(exc) from None
        check_bytes(data, desc.digest, desc.size, where=f"{self.registry}/{repository} blob")
        return data

    def blob_to(self, repository: str, desc: Descriptor, dest: Path | None) -> None:
        """Stream a blob to ``dest`` (or only hash it when ``dest`` is None), verified against ``desc``.

        Raises:
            IntegrityError: digest or size differs (``dest`` is removed).
        """
        from ninfer_release.registry import RegistryError as SharedRegistryError

        h = hashlib.sha256()
        size = 0
        out = dest.open("wb") if dest is not None else None
        try:
            with self._client.open_blob(repository, desc.digest, size=desc.size) as chunks:
                for chunk in chunks:
                    h.update(chunk)
                    size += len(chunk)
                    if out is not None:
                        out.write(chunk)
        except SharedRegistryError as exc:
            if dest is not None:
                dest.unlink(missing_ok=True)
            raise self._http_error(exc) from None
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
