"""Attack on the forked SBOM renderer (``build._image.SbomRenderer``, issue 13).

:meth:`SbomRenderer.render` promises ``None`` within ``timeout`` when the child gives no answer,
so that the parent renders itself. A real job carries every layer file's record (path, size,
SHA-256, SHA-1): an image of a few hundred files pickles to more than a pipe's 64 KiB. A child
that is stuck before it reads its job (stopped, deadlocked while loading the SBOM libraries)
must not hang the parent in the job's write, where no timeout applies.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pickle
import resource
import signal
import threading
from pathlib import Path

import pytest

from ninfer_release.build import _image

#: Far longer than the 0.2 s timeout given to render(): only a hang gets near it.
_HANG_S = 5.0


@pytest.fixture
def lone_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the renderer fork although earlier tests of the session left idle daemon threads."""
    monkeypatch.setattr(threading, "active_count", lambda: 1)


def _job(tmp_path: Path, padding: int = 0) -> _image._SbomJob:
    return _image._SbomJob(
        built=None,  # type: ignore[arg-type]
        request=None,  # type: ignore[arg-type]
        stage=tmp_path,
        stand_in=False,
        inputs_license="x" * padding,
    )


def _forked() -> _image.SbomRenderer:
    renderer = _image.SbomRenderer.start()
    if renderer is None:
        pytest.fail("no renderer child was forked")
    return renderer


def test_a_child_that_dies_mid_answer_is_rendered_again_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lone_thread: None
) -> None:
    """Half an answer (the child killed while writing it) is no answer: ``None``, no error."""

    def half_an_answer(jobs: int, results: int) -> None:  # runs in the child
        while os.read(jobs, 1 << 16):
            pass
        whole = pickle.dumps(("sboms", "y" * 200_000), protocol=pickle.HIGHEST_PROTOCOL)
        os.write(results, whole[: len(whole) // 2])

    monkeypatch.setattr(_image, "_serve_sboms", half_an_answer)
    renderer = _forked()
    pid = renderer._pid
    assert pid is not None
    try:
        assert renderer.render(_job(tmp_path), timeout=_HANG_S) is None
    finally:
        renderer.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped


def test_a_stuck_child_does_not_hang_the_parent_on_a_large_job(tmp_path: Path, lone_thread: None) -> None:
    renderer = _forked()
    with contextlib.closing(renderer):
        pid = renderer._pid
        if pid is None:
            pytest.fail("no renderer child")
        os.kill(pid, signal.SIGSTOP)  # stuck before it reads its job
        job = _job(tmp_path, padding=1 << 20)  # a job bigger than the pipe's buffer
        answers: list[object] = []

        def render() -> None:
            answers.append(renderer.render(job, timeout=0.2))

        worker = threading.Thread(target=render, daemon=True)
        worker.start()
        worker.join(_HANG_S)
        hung = worker.is_alive()
        if hung:  # unblock the write (EPIPE) so the test ends and the child is reaped
            os.kill(pid, signal.SIGKILL)
            worker.join()
        assert not hung, "render() did not return within its timeout: the job's write blocked"
        assert answers == [None]


def test_a_renderer_whose_pipes_are_numbered_above_1024_still_answers_or_falls_back(
    tmp_path: Path, lone_thread: None
) -> None:
    """A process started with many descriptors open (inherited from a CI runner, say): the
    child's pipes get numbers above select()'s FD_SETSIZE; render() must still give an answer or
    ``None``, not fail the build."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip("cannot open 1024 descriptors here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), hard))
    held: list[int] = []
    try:
        while not held or held[-1] < 1030:
            held.append(os.open(os.devnull, os.O_RDONLY))
        renderer = _forked()
        with contextlib.closing(renderer):
            assert renderer._results is not None and renderer._results >= 1024
            assert renderer.render(_job(tmp_path), timeout=_HANG_S) is None  # the job fails there
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize("call", ["fork", "pipe"])
def test_no_fork_or_pipe_to_be_had_means_no_renderer_not_a_failed_build(
    monkeypatch: pytest.MonkeyPatch, lone_thread: None, call: str
) -> None:
    """The child is only a head start: where the system gives no process (or no pipe), the build
    renders in its own process, as where there is no ``fork`` at all, and leaks no descriptor."""
    before = sorted(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else []

    def refused(*args: object) -> object:
        code = errno.EAGAIN if call == "fork" else errno.EMFILE
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, call, refused)
    with _image.sbom_renderer() as renderer:
        assert renderer is None
    monkeypatch.undo()
    assert (sorted(os.listdir("/proc/self/fd")) if before else []) == before
