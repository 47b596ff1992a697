"""dumps_indented is json.dumps with an indent, for every input (issue 13: the fast writer).

Its output (or its exception) must be json's for any value: random trees of every JSON type,
the subclasses json writes by their base type, non-string keys, and the inputs json refuses.
"""

from __future__ import annotations

import enum
import json
import math
import random
from typing import Any

import pytest

from ninfer_release import jsonbytes
from ninfer_release.jsonbytes import LazyArray, dumps_indented, dumps_indented_bytes, dumps_stable

_STRINGS = ["", "a", "é", "\u2028", "\ud800", '\x00\x1f"\\/', "日本", "tab\there", "\U0001f600"]
_NUMBERS: list[Any] = [0, -1, 2**70, 1.5, -0.0, 1e300, 1e-300, math.pi, math.nan, math.inf, -math.inf]


class _Str(str):
    pass


class _Int(enum.IntEnum):
    ONE = 1


class _Float(float):
    pass


def _scalar(rng: random.Random) -> Any:
    return rng.choice([*_STRINGS, *_NUMBERS, True, False, None, _Str("sub"), _Int.ONE, _Float(2.5)])


def _key(rng: random.Random, mixed: bool) -> Any:
    if mixed and rng.random() < 0.3:
        return rng.choice([1, 2.5, True, False, None, -7, math.inf])
    return rng.choice(_STRINGS) + str(rng.randrange(50))


def _tree(rng: random.Random, depth: int, mixed: bool) -> Any:
    if depth == 0 or rng.random() < 0.25:
        return _scalar(rng)
    n = rng.randrange(4)
    kind = rng.random()
    if kind < 0.4:
        return [_tree(rng, depth - 1, mixed) for _ in range(n)]
    if kind < 0.5:
        return tuple(_tree(rng, depth - 1, mixed) for _ in range(n))
    return {_key(rng, mixed): _tree(rng, depth - 1, mixed) for _ in range(n)}


def _same(obj: Any, **options: Any) -> None:
    try:
        expected: Any = json.dumps(obj, **options)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            dumps_indented(obj, **options)
        with pytest.raises(type(exc)):
            dumps_indented_bytes(obj, **options)
        return
    assert dumps_indented(obj, **options) == expected
    _same_bytes(obj, expected + "\n", end="\n", **options)


def _same_bytes(obj: Any, text: str, **options: Any) -> None:
    """dumps_indented_bytes is the text encoded (or encode's error), however small its pieces."""
    try:
        expected = text.encode("utf-8")
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            dumps_indented_bytes(obj, **options)
        return
    assert dumps_indented_bytes(obj, **options) == expected


@pytest.fixture(autouse=True)
def _small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonbytes, "_PIECES", 3)  # every array element spills: each cut is tested


def test_a_lazy_array_is_written_as_its_list() -> None:
    parts: tuple[list[Any], tuple[Any, ...], list[Any]] = ([{"a": [1, 2]}, "x"], (3, {"b": None}), [])
    doc = {"files": LazyArray(*parts), "n": [LazyArray(), LazyArray([[]])]}
    plain = {"files": [{"a": [1, 2]}, "x", 3, {"b": None}], "n": [[], [[]]]}
    for indent in (0, 2, 4):
        assert (
            dumps_indented_bytes(doc, indent=indent, end="\n")
            == (json.dumps(plain, indent=indent) + "\n").encode()
        )
    # What json cannot write is json's to refuse, lazy arrays made lists first.
    with pytest.raises(TypeError):
        dumps_indented_bytes({"files": LazyArray([object()])}, indent=2)
    assert (
        dumps_indented_bytes({1: LazyArray([1]), "1": 2}, indent=2, sort_keys=False)
        == json.dumps({1: [1], "1": 2}, indent=2).encode()
    )
    # dumps_indented (and so json's own rules) never takes a lazy array.
    with pytest.raises(TypeError):
        dumps_indented({"files": LazyArray([1])}, indent=2)


@pytest.mark.parametrize("seed", range(60))
def test_random_trees_equal_json_dumps(seed: int) -> None:
    rng = random.Random(seed)  # noqa: S311 - test data
    obj = _tree(rng, 6, mixed=seed % 2 == 0)
    for indent in (0, 2, 4):
        for sort_keys in (False, True):
            for ensure_ascii in (False, True):
                for allow_nan in (False, True):
                    options = {"sort_keys": sort_keys, "ensure_ascii": ensure_ascii, "allow_nan": allow_nan}
                    _same(obj, indent=indent, **options)


@pytest.mark.parametrize(
    "obj",
    [
        "top",
        None,
        {},
        [],
        [[], {}, [[]]],
        {"b": 1, "a": {"z": [1, 2], "y": {}}},
        {1: "int key", "1": "str key"},  # two keys json writes as the same text
        {b"bytes": 1},
        [b"bytes"],
        {1, 2},
        [object()],
        {"a": 1, 2: "mixed keys, sorted"},
    ],
)
def test_edge_values_equal_json_dumps(obj: Any) -> None:
    for sort_keys in (False, True):
        _same(obj, indent=4, sort_keys=sort_keys)


def test_a_cycle_is_json_s_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps_indented(loop, indent=2)


def test_dumps_stable_bytes_are_unchanged() -> None:
    doc = {"b": [1, 2.5, None, True], "a": {"é": "日本", "n": []}}
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    assert dumps_stable(doc) == (text + "\n").encode("utf-8")
    with pytest.raises(ValueError):
        dumps_stable({"x": math.nan})
