"""``sbom spdx3``: the SPDX 3.0.1 document of a sealed set or an image build output, written to a file.

The directory's kind decides the reader: ``SHA256SUMS`` → a native asset set
(:func:`ninfer_release.sbom._spdx3_set.spdx3_of_set`), ``image.json`` → an image build output
(:func:`ninfer_release.sbom._spdx3_image.spdx3_of_image`). The document is never written into a
set's directory: the set stays exactly its 11 files.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ninfer_release.atomic import write_bytes
from ninfer_release.errors import InputError, Problem

SUMS = "SHA256SUMS"  # a sealed set (releases: the 11th file)
IMAGE_JSON = "image.json"  # an image build output (containers: the build record)
#: The optional dependency (``pip install 'ninfer-release[spdx3]'``); the build never needs it.
BINDINGS = "spdx_python_model"


@dataclass(frozen=True, kw_only=True)
class Spdx3Written:
    """What :func:`write_spdx3` wrote: the source ``kind``, the ``out`` path, its ``size`` in bytes
    and lowercase hex ``sha256``."""

    kind: Literal["set", "image"]
    source: str
    out: str
    size: int
    sha256: str

    def as_json(self) -> dict[str, str | int]:
        """The fields as a JSON object (``--json``)."""
        return {
            "kind": self.kind,
            "source": self.source,
            "out": self.out,
            "size": self.size,
            "sha256": self.sha256,
        }


def _kind(directory: Path) -> Literal["set", "image"]:
    if (directory / SUMS).is_file():
        return "set"
    if (directory / IMAGE_JSON).is_file():
        return "image"
    raise InputError(
        problems=[
            Problem(
                file=str(directory), message=f"holds neither {SUMS} (a set) nor {IMAGE_JSON} (an image build)"
            )
        ]
    )


def _inside(path: Path, directory: Path) -> bool:
    return path.resolve().parent == directory.resolve()


def write_spdx3(directory: Path, out: Path) -> Spdx3Written:
    """Verify ``directory`` (a sealed set or an image build output), write its SPDX 3.0.1 JSON-LD to ``out``.

    Same directory bytes → same output bytes.

    Raises:
        InputError: ``directory`` is neither kind, a file is missing, ``out`` would be inside a
            set's directory, or the ``spdx3`` extra is not installed (exit 4).
        IntegrityError: the set or image does not verify (exit 5); nothing is written.
    """
    kind = _kind(directory)
    if kind == "set" and _inside(out, directory):
        raise InputError(
            problems=[Problem(file=str(out), message="inside the set; write it beside the 11 files")]
        )
    if importlib.util.find_spec(BINDINGS) is None:
        raise InputError(
            problems=[Problem(file=BINDINGS, message="not installed: pip install 'ninfer-release[spdx3]'")]
        )
    from ninfer_release.sbom._spdx3_image import spdx3_of_image  # they import the bindings
    from ninfer_release.sbom._spdx3_set import spdx3_of_set

    data = spdx3_of_set(directory) if kind == "set" else spdx3_of_image(directory)
    write_bytes(out, data)
    return Spdx3Written(
        kind=kind,
        source=str(directory),
        out=str(out),
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )
