"""Loading the sample definition from the repository's ``samples/`` data folder.

``samples/pins.json`` pins each wheel (version, file name, size, SHA-256) and each member taken
from it; ``samples/lanes.json`` says what each lane's staged tree holds; ``samples/standins/`` and
``samples/licenses/`` hold the committed stand-in binaries and licence texts. Everything is read
once, checked, and turned into frozen values; the plan is built from those values only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release import strictjson
from ninfer_release.digests import SHA256_HEX
from ninfer_release.errors import InputError, Problem
from ninfer_release.jsonfields import FieldReader

PINS_FILE = "samples/pins.json"
LANES_FILE = "samples/lanes.json"

_HEX40 = re.compile(r"[0-9a-f]{40}")
_REL = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
_GROUPS = ("cuda", "crt", "directstorage", "other")


@dataclass(frozen=True, kw_only=True)
class WheelMember:
    """One file taken from a wheel: its zip member name, where it goes in a lane tree, its pin.

    ``kind`` is ``redistributable`` (a ``bin/`` file listed in the lock) or ``license`` (a text
    under ``licenses/``). ``size`` is in bytes.
    """

    member: str
    dest: str
    kind: str
    sha256: str
    size: int


@dataclass(frozen=True, kw_only=True)
class WheelPin:
    """A ``win_amd64`` wheel pinned by version and SHA-256, with the members used from it.

    ``full_only`` wheels (cuBLAS, a few hundred MB) are fetched only with ``--full``. ``group``,
    ``supplier`` and ``license`` go into the lock's redistributable entries (docs/staged-inputs.md).
    """

    package: str
    version: str
    filename: str
    sha256: str
    size: int
    full_only: bool
    group: str
    supplier: str
    license: str
    members: tuple[WheelMember, ...]

    @property
    def purl(self) -> str:
        """Package URL of the wheel's project release, e.g. ``pkg:pypi/nvidia-cuda-runtime@13.3.29``."""
        return f"pkg:pypi/{self.package}@{self.version}"

    @property
    def requirement(self) -> str:
        """The pip requirement string ``NAME==VERSION``."""
        return f"{self.package}=={self.version}"


@dataclass(frozen=True, kw_only=True)
class Pins:
    """``samples/pins.json``: the pip target (platform, Python version) and the pinned wheels."""

    platform: str
    python_version: str
    wheels: tuple[WheelPin, ...]


@dataclass(frozen=True, kw_only=True)
class RepoFile:
    """A committed file of ``samples/`` (stand-in binary or licence text), read into memory."""

    path: str  # relative to samples/
    data: bytes


@dataclass(frozen=True, kw_only=True)
class EngineFileSpec:
    """An engine file of a lane (``build-info.json`` ``engine_files``) and the stand-in it copies."""

    path: str
    license: str
    source: RepoFile
    stand_in: bool


@dataclass(frozen=True, kw_only=True)
class VendoredSpec:
    """A vendored source as written to the lock, plus the licence text shipped with it."""

    name: str
    version: str
    commit: str
    license: str
    purl: str
    source_url: str
    supplier: str
    license_text: RepoFile


@dataclass(frozen=True, kw_only=True)
class StandInSpec:
    """A stand-in redistributable (the DirectStorage DLLs): lock metadata and committed bytes."""

    file: str
    group: str
    package: str
    version: str
    purl: str
    supplier: str
    license: str
    source: RepoFile


@dataclass(frozen=True, kw_only=True)
class LaneSpec:
    """One native lane's staged tree: id, CUDA arch, engine files and vendored sources."""

    lane: str
    cuda_arch: str
    engine_files: tuple[EngineFileSpec, ...]
    vendored: tuple[VendoredSpec, ...]


@dataclass(frozen=True, kw_only=True)
class SamplesSpec:
    """Everything the sample trees are made of, loaded and checked (``samples/`` data folder)."""

    pins: Pins
    source_commit: str
    cuda_version: str
    compiler: str
    #: How the committed stand-ins were built: ``lanes.json`` ``stand_in_build`` (script under
    #: ``samples/``' repository, commit of this repository that holds the script and the bytes).
    stand_in_build: tuple[str, str]
    lanes: tuple[LaneSpec, ...]
    stand_ins: tuple[StandInSpec, ...]
    licenses: tuple[tuple[str, RepoFile], ...]  # (dest under the lane tree, committed text)


class _Reader(FieldReader):
    """:class:`FieldReader` plus the redistributable ``group`` rule of the sample lock."""

    def group(self, obj: Mapping[str, Any], where: str) -> str:
        value = self.text(obj, "group", where)
        if value and value not in _GROUPS:
            self.bad(f"{where}.group", f"{value!r} is not one of {list(_GROUPS)}")
        return value


def _load_json(root: Path, rel: str, problems: list[Problem]) -> Mapping[str, Any]:
    try:
        data = json.loads((root / rel).read_bytes().decode("utf-8"))
    except FileNotFoundError:
        problems.append(
            Problem(file=rel, message=f"missing (looked in {root}); is this an ninfer-release checkout?")
        )
        return {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(Problem(file=rel, message=f"not valid UTF-8 JSON: {exc}"))
        return {}
    if not isinstance(data, dict):
        problems.append(Problem(file=rel, message="top level must be a JSON object"))
        return {}
    if not strictjson.json_equal(data.get("schema"), 1):
        problems.append(
            Problem(file=rel, field="schema", message=f"unsupported schema {data.get('schema')!r}")
        )
    return data


def _repo_file(root: Path, doc: _Reader, field: str, rel: str) -> RepoFile:
    if not _REL.fullmatch(rel):
        doc.bad(field, f"{rel!r} is not a plain relative path inside samples/")
        return RepoFile(path=rel, data=b"")
    try:
        return RepoFile(path=rel, data=(root / "samples" / rel).read_bytes())
    except OSError as exc:
        doc.bad(field, f"samples/{rel} cannot be read: {exc.strerror or exc}")
        return RepoFile(path=rel, data=b"")


def _parse_pins(data: Mapping[str, Any], doc: _Reader) -> Pins:
    pip = data.get("pip")
    if not isinstance(pip, dict):
        doc.bad("pip", "missing or not an object")
        pip = {}
    wheels = []
    for w, item in doc.objects(data, "wheels"):
        members = []
        for m, mem in doc.objects(item, "members", w):
            kind = doc.text(mem, "kind", m)
            if kind and kind not in ("redistributable", "license"):
                doc.bad(f"{m}.kind", f"{kind!r} is not 'redistributable' or 'license'")
            members.append(
                WheelMember(
                    member=doc.text(mem, "member", m),
                    dest=doc.text(mem, "dest", m, _REL),
                    kind=kind,
                    sha256=doc.text(mem, "sha256", m, SHA256_HEX),
                    size=doc.integer(mem, "size", m),
                )
            )
        wheels.append(
            WheelPin(
                package=doc.text(item, "package", w),
                version=doc.text(item, "version", w),
                filename=doc.text(item, "filename", w, re.compile(r"[A-Za-z0-9_.+-]+\.whl")),
                sha256=doc.text(item, "sha256", w, SHA256_HEX),
                size=doc.integer(item, "size", w),
                full_only=doc.flag(item, "full_only", w),
                group=doc.group(item, w),
                supplier=doc.text(item, "supplier", w),
                license=doc.text(item, "license", w),
                members=tuple(members),
            )
        )
    return Pins(
        platform=doc.text(pip, "platform", "pip"),
        python_version=doc.text(pip, "python_version", "pip"),
        wheels=tuple(wheels),
    )


def _vendored(root: Path, doc: _Reader, data: Mapping[str, Any]) -> dict[str, VendoredSpec]:
    """``vendored[]`` of ``lanes.json`` by name, each with its committed licence text."""
    vendored: dict[str, VendoredSpec] = {}
    for w, item in doc.objects(data, "vendored"):
        v = VendoredSpec(
            name=doc.text(item, "name", w),
            version=doc.text(item, "version", w),
            commit=doc.text(item, "commit", w, _HEX40),
            license=doc.text(item, "license", w),
            purl=doc.text(item, "purl", w),
            source_url=doc.text(item, "source_url", w),
            supplier=doc.text(item, "supplier", w),
            license_text=_repo_file(root, doc, f"{w}.license_text", doc.text(item, "license_text", w)),
        )
        vendored[v.name] = v
    return vendored


def _chosen_vendored(
    doc: _Reader, where: str, names: Any, vendored: Mapping[str, VendoredSpec]
) -> tuple[VendoredSpec, ...]:
    """A lane's ``vendored`` list of names, each defined in ``vendored[]``; sorted by name."""
    chosen = []
    if not isinstance(names, list):
        doc.bad(f"{where}.vendored", "missing or not a list of names")
    else:
        for name in names:
            if not isinstance(name, str):
                doc.bad(f"{where}.vendored", f"{name!r} is not a name (a string)")
            elif name in vendored:
                chosen.append(vendored[name])
            else:
                doc.bad(f"{where}.vendored", f"{name!r} is not defined in vendored[]")
    return tuple(sorted(chosen, key=lambda v: v.name))


def _lanes(
    root: Path, doc: _Reader, data: Mapping[str, Any], vendored: Mapping[str, VendoredSpec]
) -> tuple[LaneSpec, ...]:
    """``lanes[]``: each lane's id, CUDA arch, engine files (with their stand-ins) and vendored sources."""
    lanes = []
    for w, item in doc.objects(data, "lanes"):
        engine = tuple(
            EngineFileSpec(
                path=doc.text(e, "path", f, _REL),
                license=doc.text(e, "license", f),
                source=_repo_file(root, doc, f"{f}.from", doc.text(e, "from", f)),
                stand_in="stand_in" in e and doc.flag(e, "stand_in", f),
            )
            for f, e in doc.objects(item, "engine_files", w)
        )
        chosen = _chosen_vendored(doc, w, item.get("vendored"), vendored)
        lanes.append(
            LaneSpec(
                lane=doc.text(item, "lane", w),
                cuda_arch=doc.text(item, "cuda_arch", w, re.compile(r"sm_[0-9]+[a-z]?")),
                engine_files=engine,
                vendored=chosen,
            )
        )
    return tuple(lanes)


def _stand_ins(root: Path, doc: _Reader, data: Mapping[str, Any]) -> tuple[StandInSpec, ...]:
    """``stand_ins[]``: each stand-in redistributable's lock metadata and committed bytes."""
    return tuple(
        StandInSpec(
            file=doc.text(item, "file", w, _REL),
            group=doc.group(item, w),
            package=doc.text(item, "package", w),
            version=doc.text(item, "version", w),
            purl=doc.text(item, "purl", w),
            supplier=doc.text(item, "supplier", w),
            license=doc.text(item, "license", w),
            source=_repo_file(root, doc, f"{w}.from", doc.text(item, "from", w)),
        )
        for w, item in doc.objects(data, "stand_ins")
    )


def _licenses(root: Path, doc: _Reader, data: Mapping[str, Any]) -> tuple[tuple[str, RepoFile], ...]:
    """``licenses``: (dest under the lane tree, committed text), sorted by dest."""
    raw = data.get("licenses")
    licenses: list[tuple[str, RepoFile]] = []
    if not isinstance(raw, dict):
        doc.bad("licenses", "missing or not an object of dest -> samples/ path")
        return ()
    for dest, src in sorted(raw.items()):
        if not isinstance(src, str) or not _REL.fullmatch(dest):
            doc.bad(f"licenses.{dest}", "must map a relative dest path to a samples/ path")
            continue
        licenses.append((dest, _repo_file(root, doc, f"licenses.{dest}", src)))
    return tuple(licenses)


def _stand_in_build(doc: _Reader, data: Mapping[str, Any]) -> tuple[str, str]:
    """``stand_in_build``: ``{"script": "samples/build-standins.sh", "commit": "<40 hex>"}``."""
    found = data.get("stand_in_build")
    if not isinstance(found, Mapping):
        doc.bad("stand_in_build", "missing or not an object {script, commit}")
        return ("", "")
    return (doc.text(found, "script", "stand_in_build"), doc.text(found, "commit", "stand_in_build", _HEX40))


def load_spec(repo_root: Path) -> SamplesSpec:
    """Load and check ``samples/pins.json``, ``samples/lanes.json`` and the files they name.

    ``repo_root`` is the ninfer-release checkout (the directory holding ``samples/``).

    Raises:
        InputError: a data file is missing or malformed, or names a file that cannot be read;
            every problem is reported at once, each naming file and field.
    """
    problems: list[Problem] = []
    pins_doc = _Reader(PINS_FILE, problems)
    pins = _parse_pins(_load_json(repo_root, PINS_FILE, problems), pins_doc)

    doc = _Reader(LANES_FILE, problems)
    data = _load_json(repo_root, LANES_FILE, problems)
    lanes = _lanes(repo_root, doc, data, _vendored(repo_root, doc, data))
    stand_ins = _stand_ins(repo_root, doc, data)
    licenses = _licenses(repo_root, doc, data)
    spec = SamplesSpec(
        pins=pins,
        source_commit=doc.text(data, "source_commit", "", _HEX40),
        cuda_version=doc.text(data, "cuda_version", ""),
        compiler=doc.text(data, "compiler", ""),
        stand_in_build=_stand_in_build(doc, data),
        lanes=lanes,
        stand_ins=stand_ins,
        licenses=licenses,
    )
    if problems:
        raise InputError(problems=problems)
    return spec
