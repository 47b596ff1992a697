"""Lazy package exports (PEP 562): a stage's public names load their module on first use.

A stage package re-exports names from its private modules. Importing them all eagerly makes
every command pay for every module (``verify`` would import the publisher, the HTTP client,
Jinja2 and YAML it never uses; DESIGN §11). Instead the package lists, per private module, the
names it exports, and :func:`lazy_exports` gives the module-level ``__getattr__`` / ``__dir__``
that import a module the first time one of its names is read (``from pkg import name`` too).
Type checkers see the same names through an ``if TYPE_CHECKING:`` block of real imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` from ``{".module": (name, ...)}``.

    Module keys are relative to ``package`` (``"._verify"``). A name listed twice is a
    programming error (``ValueError``); an unknown attribute raises ``AttributeError`` as usual.
    """
    where: dict[str, str] = {}
    for module, names in exports.items():
        for name in names:
            if name in where:
                raise ValueError(f"{package}: {name} is exported by {where[name]} and {module}")
            where[name] = module

    def getattr_(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        importlib.import_module(package).__dict__[name] = value  # later reads skip this hook
        return value

    def dir_() -> list[str]:
        return sorted(where)

    return getattr_, dir_
