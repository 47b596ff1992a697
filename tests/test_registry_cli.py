"""The CLI against real and misbehaving registries: one line, the documented exit code (publish 7,
verify 4), within the configured deadline, never the secret (issue 11).

Misbehaving servers run in this process on loopback: accept-and-never-answer, one byte every
2 s, junk, a huge manifest announcement, a redirect loop, an auth loop. The deadline comes from
configuration (``NINFER_REGISTRY_*``), never from sleeping in the test.
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flow_support import TAGS, cli, qualified_out, registry_namespace, run_nr
from registry_fixtures import PASSWORD, LoopbackCA, Registry, TokenRegistry, write_docker_config

#: Short limits so a misbehaving server fails the command in seconds (configuration, not sleeps).
FAST = {
    "NINFER_REGISTRY_CONNECT_TIMEOUT": "1",
    "NINFER_REGISTRY_READ_TIMEOUT": "1",
    "NINFER_REGISTRY_REQUEST_DEADLINE": "3",
    "NINFER_REGISTRY_DEADLINE": "6",
    "NINFER_REGISTRY_RETRIES": "1",
    "NINFER_REGISTRY_BACKOFF": "0.05",
}


def _error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error: ")]


# --- wrong credentials, secrets -------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["htpasswd", "token"])
def test_wrong_credentials_exit_7_and_4_without_the_secret(
    kind: str,
    tls_registry: Registry,
    token_registry: TokenRegistry,
    test_ca: LoopbackCA,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    host = tls_registry.host if kind == "htpasswd" else token_registry.host
    wrong = "WRONG-" + PASSWORD
    config = write_docker_config(tmp_path / "docker", [host], password=wrong)
    env = {"DOCKER_CONFIG": str(config), "SSL_CERT_FILE": str(test_ca.ca)}
    lane = "rtx4090"
    repo = f"oci://{host}/{registry_namespace(tmp_path_factory, f'wrong-{kind}')}/{lane}"
    set_dir = qualified_out(tmp_path_factory) / lane
    published = cli("--debug", "--json", "publish", set_dir, "--to", repo, env=env)
    assert published.code == 7, published.text
    assert len(_error_lines(published.err)) == 1
    assert json.loads(published.out)["exit_code"] == 7
    verified = cli("--debug", "--json", "verify", f"{repo}:{TAGS[lane]}", env=env)
    assert verified.code == 4, verified.text
    assert len(_error_lines(verified.err)) == 1
    for result in (published, verified):
        assert wrong not in result.text and PASSWORD not in result.text


def test_right_credentials_never_reach_output_or_artifacts(
    tls_registry: Registry, test_ca: LoopbackCA, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    config = write_docker_config(tmp_path / "docker", [tls_registry.host])
    env = {"DOCKER_CONFIG": str(config), "SSL_CERT_FILE": str(test_ca.ca)}
    lane = "rtx3090"
    repo = f"oci://{tls_registry.host}/{registry_namespace(tmp_path_factory, 'secret')}/{lane}"
    set_dir = qualified_out(tmp_path_factory) / lane
    published = cli("--debug", "--json", "-v", "publish", set_dir, "--to", repo, env=env)
    assert published.code == 0, published.text
    verified = cli("--debug", "--json", "verify", f"{repo}:{TAGS[lane]}", env=env)
    assert verified.code == 0, verified.text
    import base64

    encoded = base64.b64encode(f"ci-bot:{PASSWORD}".encode()).decode()
    for result in (published, verified):
        assert PASSWORD not in result.text and encoded not in result.text
    for path in set_dir.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


# --- misbehaving servers --------------------------------------------------------------------------


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    conn.settimeout(5)
    while b"\r\n\r\n" not in data:
        try:
            chunk = conn.recv(4096)
        except OSError:
            return data
        if not chunk:
            return data
        data += chunk
    return data


Behaviour = Callable[[socket.socket, bytes], None]


def _never(conn: socket.socket, request: bytes) -> None:
    time.sleep(30)


def _trickle(conn: socket.socket, request: bytes) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}":
        conn.sendall(bytes([byte]))
        time.sleep(2)


def _junk(conn: socket.socket, request: bytes) -> None:
    conn.sendall(b"\x00\xffthis is not HTTP at all\r\n\r\n")


def _answer(conn: socket.socket, status: str, headers: dict[str, str], body: bytes = b"") -> None:
    # The handler closes the socket after one answer, so it says so: without "Connection: close"
    # a client may reuse the connection and, under load, lose the race with the close.
    headers = {**headers, "Connection": "close"}
    head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    conn.sendall(head.encode() + b"\r\n" + body)


def _huge(conn: socket.socket, request: bytes) -> None:
    if request.startswith(b"GET /v2/ "):
        _answer(conn, "200 OK", {"Content-Length": "2"}, b"{}")
        return
    _answer(
        conn,
        "200 OK",
        {"Content-Type": "application/vnd.oci.image.manifest.v1+json", "Content-Length": str(10**12)},
        b"{" * 1024,
    )


def _redirect_loop(conn: socket.socket, request: bytes) -> None:
    if request.startswith(b"GET /v2/ "):
        _answer(conn, "200 OK", {"Content-Length": "2"}, b"{}")
        return
    path = request.split(b" ")[1].decode()
    _answer(conn, "302 Found", {"Location": path, "Content-Length": "0"})


def _auth_loop(port_box: list[int]) -> Behaviour:
    def behave(conn: socket.socket, request: bytes) -> None:
        if request.startswith(b"GET /token"):
            _answer(
                conn,
                "200 OK",
                {"Content-Type": "application/json", "Content-Length": "15"},
                b'{"token":"abc"}',
            )
            return
        realm = f"http://127.0.0.1:{port_box[0]}/token"
        _answer(
            conn,
            "401 Unauthorized",
            {"WWW-Authenticate": f'Bearer realm="{realm}",service="loop"', "Content-Length": "0"},
        )

    return behave


@pytest.fixture
def bad_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """``127.0.0.1:PORT`` of a plain-TCP server behaving as ``request.param`` names."""
    port_box: list[int] = []
    behaviours: dict[str, Behaviour] = {
        "never": _never,
        "trickle": _trickle,
        "junk": _junk,
        "huge": _huge,
        "redirect": _redirect_loop,
        "authloop": _auth_loop(port_box),
    }
    behave = behaviours[request.param]

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            conn: socket.socket = self.request
            if request.param == "never":
                time.sleep(30)
                return
            conn.settimeout(5)
            try:
                first = conn.recv(1, socket.MSG_PEEK)
            except OSError:
                return
            if first == b"\x16":  # a TLS ClientHello: this server only speaks plain HTTP
                return
            with_request = _read_request(conn)
            with contextlib.suppress(OSError):
                behave(conn, with_request)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", 0), Handler)
    port_box.append(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{port_box[0]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("bad_server", "expect"),
    [
        ("never", "deadline"),
        ("trickle", "deadline"),
        ("junk", "unreachable"),
        ("huge", "more than the 4194304 bytes allowed"),
        ("redirect", "more than 5 redirects"),
        ("authloop", "HTTP 401 unauthorized"),
    ],
    indirect=["bad_server"],
)
def test_misbehaving_registry_fails_in_time_with_one_line(
    bad_server: str, expect: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """As separate processes with a hard outer timeout: a hang would fail the test, not stall it."""
    set_dir = qualified_out(tmp_path_factory) / "rtx4090"
    env = {**FAST, "DOCKER_CONFIG": str(tmp_path)}
    published = run_nr("publish", set_dir, "--to", f"oci://{bad_server}/t/bad", env=env, timeout=40)
    assert published.returncode == 7, published.stdout + published.stderr
    assert len(_error_lines(published.stderr)) == 1 and expect in published.stderr, published.stderr
    assert "Traceback" not in published.stderr
    verified = run_nr("verify", f"oci://{bad_server}/t/bad:{TAGS['rtx4090']}", env=env, timeout=40)
    assert verified.returncode == 4, verified.stdout + verified.stderr
    assert len(_error_lines(verified.stderr)) == 1 and expect in verified.stderr, verified.stderr


@pytest.mark.parametrize("bad_server", ["never"], indirect=True)
def test_nginx_in_front_of_a_slow_upstream_is_one_line_in_time(
    bad_server: str, test_ca: LoopbackCA, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The slow-upstream variant: nginx (TLS) gives up on an upstream that never answers after its
    proxy_read_timeout and answers 504; the client retries that bounded times, then fails with
    one line: publish exit 7, verify exit 4."""
    from conftest import _stop
    from registry_fixtures import start_nginx

    proc, port = start_nginx(
        tmp_path / "nginx", test_ca, bad_server, body_cap="1m", read_timeout="1s", upstream_scheme="http"
    )
    try:
        env = {
            **FAST,
            "DOCKER_CONFIG": str(tmp_path),
            "SSL_CERT_FILE": str(test_ca.ca),
            "NINFER_REGISTRY_READ_TIMEOUT": "5",
            "NINFER_REGISTRY_REQUEST_DEADLINE": "10",
            "NINFER_REGISTRY_DEADLINE": "20",
        }
        set_dir = qualified_out(tmp_path_factory) / "rtx4090"
        target = f"oci://127.0.0.1:{port}/t/slow"
        published = run_nr("publish", set_dir, "--to", target, env=env, timeout=60)
        assert published.returncode == 7, published.stdout + published.stderr
        assert len(_error_lines(published.stderr)) == 1 and "HTTP 504" in published.stderr, published.stderr
        verified = run_nr("verify", f"{target}:{TAGS['rtx4090']}", env=env, timeout=60)
        assert verified.returncode == 4, verified.stdout + verified.stderr
        assert len(_error_lines(verified.stderr)) == 1 and "HTTP 504" in verified.stderr, verified.stderr
    finally:
        _stop(proc)
