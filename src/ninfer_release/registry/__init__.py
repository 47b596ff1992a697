"""The one registry client (foundation layer): every HTTP exchange with an OCI registry.

Used by ``releases`` (publish, pull for ``verify oci://…``, supersession markers) and
``containers`` (carry by digest, base images, pushing built images). ``requests``/``urllib3``
is imported here and nowhere else in the package (import-linter contract). See
docs/publishing.md, "Registry client", for credentials, TLS, timeouts, retries and uploads.
"""

from __future__ import annotations

from ninfer_release.progress import Progress
from ninfer_release.registry._client import (
    MANIFEST_ACCEPT,
    BlobSource,
    Manifest,
    RegistryClient,
)
from ninfer_release.registry._credentials import Credential, docker_config_path, find_credential
from ninfer_release.registry._options import RegistryOptions
from ninfer_release.registry._referrers import ArtifactPush, fallback_tag, push_artifact, referrers_of
from ninfer_release.registry._transport import Challenge, RegistryError
from ninfer_release.transport import is_loopback_host

__all__ = [
    "MANIFEST_ACCEPT",
    "ArtifactPush",
    "BlobSource",
    "Challenge",
    "Credential",
    "Manifest",
    "Progress",
    "RegistryClient",
    "RegistryError",
    "RegistryOptions",
    "docker_config_path",
    "fallback_tag",
    "find_credential",
    "is_loopback_host",
    "push_artifact",
    "referrers_of",
]
