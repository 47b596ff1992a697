"""Shared fixtures: the CLI runner and the real services (docker engine, OCI registry).

Tests that need a service or an external tool *skip* with a stated reason when it is absent.
With ``NINFER_REQUIRE_SERVICES=1`` (set by ``.ci/run``) every such skip becomes a failure, so CI
can never go green without running them.

Services are started by the test session itself when their binaries exist, each with private
sockets/dirs under a temp dir, listening on loopback only, and stopped by PID at the end:

* docker engine: ``dockerd --bridge=none --iptables=false ...`` (or ``NINFER_DOCKER_HOST``);
* registry: Debian's ``docker-registry`` on ``127.0.0.1:<free port>`` (or ``NINFER_REGISTRY``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

#: TLS / htpasswd / token-auth registries and nginx (started on first use, once per session).
pytest_plugins = ["registry_fixtures"]

REPO = Path(__file__).resolve().parent.parent
REQUIRE = os.environ.get("NINFER_REQUIRE_SERVICES") == "1"
# Builds in tests use a deflate cache of their own (packaging.DeflateCache), never the user's.
os.environ.setdefault("NINFER_DEFLATE_CACHE", tempfile.mkdtemp(prefix="ninfer-test-deflate-cache-"))


def unavailable(reason: str) -> None:
    """Skip with ``reason``, or fail when CI requires every service-backed test to run."""
    if REQUIRE:
        pytest.fail(f"required by NINFER_REQUIRE_SERVICES=1 but unavailable: {reason}")
    pytest.skip(reason)


def need_tool(name: str) -> str:
    """Path of an external tool on PATH, or skip/fail naming it."""
    path = shutil.which(name)
    if path is None:
        unavailable(f"{name} is not installed (apt-get install it; .ci/run does)")
    assert path is not None
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def registry() -> Iterator[str]:
    """``HOST:PORT`` of a plain-HTTP OCI registry on loopback (Debian's docker-registry)."""
    given = os.environ.get("NINFER_REGISTRY")
    if given:
        yield given
        return
    binary = shutil.which("docker-registry")
    if binary is None:
        unavailable("docker-registry is not installed (apt-get install docker-registry; .ci/run does)")
    assert binary is not None
    work = Path(tempfile.mkdtemp(prefix="ninfer-registry-"))
    port = _free_port()
    config = work / "config.yml"
    config.write_text(
        "version: 0.1\n"
        "log:\n  level: error\n"
        f"storage:\n  filesystem:\n    rootdirectory: {work / 'data'}\n  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )
    log = (work / "registry.log").open("wb")
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = (work / "registry.log").read_text()[-500:]
                    unavailable(f"docker-registry did not start: {tail}")
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="session")
def docker_host() -> Iterator[str]:
    """``unix://`` URL of a docker engine started for this session (or ``NINFER_DOCKER_HOST``)."""
    given = os.environ.get("NINFER_DOCKER_HOST")
    if given:
        yield given
        return
    binary = shutil.which("dockerd")
    if binary is None:
        unavailable("dockerd is not installed (apt-get install docker.io; .ci/run does)")
    if os.geteuid() != 0:
        unavailable("dockerd needs root here")
    assert binary is not None
    work = Path(tempfile.mkdtemp(prefix="ninfer-dockerd-", dir="/tmp"))
    sock = work / "docker.sock"
    log = (work / "dockerd.log").open("wb")
    proc = subprocess.Popen(
        [
            binary,
            "--bridge=none",
            "--iptables=false",
            "--ip6tables=false",
            "--ip-masq=false",
            "--ip-forward=false",
            f"--host=unix://{sock}",
            f"--data-root={work / 'data'}",
            f"--exec-root={work / 'exec'}",
            f"--pidfile={work / 'dockerd.pid'}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            ok = (
                sock.exists()
                and subprocess.run(
                    ["docker", "-H", f"unix://{sock}", "version"], capture_output=True, check=False
                ).returncode
                == 0
            )
            if ok:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                unavailable(f"dockerd did not start: {(work / 'dockerd.log').read_text()[-800:]}")
            time.sleep(0.3)
        yield f"unix://{sock}"
    finally:
        _stop(proc)
        log.close()
        subprocess.run(["umount", "-R", str(work / "data")], capture_output=True, check=False)
        shutil.rmtree(work, ignore_errors=True)


class RunCli(Protocol):
    """The ``run_cli`` fixture: CLI arguments (and extra environment) -> (exit code, stdout, stderr)."""

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]: ...


@pytest.fixture
def run_cli() -> RunCli:
    """Run the CLI in-process via :func:`ninfer_release.cli.main`; returns (exit code, stdout, stderr)."""
    import contextlib
    import io

    from ninfer_release.cli import main

    def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        old_env = dict(os.environ)
        if env:
            os.environ.update(env)
        code = 0
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    main(list(args))
                except SystemExit as exc:
                    code = int(exc.code or 0) if not isinstance(exc.code, str) else 1
        finally:
            os.environ.clear()
            os.environ.update(old_env)
        return code, out.getvalue(), err.getvalue()

    return _run
