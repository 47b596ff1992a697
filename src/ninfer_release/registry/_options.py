"""How the registry client connects: trust, insecure hosts, timeouts, retries, upload sizes.

Every value has a documented default (docs/publishing.md, "Registry client") and an environment
variable, so CI and tests configure the client without code; the CLI's ``--ca-file`` and
``--insecure-registry`` override the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ninfer_release.errors import InputError, Problem

MiB = 1 << 20

#: Where docker (and podman) look for per-registry CA files: ``DIR/HOST:PORT/ca.crt``.
DEFAULT_CERTS_DIRS: tuple[Path, ...] = (
    Path("/etc/docker/certs.d"),
    Path("/etc/containers/certs.d"),
    Path("~/.config/containers/certs.d").expanduser(),
)


@dataclass(frozen=True, kw_only=True)
class RegistryOptions:
    """Connection settings of one :class:`~ninfer_release.registry.RegistryClient`.

    Times are seconds, sizes bytes. ``deadline`` bounds everything one client does (a whole
    publish or pull, all retries included); ``request_deadline`` bounds one small exchange
    (ping, token, manifest, HEAD, upload start) with its retries. ``retries`` is how many times a
    transient failure (connection error, 429, 5xx) is retried, with exponential backoff
    ``backoff * 2**n`` plus as much random jitter, at most ``backoff_max`` per wait.
    Blobs up to ``monolithic_max`` go in one ``PUT``; larger ones (or after a 413) in
    ``chunk_size`` ``PATCH`` requests.
    """

    ca_file: Path | None = None
    insecure_hosts: frozenset[str] = frozenset()
    certs_dirs: tuple[Path, ...] = DEFAULT_CERTS_DIRS
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    request_deadline: float = 120.0
    deadline: float = 3600.0
    retries: int = 4
    backoff: float = 0.5
    backoff_max: float = 10.0
    chunk_size: int = 1024 * MiB
    monolithic_max: int = 32 * MiB
    #: Size caps of what is read into memory (manifest/index, config, token answer, error body).
    max_manifest: int = 4 * MiB
    max_config: int = 8 * MiB
    max_token: int = 64 * 1024
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        ca_file: str | None = None,
        insecure_hosts: tuple[str, ...] = (),
    ) -> RegistryOptions:
        """Options from ``NINFER_REGISTRY_*`` variables (``os.environ`` by default), then arguments.

        Variables: ``NINFER_REGISTRY_CA_FILE``, ``NINFER_INSECURE_REGISTRY`` (comma-separated
        ``HOST[:PORT]``), ``NINFER_CERTS_D`` (``:``-separated dirs), ``NINFER_REGISTRY_CONNECT_TIMEOUT``,
        ``NINFER_REGISTRY_READ_TIMEOUT``, ``NINFER_REGISTRY_REQUEST_DEADLINE``,
        ``NINFER_REGISTRY_DEADLINE``, ``NINFER_REGISTRY_RETRIES``, ``NINFER_REGISTRY_BACKOFF``,
        ``NINFER_REGISTRY_CHUNK_SIZE``, ``NINFER_REGISTRY_MONOLITHIC_MAX``.

        Raises:
            InputError: a variable is not a positive number (one line naming it, exit 4).
        """
        env = dict(os.environ if environ is None else environ)
        base = cls(environ=env)
        numbers: dict[str, float | int] = {}
        for name, attr, kind in _NUMERIC:
            text = env.get(name)
            if text is None or text == "":
                continue
            try:
                value = kind(text)
            except ValueError:
                value = -1
            if value < 0 or (value == 0 and attr != "retries"):
                raise InputError(
                    problems=[Problem(file=name, message=f"{text!r} is not a positive {kind.__name__}")]
                )
            numbers[attr] = value
        insecure = {h.strip() for h in env.get("NINFER_INSECURE_REGISTRY", "").split(",") if h.strip()}
        insecure.update(insecure_hosts)
        ca = ca_file or env.get("NINFER_REGISTRY_CA_FILE") or None
        certs_d = env.get("NINFER_CERTS_D")
        out = replace(
            base,
            ca_file=Path(ca) if ca else None,
            insecure_hosts=frozenset(insecure),
            **numbers,  # type: ignore[arg-type]
        )
        if certs_d:
            out = replace(out, certs_dirs=tuple(Path(p) for p in certs_d.split(":") if p))
        if out.ca_file is not None and not out.ca_file.is_file():
            raise InputError(problems=[Problem(file=str(out.ca_file), message="CA file does not exist")])
        return out


_NUMERIC: tuple[tuple[str, str, type[int] | type[float]], ...] = (
    ("NINFER_REGISTRY_CONNECT_TIMEOUT", "connect_timeout", float),
    ("NINFER_REGISTRY_READ_TIMEOUT", "read_timeout", float),
    ("NINFER_REGISTRY_REQUEST_DEADLINE", "request_deadline", float),
    ("NINFER_REGISTRY_DEADLINE", "deadline", float),
    ("NINFER_REGISTRY_RETRIES", "retries", int),
    ("NINFER_REGISTRY_BACKOFF", "backoff", float),
    ("NINFER_REGISTRY_CHUNK_SIZE", "chunk_size", int),
    ("NINFER_REGISTRY_MONOLITHIC_MAX", "monolithic_max", int),
)
