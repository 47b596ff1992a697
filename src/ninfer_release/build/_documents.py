"""Rendering a package's SBOM documents once per set of inputs (issue 13: the unchanged rebuild).

An unchanged rebuild renders the same SPDX and CycloneDX documents from the same inputs, and
pays for it: loading spdx-tools and cyclonedx-python-lib (with beartype, ~0.3 s of CPU), building
the models, validating them (~0.5 s for the ``--full`` lane). :func:`render_or_reuse` hashes
*everything a document is made from* into one SHA-256 (:func:`inputs_sha256`): the writer's
keyword arguments, canonically encoded; the source of this very tool (every ``.py`` file of the
``ninfer_release`` package as installed, :func:`code_fingerprint`), so an edit to a writer is a
miss even without a version bump; the installed toolchain (the distributions the provenance
records, ``releases._toolchain``) and the Python version. A document rendered under that key is
kept in the deflate cache's directory (``packaging/_cache.py``, :meth:`DeflateCache.store_document`),
signed with this user's key; a later build with the same key copies those bytes instead, after
checking the signature and the bytes' SHA-256 (no key, a changed entry: rendered again). The
warnings the rendering logged are kept with it and logged again, so a reused document says what
a rendered one says. Output bytes never depend on the cache (``tests/test_document_cache.py``);
the build's self-check and final verify still read every document whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import sys
from collections.abc import Callable, Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import Any

import ninfer_release
from ninfer_release import packaging
from ninfer_release.releases import installed_toolchain

#: Elements of a sequence encoded per ``json.dumps`` call (bounds the memory of 100k records).
_BATCH = 1024
#: The loggers whose warnings a rendering may give (the sbom stage's).
_NOTED_LOGGER = "ninfer_release.sbom"


@functools.cache
def code_fingerprint() -> str:
    """SHA-256 (hex) of every ``.py`` file of the installed ``ninfer_release`` package: each
    path relative to the package (POSIX), its length and its bytes, in sorted path order (~1.9 MB
    read once per process)."""
    root = Path(ninfer_release.__file__).resolve().parent
    digest = hashlib.sha256(b"ninfer-release code v1\n")
    for path in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix()):
        data = path.read_bytes()
        digest.update(f"{path.relative_to(root).as_posix()}\n{len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()


def _plain(value: Any) -> Any:
    """``value`` as JSON values that tell every input apart: a dataclass as ``[type, fields…]``,
    a mapping as ``{"@map": [[k, v]…]}`` (in its order), a tuple or list as a list.

    Raises:
        TypeError: a value of any other type (the caller then renders: no key without a spelling).
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Enum):
        return {"@enum": [type(value).__qualname__, _plain(value.value)]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _field_names(type(value))
        return [type(value).__qualname__, *(_plain(getattr(value, n)) for n in names)]
    if isinstance(value, Mapping):
        return {"@map": [[_plain(k), _plain(v)] for k, v in value.items()]}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    raise TypeError(f"no canonical spelling for {type(value).__qualname__}")


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _encoded(arguments: Mapping[str, Any]) -> Iterator[bytes]:
    """The canonical JSON of ``arguments`` (sorted by name), in pieces: a long sequence
    :data:`_BATCH` elements at a time."""
    yield b"{"
    for i, name in enumerate(sorted(arguments)):
        value = arguments[name]
        yield (b"," if i else b"") + json.dumps(name).encode() + b":"
        if isinstance(value, list | tuple) and len(value) > _BATCH:
            yield b"["
            for start in range(0, len(value), _BATCH):
                batch = json.dumps([_plain(v) for v in value[start : start + _BATCH]], separators=(",", ":"))
                yield (b"," if start else b"") + batch[1:-1].encode()
            yield b"]"
        else:
            yield json.dumps(_plain(value), separators=(",", ":")).encode()
    yield b"}"


def inputs_sha256(kind: str, arguments: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of what document ``kind`` is made from: ``arguments`` (the writer's keyword
    arguments, canonical JSON), :func:`code_fingerprint`, the installed toolchain and the Python
    version.

    Raises:
        TypeError: an argument has no canonical spelling (:func:`_plain`).
    """
    digest = hashlib.sha256(b"ninfer-release document inputs v1\n")
    tool = [[d.name, d.version] for d in installed_toolchain()]
    head = {"kind": kind, "code": code_fingerprint(), "tool": tool, "python": list(sys.version_info[:3])}
    digest.update(json.dumps(head, sort_keys=True).encode() + b"\n")
    for piece in _encoded(arguments):
        digest.update(piece)
    return digest.hexdigest()


class _Notes(logging.Handler):
    """Collects the warnings (and worse) logged under :data:`_NOTED_LOGGER` while it is attached."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.notes: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.notes.append((record.name, record.levelno, record.getMessage()))


@contextlib.contextmanager
def _noted() -> Iterator[_Notes]:
    handler = _Notes()
    logger = logging.getLogger(_NOTED_LOGGER)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def render_or_reuse(
    cache: packaging.DeflateCache | None,
    kind: str,
    arguments: Mapping[str, Any],
    render: Callable[..., object],
    into: Path,
) -> bool:
    """Write document ``kind`` to ``into``: ``render(**arguments, into=into)``, or the bytes a
    build of this user rendered from the same inputs (:func:`inputs_sha256`), with the warnings
    that rendering logged logged again. Returns whether the document was reused.

    Without a cache, or for arguments with no canonical spelling, it always renders. A rendered
    document is stored (signed; best effort) once ``render`` returned: a rendering that raised
    stores nothing.

    Raises:
        whatever ``render`` raises (InputError, IntegrityError).
    """
    if cache is None:
        render(**arguments, into=into)
        return False
    try:
        key = inputs_sha256(kind, arguments)
    except TypeError:
        render(**arguments, into=into)
        return False
    reused = cache.reuse_document(kind, key, into)
    if reused is not None:
        for name, level, message in reused.notes:
            logging.getLogger(name).log(level, "%s", message)
        return True
    with _noted() as noted:
        render(**arguments, into=into)
    cache.store_document(kind, key, into, notes=tuple(noted.notes))
    return False
