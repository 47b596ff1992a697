"""verify's zip member scan in a forked worker process (``releases._scan_worker``, issue 13).

The worker is a way to use the second core, never a second opinion: its report must be the
thread's report byte for byte, on good and tampered sets; a worker that dies, errs or is cut off
mid-scan must make the zip fail (never "OK"); a scan started ahead by the CLI is used only for the
very file it read; no worker outlives the verification (Ctrl-C, an error, the parent killed).
"""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_support import cli, flip_byte, record_forks, release_out, reseal, stem
from flow_support import gone as _gone
from ninfer_release import packaging
from ninfer_release.errors import IntegrityError
from ninfer_release.progress import SILENT
from ninfer_release.releases import _flows, _scan_worker, _verify, verify_set
from ninfer_release.releases._contract import ZIP_CONFIG_PATH

LANE = "rtx4090"


@pytest.fixture
def lone_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the worker fork although earlier tests of the session left idle daemon threads (a
    registry watchdog): the real rule (no fork beside other threads) is tested on its own."""
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.delenv(_scan_worker.WORKER_ENV, raising=False)
    # The sample set's 20-odd members: forked as a 10k-member zip would be (the threshold's own
    # test below keeps it).
    monkeypatch.setattr(_scan_worker, "MIN_MEMBERS", 0)


@pytest.fixture
def copy(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    dst = tmp_path / LANE
    shutil.copytree(release_out(tmp_path_factory) / LANE, dst)
    return dst


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pid of every worker forked (recorded by the parent)."""
    return record_forks(monkeypatch)


def _has_end_record(zip_path: Path) -> bool:
    """Whether the zip's end records give a member count (what the fork decision reads)."""
    try:
        with zip_path.open("rb") as f:
            packaging.zip_member_count(f, zip_path)
    except IntegrityError:
        return False
    return True


def _both_ways(
    directory: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int], *, ahead: bool = False
) -> dict[str, Any]:
    """The report of ``directory`` through the worker (``ahead``: started before, as the CLI
    does, so that verify takes the index from it) and on a thread; asserts they are equal and
    that the first really forked."""
    before = len(forks)
    if ahead:
        _scan_worker.start_ahead(directory)
    forked = verify_set(directory).as_dict()
    assert _scan_worker._AHEAD == []
    if not _has_end_record(directory.joinpath(f"{stem(LANE)}.zip")):
        # no end record: no member count, the zip is scanned on a thread (and fails there)
        assert len(forks) == before
    else:
        assert len(forks) == before + 1, "the worker was not used"
        assert _gone(forks[-1])
    after = len(forks)
    with monkeypatch.context() as m:
        m.setenv(_scan_worker.WORKER_ENV, "off")
        threaded = verify_set(directory).as_dict()
    assert len(forks) == after, "NINFER_VERIFY_WORKER=off still forked"
    assert forked == threaded
    return forked


def _tamper_member(copy: Path) -> None:
    """One byte of a DLL member's stored data flipped, SHA256SUMS resealed (the zip's own CRC and
    the SBOMs' digests are what must catch it)."""
    z = copy / f"{stem(LANE)}.zip"
    index = packaging.read_zip_index(z)
    member = next(m for m in index if m.name.endswith(".dll") and m.compressed_size > 64)
    flip_byte(z, member.data_offset + member.compressed_size // 2)
    reseal(copy)


def _add_unsafe_member(copy: Path) -> None:
    z = copy / f"{stem(LANE)}.zip"
    with zipfile.ZipFile(z, "a") as f:
        f.writestr("../escape.txt", b"x")
    reseal(copy)


def _truncate_zip(copy: Path) -> None:
    z = copy / f"{stem(LANE)}.zip"
    z.write_bytes(z.read_bytes()[:-100])
    reseal(copy)


def _bad_config_entry(copy: Path) -> None:
    """The config member's name listed twice (a read of it must refuse it either way)."""
    z = copy / f"{stem(LANE)}.zip"
    with zipfile.ZipFile(z, "a") as f, pytest.warns(UserWarning, match="Duplicate name"):
        f.writestr(ZIP_CONFIG_PATH, b"[server]\n")
    reseal(copy)


def _archive_comment(copy: Path) -> None:
    """A comment after the end record: any reader takes it, the package layout check does not."""
    z = copy / f"{stem(LANE)}.zip"
    data = bytearray(z.read_bytes())
    struct.pack_into("<H", data, len(data) - 2, 7)
    z.write_bytes(bytes(data) + b"comment")
    reseal(copy)


@pytest.mark.usefixtures("lone_thread")
@pytest.mark.parametrize("ahead", [False, True], ids=["forked", "ahead"])
def test_the_worker_checks_the_package_layout(
    copy: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int], ahead: bool
) -> None:
    _archive_comment(copy)
    report = _both_ways(copy, monkeypatch, forks, ahead=ahead)
    assert any("not the package layout" in f for f in report["failures"]), report["failures"]


@pytest.mark.usefixtures("lone_thread")
@pytest.mark.parametrize("ahead", [False, True], ids=["forked", "ahead"])
@pytest.mark.parametrize(
    "tamper", [None, _tamper_member, _add_unsafe_member, _truncate_zip, _bad_config_entry]
)
def test_the_worker_reports_what_the_thread_reports(
    copy: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int], tamper: Any, ahead: bool
) -> None:
    if tamper is not None:
        tamper(copy)
    report = _both_ways(copy, monkeypatch, forks, ahead=ahead)
    assert report["ok"] is (tamper is None), report["failures"]


@pytest.mark.usefixtures("lone_thread")
def test_the_index_sent_ahead_is_the_one_verify_reads(copy: Path) -> None:
    z = copy / f"{stem(LANE)}.zip"
    index = packaging.read_zip_index(z)
    wanted = _scan_worker.read_later(stem(LANE))
    _scan_worker.start_ahead(copy)
    worker = _scan_worker.take_ahead(z, known=None)
    assert worker is not None
    try:
        sent = worker.index_entries(wanted)
        assert sent == (len(index), [m for m in index if m.name in wanted])
        assert len(sent[1]) == 2
        assert worker.index_entries(frozenset({"other"})) is None  # asked for other names: read it
    finally:
        worker.cancel()


@pytest.mark.usefixtures("lone_thread")
def test_a_worker_that_dies_fails_the_zip(
    copy: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    parent = os.getpid()

    def killed(*args: Any, each: Any = None, **kwargs: Any) -> Any:
        assert os.getpid() != parent, "not scanned in a worker"
        for m in packaging.read_zip_index(args[0])[:3]:  # some members handed on first
            each(packaging.MemberDigest(name=m.name, size=0, sha256="0" * 64, sha1="", crc32=0,
                                        method=0, problems=()))  # fmt: skip
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(packaging, "scan_zip", killed)  # the child is a copy of this process
    report = verify_set(copy)
    assert forks and _gone(forks[-1])
    assert not report.ok
    assert f"{stem(LANE)}.zip: the member scan ended without its result (EOFError)" in report.failures


@pytest.mark.usefixtures("lone_thread")
def test_a_worker_cut_off_after_a_full_batch_fails_the_zip(
    copy: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    """Members handed on in whole batches, then the end missing: nothing of them is kept."""
    real = packaging.scan_zip
    parent = os.getpid()

    def cut(*args: Any, each: Any = None, **kwargs: Any) -> Any:
        assert os.getpid() != parent, "not scanned in a worker"
        sent = [0]

        def counted(d: packaging.MemberDigest) -> None:
            each(d)
            sent[0] += 1

        for _ in range(_scan_worker.BATCH // 10 + 2):
            real(*args, each=counted, **{**kwargs, "index": None, "consume": False})
        os._exit(0)  # a clean exit, but no "end" message

    monkeypatch.setattr(packaging, "scan_zip", cut)
    files = _verify._SetFiles(zip_path=copy / f"{stem(LANE)}.zip")
    scan = _verify._ZipScan(files.zip_path, files, index=packaging.read_zip_index(files.zip_path))
    scan.start()
    run = _verify._Run(directory=copy)
    files.sizes[files.zip_path.name] = files.zip_path.stat().st_size
    scan.join(run, files.zip_path.name, SILENT)
    assert forks and _gone(forks[-1])
    assert files.members == {} and files.troubled == set()
    assert run.failures == [f"{files.zip_path.name}: the member scan ended without its result (EOFError)"]


@pytest.mark.usefixtures("lone_thread")
def test_an_error_in_the_worker_is_the_threads_error(
    copy: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    def fails(*args: Any, **kwargs: Any) -> Any:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(packaging, "scan_zip", fails)
    report = _both_ways(copy, monkeypatch, forks)
    assert f"{stem(LANE)}.zip: [Errno 5] Input/output error" in report["failures"]


def test_a_zip_of_few_members_is_scanned_on_a_thread(
    copy: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.delenv(_scan_worker.WORKER_ENV, raising=False)
    members = len(packaging.read_zip_index(copy / f"{stem(LANE)}.zip"))
    assert _scan_worker._member_count(str(copy / f"{stem(LANE)}.zip")) == members
    monkeypatch.setattr(_scan_worker, "MIN_MEMBERS", members + 1)
    _scan_worker.start_ahead(copy)
    assert verify_set(copy).ok
    assert forks == [] and _scan_worker._AHEAD == []
    monkeypatch.setattr(_scan_worker, "MIN_MEMBERS", members)
    _scan_worker.start_ahead(copy)
    assert verify_set(copy).ok
    assert len(forks) == 1 and _gone(forks[0])


def test_no_fork_beside_other_threads(copy: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]) -> None:
    monkeypatch.delenv(_scan_worker.WORKER_ENV, raising=False)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert verify_set(copy).ok
    finally:
        stop.set()
        other.join()
    assert forks == []


# --- the scan started ahead by the CLI ----------------------------------------------------------


@pytest.fixture
def no_ahead_left() -> Iterator[None]:
    yield
    assert _scan_worker._AHEAD == []
    _scan_worker.stop_ahead()


@pytest.mark.usefixtures("lone_thread", "no_ahead_left")
def test_the_cli_uses_the_scan_started_ahead(
    copy: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    taken: list[bool] = []
    real = _scan_worker.take_ahead

    def take(*args: Any, **kwargs: Any) -> Any:
        worker = real(*args, **kwargs)
        taken.append(worker is not None)
        return worker

    monkeypatch.setattr(_scan_worker, "take_ahead", take)
    res = cli("verify", copy)
    assert res.code == 0, res.text
    assert taken == [True] and len(forks) == 1 and _gone(forks[0])


@pytest.mark.usefixtures("lone_thread", "no_ahead_left")
@pytest.mark.parametrize("change", ["tamper", "touch", "replace"])
def test_a_scan_ahead_of_another_file_is_not_used(
    copy: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int], change: str
) -> None:
    """The zip changed after the scan ahead began (rewritten with a bad member, its time changed,
    replaced by a copy): that scan is ended and the verification reads the file as it is now."""
    z = copy / f"{stem(LANE)}.zip"
    original = z.read_bytes()
    _scan_worker.start_ahead(copy)
    assert len(forks) == 1
    if change == "tamper":
        _tamper_member(copy)
    elif change == "touch":
        os.utime(z, ns=(0, 0))
    else:
        z.unlink()
        z.write_bytes(original)
    report = verify_set(copy)
    assert _gone(forks[0])
    assert len(forks) == 2, "the file was not read again"
    assert report.ok is (change != "tamper"), report.failures


@pytest.mark.usefixtures("lone_thread", "no_ahead_left")
def test_a_scan_ahead_is_not_used_for_a_known_digest(copy: Path, forks: list[int]) -> None:
    _scan_worker.start_ahead(copy)
    z = copy / f"{stem(LANE)}.zip"
    assert _scan_worker.take_ahead(z, known="0" * 64) is None
    assert _gone(forks[0])


@pytest.mark.usefixtures("lone_thread", "no_ahead_left")
def test_no_scan_ahead_without_one_zip(copy: Path, forks: list[int], tmp_path: Path) -> None:
    shutil.copy(copy / f"{stem(LANE)}.zip", copy / "second.zip")
    _scan_worker.start_ahead(copy)
    _scan_worker.start_ahead(tmp_path / "missing")
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "a.zip")
    _scan_worker.start_ahead(tmp_path / "fifo")
    assert forks == []


@pytest.mark.usefixtures("lone_thread", "no_ahead_left")
def test_stop_ahead_ends_the_worker(copy: Path, forks: list[int]) -> None:
    _scan_worker.start_ahead(copy)
    _scan_worker.stop_ahead()
    assert len(forks) == 1 and _gone(forks[0])


@pytest.mark.usefixtures("lone_thread", "no_ahead_left")
def test_an_error_in_the_verification_ends_the_worker(
    copy: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_verify, "_read_small", boom)
    with pytest.raises(KeyboardInterrupt):
        verify_set(copy)
    assert len(forks) == 1 and _gone(forks[0])


def test_the_schemes_are_verify_locations(monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(_scan_worker.NOT_A_DIRECTORY) == set(_flows.URL_SCHEMES + _flows.REMOTE_SCHEMES)


# --- the worker outlives nothing (separate processes) -------------------------------------------

_SLOW_SCAN = """
import os, sys, time
from pathlib import Path
from ninfer_release import packaging
from ninfer_release.releases import _scan_worker
_scan_worker.MIN_MEMBERS = 0  # the sample set's 20-odd members forked as 10k would be
PID_FILE = Path(sys.argv[2])
def slow(*args, **kwargs):
    PID_FILE.write_text(str(os.getpid()))
    time.sleep(60)
packaging.scan_zip = slow
sys.argv = ["ninfer-release", "verify", sys.argv[1]]
from ninfer_release.fastcli import main
main()
"""


def _state(pid: int) -> str | None:
    """The process state letter of ``pid`` (``None``: no such process)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _worker_of(copy: Path, tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The CLI verifying ``copy`` with a member scan that never ends, and that scan's pid."""
    pid_file = tmp_path / "worker.pid"
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_SCAN, str(copy), str(pid_file)],
        env={k: v for k, v in os.environ.items() if k != _scan_worker.WORKER_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not (pid_file.is_file() and pid_file.read_text()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no worker started"
        time.sleep(0.02)
    return proc, int(pid_file.read_text())


def _ends(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while _state(pid) not in (None, "Z"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_ends_the_worker(copy: Path, tmp_path: Path, sig: int, code: int) -> None:
    proc, worker = _worker_of(copy, tmp_path)
    assert worker != proc.pid
    time.sleep(0.2)  # into the verification proper
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert b"Traceback" not in err
    assert _ends(worker), "the worker outlived the CLI"


def test_the_worker_ends_when_the_cli_is_killed(copy: Path, tmp_path: Path) -> None:
    proc, worker = _worker_of(copy, tmp_path)
    proc.kill()
    proc.communicate(timeout=30)
    assert _ends(worker), "an orphaned worker kept running"
