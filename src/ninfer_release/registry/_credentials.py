"""Registry credentials, found the way docker and CI find them; the secret is never shown.

Order (the first that answers wins):

1. ``NINFER_REGISTRY_USERNAME`` + ``NINFER_REGISTRY_PASSWORD`` (CI secrets), for any host;
2. ``NINFER_REGISTRY_TOKEN`` (any host), or ``GITHUB_TOKEN`` for ``ghcr.io`` only — used as the
   password, with ``GITHUB_ACTOR`` (or ``token``) as the user name, as ``docker login ghcr.io`` does;
3. docker's ``config.json`` (``$DOCKER_CONFIG/config.json``, else ``~/.docker/config.json``):
   ``credHelpers[HOST]``, then ``credsStore`` — both run ``docker-credential-NAME get`` with the
   server on stdin, answering ``{"Username": …, "Secret": …}`` — then ``auths[HOST].auth``
   (base64 ``user:password``) or ``auths[HOST].username``/``password``, else
   ``auths[HOST].identitytoken`` (an OAuth2 refresh token, as ``docker login`` stores one for
   registries whose token service speaks OAuth2: exchanged with ``grant_type=refresh_token``).

Source of the formats: docker/cli ``cli/config/configfile`` and docker/docker-credential-helpers.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ninfer_release.errors import InputError, Problem

_MAX_CONFIG = 1 << 20  # a docker config.json is a few KiB; refuse anything absurd
_MAX_HELPER_ANSWER = 64 * 1024
_HELPER_TIMEOUT = 30.0
_NOT_FOUND = "credentials not found"
#: The user name docker's credential helpers answer for an identity token (docker/cli
#: ``credentials/native_store.go``: ``tokenUsername``); a ``config.json`` ``identitytoken`` too.
IDENTITY_TOKEN_USER = "<token>"  # noqa: S105 - a marker user name, not a secret


@dataclass(frozen=True, kw_only=True)
class Credential:
    """A user name and secret for one registry; ``source`` says where it came from (no secret).

    ``repr`` and ``str`` never show the secret.
    """

    username: str
    secret: str = field(repr=False)
    source: str

    def __str__(self) -> str:
        if self.is_identity_token:
            return f"an identity token (from {self.source})"
        return f"{self.username} (from {self.source})"

    @property
    def is_identity_token(self) -> bool:
        """An OAuth2 refresh token (docker's ``identitytoken``, or a helper answering the user name
        ``<token>``): exchanged at the token service with ``grant_type=refresh_token``, never sent
        as a Basic password."""
        return self.username == IDENTITY_TOKEN_USER

    def basic(self) -> str:
        """The ``Authorization: Basic …`` header value (RFC 7617)."""
        raw = f"{self.username}:{self.secret}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")


def docker_config_path(environ: Mapping[str, str]) -> Path:
    """``$DOCKER_CONFIG/config.json``, else ``~/.docker/config.json``."""
    base = environ.get("DOCKER_CONFIG")
    if base:
        return Path(base) / "config.json"
    home = environ.get("HOME") or str(Path.home())
    return Path(home) / ".docker" / "config.json"


def find_credential(host: str, environ: Mapping[str, str]) -> Credential | None:
    """The credential for registry ``host`` (``HOST[:PORT]``), or ``None`` for anonymous access.

    Raises:
        InputError: half of a user/password pair is set, the docker config is unreadable, or a
            credential helper fails (one line, never the secret).
    """
    user = environ.get("NINFER_REGISTRY_USERNAME")
    password = environ.get("NINFER_REGISTRY_PASSWORD")
    if user or password:
        if not (user and password):
            raise InputError(
                problems=[
                    Problem(
                        file="NINFER_REGISTRY_USERNAME/NINFER_REGISTRY_PASSWORD",
                        message="set both or neither",
                    )
                ]
            )
        return Credential(username=user, secret=password, source="NINFER_REGISTRY_USERNAME/PASSWORD")
    token = environ.get("NINFER_REGISTRY_TOKEN")
    if token:
        return Credential(
            username=environ.get("GITHUB_ACTOR") or "token", secret=token, source="NINFER_REGISTRY_TOKEN"
        )
    token = environ.get("GITHUB_TOKEN")
    if token and host == "ghcr.io":
        return Credential(
            username=environ.get("GITHUB_ACTOR") or "token", secret=token, source="GITHUB_TOKEN"
        )
    return _from_docker_config(host, docker_config_path(environ), environ)


def _server_keys(host: str) -> tuple[str, ...]:
    # docker writes Docker Hub as "https://index.docker.io/v1/" and others as bare HOST[:PORT];
    # older clients wrote "https://HOST" or "http://HOST/v1/".
    if host in ("docker.io", "registry-1.docker.io", "index.docker.io"):
        return ("https://index.docker.io/v1/", "index.docker.io", "docker.io")
    return (host, f"https://{host}", f"http://{host}", f"https://{host}/v1/", f"http://{host}/v1/")


def _from_docker_config(host: str, path: Path, environ: Mapping[str, str]) -> Credential | None:
    """The credential docker's ``config.json`` at ``path`` gives ``host``: its ``credHelpers``
    entry, else ``credsStore``, else its ``auths`` entry (docker/cli ``configfile``)."""
    doc = _read_docker_config(path)
    if doc is None:
        return None
    keys = _server_keys(host)
    helpers = _object_field(doc, "credHelpers", path)
    for key in keys:
        name = helpers.get(key)
        if isinstance(name, str) and name:
            return _from_helper(name, key, path, environ)
    store = doc.get("credsStore")
    if isinstance(store, str) and store:
        found = _from_helper(store, keys[0], path, environ)
        if found is not None:
            return found
    auths = _object_field(doc, "auths", path)
    for key in keys:
        entry = auths.get(key)
        if isinstance(entry, dict):
            return _from_auth_entry(entry, key, path)
    return None


def _read_docker_config(path: Path) -> dict[str, Any] | None:
    """The JSON object at ``path`` (at most :data:`_MAX_CONFIG` bytes), ``None`` when absent.

    Raises:
        InputError: unreadable, too large, not JSON or not an object (one line).
    """
    try:
        with path.open("rb") as f:
            data = f.read(_MAX_CONFIG + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(problems=[Problem(file=str(path), message=f"cannot read: {exc.strerror}")]) from exc
    if len(data) > _MAX_CONFIG:
        raise InputError(problems=[Problem(file=str(path), message=f"larger than {_MAX_CONFIG} bytes")])
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise InputError(problems=[Problem(file=str(path), message=f"not JSON ({exc})")]) from exc
    if not isinstance(doc, dict):
        raise InputError(problems=[Problem(file=str(path), message="not a JSON object")])
    return doc


def _object_field(doc: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    """``doc[key]`` when it is an object, ``{}`` when absent or null.

    Raises:
        InputError: present but not an object.
    """
    value = doc.get(key) or {}
    if not isinstance(value, dict):
        raise InputError(problems=[Problem(file=str(path), field=key, message="not an object")])
    return value


def _from_auth_entry(entry: dict[str, Any], key: str, path: Path) -> Credential | None:
    where = f"auths.{key}"
    auth = entry.get("auth")
    if isinstance(auth, str) and auth:
        try:
            user, sep, secret = base64.b64decode(auth, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            sep, user, secret = "", "", ""
        if not sep or not user:
            raise InputError(
                problems=[
                    Problem(file=str(path), field=f"{where}.auth", message="not base64 of USER:PASSWORD")
                ]
            )
        return Credential(username=user, secret=secret, source=f"{path} {where}")
    name, password = entry.get("username"), entry.get("password")
    if isinstance(name, str) and isinstance(password, str) and name:
        return Credential(username=name, secret=password, source=f"{path} {where}")
    token = entry.get("identitytoken")
    if isinstance(token, str) and token:
        # What ``docker login`` stores for an OAuth2 login: a refresh token for the token service.
        return Credential(username=IDENTITY_TOKEN_USER, secret=token, source=f"{path} {where}.identitytoken")
    return None


def _from_helper(name: str, server: str, path: Path, environ: Mapping[str, str]) -> Credential | None:
    program = f"docker-credential-{name}"
    exe = shutil.which(program, path=environ.get("PATH", os.defpath))
    where = f"{path}: credential helper {program}"
    if exe is None:
        raise InputError(problems=[Problem(file=where, message="not found on PATH")])
    try:
        proc = subprocess.run(
            [exe, "get"],
            input=server.encode(),
            capture_output=True,
            timeout=_HELPER_TIMEOUT,
            check=False,
            env=dict(environ),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(
            problems=[Problem(file=where, message=f"did not answer ({exc.__class__.__name__})")]
        ) from exc
    out = proc.stdout[: _MAX_HELPER_ANSWER + 1]
    if proc.returncode != 0:
        # The helper protocol says "credentials not found in native keychain" on stdout for a miss.
        if _NOT_FOUND in (out + proc.stderr).decode("utf-8", "replace").lower():
            return None
        raise InputError(problems=[Problem(file=where, message=f"'get' exited {proc.returncode}")])
    if len(out) > _MAX_HELPER_ANSWER:
        raise InputError(
            problems=[Problem(file=where, message=f"answer larger than {_MAX_HELPER_ANSWER} bytes")]
        )
    try:
        doc = json.loads(out)
    except ValueError as exc:
        raise InputError(problems=[Problem(file=where, message="answer is not JSON")]) from exc
    user = doc.get("Username") if isinstance(doc, dict) else None
    secret = doc.get("Secret") if isinstance(doc, dict) else None
    if not isinstance(user, str) or not isinstance(secret, str) or not user:
        raise InputError(problems=[Problem(file=where, message="answer lacks Username/Secret strings")])
    return Credential(username=user, secret=secret, source=program)
