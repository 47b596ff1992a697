"""The tool as a build input: ninfer-release's version and its resolved Python dependencies.

The provenance names every input of a build (issue 14), the tool included: the bytes of the SBOMs
and records depend on spdx-tools, cyclonedx-python-lib, pefile, zlib-ng … as installed. This module
walks the installed distribution's requirements (``importlib.metadata``) to the closure that is
actually installed, so the provenance says which versions produced the set.
"""

from __future__ import annotations

import email.message
import email.parser
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

TOOL_DISTRIBUTION = "ninfer-release"
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


@dataclass(frozen=True, kw_only=True, order=True)
class ResolvedDistribution:
    """An installed Python distribution: normalized name (PEP 503) and version."""

    name: str
    version: str

    @property
    def purl(self) -> str:
        """``pkg:pypi/<name>@<version>`` (purl-spec ``pypi``: lowercase, ``_`` → ``-``)."""
        return f"pkg:pypi/{self.name}@{self.version}"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _wanted(marker: str, extras: frozenset[str]) -> bool:
    """Whether a requirement applies: its ``extra == …`` clause names a requested extra, or it has
    none (environment markers are judged by what is installed: an absent distribution is skipped)."""
    named = {_normalize(e) for e in _EXTRA_MARKER.findall(marker)}
    return not named or bool(named & extras)


def _headers(dist: metadata.Distribution) -> email.message.Message:
    """The header fields of ``dist``'s core metadata, parsed once.

    The text :attr:`importlib.metadata.Distribution.metadata` parses (``METADATA``, else
    ``PKG-INFO``), without its body: ``dist.metadata`` parses the long description line by line
    every time it is read (``dist.version`` and ``dist.requires`` read it again): ~50 ms of every
    build's fixed cost for 54 distributions, now ~10 ms (issue 13). Same header values.
    """
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    # The fields end at the first empty line; a "\n\n" is always one (the first may be earlier,
    # e.g. CRLF, and then the parser stops there itself).
    head, blank, _ = text.partition("\n\n")
    return email.parser.Parser().parsestr(head + "\n" if blank else head, headersonly=True)


def _requires(dist: metadata.Distribution, headers: email.message.Message) -> list[str]:
    """``dist.requires`` (or ``[]``) from the parsed ``headers``: the ``Requires-Dist`` fields,
    else an egg-info ``requires.txt`` (read by ``importlib.metadata`` itself)."""
    listed = headers.get_all("Requires-Dist")
    if listed:
        return list(listed)
    if dist.read_text("requires.txt") is None:
        return []
    return list(dist.requires or [])


def resolved_dependencies(
    root: str = TOOL_DISTRIBUTION,
    *,
    lookup: Callable[[str], metadata.Distribution] = metadata.distribution,
) -> tuple[ResolvedDistribution, ...]:
    """``root`` and every installed distribution its requirements reach, sorted by name.

    Requirements are followed with the extras they request (``cyclonedx-python-lib[json-validation]``);
    a requirement whose distribution is not installed (an environment marker excluded it) is skipped.
    ``lookup`` finds a distribution by name (tests pass a fake). Raises nothing: a root that is not
    installed gives an empty tuple.
    """
    found: dict[str, ResolvedDistribution] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        key = (_normalize(name), extras)
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = lookup(name)
        except metadata.PackageNotFoundError:
            continue
        headers = _headers(dist)
        normalized = _normalize(headers["Name"] or name)
        found[normalized] = ResolvedDistribution(name=normalized, version=str(headers["Version"]))
        for requirement in _requires(dist, headers):
            spec, _, marker = requirement.partition(";")
            match = _REQUIREMENT.match(spec)
            if match is None or not _wanted(marker, extras):
                continue
            wanted_extras = frozenset(_normalize(e) for e in (match.group(2) or "").split(",") if e.strip())
            todo.append((match.group(1), wanted_extras))
    return tuple(sorted(found.values()))


@functools.cache
def installed_toolchain() -> tuple[ResolvedDistribution, ...]:
    """:func:`resolved_dependencies` of ninfer-release as installed, walked once per process (the
    provenance's ``tool`` and the SBOM document cache's key, ``build/_documents.py``)."""
    return resolved_dependencies()
