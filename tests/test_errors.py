"""The exit-code table and the CLI's error mapping."""

from conftest import RunCli
from ninfer_release.errors import (
    BackendError,
    DefinitionError,
    ExitCode,
    InputError,
    IntegrityError,
    Problem,
    PublishError,
)


def test_exit_code_table_matches_design() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert DefinitionError.exit_code == 3
    assert InputError.exit_code == 4
    assert IntegrityError.exit_code == 5
    assert BackendError.exit_code == 6
    assert PublishError.exit_code == 7


def test_problems_render_one_line_each() -> None:
    err = DefinitionError(
        problems=[Problem(file="a.yaml", field="x.y", message="bad"), Problem(file="b.yaml", message="empty")]
    )
    assert err.lines == ["a.yaml: x.y: bad", "b.yaml: empty"]


def test_unknown_command_is_usage_error(run_cli: RunCli) -> None:
    code, _, err = run_cli("no-such-command")
    assert code == 2
    assert "Traceback" not in err


def test_a_problem_is_one_line_whatever_its_parts_hold() -> None:
    # issue 36: `verify 'oci://h/x:t<LF>error: …'` printed two lines, the second a forged one.
    from ninfer_release.errors import Problem

    line = str(Problem(file="oci://h/x:t\nerror: forged", field="ref\r", message="bad \x1b[31m ü 中"))
    assert line == "oci://h/x:t\\nerror: forged: ref\\r: bad \\x1b[31m ü 中"
    assert len(line.splitlines()) == 1
