"""Real web servers for the fetch-by-URL tests (issue 12), loopback only, stopped by PID.

* :func:`make_ca` — a CA and a server certificate (``127.0.0.1``, ``localhost``) made with ``openssl``;
* :class:`Nginx` — Debian's ``nginx`` serving a ``files://`` tree over TLS (Range support is
  nginx's own) on two ports: ``primary`` (``https://127.0.0.1:P``) and ``secondary``
  (``https://localhost:S``, another server name). ``primary`` redirects ``/to-secondary/X`` to
  ``https://localhost:S/X`` (cross-host), ``/to-http/X`` to ``http://example.invalid/X`` (a
  downgrade) and ``/loop/X`` to itself (a redirect loop);
* :class:`CuttingProxy` — a TCP pass-through (TLS stays end to end) that drops the first
  ``cuts`` connections after ``after`` bytes from the server: a connection cut half-way through.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import need_tool, unavailable

#: A name with a TLD (spdx-tools refuses download locations on bare IPs or ``localhost``) that the
#: tests resolve to 127.0.0.1 themselves (:func:`resolving_test_host`); never looked up in DNS.
TEST_HOST = "releases.ninfer.test"


@contextlib.contextmanager
def resolving_test_host() -> Iterator[None]:
    """Resolve :data:`TEST_HOST` to 127.0.0.1 in this process (a stand-in for DNS)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: bytes | str | None, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host == TEST_HOST else host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo
    try:
        yield
    finally:
        socket.getaddrinfo = real


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_ca(work: Path) -> tuple[Path, Path, Path]:
    """``(ca.pem, server.pem, server.key)`` under ``work``: a CA and a cert for 127.0.0.1/localhost."""
    openssl = need_tool("openssl")
    work.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=work, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=ninfer-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign")  # fmt: skip
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1")  # fmt: skip
    (work / "ext.cnf").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:"
        + TEST_HOST
        + "\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
    )
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")  # fmt: skip
    return work / "ca.pem", work / "server.pem", work / "server.key"


_CONF = """\
{user}
daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log {work}/access.log;
    client_body_temp_path {work}/tmp-body;
    proxy_temp_path {work}/tmp-proxy;
    fastcgi_temp_path {work}/tmp-fcgi;
    uwsgi_temp_path {work}/tmp-uwsgi;
    scgi_temp_path {work}/tmp-scgi;
    default_type application/octet-stream;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    server {{
        listen 127.0.0.1:{primary} ssl;
        server_name 127.0.0.1;
        root {root};
        location /to-secondary/ {{ rewrite ^/to-secondary/(.*)$ https://localhost:{secondary}/$1 redirect; }}
        location /to-http/ {{ rewrite ^/to-http/(.*)$ http://example.invalid/$1 redirect; }}
        location /loop/ {{ rewrite ^/loop/(.*)$ /loop/$1 redirect; }}
    }}
    server {{
        listen 127.0.0.1:{secondary} ssl;
        server_name localhost;
        root {root};
    }}
    server {{
        listen 127.0.0.1:{plain};
        server_name 127.0.0.1;
        root {root};
    }}
}}
"""


@dataclass
class Nginx:
    """A running nginx (started by :meth:`start`, stopped by PID in :meth:`stop`)."""

    work: Path
    root: Path
    ca: Path
    primary: int
    secondary: int
    plain: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.primary}"

    @property
    def http_base(self) -> str:
        return f"http://127.0.0.1:{self.plain}"

    @classmethod
    def start(cls, work: Path) -> Nginx:
        binary = need_tool("nginx")
        ca, cert, key = make_ca(work / "pki")
        root = work / "www"
        root.mkdir(parents=True, exist_ok=True)
        server = cls(
            work=work, root=root, ca=ca, primary=free_port(), secondary=free_port(), plain=free_port()
        )
        conf = work / "nginx.conf"
        conf.write_text(
            _CONF.format(
                # As root, workers would drop to nobody and could not read the 0700 pytest tmp dirs.
                user="user root;" if os.geteuid() == 0 else "",
                work=work,
                root=root,
                cert=cert,
                key=key,
                primary=server.primary,
                secondary=server.secondary,
                plain=server.plain,
            )
        )
        log = (work / "stderr.log").open("wb")
        server.proc = subprocess.Popen([binary, "-p", str(work), "-c", str(conf)], stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 20
        for port in (server.primary, server.secondary, server.plain):
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                        break
                except OSError:
                    if server.proc.poll() is not None or time.monotonic() > deadline:
                        tail = (work / "stderr.log").read_text()[-600:]
                        server.stop()
                        unavailable(f"nginx did not start: {tail}")
                    time.sleep(0.05)
        return server

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # our PID: nginx's master, which stops its worker
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


class CuttingProxy:
    """TCP pass-through to ``127.0.0.1:target`` that cuts the first ``cuts`` connections after
    ``after`` bytes from the server (TLS runs end to end through it)."""

    def __init__(self, target: int, *, after: int, cuts: int = 1) -> None:
        self.target = target
        self.after = after
        self.cuts_left = cuts
        self.connections = 0
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = int(self._sock.getsockname()[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                client, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
                cut = self.cuts_left > 0
                if cut:
                    self.cuts_left -= 1
            threading.Thread(target=self._pipe, args=(client, cut), daemon=True).start()

    def _pipe(self, client: socket.socket, cut: bool) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.target))

        def up() -> None:
            try:
                while data := client.recv(65536):
                    upstream.sendall(data)
            except OSError:
                pass

        threading.Thread(target=up, daemon=True).start()
        sent = 0
        try:
            while data := upstream.recv(65536):
                if cut and sent + len(data) > self.after:
                    client.sendall(data[: self.after - sent])
                    break
                client.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(timeout=5)
