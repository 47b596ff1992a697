"""The fast unit subset's classifier (tests/conftest.py): what makes a test ``slow``."""

from __future__ import annotations

from pathlib import Path

import pytest

import conftest
from flow_support import release_out


def _builds_the_release(factory: pytest.TempPathFactory) -> Path:
    return release_out(factory)


def _through_a_helper(factory: pytest.TempPathFactory) -> Path:
    return _builds_the_release(factory)


def _pure(values: list[int]) -> int:
    return sum(v * v for v in values)


def test_a_call_of_a_slow_helper_is_found_directly_and_through_helpers_of_tests() -> None:
    assert conftest._calls_slow(_builds_the_release, set())
    assert conftest._calls_slow(_through_a_helper, set())
    assert conftest._calls_slow(lambda f: [_builds_the_release(f)], set())


def test_pure_code_and_code_outside_tests_are_not_slow() -> None:
    assert not conftest._calls_slow(_pure, set())
    assert not conftest._calls_slow(Path.exists, set())  # library code is never walked
    assert not conftest._calls_slow(None, set())


def test_this_module_is_in_the_fast_subset(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("slow") is None


@pytest.mark.registry
def test_a_service_marker_makes_a_test_slow(request: pytest.FixtureRequest) -> None:
    """Never needs the registry itself: it only looks at its own marks."""
    assert request.node.get_closest_marker("slow") is not None
