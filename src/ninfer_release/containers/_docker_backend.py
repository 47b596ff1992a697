"""The docker backend (docker SDK): load, smoke-run with ``--network none``, push (DESIGN.md §7).

The only module of the package that imports ``docker``. The Engine API answers ``/images/load``
with HTTP 200 and reports failure as an ``errorDetail`` line inside the progress stream; every
stream is read to the end and any ``errorDetail``/``error`` is a :class:`BackendError` (C39,
docker/docker-py#3161).

The push does not go through the engine: the built OCI layout's exact blobs and manifest are
uploaded with the one registry client (:mod:`ninfer_release.registry`: docker's credentials,
TLS, chunked uploads, retries, deadlines), so the pushed digest *is* the built manifest digest
(an engine re-encodes the manifest) and the push needs no engine-side login. Nothing is recorded
as pushed unless the registry confirmed the manifest.

``docker`` (and ``requests`` under it) are imported when a backend is used, not when the package
is imported: they cost about half a second, which every other command would pay.
"""

from __future__ import annotations

import io
import logging
import tarfile
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ninfer_release.errors import BackendError, IntegrityError

from ._build import LABEL_PREFIX, ImageBuildResult
from ._recipe import SmokeSpec

log = logging.getLogger(__name__)

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
#: The label naming the checkpoint mount (set by the build from the recipe).
CHECKPOINT_MOUNT_LABEL = LABEL_PREFIX + "checkpoint-mount"


@dataclass(frozen=True, kw_only=True)
class PushTarget:
    """Where to push: ``repository`` (``HOST[:PORT]/PATH``) and ``tag``."""

    repository: str
    tag: str

    @classmethod
    def parse(cls, text: str) -> PushTarget:
        """Parse ``HOST[:PORT]/PATH:TAG``.

        Raises:
            BackendError: no tag given (a push needs one).
        """
        head, sep, tag = text.rpartition(":")
        if not sep or "/" in tag or not head:
            raise BackendError(f"--push {text}: give REGISTRY/REPOSITORY:TAG")
        return cls(repository=head, tag=tag)

    def __str__(self) -> str:
        return f"{self.repository}:{self.tag}"


def docker_host(env: Mapping[str, str], given: str | None = None) -> str:
    """The Engine API URL: ``given``, else ``DOCKER_HOST`` from ``env``, else the default socket."""
    return given or env.get("DOCKER_HOST") or DEFAULT_DOCKER_HOST


def _check_stream(chunks: Iterable[Any], *, what: str) -> list[dict[str, Any]]:
    """Read a JSON progress stream to its end; raise on the first ``errorDetail``/``error`` (C39)."""
    seen: list[dict[str, Any]] = []
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        seen.append(chunk)
        detail = chunk.get("errorDetail")
        if detail or chunk.get("error"):
            message = (detail or {}).get("message") if isinstance(detail, dict) else None
            raise BackendError(f"{what}: {message or chunk.get('error')}")
    return seen


class DockerBackend:
    """Deliver a built image through a docker engine: load → verify id → smoke-run → push.

    ``base_url`` is the Engine API (``unix://...`` or ``tcp://127.0.0.1:PORT``); ``timeout`` in
    seconds per API call; ``push`` is optional.
    """

    name = "docker"

    def __init__(
        self,
        *,
        base_url: str,
        smoke: SmokeSpec | None,
        push: PushTarget | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.base_url = base_url
        self.smoke = smoke
        self.push = push
        self.timeout = timeout

    def _client(self) -> Any:
        import docker
        import requests.exceptions

        try:
            return docker.APIClient(base_url=self.base_url, version="auto", timeout=int(self.timeout))
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise BackendError(f"docker engine at {self.base_url} is not reachable: {_short(exc)}") from None

    def deliver(self, result: ImageBuildResult) -> Mapping[str, Any]:
        """Load ``result.archive`` into the engine and smoke-run / push it; returns facts to record.

        Raises:
            BackendError: the engine is unreachable, or load / run / push failed (also when the
                failure is reported inside a 200 stream, C39).
            IntegrityError: the engine's image id is not our config digest.
        """
        import docker.errors
        import requests.exceptions

        api = self._client()
        try:
            return self._deliver(api, result)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise BackendError(f"docker engine at {self.base_url}: {_short(exc)}") from None
        finally:
            api.close()

    def _deliver(self, api: Any, result: ImageBuildResult) -> Mapping[str, Any]:
        with result.archive.open("rb") as f:
            loaded = _check_stream(api.load_image(f), what=f"docker load {result.archive.name}")
        messages = [str(c.get("stream", "")).strip() for c in loaded if c.get("stream")]
        local = result.repo_tags[0]
        image_id = str(api.inspect_image(local).get("Id", ""))
        if image_id != result.config_digest:
            raise IntegrityError(
                f"docker loaded {local} as {image_id}, expected config digest {result.config_digest}"
            )
        facts: dict[str, Any] = {"name": self.name, "image_id": image_id, "loaded": messages, "tag": local}
        if self.smoke is not None:
            facts["smoke"] = self._smoke(api, image_id, self.smoke, result)
        if self.push is not None:
            facts["pushed"] = push_layout(result, self.push)
        return facts

    def _smoke(self, api: Any, image_id: str, smoke: SmokeSpec, result: ImageBuildResult) -> dict[str, Any]:
        """Run ``smoke.args`` with network mode none, once on an anonymous and once on a named volume
        at the checkpoint mount; each run must exit 0, print ``smoke.expect`` and (with a
        ``checkpoint_probe``) leave that file in the mount owned by the image user (issue 8 §4)."""
        mount = result.labels.get(CHECKPOINT_MOUNT_LABEL, "")
        user = str((api.inspect_image(image_id).get("Config") or {}).get("User") or "0")
        uid = int(user.partition(":")[0]) if user.partition(":")[0].isdigit() else -1
        runs = [
            self._smoke_run(api, image_id, smoke, mount, uid, volume=kind) for kind in ("anonymous", "named")
        ]
        return {
            "args": list(smoke.args),
            "exit_code": max(r["exit_code"] for r in runs),  # every run exited 0, else it raised
            "network": "none",
            "output": runs[0]["output"],
            "checkpoint_mount": mount,
            "user": user,
            "volumes": [{k: v for k, v in r.items() if k != "output"} for r in runs],
        }

    def _smoke_run(
        self, api: Any, image_id: str, smoke: SmokeSpec, mount: str, uid: int, *, volume: str
    ) -> dict[str, Any]:
        import docker.errors

        named = f"ninfer-smoke-{uuid.uuid4().hex[:16]}" if volume == "named" else None
        if named is not None:
            api.create_volume(name=named)
        binds = {named: {"bind": mount, "mode": "rw"}} if named is not None and mount else None
        host_config = api.create_host_config(network_mode="none", binds=binds)
        cid = ""
        try:
            container = api.create_container(
                image=image_id,
                command=list(smoke.args),
                host_config=host_config,
                network_disabled=True,
                volumes=[mount] if named is not None and mount else None,
            )
            cid = container["Id"]
            api.start(cid)
            status = api.wait(cid, timeout=int(self.timeout))
            code = int(status.get("StatusCode", -1))
            output = api.logs(cid, stdout=True, stderr=True).decode("utf-8", "replace")
            last = output.strip().splitlines()[-1:] or [""]
            where = f"smoke run {' '.join(smoke.args)} ({volume} volume at {mount})"
            if code != 0:
                raise BackendError(f"{where} exited {code}: {last[0]}")
            if smoke.expect and smoke.expect not in output:
                raise BackendError(f"{where}: output lacks {smoke.expect!r}: {last[0]}")
            record: dict[str, Any] = {"volume": volume, "exit_code": code, "output": output.strip()}
            if smoke.checkpoint_probe and mount:
                owner = _probe_owner(api, cid, f"{mount.rstrip('/')}/{smoke.checkpoint_probe}", where=where)
                if owner != uid:
                    raise BackendError(
                        f"{where}: {smoke.checkpoint_probe} is owned by uid {owner}, not {uid}"
                    )
                record.update(probe=smoke.checkpoint_probe, probe_uid=owner)
            return record
        finally:
            try:
                if cid:
                    api.remove_container(cid, force=True, v=True)  # v: the anonymous volume too
                if named is not None:
                    api.remove_volume(named, force=True)
            except docker.errors.DockerException as exc:  # cleanup must not hide the real outcome
                log.warning("could not remove smoke container/volume %s: %s", cid or named, _short(exc))


def push_layout(result: ImageBuildResult, target: PushTarget) -> dict[str, Any]:
    """Upload ``result``'s layout (layers, config, then the manifest under ``target.tag``) with the
    registry client; returns ``{"reference": "REPO:TAG@DIGEST", "digest": DIGEST}``.

    Raises:
        BackendError: the registry refused or failed (one line, exit 6); the registry stored a
            manifest digest other than the built one.
    """
    from ninfer_release.registry import BlobSource, RegistryClient, RegistryError

    from ._layout import MT_MANIFEST, blob_path
    from ._oci import parse_manifest

    host, _, repo = target.repository.partition("/")
    data = blob_path(result.layout, result.manifest_digest).read_bytes()
    parts = parse_manifest(data, where=f"{result.layout}: {result.manifest_digest}")
    config, layers = parts.config, parts.layers
    client = RegistryClient(host)
    try:
        for desc in (*layers, config):
            source = BlobSource(
                digest=desc.digest, size=desc.size, path=blob_path(result.layout, desc.digest)
            )
            client.push_blob(repo, source)
        put = client.put_manifest(repo, target.tag, data, MT_MANIFEST)
    except RegistryError as exc:
        raise BackendError(f"push {target}: {exc}") from None
    finally:
        client.close()
    if put.digest != result.manifest_digest:  # pragma: no cover - put_manifest hashes our bytes
        raise BackendError(f"push {target}: stored {put.digest}, built {result.manifest_digest}")
    return {"reference": f"{target}@{put.digest}", "digest": put.digest}


#: Largest probe archive read back from a smoke container (the probe is a one-line file).
MAX_PROBE_ARCHIVE = 1 << 20


def _probe_owner(api: Any, cid: str, path: str, *, where: str) -> int:
    """The uid owning ``path`` in the stopped container ``cid`` (read with the archive API).

    Raises:
        BackendError: the file is absent (the mount was not writable) or the archive is unreadable.
    """
    import docker.errors

    try:
        chunks, _stat = api.get_archive(cid, path)
        data = bytearray()
        for chunk in chunks:
            data += chunk
            if len(data) > MAX_PROBE_ARCHIVE:
                raise BackendError(f"{where}: {path} is larger than {MAX_PROBE_ARCHIVE} bytes")
    except docker.errors.NotFound:
        raise BackendError(
            f"{where}: wrote no {path}; the checkpoint mount is not writable by the image user"
        ) from None
    try:
        with tarfile.open(fileobj=io.BytesIO(bytes(data)), mode="r:") as tar:
            member = tar.next()
    except tarfile.TarError as exc:
        raise BackendError(f"{where}: unreadable archive of {path}: {exc}") from None
    if member is None or not member.isfile():
        raise BackendError(f"{where}: {path} is not a regular file")
    return member.uid


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
