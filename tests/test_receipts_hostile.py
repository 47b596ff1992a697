"""Hostile ``--receipts`` directories: each case is refused with exit 4 naming the file, before any
lane is built, and nothing ever blocks (docs/staged-inputs.md "Qualification receipts").

The cases are data (:data:`CASES`: id, how to lay out the receipts directory, the message), so a
shared hostile-input suite can import and run them as they are.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from flow_support import RELEASE, Result, cli, nr_command, receipt, samples
from ninfer_release.errors import InputError
from ninfer_release.releases import read_receipts

GOOD = receipt("rtx4090", "ab" * 32, "cd" * 32)


def _json(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def _json_each(doc: object, *paths: Path) -> None:
    """The same document written to each of ``paths``."""
    for path in paths:
        _json(path, doc)


def _bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def _device(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # the numbers of /dev/null
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")


def _socket(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()


def _link_out(path: Path) -> None:
    outside = path.parents[2] / "outside.json"
    _json(outside, GOOD)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside)


def _link_to_dev_null(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/null")


def _big(path: Path) -> None:
    _json(path, {**GOOD, "notes": "x" * (256 << 10)})


@dataclass(frozen=True, kw_only=True)
class Case:
    """One hostile layout: ``make(receipts_dir)`` builds it; ``file`` (relative) and ``message`` must
    appear on the error line."""

    id: str
    make: Callable[[Path], None]
    file: str
    message: str


def _field_case(case_id: str, fields: dict[str, object], message: str) -> Case:
    """A good receipt ``run.json`` with ``fields`` replaced, refused with ``message``."""
    return Case(
        id=case_id, make=lambda d: _json(d / "run.json", {**GOOD, **fields}), file="run.json", message=message
    )


CASES: tuple[Case, ...] = (
    Case(
        id="misspelt-lane-directory",
        make=lambda d: _json(d / "rtx4900" / "run.json", {**GOOD, "lane": "rtx4900"}),
        file="rtx4900",
        message="directory names no lane of the release that takes receipts (rtx3090, rtx4090)",
    ),
    _field_case("misspelt-lane-field", {"lane": "rtx4900"}, "lane: 'rtx4900' is not a lane of this release"),
    Case(
        id="cross-lane",
        make=lambda d: _json(d / "rtx4090" / "run.json", {**GOOD, "lane": "rtx3090"}),
        file="rtx4090/run.json",
        message="lane: 'rtx3090' disagrees with its directory rtx4090/",
    ),
    _field_case(
        "carried-lane",
        {"lane": "rtx5090"},
        "lane: 'rtx5090' is not a lane of this release that takes receipts",
    ),
    Case(
        id="fifo",
        make=lambda d: _fifo(d / "rtx4090" / "run.json"),
        file="rtx4090/run.json",
        message="not a regular file (a FIFO)",
    ),
    Case(
        id="fifo-flat",
        make=lambda d: _fifo(d / "run.json"),
        file="run.json",
        message="not a regular file (a FIFO)",
    ),
    Case(
        id="device",
        make=lambda d: _device(d / "rtx4090" / "run.json"),
        file="rtx4090/run.json",
        message="not a regular file (a character device)",
    ),
    Case(
        id="socket",
        make=lambda d: _socket(d / "rtx4090" / "run.json"),
        file="rtx4090/run.json",
        message="not a regular file (a socket)",
    ),
    Case(
        id="directory",
        make=lambda d: (d / "rtx4090" / "run.json").mkdir(parents=True),
        file="rtx4090/run.json",
        message="not a regular file (a directory)",
    ),
    Case(
        id="link-out",
        make=lambda d: _link_out(d / "rtx4090" / "run.json"),
        file="rtx4090/run.json",
        message="a link out of",
    ),
    Case(
        id="link-to-dev-null",
        make=lambda d: _link_to_dev_null(d / "rtx4090" / "run.json"),
        file="rtx4090/run.json",
        message="a link out of",
    ),
    Case(
        id="not-json-name",
        make=lambda d: _json(d / "notes.txt", GOOD),
        file="notes.txt",
        message="not a receipt (*.json) or a lane directory",
    ),
    Case(
        id="nested-directory",
        make=lambda d: _json(d / "rtx4090" / "old" / "run.json", GOOD),
        file="rtx4090/old",
        message="not a receipt (*.json)",
    ),
    Case(
        id="not-an-object",
        make=lambda d: _json(d / "run.json", [1, 2]),
        file="run.json",
        message="top level must be a JSON object",
    ),
    Case(
        id="not-json",
        make=lambda d: _bytes(d / "run.json", b"\xff{"),
        file="run.json",
        message="not UTF-8",
    ),
    Case(
        id="duplicate-key",
        make=lambda d: _bytes(d / "run.json", b'{"schema": 2, "schema": 2}'),
        file="run.json",
        message="duplicate key 'schema'",
    ),
    Case(
        id="too-big",
        make=lambda d: _big(d / "run.json"),
        file="run.json",
        message="larger than its bound of 262144 bytes",
    ),
    _field_case("unknown-key", {"qualified": True}, "qualified: unknown key"),
    _field_case(
        "bad-gate", {"gates": {"G1": "ok"}}, "gates.G1: 'ok' is not one of pass, fail, not_applicable"
    ),
    _field_case(
        "nested-measurement",
        {"measurements": {"a": {"b": 1}}},
        "measurements.a: not a number, string or boolean",
    ),
    Case(
        id="same-receipt-twice",
        make=lambda d: _json_each(GOOD, d / "a.json", d / "rtx4090" / "b.json"),
        file="rtx4090/b.json",
        message="the same receipt as",
    ),
    _field_case("upper-case-hex", {"package_sha256": "CD" * 32}, "package_sha256: 'CDCD"),
    _field_case("digest-with-whitespace", {"config_sha256": "ab" * 32 + "\n"}, "config_sha256: "),
    _field_case("look-alike-lane-field", {"lane": "rt\u0445 4090".replace(" ", "")}, "is not a lane id"),
    Case(
        id="look-alike-lane-directory",
        make=lambda d: _json(d / "rtx\uff14090" / "run.json", GOOD),
        file="rtx\uff14090",
        message="directory names no lane of the release",
    ),
    Case(
        id="blank-equivalence-evidence",
        make=lambda d: _json(
            d / "run.json",
            {
                **GOOD,
                "scratch": {
                    "variant": "port-only",
                    "equivalence": {
                        "package_sha256": "ef" * 32,
                        "config_sha256": "01" * 32,
                        "evidence": " \t ",
                    },
                },
            },
        ),
        file="run.json",
        message="scratch.equivalence.evidence: blank",
    ),
    Case(
        id="lone-surrogate",
        make=lambda d: _bytes(d / "run.json", json.dumps(GOOD)[:-1].encode() + b', "notes": "a\\ud800b"}'),
        file="run.json",
        message="notes: value not valid Unicode (a lone surrogate escape)",
    ),
    _field_case(
        "short-commit", {"source_commit": "7a25cd72"}, "source_commit: '7a25cd72' is not a full 40-hex commit"
    ),
)

#: An in-process read of a hostile directory takes microseconds; a blocking open never returns.
BOUND_S = 1.0


def _bounded(fn: Callable[[], object], seconds: float) -> object:
    """Run ``fn`` on a daemon thread and fail unless it returns (or raises) within ``seconds``."""
    box: list[object] = []

    def run() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s (blocked?)"
    return box[0]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_receipts_are_refused(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, case: Case
) -> None:
    """Exit 4, one line naming the file and the problem, nothing built, no traceback."""
    receipts = tmp_path / "work" / "receipts"
    case.make(receipts)
    out = tmp_path / "out"
    staged = samples(tmp_path_factory)
    args = (
        "build",
        "lane",
        "rtx4090",
        "--release",
        RELEASE,
        "--inputs",
        staged,
        "--out",
        out,
        "--receipts",
        receipts,
    )
    res = _bounded(lambda: cli(*args), 30.0)
    assert isinstance(res, Result)
    assert res.code == 4, res.text
    lines = [line for line in res.err.splitlines() if line.startswith("error: ")]
    assert len(lines) >= 1, res.err
    assert lines[0].startswith(f"error: {receipts / case.file}"), lines
    assert case.message in lines[0], lines
    assert "Traceback" not in res.err
    assert not out.exists()


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.id in ("fifo", "fifo-flat", "device", "socket")], ids=lambda c: c.id
)
def test_special_files_are_refused_within_a_second(tmp_path: Path, case: Case) -> None:
    """Reading a directory holding a FIFO (or device, socket) returns within a second: the type
    is checked before any open, and opens are non-blocking."""
    receipts = tmp_path / "receipts"
    case.make(receipts)
    res = _bounded(lambda: read_receipts(receipts, lanes=("rtx3090", "rtx4090")), BOUND_S)
    assert isinstance(res, InputError), res
    assert case.message in str(res)


def test_fifo_receipt_cli_never_blocks(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """The console script on a FIFO receipt exits 4. A blocking open would never return, so the
    subprocess timeout only has to outlast an interpreter start on a loaded machine."""
    receipts = tmp_path / "receipts"
    _fifo(receipts / "rtx4090" / "run.json")
    args = ["build", "lane", "rtx4090", "--release", RELEASE, "--inputs", samples(tmp_path_factory)]
    args += ["--out", tmp_path / "out", "--receipts", receipts]
    proc = subprocess.run(
        [*nr_command(), *map(str, args)], capture_output=True, text=True, timeout=20, check=False
    )
    assert proc.returncode == 4, proc.stderr
    assert "run.json: not a regular file (a FIFO)" in proc.stderr


def test_link_inside_the_directory_is_followed(tmp_path: Path) -> None:
    """A symbolic link to a regular receipt inside the receipts directory is read (its target's bytes)."""
    receipts = tmp_path / "receipts"
    _json(receipts / ".store" / "real.json.orig", GOOD)  # hidden: not itself a lane directory
    (receipts / "rtx4090").mkdir()
    (receipts / "rtx4090" / "run.json").symlink_to("../.store/real.json.orig")
    (loaded,) = read_receipts(receipts, lanes=("rtx3090", "rtx4090"))
    assert loaded.receipt.lane == "rtx4090" and loaded.name == "run.json"


def test_receipts_path_that_is_a_file_is_refused(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``--receipts FILE``: the library says it is not a directory (exit 4, one line naming the
    file; issue 9: environment faults are not Click usage errors), not that nothing was found."""
    receipts = tmp_path / "receipts.json"
    _json(receipts, GOOD)
    args: list[str | Path] = [
        "build",
        "lane",
        "rtx4090",
        "--release",
        RELEASE,
        "--inputs",
        samples(tmp_path_factory),
    ]
    res = cli(*args, "--out", tmp_path / "out", "--receipts", receipts)
    assert res.code == 4 and f"{receipts}: " in res.err and "not a directory" in res.err, res.text
    assert len(res.err.strip().splitlines()) == 1, res.err
    with pytest.raises(InputError, match="not a directory"):
        read_receipts(receipts, lanes=("rtx4090",))


def test_receipts_directory_behind_a_symbolic_link_is_read(tmp_path: Path) -> None:
    """``--receipts LINK`` to a directory: its receipts are read as if named directly."""
    _json(tmp_path / "real" / "rtx4090" / "run.json", GOOD)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (loaded,) = read_receipts(tmp_path / "link", lanes=("rtx3090", "rtx4090"))
    assert loaded.receipt.lane == "rtx4090" and loaded.name == "run.json"


def test_gates_all_not_applicable_still_qualify_and_say_so() -> None:
    """A documented decision (docs/staged-inputs.md): gates are reported evidence, not a quota. A
    receipt whose gates are all ``not_applicable`` qualifies the bytes it names; the ledger's counts
    (0 pass) are what every verdict shows."""
    from ninfer_release.releases import Binding, LoadedReceipt, Receipt, bind_receipts

    doc = {**GOOD, "gates": {"G1": "not_applicable", "G2": "not_applicable"}}
    rec = Receipt.parse(json.dumps(doc).encode(), source="run.json")
    loaded = LoadedReceipt(path="run.json", name="run.json", sha256="0" * 64, receipt=rec)
    binding = Binding(
        lane="rtx4090",
        source_commit=rec.source_commit,
        profile_id=rec.profile_id,
        config_sha256=rec.config_sha256,
        package_sha256=rec.package_sha256,
    )
    q = bind_receipts([loaded], binding)
    assert q.status == "qualified"
    assert q.ledger.counts == {"pass": 0, "fail": 0, "not_applicable": 2}
