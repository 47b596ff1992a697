"""The docker backend (docker SDK): load, tag, smoke-run with ``--network none``, push (DESIGN.md §7).

The only module of the package that imports ``docker``. The Engine API answers ``/images/load``
and ``/images/{name}/push`` with HTTP 200 and reports failure as an ``errorDetail`` line inside
the progress stream; every stream is read to the end and any ``errorDetail``/``error`` is a
:class:`BackendError` (C39, docker/docker-py#3161). Nothing is recorded as pushed unless the
stream ended with the pushed digest and no error.

``docker`` (and ``requests`` under it) are imported when a backend is used, not when the package
is imported: they cost about half a second, which every other command would pay.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ninfer_release.errors import BackendError, IntegrityError

from ._build import ImageBuildResult
from ._recipe import SmokeSpec

log = logging.getLogger(__name__)

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"


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
    """Deliver a built image through a docker engine: load → verify id → tag → smoke-run → push.

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
            facts["smoke"] = self._smoke(api, image_id, self.smoke)
        if self.push is not None:
            facts["pushed"] = self._push(api, image_id, self.push)
        return facts

    def _smoke(self, api: Any, image_id: str, smoke: SmokeSpec) -> dict[str, Any]:
        import docker.errors

        host_config = api.create_host_config(network_mode="none")
        container = api.create_container(
            image=image_id, command=list(smoke.args), host_config=host_config, network_disabled=True
        )
        cid = container["Id"]
        try:
            api.start(cid)
            status = api.wait(cid, timeout=int(self.timeout))
            code = int(status.get("StatusCode", -1))
            output = api.logs(cid, stdout=True, stderr=True).decode("utf-8", "replace")
        finally:
            try:
                api.remove_container(cid, force=True)
            except docker.errors.DockerException as exc:  # cleanup must not hide the real outcome
                log.warning("could not remove smoke container %s: %s", cid, _short(exc))
        last = output.strip().splitlines()[-1:] or [""]
        if code != 0:
            raise BackendError(f"smoke run {' '.join(smoke.args)} exited {code}: {last[0]}")
        if smoke.expect and smoke.expect not in output:
            raise BackendError(f"smoke run output lacks {smoke.expect!r}: {last[0]}")
        return {"args": list(smoke.args), "exit_code": code, "network": "none", "output": output.strip()}

    def _push(self, api: Any, image_id: str, target: PushTarget) -> dict[str, Any]:
        api.tag(image_id, target.repository, target.tag, force=True)
        chunks = _check_stream(
            api.push(target.repository, tag=target.tag, stream=True, decode=True),
            what=f"docker push {target}",
        )
        digest = ""
        for c in chunks:
            aux = c.get("aux")
            if isinstance(aux, dict) and aux.get("Digest"):
                digest = str(aux["Digest"])
        if not digest:
            raise BackendError(f"docker push {target}: the engine reported no pushed digest")
        return {"reference": f"{target}@{digest}", "digest": digest}


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
