"""Real registries that behave like public ones, started by the tests on loopback, stopped by PID.

* :func:`test_ca` — a CA and a server certificate (SAN ``IP:127.0.0.1,DNS:localhost``) made with
  ``openssl``;
* :func:`tls_registry` — Debian's ``docker-registry`` with TLS and htpasswd (basic) auth;
* :func:`token_registry` — the same with distribution's ``auth: token``: its realm is a small
  HTTPS token issuer here that checks Basic credentials and signs RS256 JWTs (``x5c`` header,
  ``access`` claim), as ghcr.io and Docker Hub do (reference/registry-facts.md);
* :func:`capped_proxy` — Debian's ``nginx`` as a TLS reverse proxy in front of the TLS registry
  with ``client_max_body_size`` (a real 413 for large bodies);
* :func:`docker_config` — a ``DOCKER_CONFIG`` directory holding the registries' credentials.

Registered from conftest.py (``pytest_plugins``) so each is started once per session.
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import _free_port, _stop, need_tool, unavailable

USER = "ci-bot"
PASSWORD = "s3cr3t-Pa55w0rd-never-printed"
#: The OAuth2 refresh token the token issuer accepts (what ``docker login`` stores as identitytoken).
REFRESH_TOKEN = "r3fr3sh-t0k3n-never-printed"


@dataclass(frozen=True)
class LoopbackCA:
    """Paths of the test CA and the loopback server certificate it signed."""

    ca: Path
    cert: Path
    key: Path


@dataclass(frozen=True)
class Registry:
    """A started registry: ``host`` (``127.0.0.1:PORT``), its log file, and its auth kind."""

    host: str
    log: Path
    auth: str


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run([need_tool("openssl"), *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> LoopbackCA:
    """A CA and a server certificate for 127.0.0.1 / localhost (openssl, 2048-bit RSA)."""
    d = tmp_path_factory.mktemp("ca")
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=ninfer test CA",
        cwd=d,
    )
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
        cwd=d,
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        cwd=d,
    )
    return LoopbackCA(ca=d / "ca.crt", cert=d / "server.crt", key=d / "server.key")


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, what: str) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                unavailable(f"{what} did not start: {log.read_text(errors='replace')[-600:]}")
            time.sleep(0.1)


@contextlib.contextmanager
def _run_registry(work: Path, auth_yaml: str, ca: LoopbackCA, kind: str) -> Iterator[Registry]:
    binary = shutil.which("docker-registry")
    if binary is None:
        unavailable("docker-registry is not installed (apt-get install docker-registry; .ci/run does)")
    assert binary is not None
    port = _free_port()
    config = work / "config.yml"
    config.write_text(
        "version: 0.1\n"
        "log:\n  level: error\n"
        f"storage:\n  filesystem:\n    rootdirectory: {work / 'data'}\n  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n  tls:\n    certificate: {ca.cert}\n    key: {ca.key}\n"
        f"{auth_yaml}"
    )
    log = work / "registry.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([binary, "serve", str(config)], stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_port(port, proc, log, "docker-registry")
        yield Registry(host=f"127.0.0.1:{port}", log=log, auth=kind)
    finally:
        _stop(proc)


@pytest.fixture(scope="session")
def tls_registry(test_ca: LoopbackCA) -> Iterator[Registry]:
    """docker-registry with TLS (the test CA) and htpasswd basic auth (:data:`USER`/:data:`PASSWORD`)."""
    htpasswd = need_tool("htpasswd")
    work = Path(tempfile.mkdtemp(prefix="ninfer-tls-registry-"))
    line = subprocess.run(
        [htpasswd, "-Bbn", USER, PASSWORD], capture_output=True, check=True, text=True
    ).stdout
    (work / "htpasswd").write_text(line.strip() + "\n")
    auth = f"auth:\n  htpasswd:\n    realm: ninfer-test\n    path: {work / 'htpasswd'}\n"
    try:
        with _run_registry(work, auth, test_ca, "htpasswd") as reg:
            yield reg
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- token auth ---------------------------------------------------------------------------------


class _TokenIssuer:
    """An HTTPS token service: Basic credentials in, an RS256 JWT distribution accepts out."""

    def __init__(self, work: Path, ca: LoopbackCA, *, service: str, issuer: str, lifetime: int) -> None:
        import jwt  # PyJWT (test dependency)
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.service = service
        self.issuer = issuer
        self.lifetime = lifetime
        self.issued = 0
        #: Tokens handed out for an OAuth2 refresh-token grant (``POST``, docker's identitytoken).
        self.refreshed = 0
        key_pem = ca.key.read_bytes()
        key = serialization.load_pem_private_key(key_pem, password=None)
        assert isinstance(key, rsa.RSAPrivateKey), "the loopback CA key signs RS256 tokens"
        self._key = key
        cert = x509.load_pem_x509_certificate(ca.cert.read_bytes())
        self._x5c = [base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()]
        self._jwt = jwt
        issuer_self = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                issuer_self._answer(self)

            def do_POST(self) -> None:
                issuer_self._answer_oauth(self)

        self.port = _free_port()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ca.cert, ca.key)
        self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def realm(self) -> str:
        return f"https://127.0.0.1:{self.port}/token"

    def _answer(self, req: http.server.BaseHTTPRequestHandler) -> None:
        from urllib.parse import parse_qs, urlsplit

        expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        if req.headers.get("Authorization") != expected:
            req.send_response(401)
            req.send_header("Content-Length", "0")
            req.end_headers()
            return
        query = parse_qs(urlsplit(req.path).query)
        token = self._sign(query.get("scope", []))
        self.issued += 1
        self._send(req, {"token": token, "expires_in": self.lifetime})

    def _answer_oauth(self, req: http.server.BaseHTTPRequestHandler) -> None:
        """distribution's OAuth2 token spec: a form with ``grant_type=refresh_token``, the refresh
        token, ``service``, ``client_id`` and space-separated ``scope``; answers ``access_token``."""
        from urllib.parse import parse_qs

        length = int(req.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(req.rfile.read(length).decode()).items()}
        good = (
            req.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded")
            and form.get("grant_type") == "refresh_token"
            and form.get("refresh_token") == REFRESH_TOKEN
            and form.get("service") == self.service
            and bool(form.get("client_id"))
        )
        if not good:
            req.send_response(401)
            req.send_header("Content-Length", "0")
            req.end_headers()
            return
        token = self._sign(form.get("scope", "").split())
        self.issued += 1
        self.refreshed += 1
        self._send(req, {"access_token": token, "expires_in": self.lifetime, "scope": form.get("scope", "")})

    def _sign(self, scopes: list[str]) -> str:
        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            access.append({"type": kind, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": USER,
            "aud": self.service,
            "exp": now + self.lifetime,
            "nbf": now - 5,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": access,
        }
        token: str = self._jwt.encode(claims, self._key, algorithm="RS256", headers={"x5c": self._x5c})
        return token

    def _send(self, req: http.server.BaseHTTPRequestHandler, answer: dict[str, object]) -> None:
        body = json.dumps(answer).encode()
        req.send_response(200)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        req.wfile.write(body)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass(frozen=True)
class TokenRegistry:
    """A token-auth registry and its issuer (``issuer.issued`` counts tokens handed out)."""

    host: str
    log: Path
    issuer: _TokenIssuer


@pytest.fixture(scope="session")
def token_registry(test_ca: LoopbackCA) -> Iterator[TokenRegistry]:
    """docker-registry with ``auth: token`` whose realm is a JWT issuer run by the test (11 s tokens,
    so a long publish sees them expire and be re-asked)."""
    try:
        import jwt  # noqa: F401 - PyJWT, a test dependency
    except ImportError:
        unavailable("PyJWT is not installed (pip install -e '.[test]')")
    work = Path(tempfile.mkdtemp(prefix="ninfer-token-registry-"))
    issuer = _TokenIssuer(
        work, test_ca, service="ninfer-test-registry", issuer="ninfer-test-issuer", lifetime=11
    )
    auth = (
        "auth:\n  token:\n"
        f"    realm: {issuer.realm}\n    service: {issuer.service}\n    issuer: {issuer.issuer}\n"
        f"    rootcertbundle: {test_ca.cert}\n"
    )
    try:
        with _run_registry(work, auth, test_ca, "token") as reg:
            yield TokenRegistry(host=reg.host, log=reg.log, issuer=issuer)
    finally:
        issuer.close()
        shutil.rmtree(work, ignore_errors=True)


# --- nginx --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proxy:
    """nginx in front of a registry: ``host`` (``127.0.0.1:PORT``) and its work dir."""

    host: str
    work: Path


def start_nginx(
    work: Path,
    ca: LoopbackCA,
    upstream: str,
    *,
    body_cap: str,
    read_timeout: str = "60s",
    upstream_scheme: str = "https",
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``nginx`` (TLS, ``client_max_body_size body_cap``, ``proxy_read_timeout read_timeout``)
    proxying to ``upstream_scheme://upstream``; returns the process and its port."""
    nginx = need_tool("nginx")
    port = _free_port()
    for sub in ("body", "proxy", "logs"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    conf = work / "nginx.conf"
    conf.write_text(
        f"""daemon off;
pid {work}/nginx.pid;
error_log {work}/logs/error.log warn;
worker_processes 1;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {work}/body;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/proxy; uwsgi_temp_path {work}/proxy; scgi_temp_path {work}/proxy;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {ca.cert};
    ssl_certificate_key {ca.key};
    client_max_body_size {body_cap};
    location / {{
      proxy_pass {upstream_scheme}://{upstream};
      proxy_set_header Host $http_host;
      proxy_request_buffering off;
      proxy_buffering off;
      proxy_read_timeout {read_timeout};
      proxy_ssl_verify off;
    }}
  }}
}}
"""
    )
    log = work / "logs" / "stdout.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [nginx, "-c", str(conf), "-p", str(work)], stdout=out, stderr=subprocess.STDOUT
        )
    _wait_port(
        port, proc, work / "logs" / "error.log" if (work / "logs" / "error.log").exists() else log, "nginx"
    )
    return proc, port


@pytest.fixture(scope="session")
def capped_proxy(tls_registry: Registry, test_ca: LoopbackCA) -> Iterator[Proxy]:
    """nginx with ``client_max_body_size 1m`` in front of :func:`tls_registry` (TLS both ways)."""
    work = Path(tempfile.mkdtemp(prefix="ninfer-nginx-"))
    proc, port = start_nginx(work, test_ca, tls_registry.host, body_cap="1m")
    try:
        yield Proxy(host=f"127.0.0.1:{port}", work=work)
    finally:
        _stop(proc)
        shutil.rmtree(work, ignore_errors=True)


# --- credentials --------------------------------------------------------------------------------


def write_docker_config(directory: Path, hosts: list[str], *, password: str = PASSWORD) -> Path:
    """``directory/config.json`` with ``auths`` entries (base64 ``USER:password``) for ``hosts``."""
    directory.mkdir(parents=True, exist_ok=True)
    auth = base64.b64encode(f"{USER}:{password}".encode()).decode()
    (directory / "config.json").write_text(
        json.dumps({"auths": {h: {"auth": auth} for h in hosts}}, indent=2)
    )
    return directory


def write_identity_token_config(directory: Path, hosts: list[str], *, token: str = REFRESH_TOKEN) -> Path:
    """``directory/config.json`` with an ``auths.<host>.identitytoken`` (no password) for ``hosts``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(
        json.dumps({"auths": {h: {"auth": "", "identitytoken": token} for h in hosts}}, indent=2)
    )
    return directory


def write_credential_helper(bin_dir: Path, name: str, hosts: list[str]) -> Path:
    """An executable ``docker-credential-NAME`` answering ``get`` for ``hosts`` (else "not found")."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / f"docker-credential-{name}"
    answers = {h: {"ServerURL": h, "Username": USER, "Secret": PASSWORD} for h in hosts}
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        f"ANSWERS = {json.dumps(answers)!r}\n"
        "if sys.argv[1:] != ['get']:\n    sys.exit(1)\n"
        "server = sys.stdin.read().strip()\n"
        "found = json.loads(ANSWERS).get(server)\n"
        "if found is None:\n    print('credentials not found in native keychain'); sys.exit(1)\n"
        "print(json.dumps(found))\n"
    )
    script.chmod(0o755)
    return script
