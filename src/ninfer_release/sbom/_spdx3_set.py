"""The SPDX 3.0.1 document of a sealed native asset set, from the set's own documents (issue 14).

Source of truth: the set itself. The SPDX 2.3 inventory (files, their licences and copyright
texts, the package's copyright and download location, the creation time), the CycloneDX 1.6
inventory (components, suppliers, purls, CPEs, the dependency graph and its compositions) and the
provenance (the engine's source) are *translated*; nothing is re-derived from staged inputs, so
the SPDX 3 document says what the 11 files say and can be made for any set already published.

Verification first (nothing unchecked is described): every document read and the zip must match
``SHA256SUMS``; every zip member must match the SPDX 2.3 file list and the CycloneDX evidence
(:func:`cross_check_spdx`, :func:`cross_check_cyclonedx`), the CycloneDX root hash must be the
zip's, and the zip's copy of the SPDX document must be the set's. SHA-512 (BSI TR-03183-2) is
computed from the same bytes whose SHA-256 was checked. Any mismatch: :class:`IntegrityError`
(exit 5), naming the file.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import strictjson
from ninfer_release.checksums import parse_sha256sums
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.hashing import CHUNK
from ninfer_release.sbom._cyclonedx import cross_check_cyclonedx, cyclonedx_root_sha256
from ninfer_release.sbom._spdx import cross_check_spdx
from ninfer_release.sbom._spdx3 import (
    Completeness,
    Spdx3Facts,
    Spdx3File,
    Spdx3Package,
    Spdx3Source,
    spdx3_document,
)
from ninfer_release.sbom._spdx3_common import (
    NOASSERTION,
    ORGANIZATION_NAME,
    agent,
    created_of,
    file_purpose,
    licence_of,
    tool_of,
)
from ninfer_release.sbom._spdx3_write import SUMS

#: Size bound of one JSON document of a set read here (the SBOMs' own bound is far below).
_JSON_LIMIT = 64 << 20


#: Licence texts are kept (read in the hashing pass, so the copyright lines taken from them are of
#: the checked bytes); anything else is only streamed through the hashes.
_TEXTS = "licenses/"
_TEXT_LIMIT = 1 << 20


@dataclass(frozen=True, kw_only=True)
class _Member:
    sha1: str
    sha256: str
    sha512: str
    text: bytes | None = None


@dataclass(frozen=True, kw_only=True)
class _Set:
    """The verified parts of a set: its stem, parsed documents and zip member digests."""

    stem: str
    zip_sha256: str
    zip_sha512: str
    spdx: dict[str, Any]
    cdx: dict[str, Any]
    provenance: dict[str, Any]
    members: dict[str, _Member]


def _digests(chunks: Any) -> tuple[str, str, str]:
    h1, h256, h512 = hashlib.sha1(usedforsecurity=False), hashlib.sha256(), hashlib.sha512()
    for chunk in chunks:
        h1.update(chunk)
        h256.update(chunk)
        h512.update(chunk)
    return h1.hexdigest(), h256.hexdigest(), h512.hexdigest()


def _stream(handle: Any) -> Any:
    while chunk := handle.read(CHUNK):
        yield chunk


def _listed(set_dir: Path) -> dict[str, str]:
    data = strictjson.read_regular(set_dir / SUMS, limit=1 << 20, error=InputError)
    parsed = parse_sha256sums(data, source=str(set_dir / SUMS))
    if not parsed.ok:
        raise IntegrityError(
            problems=parsed.errors or [Problem(file=str(set_dir / SUMS), message="lists nothing")]
        )
    return parsed.as_dict()


def _stem(listed: Mapping[str, str], set_dir: Path) -> str:
    zips = [name for name in listed if name.endswith(".zip") and "/" not in name]
    if len(zips) != 1:
        raise InputError(
            problems=[Problem(file=str(set_dir / SUMS), message=f"lists {len(zips)} zips, not 1")]
        )
    return zips[0].removesuffix(".zip")


def _checked_json(set_dir: Path, name: str, listed: Mapping[str, str]) -> tuple[bytes, dict[str, Any]]:
    path = set_dir / name
    if name not in listed:
        raise IntegrityError(problems=[Problem(file=str(set_dir / SUMS), field=name, message="not listed")])
    data = strictjson.read_regular(path, limit=_JSON_LIMIT, error=InputError)
    if hashlib.sha256(data).hexdigest() != listed[name]:
        raise IntegrityError(problems=[Problem(file=str(path), message="SHA-256 differs from SHA256SUMS")])
    return data, strictjson.parse_object(data, source=str(path), error=IntegrityError)


def _members(zip_path: Path) -> dict[str, _Member]:
    out: dict[str, _Member] = {}
    try:
        with zipfile.ZipFile(zip_path) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                keep = info.filename.startswith(_TEXTS) and info.file_size <= _TEXT_LIMIT
                with zf.open(info) as handle:
                    text = handle.read() if keep else None
                    sha1, sha256, sha512 = _digests([text] if text is not None else _stream(handle))
                out[info.filename] = _Member(sha1=sha1, sha256=sha256, sha512=sha512, text=text)
    except (zipfile.BadZipFile, OSError) as exc:
        raise IntegrityError(
            problems=[Problem(file=str(zip_path), message=f"not a readable zip: {exc}")]
        ) from None
    return out


def _zip(set_dir: Path, stem: str, listed: Mapping[str, str]) -> tuple[str, str, dict[str, _Member]]:
    path = set_dir / f"{stem}.zip"
    try:
        with path.open("rb") as handle:
            _, sha256, sha512 = _digests(_stream(handle))
    except OSError as exc:
        raise InputError(
            problems=[Problem(file=str(path), message=f"cannot be read: {exc.strerror}")]
        ) from None
    if sha256 != listed[f"{stem}.zip"]:
        raise IntegrityError(problems=[Problem(file=str(path), message="SHA-256 differs from SHA256SUMS")])
    return sha256, sha512, _members(path)


def read_verified_set(set_dir: Path) -> _Set:
    """Verify ``set_dir`` as far as the SPDX 3 document relies on it and return its parts.

    Raises:
        InputError: ``SHA256SUMS`` or a file is missing or unreadable (exit 4).
        IntegrityError: a digest or cross-check fails (exit 5), naming the file.
    """
    listed = _listed(set_dir)
    stem = _stem(listed, set_dir)
    spdx_bytes, spdx = _checked_json(set_dir, f"{stem}.spdx.json", listed)
    cdx_bytes, cdx = _checked_json(set_dir, f"{stem}.cdx.json", listed)
    _, provenance = _checked_json(set_dir, f"{stem}.provenance.json", listed)
    zip_sha256, zip_sha512, members = _zip(set_dir, stem, listed)
    inner = f"sbom/{stem}.spdx.json"
    problems = cross_check_spdx(
        spdx_bytes, {p: (m.sha1, m.sha256) for p, m in members.items()}, spdx_file_path=inner
    )
    problems += cross_check_cyclonedx(
        cdx_bytes, {p: m.sha256 for p, m in members.items()}, where=f"{stem}.cdx.json"
    )
    if inner not in members or members[inner].sha256 != listed[f"{stem}.spdx.json"]:
        problems.append(Problem(file=f"{stem}.zip", field=inner, message="is not the set's SPDX document"))
    if cyclonedx_root_sha256(cdx_bytes) != zip_sha256:
        problems.append(
            Problem(file=f"{stem}.cdx.json", message="metadata.component SHA-256 is not the package's")
        )
    if problems:
        raise IntegrityError(problems=problems)
    return _Set(
        stem=stem,
        zip_sha256=zip_sha256,
        zip_sha512=zip_sha512,
        spdx=spdx,
        cdx=cdx,
        provenance=provenance,
        members=members,
    )


# --- translation ---------------------------------------------------------------------------------


def _spdx_files(spdx: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(f["fileName"]).removeprefix("./"): f for f in spdx.get("files", [])}


def _asserted(value: Any) -> str | None:
    return None if value in (None, "", NOASSERTION, "NONE") else str(value)


def _member_files(s: _Set, download: str | None) -> list[Spdx3File]:
    listed = _spdx_files(s.spdx)
    out = []
    for path, m in sorted(s.members.items()):
        entry = listed.get(path, {})
        purpose, additional = file_purpose(path)
        out.append(
            Spdx3File(
                path=path,
                sha256=m.sha256,
                sha512=m.sha512,
                purpose=purpose,
                additional=additional,
                license=_asserted(entry.get("licenseConcluded")),
                copyright=_asserted(entry.get("copyrightText")),
                download=download,
            )
        )
    return out


def _compositions(cdx: Mapping[str, Any]) -> dict[str, Completeness]:
    words: dict[str, Completeness] = {"complete": "complete", "incomplete": "incomplete"}
    out: dict[str, Completeness] = {}
    for composition in cdx.get("compositions", []):
        for ref in composition.get("dependencies", []):
            out[str(ref)] = words.get(str(composition.get("aggregate")), "noAssertion")
    return out


def _graph(cdx: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    return {
        str(d["ref"]): tuple(sorted(str(t) for t in d.get("dependsOn", [])))
        for d in cdx.get("dependencies", [])
    }


def _refs(component: Mapping[str, Any], kind: str) -> str | None:
    return next(
        (str(r["url"]) for r in component.get("externalReferences", []) if r.get("type") == kind), None
    )


def _occurrences(component: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(sorted(str(o["location"]) for o in component.get("evidence", {}).get("occurrences", [])))


def _properties(component: Mapping[str, Any]) -> dict[str, str]:
    return {str(p["name"]): str(p.get("value", "")) for p in component.get("properties", [])}


def _copyright_lines(texts: Sequence[str | None]) -> str | None:
    lines = sorted({line for text in texts if text for line in text.splitlines() if line.strip()})
    return "\n".join(lines) if lines else None


def _licence_text_copyright(s: _Set, name: str, licence: str) -> str | None:
    """Copyright lines of the licence text the package ships for vendored ``name``:
    ``licenses/<name>-<licence>.txt`` (the staged licences' naming, docs/staged-inputs.md)."""
    member = s.members.get(f"{_TEXTS}{name}-{licence}.txt")
    if member is None or member.text is None:
        return None
    text = member.text.decode("utf-8", errors="replace")
    lines = [line.strip() for line in text.splitlines() if line.strip().lower().startswith("copyright")]
    return "\n".join(lines) if lines else None


@dataclass(frozen=True, kw_only=True)
class _Context:
    s: _Set
    graph: Mapping[str, tuple[str, ...]]
    completeness: Mapping[str, Completeness]
    copyrights: Mapping[str, str | None]
    occurrences: Mapping[str, tuple[str, ...]]
    engine_source: Spdx3Source | None


def _engine_source(provenance: Mapping[str, Any]) -> Spdx3Source | None:
    deps = provenance.get("predicate", {}).get("buildDefinition", {}).get("resolvedDependencies", [])
    found = next((d for d in deps if d.get("name") == "engine-source" and d.get("uri")), None)
    return Spdx3Source(name="ninfer engine source", url=str(found["uri"])) if found else None


def _component(ctx: _Context, c: Mapping[str, Any]) -> Spdx3Package:
    ref = str(c["bom-ref"])
    kind = _properties(c).get("ninfer:kind", ref.split(":", 1)[0])
    artifacts = _occurrences(c)
    # a stand-in engine was not generated from the engine source (issue 35 item 1)
    stand_in = _properties(c).get("ninfer:stand-in") == "true"
    source = ctx.engine_source if kind == "engine" and not stand_in else None
    licence = licence_of(c)
    copyright_text = _copyright_lines([ctx.copyrights.get(a) for a in artifacts])
    if kind == "vendored":
        # compiled into the files of every component that depends on it: those are its artifacts
        users = [other for other, deps in ctx.graph.items() if ref in deps]
        artifacts = tuple(sorted({a for other in users for a in ctx.occurrences.get(other, ())}))
        url = _refs(c, "source-distribution")
        source = Spdx3Source(name=f"{c['name']} {c['version']} source", url=url) if url else None
        copyright_text = _licence_text_copyright(ctx.s, str(c["name"]), licence)
    homepage = _refs(c, "website")
    return Spdx3Package(
        key=ref,
        name=str(c["name"]),
        version=str(c["version"]),
        purpose="application" if kind == "engine" else "library",
        supplier=agent(str(c.get("supplier", {}).get("name", NOASSERTION)), homepage),
        license=licence,
        copyright=copyright_text,
        purl=c.get("purl"),
        cpe=c.get("cpe"),
        homepage=homepage,
        artifacts=artifacts,
        depends_on=ctx.graph.get(ref, ()),
        completeness=ctx.completeness.get(ref, "noAssertion"),
        source=source,
        comment=c.get("description"),
    )


def _root(s: _Set, ctx: _Context) -> Spdx3Package:
    c = s.cdx["metadata"]["component"]
    ref = str(c["bom-ref"])
    package: dict[str, Any] = next(iter(s.spdx.get("packages", [])), {})
    return Spdx3Package(
        key=ref,
        name=str(c["name"]),
        version=str(c["version"]),
        purpose="application",
        supplier=agent(str(c.get("supplier", {}).get("name", NOASSERTION)), None),
        license=licence_of(c),
        copyright=_asserted(package.get("copyrightText")),
        purl=c.get("purl"),
        artifacts=(f"{s.stem}.zip",),
        depends_on=ctx.graph.get(ref, ()),
        completeness=ctx.completeness.get(ref, "noAssertion"),
        comment="The package zip; it contains every file listed (each with SHA-256 and SHA-512).",
    )


def set_facts(set_dir: Path) -> Spdx3Facts:
    """The :class:`Spdx3Facts` of the sealed native set in ``set_dir`` (verified first).

    Raises:
        InputError / IntegrityError: as :func:`read_verified_set`.
    """
    s = read_verified_set(set_dir)
    package: dict[str, Any] = next(iter(s.spdx.get("packages", [])), {})
    download = _asserted(package.get("downloadLocation"))
    members = _member_files(s, download)
    components = list(s.cdx.get("components", []))
    ctx = _Context(
        s=s,
        graph=_graph(s.cdx),
        completeness=_compositions(s.cdx),
        copyrights={f.path: f.copyright for f in members},
        occurrences={str(c["bom-ref"]): _occurrences(c) for c in components},
        engine_source=_engine_source(s.provenance),
    )
    purpose, additional = file_purpose(f"{s.stem}.zip")
    zip_file = Spdx3File(
        path=f"{s.stem}.zip",
        sha256=s.zip_sha256,
        sha512=s.zip_sha512,
        purpose=purpose,
        additional=additional,
        download=download,
    )
    base = download.rsplit("/", 1)[0] if download else None
    return Spdx3Facts(
        name=s.stem,
        namespace=f"{s.spdx['documentNamespace']}/spdx3",
        created=created_of(s.spdx),
        tool=tool_of(s.spdx),
        creator=agent(ORGANIZATION_NAME, None),
        root=_root(s, ctx).key,
        packages=(_root(s, ctx), *(_component(ctx, c) for c in components)),
        files=(zip_file, *members),
        contents=tuple(m.path for m in members),
        build_meta=f"{base}/{s.stem}.provenance.json" if base else None,
        comment=_COMMENT,
    )


_COMMENT = (
    "SBOM type: build. The SPDX 3.0.1 form of this package's SPDX 2.3 and CycloneDX 1.6 documents "
    "(same facts), written beside the 11-file set by `ninfer-release sbom spdx3` after verifying it; "
    "SHA-512 computed from the verified bytes."
)


def spdx3_of_set(set_dir: Path) -> bytes:
    """SPDX 3.0.1 JSON-LD bytes for the sealed native set ``set_dir`` (see the module docstring)."""
    return spdx3_document(set_facts(set_dir))
