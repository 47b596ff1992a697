"""What the SPDX 3 readers of a set and of an image output share (plain functions, no I/O)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ninfer_release.errors import IntegrityError, Problem
from ninfer_release.sbom._spdx3 import Spdx3Agent

NOASSERTION = "NOASSERTION"
#: The organisation that writes every SBOM of this project (``Organization: OMP NInfer`` in the
#: SPDX 2.3 creators, ``supplier``/``manufacturer`` in CycloneDX).
ORGANIZATION_NAME = "OMP NInfer"
#: Its home: the repository the releases are published from (the SPDX 2.3 download locations and
#: the provenance's builder id are under it; the image recipe's ``source`` names it).
PROJECT_URL = "https://github.com/alphastorm/omp-ninfer"
#: Curated: the URL of a supplier no input names one for (BSI "component creator": e-mail or
#: URL). Only organisations, never invented per component.
SUPPLIER_URLS: Mapping[str, str] = {"Debian": "https://www.debian.org"}

_TOOL = re.compile(r"^Tool: (\S+)$")
_PE = (".exe", ".dll")


def agent(name: str, homepage: str | None) -> Spdx3Agent:
    """The supplier (and originator) ``name`` with the URL BSI asks for: this project's for its own
    names (``OMP NInfer``, ``OMP NInfer sample …``), else the component's ``homepage``, else the
    curated :data:`SUPPLIER_URLS` entry, else none."""
    if name.startswith(ORGANIZATION_NAME):
        return Spdx3Agent(name=name, url=PROJECT_URL)
    return Spdx3Agent(name=name, url=homepage or SUPPLIER_URLS.get(name))


def file_purpose(path: str) -> tuple[str, tuple[str, ...]]:
    """SPDX 3 primary and additional ``software_SoftwarePurpose`` of a file, by its kind.

    BSI TR-03183-2 properties in the checker's SPDX 3 mapping: ``executable``, ``archive``, and
    ``container`` for "structured" (a format that describes its own contents: zip and tar
    archives, OCI manifests, PE/ELF images with their headers and import tables).
    """
    lower = path.lower()
    if lower.endswith(".exe"):
        return "executable", ("container",)
    if lower.endswith(_PE):
        return "library", ("executable", "container")
    if lower.endswith((".zip", ".tar", ".tar.gz", ".tgz")):
        return "archive", ("container",)
    if lower.endswith((".spdx.json", ".cdx.json")):
        return "bom", ()
    if lower.endswith((".toml", ".json", ".yaml")):
        return "configuration", ()
    if lower.endswith(".txt") or "/licenses/" in f"/{lower}":
        return "documentation", ()
    return "file", ()


def licence_of(component: Mapping[str, Any]) -> str:
    """The licence expression of a CycloneDX component (``NOASSERTION`` when it names none)."""
    for entry in component.get("licenses", []):
        if "expression" in entry:
            return str(entry["expression"])
        licence = entry.get("license", {})
        if licence.get("id"):
            return str(licence["id"])
    return NOASSERTION


def created_of(spdx: Mapping[str, Any]) -> datetime:
    """The SPDX 2.3 ``creationInfo.created`` (the source-date epoch) as an aware UTC datetime.

    Raises:
        IntegrityError: it is not ``YYYY-MM-DDTHH:MM:SSZ``.
    """
    text = str(spdx.get("creationInfo", {}).get("created", ""))
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise IntegrityError(
            problems=[
                Problem(file="spdx", field="creationInfo.created", message=f"{text!r} is not a UTC time")
            ]
        ) from None


def tool_of(spdx: Mapping[str, Any]) -> str:
    """``<name>-<version>`` of the tool the SPDX 2.3 document names (``Tool: ninfer-release-0.1.0``)."""
    for creator in spdx.get("creationInfo", {}).get("creators", []):
        match = _TOOL.match(str(creator))
        if match:
            return match.group(1)
    raise IntegrityError(
        problems=[Problem(file="spdx", field="creationInfo.creators", message="names no tool")]
    )
