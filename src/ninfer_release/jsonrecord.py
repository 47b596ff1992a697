"""Typed JSON records (foundation leaf): one ``to_bytes()`` and one strict ``parse()`` per record.

A published record (release manifest, lane entry, component manifest, route block, ...) is a
frozen dataclass deriving from :class:`JsonRecord`. Its fields *are* its JSON keys, so the writer
and the reader cannot drift apart:

* :meth:`JsonRecord.to_bytes` renders the record with :func:`ninfer_release.jsonbytes.dumps_stable`
  (UTF-8, two-space indent, sorted keys, LF, one trailing newline) — the bytes the project writes.
* :meth:`JsonRecord.parse` reads bytes with :mod:`ninfer_release.strictjson` (no duplicate keys,
  finite numbers, bounded depth) and refuses a missing, extra or wrongly typed field with the
  given error type (default :class:`~ninfer_release.errors.IntegrityError`, exit 5), each problem
  naming the file and the field path (``install.path_budget.max_path``). Every problem is
  reported at once.

Field types understood: ``str``, ``int`` (never a bool), ``float`` (an int or float), ``bool``,
``None``, ``Literal[...]``, unions of these, and ``X | None`` for any ``X`` below,
``tuple[X, ...]``, ``Mapping[str, X]`` and nested :class:`JsonRecord` classes. Field metadata
(:func:`json_key`, :data:`ABSENT_WHEN_NONE`) renames a key (``_type``) or makes a key absent when the value
is ``None``. A field whose JSON shape is decided at run time (a union of record kinds) names a
codec with :func:`codec`.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Self

from ninfer_release import strictjson
from ninfer_release.errors import IntegrityError, NinferError, Problem
from ninfer_release.jsonbytes import dumps_stable

#: Decoder of a :func:`coded` field: ``(value, reader, field path) -> typed value``.
Decoder = Callable[[Any, "Reader", str], Any]
#: Encoder of a :func:`coded` field: typed value -> JSON-ready value.
Encoder = Callable[[Any], Any]


def json_key(name: str) -> dict[str, Any]:
    """Field metadata: the field is stored under JSON key ``name`` (e.g. ``_type``).

    Use as ``field(metadata=json_key("_type"))``."""
    return {"key": name}


#: Field metadata: the key is absent when the value is ``None`` (and may be absent when read).
#: Use as ``field(default=None, metadata=ABSENT_WHEN_NONE)``.
ABSENT_WHEN_NONE: Mapping[str, Any] = MappingProxyType({"absent_when_none": True})


def codec(decode: Decoder, encode: Encoder) -> dict[str, Any]:
    """Field metadata: the field is read by ``decode`` and written by ``encode`` (a union of
    record kinds). Use as ``field(metadata=codec(dec, enc))``."""
    return {"decode": decode, "encode": encode}


class Reader:
    """Collects the problems of one document (``file``) while its fields are decoded."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def bad(self, where: str, message: str) -> None:
        """Record one problem at field path ``where``."""
        self.problems.append(Problem(file=self.file, field=where, message=message))


def _path(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


_MISSING = object()


def _decode_scalar(tp: Any, value: Any) -> Any:
    """``value`` if it has scalar type ``tp``, else ``_MISSING``."""
    if tp is type(None):
        return None if value is None else _MISSING
    if tp is bool:
        return value if isinstance(value, bool) else _MISSING
    if tp is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else _MISSING
    if tp is float:
        return value if isinstance(value, int | float) and not isinstance(value, bool) else _MISSING
    if tp is str:
        return value if isinstance(value, str) else _MISSING
    return _MISSING


_SCALARS = (str, int, float, bool)


def _without_none(tp: Any) -> Any:
    """``X`` of ``X | None`` (``tp`` itself otherwise)."""
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        others = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(others) == 1:
            return others[0]
    return tp


def _describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in typing.get_args(tp))
    if origin in (types.UnionType, typing.Union):
        return " or ".join(_describe(a) for a in typing.get_args(tp))
    if origin is tuple:
        return "an array"
    if origin is Mapping or (isinstance(tp, type) and issubclass(tp, JsonRecord)):
        return "an object"
    return {type(None): "null", bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(
        tp, str(tp)
    )


_SHAPES: dict[Any, tuple[str, Any]] = {}


def _shape(tp: Any) -> tuple[str, Any]:
    """:func:`_shape_of` ``tp``, remembered per (hashable) type."""
    try:
        return _SHAPES[tp]
    except KeyError:
        shape = _SHAPES[tp] = _shape_of(tp)
        return shape
    except TypeError:  # an unhashable annotation: worked out each time
        return _shape_of(tp)


def _shape_of(tp: Any) -> tuple[str, Any]:
    """What :func:`decode_value` does with type ``tp``: ``(kind, detail)``, worked out once per
    type (``typing.get_origin``/``get_args`` per value were most of a 10k-entry record's decode,
    issue 13). Kinds: ``record``, ``literal`` (its values), ``union`` (:func:`_union_shape`),
    ``tuple`` / ``mapping`` (the item type), ``scalar``."""
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, JsonRecord):
        return "record", None
    if origin is typing.Literal:
        return "literal", typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        return "union", _union_shape(tp)
    if origin is tuple:
        (item,) = (a for a in typing.get_args(tp) if a is not Ellipsis)
        return "tuple", item
    if origin is Mapping:
        _, item = typing.get_args(tp)
        return "mapping", item
    return "scalar", None


def _union_shape(tp: Any) -> tuple[tuple[Any, ...], Any, tuple[tuple[str, Any], ...]]:
    """``(args, decider, alternatives)`` of a union: ``decider`` is ``X`` of ``X | None`` when
    ``X`` is no scalar (a record, array or object decides), else ``None``; ``alternatives`` are
    ``("literal", values)`` / ``("scalar", type)`` in the union's order."""
    args = typing.get_args(tp)
    others = [a for a in args if a is not type(None)]
    decider = others[0] if len(others) == 1 and others[0] not in _SCALARS else None
    alternatives = tuple(
        ("literal", typing.get_args(a)) if typing.get_origin(a) is typing.Literal else ("scalar", a)
        for a in args
    )
    return args, decider, alternatives


def decode_value(tp: Any, value: Any, reader: Reader, where: str) -> Any:
    """``value`` (plain JSON) as type ``tp``; a problem is recorded (and ``None`` returned) when
    it does not fit."""
    kind, detail = _shape(tp)
    if kind == "record":
        if not isinstance(value, dict):
            reader.bad(where, f"expected an object, got {_json_type(value)}")
            return None
        return tp.from_json(value, reader, where)
    if kind == "literal":
        if any(type(a) is type(value) and a == value for a in detail):
            return value
        reader.bad(where, f"expected {_describe(tp)}, got {value!r}")
        return None
    if kind == "union":
        return _decode_union(tp, detail, value, reader, where)
    if kind == "tuple":
        if not isinstance(value, list):
            reader.bad(where, f"expected an array, got {_json_type(value)}")
            return None
        return tuple(decode_value(detail, v, reader, f"{where}[{i}]") for i, v in enumerate(value))
    if kind == "mapping":
        if not isinstance(value, dict):
            reader.bad(where, f"expected an object, got {_json_type(value)}")
            return None
        return MappingProxyType(
            {k: decode_value(detail, v, reader, _path(where, k)) for k, v in value.items()}
        )
    got = _decode_scalar(tp, value)
    if got is _MISSING:
        reader.bad(where, f"expected {_describe(tp)}, got {_json_type(value)}")
        return None
    return got


def _decode_union(
    tp: Any,
    shape: tuple[tuple[Any, ...], Any, tuple[tuple[str, Any], ...]],
    value: Any,
    reader: Reader,
    where: str,
) -> Any:
    args, decider, alternatives = shape
    if value is None and type(None) in args:
        return None
    if decider is not None:  # X | None: X decides (record, array, object)
        return decode_value(decider, value, reader, where)
    for kind, detail in alternatives:
        if kind == "literal":
            if any(type(x) is type(value) and x == value for x in detail):
                return value
            continue
        got = _decode_scalar(detail, value)
        if got is not _MISSING:
            return got
    reader.bad(where, f"expected {_describe(tp)}, got {_json_type(value)}")
    return None


def encode_value(value: Any) -> Any:
    """``value`` as plain JSON-ready data (records, tuples and mappings converted)."""
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [encode_value(v) for v in value]
    if isinstance(value, Mapping):
        return {k: encode_value(v) for k, v in value.items()}
    return value


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    key: str
    type: Any
    absent_when_none: bool
    decode: Decoder | None
    encode: Encoder | None


def _has_forward_ref(hint: Any) -> bool:
    """Whether a type still holds a string or ``ForwardRef`` somewhere (a nested quoted name)."""
    if isinstance(hint, str | typing.ForwardRef):
        return True
    return any(_has_forward_ref(a) for a in typing.get_args(hint))


def field_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)`` restricted to ``cls``'s dataclass fields, evaluating only
    their annotations (issue 13: ``get_type_hints`` evaluates every annotation of every base
    again for each record class, ``ClassVar`` ones included, through one ``ForwardRef`` each).

    Same resolution as ``get_type_hints`` on a class in CPython 3.11: the annotation of the most
    derived class that declares the name, evaluated with that class's module globals first, then
    its class namespace, then builtins (``get_type_hints`` swaps the two namespaces for a class),
    ``None`` read as ``NoneType``. A result that still holds a quoted name, or an ``Annotated``
    one, is left to ``get_type_hints`` itself (``tests/test_jsonrecord.py`` holds the two equal for
    every record class of the project). Raises what ``get_type_hints`` raises for a bad name.
    """
    names = {f.name for f in dataclasses.fields(cls)}
    hints: dict[str, Any] = {}
    for base in cls.__mro__:
        annotations = inspect.get_annotations(base)
        module = getattr(sys.modules.get(base.__module__), "__dict__", {})
        for name in names - hints.keys():
            if name not in annotations:
                continue
            value = annotations[name]
            if isinstance(value, str):
                value = eval(value, dict(vars(base)), module)  # noqa: S307 - a class's own annotation
            hint = type(None) if value is None else value
            if _has_forward_ref(hint) or typing.get_origin(hint) is typing.Annotated:
                return {n: t for n, t in typing.get_type_hints(cls).items() if n in names}
            hints[name] = hint
    return hints


class JsonRecord:
    """Base of a frozen record dataclass whose fields are its JSON keys (module docstring)."""

    #: What the record is called in messages (``a route block``); defaults to the class name.
    RECORD_KIND: ClassVar[str] = ""
    _fields_cache: ClassVar[dict[type, tuple[_Field, ...]]] = {}

    @classmethod
    def _json_fields(cls) -> tuple[_Field, ...]:
        cached = JsonRecord._fields_cache.get(cls)
        if cached is None:
            hints = field_hints(cls)
            cached = tuple(
                _Field(
                    name=f.name,
                    key=f.metadata.get("key", f.name),
                    type=hints[f.name],
                    absent_when_none=bool(f.metadata.get("absent_when_none")),
                    decode=f.metadata.get("decode"),
                    encode=f.metadata.get("encode"),
                )
                for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                if f.init
            )
            JsonRecord._fields_cache[cls] = cached
        return cached

    def to_json(self) -> dict[str, Any]:
        """The record as plain JSON-ready data (its keys, nested records converted)."""
        out: dict[str, Any] = {}
        for f in self._json_fields():
            value = getattr(self, f.name)
            if value is None and f.absent_when_none:
                continue
            out[f.key] = f.encode(value) if f.encode is not None else encode_value(value)
        return out

    def to_bytes(self) -> bytes:
        """The exact bytes the project writes for this record (stable JSON, module docstring)."""
        return dumps_stable(self.to_json())

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], reader: Reader, where: str = "") -> Self:
        """The record from a decoded JSON object; problems go to ``reader`` (see :meth:`parse`)."""
        fields = cls._json_fields()
        known = {f.key for f in fields}
        for k in doc:
            if k not in known:
                reader.bad(_path(where, k), f"unknown field (not part of {cls.kind_name()})")
        values: dict[str, Any] = {}
        for f in fields:
            at = _path(where, f.key)
            if f.key not in doc:
                if not f.absent_when_none:
                    reader.bad(at, "missing")
                values[f.name] = None
                continue
            raw = doc[f.key]
            if raw is None and f.absent_when_none:  # written without the key, never as null
                reader.bad(at, f"expected {_describe(_without_none(f.type))}, got null")
                values[f.name] = None
            elif f.decode is not None:
                values[f.name] = f.decode(raw, reader, at)
            else:
                values[f.name] = decode_value(f.type, raw, reader, at)
        return cls(**values)

    @classmethod
    def kind_name(cls) -> str:
        """The record's name in messages."""
        return cls.RECORD_KIND or cls.__name__

    @classmethod
    def parse(cls, data: bytes, *, source: str, error: type[NinferError] = IntegrityError) -> Self:
        """Parse ``data`` strictly as this record; ``source`` names the file in every message.

        Raises:
            error (default IntegrityError, exit 5): not strict JSON (:mod:`strictjson`), not an
                object, or a field missing, unknown or of the wrong type — all at once, each
                naming ``source`` and the field path.
        """
        doc = strictjson.parse_object(data, source=source, error=error)
        return cls.parse_doc(doc, source=source, error=error)

    @classmethod
    def parse_doc(
        cls, doc: Mapping[str, Any], *, source: str, error: type[NinferError] = IntegrityError
    ) -> Self:
        """:meth:`parse` of an already decoded JSON object."""
        reader = Reader(source)
        record = cls.from_json(doc, reader)
        if reader.problems:
            raise error(problems=reader.problems)
        return record
