"""The limits ratchet: no function over the length limit (src/, tests/, bench/, tools/) or, in src/,
the complexity limit, unless baselined.

Limits (docs/architecture.md, "Limits"; issue 10):

* cyclomatic complexity at most ``[tool.ruff.lint.mccabe] max-complexity`` of pyproject.toml (12),
  as ruff's C901 counts it;
* a function or method spans at most ``MAX_LINES`` (80) lines: ``end_lineno - lineno + 1`` of its
  ``def`` statement, decorators excluded, nested functions included.

``tools/limits-baseline.txt`` lists the functions that were over a limit when the ratchet started,
one line per (function, limit): ``src/pkg/mod.py::Class.method  complexity=34`` or ``... lines=280``
(nested functions as ``outer.inner``). The check fails (exit 1, one line per problem) when

* a function not in the baseline is over a limit (new offender);
* a baselined function grew past its recorded value;
* a baseline line no longer names an offender (it was fixed or removed: delete the line, so the
  list only shrinks).

The baseline is empty since every function came under the limits (ruff's C901 now covers src/
too); it stays empty: never add lines. ``--print`` writes the current offenders in baseline format.
Standard library plus ``ruff`` (run as ``python -m ruff``, the one in this interpreter's venv).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tools" / "limits-baseline.txt"
PYPROJECT = ROOT / "pyproject.toml"
SOURCE_DIR = "src"
#: Where the length limit holds (ruff's C901 covers complexity in all of them through pyproject).
LENGTH_DIRS = ("src", "tests", "bench", "tools")
MAX_LINES = 80

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True, order=True)
class Offence:
    """One function over one limit: ``path`` relative to the repo root (posix), ``metric`` is
    ``complexity`` or ``lines``, ``value`` the measured count."""

    path: str
    qualname: str
    metric: str
    value: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.path, self.qualname, self.metric)

    def line(self) -> str:
        """The baseline line of this offence."""
        return f"{self.path}::{self.qualname}  {self.metric}={self.value}"


@dataclass(frozen=True)
class Definition:
    """A ``def`` found by the AST walk: its dotted name, the line of ``def`` and its span."""

    qualname: str
    lineno: int
    span: int


def max_complexity() -> int:
    """The C901 limit, from pyproject's ``[tool.ruff.lint.mccabe] max-complexity``."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    return int(config["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"])


def walk_definitions(body: Sequence[ast.stmt], prefix: str = "") -> Iterator[Definition]:
    """Every function and method under ``body``, classes and functions nesting the dotted name."""
    for node in body:
        if isinstance(node, FunctionNode):
            name = prefix + node.name
            span = (node.end_lineno or node.lineno) - node.lineno + 1
            yield Definition(name, node.lineno, span)
            yield from walk_definitions(node.body, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from walk_definitions(node.body, prefix + node.name + ".")
        else:
            yield from walk_definitions(_child_statements(node), prefix)


def _child_statements(node: ast.stmt) -> list[ast.stmt]:
    """The statements nested in a compound statement (if/for/while/with/try/match bodies)."""
    children: list[ast.stmt] = []
    for field in ("body", "orelse", "finalbody"):
        children.extend(getattr(node, field, []))
    for handler in getattr(node, "handlers", []):
        children.extend(handler.body)
    for case in getattr(node, "cases", []):
        children.extend(case.body)
    return children


def definitions(path: Path) -> list[Definition]:
    """The functions of one source file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return list(walk_definitions(tree.body))


def source_files() -> list[Path]:
    """Every Python file under LENGTH_DIRS, sorted."""
    return sorted(path for name in LENGTH_DIRS for path in (ROOT / name).rglob("*.py"))


def relative(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def length_offences(files: Sequence[Path]) -> Iterator[Offence]:
    """Functions whose ``def`` spans more than MAX_LINES lines."""
    for path in files:
        for found in definitions(path):
            if found.span > MAX_LINES:
                yield Offence(relative(path), found.qualname, "lines", found.span)


def ruff_complexity(limit: int) -> list[dict[str, object]]:
    """ruff's C901 diagnostics for src/ (JSON records), whatever the project's per-file ignores."""
    command = [
        sys.executable, "-m", "ruff", "check", "--isolated", "--select", "C901",
        "--config", f"lint.mccabe.max-complexity={limit}", "--output-format", "json", SOURCE_DIR,
    ]  # fmt: skip
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if result.returncode not in (0, 1):
        raise SystemExit(f"check_limits: ruff failed ({result.returncode}): {result.stderr.strip()}")
    records: list[dict[str, object]] = json.loads(result.stdout)
    return records


def _complexity_of(message: str) -> int:
    """The measured value of a C901 message: "`name` is too complex (15 > 12)" -> 15."""
    return int(message.rsplit("(", 1)[1].split(" ", 1)[0])


def complexity_offences(limit: int) -> Iterator[Offence]:
    """Functions ruff's C901 reports, named by the AST def on the reported line."""
    by_file: dict[Path, dict[int, str]] = {}
    for record in ruff_complexity(limit):
        path = Path(str(record["filename"]))
        if path not in by_file:
            by_file[path] = {d.lineno: d.qualname for d in definitions(path)}
        location = record["location"]
        assert isinstance(location, dict)
        row = int(location["row"])
        qualname = by_file[path].get(row)
        if qualname is None:
            raise SystemExit(f"check_limits: no def at {relative(path)}:{row} for {record['message']}")
        yield Offence(relative(path), qualname, "complexity", _complexity_of(str(record["message"])))


def current_offences() -> list[Offence]:
    """Every function over a limit (complexity: src/; length: LENGTH_DIRS), sorted by path, name, metric."""
    return sorted([*complexity_offences(max_complexity()), *length_offences(source_files())])


def parse_baseline_line(text: str, number: int) -> Offence:
    """``path::qualname  metric=value`` -> Offence; a malformed line is a SystemExit naming it."""
    try:
        location, measure = text.split()
        path, qualname = location.split("::")
        metric, value = measure.split("=")
        if metric not in ("complexity", "lines"):
            raise ValueError(metric)
        return Offence(path, qualname, metric, int(value))
    except ValueError:
        raise SystemExit(f"{relative(BASELINE)}:{number}: malformed line: {text!r}") from None


def read_baseline(path: Path) -> list[Offence]:
    """The baseline's offences; blank lines and ``#`` comments are skipped."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        parse_baseline_line(text.strip(), number)
        for number, text in enumerate(lines, 1)
        if text.strip() and not text.lstrip().startswith("#")
    ]


def compare(current: Sequence[Offence], baseline: Sequence[Offence]) -> list[str]:
    """One line per problem: new offender, grown offender, stale baseline line."""
    recorded = {entry.key: entry for entry in baseline}
    found = {entry.key: entry for entry in current}
    problems: list[str] = []
    for entry in current:
        known = recorded.get(entry.key)
        if known is None:
            problems.append(f"{entry.line()}: over the limit ({_limit_text(entry.metric)})")
        elif entry.value > known.value:
            problems.append(f"{entry.line()}: grew past its baseline {known.metric}={known.value}")
    for entry in baseline:
        if entry.key not in found:
            problems.append(
                f"{entry.line()}: no longer over the limit; delete this line from {relative(BASELINE)}"
            )
    return problems


def _limit_text(metric: str) -> str:
    if metric == "lines":
        return f"at most {MAX_LINES} lines per function"
    return f"complexity at most {max_complexity()}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--print", action="store_true", help="print the current offenders (baseline format)")
    args = parser.parse_args(argv)
    current = current_offences()
    if args.print:
        for entry in current:
            print(entry.line())
        return 0
    problems = compare(current, read_baseline(BASELINE))
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
