"""Upload bodies (issue 11): a blob's bytes are never held whole in memory, a file's are sent by
the kernel, and an upload stops when asked.

Every upload body is a :class:`_Window` over the blob's stream: at most its length, from its start
again each time it is iterated (a retry, a 401). A file's window hands over
:class:`FileRange` pieces, which the connection sends with ``os.sendfile`` on plain HTTP and
reads with ``os.pread`` on TLS (:func:`send_file_range`); an in-memory blob's hands over bytes.
"""

from __future__ import annotations

import io
import socket
import ssl
import threading
from pathlib import Path

import pytest

from ninfer_release.registry import RegistryError
from ninfer_release.registry._client import _FILE_PIECE, _UPLOAD_PIECE, _Window
from ninfer_release.registry._transport import FileRange, send_file_range


def test_a_memory_window_gives_its_bytes_only_and_again_for_a_retry() -> None:
    data = bytes(range(256)) * 40_000  # 10,240,000 bytes
    window = _Window(io.BytesIO(data), 1_000_003, 5_000_000)
    assert len(window) == 5_000_000
    first = list(window)
    assert all(isinstance(p, bytes) and len(p) <= _UPLOAD_PIECE for p in first)
    assert b"".join(first) == data[1_000_003:6_000_003]  # type: ignore[arg-type]
    assert b"".join(window) == data[1_000_003:6_000_003]  # type: ignore[arg-type]  # a retry: the same


def test_a_file_window_hands_over_ranges_of_the_file_and_reports_them(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"z" * (2 * _FILE_PIECE + 7))
    seen: list[int] = []
    with path.open("rb") as stream:
        pieces = list(_Window(stream, 5, 2 * _FILE_PIECE, name="blob", report=seen.append))
    assert [(p.offset, p.length) for p in pieces] == [  # type: ignore[union-attr]
        (5, _FILE_PIECE),
        (5 + _FILE_PIECE, _FILE_PIECE),
    ]
    assert all(isinstance(p, FileRange) and p.name == "blob" for p in pieces)
    assert seen == [_FILE_PIECE, _FILE_PIECE]


def test_a_short_stream_is_a_digest_error_not_fewer_bytes() -> None:
    window = _Window(io.BytesIO(b"abc"), 1, 10, name="x.zip")
    with pytest.raises(RegistryError, match=r"x\.zip: file shrank while uploading") as info:
        list(window)
    assert info.value.code == "DIGEST_INVALID"


def test_a_set_cancel_stops_the_body_before_its_next_piece() -> None:
    cancel = threading.Event()
    pieces = iter(_Window(io.BytesIO(b"y" * (_UPLOAD_PIECE + 1)), 0, _UPLOAD_PIECE + 1, cancel=cancel))
    assert len(next(pieces)) == _UPLOAD_PIECE
    cancel.set()
    with pytest.raises(RegistryError, match="upload cancelled") as info:
        next(pieces)
    assert info.value.kind == "cancelled"


def test_upload_bodies_are_iterables_not_file_likes() -> None:
    """urllib3 reads a file-like body 16 KiB at a time; ours go in pieces."""
    assert not hasattr(_Window(io.BytesIO(b""), 0, 0), "read")


def _received(server: socket.socket, nbytes: int) -> bytes:
    got = bytearray()
    while len(got) < nbytes:
        data = server.recv(1 << 20)
        assert data
        got += data
    return bytes(got)


def test_a_file_range_is_sent_exactly_and_the_socket_keeps_its_timeout(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    data = bytes(range(251)) * 20_000  # 5,020,000 bytes, no period of a power of two
    path.write_bytes(data)
    ours, theirs = socket.socketpair()
    with ours, theirs, path.open("rb") as stream:
        ours.settimeout(7.5)
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(_received(theirs, 4_000_000)))
        reader.start()
        send_file_range(ours, FileRange(stream, 1_000_000, 4_000_000))
        reader.join()
        assert got == [data[1_000_000:5_000_000]]
        assert stream.tell() == 0  # the file's offset never moves
        assert ours.gettimeout() == 7.5


def test_a_peer_that_reads_nothing_times_out_at_the_socket_timeout(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"q" * (64 << 20))  # more than any socket buffer holds
    ours, theirs = socket.socketpair()
    with ours, theirs, path.open("rb") as stream:
        ours.settimeout(0.2)
        with pytest.raises(TimeoutError):
            send_file_range(ours, FileRange(stream, 0, 64 << 20))
        assert ours.gettimeout() == 0.2


def test_a_file_shorter_than_its_range_is_a_digest_error(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"abc")
    ours, theirs = socket.socketpair()
    with ours, theirs, path.open("rb") as stream:
        ours.settimeout(5)
        with pytest.raises(RegistryError, match=r"b\.zip: file shrank while uploading") as info:
            send_file_range(ours, FileRange(stream, 0, 10, "b.zip"))
        assert info.value.code == "DIGEST_INVALID"
        assert _received(theirs, 3) == b"abc"


def test_on_tls_a_file_range_is_read_and_sent_not_sendfiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel cannot encrypt: a TLS socket gets the bytes through ``sendall``."""
    import os

    path = tmp_path / "blob"
    data = bytes(range(256)) * 50_000
    path.write_bytes(data)

    def no_sendfile(*args: object) -> int:
        raise AssertionError("sendfile on a TLS socket")

    monkeypatch.setattr(os, "sendfile", no_sendfile)
    sent: list[bytes] = []

    class FakeTls(ssl.SSLSocket):
        def __init__(self) -> None:  # never connected: only sendall is called
            pass

        def sendall(self, data: object, flags: int = 0) -> None:
            assert isinstance(data, bytes)
            sent.append(data)

    with path.open("rb") as stream:
        send_file_range(FakeTls(), FileRange(stream, 3, len(data) - 3))
    assert b"".join(sent) == data[3:]
    assert max(len(p) for p in sent) <= 4 << 20


def test_a_socket_wrapper_that_is_not_a_plain_socket_gets_sendall_not_sendfile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An allowlist: a socket subclass (an encrypting or tunnelling wrapper that is no
    ``ssl.SSLSocket``) must never have the file's plain bytes written to its descriptor."""
    import os

    path = tmp_path / "blob"
    data = bytes(range(256)) * 1_000
    path.write_bytes(data)

    def no_sendfile(*args: object) -> int:
        raise AssertionError("sendfile on a wrapped socket")

    monkeypatch.setattr(os, "sendfile", no_sendfile)
    sent: list[bytes] = []

    class Wrapper(socket.socket):
        def sendall(self, data: object, flags: int = 0) -> None:
            assert isinstance(data, bytes)
            sent.append(data)

    with Wrapper() as wrapped, path.open("rb") as stream:
        send_file_range(wrapped, FileRange(stream, 0, len(data)))
    assert b"".join(sent) == data
