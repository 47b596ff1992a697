"""Attack on the forked SBOM renderer (``build._image.SbomRenderer``, issue 13).

:meth:`SbomRenderer.render` promises ``None`` within ``timeout`` when the child gives no answer,
so that the parent renders itself. A real job carries every layer file's record (path, size,
SHA-256, SHA-1): an image of a few hundred files pickles to more than a pipe's 64 KiB. A child
that is stuck before it reads its job (stopped, deadlocked while loading the SBOM libraries)
must not hang the parent in the job's write, where no timeout applies.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from ninfer_release.build import _image, sbom_renderer

#: Far longer than the 0.2 s timeout given to render(): only a hang gets near it.
_HANG_S = 5.0


@pytest.mark.xfail(
    strict=True,
    reason="defect (attack): render() writes a job larger than the pipe buffer without a timeout; "
    "a child stuck before reading it hangs the parent (build/_image.py, owner: image)",
)
def test_a_stuck_child_does_not_hang_the_parent_on_a_large_job(tmp_path: Path) -> None:
    with sbom_renderer() as renderer:
        assert renderer is not None and renderer._pid is not None
        pid = renderer._pid
        os.kill(pid, signal.SIGSTOP)  # stuck before it reads its job
        job = _image._SbomJob(
            built=None,  # type: ignore[arg-type]
            request=None,  # type: ignore[arg-type]
            stage=tmp_path,
            stand_in=False,
            inputs_license="x" * (1 << 20),  # a job bigger than the pipe's buffer
        )
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
