"""The sample layout plan: every file of every lane tree, with its bytes' origin and digest (pure).

The plan is computed from the loaded :class:`~._spec.SamplesSpec` alone — no disk, no network —
so the exact contents of ``build-info.json`` and ``dependencies.lock.json`` (whose SHA-256 entries
are the pinned member digests) are known before anything is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ninfer_release.errors import InputError, Problem
from ninfer_release.hashing import sha256_bytes
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.samples._spec import (
    LANES_FILE,
    EngineFileSpec,
    LaneSpec,
    SamplesSpec,
    WheelMember,
    WheelPin,
)

BUILD_INFO = "build-info.json"
LOCK = "dependencies.lock.json"


@dataclass(frozen=True, kw_only=True)
class FromWheel:
    """Bytes taken from a pinned wheel's member (checked against the member pin on extraction)."""

    wheel: WheelPin
    member: WheelMember


@dataclass(frozen=True, kw_only=True)
class FromBytes:
    """Bytes known in full at plan time (generated JSON, committed stand-ins and licence texts)."""

    data: bytes


@dataclass(frozen=True, kw_only=True)
class PlannedFile:
    """One file of a lane tree: path relative to the lane root, origin, size in bytes, SHA-256."""

    path: str
    source: FromWheel | FromBytes
    size: int
    sha256: str


@dataclass(frozen=True, kw_only=True)
class LanePlan:
    """The files of one lane's staged tree (``DIR/<lane>/``), sorted by path."""

    lane: str
    cuda_arch: str
    files: tuple[PlannedFile, ...]

    @property
    def size(self) -> int:
        """Total bytes of the lane's files."""
        return sum(f.size for f in self.files)


@dataclass(frozen=True, kw_only=True)
class SamplesPlan:
    """What ``samples fetch`` will write: the wheels it needs and each lane's files."""

    full: bool
    wheels: tuple[WheelPin, ...]
    lanes: tuple[LanePlan, ...]


def _bytes_file(path: str, data: bytes) -> PlannedFile:
    return PlannedFile(path=path, source=FromBytes(data=data), size=len(data), sha256=sha256_bytes(data))


def _build_info(spec: SamplesSpec, lane: LaneSpec) -> bytes:
    # Exactly the fields of docs/staged-inputs.md "build-info.json".
    return dumps_stable(
        {
            "schema": 1,
            "source_commit": spec.source_commit,
            "cuda_version": spec.cuda_version,
            "cuda_arch": lane.cuda_arch,
            "compiler": spec.compiler,
            "engine_files": [_engine_file(spec, e) for e in lane.engine_files],
        }
    )


def _engine_file(spec: SamplesSpec, e: EngineFileSpec) -> dict[str, Any]:
    """A ``build-info.json`` engine file: a stand-in contains no vendored source and says how it
    was built (``built_by``: ``lanes.json`` ``stand_in_build``; issue 35 item 1)."""
    out: dict[str, Any] = {"path": e.path, "license": e.license, "stand_in": e.stand_in}
    if e.stand_in:
        script, commit = spec.stand_in_build
        out |= {"vendored": [], "built_by": {"script": script, "commit": commit}}
    return out


def _lock(spec: SamplesSpec, lane: LaneSpec, wheels: tuple[WheelPin, ...]) -> bytes:
    # Exactly the fields of docs/staged-inputs.md "dependencies.lock.json".
    redist: list[dict[str, Any]] = []
    for w in wheels:
        for m in w.members:
            if m.kind != "redistributable":
                continue
            redist.append(
                {
                    "file": m.dest,
                    "group": w.group,
                    "package": w.package,
                    "version": w.version,
                    "purl": w.purl,
                    "sha256": m.sha256,
                    "supplier": w.supplier,
                    "license": w.license,
                    "stand_in": False,
                }
            )
    for s in spec.stand_ins:
        redist.append(
            {
                "file": s.file,
                "group": s.group,
                "package": s.package,
                "version": s.version,
                "purl": s.purl,
                "sha256": sha256_bytes(s.source.data),
                "supplier": s.supplier,
                "license": s.license,
                "stand_in": True,
            }
        )
    vendored = [
        {
            "name": v.name,
            "version": v.version,
            "commit": v.commit,
            "license": v.license,
            "purl": v.purl,
            "source_url": v.source_url,
            "supplier": v.supplier,
        }
        for v in lane.vendored
    ]
    return dumps_stable(
        {
            "schema": 1,
            "vendored": sorted(vendored, key=lambda v: str(v["name"])),
            "redistributables": sorted(redist, key=lambda r: str(r["file"])),
        }
    )


def plan_samples(spec: SamplesSpec, *, full: bool) -> SamplesPlan:
    """Plan every lane tree of the samples (docs/staged-inputs.md, docs/samples.md).

    Each lane gets ``bin/`` (its engine stand-in, the pinned redistributable DLLs — cuBLAS only
    when ``full`` — and the DirectStorage stand-ins), ``licenses/``, ``build-info.json`` and its
    own ``dependencies.lock.json``. Pure: the result depends only on ``spec`` and ``full``.

    Raises:
        InputError: two sources name the same path in one lane (a ``samples/`` data bug).
    """
    wheels = tuple(w for w in spec.pins.wheels if full or not w.full_only)
    lanes = []
    problems: list[Problem] = []
    for lane in spec.lanes:
        planned: list[PlannedFile] = [_bytes_file(e.path, e.source.data) for e in lane.engine_files]
        planned += [
            PlannedFile(path=m.dest, source=FromWheel(wheel=w, member=m), size=m.size, sha256=m.sha256)
            for w in wheels
            for m in w.members
        ]
        planned += [_bytes_file(s.file, s.source.data) for s in spec.stand_ins]
        planned += [_bytes_file(dest, text.data) for dest, text in spec.licenses]
        planned += [_bytes_file(v.license_text.path, v.license_text.data) for v in lane.vendored]
        planned += [
            _bytes_file(BUILD_INFO, _build_info(spec, lane)),
            _bytes_file(LOCK, _lock(spec, lane, wheels)),
        ]
        files: dict[str, PlannedFile] = {}
        for pf in planned:
            if pf.path in files:
                problems.append(
                    Problem(
                        file=LANES_FILE, field=f"lanes.{lane.lane}", message=f"{pf.path!r} is planned twice"
                    )
                )
            files[pf.path] = pf
        lanes.append(
            LanePlan(lane=lane.lane, cuda_arch=lane.cuda_arch, files=tuple(files[p] for p in sorted(files)))
        )
    if problems:
        raise InputError(problems=problems)
    return SamplesPlan(full=full, wheels=wheels, lanes=tuple(lanes))
