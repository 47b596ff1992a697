"""A loopback TCP pass-through that counts the connections it accepts (the client's TLS goes
through it untouched, so the count is the client's TCP connections, seen from the server side)."""

from __future__ import annotations

import contextlib
import socket
import threading


class CountingProxy:
    """Listens on ``127.0.0.1:port`` and forwards every connection to ``upstream`` (``HOST:PORT``);
    ``accepted`` counts connections. Stop with :meth:`close` (or use it as a context manager)."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self._upstream = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self.accepted = 0
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="counting-proxy", daemon=True)
        self._thread.start()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    client.close()
                    return
                self.accepted += 1
            try:
                server = socket.create_connection(self._upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(256 * 1024):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._open = self._open, []
        self._listener.close()
        for s in sockets:
            with contextlib.suppress(OSError):
                s.close()

    def __enter__(self) -> CountingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
