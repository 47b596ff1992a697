"""The deflate engine: zlib-ng (python ``zlib-ng``, pinned by the project).

Why: on the 2-core machines this project targets, zlib deflates the cuBLAS DLLs at level 6 at
about 22 MB/s of CPU (Info-ZIP's own deflate runs at about the same speed) and inflates them at
about 450 MB/s; with the hashing, SBOMs and the final verify that misses the DESIGN.md §11 goals
(package build ≤ 0.7× ``zip -X -r -6``, verify ≤ 1.1× ``sha256sum -c``). zlib-ng 2.x (the
same API, level and stream format) deflates them at about 36 MB/s and inflates at about
590 MB/s (docs/benchmarks.md).

Determinism: deflate *output bytes* depend on the engine and its version, so a package is
byte-identical across rebuilds given the same :data:`DEFLATE_ENGINE`; the project pins
``zlib-ng==1.1.0`` and building refuses to run without it (:func:`require_deflate_engine`)
rather than silently deflate with another library. Inflating and CRC-32 are exact with any
engine, so reading archives falls back to the interpreter's zlib when zlib-ng is absent.
"""

from __future__ import annotations

import zlib as _stdlib_zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import zlib as engine  # same API; typed as the stdlib module

    _zlib_ng: object | None
else:
    try:
        from zlib_ng import zlib_ng as _zlib_ng
    except ImportError:  # pragma: no cover - exercised only where zlib-ng is not installed
        _zlib_ng = None
    #: The module whose ``compressobj``/``decompressobj``/``crc32``/``error`` are used (zlib's API).
    engine = _zlib_ng if _zlib_ng is not None else _stdlib_zlib

#: Which deflate implementation (and version) builds packages' deflate streams.
DEFLATE_ENGINE: str = (
    f"zlib-ng {getattr(_zlib_ng, 'ZLIBNG_RUNTIME_VERSION', '?')}"
    if _zlib_ng is not None
    else "none (zlib-ng is not installed)"
)


def require_deflate_engine() -> None:
    """Check that the pinned deflate engine is there before any package is built.

    Raises:
        RuntimeError: zlib-ng is not installed (a broken install: it is a declared dependency),
            so package bytes could not match other builds.
    """
    if _zlib_ng is None:
        raise RuntimeError(
            "zlib-ng is not installed: packages are deflated with zlib-ng (pinned in pyproject.toml) "
            "so that every build gives the same bytes; reinstall the project (pip install -e .)"
        )


#: Errors a damaged deflate stream (or a lying size) raises while inflating, with either engine.
INFLATE_ERRORS: tuple[type[Exception], ...] = (ValueError, _stdlib_zlib.error, engine.error)

__all__ = ["DEFLATE_ENGINE", "INFLATE_ERRORS", "engine", "require_deflate_engine"]
