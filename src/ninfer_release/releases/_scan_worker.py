"""The zip's member scan of ``verify``, run in a forked worker process (issue 13: verify of a
10k-file set).

Why a process: verify reads the zip (its SHA-256, every member inflated and hashed) while it
reads and checks the other entries, the SBOMs above all. Both are per-member Python work when
the package has many small files (~25 µs a member to inflate and hash, ~12 µs an SPDX file
entry), so on two threads they take turns holding the GIL: the scan of a 10k-member zip took
0.41 s beside the SBOM checks against 0.25 s alone, and the whole verify 1.9–2.0× ``sha256sum -c``
+ ``unzip -tq``. Forked, the scan has a core to itself.

The worker is :func:`ninfer_release.packaging.scan_zip` itself, the same code as the thread
(:class:`ninfer_release.releases._verify._ZipScan`): it sends each member's ``(name, sha256,
sha1, problems)`` as scanned, in pickled batches on a private pipe, then the zip's SHA-256 or the error
that ended the scan. A reader thread in the parent hands the members on as they arrive, so
neither process holds the whole list as records and the pipe never fills.

Started ahead by the CLI (:func:`scan_ahead`), the worker reads the zip's index first and sends
its length and the entries verify reads again after the scan (:func:`read_later`): verify then
takes them instead of parsing the 10k-entry central directory a second time (~40 ms).

What "OK" still means: nothing is taken from the worker but what the thread would have given. A
worker that ends without its last message (killed, out of memory, a bug) leaves the scan with an
error instead of members, so the zip fails verify; it is never read as "no problem found".

Where there is no ``fork`` (Windows, where installers also verify), off Linux, with
``NINFER_VERIFY_WORKER=off``, or when the process already has threads (forking then could leave
the child with locks no thread will release), :meth:`ForkedScan.start` returns ``None`` and the
caller scans on a thread.

The child ignores SIGINT (the parent handles Ctrl-C, then ends it), takes SIGTERM's default
action, writes nothing to stdout or stderr, leaves by ``os._exit``, and ends itself as soon as
its pipe has no reader (the parent is gone, even by SIGKILL), seen by a thread polling the pipe.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from ninfer_release import packaging
from ninfer_release.releases._contract import ZIP_CONFIG_PATH, zip_spdx_path

#: Members per message: large enough that pickling is a small part of each, small enough that the
#: parent holds the members as they come (~100 bytes each on the pipe).
BATCH = 512

#: Called by the reader thread for each member: ``(name, sha256, sha1, problems)``.
MemberSink = Callable[[str, str, str, tuple[str, ...]], None]

#: ``NINFER_VERIFY_WORKER=off`` scans on a thread instead (docs/reliability.md): the same checks
#: and report in one process, for a system where forking is unwanted or to compare the two.
WORKER_ENV = "NINFER_VERIFY_WORKER"


#: Members below which a zip is scanned on a thread: the worker pays for itself only when the
#: scan is per-member Python work (its fork and imports compete with the CLI's loading for the
#: core pair). Measured here (docs/benchmarks.md, *Session of 2026-12-03 (evening)*): 20 members
#: 0.25 s on a thread, 0.33 s forked; 1k members even; 10k members 0.50 s vs 0.36 s.
MIN_MEMBERS = 2000


def worth_forking(members: int | None) -> bool:
    """Whether a zip of ``members`` members (``None``: unknown) is scanned in a worker."""
    return members is not None and members >= MIN_MEMBERS


def _member_count(path: str) -> int | None:
    """The member count the end records of the regular file ``path`` claim, or ``None`` (not
    a regular file, unreadable, no zip): opened non-blocking, a FIFO cannot hang it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            return packaging.zip_member_count(f, Path(path))
        except Exception:  # noqa: BLE001 - verify reads it and says what is wrong
            return None


def _forkable() -> bool:
    return (
        os.environ.get(WORKER_ENV, "") != "off"
        and sys.platform == "linux"
        and hasattr(os, "fork")
        and threading.active_count() == 1
    )


class ForkedScan:
    """One zip scan in a worker process (see the module docstring). Start with :meth:`start`,
    end with :meth:`join` (or :meth:`cancel` when the caller is unwinding)."""

    def __init__(self, pid: int, results: int, sink: MemberSink | None) -> None:
        self._pid: int | None = pid
        self._sink = sink
        #: Batches that came before a sink was attached (:meth:`attach`), in order.
        self._pending: list[list[tuple[str, str, str, tuple[str, ...]]]] = []
        self._lock = threading.Lock()
        #: The zip's SHA-256, once the worker sent it.
        self.digest: str | None = None
        #: Why the scan gave no result (the worker's error, or that it ended without one).
        self.error: str | None = None
        #: What the worker's index read gave, once sent (:meth:`index_entries`).
        self._index: tuple[int, list[packaging.ZipMember], frozenset[str]] | None = None
        self._index_sent = threading.Event()
        self._reader = threading.Thread(target=self._drain, args=(results,), name="zip-members-reader")
        self._reader.start()

    def attach(self, sink: MemberSink) -> None:
        """Hand every member to ``sink`` from now on, first those that came before (in order)."""
        with self._lock:
            for batch in self._pending:
                for name, sha256, sha1, problems in batch:
                    sink(name, sha256, sha1, problems)
            self._pending.clear()
            self._sink = sink

    @classmethod
    def start(
        cls,
        zip_path: Path,
        *,
        known: str | None,
        index: Sequence[packaging.ZipMember] | None,
        sink: MemberSink | None,
        wanted: frozenset[str] | None = None,
    ) -> ForkedScan | None:
        """Fork the worker scanning ``zip_path`` (``known``: its SHA-256 if the caller established
        it; ``index``: its :func:`~ninfer_release.packaging.read_zip_index`, or ``None`` to read it
        there; with ``wanted``, the index read there is also sent: :meth:`index_entries`);
        ``sink`` gets each member (``None``: they are kept until :meth:`attach`); ``None``
        when it cannot be forked here (see the module docstring) or no pipe or process can be
        had: the caller then scans on a thread."""
        if not _forkable():
            return None
        opened: list[int] = []
        try:
            opened.extend(os.pipe())
            pid = os.fork()
        except OSError:  # no descriptors (EMFILE) or processes (EAGAIN): scan on a thread
            for fd in opened:
                os.close(fd)
            return None
        results_r, results_w = opened
        if pid == 0:  # pragma: no cover - the child; its work is checked through the parent
            try:
                os.close(results_r)
                _serve(zip_path, known, index, results_w, wanted)
            finally:
                os._exit(0)
        os.close(results_w)
        return cls(pid, results_r, sink)

    def index_entries(self, wanted: frozenset[str]) -> tuple[int, list[packaging.ZipMember]] | None:
        """``(members, entries)``: how many members the zip's index has and its entries named in
        ``wanted``, as the worker's :func:`~ninfer_release.packaging.read_zip_index` gave them
        (waits for that message); ``None`` when it sent none (its index read failed, it asked
        for other names, or it ended first): the caller reads the index itself."""
        self._index_sent.wait()
        if self._index is None or self._index[2] != wanted:
            return None
        return self._index[0], self._index[1]

    def _drain(self, fd: int) -> None:
        """The reader thread: the worker's messages, each member handed to the sink as it comes,
        until ``end`` (:attr:`digest` set) or ``error``; anything else that ends the stream (EOF
        mid-scan, a cut message, a failing sink) sets :attr:`error` too."""
        try:
            with os.fdopen(fd, "rb") as f:
                while self._take(pickle.load(f)):  # noqa: S301 - our own child, a private pipe
                    pass
        except Exception as exc:  # noqa: BLE001 - a worker that ended mid-scan: the scan failed
            self.error = f"the member scan ended without its result ({type(exc).__name__})"
        finally:
            self._index_sent.set()  # no waiter is left waiting for an index that will not come

    def _take(self, message: Any) -> bool:
        kind = message[0]
        if kind == "members":
            with self._lock:
                if self._sink is None:
                    self._pending.append(message[1])
                else:
                    for name, sha256, sha1, problems in message[1]:
                        self._sink(name, sha256, sha1, problems)
            return True
        if kind == "index":
            self._index = message[1]
            self._index_sent.set()
            return True
        if kind == "end":
            self.digest = message[1]
        else:  # "error"
            self.error = message[1]
        return False

    def join(self) -> None:
        """Wait for the worker's last message and reap it. An interrupt while waiting ends the
        worker before it propagates. Afterwards exactly one of :attr:`digest` and :attr:`error`
        is set."""
        try:
            self._reader.join()
        finally:
            self.cancel()

    def cancel(self) -> None:
        """End the worker (if still running), wait for the reader and reap the worker; idempotent."""
        if self._pid is None:
            return
        pid, self._pid = self._pid, None
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # its pipe then ends, and so does the reader
        with contextlib.suppress(ChildProcessError):  # reaped elsewhere (a waitpid(-1) of the caller's)
            os.waitpid(pid, 0)
        self._reader.join()


#: The scan started ahead of the verification (:func:`start_ahead`): ``(zip path, its identity
#: when the worker was forked, the worker)``; at most one.
_AHEAD: list[tuple[str, packaging.StatIdentity, ForkedScan]] = []


def _identity(path: str) -> packaging.StatIdentity | None:
    """The :class:`~ninfer_release.packaging.StatIdentity` of the regular file ``path`` (not
    followed if a symlink), or ``None``: any write, truncation or replacement changes it."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return packaging.StatIdentity.of(st) if stat.S_ISREG(st.st_mode) else None


def read_later(stem: str) -> frozenset[str]:
    """The zip members verify reads again after the scan (the config and the SPDX copy), whose
    index entries the worker started ahead sends (:meth:`ForkedScan.index_entries`)."""
    return frozenset({ZIP_CONFIG_PATH, zip_spdx_path(stem)})


def start_ahead(directory: Path) -> None:
    """Start the member scan of the one ``*.zip`` in ``directory`` now, before the verification
    is even imported (~60 ms of the CLI's loading that the scan then no longer waits for; issue
    13). Nothing happens when the directory has no single regular ``*.zip``, cannot be listed,
    the zip claims fewer than :data:`MIN_MEMBERS` members, or no worker can be forked: verify
    then reads the zip as always. The scan is used only by a verification of that very file,
    unchanged since (:func:`take_ahead`); :func:`stop_ahead` ends it if none took it. Never
    raises for a bad directory (verify reports it)."""
    stop_ahead()
    try:
        zips = [e.path for e in os.scandir(directory) if e.name.endswith(".zip")]
    except OSError:
        return
    if len(zips) != 1 or (identity := _identity(zips[0])) is None:
        return
    if not worth_forking(_member_count(zips[0])):
        return
    worker = ForkedScan.start(
        Path(zips[0]),
        known=None,
        index=None,
        sink=None,
        wanted=read_later(Path(zips[0]).name[: -len(".zip")]),
    )
    if worker is not None:
        _AHEAD.append((os.path.realpath(zips[0]), identity, worker))


def take_ahead(zip_path: Path, *, known: str | None) -> ForkedScan | None:
    """The scan :func:`start_ahead` started, if it reads ``zip_path`` as it is now: the same real
    path and the same identity (:func:`_identity`) as when it was forked, and no digest of the
    zip ``known`` to the caller (a download's: the worker hashes the zip itself). Any other
    scan started ahead is ended. ``None``: the caller scans as always."""
    if not _AHEAD:
        return None
    path, identity, worker = _AHEAD.pop()
    if known is None and path == os.path.realpath(zip_path) and _identity(str(zip_path)) == identity:
        return worker
    worker.cancel()
    return None


#: Locations that name no directory (``verify_location``'s URL and store schemes; = ``_flows``'s, tested).
NOT_A_DIRECTORY = ("https://", "http://", "oci://", "dir://", "files://")


@contextlib.contextmanager
def scan_ahead(location: str) -> Iterator[None]:
    """:func:`start_ahead` for a ``verify`` of ``location`` when it names a directory; the scan
    is ended (:func:`stop_ahead`) when the block exits, however it exits."""
    if not location.startswith(NOT_A_DIRECTORY):
        start_ahead(Path(location))
    try:
        yield
    finally:
        stop_ahead()


def stop_ahead() -> None:
    """End a scan started ahead that no verification took (idempotent)."""
    while _AHEAD:
        _AHEAD.pop()[2].cancel()


def _serve(
    zip_path: Path,
    known: str | None,
    index: Sequence[packaging.ZipMember] | None,
    fd: int,
    wanted: frozenset[str] | None,
) -> None:  # pragma: no cover - runs in the child
    """The worker: with ``wanted`` (and no ``index``), first read the index and send
    ``("index", (members, entries named in wanted, wanted))`` (nothing if that read fails: the
    scan then reads it again and fails with its error); then scan the zip, sending the members
    in batches, then ``("end", sha256)`` or ``("error", message)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=_orphaned, args=(fd,), daemon=True).start()
    with contextlib.suppress(OSError), os.fdopen(fd, "wb") as out:
        batch: list[tuple[str, str, str, tuple[str, ...]]] = []

        def each(d: packaging.MemberDigest) -> None:
            batch.append((d.name, d.sha256, d.sha1, d.problems))
            if len(batch) >= BATCH:
                _send(out, ("members", batch[:]))
                batch.clear()

        if wanted is not None and index is None:
            with contextlib.suppress(Exception):
                index = packaging.read_zip_index(zip_path)
                _send(out, ("index", (len(index), [m for m in index if m.name in wanted], wanted)))
        try:
            scan = packaging.scan_zip(
                zip_path,
                sha1=True,  # the SPDX SHA1 of every member is compared too (_verify._check_spdx_files)
                archive_sha256=known,
                index=index if isinstance(index, list) or index is None else list(index),
                each=each,
                consume=index is not None,
                layout=True,
            )
        except Exception as exc:  # noqa: BLE001 - reported as the scan's error, like the thread's
            _send(out, ("error", str(exc)))
            return
        batch.extend((d.name, d.sha256, d.sha1, d.problems) for d in scan.members)
        if batch:
            _send(out, ("members", batch))
        _send(out, ("end", scan.sha256))


def _send(out: IO[bytes], message: tuple[object, ...]) -> None:  # pragma: no cover - in the child
    pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
    out.flush()


def _orphaned(fd: int) -> None:  # pragma: no cover - in the child
    """End the worker once its pipe has no reader (``POLLERR`` on the write end): the parent died
    or gave up, and nothing the worker does is used any more."""
    poller = select.poll()
    poller.register(fd, 0)  # POLLERR / POLLHUP are always reported
    while True:
        for _, events in poller.poll():
            if events & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                os._exit(0)
