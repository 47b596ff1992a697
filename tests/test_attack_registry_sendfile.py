"""Attack on issue 13's registry uploads sent with ``os.sendfile`` (``_transport.send_file_range``).

On plain HTTP a file's bytes go by ``os.sendfile`` on a socket made blocking, bounded per call by
``SO_SNDTIMEO``: a registry that keeps reading, slowly, never lets that bound fire. What still
ends such an upload is the exchange's watchdog (the overall deadline), which must reach the
blocking ``sendfile``: a trickling registry is a ``deadline`` error in time, not a hang.
"""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ninfer_release.registry import BlobSource, RegistryClient, RegistryError, RegistryOptions

#: Far beyond the 2 s overall deadline given to the client: only a hang gets near it.
_HANG_S = 30.0


class _Trickle(http.server.BaseHTTPRequestHandler):
    """A registry that starts every upload and then reads its body at ~400 KB/s, forever."""

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._answer(200 if self.path == "/v2/" else 404)

    def do_HEAD(self) -> None:
        self._answer(404)

    def do_POST(self) -> None:
        self._answer(202, {"Location": "/v2/r/x/blobs/uploads/u1"})

    def _trickle(self) -> None:
        try:
            while self.rfile.read(4096):
                time.sleep(0.01)
        except OSError:
            pass

    do_PUT = do_PATCH = _trickle


@pytest.fixture
def trickle() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("size", [24 << 20, 40 << 20], ids=["monolithic", "chunked"])
def test_a_registry_that_reads_slowly_ends_the_upload_at_the_deadline(
    trickle: str, tmp_path: Path, size: int
) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"z" * size)  # a file: its bytes go by sendfile
    blob = BlobSource(
        digest="sha256:" + hashlib.sha256(b"z" * size).hexdigest(), size=size, path=path, name="blob"
    )
    options = RegistryOptions(
        connect_timeout=0.5, read_timeout=0.5, request_deadline=2.0, deadline=2.0, retries=0, backoff=0.01
    )
    client = RegistryClient(trickle, options=options)
    errors: list[BaseException] = []

    def push() -> None:
        try:
            client.push_blob("r/x", blob)
        except BaseException as exc:  # noqa: BLE001 - checked below
            errors.append(exc)

    worker = threading.Thread(target=push, daemon=True)
    worker.start()
    worker.join(_HANG_S)
    assert not worker.is_alive(), "the upload to a trickling registry did not end at its deadline"
    assert len(errors) == 1 and isinstance(errors[0], RegistryError), errors
    assert errors[0].kind == "deadline", errors[0]
