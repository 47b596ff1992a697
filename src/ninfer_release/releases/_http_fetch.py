"""Downloading a published set (or the model) from a plain web server, as an installer does.

This is the HTTP client for *static file servers* (nginx, GitHub release downloads, an S3
bucket): ``GET`` of ``{base}/{tag}/{name}``, nothing else. OCI registries speak another protocol
and have their own client. Requests go through the package's one HTTP transport
(:mod:`ninfer_release.transport`: trust order, sessions without proxies or ``.netrc``, the
deadline watchdog, the retry policy with jitter, ``Retry-After``), as the registry client's do.

Rules (docs/publishing.md, "Fetching by URL"):

* **Schemes** — ``https://``; plain ``http://`` only for loopback hosts (``127.*``, ``localhost``,
  ``[::1]``), as for registries. TLS is verified against ``ca_file``, else ``SSL_CERT_FILE``,
  else the system CAs (:func:`ninfer_release.transport.resolve_trust`).
* **Bounded reads** — a file is read with its expected size (and SHA-256) known beforehand; at
  most that many bytes are accepted (a longer answer is cut and refused). Files of unknown size
  (``SHA256SUMS``, the component manifest) have a cap instead.
* **Time** — connect and read timeouts per request, one overall deadline for the whole fetch
  (each attempt runs under the transport's watchdog, which shuts the socket down when the
  deadline passes), bounded retries (connection errors, cut connections, read timeouts, 5xx,
  429) waiting :func:`ninfer_release.transport.backoff_wait` (jitter; ``Retry-After`` honoured).
* **Resume** — HTTP ``Range``, but only onto a partial *named by the SHA-256 it must reach*
  (``<partials>/<sha256>.partial``): the partial of another artifact has another name, so it is
  never appended to (the release notes forbid resuming the version-3 model onto a version-2
  file). A server that ignores ``Range`` (answers 200) restarts the file from byte 0.
* **Redirects** — followed by hand, at most :attr:`HttpPolicy.max_redirects`; every hop must be
  ``https://`` (``http://`` only between loopback hosts); a redirect to another host is followed
  (GitHub release downloads redirect to ``objects.githubusercontent.com``) unless
  ``cross_host_redirects`` is off. Integrity never rests on the host: every byte is checked
  against the digests of ``SHA256SUMS``. Nothing is ever sent but the ``GET`` (no credentials).
* **Atomic** — a file appears under its name only after its size and digest check. Its bytes
  are written to the partial in blocks of up to 1 MiB (whatever arrived before a cut is written
  first) and made durable (``fsync``) on a helper thread once it is in place, so the flush to disk
  overlaps the next download and the set verification; :meth:`HttpFetcher.close` (the end of the
  ``with`` block) waits for every one and reports a failed one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import ssl
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from ninfer_release import __version__, transport
from ninfer_release.atomic import fsync_path
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.hashing import sha256_file
from ninfer_release.releases._publish import is_bare_name
from ninfer_release.transport import is_loopback_host

_CHUNK = 1 << 20  # 1 MiB
_T = TypeVar("_T")
#: The longest wait between two attempts (seconds), whatever the backoff has grown to.
_BACKOFF_MAX = 10.0

#: ``progress(kind, name, n)``: ``"total"`` (n = bytes the whole fetch will read), ``"start"``
#: (n = the file's size), ``"advance"`` (n = bytes just read, or skipped because already present).
FetchProgress = Callable[[str, str, int], None]


@dataclass(frozen=True, kw_only=True)
class HttpPolicy:
    """Timeouts (seconds), retries, redirects and trust for one fetch."""

    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    #: The whole fetch (every file, every retry) must finish within this many seconds.
    deadline: float = 6 * 3600.0
    #: Extra attempts per file after the first (each resumes where the last stopped).
    retries: int = 4
    #: First backoff (seconds), doubled per retry plus jitter, at most 10 s
    #: (:func:`ninfer_release.transport.backoff_wait`).
    backoff: float = 0.5
    max_redirects: int = 5
    cross_host_redirects: bool = True
    #: PEM CA bundle to trust instead of the system's (a private CA, the tests' CA).
    ca_file: Path | None = None


@dataclass(frozen=True, kw_only=True)
class Wanted:
    """One file to download: where from, its bare ``name``, expected ``size`` (bytes) and SHA-256."""

    name: str
    url: str
    size: int
    sha256: str
    #: Who states the digest, for messages: "SHA256SUMS lists", "the route block lists".
    listed_by: str = "expected"


@dataclass(frozen=True, kw_only=True)
class Fetched:
    """A file now in place: ``status`` says whether it was read now or was already there."""

    name: str
    url: str
    final_url: str
    size: int
    sha256: str
    status: Literal["downloaded", "present"]
    resumed_from: int = 0

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form (``--json`` summary)."""
        return {
            "name": self.name,
            "url": self.url,
            "final_url": self.final_url,
            "size": self.size,
            "sha256": self.sha256,
            "status": self.status,
            "resumed_from": self.resumed_from,
        }


class _Retry(Exception):
    """A transient failure: try again (resuming) while attempts and time remain; ``retry_after``:
    the server's ``Retry-After`` in seconds, if it sent one."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NotFound(InputError):
    """HTTP 404 or 410: the server holds no such file (exit 4; :meth:`HttpFetcher.read_if_present`
    reads it as absent)."""


def check_url(url: str) -> transport.Url:
    """Parse ``url``: ``https://HOST/…``, or ``http://`` for a loopback host only.

    Raises:
        InputError: another scheme, no host, or plain HTTP to a non-loopback host (exit 4).
    """
    parsed = transport.parse_url(url)
    if parsed is None or not parsed.host or parsed.scheme not in {"https", "http"}:
        raise InputError(problems=[Problem(file=url, message="not an https:// URL")])
    if parsed.scheme == "http" and not is_loopback_host(parsed.host):
        raise InputError(
            problems=[
                Problem(file=url, message="plain http:// is allowed only for loopback hosts; use https://")
            ]
        )
    if parsed.auth:
        raise InputError(problems=[Problem(file=url, message="credentials in a URL are refused")])
    return parsed


def join_url(base: str, name: str) -> str:
    """``base`` (ending in ``/``) + the percent-encoded bare ``name``."""
    return base + urllib.parse.quote(name, safe="")


class HttpFetcher:
    """Downloads files by URL under one :class:`HttpPolicy` and one overall deadline."""

    def __init__(self, policy: HttpPolicy, *, progress: FetchProgress | None = None) -> None:
        """Raises: InputError: the CA bundle to trust (``policy.ca_file``, else ``SSL_CERT_FILE``)
        cannot be read as PEM certificates (exit 4)."""
        self.policy = policy
        self.progress = progress
        self._deadline = time.monotonic() + policy.deadline
        trust = transport.resolve_trust(policy.ca_file, os.environ)
        try:
            context = transport.trust_context(trust)
        except (OSError, ssl.SSLError) as exc:
            raise InputError(
                problems=[Problem(file=str(trust), message=f"cannot load the CA file: {exc}")]
            ) from None
        self._session = transport.new_session(lambda: context)
        self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fetch-fsync")
        self._syncs: list[tuple[Path, Future[None]]] = []

    def close(self) -> None:
        """Close every pooled connection and wait until every file placed is on disk.

        Raises:
            InputError: a placed file could not be made durable (``fsync`` failed; exit 4).
        """
        self._session.close()
        self._syncer.shutdown(wait=True)
        failed = []
        for path, done in self._syncs:
            exc = done.exception()
            if exc is not None:
                failed.append(Problem(file=str(path), message=f"cannot be synced to disk: {exc}"))
        self._syncs.clear()
        if failed:
            raise InputError(problems=failed)

    def __enter__(self) -> HttpFetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sync_later(self, path: Path) -> None:
        """``fsync`` the file ``path`` on the helper thread (waited for by :meth:`close`)."""
        self._syncs.append((path, self._syncer.submit(fsync_path, path)))

    # -- one request ---------------------------------------------------------------------------

    def _remaining(self, url: str) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise InputError(
                problems=[
                    Problem(file=url, message=f"the fetch deadline of {self.policy.deadline:g} s passed")
                ]
            )
        return left

    def _note(self, kind: str, name: str, n: int) -> None:
        if self.progress is not None:
            self.progress(kind, name, n)

    def open(self, url: str, *, start: int = 0) -> tuple[transport.Response, str]:
        """``GET url`` (from byte ``start``), following redirects by the policy.

        Returns the unread response (status 200 or 206; its body read through ``.raw``) and the
        URL that answered.

        Raises:
            InputError: 404 and other 4xx, a refused redirect, TLS failure, too many redirects.
            _Retry: a transient failure (connection, timeout, 5xx/429).
        """
        first = check_url(url)
        current = url
        for _hop in range(self.policy.max_redirects + 1):
            resp = self._get(current, start)
            if resp.status_code in transport.REDIRECTS:
                location = resp.headers.get("Location")
                transport.release(resp)
                if not location:
                    raise InputError(
                        problems=[Problem(file=current, message=f"HTTP {resp.status_code} without Location")]
                    )
                target = urllib.parse.urljoin(current, location)
                self._check_redirect(first, current, target)
                current = target
                continue
            if resp.status_code in (200, 206):
                return resp, current
            transport.release(resp)
            if resp.status_code in transport.RETRY_STATUS:
                raise _Retry(f"{current}: HTTP {resp.status_code}", retry_after=transport.retry_after(resp))
            reason = resp.reason or ""
            error = NotFound if resp.status_code in (404, 410) else InputError
            raise error(
                problems=[Problem(file=current, message=f"HTTP {resp.status_code} {reason}".rstrip())]
            )
        raise InputError(
            problems=[Problem(file=url, message=f"more than {self.policy.max_redirects} redirects; refused")]
        )

    def _get(self, url: str, start: int) -> transport.Response:
        """One ``GET`` of ``url`` (its headers; the body unread), redirects not followed.

        Raises:
            InputError: a TLS failure (an untrusted certificate names ``--ca-file``), the deadline.
            _Retry: a connection failure or timeout.
        """
        left = self._remaining(url)
        headers = {"Accept-Encoding": "identity", "User-Agent": f"ninfer-release/{__version__}"}
        if start:
            headers["Range"] = f"bytes={start}-"
        timeout = (min(self.policy.connect_timeout, left), min(self.policy.read_timeout, left))
        try:
            return self._session.get(
                url, headers=headers, allow_redirects=False, stream=True, timeout=timeout
            )
        except transport.TLS_FAILURES as exc:
            why = transport.reason(exc)
            # An untrusted certificate has a fix: the registry's wording, naming --ca-file.
            text = transport.untrusted_message(why) if transport.is_untrusted(exc) else f"TLS failure: {why}"
            raise InputError(problems=[Problem(file=url, message=text)]) from None
        except transport.FAILURES as exc:
            self._remaining(url)  # the watchdog shut the socket down: the deadline, not a retry
            raise _Retry(f"{url}: {transport.reason(exc)}") from None

    def _check_redirect(self, first: transport.Url, current: str, target: str) -> None:
        parsed = transport.parse_url(target)
        why = None
        if parsed is None or not parsed.host:
            why = "not a URL"
        elif not self.policy.cross_host_redirects and parsed.host != first.host:
            # Before the scheme rules: --no-cross-host-redirects holds for loopback http too.
            why = f"another host ({parsed.host}) and cross-host redirects are off"
        elif parsed.scheme == "http":
            # Plain HTTP only between loopback hosts (tests, a local mirror): never a downgrade.
            if not (first.scheme == "http" and is_loopback_host(parsed.host)):
                why = "not https://"
        elif parsed.scheme != "https":
            why = "not https://"
        if why is not None:
            raise InputError(problems=[Problem(file=current, message=f"redirect to {target} refused: {why}")])

    def _stream(self, resp: transport.Response, url: str) -> Iterator[bytes]:
        """The body in chunks; a cut connection or read timeout is a :class:`_Retry`.

        The overall deadline is checked after every socket read, so a body trickling in (one byte
        every read timeout) still ends by ``--deadline`` (issue 36), whoever reads it.

        Raises:
            InputError: the deadline passed.
        """
        try:
            while True:
                # read1: whatever one socket read returns (<= 1 MiB), so the bytes that arrived
                # before a cut or a stall are kept in the partial, not lost in a half-filled buffer.
                chunk = resp.raw.read1(_CHUNK)
                self._remaining(url)
                if not chunk:
                    return
                yield chunk
        except transport.TLS_FAILURES as exc:
            self._remaining(url)
            raise _Retry(f"{url}: TLS read failed: {transport.reason(exc)}") from None
        except transport.FAILURES as exc:
            self._remaining(url)  # a socket the watchdog shut down: the deadline
            raise _Retry(f"{url}: {transport.reason(exc)}") from None

    # -- whole files ---------------------------------------------------------------------------

    def read_capped(self, url: str, *, cap: int, name: str) -> tuple[bytes, str]:
        """The whole body of ``url`` in memory, refused beyond ``cap`` bytes; and the final URL.

        Raises:
            InputError: as :meth:`open`, or retries/deadline exhausted.
            IntegrityError: the body is longer than ``cap``.
        """

        def attempt() -> tuple[bytes, str]:
            resp, final = self.open(url)
            try:
                data = bytearray()
                for chunk in self._stream(resp, url):
                    data += chunk
                    if len(data) > cap:
                        raise IntegrityError(
                            problems=[
                                Problem(file=url, field=name, message=f"longer than its cap of {cap} bytes")
                            ]
                        )
                return bytes(data), final
            finally:
                transport.release(resp)

        return self._with_retries(url, attempt)

    def read_if_present(self, url: str, *, cap: int, name: str) -> bytes | None:
        """As :meth:`read_capped` (the body only), but ``None`` when the server answers 404 or 410.

        Raises:
            InputError: as :meth:`open` for any other refusal, or retries/deadline exhausted.
            IntegrityError: the body is longer than ``cap``.
        """
        try:
            return self.read_capped(url, cap=cap, name=name)[0]
        except NotFound:
            return None

    def _with_retries(self, url: str, attempt: Callable[[], _T]) -> _T:
        """``attempt()`` under the watchdog (its socket shut down when the deadline passes), again
        after each transient failure while retries remain, waiting the one retry policy's time."""
        last = ""
        for n in range(self.policy.retries + 1):
            try:
                with transport.Watch(self._remaining(url)):
                    return attempt()
            except _Retry as exc:
                last = str(exc)
                if n == self.policy.retries:
                    break
                wait = transport.backoff_wait(
                    n + 1,
                    backoff=self.policy.backoff,
                    backoff_max=_BACKOFF_MAX,
                    retry_after=exc.retry_after,
                    remaining=self._remaining(url),
                )
                time.sleep(wait)
        raise InputError(
            problems=[Problem(file=url, message=f"failed after {self.policy.retries + 1} attempts: {last}")]
        )

    def fetch(self, wanted: Wanted, *, dest: Path, partials: Path) -> Fetched:
        """Download ``wanted`` to ``dest`` (a new file), resuming ``partials/<sha256>.partial``.

        An existing ``dest`` with the expected size and digest is kept (``present``); one with
        other bytes is never overwritten. The partial is named by the digest it must reach, so
        only bytes of the same artifact are ever resumed; a partial longer than the expected size
        or not reaching the digest is discarded.

        Raises:
            InputError: ``dest`` holds other bytes; network failures after the retries; 404 etc.
            IntegrityError: the server sent a wrong size or wrong bytes (the partial is removed).
        """
        if not is_bare_name(dest.name) or len(wanted.sha256) != 64:
            raise InputError(
                problems=[Problem(file=wanted.url, field="name", message="not a bare file name")]
            )
        self._note("start", wanted.name, wanted.size)
        if dest.is_file() and not dest.is_symlink():
            if dest.stat().st_size == wanted.size and sha256_file(dest) == wanted.sha256:
                self._note("advance", wanted.name, wanted.size)
                return Fetched(
                    name=wanted.name,
                    url=wanted.url,
                    final_url=wanted.url,
                    size=wanted.size,
                    sha256=wanted.sha256,
                    status="present",
                )
            raise InputError(
                problems=[
                    Problem(file=str(dest), message="already exists with other bytes; refusing to overwrite")
                ]
            )
        if dest.exists() or dest.is_symlink():
            raise InputError(problems=[Problem(file=str(dest), message="exists and is not a regular file")])
        partials.mkdir(parents=True, exist_ok=True)
        partial = partials / f"{wanted.sha256}.partial"
        state = _Partial.open(partial, wanted.size)
        resumed_from = state.size
        if state.size:
            self._note("advance", wanted.name, state.size)
        final_url = wanted.url

        def attempt() -> str:
            return self._download_into(wanted, state)

        try:
            if state.size < wanted.size:
                final_url = self._with_retries(wanted.url, attempt)
            state.close(sync=False)  # made durable once in place, on the helper thread
            got = state.hexdigest()
            if got != wanted.sha256:
                partial.unlink()
                raise _wrong(
                    wanted,
                    f"wrong digest: SHA-256 is {got}, {wanted.listed_by} {wanted.sha256}",
                )
            dest.parent.mkdir(parents=True, exist_ok=True)
            partial.chmod(0o644)
            os.link(partial, dest)  # never replaces a file that appeared meanwhile
            partial.unlink()
            self._sync_later(dest)
        finally:
            state.close()
        return Fetched(
            name=wanted.name,
            url=wanted.url,
            final_url=final_url,
            size=wanted.size,
            sha256=wanted.sha256,
            status="downloaded",
            resumed_from=resumed_from,
        )

    def _download_into(self, wanted: Wanted, state: _Partial) -> str:
        resp, final = self.open(wanted.url, start=state.size)
        try:
            if state.size and resp.status_code == 200:
                # The server ignored Range: the body starts at byte 0 again.
                self._note("advance", wanted.name, -state.size)
                state.restart()
            elif resp.status_code == 206:
                want_range = f"bytes {state.size}-{wanted.size - 1}/{wanted.size}"
                if resp.headers.get("Content-Range", "") != want_range:
                    raise _wrong(
                        wanted,
                        f"wrong size: Content-Range {resp.headers.get('Content-Range')!r}, "
                        f"expected {want_range!r}",
                    )
            length = resp.headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) != wanted.size - state.size:
                raise _wrong(
                    wanted,
                    f"wrong size: the server announces {int(length) + state.size} bytes, "
                    f"expected {wanted.size}",
                )
            for chunk in self._stream(resp, wanted.url):
                if state.size + len(chunk) > wanted.size:
                    state.discard()
                    raise _wrong(
                        wanted,
                        f"wrong size: longer than the expected {wanted.size} bytes; cut and refused",
                    )
                state.append(chunk)
                self._note("advance", wanted.name, len(chunk))
            if state.size < wanted.size:
                raise _Retry(f"{wanted.url}: connection closed at byte {state.size} of {wanted.size}")
            return final
        finally:
            transport.release(resp)


def _wrong(wanted: Wanted, message: str) -> IntegrityError:
    """A finding about the bytes served for ``wanted`` (exit 5), naming its URL and file."""
    return IntegrityError(problems=[Problem(file=wanted.url, field=wanted.name, message=message)])


class _Partial:
    """An append-only partial file and the running SHA-256 of its bytes.

    Appended chunks (one TLS record, ~16 KiB, each) are gathered and written and hashed in blocks
    of :data:`_CHUNK`: ~400 writes for a 388 MB package instead of ~24,000. Each block is written
    and hashed on a helper thread while the next one arrives (at most one block in flight, so
    memory stays at about two blocks; the file's write and hashlib release the GIL): the TLS reads
    and the write+hash of a large package overlap on two cores. ``size`` counts the gathered and
    in-flight bytes too; they reach the file in order, on the next block, :meth:`close` or
    :meth:`discard`, so the file is always a prefix of what arrived.
    """

    def __init__(self, path: Path, expected: int) -> None:
        self.path = path
        self.expected = expected
        self._hash = hashlib.sha256()
        self.size = 0
        self._file = path.open("ab")
        self._gathered = bytearray()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fetch-write")
        self._pending: Future[None] | None = None

    @classmethod
    def open(cls, path: Path, expected: int) -> _Partial:
        """Open (or create) ``path``; an existing partial's bytes are hashed first to resume."""
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise InputError(problems=[Problem(file=str(path), message="partial is not a regular file")])
        if path.is_file() and path.stat().st_size > expected:
            path.unlink()  # longer than the artifact: cannot be a prefix of it
        state = cls(path, expected)
        with path.open("rb") as f:
            while chunk := f.read(_CHUNK):
                state._hash.update(chunk)
                state.size += len(chunk)
        return state

    def append(self, chunk: bytes) -> None:
        self._gathered += chunk
        self.size += len(chunk)
        if len(self._gathered) >= _CHUNK:
            self._write_gathered()

    def _write_gathered(self) -> None:
        """Hand the gathered block to the writer (after the previous one is written and hashed)."""
        if self._gathered:
            block, self._gathered = self._gathered, bytearray()
            self._settle()
            self._pending = self._writer.submit(self._write_block, block)

    def _write_block(self, block: bytearray) -> None:
        self._file.write(block)
        self._hash.update(block)

    def _settle(self) -> None:
        """Wait for the block in flight; its write's error (``OSError``) is raised here."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def restart(self) -> None:
        self._settle()
        self._gathered = bytearray()
        self._file.truncate(0)
        self._file.seek(0)
        self._hash = hashlib.sha256()
        self.size = 0

    def discard(self) -> None:
        self.close(sync=False)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def close(self, *, sync: bool = True) -> None:
        """Write what is gathered and close; ``sync``: ``fsync`` first (a partial kept for a resume)."""
        if not self._file.closed:
            try:
                self._write_gathered()
                self._settle()
                self._file.flush()
                if sync:
                    os.fsync(self._file.fileno())
            finally:
                self._writer.shutdown(wait=True)
                self._file.close()

    def hexdigest(self) -> str:
        """The SHA-256 of every byte appended (call after :meth:`close`)."""
        return self._hash.hexdigest()
