"""The tested toolchain is pinned (constraints.txt), so every machine builds the same set bytes.

The provenance of a set names the tool's resolved Python dependencies (``releases/_toolchain.py``),
so a transitive dependency that moves on PyPI (uritools 7.0.0 → 7.0.1 did, during one session)
changes the provenance, the component manifest, ``SHA256SUMS`` and the release manifest.
``./dev setup`` and ``.ci/run`` install with ``-c constraints.txt``; ``tests/golden/TOOLCHAIN`` (what
the golden provenance was built with) must be exactly the runtime part of those pins.
"""

from __future__ import annotations

import re
import tomllib

from flow_support import REPO


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(text: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep, f"constraints.txt: {line!r} is not an exact pin (name==version)"
        pins[_norm(name)] = version
    return pins


def test_every_golden_toolchain_entry_is_pinned_to_the_same_version() -> None:
    pins = _pins((REPO / "constraints.txt").read_text())
    golden = _pins((REPO / "tests" / "golden" / "TOOLCHAIN").read_text())
    golden.pop("ninfer-release")
    assert {name: pins.get(name) for name in golden} == golden


def test_every_declared_dependency_is_pinned() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = [d for deps in project["optional-dependencies"].values() for d in deps]
    declared = list(project["dependencies"]) + extras
    names = {_norm(re.split(r"[\[<>=!~ ;]", d, maxsplit=1)[0]) for d in declared}
    pins = _pins((REPO / "constraints.txt").read_text())
    assert sorted(names - pins.keys()) == ["matplotlib"]  # bench-only, never installed by ./dev setup


def test_setup_and_ci_install_with_the_constraints() -> None:
    assert "-c constraints.txt" in (REPO / "dev").read_text()
