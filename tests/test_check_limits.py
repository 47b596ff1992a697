"""tools/check_limits.py, the limits ratchet (docs/architecture.md, "Limits"): qualified names,
the length measure, and the three failures (new offender, grown offender, stale baseline line)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "check_limits.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_limits", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_limits"] = module
    spec.loader.exec_module(module)
    return module


limits = _load()

SOURCE = """
@decorator
def outer():
    def inner():
        pass
    return inner

class Box:
    def method(self):
        if True:
            def branch():
                pass
"""


def test_definitions_are_named_outer_inner_and_class_method_without_decorators() -> None:
    found = list(limits.walk_definitions(ast.parse(SOURCE).body))
    assert [(d.qualname, d.lineno, d.span) for d in found] == [
        ("outer", 3, 4),
        ("outer.inner", 4, 2),
        ("Box.method", 9, 4),
        ("Box.method.branch", 11, 2),
    ]


def test_baseline_line_round_trips_and_rejects_garbage() -> None:
    entry = limits.parse_baseline_line("src/a.py::f.g  lines=81", 1)
    assert entry == limits.Offence("src/a.py", "f.g", "lines", 81)
    assert entry.line() == "src/a.py::f.g  lines=81"
    with pytest.raises(SystemExit, match="malformed line"):
        limits.parse_baseline_line("src/a.py::f  size=3", 2)


def test_compare_reports_new_grown_and_stale_entries_and_accepts_the_rest() -> None:
    def offence(name: str, value: int) -> object:
        return limits.Offence("src/a.py", name, "complexity", value)

    current = [offence("kept", 14), offence("shrunk", 13), offence("grown", 20), offence("new", 13)]
    baseline = [offence("kept", 14), offence("shrunk", 15), offence("grown", 19), offence("fixed", 30)]
    assert limits.compare(current, baseline) == [
        "src/a.py::grown  complexity=20: grew past its baseline complexity=19",
        "src/a.py::new  complexity=13: over the limit (complexity at most 12)",
        "src/a.py::fixed  complexity=30: no longer over the limit; delete this line from "
        "tools/limits-baseline.txt",
    ]
