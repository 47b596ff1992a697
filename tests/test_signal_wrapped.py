"""A Ctrl-C or SIGTERM that lands inside Python machinery, or while the CLI puts its signal
handlers back, is still an interrupt: one line, exit 130/143, never a traceback (docs/reliability.md)."""

from __future__ import annotations

import signal

import pytest

from ninfer_release import cli
from ninfer_release._signals import Handlers, Terminated


def _wrapped(inner: BaseException) -> RuntimeError:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance 'bounds' in '_Run'") from exc
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize(
    ("inner", "code", "line"), [(KeyboardInterrupt(), 130, "interrupted"), (Terminated(), 143, "terminated")]
)
def test_a_signal_wrapped_by_python_is_an_interrupt_not_an_internal_error(
    inner: BaseException, code: int, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ctx = cli.Context(json=False, debug=False, verbosity=0)
    with pytest.raises(SystemExit) as exited:
        cli._exit_for(ctx, _wrapped(inner))
    assert exited.value.code == code
    assert capsys.readouterr().err.strip() == line


def test_a_plain_runtime_error_stays_an_internal_error(capsys: pytest.CaptureFixture[str]) -> None:
    ctx = cli.Context(json=False, debug=False, verbosity=0)
    with pytest.raises(SystemExit) as exited:
        cli._exit_for(ctx, _wrapped(ValueError("x")))
    assert exited.value.code == 1
    assert "internal error" in capsys.readouterr().err


@pytest.mark.parametrize(("signal_exc", "code"), [(KeyboardInterrupt, 130), (Terminated, 143)])
def test_a_signal_while_the_handlers_are_put_back_restores_them_and_exits_quietly(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    signal_exc: type[BaseException],
    code: int,
) -> None:
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    real = Handlers.restore
    calls = []

    def interrupted_once(self: Handlers) -> None:
        calls.append(1)
        if len(calls) == 1:
            signal.signal(signal.SIGTERM, self.term)  # half done when the signal lands
            raise signal_exc
        real(self)

    monkeypatch.setattr(Handlers, "restore", interrupted_once)
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == code
    assert len(calls) == 2  # put back completely after all
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert "Traceback" not in capsys.readouterr().err
