"""HTTP to one registry host: scheme and trust, auth challenges, retries, deadlines, size caps.

Built on ``requests``/``urllib3`` (connection pooling, TLS, chunked bodies). What they do not do,
and the registry needs, is here:

* **scheme** — HTTPS with verification always first. A loopback host (``127.*``, ``localhost``,
  ``[::1]``) falls back to plain HTTP when its port does not speak TLS (what docker does); any other
  host only when named in ``--insecure-registry``, with a warning on stderr;
* **trust** — ``--ca-file``, else ``certs.d/HOST:PORT/ca.crt`` (docker's convention), else
  ``SSL_CERT_FILE``, else the system store (:func:`ninfer_release.transport.resolve_trust`),
  loaded once per host into one ``SSLContext`` that every HTTPS connection of the host reuses;
* **connections** — one session per host for the whole command: an answer is read to its end
  (at most ``transport.LEFTOVER`` bytes beyond what its reader took) and its connection goes
  back to the pool for the next request (keep-alive); one not read to its end, or that failed or
  timed out, is closed, never reused (``transport.release``, ``transport.discard``);
* **auth** — RFC 7235 challenges: ``Basic`` (RFC 7617) and ``Bearer`` (distribution's token
  spec: realm, service, per-repository scope; tokens cached per repository until they expire,
  re-asked on a 401);
* **deadlines** — connect/read timeouts per socket operation, plus a wall-clock deadline per
  exchange (the shared transport's watchdog);
* **retries** — connection errors and :data:`~ninfer_release.transport.RETRY_STATUS`, bounded,
  by the one policy (:func:`~ninfer_release.transport.backoff_wait`: ``Retry-After`` honoured,
  exponential backoff with jitter, never past the deadline). Requests whose repetition is not
  safe (upload-session ``PATCH``/``PUT``) ask for no retry; their callers restart the upload.

Sessions, connections, trust, the watchdog and the retry policy are the package's one HTTP
transport (:mod:`ninfer_release.transport`), shared with the fetch by URL.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import urlencode, urljoin, urlsplit

import requests
import urllib3.util

from ninfer_release.errors import BackendError
from ninfer_release.transport import (
    _WATCHDOG,  # noqa: F401 - the registry tests reach the watchdog here
    MAX_REDIRECTS,
    REDIRECTS,
    RETRY_STATUS,
    Watch,
    _Socket,
    backoff_wait,
    discard,
    is_loopback_host,
    is_untrusted,
    new_session,
    release,
    resolve_trust,
    trust_context,
    untrusted_message,
    watch_fired,
)
from ninfer_release.transport import reason as _reason
from ninfer_release.transport import retry_after as _retry_after

from ._credentials import Credential, find_credential
from ._options import RegistryOptions

_Watch = Watch  # the name the registry tests use
_watch_fired = watch_fired

log = logging.getLogger("ninfer_release.registry")

_ERROR_BODY = 4096
_CHALLENGE_PARAM = re.compile(r'(\w+)\s*=\s*(?:"([^"]*)"|([^\s,]+))')


class RegistryError(BackendError):
    """A registry exchange failed. ``status`` is the HTTP status when the registry answered.

    ``kind``: ``http`` (an error status), ``auth`` (credentials refused or missing),
    ``unreachable`` (connection or TLS failure), ``deadline`` (no complete answer in time),
    ``protocol`` (an answer that breaks the distribution spec: oversized, redirect loop, junk),
    ``cancelled`` (the caller stopped an upload: another upload of the same publish failed).
    Callers map it to their exit code (publish 7, pull/verify 4, carry 6). Never holds a secret.
    """

    def __init__(self, message: str, *, kind: str, status: int | None = None, code: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        #: The first distribution error code of the answer's body (e.g. ``DIGEST_INVALID``).
        self.code = code


@dataclass(frozen=True)
class FileRange:
    """``length`` bytes of the open file ``file`` from byte ``offset``: a piece of a request body
    that the connection sends from the file itself (:func:`send_file_range`). ``name`` names the
    file in the error raised when it ends before the range does."""

    file: BinaryIO
    offset: int
    length: int
    name: str = ""

    def __len__(self) -> int:
        return self.length

    def send_to(self, sock: socket.socket) -> None:
        """Send this range on ``sock`` (the transport's connections call it for such a piece)."""
        send_file_range(sock, self)


#: The most bytes one ``os.sendfile`` call is asked for (Linux moves at most 2 GiB per call).
_SENDFILE_MAX = 1 << 30
#: Bytes per ``os.pread`` where the file cannot be sent by the kernel (TLS, no ``os.sendfile``).
_READ_PIECE = 4 << 20


def send_file_range(sock: socket.socket, piece: FileRange) -> None:
    """Send the bytes of ``piece`` on the connected ``sock``.

    On a plain socket: ``os.sendfile`` with the socket made blocking for the call and
    ``SO_SNDTIMEO`` set to its timeout, so the bound per send stays the socket's timeout (no byte
    accepted for that long fails). The bytes go from the page cache to the socket without a copy
    through Python, and the thread takes the GIL back once per call, not after every fill of the
    socket buffer as a send with a Python timeout does (issue 11: the publish verification's
    threads hold the GIL meanwhile). On TLS (or without ``os.sendfile``): read with ``os.pread`` in
    4 MiB pieces and sent. Only a socket of exactly ``socket.socket`` is given to the kernel; any
    other class (``ssl.SSLSocket`` or another wrapper) is sent through its own ``sendall``.
    Neither moves the file's offset.

    Raises:
        TimeoutError: no byte could be sent for the socket's timeout.
        RegistryError: the file ends before the range (``protocol``, code ``DIGEST_INVALID``: it
            changed while uploading).
        OSError: the connection failed (reset, shut down by the watchdog).
    """
    fd = piece.file.fileno()
    offset, end = piece.offset, piece.offset + piece.length
    # An allowlist, not a TLS check: only a plain kernel socket may be given the file's bytes by
    # the kernel; any wrapper (TLS of whatever class, a proxy's tunnel) gets them through sendall.
    if type(sock) is not socket.socket or not hasattr(os, "sendfile"):
        while offset < end:
            data = os.pread(fd, min(_READ_PIECE, end - offset), offset)
            if not data:
                raise shrank(piece.name)
            sock.sendall(data)
            offset += len(data)
        return
    timeout = sock.gettimeout()
    sock.settimeout(None)
    if timeout:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(timeout))
    try:
        while offset < end:
            try:
                sent = os.sendfile(sock.fileno(), fd, offset, min(_SENDFILE_MAX, end - offset))
            except BlockingIOError:  # SO_SNDTIMEO passed without a byte accepted
                raise TimeoutError("timed out") from None
            if sent == 0:
                raise shrank(piece.name)
            offset += sent
    finally:
        with contextlib.suppress(OSError):  # closed meanwhile: nothing left to restore
            if timeout:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(0.0))
            sock.settimeout(timeout)


def _timeval(seconds: float) -> bytes:
    """A ``struct timeval`` (two C longs) of ``seconds``."""
    whole = int(seconds)
    return struct.pack("ll", whole, int((seconds - whole) * 1_000_000))


def shrank(name: str) -> RegistryError:
    """The error of an upload whose file ended before its body did (``DIGEST_INVALID``: the file
    changed while publishing, as the registry says of other bytes)."""
    return RegistryError(
        f"{name or 'upload'}: file shrank while uploading", kind="protocol", code="DIGEST_INVALID"
    )


# --- auth ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Challenge:
    """A parsed ``WWW-Authenticate`` header: ``scheme`` (lowercase) and its parameters."""

    scheme: str
    params: Mapping[str, str]

    @classmethod
    def parse(cls, header: str) -> Challenge:
        """Parse ``Bearer realm="…",service="…",scope="…"`` (one challenge; RFC 7235 §4.1)."""
        scheme, _, rest = header.strip().partition(" ")
        params = {
            m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3)
            for m in _CHALLENGE_PARAM.finditer(rest)
        }
        return cls(scheme=scheme.lower(), params=params)


@dataclass(frozen=True, kw_only=True)
class _Token:
    value: str
    expires_at: float
    scopes: frozenset[str]


@dataclass(kw_only=True)
class _Attempts:
    """What one :meth:`Transport.request` has used up: retries, the one re-authorization, hops."""

    retries: int = 0
    authed: bool = False
    hops: int = 0


@dataclass(frozen=True, kw_only=True)
class _TokenRequest:
    """One request to a token service: ``GET`` with a query, or ``POST`` of an OAuth2 form."""

    method: str
    url: str
    headers: Mapping[str, str]
    form: Mapping[str, str] | None = None


#: The ``client_id`` sent with an OAuth2 token request (distribution's spec requires one).
CLIENT_ID = "ninfer-release"


def _token_request(
    realm: str, challenge: Challenge, scopes: frozenset[str], cred: Credential | None
) -> _TokenRequest:
    """The token request for ``cred``: an identity token is POSTed as an OAuth2 refresh-token
    grant; a user name and password (or nothing) asks by GET with Basic auth (or anonymously)."""
    service = challenge.params.get("service", "")
    if cred is not None and cred.is_identity_token:
        form = {"grant_type": "refresh_token", "refresh_token": cred.secret, "client_id": CLIENT_ID}
        if service:
            form["service"] = service
        if scopes:
            form["scope"] = " ".join(sorted(scopes))
        return _TokenRequest(method="POST", url=realm, headers={}, form=form)
    query: list[tuple[str, str]] = [("service", service)] if service else []
    query.extend(("scope", s) for s in sorted(scopes))
    url = realm + ("&" if "?" in realm else "?") + urlencode(query)
    return _TokenRequest(
        method="GET", url=url, headers={"Authorization": cred.basic()} if cred is not None else {}
    )


def _parse_token_answer(data: bytes, who: str) -> tuple[str, float]:
    """``(token, lifetime in seconds)`` of a token service's JSON answer (``token`` or OAuth2's
    ``access_token``; ``expires_in``, 60 s when absent as distribution's token spec says).

    Raises:
        RegistryError: no token in it (``who`` names the service).
    """
    import json

    try:
        doc = json.loads(data)
    except ValueError:
        doc = None
    token = (doc.get("token") or doc.get("access_token")) if isinstance(doc, dict) else None
    if not isinstance(token, str) or not token:
        raise RegistryError(f"{who} gave no token", kind="protocol")
    expires = doc.get("expires_in") if isinstance(doc, dict) else None
    # Renewed 10 s early by the caller so a token never dies in flight.
    return token, (float(expires) if isinstance(expires, int | float) and expires > 0 else 60.0)


@dataclass(frozen=True, kw_only=True)
class Body:
    """A request body that can be produced again for a retry: ``make()`` returns bytes or a stream."""

    make: Callable[[], Any]
    length: int


class Transport:
    """One registry host ``HOST[:PORT]`` over HTTP(S); see the module docstring."""

    def __init__(self, host: str, options: RegistryOptions) -> None:
        self.host = host
        self.options = options
        self.api_host = "registry-1.docker.io" if host == "docker.io" else host
        self._session = new_session(self._ssl_context)
        self._trusted: str | bool = self._trust()
        self._context: ssl.SSLContext | None = None
        self._scheme: str | None = None
        self._credential: Credential | None = None
        self._credential_looked_up = False
        self._basic = False
        self._tokens: dict[str, _Token] = {}
        self._lock = threading.Lock()
        self._started = time.monotonic()

    # -- trust and scheme ------------------------------------------------------------------------

    def _ssl_context(self) -> ssl.SSLContext:
        """This host's one verifying context (:func:`trust_context` of :meth:`_trust`), built on
        the first HTTPS connection (never for a plain-HTTP loopback registry).

        Raises:
            RegistryError: the CA bundle cannot be read or holds no certificate (``unreachable``).
        """
        with self._lock:
            if self._context is None:
                try:
                    self._context = trust_context(self._trusted)
                except OSError as exc:
                    raise RegistryError(
                        f"registry {self.host} unreachable: CA bundle {self._trusted} cannot be used "
                        f"({_reason(exc)})",
                        kind="unreachable",
                    ) from None
            return self._context

    def _trust(self) -> str | bool:
        opts = self.options
        certs_d = tuple(base / self.host / "ca.crt" for base in opts.certs_dirs)
        return resolve_trust(opts.ca_file, opts.environ, certs_d)

    @property
    def insecure(self) -> bool:
        """Plain HTTP is allowed: a loopback host, or one named with ``--insecure-registry``."""
        return is_loopback_host(self.host) or self.host in self.options.insecure_hosts

    def base(self) -> str:
        """``https://HOST`` or ``http://HOST``, deciding (once) by pinging ``/v2/``."""
        if self._scheme is None:
            self._scheme = self._probe()
        return f"{self._scheme}://{self.api_host}"

    def _probe(self) -> str:
        url = f"https://{self.api_host}/v2/"
        if self.insecure and not self._speaks_tls(url):
            return self._plain()
        attempt = 0
        while True:
            try:
                with self.watch(self.options.request_deadline):
                    resp = self._session.get(
                        url, timeout=self._timeouts(), allow_redirects=False, stream=True
                    )
                    release(resp)
                return "https"
            except requests.exceptions.SSLError as exc:
                if is_untrusted(exc):
                    raise RegistryError(
                        f"{self.host}: "
                        + untrusted_message(_reason(exc), certs_d=f"certs.d/{self.host}/ca.crt"),
                        kind="unreachable",
                    ) from None
                if not self.insecure:
                    raise RegistryError(
                        f"{self.host}: TLS handshake failed ({_reason(exc)}); plain HTTP only with "
                        f"--insecure-registry {self.host}",
                        kind="unreachable",
                    ) from None
                break  # the port speaks plain HTTP
            except requests.ConnectionError as exc:
                refused = "NewConnectionError" in str(exc) or "Connection refused" in str(exc)
                if refused and not _watch_fired() and self._may_retry(attempt, None):
                    attempt += 1
                    self._sleep(attempt, None)
                    continue
                if refused or not self.insecure or _watch_fired():
                    raise self._transport_error("GET", url, exc) from None
                break  # closed on our ClientHello: a plain-HTTP server
            except requests.RequestException as exc:
                raise self._transport_error("GET", url, exc) from None
        return self._plain()

    def _plain(self) -> str:
        if not is_loopback_host(self.host):
            log.warning("INSECURE: talking plain HTTP to %s (--insecure-registry)", self.host)
        return "http"

    def _speaks_tls(self, url: str) -> bool:
        """Whether the port of a host that may talk plain HTTP answers a TLS handshake, asked
        without loading a CA (``False`` only when it answers, or closes, as no TLS server does).

        Loading the trust store costs 30-130 ms of CPU per connection (issue 11: the start of a
        publish to a plain-HTTP loopback registry). Nothing is trusted from this handshake and
        nothing is sent over it: every other outcome (it completes, refused, a timeout) is left
        to the verified probe, which decides ``https`` or words the error exactly as before.

        Raises:
            RegistryError: the request deadline passed (``deadline``).
        """
        parts = urllib3.util.parse_url(url)
        name = (parts.host or "").strip("[]")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # a handshake only: no byte of a request follows
        with self.watch(self.options.request_deadline) as watch:
            try:
                with socket.create_connection(
                    (name, parts.port or 443), timeout=self.options.connect_timeout
                ) as raw:
                    watch.conn = _Socket(raw)
                    raw.settimeout(self.options.read_timeout)
                    with context.wrap_socket(raw, server_hostname=name):
                        return True
            except (ssl.SSLError, ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
                if watch.fired:
                    raise self.deadline_error("GET", url) from None
                return False  # plain HTTP answered our ClientHello (or hung up on it)
            except TimeoutError:
                raise self.deadline_error("GET", url) from None  # what the verified probe says
            except OSError:
                if watch.fired:
                    raise self.deadline_error("GET", url) from None
                return True  # refused or unreachable: the verified probe retries and words it

    def _timeouts(self) -> tuple[float, float]:
        return (self.options.connect_timeout, self.options.read_timeout)

    # -- deadlines -------------------------------------------------------------------------------

    def remaining(self) -> float:
        """Seconds left of the overall deadline."""
        return self.options.deadline - (time.monotonic() - self._started)

    def watch(self, seconds: float | None = None) -> _Watch:
        """A watchdog for one exchange: ``seconds`` (default: the request deadline), never past
        the overall deadline."""
        limit = self.options.request_deadline if seconds is None else seconds
        return _Watch(min(limit, self.remaining()))

    def deadline_error(self, method: str, url: str) -> RegistryError:
        return RegistryError(
            f"{method} {_public(url)}: no complete answer within the deadline (read timeout "
            f"{self.options.read_timeout:g} s, request deadline {self.options.request_deadline:g} s, "
            f"overall {self.options.deadline:g} s; NINFER_REGISTRY_*)",
            kind="deadline",
        )

    def _transport_error(self, method: str, url: str, exc: BaseException) -> RegistryError:
        if _watch_fired() or isinstance(exc, requests.Timeout):
            return self.deadline_error(method, url)
        return RegistryError(
            f"registry {self.host} unreachable: {_reason(exc)}",
            kind="unreachable",
        )

    # -- auth ------------------------------------------------------------------------------------

    def credential(self) -> Credential | None:
        """The credential for this host (looked up once; see :mod:`._credentials`)."""
        if not self._credential_looked_up:
            self._credential = find_credential(self.host, self.options.environ)
            self._credential_looked_up = True
        return self._credential

    def _authorize(self, headers: dict[str, str], repo: str | None, url: str) -> None:
        if urlsplit(url).netloc != self.api_host:
            return  # a redirect to storage (S3, CDN): never send our credentials there
        if repo is not None:
            token = self._tokens.get(repo)
            if token is not None and token.expires_at > time.monotonic():
                headers["Authorization"] = f"Bearer {token.value}"
                return
        if self._basic and self.credential() is not None:
            headers["Authorization"] = self.credential().basic()  # type: ignore[union-attr]

    def _answer(self, header: str, repo: str | None, actions: str) -> None:
        challenge = Challenge.parse(header)
        cred = self.credential()
        if challenge.scheme == "basic":
            if cred is None or cred.is_identity_token:
                found = (
                    "only an identity token was found" if cred is not None else "no credentials were found"
                )
                raise RegistryError(
                    f"{self.host}: the registry requires a login and {found} "
                    "(docker config.json, NINFER_REGISTRY_USERNAME/PASSWORD)",
                    kind="auth",
                    status=401,
                )
            self._basic = True
            return
        if challenge.scheme != "bearer":
            raise RegistryError(
                f"{self.host}: unsupported auth scheme {challenge.scheme!r}", kind="auth", status=401
            )
        scopes = {challenge.params["scope"]} if challenge.params.get("scope") else set()
        if repo is not None:
            scopes.add(f"repository:{repo}:{actions}")
        self._fetch_token(challenge, frozenset(scopes), repo, cred)

    def _token_realm(self, challenge: Challenge) -> str:
        """The challenge's ``realm``: an https URL (http only for loopback or insecure hosts)."""
        realm = challenge.params.get("realm", "")
        parts = urlsplit(realm)
        if parts.scheme not in ("https", "http") or not parts.netloc:
            raise RegistryError(f"{self.host}: token realm {realm!r} is not a URL", kind="protocol")
        if parts.scheme == "http" and not (
            is_loopback_host(parts.netloc) or parts.netloc in self.options.insecure_hosts
        ):
            raise RegistryError(f"{self.host}: token realm {realm!r} is not https", kind="protocol")
        return realm

    def _fetch_token(
        self, challenge: Challenge, scopes: frozenset[str], repo: str | None, cred: Credential | None
    ) -> None:
        """Ask the token service for a token of ``scopes`` and keep it for ``repo``.

        A user name and password: ``GET realm?service=…&scope=…`` with Basic auth (distribution's
        token spec). An identity token: ``POST realm`` with the form ``grant_type=refresh_token``,
        ``refresh_token``, ``service``, ``client_id`` and the space-separated ``scope``
        (distribution's OAuth2 token spec, ``docs/spec/auth/oauth.md``; RFC 6749 §6).
        """
        realm = self._token_realm(challenge)
        netloc = urlsplit(realm).netloc
        request = _token_request(realm, challenge, scopes, cred)
        status, data = self._token_exchange(realm, netloc, request)
        if status in (401, 403):
            who = f"as {cred}" if cred is not None else "anonymously (no credentials found)"
            raise RegistryError(
                f"{self.host}: login refused by the token service {netloc} {who}",
                kind="auth",
                status=status,
            )
        if status != 200:
            raise RegistryError(
                f"{self.host}: token service {netloc} answered HTTP {status}", kind="auth", status=status
            )
        token, lifetime = _parse_token_answer(data, f"{self.host}: token service {netloc}")
        if repo is not None:
            self._tokens[repo] = _Token(
                value=token, expires_at=time.monotonic() + max(lifetime - 10.0, 1.0), scopes=scopes
            )

    def _token_exchange(self, realm: str, netloc: str, request: _TokenRequest) -> tuple[int, bytes]:
        """``(status, capped body)`` of one request to the token service."""
        try:
            with self.watch() as watch:
                resp = self._session.request(
                    request.method,
                    request.url,
                    headers=dict(request.headers),
                    data=request.form,
                    timeout=self._timeouts(),
                    allow_redirects=False,
                    stream=True,
                )
                try:
                    status = resp.status_code
                    data = read_capped(resp, self.options.max_token, what=f"token answer of {netloc}")
                finally:
                    release(resp)
        except requests.RequestException as exc:
            if watch.fired:
                raise self.deadline_error(request.method, realm) from None
            raise self._transport_error(request.method, realm, exc) from None
        return status, data

    # -- one exchange ----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path_or_url: str,
        *,
        repo: str | None,
        push: bool = False,
        headers: Mapping[str, str] | None = None,
        body: Body | None = None,
        retry: bool = True,
        params: Mapping[str, str] | None = None,
    ) -> requests.Response:
        """Send one request (auth, redirects and retries handled); the caller reads and closes it.

        The caller must hold a :meth:`watch` around this call and the reading of the body.
        ``push`` asks for a push-scoped token. With ``retry=False`` a transient failure is
        raised at once (the upload session may have advanced).

        Raises:
            RegistryError: unreachable, deadline, auth refused, redirect loop.
        """
        url = path_or_url if "://" in path_or_url else self.base() + path_or_url
        if params:
            url += ("&" if "?" in url else "?") + urlencode(dict(params))
        actions = "pull,push" if push else "pull"
        state = _Attempts()
        while True:
            sent = {**(headers or {})}
            self._authorize(sent, repo, url)
            try:
                resp = self._send(method, url, sent, body)
            except requests.RequestException as exc:
                if retry and not _watch_fired() and self._may_retry(state.retries, None):
                    state.retries += 1
                    self._sleep(state.retries, None)
                    continue
                raise self._transport_error(method, url, exc) from None
            status = resp.status_code
            if status == 401:
                self._reauthorize(resp, method, url, (repo, actions), state)
            elif status in REDIRECTS and method in ("GET", "HEAD"):
                url = self._redirected(resp, method, url, state)
            elif status in RETRY_STATUS and retry and self._may_retry(state.retries, resp):
                state.retries += 1
                wait = _retry_after(resp)
                release(resp)
                self._sleep(state.retries, wait)
            else:
                return resp

    def _send(self, method: str, url: str, headers: dict[str, str], body: Body | None) -> requests.Response:
        return self._session.request(
            method,
            url,
            headers=headers,
            data=body.make() if body is not None else None,
            timeout=self._timeouts(),
            allow_redirects=False,
            stream=True,
        )

    def _reauthorize(
        self,
        resp: requests.Response,
        method: str,
        url: str,
        scope: tuple[str | None, str],
        state: _Attempts,
    ) -> None:
        """Answer a 401's challenge once per request (``scope``: repository and actions).

        Raises:
            RegistryError: a second 401, or one without a challenge (the credentials are refused).
        """
        repo, actions = scope
        challenge = resp.headers.get("WWW-Authenticate", "")
        release(resp)
        if state.authed or not challenge:
            cred = self.credential()
            who = f"as {cred}" if cred is not None else "without credentials"
            raise RegistryError(
                f"{method} {_public(url)}: HTTP 401 unauthorized {who}", kind="auth", status=401
            )
        state.authed = True
        self._tokens.pop(repo or "", None)  # expired or too narrow: ask again
        self._answer(challenge, repo, actions)

    def _redirected(self, resp: requests.Response, method: str, url: str, state: _Attempts) -> str:
        """Where a redirect points (at most :data:`MAX_REDIRECTS` per request).

        Raises:
            RegistryError: no ``Location``, or too many hops.
        """
        location = resp.headers.get("Location", "")
        status = resp.status_code
        release(resp)
        state.hops += 1
        if not location or state.hops > MAX_REDIRECTS:
            raise RegistryError(
                f"{method} {_public(url)}: more than {MAX_REDIRECTS} redirects",
                kind="protocol",
                status=status,
            )
        return urljoin(url, location)

    def _may_retry(self, attempt: int, resp: requests.Response | None) -> bool:
        return attempt < self.options.retries and self.remaining() > 0

    def _sleep(self, attempt: int, retry_after: float | None) -> None:
        opts = self.options
        time.sleep(
            backoff_wait(
                attempt,
                backoff=opts.backoff,
                backoff_max=opts.backoff_max,
                retry_after=retry_after,
                remaining=self.remaining(),
            )
        )

    def close(self) -> None:
        """Close pooled connections."""
        self._session.close()


def _public(url: str) -> str:
    """The URL without its query (upload-session state, never shown whole)."""
    return url.split("?", 1)[0]


def read_capped(resp: requests.Response, cap: int, *, what: str) -> bytes:
    """The whole body of ``resp``, refusing more than ``cap`` bytes (announced or sent).

    Raises:
        RegistryError: the body is (or announces itself as) larger than ``cap`` — ``protocol``.
    """
    announced = resp.headers.get("Content-Length")
    if announced is not None and announced.isdigit() and int(announced) > cap:
        discard(resp)
        raise RegistryError(
            f"{what}: announces {int(announced)} bytes, more than the {cap} bytes allowed", kind="protocol"
        )
    out = bytearray()
    for chunk in resp.raw.stream(64 * 1024, decode_content=True):
        out += chunk
        if len(out) > cap:
            discard(resp)
            raise RegistryError(f"{what}: more than the {cap} bytes allowed", kind="protocol")
    return bytes(out)


def error_detail(resp: requests.Response) -> tuple[str, str]:
    """``(first distribution error code, one-line detail)`` of an error answer (body capped)."""
    import json

    try:
        data = read_capped(resp, _ERROR_BODY, what="error body")
    except (RegistryError, requests.RequestException, urllib3.exceptions.HTTPError):
        data = b""
    detail = resp.reason or ""
    code = ""
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        errors = json.loads(data).get("errors") or []
        code = str(errors[0].get("code") or "") if errors else ""
        detail = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in errors) or detail
    return code, detail.replace("\n", " ")[:300]


@contextlib.contextmanager
def exchange(transport: Transport, method: str, url: str, seconds: float | None = None) -> Iterator[_Watch]:
    """Hold a watchdog over one exchange; a socket error after it fired becomes the deadline error."""
    with transport.watch(seconds) as watch:
        try:
            yield watch
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            if watch.fired:
                raise transport.deadline_error(method, url) from None
            raise transport._transport_error(method, url, exc) from None
        except RegistryError:
            if watch.fired:
                raise transport.deadline_error(method, url) from None
            raise
