"""A MemoryError (the machine's or the process's address-space limit) is exit 4 with one line,
not "internal error" exit 1 (hostile review, 2026-12-04: verify of an SBOM bomb under
``prlimit --as=1GiB``; the bounds now refuse that set first, tests/test_verify_bounds_scale.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ninfer_release import cli


@pytest.fixture
def exhausting() -> Iterator[str]:
    @cli.cli.command("exhaust-test")
    def exhaust_test() -> None:
        raise MemoryError

    try:
        yield "exhaust-test"
    finally:
        cli.cli.commands.pop("exhaust-test")


@pytest.mark.parametrize("as_json", [False, True])
def test_out_of_memory_is_an_environment_fault(
    exhausting: str, as_json: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        cli.main([*(["--json"] if as_json else []), exhausting])
    assert ended.value.code == 4
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "error: out of memory: the command needed more memory than this process may use; nothing was written"
    ]
    if as_json:
        doc = json.loads(out)
        assert (doc["ok"], doc["exit_code"], doc["error"]) == (False, 4, "MemoryError")
    else:
        assert out == ""
