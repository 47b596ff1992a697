"""What a base image carries, found by reading its layers (for the image SBOM; issue 14).

The base is opaque to the build (its files are not ours), but an image SBOM must still list the
software it ships. :func:`read_base_packages` streams each base layer once (gzip or plain tar,
every member size-bounded) and reports:

* **BusyBox** — any regular file named ``busybox``: its version from the banner the binary embeds
  (``BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1)``), licence GPL-2.0-only (BusyBox's licence:
  "BusyBox is licensed under the GNU General Public License, version 2"), supplier the distributor
  the banner names (``Debian``), else the BusyBox project.
* **dpkg packages** — ``var/lib/dpkg/status`` entries whose ``Status`` is ``install ok installed``:
  name, version, maintainer as supplier, and the licence named by a machine-readable (DEP-5)
  ``usr/share/doc/<package>/copyright`` when the layer has one (``License:`` fields, ANDed).
  A BusyBox binary that a dpkg package's file list (``var/lib/dpkg/info/<package>.list``) names is
  that package: one entry with the package's identity (``busybox-static`` ``1:1.35.0-4+deb12u1+b1``,
  purl ``pkg:deb/debian/…``) and the binary's own facts (file, digest, licence, notice).
* **the distribution** — ``etc/os-release`` (else ``usr/lib/os-release``) ``ID`` and ``VERSION_ID``
  give dpkg packages the purl ``distro`` qualifier ``<ID>-<VERSION_ID>`` (``debian-12``).

A path that a later layer deletes (whiteout ``.wh.<name>``) or replaces is reported as the last
layer leaves it. Nothing is executed; nothing is extracted to disk.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import re
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from ninfer_release.errors import InputError, Problem

from ._layout import MT_LAYER_TAR, blob_path

#: Largest member read into memory while scanning (a static BusyBox is ~2 MiB; dpkg status a few MiB).
MAX_SCANNED_MEMBER = 64 << 20
_BUSYBOX_BANNER = re.compile(rb"BusyBox v(\d+(?:\.\d+){1,3})(?:[^()\x00]*\(([^()\x00]{1,120})\))?")
_BUSYBOX_COPYRIGHT = re.compile(rb"BusyBox is copyrighted by [^\x00\n]{1,200}")
_DPKG_STATUS = "var/lib/dpkg/status"
_DPKG_LIST = re.compile(r"^var/lib/dpkg/info/([^/]+)\.list$")
_OS_RELEASE = ("etc/os-release", "usr/lib/os-release")
#: os-release ``ID`` (lowercase, os-release(5)) and ``VERSION_ID`` joined: ``debian-12``.
_DISTRO = re.compile(r"[a-z0-9._-]+-[a-z0-9._~-]+")
_DOC_COPYRIGHT = re.compile(r"^usr/share/doc/([^/]+)/copyright$")
_DEP5_FORMAT = "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0"


@dataclass(frozen=True, kw_only=True)
class BasePackage:
    """Software found in a base layer: name, version, supplier, licence and where it was found.

    ``version`` is the upstream version (``1.35.0``); ``build`` the distributor's full version when
    known (``1:1.35.0-4+deb12u1+b1``); ``license`` an SPDX expression or ``None`` (not stated);
    ``path``/``sha256`` the file it was read from (``bin/busybox`` / dpkg ``status``);
    ``layer_digest`` the layer that leaves it in the image; ``purl_type`` / ``purl_namespace`` /
    ``arch`` what its package URL is made of (the sbom stage spells it canonically).
    """

    name: str
    version: str
    build: str
    supplier: str
    license: str | None
    path: str
    sha256: str
    layer_digest: str
    purl_type: str
    purl_namespace: str | None = None
    arch: str | None = None
    copyright: str | None = None
    #: purl ``distro`` qualifier (``debian-12``) from the layers' os-release, for dpkg packages.
    distro: str | None = None


@dataclass(frozen=True, kw_only=True)
class _Seen:
    data: bytes
    layer_digest: str


def _norm(name: str) -> str:
    return name.removeprefix("./").lstrip("/")


def _layer_members(fileobj: IO[bytes], where: str) -> Iterator[tuple[tarfile.TarInfo, tarfile.TarFile]]:
    try:
        with tarfile.open(fileobj=fileobj, mode="r|") as tar:
            for info in tar:
                yield info, tar
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError(problems=[Problem(file=where, message=f"not a readable layer tar: {exc}")]) from None


def _wanted(path: str) -> bool:
    return (
        _basename(path) == "busybox"
        or path == _DPKG_STATUS
        or path in _OS_RELEASE
        or bool(_DOC_COPYRIGHT.match(path) or _DPKG_LIST.match(path))
    )


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _scan_layer(layout: Path, digest: str, media_type: str, seen: dict[str, _Seen]) -> None:
    """Fold one layer into ``seen`` (path → last bytes), honouring whiteouts (OCI image spec)."""
    where = f"base layer {digest}"
    path = blob_path(layout, digest)
    with path.open("rb") as raw:
        plain = media_type == MT_LAYER_TAR
        stream = cast("IO[bytes]", raw if plain else gzip.GzipFile(fileobj=raw, mode="rb"))
        for info, tar in _layer_members(stream, where):
            name = _norm(info.name)
            base = _basename(name)
            if base == ".wh..wh..opq":
                prefix = name[: -len(base)]
                for key in [k for k in seen if k.startswith(prefix)]:
                    del seen[key]
                continue
            if base.startswith(".wh."):
                gone = name[: -len(base)] + base.removeprefix(".wh.")
                for key in [k for k in seen if k == gone or k.startswith(gone + "/")]:
                    del seen[key]
                continue
            if not _wanted(name):
                continue
            if info.islnk():
                target = seen.get(_norm(info.linkname))
                if target is not None:
                    seen[name] = _Seen(data=target.data, layer_digest=digest)
                continue
            if not info.isreg():
                seen.pop(name, None)
                continue
            if info.size > MAX_SCANNED_MEMBER:
                message = f"{name} is {info.size} bytes, more than {MAX_SCANNED_MEMBER} scanned"
                raise InputError(problems=[Problem(file=where, field=name, message=message)])
            member = tar.extractfile(info)
            data = member.read() if member is not None else b""
            seen[name] = _Seen(data=data, layer_digest=digest)


def read_base_packages(layout: Path, layers: Sequence[tuple[str, str]]) -> tuple[BasePackage, ...]:
    """The software the base layers leave in the image, sorted by name then path.

    ``layout`` is the OCI image layout holding the blobs; ``layers`` the base layers in order as
    ``(digest, media type)``. See the module docstring for what is recognised.

    Raises:
        InputError: a layer blob is missing or not a tar, or a scanned member is over
            :data:`MAX_SCANNED_MEMBER` bytes.
    """
    seen: dict[str, _Seen] = {}
    for digest, media_type in layers:
        try:
            _scan_layer(layout, digest, media_type, seen)
        except FileNotFoundError:
            raise InputError(
                problems=[Problem(file=str(layout), field=digest, message="layer blob missing")]
            ) from None
    status = seen.get(_DPKG_STATUS)
    dpkg = {p.name: p for p in _dpkg_packages(status, seen, _distro(seen))} if status is not None else {}
    owners = _owners(seen)
    found: list[BasePackage] = []
    for path, item in sorted(seen.items()):
        if _basename(path) == "busybox":
            package = _busybox(path, item)
            owner = dpkg.pop(owners.get(path, ""), None)
            if package is not None:
                found.append(_owned(package, owner) if owner is not None else package)
    found += dpkg.values()
    return tuple(sorted(found, key=lambda p: (p.name, p.path)))


def _owners(seen: Mapping[str, _Seen]) -> dict[str, str]:
    """Image path → the dpkg package whose file list (``var/lib/dpkg/info/<p>.list``) names it."""
    owners: dict[str, str] = {}
    for path, item in sorted(seen.items()):
        match = _DPKG_LIST.match(path)
        if match is None:
            continue
        package = match.group(1).split(":", 1)[0]  # multi-arch lists are <package>:<arch>.list
        for line in item.data.decode("utf-8", errors="replace").splitlines():
            if line.strip("/"):
                owners.setdefault(line.strip().lstrip("/"), package)
    return owners


def _owned(found: BasePackage, owner: BasePackage) -> BasePackage:
    """The binary ``found`` as the dpkg package ``owner`` that installed it: the package's name,
    version and purl; the binary's file, digest, layer, licence, notice and the distributor its
    banner names (``Debian``), which is who supplied it."""
    return dataclasses.replace(
        owner,
        supplier=found.supplier,
        path=found.path,
        sha256=found.sha256,
        layer_digest=found.layer_digest,
        license=owner.license or found.license,
        copyright=owner.copyright or found.copyright,
    )


def _distro(seen: Mapping[str, _Seen]) -> str | None:
    """``<ID>-<VERSION_ID>`` of the layers' os-release (``debian-12``), ``None`` without both."""
    item = next((seen[p] for p in _OS_RELEASE if p in seen), None)
    if item is None:
        return None
    fields: dict[str, str] = {}
    for line in item.data.decode("utf-8", errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip('"').strip("'")
    distro = f"{fields.get('ID', '')}-{fields.get('VERSION_ID', '')}"
    return distro if _DISTRO.fullmatch(distro) else None


def _busybox(path: str, item: _Seen) -> BasePackage | None:
    match = _BUSYBOX_BANNER.search(item.data)
    if match is None:
        return None
    version = match.group(1).decode("ascii")
    note = (match.group(2) or b"").decode("utf-8", errors="replace").strip()
    distributor, _, build = note.partition(" ")
    supplier = distributor if distributor and build else "BusyBox project (busybox.net)"
    notice = _BUSYBOX_COPYRIGHT.search(item.data)
    return BasePackage(
        name="busybox",
        version=version,
        build=build or version,
        supplier=supplier,
        license="GPL-2.0-only",
        path=path,
        sha256=hashlib.sha256(item.data).hexdigest(),
        layer_digest=item.layer_digest,
        purl_type="generic",
        copyright=notice.group(0).decode("utf-8", errors="replace").strip() if notice else None,
    )


def _stanzas(text: str) -> Iterator[Mapping[str, str]]:
    """RFC 822-style stanzas (dpkg status, DEP-5): field → value, continuation lines joined."""
    for block in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = ""
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += "\n" + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                key = key.strip()
                fields[key] = value.strip()
        if fields:
            yield fields


def _dep5_copyright(text: str) -> str | None:
    """The ``Copyright:`` lines of a machine-readable copyright file, de-duplicated, sorted."""
    lines = {
        line.strip() for s in _stanzas(text) for line in s.get("Copyright", "").splitlines() if line.strip()
    }
    return "\n".join(sorted(lines)) if lines else None


def _dep5_license(text: str) -> str | None:
    """The licences a machine-readable copyright file names (first line of each ``License:``)."""
    stanzas = list(_stanzas(text))
    if not stanzas or not stanzas[0].get("Format", "").rstrip("/").startswith(_DEP5_FORMAT.rstrip("/")):
        return None
    names = sorted({s["License"].splitlines()[0].strip() for s in stanzas if s.get("License")})
    return " AND ".join(n if " " not in n else f"({n})" for n in names) if names else None


def _dpkg_packages(status: _Seen, seen: Mapping[str, _Seen], distro: str | None) -> list[BasePackage]:
    text = status.data.decode("utf-8", errors="replace")
    out: list[BasePackage] = []
    digest = hashlib.sha256(status.data).hexdigest()
    for stanza in _stanzas(text):
        name, version = stanza.get("Package"), stanza.get("Version")
        if not name or not version or stanza.get("Status") != "install ok installed":
            continue
        copyright_file = seen.get(f"usr/share/doc/{name}/copyright")
        licence = notice = None
        if copyright_file is not None:
            text = copyright_file.data.decode("utf-8", errors="replace")
            licence = _dep5_license(text)
            notice = _dep5_copyright(text) if licence is not None else None
        arch = stanza.get("Architecture", "")
        out.append(
            BasePackage(
                name=name,
                version=version,
                build=version,
                supplier=stanza.get("Maintainer", "") or "Debian",
                license=licence,
                path=_DPKG_STATUS,
                sha256=digest,
                layer_digest=status.layer_digest,
                purl_type="deb",
                purl_namespace="debian",
                arch=arch or None,
                copyright=notice,
                distro=distro,
            )
        )
    return out
