"""Typed inputs and outputs of the sbom stage (plain values; no I/O)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar

DependencyKind = Literal["vendored", "redistributable", "engine"]
RedistGroup = Literal["cuda", "crt", "directstorage", "other"]

DEPENDENCY_KINDS: tuple[str, ...] = ("vendored", "redistributable", "engine")
REDIST_GROUPS: tuple[str, ...] = ("cuda", "crt", "directstorage", "other")
#: What a stand-in redistributable of each group stands in for, as its descriptions name it
#: (issue 35: "NOT the real dstorage-stand-in" named the placeholder, not the real thing).
STANDS_IN_FOR: Mapping[str, str] = MappingProxyType(
    {
        "cuda": "NVIDIA CUDA redistributable",
        "crt": "Microsoft Visual C++ runtime",
        "directstorage": "Microsoft DirectStorage runtime",
        "other": "redistributable",
    }
)


def stands_in_for(kind: str, group: str | None) -> str:
    """The real thing a stand-in of ``kind`` (``engine``/``redistributable``) and ``group`` replaces."""
    return "NInfer engine" if kind == "engine" else STANDS_IN_FOR.get(group or "other", "redistributable")


@dataclass(frozen=True, kw_only=True, slots=True)
class FileRecord:
    """One file inside the package, as the SPDX inventory lists it.

    ``path`` is zip-relative POSIX (``bin/cudart64_13.dll``, no leading ``./`` or ``/``); ``size``
    in bytes; ``sha1``/``sha256`` lowercase hex of the exact stored bytes; ``license`` an SPDX
    licence expression (unknown ids are turned into ``LicenseRef-<id>``, C29) or ``None`` for
    NOASSERTION.
    """

    path: str
    size: int
    sha1: str
    sha256: str
    license: str | None = None
    copyright: str | None = None
    comment: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ShippedFile:
    """A file of a dependency as shipped in the package: zip path and lowercase SHA-256."""

    path: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class DependencyRecord:
    """One resolved dependency of a lane, as the CycloneDX inventory lists it.

    * ``vendored``: source compiled into the engine (``purl``, ``source_url``, ``commit``);
      ``files`` is empty.
    * ``redistributable``: a third-party binary package whose ``files`` are shipped as-is
      (``group`` says which kind; ``version`` is the *package* version from the lock, e.g. the
      wheel version ``13.3.29``; ``stand_in`` marks a sample file that is not the real thing).
    * ``engine``: the engine's own executables/DLLs (``files``), built from the lane's source.

    ``cpe`` is a CPE 2.3 formatted string where ``sbom/catalog.json`` maps the package to an NVD
    vendor and product (:func:`ninfer_release.sbom.apply_catalog` fills it in).
    """

    kind: DependencyKind
    name: str
    version: str
    purl: str | None = None
    supplier: str | None = None
    license: str | None = None
    group: RedistGroup | None = None
    files: tuple[ShippedFile, ...] = ()
    source_url: str | None = None
    commit: str | None = None
    homepage: str | None = None
    description: str | None = None
    stand_in: bool = False
    cpe: str | None = None


@dataclass(frozen=True, kw_only=True)
class PeInfo:
    """What :func:`read_pe` learned from a Windows PE image (DLL/EXE).

    * ``machine``: ``x86_64``, ``x86``, ``arm64`` or ``0x<hex>`` for anything else.
    * ``file_version`` / ``product_version``: the numeric ``VS_FIXEDFILEINFO`` versions as dotted
      quads (``14.44.35211.0``), ``None`` without a version resource.
    * ``version_strings``: the first ``StringFileInfo`` table (``FileDescription``,
      ``ProductName``, ``CompanyName``, ``FileVersion`` …), values stripped.
    * ``cuda_version``: the CUDA version named in NVIDIA's version *strings*
      (``NVIDIA CUDA Runtime, Version 13.3.29`` → ``13.3.29``); NVIDIA's fixed FileVersion
      (``6.14.11.N``) is not it. ``None`` when no string names CUDA.
    * ``imports`` / ``delay_imports``: imported DLL names, lowercased, sorted, unique.
    * ``signer``: the subject common name of the Authenticode signing certificate as read from the
      security directory (the one certificate of its PKCS#7 bag that issued no other), ``None``
      when unsigned or not one such certificate. Read, not verified: a name, not a trust verdict.
    """

    machine: str
    file_version: str | None
    product_version: str | None
    version_strings: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    cuda_version: str | None = None
    imports: tuple[str, ...] = ()
    delay_imports: tuple[str, ...] = ()
    signer: str | None = None

    @property
    def all_imports(self) -> tuple[str, ...]:
        """Normal and delay-load imports together, sorted and unique (lowercased DLL names)."""
        return tuple(sorted(set(self.imports) | set(self.delay_imports)))


@dataclass(frozen=True, kw_only=True)
class NormalizedLicense:
    """A licence expression made SPDX-valid (C29).

    ``expression`` is the rewritten text (unknown ids as ``LicenseRef-<id>``); ``license_refs``
    the sorted ``LicenseRef-…`` ids it uses, each needing extracted text.
    """

    expression: str
    license_refs: tuple[str, ...]


T = TypeVar("T")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What a function gave: its ``value``, or the ``error`` it raised (``get()`` gives it back)."""

    value: T | None
    error: Exception | None

    def get(self) -> T:
        """The value, or raise the very exception the function raised."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]  # the function's own result


def attempt(function: Callable[..., T], *args: Any) -> Outcome[T]:
    """``function(*args)``'s :class:`Outcome`: a check that runs later raises where it always did."""
    try:
        return Outcome(value=function(*args), error=None)
    except Exception as exc:  # noqa: BLE001 - kept to be raised where the caller asks for it
        return Outcome(value=None, error=exc)
