"""The typed-record base (``ninfer_release.jsonrecord``): exact bytes, strict reading, field paths."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pytest

from ninfer_release.errors import InputError, IntegrityError
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.jsonrecord import ABSENT_WHEN_NONE, JsonRecord, json_key


@dataclass(frozen=True, kw_only=True)
class Inner(JsonRecord):
    RECORD_KIND = "an inner block"

    n: int
    tags: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Outer(JsonRecord):
    RECORD_KIND = "an outer record"

    type: str = field(metadata=json_key("_type"))
    mode: Literal["build", "carry"]
    ratio: float
    flag: bool
    maybe: int | None
    inner: Inner
    table: Mapping[str, int]
    note: str | None = field(default=None, metadata=ABSENT_WHEN_NONE)


SAMPLE = Outer(
    type="t",
    mode="build",
    ratio=1.5,
    flag=True,
    maybe=None,
    inner=Inner(n=2, tags=("a", "b")),
    table={"x": 1},
)


def test_to_bytes_is_the_stable_json_of_its_keys() -> None:
    doc = {
        "_type": "t",
        "mode": "build",
        "ratio": 1.5,
        "flag": True,
        "maybe": None,
        "inner": {"n": 2, "tags": ["a", "b"]},
        "table": {"x": 1},
    }
    assert SAMPLE.to_bytes() == dumps_stable(doc)
    assert Outer.parse(SAMPLE.to_bytes(), source="f") == SAMPLE
    with_note = Outer.parse(dumps_stable({**doc, "note": "n"}), source="f")
    assert with_note.note == "n" and b'"note": "n"' in with_note.to_bytes()


@pytest.mark.parametrize(
    ("change", "field_path", "message"),
    [
        ({"mode": "borrow"}, "mode", "expected 'build' or 'carry', got 'borrow'"),
        ({"ratio": "1.5"}, "ratio", "expected a number, got a string"),
        ({"flag": 1}, "flag", "expected a boolean, got a number"),
        ({"maybe": False}, "maybe", "expected an integer or null, got a boolean"),
        ({"inner": {"n": 2, "tags": ["a", 3]}}, "inner.tags[1]", "expected a string, got a number"),
        ({"inner": {"n": 2}}, "inner.tags", "missing"),
        ({"inner": {"n": 2, "tags": [], "x": 0}}, "inner.x", "unknown field (not part of an inner block)"),
        ({"table": {"x": "1"}}, "table.x", "expected an integer, got a string"),
        ({"note": None}, "note", "expected a string, got null"),
    ],
)
def test_a_wrong_field_is_named_with_its_path(
    change: dict[str, object], field_path: str, message: str
) -> None:
    doc = {**SAMPLE.to_json(), **change}
    with pytest.raises(IntegrityError) as exc:
        Outer.parse(dumps_stable(doc), source="rec.json")
    assert [(p.file, p.field, p.message) for p in exc.value.problems] == [("rec.json", field_path, message)]


def test_every_problem_is_reported_at_once_with_the_callers_error_type() -> None:
    doc = {k: v for k, v in SAMPLE.to_json().items() if k != "_type"}
    doc["extra"] = 1
    with pytest.raises(InputError) as exc:
        Outer.parse(dumps_stable(doc), source="rec.json", error=InputError)
    assert [p.field for p in exc.value.problems] == ["extra", "_type"]


def test_not_strict_json_is_refused_before_any_field() -> None:
    with pytest.raises(IntegrityError, match="duplicate key"):
        Outer.parse(b'{"mode": "build", "mode": "carry"}', source="rec.json")
    with pytest.raises(IntegrityError, match="top level must be a JSON object"):
        Outer.parse(b"[1]", source="rec.json")


@dataclass(frozen=True, kw_only=True)
class Unions(JsonRecord):
    """Every union kind the decoder distinguishes (its per-type analysis is cached, issue 13)."""

    a: Literal["x", "y"] | None
    b: int | str
    c: Inner | None
    e: Literal[1, True] | float
    h: Literal["z"] | int | None


_UNIONS_OK = {"a": None, "b": "s", "c": {"n": 1, "tags": []}, "e": True, "h": "z"}


@pytest.mark.parametrize(
    ("change", "problems"),
    [
        ({}, []),
        ({"a": "x", "b": 3, "c": None, "e": 2.5, "h": 4}, []),
        ({"a": "w"}, [("a", "expected 'x' or 'y', got 'w'")]),  # X | None: X decides
        ({"b": None}, [("b", "expected an integer or a string, got null")]),
        ({"b": True}, [("b", "expected an integer or a string, got a boolean")]),
        (
            {"c": {"n": 1, "t": []}},
            [("c.t", "unknown field (not part of an inner block)"), ("c.tags", "missing")],
        ),
        ({"c": []}, [("c", "expected an object, got an array")]),
        ({"e": False}, [("e", "expected 1 or True or a number, got a boolean")]),
        ({"h": 2.5}, [("h", "expected 'z' or an integer or null, got a number")]),
    ],
)
def test_union_fields_decode_and_name_their_problem(
    change: dict[str, object], problems: list[tuple[str, str]]
) -> None:
    doc = {**_UNIONS_OK, **change}
    if not problems:
        assert Unions.parse(dumps_stable(doc), source="u.json").to_json() == doc
        return
    with pytest.raises(IntegrityError) as exc:
        Unions.parse(dumps_stable(doc), source="u.json")
    assert sorted((p.field, p.message) for p in exc.value.problems) == sorted(problems)


def _all_record_classes() -> list[type]:
    import dataclasses
    import importlib
    import pkgutil

    import ninfer_release

    for module in pkgutil.walk_packages(ninfer_release.__path__, "ninfer_release."):
        if module.name.endswith("__main__"):
            continue
        importlib.import_module(module.name)
    found: list[type] = []
    todo: list[type] = [JsonRecord]
    while todo:
        cls = todo.pop()
        sub: type
        for sub in cls.__subclasses__():
            todo.append(sub)
            if dataclasses.is_dataclass(sub):
                found.append(sub)
    return found


def test_field_hints_are_get_type_hints_for_every_record_class() -> None:
    """``jsonrecord.field_hints`` (the lean resolution ``_json_fields`` uses) equals
    ``typing.get_type_hints`` on each field of every record class of the project."""
    import dataclasses
    import typing

    from ninfer_release.jsonrecord import field_hints

    classes = _all_record_classes()
    assert len(classes) >= 50
    for cls in classes:
        names = {f.name for f in dataclasses.fields(cls)}
        want = {n: t for n, t in typing.get_type_hints(cls).items() if n in names}
        assert field_hints(cls) == want, cls
