"""The HTTP downloader against a misbehaving loopback server (plain http://, allowed on loopback):
bodies longer than expected without a Content-Length, stalls, 5xx then success, servers that
ignore Range, the overall deadline (releases/_http_fetch.py).
"""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ninfer_release.errors import InputError, IntegrityError
from ninfer_release.releases._http_fetch import HttpFetcher, HttpPolicy, Wanted, check_url

BODY = bytes(range(256)) * 1024  # 256 KiB
SHA = hashlib.sha256(BODY).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    counts: dict[str, int] = {}  # noqa: RUF012 - shared by the test server on purpose
    ranges: list[str | None] = []  # noqa: RUF012

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        n = self.counts[self.path] = self.counts.get(self.path, 0) + 1
        self.ranges.append(self.headers.get("Range"))
        if self.path == "/longer":  # no Content-Length, more bytes than expected
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(BODY + b"extra")
            self.close_connection = True
        elif self.path == "/stall":
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[:1000])
            self.wfile.flush()
            time.sleep(1.5)
            self.close_connection = True
        elif self.path == "/trickle":  # one byte every 0.2 s: never a read timeout
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            for _ in range(100):
                try:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.2)
        elif self.path == "/busy" and n == 1:  # 429 with a Retry-After the client must wait
            self.send_response(429)
            self.send_header("Retry-After", "0.4")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/flaky" and n == 1:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/redirect-loop":
            self.send_response(302)
            self.send_header("Location", "/redirect-loop")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path in ("/flaky", "/no-range", "/busy"):  # /no-range ignores Range: always 200, whole body
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.counts = {}
    _Handler.ranges = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _fetch(url: str, tmp_path: Path, **policy: float) -> Path:
    dest = tmp_path / "out" / "file.bin"
    fast = {"retries": 2, "backoff": 0.01, "read_timeout": 0.5, **policy}
    with HttpFetcher(HttpPolicy(**fast)) as http:  # type: ignore[arg-type]
        http.fetch(
            Wanted(name="file.bin", url=url, size=len(BODY), sha256=SHA), dest=dest, partials=tmp_path / "p"
        )
    return dest


def test_a_longer_answer_without_length_is_cut_and_refused(server: str, tmp_path: Path) -> None:
    with pytest.raises(IntegrityError, match="longer than the expected 262144 bytes; cut and refused"):
        _fetch(server + "/longer", tmp_path)
    assert not (tmp_path / "out" / "file.bin").exists()
    assert list((tmp_path / "p").iterdir()) == []  # the partial is discarded: it cannot be a prefix


def test_a_stalled_server_hits_the_read_timeout_then_the_retry_bound(server: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="failed after 3 attempts") as info:
        _fetch(server + "/stall", tmp_path)
    assert len(info.value.lines) == 1
    assert _Handler.counts["/stall"] == 3
    # each retry asks for the rest of the partial (the 1000 bytes that arrived are kept); this
    # server answers 200 (ignores Range), so each attempt restarts at byte 0 and stalls at 1000
    assert _Handler.ranges == [None, "bytes=1000-", "bytes=1000-"]


def test_a_503_is_retried(server: str, tmp_path: Path) -> None:
    assert _fetch(server + "/flaky", tmp_path).read_bytes() == BODY
    assert _Handler.counts["/flaky"] == 2


def test_a_retry_waits_at_least_the_servers_retry_after(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The one retry policy (transport.backoff_wait): backoff 0.01 s plus jitter, but never less
    # than the 0.4 s the server asked for.
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)  # the module the fetcher sleeps with
    assert _fetch(server + "/busy", tmp_path).read_bytes() == BODY
    assert _Handler.counts["/busy"] == 2
    assert waits == [0.4]


def test_a_server_ignoring_range_restarts_from_byte_zero(server: str, tmp_path: Path) -> None:
    partial = tmp_path / "p" / f"{SHA}.partial"
    partial.parent.mkdir()
    partial.write_bytes(BODY[:5000])
    assert _fetch(server + "/no-range", tmp_path).read_bytes() == BODY
    assert _Handler.ranges == ["bytes=5000-"]


def test_the_overall_deadline_stops_retries(server: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="deadline of 1 s passed"):
        _fetch(server + "/stall", tmp_path, deadline=1.0, retries=10)


def test_a_trickling_body_read_whole_ends_by_the_deadline(server: str) -> None:
    # issue 36: the capped whole-body reader (SHA256SUMS, the records) checked no deadline, so a
    # server sending one byte per read timeout kept `fetch URL --deadline 5` running forever.
    with (
        HttpFetcher(HttpPolicy(deadline=1.0, read_timeout=0.5, retries=0)) as http,
        pytest.raises(InputError, match="deadline of 1 s passed"),
    ):
        http.read_capped(server + "/trickle", cap=1000, name="SHA256SUMS")


def test_redirect_loop_and_404(server: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="more than 5 redirects"):
        _fetch(server + "/redirect-loop", tmp_path)
    with pytest.raises(InputError, match="HTTP 404"):
        _fetch(server + "/missing", tmp_path)
    assert _Handler.counts["/redirect-loop"] == 6


@pytest.mark.parametrize(
    "url",
    [
        "ftp://127.0.0.1/x",
        "http://10.0.0.1/x",
        "http://example.org/x",
        "https://user:pw@127.0.0.1/x",
        "nonsense",
    ],
)
def test_urls_refused(url: str) -> None:
    with pytest.raises(InputError):
        check_url(url)


def test_progress_reports_start_and_every_byte_including_a_resumed_partial(
    server: str, tmp_path: Path
) -> None:
    events: list[tuple[str, str, int]] = []
    partial = tmp_path / "p" / f"{SHA}.partial"
    partial.parent.mkdir()
    partial.write_bytes(BODY[:5000])
    with HttpFetcher(HttpPolicy(retries=0), progress=lambda *e: events.append(e)) as http:
        http.fetch(
            Wanted(name="file.bin", url=server + "/no-range", size=len(BODY), sha256=SHA),
            dest=tmp_path / "file.bin",
            partials=tmp_path / "p",
        )
    assert events[0] == ("start", "file.bin", len(BODY))
    assert events[1] == ("advance", "file.bin", 5000)  # the partial counts as done...
    assert events[2] == ("advance", "file.bin", -5000)  # ...until the server ignores Range
    assert sum(n for kind, _, n in events if kind == "advance") == len(BODY)


def test_a_missing_or_bad_ca_file_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "bad.pem").write_text("not a certificate\n")
    for ca in (tmp_path / "missing.pem", tmp_path / "bad.pem"):
        with pytest.raises(InputError, match="cannot load the CA file") as info:
            HttpFetcher(HttpPolicy(ca_file=ca))
        assert str(ca) in info.value.lines[0]


def test_a_partial_written_on_its_helper_thread_is_the_bytes_in_order(tmp_path: Path) -> None:
    """Blocks are written and hashed on a helper thread while the next arrives: the file is the
    bytes appended, in order, with their SHA-256; a restart in flight starts from nothing."""

    from ninfer_release.releases._http_fetch import _CHUNK, _Partial

    data = bytes(range(256)) * (3 * _CHUNK // 256) + b"tail"
    path = tmp_path / "p.partial"
    state = _Partial.open(path, len(data))
    state.append(b"junk" * (_CHUNK // 4 + 1))  # one block handed to the writer
    state.restart()
    for i in range(0, len(data), 16_384):
        state.append(data[i : i + 16_384])
    assert state.size == len(data)
    state.close(sync=False)
    assert path.read_bytes() == data
    assert state.hexdigest() == hashlib.sha256(data).hexdigest()
    resumed = _Partial.open(path, len(data) + 1)  # a resume hashes the prefix it finds
    assert resumed.size == len(data)
    resumed.close(sync=False)


@pytest.mark.parametrize(
    ("target", "allowed"),
    [
        ("http://127.0.0.1:1/x", True),  # same loopback host, plain http between loopback: allowed
        ("http://localhost:1/x", False),  # another (loopback) host: --no-cross-host-redirects holds
        ("https://localhost:1/x", False),
    ],
)
def test_no_cross_host_redirects_holds_between_loopback_hosts(target: str, allowed: bool) -> None:
    # issue 36: the loopback-http rule was decided before the cross-host one, so a redirect from
    # http://127.0.0.1 to http://localhost was followed with --no-cross-host-redirects.
    import urllib3

    with HttpFetcher(HttpPolicy(cross_host_redirects=False)) as http:
        first = urllib3.util.parse_url("http://127.0.0.1:1/set/SHA256SUMS")
        if allowed:
            http._check_redirect(first, "http://127.0.0.1:1/set/SHA256SUMS", target)
        else:
            with pytest.raises(InputError, match="cross-host redirects are off"):
                http._check_redirect(first, "http://127.0.0.1:1/set/SHA256SUMS", target)
