"""The one strict JSON reader (``ninfer_release.strictjson``; issue 9 "Lenient JSON")."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from ninfer_release import strictjson
from ninfer_release.errors import InputError, IntegrityError


def _problem(data: bytes, **kw: object) -> tuple[str, str]:
    with pytest.raises(InputError) as info:
        strictjson.parse(data, source="doc.json", **kw)  # type: ignore[arg-type]
    (p,) = info.value.problems
    assert p.file == "doc.json"
    return p.field, p.message


def test_plain_document_parses() -> None:
    doc = strictjson.parse(b'{"a": [1, 2.5, true, null, "x"], "b": {"c": -3}}', source="d")
    assert doc == {"a": [1, 2.5, True, None, "x"], "b": {"c": -3}}


def test_duplicate_key_is_refused_and_named() -> None:
    assert _problem(b'{"schema": 1, "x": {"k": 1, "k": 2}}') == (
        "k",
        "duplicate key 'k' (JSON inputs are read strictly)",
    )


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_finite_constants_are_refused(literal: bytes) -> None:
    _field, message = _problem(b'{"n": ' + literal + b"}")
    assert "not a JSON number" in message and literal.decode().lstrip("-") in message


def test_overflowing_float_is_refused() -> None:
    assert "non-finite" in _problem(b'{"n": 1e999}')[1]


def test_long_integers_are_refused_before_int_conversion() -> None:
    assert "100001 digits" in _problem(b'{"n": ' + b"9" * 100_001 + b"}")[1]
    assert "400 digits" in _problem(b'{"n": -' + b"1" * 400 + b"}")[1]
    assert strictjson.parse(b"18446744073709551616", source="d") == 2**64  # 20 digits


def test_deep_nesting_is_refused_with_its_path() -> None:
    ok = b"[" * strictjson.MAX_DEPTH + b"]" * strictjson.MAX_DEPTH
    strictjson.parse(ok, source="d")
    deep = b'{"a": ' + b"[" * strictjson.MAX_DEPTH + b"]" * strictjson.MAX_DEPTH + b"}"
    field, message = _problem(deep)
    assert field.startswith("a[0]") and "nested deeper than 64" in message


def _nested(rng: random.Random, depth: int) -> object:
    """A random JSON value whose deepest branch has ``depth`` containers, with brackets in strings."""
    if depth == 0:
        return rng.choice(["[]{}", "]]", 1, None, True, 2.5])
    inner = [_nested(rng, rng.randrange(depth)) for _ in range(rng.randrange(3))] + [_nested(rng, depth - 1)]
    rng.shuffle(inner)
    if rng.random() < 0.5:
        return inner
    return {f"k{i}[": v for i, v in enumerate(inner)}


@pytest.mark.parametrize("seed", range(40))
def test_fast_depth_check_agrees_with_the_path_walk(seed: int) -> None:
    """The level-by-level check (issue 13) decides exactly what the path walk decides."""
    rng = random.Random(seed)  # noqa: S311 - test data
    doc = _nested(rng, rng.randrange(1, 12))
    for limit in range(1, 13):
        assert strictjson._deeper_than(doc, limit) == (strictjson._too_deep(doc, limit) is not None)
    data = json.dumps(doc).encode()
    limit = rng.randrange(1, 12)
    deep = strictjson._too_deep(doc, limit)
    if deep is None:
        assert strictjson.parse(data, source="x", max_depth=limit) == doc
    else:
        with pytest.raises(InputError) as info:
            strictjson.parse(data, source="x", max_depth=limit)
        assert info.value.problems[0].field == deep


def test_recursion_limit_depth_is_refused_not_raised() -> None:
    assert "nested deeper" in _problem(b"[" * 200_000 + b"]" * 200_000)[1]


def test_not_utf8_and_bom_are_refused() -> None:
    assert "not UTF-8" in _problem(b'{"a": "\xff"}')[1]
    assert "BOM" in _problem(b'\xef\xbb\xbf{"a": 1}')[1]


def test_syntax_error_names_line_and_column() -> None:
    assert _problem(b'{\n  "a": 1,\n}')[1].startswith("not valid JSON: ")
    assert "line 3 column 1" in _problem(b'{\n  "a": 1,\n}')[1]


def test_error_class_is_the_callers() -> None:
    with pytest.raises(IntegrityError):
        strictjson.parse(b"{", source="d", error=IntegrityError)


def test_top_level_object_required() -> None:
    with pytest.raises(InputError, match="top level must be a JSON object"):
        strictjson.parse_object(b"[1]", source="d")


def test_bool_is_not_int() -> None:
    assert not strictjson.is_int(True) and strictjson.is_int(0)
    assert not strictjson.json_equal(True, 1) and not strictjson.json_equal(1.0, 1)
    assert strictjson.json_equal(1, 1)
    assert strictjson.get_int({"a": True}, "a") is None and strictjson.get_int({"a": 3}, "a") == 3


def test_size_is_checked_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 101)
    with pytest.raises(InputError, match="101 bytes, larger than its bound of 100 bytes"):
        strictjson.read(big, limit=100)
    assert strictjson.read_regular(big, limit=101) == b" " * 101


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="a FIFO; only regular files are read"):
        strictjson.read(fifo, limit=100)


def test_directory_missing_and_symlink(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="a directory"):
        strictjson.read(tmp_path, limit=100)
    with pytest.raises(InputError, match="gone away"):
        strictjson.read(tmp_path / "nope.json", limit=100, missing="gone away")
    (tmp_path / "t.json").write_bytes(b"{}")
    (tmp_path / "l.json").symlink_to(tmp_path / "t.json")
    assert strictjson.read(tmp_path / "l.json", limit=10) == {}
    with pytest.raises(InputError, match="not a symlink"):
        strictjson.read(tmp_path / "l.json", limit=10, follow_symlinks=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make /dev/null-like nodes")
def test_device_is_refused() -> None:
    with pytest.raises(InputError, match="a device"):
        strictjson.read(Path("/dev/zero"), limit=100)
