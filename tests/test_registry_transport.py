"""The registry transport's start-up costs (issue 11: publish's time before its first upload byte).

* one watchdog thread serves every exchange's deadline (a thread per exchange waited for the GIL
  on each request while the publish verification held it), and a deadline still fires;
* the HTTPS-first probe of a host that may talk plain HTTP finds a plain-HTTP port without loading
  a trust store; a TLS port is still probed verified (the TLS tests: an untrusted certificate is
  still the error naming ``--ca-file``).
"""

from __future__ import annotations

import http.server
import socket
import ssl
import threading
import time
from collections.abc import Iterator

import pytest

from ninfer_release.registry import RegistryOptions
from ninfer_release.registry._transport import Transport, _Watch
from ninfer_release.transport import _WATCHDOG, _Socket


class _Ping(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def plain_http() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ping)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_watch_fires_its_socket_after_its_deadline_and_a_disarmed_one_never() -> None:
    a, b = socket.socketpair()
    c, d = socket.socketpair()
    with a, b, c, d:
        with _Watch(0.05) as watch:
            watch.conn = _Socket(a)
            time.sleep(0.5)
        assert watch.fired
        assert a.recv(1) == b""  # shut down: the blocked exchange ends
        with _Watch(0.2) as early:
            early.conn = _Socket(c)
        time.sleep(0.5)
        assert not early.fired
        c.sendall(b"x")
        assert d.recv(1) == b"x"


def test_a_forked_child_gets_its_own_watchdog() -> None:
    """The watchdog thread is the parent's: a child forked after it started (multiprocessing's
    fork) would have deadlines that never fire without a watchdog of its own."""
    import os

    with _Watch(1.0):
        pass  # the parent's watchdog runs
    a, b = socket.socketpair()
    with a, b:
        pid = os.fork()
        if pid == 0:  # the child: a deadline must still fire
            code = 1
            try:
                with _Watch(0.05) as watch:
                    watch.conn = _Socket(a)
                    time.sleep(0.5)
                code = 0 if watch.fired and a.recv(1) == b"" else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_exchanges_start_no_thread_each(plain_http: str, monkeypatch: pytest.MonkeyPatch) -> None:
    transport = Transport(plain_http, RegistryOptions())
    with _Watch(1.0):
        pass  # the watchdog runs from here on
    me = threading.current_thread()
    started: list[str] = []
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if threading.current_thread() is me:  # not the test server's handler threads
            started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    for _ in range(20):
        with _Watch(30.0):
            resp = transport.request("GET", "/v2/", repo=None)
            resp.close()
    assert started == []
    assert _WATCHDOG._thread is not None and _WATCHDOG._thread.is_alive()


def test_a_plain_http_loopback_port_is_found_without_loading_a_trust_store(
    plain_http: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("no trust store is loaded to find a plain-HTTP port")

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", refuse)
    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", refuse)
    assert Transport(plain_http, RegistryOptions()).base() == f"http://{plain_http}"
