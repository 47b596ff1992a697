"""The registry client keeps its connections: one session per host for the whole command, answers
read to their end and their connections reused (keep-alive), one ``SSLContext`` per host (the CA
loaded once), and a connection that was not read to its end, or failed, never reused.

Counted from the server side: a TCP pass-through in front of the TLS + htpasswd registry
(:class:`tcp_counter.CountingProxy`), and loopback HTTP/1.1 servers that note which connection
each request came on. Behaviour only, never timing.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ninfer_release import transport as shared
from ninfer_release.registry import RegistryClient, RegistryError, RegistryOptions, _transport
from ninfer_release.releases._oci_publisher import OciPublisher
from registry_fixtures import LoopbackCA, Registry, write_docker_config
from tcp_counter import CountingProxy
from test_publish import make_set, request_for

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": MANIFEST_TYPE}).encode()


def test_publish_and_pull_over_tls_reuse_connections_and_load_the_ca_once(
    tls_registry: Registry, test_ca: LoopbackCA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"part{i}-1.0-win64.zip": os.urandom(32 * 1024 + i) for i in range(6)}
    names = make_set(tmp_path / "set", files)
    contexts: list[object] = []
    loads: list[object] = []
    real_context = shared.trust_context
    real_load = ssl.SSLContext.load_verify_locations

    def context(location: str | bool) -> ssl.SSLContext:
        contexts.append(location)
        return real_context(location)

    def load(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        loads.append(args or kwargs)
        real_load(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_transport, "trust_context", context)
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", load)
    with CountingProxy(tls_registry.host) as proxy:
        config = write_docker_config(tmp_path / "docker", [proxy.host])
        options = RegistryOptions(ca_file=test_ca.ca, environ={"DOCKER_CONFIG": str(config)})
        pub = OciPublisher(host=proxy.host, repository="pool/reuse", options=options)
        assert pub.publish(request_for(tmp_path / "set", names)).status == "published"
        dest = tmp_path / "pulled"
        dest.mkdir()
        pulled = pub.pull("v1.0.0-beta.1", dest)
        assert sorted(f.name for f in pulled.files) == sorted(names)
        pub.client.close()
        # ~40 exchanges (HEAD, POST, PUT per blob, manifests, the login's 401s, the pull's GETs)
        # on two upload threads: a connection each, plus the HTTPS-first probe's handshake.
        # Before: one connection per exchange.
        assert 1 <= proxy.accepted <= 6, proxy.accepted
    assert contexts == [str(test_ca.ca)]
    assert len(loads) == 1


# --- loopback HTTP/1.1 servers that note each request's connection ------------------------------


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[tuple[str, int]] = []  # (path, connection number) per request
        self.connections = 0
        self.lock = threading.Lock()

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the probe's TLS hello and our resets


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1
            self.number = self.server.connections
        self.served = 0

    def log_message(self, *args: object) -> None:
        pass

    def _note(self) -> None:
        self.served += 1
        with self.server.lock:
            self.server.seen.append((self.path, self.number))

    def _answer(self, status: int, body: bytes = b"", *, chunked: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        if chunked:  # no length announced: the client finds the size by reading
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for start in range(0, len(body), 64 * 1024):
                piece = body[start : start + 64 * 1024]
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _reset(self) -> None:
        """Hang up with a TCP reset, having read the request and answered nothing."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def do_GET(self) -> None:
        self._note()
        if self.path == "/v2/":
            self._answer(200, b"{}")
        elif self.path.endswith("/manifests/big"):
            self._answer(200, b"x" * (1 << 20), chunked=True)
        elif self.path.endswith("/manifests/reset-once") and self.served == 2:
            self._reset()
        else:
            self._answer(200, MANIFEST)

    def do_HEAD(self) -> None:
        self._note()
        self._answer(200, b"0123456789")

    def do_PUT(self) -> None:
        self._note()
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(201)
        # A 201 with a long body: the client reads none of it and must not reuse the connection.
        self.send_header("Docker-Content-Digest", "sha256:" + _sha256(MANIFEST))
        self.send_header("Content-Length", str(1 << 20))
        self.end_headers()
        self.wfile.write(b"y" * (1 << 20))


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


@contextlib.contextmanager
def _client(server: _Server, **options: object) -> Iterator[RegistryClient]:
    host = f"127.0.0.1:{server.server_address[1]}"
    client = RegistryClient(host, options=RegistryOptions(backoff=0.01, **options))  # type: ignore[arg-type]
    try:
        yield client
    finally:
        client.close()


def _connection_of(server: _Server, path: str) -> list[int]:
    return [n for p, n in server.seen if p == path]


def test_answers_read_to_their_end_keep_their_connection(server: _Server) -> None:
    with _client(server) as client:
        for _ in range(3):
            assert client.get_manifest("r", "small") is not None
            assert client.has_blob("r", "sha256:" + "0" * 64, 10)
    asked = [n for p, n in server.seen if p != "/v2/"]
    assert len(asked) == 6  # 3 x (GET, HEAD)
    assert len(set(asked)) == 1, server.seen  # all on one connection (HEAD answers too)


def test_an_answer_longer_than_its_cap_is_not_reused(server: _Server) -> None:
    with _client(server, max_manifest=64 * 1024) as client:
        assert client.get_manifest("r", "small") is not None
        with pytest.raises(RegistryError, match="more than the 65536 bytes allowed"):
            client.get_manifest("r", "big")
        after = client.get_manifest("r", "after")
    assert after is not None and after.data == MANIFEST  # not the rest of the big answer
    (small,) = _connection_of(server, "/v2/r/manifests/small")
    (big,) = _connection_of(server, "/v2/r/manifests/big")
    (later,) = _connection_of(server, "/v2/r/manifests/after")
    assert big == small  # the pool's connection was used...
    assert later != big  # ...and closed after the refused answer: a new one


def test_a_long_body_nobody_reads_is_not_drained_into_the_next_request(server: _Server) -> None:
    with _client(server) as client:
        put = client.put_manifest("r", "v1", MANIFEST, MANIFEST_TYPE)
        assert put.status == "published"
        after = client.get_manifest("r", "after")
    assert after is not None and after.data == MANIFEST
    (put_on,) = _connection_of(server, "/v2/r/manifests/v1")
    (later,) = _connection_of(server, "/v2/r/manifests/after")
    assert later != put_on  # 1 MiB left unread (more than LEFTOVER): that connection is closed


def test_a_reset_connection_is_retried_on_a_new_one(server: _Server) -> None:
    with _client(server) as client:
        assert client.get_manifest("r", "first") is not None  # connection 2's first request
        found = client.get_manifest("r", "reset-once")  # its second: reset, retried
    assert found is not None and found.data == MANIFEST
    tries = _connection_of(server, "/v2/r/manifests/reset-once")
    (first,) = _connection_of(server, "/v2/r/manifests/first")
    assert tries[0] == first  # the kept connection was reused, and reset under the request
    assert len(tries) == 2 and tries[1] != first  # the retry went on a new connection


def test_a_connection_back_in_the_pool_is_out_of_reach_of_the_watchdog(server: _Server) -> None:
    """Another thread may take a pooled connection before this exchange's watch is disarmed: a
    late deadline must not shut down that thread's exchange."""
    transport = _transport.Transport(f"127.0.0.1:{server.server_address[1]}", RegistryOptions())
    try:
        with transport.watch(30.0) as watch:
            resp = transport.request("GET", "/v2/r/manifests/small", repo="r")
            assert watch.conn is not None  # held while the answer is read
            assert _transport.read_capped(resp, 1 << 16, what="manifest") == MANIFEST
            shared.release(resp)
            assert watch.conn is None  # back in the pool, no longer this watch's
    finally:
        transport.close()


def test_an_unusable_ca_bundle_is_one_error_naming_it(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    for bundle in (tmp_path / "missing.pem", junk):
        transport = _transport.Transport("registry.example:443", RegistryOptions(ca_file=bundle))
        with pytest.raises(RegistryError, match=f"CA bundle {bundle} cannot be used") as caught:
            transport.request("GET", "/v2/", repo=None)
        assert caught.value.kind == "unreachable"
