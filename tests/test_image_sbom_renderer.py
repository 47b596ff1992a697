"""The image SBOMs rendered in a forked child (``build._image.SbomRenderer``, issue 13).

The child is a head start only: its bytes must be the in-process bytes, and whatever goes wrong
in it (a failure, a death, a slow answer) must end in the in-process rendering, with no child
left behind and the real error raised by the parent's own code.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from containers_support import RECIPE, RELEASE_EPOCH, Samples, make_samples, request_for
from flow_support import gone as _gone
from ninfer_release.build import _image, build_image_with_sboms, sbom_renderer
from ninfer_release.containers import load_recipe
from ninfer_release.errors import IntegrityError


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Samples:
    return make_samples(tmp_path_factory.mktemp("renderer-samples"))


@pytest.fixture
def lone_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the renderer fork although earlier tests of the session left idle daemon threads
    (a registry watchdog): the real rule (no fork beside other threads) is tested on its own."""
    monkeypatch.setattr(threading, "active_count", lambda: 1)


def _build(samples: Samples, out: Path, renderer: _image.SbomRenderer | None) -> _image.ImageOutcome:
    request = request_for(
        load_recipe(RECIPE), inputs=samples.inputs, base=str(samples.base), out=out,
        epoch=RELEASE_EPOCH, rendered=samples.rendered,
    )  # fmt: skip
    return build_image_with_sboms(request, renderer=renderer)


def _spy_answers(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record what each :meth:`SbomRenderer.render` returned (``None``: the parent rendered)."""
    answers: list[object] = []
    real = _image.SbomRenderer.render

    def render(self: _image.SbomRenderer, job: object, **kw: float) -> object:
        answer = real(self, job, **kw)  # type: ignore[arg-type]
        answers.append(answer)
        return answer

    monkeypatch.setattr(_image.SbomRenderer, "render", render)
    return answers


def test_the_child_renders_the_same_bytes_and_is_reaped(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch, lone_thread: None
) -> None:
    answers = _spy_answers(monkeypatch)
    here = _build(samples, tmp_path / "here", None)
    with sbom_renderer() as renderer:
        assert renderer is not None
        pid = renderer._pid
        assert pid is not None
        forked = _build(samples, tmp_path / "forked", renderer)
        assert _gone(pid)  # render() ends the child
    assert answers == [forked.sboms]  # the child answered: the parent did not render
    assert forked.sboms == here.sboms
    for name in ("sbom.cdx.json", "sbom.spdx.json", "image.json", "image.tar"):
        assert (tmp_path / "forked" / name).read_bytes() == (tmp_path / "here" / name).read_bytes()


def test_a_failure_in_the_child_is_rendered_again_here(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch, lone_thread: None
) -> None:
    """The job fails only in the child: the parent renders, with the same bytes."""
    answers = _spy_answers(monkeypatch)
    parent = os.getpid()
    real = _image._SbomJob.render

    def render(self: _image._SbomJob) -> object:
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return real(self)

    monkeypatch.setattr(_image._SbomJob, "render", render)
    here = _build(samples, tmp_path / "here", None)
    with sbom_renderer() as renderer:
        forked = _build(samples, tmp_path / "forked", renderer)
    assert answers == [None]
    assert forked.sboms == here.sboms


def test_a_dead_child_is_rendered_again_here(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch, lone_thread: None
) -> None:
    answers = _spy_answers(monkeypatch)
    with sbom_renderer() as renderer:
        assert renderer is not None and renderer._pid is not None
        os.kill(renderer._pid, signal.SIGKILL)
        forked = _build(samples, tmp_path / "forked", renderer)
    assert answers == [None]
    assert (tmp_path / "forked" / "sbom.cdx.json").read_bytes() == forked.sboms.cyclonedx


def test_a_child_that_does_not_answer_in_time_is_ended_and_rendered_again_here(
    tmp_path: Path, lone_thread: None
) -> None:
    from ninfer_release.build._image import _SbomJob

    with sbom_renderer() as renderer:
        assert renderer is not None and renderer._pid is not None
        pid = renderer._pid
        os.kill(pid, signal.SIGSTOP)  # never answers
        job = _SbomJob(built=None, request=None, stage=tmp_path, stand_in=False, inputs_license=None)  # type: ignore[arg-type]
        assert renderer.render(job, timeout=0.2) is None
        assert _gone(pid)


def test_a_real_sbom_error_is_raised_by_the_parent(
    tmp_path: Path, samples: Samples, monkeypatch: pytest.MonkeyPatch, lone_thread: None
) -> None:
    """An SBOM that fails its validation fails the build with the parent's own error."""
    from ninfer_release import sbom

    def invalid(*args: object, **kwargs: object) -> object:
        raise IntegrityError("sbom.spdx.json: not valid (test)")

    monkeypatch.setattr(sbom, "image_sboms", invalid)
    with sbom_renderer() as renderer, pytest.raises(IntegrityError, match=r"not valid \(test\)"):
        _build(samples, tmp_path / "o", renderer)
    assert not (tmp_path / "o").exists()


def test_the_child_ends_when_the_build_fails_before_its_job(tmp_path: Path, lone_thread: None) -> None:
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="before the layers"), sbom_renderer() as renderer:
        assert renderer is not None and renderer._pid is not None
        pids.append(renderer._pid)
        raise RuntimeError("before the layers")
    assert _gone(pids[0])


def test_no_child_is_forked_while_other_threads_run() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with sbom_renderer() as renderer:
            assert renderer is None
    finally:
        stop.set()
        other.join()


def test_a_child_reaped_by_someone_else_is_no_error(lone_thread: None) -> None:
    """A caller's own ``waitpid`` may reap the child first: ending the renderer then still works."""
    with sbom_renderer() as renderer:
        assert renderer is not None and renderer._pid is not None
        os.kill(renderer._pid, signal.SIGKILL)
        os.waitpid(renderer._pid, 0)
    assert renderer._pid is None
