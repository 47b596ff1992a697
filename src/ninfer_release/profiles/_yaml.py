"""Safe, bounded YAML loading: the only place the package parses YAML.

The loader is PyYAML's ``SafeLoader`` narrowed further, because every YAML file we read is a
release definition whose values end up in hashed bytes:

* bytes first: at most :data:`MAX_BYTES`, strict UTF-8, no byte-order mark, not empty;
* no anchors or aliases at all (a "billion laughs" bomb cannot expand; there is nothing to cap);
* nesting depth at most :data:`MAX_DEPTH`, at most :data:`MAX_NODES` nodes;
* duplicate mapping keys are an error (PyYAML silently keeps the last one);
* mapping keys are strings;
* YAML 1.2 core-schema scalars only: ``true``/``false`` (not ``yes``/``on``), decimal integers
  (``0644`` is 644, never octal), no sexagesimal ``1:30``, no implicit timestamps, no ``<<`` merge;
* the result holds only ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` and ``None``.
"""

from __future__ import annotations

import codecs
import math
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

from ninfer_release.errors import DefinitionError, InputError, NinferError, Problem

#: Largest YAML file we read, in bytes (ours: definitions are a few KiB).
MAX_BYTES = 1 << 20
#: Deepest nesting of collections (ours).
MAX_DEPTH = 32
#: Most nodes in one document (ours).
MAX_NODES = 20_000

_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader without aliases, anchors, duplicate keys, YAML 1.1 scalar surprises."""

    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012 - PyYAML's class-level registry
    _depth = 0
    _nodes = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        anchor = getattr(event, "anchor", None)
        mark: Any = event.start_mark
        if isinstance(event, yaml.AliasEvent):
            raise ComposerError(None, None, f"alias *{anchor} is not allowed (no anchors/aliases)", mark)
        if anchor is not None:
            raise ComposerError(None, None, f"anchor &{anchor} is not allowed (no anchors/aliases)", mark)
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise ComposerError(None, None, f"more than {MAX_NODES} nodes", mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, f"expected a mapping, found {node.id}", node.start_mark)
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                raise ConstructorError(
                    None, None, f"mapping key {key!r} is not a string", key_node.start_mark
                )
            if key in result:
                raise ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            result[key] = self.construct_object(value_node, deep=deep)
        return result


def _construct_int(loader: yaml.SafeLoader, node: Node) -> int:
    assert isinstance(node, ScalarNode)
    text = str(node.value)
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    try:
        if body.startswith("0o"):
            return sign * int(body[2:], 8)
        if body.startswith("0x"):
            return sign * int(body[2:], 16)
        return sign * int(body, 10)
    except ValueError:
        raise ConstructorError(None, None, f"{text!r} is not an integer", node.start_mark) from None


def _construct_float(loader: yaml.SafeLoader, node: Node) -> float:
    assert isinstance(node, ScalarNode)
    text = str(node.value).lower()
    if text in (".inf", "+.inf"):
        return math.inf
    if text == "-.inf":
        return -math.inf
    if text == ".nan":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise ConstructorError(None, None, f"{node.value!r} is not a number", node.start_mark) from None


# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution), in priority order.
for _tag, _regex in (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$"),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    ),
):
    _BoundedLoader.add_implicit_resolver(_tag, re.compile(_regex), None)
_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_BoundedLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)

_PLAIN_TYPES = (str, int, float, bool, type(None))


def _check_types(value: Any, where: str, problems: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _check_types(v, f"{where}.{k}" if where else str(k), problems)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_types(v, f"{where}[{i}]", problems)
    elif not isinstance(value, _PLAIN_TYPES):
        problems.append((where, f"{type(value).__name__} values are not allowed (explicit YAML tag?)"))


def load_yaml_data(path: Path, *, error: type[NinferError] = DefinitionError) -> Any:
    """Parse the YAML file at ``path`` safely and within bounds; return plain Python data.

    Limits: ``MAX_BYTES`` bytes, ``MAX_DEPTH`` levels, ``MAX_NODES`` nodes; no anchors/aliases
    (YAML bombs), no duplicate keys, no BOM, strict UTF-8, not empty (CONVENTIONS: validate up
    front). Other stages load their recipe YAML through this function with ``error=InputError``.

    Raises:
        InputError: ``path`` does not exist or is not a readable regular file.
        NinferError: of class ``error`` (default :class:`DefinitionError`) for any content problem,
            with the line and column where known.
    """
    file = str(path)
    try:
        if path.is_dir():
            raise InputError(problems=[Problem(file=file, message="is a directory, not a file")])
        if not path.is_file():
            raise InputError(problems=[Problem(file=file, message="no such file")])
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(problems=[Problem(file=file, message=f"cannot read: {exc.strerror}")]) from None
    if len(raw) > MAX_BYTES:
        raise error(problems=[Problem(file=file, message=f"larger than {MAX_BYTES} bytes")])
    if not raw.strip():
        raise error(problems=[Problem(file=file, message="empty file")])
    if raw.startswith(_BOMS):
        raise error(
            problems=[Problem(file=file, message="starts with a byte-order mark; save as UTF-8 without BOM")]
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise error(
            problems=[
                Problem(
                    file=file,
                    message=f"line {line}: not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                )
            ]
        ) from None
    loader = _BoundedLoader(text)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = " ".join(s for s in (exc.context, exc.problem) if s)
        raise error(problems=[Problem(file=file, message=f"{where}invalid YAML: {what}")]) from None
    except yaml.YAMLError as exc:
        raise error(problems=[Problem(file=file, message=f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if data is None:
        raise error(
            problems=[
                Problem(file=file, message="empty file (no YAML content, only comments or blank lines)")
            ]
        )
    problems: list[tuple[str, str]] = []
    _check_types(data, "", problems)
    if problems:
        raise error(problems=[Problem(file=file, field=f, message=m) for f, m in problems])
    return data
