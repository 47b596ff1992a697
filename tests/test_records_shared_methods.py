"""The set records share ``__eq__``/``__hash__``/``__repr__`` (``releases/_records.py::_Record``,
issue 13: import cost) with exactly the meaning ``@dataclass`` would have generated.

Each record is compared with a stdlib dataclass twin (same fields, ``eq`` and ``repr`` generated)
on equal, unequal, nested, unhashable and self-containing values; and every record of the module
is declared so that the shared methods are the ones in use (a record with ``eq=False`` that did
not inherit them would compare by identity).
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any

import pytest

from ninfer_release.jsonrecord import JsonRecord
from ninfer_release.releases import _records
from ninfer_release.releases._records import BoundTo, ModelRecord, ReceiptEntry


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Shared(_records._Record):
    a: str
    b: Any = None
    c: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Twin(JsonRecord):
    a: str
    b: Any = None
    c: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class OtherShared(_records._Record):
    a: str
    b: Any = None
    c: tuple[int, ...] = ()


VALUES: list[dict[str, Any]] = [
    {"a": "x"},
    {"a": "x", "b": 1, "c": (1, 2)},
    {"a": "x", "b": 1.0, "c": (1, 2)},  # 1 == 1.0: equal, same hash
    {"a": "y", "b": None},
    {"a": "x", "b": ("nested", (1,))},
    {"a": "", "b": "'quoted\"", "c": ()},
]


def _twin_repr(values: dict[str, Any]) -> str:
    return repr(Twin(**values)).replace("Twin(", "Shared(", 1)


@pytest.mark.parametrize("left", VALUES)
@pytest.mark.parametrize("right", VALUES)
def test_equality_and_hash_are_the_generated_ones(left: dict[str, Any], right: dict[str, Any]) -> None:
    shared_equal = Shared(**left) == Shared(**right)
    assert shared_equal == (Twin(**left) == Twin(**right))
    assert (Shared(**left) != Shared(**right)) == (Twin(**left) != Twin(**right))
    if shared_equal:
        assert hash(Shared(**left)) == hash(Shared(**right))
    assert hash(Shared(**left)) == hash(
        tuple(left.get(k, d) for k, d in (("a", None), ("b", None), ("c", ())))
    )


@pytest.mark.parametrize("values", VALUES)
def test_repr_is_the_generated_one(values: dict[str, Any]) -> None:
    assert repr(Shared(**values)) == _twin_repr(values)


def test_another_class_or_type_is_never_equal() -> None:
    assert Shared(a="x") != OtherShared(a="x")
    assert Shared(a="x").__eq__(OtherShared(a="x")) is NotImplemented
    assert Shared(a="x").__eq__(("x", None, ())) is NotImplemented
    assert Shared(a="x") != "x"


def test_unhashable_fields_make_the_record_unhashable_as_generated() -> None:
    with pytest.raises(TypeError):
        hash(Twin(a="x", b={"k": 1}))
    with pytest.raises(TypeError):
        hash(Shared(a="x", b={"k": 1}))
    assert Shared(a="x", b={"k": 1}) == Shared(a="x", b={"k": 1})


def test_a_self_containing_value_repr_is_guarded_as_generated() -> None:
    box: list[Any] = []
    shared, twin = Shared(a="x", b=box), Twin(a="x", b=box)
    box.append(shared)
    assert repr(shared) == "Shared(a='x', b=[...], c=())"
    box[0] = twin
    assert repr(twin) == "Twin(a='x', b=[...], c=())"


def _bound(config: str = "b" * 64) -> BoundTo:
    return BoundTo(
        source_commit="c" * 40, profile_id="p", config_bytes_sha256=config, package_sha256="a" * 64
    )


def test_the_records_stay_frozen_and_real_records() -> None:
    bound = _bound()
    with pytest.raises(dataclasses.FrozenInstanceError):
        bound.package_sha256 = "c"  # type: ignore[misc]
    assert bound == _bound()
    assert bound != _bound("d" * 64)
    assert repr(bound) == (
        f"BoundTo(source_commit='{'c' * 40}', profile_id='p', config_bytes_sha256='{'b' * 64}', "
        f"package_sha256='{'a' * 64}')"
    )
    assert {bound: 1}[_bound()] == 1
    assert ModelRecord.__eq__ is _records._Record.__eq__
    assert ReceiptEntry.__repr__ is _records._Record.__repr__


def test_the_twin_has_the_generated_methods() -> None:
    # The reference is the stdlib's generated methods, not a copy of the shared ones.
    assert {"__eq__", "__hash__", "__repr__"} <= set(Twin.__dict__)


def _module_dataclasses() -> list[type]:
    return [
        cls
        for _, cls in inspect.getmembers(_records, inspect.isclass)
        if cls.__module__ == _records.__name__ and dataclasses.is_dataclass(cls)
    ]


def test_every_record_of_the_module_uses_the_shared_methods() -> None:
    records = [c for c in _module_dataclasses() if issubclass(c, _records._Record)]
    assert len(records) >= 30
    for cls in _module_dataclasses():
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        if not params.eq or not params.repr:
            # eq=False without the shared methods would compare by identity
            assert issubclass(cls, _records._Record), cls
    for cls in records:
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen and not params.eq and not params.repr and not params.order, cls
        for f in dataclasses.fields(cls):
            assert f.compare and f.hash is None and f.repr, (cls, f.name)
        for name in ("__eq__", "__hash__", "__repr__"):
            assert name not in cls.__dict__, (cls, name)
