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
from types import CodeType
from typing import Protocol

import pytest

#: TLS / htpasswd / token-auth registries and nginx (started on first use, once per session).
pytest_plugins = ["registry_fixtures"]

REPO = Path(__file__).resolve().parent.parent
REQUIRE = os.environ.get("NINFER_REQUIRE_SERVICES") == "1"
#: Temporary directories this session made for itself; removed when it ends (pytest_unconfigure).
_SESSION_DIRS: list[str] = []


def _session_dir(prefix: str) -> str:
    path = tempfile.mkdtemp(prefix=prefix)
    _SESSION_DIRS.append(path)
    return path


# Builds in tests use a deflate cache of their own (packaging.DeflateCache), never the user's,
# and a key of their own that signs its records (never the user's ~/.local/state one). Made only
# when not given (subprocesses of the session inherit them), removed with the session.
if "NINFER_DEFLATE_CACHE" not in os.environ:
    os.environ["NINFER_DEFLATE_CACHE"] = _session_dir("ninfer-test-deflate-cache-")
if "NINFER_DEFLATE_CACHE_KEY" not in os.environ:
    os.environ["NINFER_DEFLATE_CACHE_KEY"] = str(
        Path(_session_dir("ninfer-test-deflate-key-")) / "deflate-cache.key"
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the session's own deflate cache and key directories (they leaked, two per run)."""
    import shutil

    for path in _SESSION_DIRS:
        shutil.rmtree(path, ignore_errors=True)


# --- the fast unit subset: ./dev test -m "not slow" (README "Tests") ------------------------------
#
# A test is ``slow`` when it starts a service (docker engine, registry, nginx, a TLS CA), builds the
# sample inputs, release, sets or images, runs the console script in a subprocess, or otherwise
# takes more than about 0.5 s. It is marked here, from what it uses, so a new test is classified
# without a decorator; SLOW_TESTS names the rest, measured with ``--durations``.

#: Markers of tests that need a service.
SLOW_MARKERS = frozenset({"docker", "registry"})
#: Fixtures (any scope, direct or through other fixtures) that start a service or build samples.
SLOW_FIXTURES = frozenset(
    {
        "registry", "docker_host", "tls_registry", "token_registry", "capped_proxy", "test_ca",
        "nginx", "samples", "world", "outcomes", "hostile_set_factory", "built", "mirrored",
        "inputs", "sample_pes", "wheel_dlls", "wheel_cache",
    }
)  # fmt: skip
#: Helpers whose call builds the sample inputs, release or sets, or runs the console script.
SLOW_CALLS = frozenset(
    {
        "samples", "release_out", "release_manifest", "qualified_out", "write_receipts", "run_nr",
        "start_nr", "nr_command", "subprocess", "make_samples", "make_sample_base_layout",
        "make_sample_rtx5090_inputs", "fetch_samples", "run_bounded", "hostile_sets",
    }
)  # fmt: skip
#: Parameter values that select a service-backed variant (a registry fetched with getfixturevalue).
SLOW_PARAMS = frozenset({"oci"})
#: Tests over ~0.5 s that use none of the above (a module, ``module::test`` for all its parameters
#: or ``module::test[params]`` for one), measured with ``./dev test -m "not slow" --durations=30``:
#: local servers with timeouts and retries, wheel downloads, large generated inputs, the stand-ins.
SLOW_TESTS = frozenset(
    {
        "test_http_fetch_unit",
        "test_registry_auth_tls",
        "test_registry_uploads",
        "test_samples_standins",
        "test_containers_build::test_sample_layout_step_writes_base_and_inputs",
        "test_containers_layers::test_parallel_gzip_bytes_do_not_depend_on_thread_count",
        "test_cyclonedx::test_generation_and_validation_are_linear_in_components",
        "test_messages::test_unreachable_registry_is_one_line_without_http_library_internals",
        "test_pe::test_not_a_pe_is_an_input_error_naming_the_file",
        "test_profiles::test_yaml_refuses_unsafe_or_malformed_input[content11-more than 20000 nodes]",
        "test_publish_backends::test_registry_unreachable_is_one_line_after_bounded_retries",
        "test_receipts_hostile::test_special_files_are_refused_within_a_second",
        "test_render::test_cli_render_json_and_overwrite_rules",
        "test_samples::test_download_failure_is_input_error_naming_the_package",
        "test_samples::test_download_into_empty_cache_verifies_the_pin",
        "test_zip_reader::test_ratio_bomb_reported_not_inflated",
        "test_zip_scan::test_members_spanning_many_read_blocks",
        "test_zip_writer::test_whole_plan_uses_its_deflate_level",
    }
)


TESTS_DIR = Path(__file__).resolve().parent


def _names_used(code: CodeType) -> set[str]:
    """Global and attribute names a function's code refers to, nested lambdas and functions included."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= _names_used(const)
    return names


def _calls_slow(function: object, seen: set[CodeType]) -> bool:
    """Whether ``function`` (a test, a fixture or a helper of tests/) refers to a SLOW_CALLS helper,
    directly or through the helpers of tests/ it calls."""
    code = getattr(function, "__code__", None)
    if not isinstance(code, CodeType) or code in seen or not code.co_filename.startswith(str(TESTS_DIR)):
        return False
    seen.add(code)
    names = _names_used(code)
    if names & SLOW_CALLS:
        return True
    scope: dict[str, object] = getattr(function, "__globals__", {})
    return any(_calls_slow(scope.get(name), seen) for name in names)


def _fixture_functions(item: pytest.Item) -> list[object]:
    """The functions of every fixture ``item`` uses (its whole closure)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [definition.func for defs in info.name2fixturedefs.values() for definition in defs]


def _is_slow(item: pytest.Item) -> bool:
    if any(item.get_closest_marker(m) for m in SLOW_MARKERS):
        return True
    if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and SLOW_PARAMS.intersection(str(v) for v in callspec.params.values()):
        return True
    seen: set[CodeType] = set()
    if any(_calls_slow(f, seen) for f in [getattr(item, "function", None), *_fixture_functions(item)]):
        return True
    module = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
    test = item.nodeid.split("::", 1)[-1]
    return bool({module, f"{module}::{test.split('[', 1)[0]}", f"{module}::{test}"} & SLOW_TESTS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every slow test ``slow`` (the full suite still runs them; ``-m "not slow"`` skips them)."""
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)


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
