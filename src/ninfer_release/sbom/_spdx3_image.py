"""The SPDX 3.0.1 document of an image build's output directory, from its own documents (issue 14).

Source of truth: what ``image build`` wrote. The image SPDX 2.3 (packages image, base and the
software read from the base, with licences, copyright texts and suppliers; the files our layers
add), the image CycloneDX (where each piece of base software sits: layer and path; compositions)
and ``image.json`` (manifest, layers, the archive) are translated.

Verification first: the manifest blob, every layer blob named and ``image.tar`` must have the
SHA-256 ``image.json`` names (and the image package's checksum must be the manifest digest); every
file described is read from its layer blob and must have the SHA-256 the SBOMs name. SHA-512 is
computed from those same bytes. A mismatch: :class:`IntegrityError` (exit 5), naming the file.
"""

from __future__ import annotations

import gzip
import hashlib
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import strictjson
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.hashing import CHUNK
from ninfer_release.sbom._spdx3 import Completeness, Spdx3Facts, Spdx3File, Spdx3Package, spdx3_document
from ninfer_release.sbom._spdx3_common import (
    NOASSERTION,
    ORGANIZATION_NAME,
    agent,
    created_of,
    file_purpose,
    tool_of,
)
from ninfer_release.sbom._spdx3_write import IMAGE_JSON

_JSON_LIMIT = 64 << 20


@dataclass(frozen=True, kw_only=True)
class _Image:
    """The parsed documents of an image output directory."""

    root: Path
    record: dict[str, Any]
    spdx: dict[str, Any]
    cdx: dict[str, Any]


def _json(path: Path) -> dict[str, Any]:
    data = strictjson.read_regular(path, limit=_JSON_LIMIT, error=InputError)
    return strictjson.parse_object(data, source=str(path), error=IntegrityError)


def _hex(digest: str) -> str:
    return digest.removeprefix("sha256:")


def _file_digests(path: Path, expected: str) -> tuple[str, str]:
    """SHA-256 and SHA-512 of ``path``, which must have SHA-256 ``expected``."""
    h256, h512 = hashlib.sha256(), hashlib.sha512()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(CHUNK):
                h256.update(chunk)
                h512.update(chunk)
    except OSError as exc:
        raise InputError(
            problems=[Problem(file=str(path), message=f"cannot be read: {exc.strerror}")]
        ) from None
    if h256.hexdigest() != _hex(expected):
        raise IntegrityError(problems=[Problem(file=str(path), message=f"SHA-256 is not {expected}")])
    return h256.hexdigest(), h512.hexdigest()


def _blob(image: _Image, digest: str) -> Path:
    return image.root / "layout" / "blobs" / "sha256" / _hex(digest)


def _layer_member(image: _Image, layer_digest: str, path: str, expected: str) -> tuple[str, str]:
    """SHA-256 and SHA-512 of ``path`` inside the (gzip) layer blob ``layer_digest``; its SHA-256
    must be ``expected``."""
    blob = _blob(image, layer_digest)
    try:
        with gzip.open(blob, "rb") as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
            for info in tar:
                if info.isfile() and info.name.removeprefix("./") == path:
                    data = tar.extractfile(info)
                    body = data.read() if data else b""
                    break
            else:
                raise IntegrityError(
                    problems=[Problem(file=str(blob), field=path, message="not in the layer")]
                )
    except (OSError, tarfile.TarError) as exc:
        raise IntegrityError(
            problems=[Problem(file=str(blob), message=f"not a readable layer: {exc}")]
        ) from None
    if hashlib.sha256(body).hexdigest() != expected:
        raise IntegrityError(
            problems=[Problem(file=str(blob), field=path, message="SHA-256 differs from the SBOM")]
        )
    return expected, hashlib.sha512(body).hexdigest()


def _checksum(entry: Mapping[str, Any], algorithm: str = "SHA256") -> str:
    return next(
        (str(c["checksumValue"]) for c in entry.get("checksums", []) if c.get("algorithm") == algorithm), ""
    )


def _purl(package: Mapping[str, Any]) -> str | None:
    return next(
        (
            str(r["referenceLocator"])
            for r in package.get("externalRefs", [])
            if r.get("referenceType") == "purl"
        ),
        None,
    )


def _asserted(value: Any) -> str | None:
    return None if value in (None, "", NOASSERTION, "NONE") else str(value)


def _layer_files(image: _Image) -> dict[str, str]:
    """Image path → digest of the layer that adds it (``image.json`` layers)."""
    return {
        str(f["path"]): str(layer["digest"])
        for layer in image.record["layers"]
        for f in layer.get("files", [])
    }


def _added_files(image: _Image) -> list[Spdx3File]:
    """The files our layers add (the SPDX 2.3 file list), each read back from its layer."""
    where = _layer_files(image)
    out = []
    for entry in image.spdx.get("files", []):
        path = str(entry["fileName"]).removeprefix("./")
        if path not in where:
            raise IntegrityError(
                problems=[Problem(file="sbom.spdx.json", field=path, message="in no layer of image.json")]
            )
        sha256, sha512 = _layer_member(image, where[path], path, _checksum(entry))
        purpose, additional = file_purpose(path)
        if "APPLICATION" in entry.get("fileTypes", []):  # the SPDX 2.3 file type: an executable
            purpose, additional = "executable", ("container",)
        out.append(
            Spdx3File(
                path=path,
                sha256=sha256,
                sha512=sha512,
                purpose=purpose,
                additional=additional,
                license=_asserted(entry.get("licenseConcluded")),
                copyright=_asserted(entry.get("copyrightText")),
            )
        )
    return out


def _base_layer_files(image: _Image) -> list[Spdx3File]:
    out = []
    for layer in image.record["layers"]:
        if layer.get("from_base"):
            sha256, sha512 = _file_digests(_blob(image, str(layer["digest"])), str(layer["digest"]))
            out.append(
                Spdx3File(
                    path=f"blobs/sha256/{sha256}",
                    sha256=sha256,
                    sha512=sha512,
                    purpose="archive",
                    additional=("container",),
                )
            )
    return out


def _cdx_by_purl(cdx: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """purl → CycloneDX component, ``metadata.component`` (the image) included."""
    every = [cdx.get("metadata", {}).get("component", {}), *cdx.get("components", [])]
    return {str(c["purl"]): c for c in every if "purl" in c}


def _properties(component: Mapping[str, Any]) -> dict[str, str]:
    return {str(p["name"]): str(p.get("value", "")) for p in component.get("properties", [])}


def _found_file(image: _Image, package: Mapping[str, Any]) -> Spdx3File | None:
    """The file a piece of base software was read from (CycloneDX evidence + its layer), read back."""
    component = _cdx_by_purl(image.cdx).get(_purl(package) or "")
    if component is None or _properties(component).get("ninfer:kind") != "base-package":
        return None
    occurrence = component["evidence"]["occurrences"][0]
    path = str(occurrence["location"])
    expected = str(occurrence.get("additionalContext", "")).removeprefix("sha256:")
    if expected != _checksum(package):
        raise IntegrityError(
            problems=[
                Problem(file="sbom.cdx.json", field=path, message="SHA-256 differs from sbom.spdx.json")
            ]
        )
    sha256, sha512 = _layer_member(image, _properties(component)["ninfer:layer-digest"], path, expected)
    purpose, additional = file_purpose(path)
    if purpose == "file":  # an executable without a Windows suffix (ELF): what the SBOMs say it is
        purpose, additional = "executable", ("container",)
    return Spdx3File(path=path, sha256=sha256, sha512=sha512, purpose=purpose, additional=additional)


def _compositions(cdx: Mapping[str, Any]) -> dict[str, Completeness]:
    words: dict[str, Completeness] = {"complete": "complete", "incomplete": "incomplete"}
    out: dict[str, Completeness] = {}
    for composition in cdx.get("compositions", []):
        for ref in composition.get("assemblies", []):
            out[str(ref)] = words.get(str(composition.get("aggregate")), "noAssertion")
    return out


def _contains(spdx: Mapping[str, Any], packages: set[str]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for r in spdx.get("relationships", []):
        if r.get("relationshipType") == "CONTAINS" and r.get("relatedSpdxElement") in packages:
            out.setdefault(str(r["spdxElementId"]), []).append(str(r["relatedSpdxElement"]))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def _supplier(package: Mapping[str, Any]) -> str:
    return str(package.get("supplier", NOASSERTION)).removeprefix("Organization: ").removeprefix("Person: ")


def _described(spdx: Mapping[str, Any]) -> str:
    return next(
        str(r["relatedSpdxElement"])
        for r in spdx.get("relationships", [])
        if r.get("relationshipType") == "DESCRIBES"
    )


def _verify_manifest(image: _Image, package: Mapping[str, Any]) -> None:
    digest = str(image.record["manifest"]["digest"])
    _file_digests(_blob(image, digest), digest)
    if _checksum(package) != _hex(digest):
        raise IntegrityError(
            problems=[
                Problem(
                    file="sbom.spdx.json",
                    field=str(package["SPDXID"]),
                    message=f"checksum is not the manifest {digest}",
                )
            ]
        )


def _archive(image: _Image) -> Spdx3File:
    archive = image.record["outputs"]["archive"]
    sha256, sha512 = _file_digests(image.root / str(archive["path"]), str(archive["sha256"]))
    purpose, additional = file_purpose(str(archive["path"]))  # an OCI image archive: archive + container
    return Spdx3File(
        path=str(archive["path"]), sha256=sha256, sha512=sha512, purpose=purpose, additional=additional
    )


@dataclass(frozen=True, kw_only=True)
class _Parts:
    files: list[Spdx3File]
    artifacts: dict[str, tuple[str, ...]]  # SPDXID → distribution artifact paths


def _parts(image: _Image, root_id: str) -> _Parts:
    packages = {str(p["SPDXID"]): p for p in image.spdx.get("packages", [])}
    _verify_manifest(image, packages[root_id])
    archive, base_layers = _archive(image), _base_layer_files(image)
    files = [archive, *base_layers, *_added_files(image)]
    artifacts: dict[str, tuple[str, ...]] = {root_id: (archive.path,)}
    by_purl = _cdx_by_purl(image.cdx)
    for spdx_id, package in packages.items():
        kind = _properties(by_purl.get(_purl(package) or "", {})).get("ninfer:kind")
        if kind == "base-image":
            artifacts[spdx_id] = tuple(f.path for f in base_layers)
        found = _found_file(image, package) if kind == "base-package" else None
        if found is not None:
            files.append(found)
            artifacts[spdx_id] = (found.path,)
    return _Parts(files=files, artifacts=artifacts)


def _package(
    image: _Image, package: Mapping[str, Any], parts: _Parts, contains: Mapping[str, tuple[str, ...]]
) -> Spdx3Package:
    spdx_id = str(package["SPDXID"])
    component = _cdx_by_purl(image.cdx).get(_purl(package) or "", {})
    return Spdx3Package(
        key=spdx_id,
        name=str(package["name"]),
        version=str(package.get("versionInfo", NOASSERTION)),
        purpose=str(package.get("primaryPackagePurpose", "OTHER")).lower(),
        supplier=agent(_supplier(package), None),
        license=str(package.get("licenseConcluded", NOASSERTION)),
        copyright=_asserted(package.get("copyrightText")),
        purl=_purl(package),
        artifacts=parts.artifacts.get(spdx_id, ()),
        contains=contains.get(spdx_id, ()),
        completeness=_compositions(image.cdx).get(str(component.get("bom-ref", "")), "noAssertion"),
        comment=package.get("comment"),
    )


def image_facts(image_dir: Path) -> Spdx3Facts:
    """The :class:`Spdx3Facts` of the image build output in ``image_dir`` (verified first).

    Raises:
        InputError: a file is missing or unreadable (exit 4).
        IntegrityError: a digest or cross-check fails (exit 5), naming the file.
    """
    image = _Image(
        root=image_dir,
        record=_json(image_dir / IMAGE_JSON),
        spdx=_json(image_dir / "sbom.spdx.json"),
        cdx=_json(image_dir / "sbom.cdx.json"),
    )
    root_id = _described(image.spdx)
    parts = _parts(image, root_id)
    packages = image.spdx.get("packages", [])
    contains = _contains(image.spdx, {str(p["SPDXID"]) for p in packages})
    added = tuple(f.path for f in parts.files if f.path in _layer_files(image))
    return Spdx3Facts(
        name=str(image.spdx["name"]),
        namespace=f"{image.spdx['documentNamespace']}/spdx3",
        created=created_of(image.spdx),
        tool=tool_of(image.spdx),
        creator=agent(ORGANIZATION_NAME, None),
        root=root_id,
        packages=tuple(_package(image, p, parts, contains) for p in packages),
        files=tuple(parts.files),
        contents=added,
        contents_complete=False,
        comment=_COMMENT,
    )


_COMMENT = (
    "SBOM type: build. The SPDX 3.0.1 form of this image's SPDX 2.3 and CycloneDX 1.6 documents "
    "(same facts), written by `ninfer-release sbom spdx3` after reading every described file back "
    "from the layout; the files listed are those the image's own layers add (the base image's are "
    "not inventoried; the software read from it is)."
)


def spdx3_of_image(image_dir: Path) -> bytes:
    """SPDX 3.0.1 JSON-LD bytes for the image build output ``image_dir`` (see the module docstring)."""
    return spdx3_document(image_facts(image_dir))
