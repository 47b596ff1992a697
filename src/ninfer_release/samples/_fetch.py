"""Executing the sample plan: download/verify wheels, lay out lane trees, replace safely."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ninfer_release.atomic import staged_directory
from ninfer_release.errors import InputError, Problem
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.progress import SILENT, Progress
from ninfer_release.reproducible import DIR_MODE, FILE_MODE, sorted_walk
from ninfer_release.samples._plan import FromBytes, FromWheel, SamplesPlan, plan_samples
from ninfer_release.samples._spec import load_spec
from ninfer_release.samples._wheels import WheelUse, ensure_wheel, extract_member

#: Written at the top of every samples output; its presence (and a tree that still matches it)
#: is what allows a later ``samples fetch`` to replace the directory.
MARKER = ".ninfer-samples.json"
_GENERATOR = "ninfer-release samples fetch"


@dataclass(frozen=True, kw_only=True)
class StepContext:
    """What an extra layout step may use: the wheel cache, ``--full``, progress, environment."""

    cache: Path
    full: bool
    repo_root: Path
    env: Mapping[str, str] | None
    progress: Progress


#: An extra layout step writes more sample inputs into the staging directory (its only argument
#: besides the context), e.g. ``DIR/base-layout/`` or ``DIR/rtx5090/`` (containers stage, later).
LayoutStep = Callable[[Path, StepContext], None]


@dataclass(frozen=True, kw_only=True)
class LaneLayout:
    """One lane tree as written: lane id, CUDA arch, path, file count and total bytes."""

    lane: str
    cuda_arch: str
    path: Path
    files: int
    bytes: int


@dataclass(frozen=True, kw_only=True)
class SamplesResult:
    """The result of :func:`fetch_samples`: lanes, wheels used, totals (bytes) over the whole output."""

    out: Path
    full: bool
    replaced: bool
    lanes: tuple[LaneLayout, ...]
    wheels: tuple[WheelUse, ...]
    files: int
    bytes: int
    extra: tuple[str, ...] = field(default=())  # top-level entries written by extra layout steps

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready summary (paths as strings) for ``--json``."""
        return {
            "ok": True,
            "out": str(self.out),
            "full": self.full,
            "replaced": self.replaced,
            "files": self.files,
            "bytes": self.bytes,
            "lanes": [
                {
                    "lane": ln.lane,
                    "cuda_arch": ln.cuda_arch,
                    "path": str(ln.path),
                    "files": ln.files,
                    "bytes": ln.bytes,
                }
                for ln in self.lanes
            ],
            "wheels": [
                {
                    "package": w.package,
                    "version": w.version,
                    "filename": w.filename,
                    "sha256": w.sha256,
                    "size": w.size,
                    "downloaded": w.downloaded,
                }
                for w in self.wheels
            ],
            "extra": list(self.extra),
        }


def _tree_listing(root: Path) -> dict[str, int]:
    """Relative POSIX path -> size in bytes of every regular file under ``root`` (except the marker)."""
    listing: dict[str, int] = {}
    for p in sorted_walk(root):
        rel = p.relative_to(root).as_posix()
        if rel == MARKER:
            continue
        if p.is_symlink() or not (p.is_dir() or p.is_file()):
            listing[rel] = -1  # never ours: makes the listing differ from any marker
        elif p.is_file():
            listing[rel] = p.stat().st_size
    return listing


def _previous_output(out: Path) -> bool | None:
    """Classify ``--out``: absent (False), empty (None), a previous samples output (True), else refuse.

    Raises:
        InputError: ``out`` is a file, or a non-empty directory that is not an unmodified previous
            samples output (nothing is deleted).
    """
    if not out.exists() and not out.is_symlink():
        return False
    if out.is_symlink() or not out.is_dir():
        raise InputError(problems=[Problem(file=str(out), message="exists and is not a directory; refusing")])
    if not any(out.iterdir()):
        return None
    marker = out / MARKER
    if not marker.is_file():
        raise InputError(
            problems=[
                Problem(
                    file=str(out),
                    message=f"is not empty and is not a previous `samples fetch` output (no {MARKER}); "
                    "refusing to write into it — choose a new --out",
                )
            ]
        )
    try:
        recorded = json.loads(marker.read_bytes()).get("files")
    except (ValueError, AttributeError):
        recorded = None
    if not isinstance(recorded, dict):
        raise InputError(
            problems=[Problem(file=str(marker), field="files", message="unreadable; refusing to replace")]
        )
    actual = _tree_listing(out)
    diffs = sorted(p for p in set(recorded) | set(actual) if recorded.get(p) != actual.get(p))
    if diffs:
        shown = ", ".join(diffs[:5]) + (f" (+{len(diffs) - 5} more)" if len(diffs) > 5 else "")
        raise InputError(
            problems=[
                Problem(
                    file=str(out),
                    message=f"was written by `samples fetch` but has been changed since ({shown}); "
                    "refusing to replace it — move your files away or choose a new --out",
                )
            ]
        )
    return True


def _remove_leftover(path: Path) -> None:
    """Remove a staging leftover of an interrupted replace; refuse if it is not ours (no marker).

    Raises:
        InputError: ``path`` exists but does not carry the samples marker.
    """
    if not path.exists() and not path.is_symlink():
        return
    if path.is_symlink() or not (path / MARKER).is_file():
        raise InputError(
            problems=[
                Problem(file=str(path), message=f"exists and is not a samples output (no {MARKER}); refusing")
            ]
        )
    shutil.rmtree(path)


def _mkdirs(path: Path, root: Path) -> None:
    parts = path.relative_to(root).parts
    cur = root
    for part in parts:
        cur = cur / part
        if not cur.is_dir():
            cur.mkdir()
            cur.chmod(DIR_MODE)  # independent of the umask


def _write_bytes(dest: Path, data: bytes) -> None:
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    dest.chmod(FILE_MODE)


def _lay_out(
    plan: SamplesPlan, wheels: Mapping[str, WheelUse], stage: Path, progress: Progress
) -> tuple[LaneLayout, ...]:
    first_copy: dict[tuple[str, str], Path] = {}  # (wheel file, member) -> first extracted copy
    layouts = []
    for lane in plan.lanes:
        root = stage / lane.lane
        progress.step(f"laying out {lane.lane} ({lane.cuda_arch}): {len(lane.files)} files")
        for pf in lane.files:
            dest = root / pf.path
            _mkdirs(dest.parent, stage)
            if isinstance(pf.source, FromBytes):
                _write_bytes(dest, pf.source.data)
                continue
            src: FromWheel = pf.source
            key = (src.wheel.filename, src.member.member)
            earlier = first_copy.get(key)
            if earlier is None:
                extract_member(wheels[src.wheel.filename].path, src.member, dest)
                first_copy[key] = dest
            else:
                # The same pinned bytes in another lane: a hard link saves hundreds of MB with --full.
                try:
                    os.link(earlier, dest)
                except OSError:
                    shutil.copyfile(earlier, dest)
                    dest.chmod(FILE_MODE)
        layouts.append(
            LaneLayout(
                lane=lane.lane, cuda_arch=lane.cuda_arch, path=root, files=len(lane.files), bytes=lane.size
            )
        )
    return tuple(layouts)


def fetch_samples(
    out: Path,
    *,
    full: bool,
    cache: Path,
    repo_root: Path,
    progress: Progress = SILENT,
    env: Mapping[str, str] | None = None,
    extra_steps: Sequence[LayoutStep] = (),
) -> SamplesResult:
    """Lay out the sample staged trees ``out/rtx4090/`` and ``out/rtx3090/`` (docs/samples.md).

    Wheels come from ``cache`` (downloaded with pip when absent, pinned by version and SHA-256 in
    ``samples/pins.json``); cuBLAS only with ``full``. Each lane tree follows
    docs/staged-inputs.md. ``extra_steps`` run afterwards in the same staging directory (hook for
    ``base-layout/`` and ``rtx5090/``). The whole output appears atomically and is byte-identical
    on every run; an existing ``out`` is replaced only if it is an unmodified previous samples
    output. ``env`` is pip's environment (``None``: inherit). Sizes in bytes.

    Raises:
        InputError: ``out`` is not empty and not a previous samples output; a download failed;
            ``samples/`` data is missing or malformed (exit 4).
        IntegrityError: a wheel or wheel member does not match its pin (exit 5).
    """
    spec = load_spec(repo_root)
    plan = plan_samples(spec, full=full)
    state = _previous_output(out)
    replace = state is True
    uses = tuple(
        ensure_wheel(
            pin,
            cache=cache,
            platform=spec.pins.platform,
            python_version=spec.pins.python_version,
            env=env,
            progress=progress,
        )
        for pin in plan.wheels
    )
    by_file = {u.filename: u for u in uses}
    target = out.parent / f".{out.name}.samples-new" if replace else out
    if replace:
        _remove_leftover(target)
    elif state is None:
        out.rmdir()  # empty (checked above, after any download): staged_directory wants the name free
    with staged_directory(target) as stage:
        stage.chmod(DIR_MODE)
        layouts = _lay_out(plan, by_file, stage, progress)
        before = {p.name for p in stage.iterdir()}
        context = StepContext(cache=cache, full=full, repo_root=repo_root, env=env, progress=progress)
        for step in extra_steps:
            step(stage, context)
        extra = tuple(sorted({p.name for p in stage.iterdir()} - before))
        listing = _tree_listing(stage)
        _write_bytes(
            stage / MARKER,
            dumps_stable({"schema": 1, "generator": _GENERATOR, "full": full, "files": listing}),
        )
    if replace:
        old = out.parent / f".{out.name}.samples-old"
        _remove_leftover(old)
        out.rename(old)
        target.rename(out)
        shutil.rmtree(old)
    final = tuple(
        LaneLayout(lane=ln.lane, cuda_arch=ln.cuda_arch, path=out / ln.lane, files=ln.files, bytes=ln.bytes)
        for ln in layouts
    )
    return SamplesResult(
        out=out,
        full=full,
        replaced=replace,
        lanes=final,
        wheels=uses,
        files=len(listing) + 1,
        bytes=sum(listing.values()) + (out / MARKER).stat().st_size,
        extra=extra,
    )
