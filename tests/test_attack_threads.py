"""Faults in the helper threads of issue 13 (attack): one line, the documented exit code, no
traceback, no thread left running (the process exits), nothing partial left in the output folder.

Each case runs the CLI in a subprocess with a fault injected before it starts: ENOSPC from the
zip's write-back ``fdatasync`` (a helper thread), from the main thread's header writes, from the
image's blob-flush helper and from one layer thread; an exception in a layer thread (a bug:
exit 1, internal); SIGINT/SIGTERM while pieces are being deflated on the pool, while the
self-check reads the zip, and while the image's layer and archive threads run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flow_support import RELEASE, REPO, samples

_PRELUDE = """
import errno, os, signal, sys, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)
fault, marker = sys.argv[1], sys.argv[2]
def enospc(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device")
def mark():
    open(marker, "a").close()
if fault == "zip-fdatasync":
    from ninfer_release.packaging import _compress
    _compress.WriteBack.__init__.__defaults__ = (1,)  # write back after every write
    os.fdatasync = enospc
elif fault == "zip-headers":
    import ninfer_release.packaging._zipwrite as zw
    zw._fill_local_headers = enospc
elif fault == "deflating":
    from ninfer_release.packaging import _compress
    real_deflate = _compress._deflate_piece
    def slow(*a, **k):
        mark()
        time.sleep(0.2)
        return real_deflate(*a, **k)
    _compress._deflate_piece, _compress._INLINE_MAX = slow, -1
elif fault == "self-check":
    import ninfer_release.packaging._zipwrite as zw
    real_scan = zw.scan_zip
    def slow_scan(*a, **k):
        mark()
        time.sleep(20)
        return real_scan(*a, **k)
    zw.scan_zip = slow_scan
elif fault == "image-fsync":
    real_fsync = os.fsync
    def fsync(fd):
        if threading.current_thread() is not threading.main_thread():
            enospc()
        return real_fsync(fd)
    os.fsync = fsync
elif fault in ("layer-enospc", "layer-bug", "layering"):
    import ninfer_release.containers._build as B
    real_layer = B._write_one_layer
    calls = []
    def layer(*a, **k):
        calls.append(1)
        mark()
        if fault == "layer-enospc" and len(calls) == 2:
            enospc()
        if fault == "layer-bug":
            raise RuntimeError("a bug in a layer thread")
        if fault == "layering":
            time.sleep(0.5)
        return real_layer(*a, **k)
    B._write_one_layer = layer
elif fault == "sbom-child":
    from ninfer_release.build import _image
    parent, real_render, real_job = os.getpid(), _image.SbomRenderer.render, _image._SbomJob.render
    def job_render(self):
        if os.getpid() != parent:  # the renderer child: no answer for a long time
            time.sleep(60)
        return real_job(self)
    def render(self, job, **kw):
        with open(marker + ".child", "w") as f:
            f.write(str(self._pid))
        mark()
        return real_render(self, job, **kw)
    _image._SbomJob.render, _image.SbomRenderer.render = job_render, render
from ninfer_release.cli import main
main(sys.argv[3:])
"""


def _lane_args(out: Path, src: Path) -> list[str]:
    return [
        "build",
        "lane",
        "rtx4090",
        "--release",
        str(RELEASE),
        "--inputs",
        str(src),
        "--out",
        str(out),
        "--offline",
    ]


def _image_args(out: Path, src: Path) -> list[str]:
    return [
        "image", "build", str(REPO / "containers" / "qwen38-5090.yaml"), "--inputs", str(src / "rtx5090"),
        "--base", str(src / "base-layout"), "--out", str(out), "--release", str(RELEASE),
    ]  # fmt: skip


def _start(tmp_path: Path, fault: str, args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _PRELUDE, fault, str(tmp_path / "marker"), *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def outs(tmp_path: Path) -> Path:
    (tmp_path / "outs").mkdir()
    return tmp_path / "outs" / "out"


@pytest.mark.parametrize(
    ("fault", "kind", "code", "line"),
    [
        ("zip-fdatasync", "lane", 4, "cannot write: No space left on device"),
        ("zip-headers", "lane", 4, "cannot write: No space left on device"),
        ("image-fsync", "image", 4, "cannot write: No space left on device"),
        ("layer-enospc", "image", 4, "cannot write: No space left on device"),
        ("layer-bug", "image", 1, "RuntimeError: a bug in a layer thread (run with --debug for a traceback)"),
    ],
)
def test_a_fault_in_a_helper_thread_is_one_line_and_leaves_nothing(
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    outs: Path,
    fault: str,
    kind: str,
    code: int,
    line: str,
) -> None:
    src = samples(tmp_path_factory)
    args = _lane_args(outs, src) if kind == "lane" else _image_args(outs, src)
    proc = _start(tmp_path, fault, args)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    lines = [e for e in err.splitlines() if e.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and lines[0].endswith(line), err
    assert sorted(p.name for p in (tmp_path / "outs").iterdir()) == []


@pytest.mark.parametrize(
    ("phase", "kind"), [("deflating", "lane"), ("self-check", "lane"), ("layering", "image")]
)
@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_a_signal_mid_build_exits_with_its_code_and_leaves_nothing(
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    outs: Path,
    phase: str,
    kind: str,
    sig: signal.Signals,
    code: int,
    word: str,
) -> None:
    src = samples(tmp_path_factory)
    proc = _start(tmp_path, phase, _lane_args(outs, src) if kind == "lane" else _image_args(outs, src))
    for _ in range(600):  # wait (bounded) until the build is inside the phase
        if (tmp_path / "marker").exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, [e for e in err.splitlines() if e.strip()]) == (code, [word]), err
    assert sorted(p.name for p in (tmp_path / "outs").iterdir()) == []


@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_a_signal_while_the_sbom_child_renders_ends_the_child_and_leaves_nothing(
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    outs: Path,
    sig: signal.Signals,
    code: int,
    word: str,
) -> None:
    """Ctrl-C or SIGTERM while ``image build`` waits for its forked SBOM renderer: the documented
    exit, nothing in the output folder, and the child ended (not left running, orphaned)."""
    src = samples(tmp_path_factory)
    proc = _start(tmp_path, "sbom-child", _image_args(outs, src))
    for _ in range(600):  # wait (bounded) until the parent waits for the child's answer
        if (tmp_path / "marker").exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    child = int((tmp_path / "marker.child").read_text())
    assert child > 0  # a child was forked (not the in-process fallback)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, [e for e in err.splitlines() if e.strip()]) == (code, [word]), err
    assert sorted(p.name for p in (tmp_path / "outs").iterdir()) == []
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # ended and reaped by the parent, not orphaned


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fault", ["zip-fdatasync", "zip-headers"])
def test_a_failed_clean_rebuild_leaves_the_earlier_output_as_it_was(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, outs: Path, fault: str
) -> None:
    src = samples(tmp_path_factory)
    first = _start(tmp_path, "none", _lane_args(outs, src))
    assert first.communicate(timeout=120) and first.returncode == 0
    before = _tree(outs)
    proc = _start(tmp_path, fault, [*_lane_args(outs, src), "--clean"])
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 4 and err.strip().endswith("cannot write: No space left on device"), err
    assert _tree(outs) == before
    assert sorted(p.name for p in (tmp_path / "outs").iterdir()) == ["out"]
