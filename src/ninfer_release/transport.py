"""The one HTTP transport: every request the package sends (registry client and fetch by URL).

Built on ``requests``/``urllib3`` (connection pooling, TLS, chunked bodies). What they do not do,
and both callers need, is here, once (docs/architecture.md, "HTTP transport"):

* **trust** — :func:`resolve_trust`: ``--ca-file``, else (registries) ``certs.d/HOST:PORT/ca.crt``,
  else ``SSL_CERT_FILE``, else the system store; loaded once into one verifying ``SSLContext``
  (:func:`trust_context`) that every HTTPS connection of a session reuses. An untrusted
  certificate is reported by the one message template :func:`untrusted_message`;
* **deadlines** — connect/read timeouts per socket operation, plus a wall-clock deadline per
  exchange (:func:`watch`) enforced by a watchdog that shuts the socket down: a server sending
  one byte every few seconds defeats read timeouts alone, so every read of a body made under a
  watch ends by its deadline;
* **retries** — which answers are transient (:data:`RETRY_STATUS`: 429 and 500/502/503/504, plus
  connection errors), ``Retry-After`` (:func:`retry_after`), and the one backoff policy
  (:func:`backoff_wait`: exponential with jitter, capped, never past the deadline);
* **proxies** — none: sessions ignore the environment (``trust_env`` off: no proxy variables, no
  ``.netrc``), so what is sent is what the caller chose;
* **sessions** — :func:`new_session`: requests' session with no retries of urllib3's own (ours),
  redirects left to the caller, connections the watchdog can reach.

Callers word their own errors (registry: ``RegistryError``; fetch: ``InputError``); this module
raises none of its own beyond the libraries'.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import random
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests
import requests.adapters
import requests.utils
import urllib3.connection
import urllib3.connectionpool
import urllib3.util

if TYPE_CHECKING:
    from requests.adapters import _HostParams, _PoolKwargs

#: Answers worth another attempt: too many requests and the transient server errors.
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
USER_AGENT = "ninfer-release"
#: The most bytes :func:`release` reads of an answer beyond what its reader took (an error body, a
#: 202's JSON) to reach its end and keep the connection; past it the connection is closed instead.
LEFTOVER = 4096
#: What a request or a body read raises when it fails: the libraries' errors and the OS's (a
#: socket the watchdog shut down). Callers catch these and word their own error.
FAILURES: tuple[type[BaseException], ...] = (
    requests.RequestException,
    urllib3.exceptions.HTTPError,
    OSError,
)
#: What a TLS failure raises: on connecting (requests' wrapping) and on a body read (urllib3's).
TLS_FAILURES: tuple[type[BaseException], ...] = (requests.exceptions.SSLError, urllib3.exceptions.SSLError)
#: A response of :func:`new_session` (``requests.Response``; read its body through ``.raw``).
Response = requests.Response
#: A parsed URL (:func:`parse_url`): ``scheme``, ``host``, ``port``, ``auth``, ``path``.
Url = urllib3.util.Url


def parse_url(url: str) -> Url | None:
    """``url`` parsed as the transport will send it (RFC 3986, urllib3's parser); ``None`` when it
    is not a URL at all."""
    try:
        return urllib3.util.parse_url(url)
    except urllib3.exceptions.LocationParseError:
        return None


def is_loopback_host(host: str) -> bool:
    """Whether ``HOST[:PORT]`` is loopback (``localhost``, ``127.*``, ``[::1]``)."""
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name in {"localhost", "[::1]"} or name.startswith("127.")


# --- the watchdog -------------------------------------------------------------------------------

_local = threading.local()


class _Watchdog:
    """One daemon thread that fires every due :class:`Watch` of the process (a deadline heap).

    A watch per exchange used to be a ``threading.Timer``: a thread started per request, and
    ``Thread.start`` waits until the new thread has run, which takes up to a GIL switch interval
    per request while the publish verification's thread holds the GIL (issue 11: ~40 exchanges).
    Here entering a watch is a heap push under a lock; the thread starts once.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Empty, with no thread yet (it starts on the first watch). Also a forked child's start
        (``os.register_at_fork``): the parent's thread is not in the child, and its lock may have
        been held when the child was forked."""
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Watch]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, watch: Watch, seconds: float) -> None:
        """Fire ``watch`` in ``seconds`` unless it is disarmed first."""
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + seconds, next(self._seq), watch))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="registry-watchdog", daemon=True)
                self._thread.start()
            elif self._heap[0][2] is watch:
                self._cond.notify()  # an earlier deadline than the one the thread sleeps towards

    def disarm(self, watch: Watch) -> None:
        """``watch`` never fires from now on (its heap entry is dropped when it comes up)."""
        with self._cond:
            watch.armed = False

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                while self._heap and (not self._heap[0][2].armed or self._heap[0][0] <= now):
                    _, _, due = heapq.heappop(self._heap)
                    if due.armed:
                        due.armed = False
                        due.fire()  # a socket shutdown: never blocks
                self._cond.wait(self._heap[0][0] - now if self._heap else None)


_WATCHDOG = _Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WATCHDOG.reset)


@dataclass(frozen=True)
class _Socket:
    """A bare socket where the watchdog looks for a connection's (``conn.sock``)."""

    sock: socket.socket


class Watch:
    """Shuts down the socket this thread is using when the deadline passes."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self.armed = False
        self.conn: urllib3.connection.HTTPConnection | _Socket | None = None
        self._seconds = max(seconds, 0.0)
        self._outer: Watch | None = None

    def fire(self) -> None:
        self.fired = True
        conn = self.conn
        sock = getattr(conn, "sock", None) if conn is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> Watch:
        self._outer = getattr(_local, "watch", None)
        _local.watch = self
        self.armed = True
        _WATCHDOG.arm(self, self._seconds)
        return self

    def __exit__(self, *exc: object) -> None:
        _WATCHDOG.disarm(self)
        _local.watch = self._outer


def _track(conn: urllib3.connection.HTTPConnection) -> None:
    watch = getattr(_local, "watch", None)
    if watch is not None:
        watch.conn = conn


def _untrack(conn: object) -> None:
    """``conn`` goes back to the pool: no watch of this thread may shut it down any more (another
    thread's next exchange may take it before this thread's watch is disarmed)."""
    watch = getattr(_local, "watch", None)
    while watch is not None:
        if watch.conn is conn:
            with _WATCHDOG._cond:  # fire() runs under it: after this, it cannot reach conn
                watch.conn = None
        watch = watch._outer


class _Tracked:
    """What both connection classes add: the watchdog tracks the connection from its first
    request, and a body piece that sends itself (a file range) is sent by it."""

    sock: Any

    def request(self, *args: Any, **kwargs: Any) -> None:
        _track(self)  # type: ignore[arg-type]
        super().request(*args, **kwargs)  # type: ignore[misc]

    def send(self, data: Any) -> None:
        send_to = getattr(data, "send_to", None)
        if send_to is not None:
            send_to(self.sock)
        else:
            super().send(data)  # type: ignore[misc]


class _HTTPConnection(_Tracked, urllib3.connection.HTTPConnection):
    pass


class _HTTPSConnection(_Tracked, urllib3.connection.HTTPSConnection):
    pass


class _HTTPPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection

    def _put_conn(self, conn: Any) -> None:
        _untrack(conn)
        super()._put_conn(conn)


class _HTTPSPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection

    def _put_conn(self, conn: Any) -> None:
        _untrack(conn)
        super()._put_conn(conn)


def trust_context(location: str | bool) -> ssl.SSLContext:
    """A verifying client ``SSLContext`` trusting ``location``: a CA bundle file, a hashed CA
    directory, or ``True`` when the system has neither (requests' bundle then, as requests would
    use). Loading costs 30-130 ms of CPU, so a :class:`Transport` builds one per host, on its
    first HTTPS connection, and keeps it.

    Raises:
        OSError: the bundle cannot be read (ssl.SSLError: it holds no certificate).
    """
    context = urllib3.util.ssl_.create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
    path = requests.utils.DEFAULT_CA_BUNDLE_PATH if location is True else str(location)
    if Path(path).is_dir():
        context.load_verify_locations(capath=path)
    else:
        context.load_verify_locations(cafile=path)
    return context


class _Adapter(requests.adapters.HTTPAdapter):
    """requests' adapter with connections the watchdog can reach, no urllib3 retries (ours), and
    every HTTPS pool on one ``SSLContext`` (``context()``, built once by the transport): requests
    would hand urllib3 the CA path instead, which loads it again for every new connection."""

    def __init__(self, context: Callable[[], ssl.SSLContext], **kwargs: Any) -> None:
        self._context = context
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}

    def build_connection_pool_key_attributes(
        self, request: requests.PreparedRequest, verify: bool | str, cert: Any = None
    ) -> tuple[_HostParams, _PoolKwargs]:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        if host_params.get("scheme") == "https":
            pool_kwargs = {"cert_reqs": "CERT_REQUIRED", "ssl_context": self._context()}
        return host_params, pool_kwargs

    def cert_verify(self, conn: Any, url: str, verify: bool | str, cert: Any) -> None:
        if url.lower().startswith("https"):  # the pool's context holds the trust: no CA path
            conn.cert_reqs = "CERT_REQUIRED"
            conn.ca_certs = None
            conn.ca_cert_dir = None
            return
        super().cert_verify(conn, url, verify, cert)  # type: ignore[no-untyped-call]


def watch_fired() -> bool:
    """Whether the innermost watch of this thread has fired (its deadline passed)."""
    watch = getattr(_local, "watch", None)
    return bool(watch is not None and watch.fired)


def retry_after(resp: requests.Response) -> float | None:
    """``Retry-After`` in seconds (RFC 9110 §10.2.3), ``None`` when absent or an HTTP date."""
    value = resp.headers.get("Retry-After", "")
    try:
        return float(value) if value else None
    except ValueError:
        return None  # an HTTP date: fall back to our backoff


def reason(exc: BaseException) -> str:
    """The cause a person can act on (``Connection refused``, a TLS error), not the HTTP
    library's wrapping: the innermost OS error's text when there is one."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    cause: OSError | None = None
    while pending:  # urllib3 wraps the OS error two or three times
        e = pending.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.strerror:
            cause = e
        linked = (e.__cause__, e.__context__, getattr(e, "reason", None), *e.args)
        pending += [x for x in linked if isinstance(x, BaseException)]
    if cause is not None:
        return str(cause.strerror)
    text = re.sub(r"<?urllib3[^>]*>:?\s*|_?HTTPS?Connection\([^)]*\):?\s*", "", str(exc))
    return f"{exc.__class__.__name__}: {text}".replace("\n", " ")[:300]


def backoff_wait(
    attempt: int, *, backoff: float, backoff_max: float, retry_after: float | None, remaining: float
) -> float:
    """Seconds to wait before retry number ``attempt`` (1 for the first): the one retry policy.

    ``backoff * 2**(attempt-1)`` plus up to as much random jitter (so many clients retrying the
    same server spread out), at most ``backoff_max``; at least a server's ``retry_after``; never
    past ``remaining`` (the caller's deadline), never negative.
    """
    base: float = backoff * 2.0 ** (attempt - 1)
    wait = min(base + random.uniform(0, base), backoff_max)  # noqa: S311 - jitter, not crypto
    if retry_after is not None:
        wait = max(wait, retry_after)
    return max(0.0, min(wait, remaining))


def resolve_trust(
    ca_file: Path | None, environ: Mapping[str, str], certs_d: tuple[Path, ...] = ()
) -> str | bool:
    """Where the CA certificates to trust are: ``ca_file`` (``--ca-file``), else the first
    ``ca.crt`` of ``certs_d`` (docker's ``certs.d/HOST:PORT/``, registries only), else
    ``SSL_CERT_FILE`` of ``environ``, else the system's CA file or directory, else ``True``
    (requests' bundle). The result is what :func:`trust_context` loads."""
    if ca_file is not None:
        return str(ca_file)
    for ca in certs_d:
        if ca.is_file():
            return str(ca)
    env_file = environ.get("SSL_CERT_FILE")
    if env_file:
        return env_file
    default = ssl.get_default_verify_paths()
    if default.cafile and Path(default.cafile).is_file():
        return default.cafile
    return default.capath if default.capath and Path(default.capath).is_dir() else True


def is_untrusted(exc: BaseException) -> bool:
    """Whether a TLS error says the peer's certificate is not trusted (not a handshake failure)."""
    text = str(exc)
    return "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text


def untrusted_message(why: str, *, certs_d: str = "") -> str:
    """The one wording of an untrusted server certificate (registry and fetch): the reason and
    the fix, ``--ca-file`` or ``SSL_CERT_FILE`` (and ``certs_d``, a registry's ``certs.d`` path)."""
    where = f"--ca-file, SSL_CERT_FILE or {certs_d}" if certs_d else "--ca-file or SSL_CERT_FILE"
    return f"TLS certificate not trusted ({why}); give the CA with {where}"


def new_session(context: Callable[[], ssl.SSLContext], *, pool_maxsize: int = 8) -> requests.Session:
    """A session for one command: connections the watchdog can reach, every HTTPS pool on the
    one ``SSLContext`` ``context()`` returns (called on the first HTTPS connection), no retries
    of urllib3's own, no proxy or ``.netrc`` from the environment."""
    session = requests.Session()
    session.trust_env = False  # no .netrc, no proxy variables: what we send is what we chose
    session.headers["User-Agent"] = USER_AGENT
    adapter = _Adapter(context, pool_connections=4, pool_maxsize=pool_maxsize, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def release(resp: requests.Response, leftover: int = LEFTOVER) -> None:
    """Done with ``resp``: read what is left of its body, at most ``leftover`` bytes (dropped), so
    its connection goes back to the pool for the next request; an answer longer than that, or a
    read that fails (reset, timeout, the watchdog), closes the connection (:func:`discard`)."""
    raw = resp.raw
    left = leftover
    try:
        # Decoded as its reader read it (urllib3 refuses raw reads after decoded ones); a blob read
        # raw and left unfinished fails to decode if it was encoded, and is closed.
        while not raw.closed and (data := raw.read(min(left + 1, 64 * 1024), decode_content=True)):
            left -= len(data)
            if left < 0:
                discard(resp)
                return
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError):
        discard(resp)
        return
    resp.close()  # read to its end: urllib3 has put the connection back; this only tidies up


def discard(resp: requests.Response) -> None:
    """Close ``resp`` and its connection (its unread bytes would be the next request's answer);
    the pool opens a new one when it is next needed."""
    resp.raw.close()
    resp.close()
