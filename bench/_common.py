"""Shared helpers of the benchmarks: timed child processes, machine facts, sample trees.

Times are wall seconds of one child process (``time.perf_counter`` around ``os.wait4``), CPU
its user/sys seconds from the same ``wait4``. Peak RSS (KiB) is the command's own largest resident
set, file-backed pages included, as GNU ``time``'s ``%M`` reports it: :func:`run` starts the
command under ``/usr/bin/time -f %M -o FILE`` (about 1 ms more wall per run) because a child
started straight from this process inherits its high-water mark (Linux records the old memory's
peak into ``ru_maxrss`` at ``exec``, and ``fork``/``vfork`` start from this process's memory), so
every small command would read as large as the benchmark process itself (81 MiB in the run of
2026-12-02 00:40). Without GNU ``time`` (Debian package ``time``) it falls back to ``wait4``'s
``ru_maxrss`` and says so in the run's ``rss_source``. :func:`io_run` (byte counters) measures the
command's own process and keeps ``wait4``'s figure. Nothing here is used by tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# Children run as installed code does: with bytecode caches (some shells here export
# PYTHONDONTWRITEBYTECODE=1, which makes every child recompile the project and its libraries).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# Every build a bench starts is cold unless the bench says otherwise: the persistent deflate cache
# (packaging/_cache.py) would make a repeated run measure a warm cache. bench_cache.py passes its
# own NINFER_DEFLATE_CACHE directories explicitly.
os.environ["NINFER_DEFLATE_CACHE"] = "off"
CLI = Path(sys.executable).parent / "ninfer-release"
RELEASE = REPO / "manifests" / "v0.13.1.yaml"
LANE = "rtx4090"
MIB = 1 << 20
#: GNU time: its child is forked from a small process, so ``%M`` is the command's own peak.
GNU_TIME = Path("/usr/bin/time")
GIB = 1 << 30


@dataclass(frozen=True, kw_only=True)
class Run:
    """One timed child: wall/user/sys seconds, peak RSS in KiB, exit code."""

    label: str
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kib: int
    returncode: int
    rss_source: str = "wait4"  # "time": GNU time's %M of the command itself (see the module docstring)

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        for k in ("wall_s", "user_s", "sys_s"):
            d[k] = round(d[k], 3)
        return d


class BenchError(RuntimeError):
    """A benchmark step failed (a child exited non-zero, or an invariant did not hold)."""


def run(
    label: str,
    cmd: Sequence[str | Path],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    own_rss: bool = True,
) -> Run:
    """Run ``cmd`` with stdout/stderr to a temp file; return its timings and peak RSS.

    ``own_rss``: measure the command's own peak RSS under GNU time (module docstring); ``False``
    runs it directly (start-up pairs, where the wrapper's millisecond would be part of the ratio).
    """
    wrapped = own_rss and GNU_TIME.is_file()
    with tempfile.TemporaryFile() as log, tempfile.NamedTemporaryFile(prefix="rss-") as rss:
        argv = [str(c) for c in cmd]
        if wrapped:
            argv = [str(GNU_TIME), "-f", "%M", "-o", rss.name, *argv]
        start = time.perf_counter()
        environ = dict(env) if env is not None else None
        proc = subprocess.Popen(argv, cwd=cwd, env=environ, stdout=log, stderr=log)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        peak = _own_peak(Path(rss.name)) if wrapped else None
        result = Run(
            label=label,
            wall_s=wall,
            user_s=usage.ru_utime,
            sys_s=usage.ru_stime,
            max_rss_kib=peak if peak is not None else usage.ru_maxrss,
            returncode=proc.returncode,
            rss_source="time" if peak is not None else "wait4",
        )
        if check and proc.returncode != 0:
            log.seek(0)
            tail = log.read()[-4000:].decode("utf-8", "replace")
            raise BenchError(f"{label}: exit {proc.returncode}: {' '.join(map(str, cmd))}\n{tail}")
    return result


def _own_peak(path: Path) -> int | None:
    """GNU time's ``%M`` (KiB) from its ``-o`` file: the last line (a signal adds a line before it)."""
    try:
        lines = path.read_text().split()
        return int(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


def sha256_of(path: Path) -> str:
    """SHA-256 (hex) of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(MIB):
            h.update(block)
    return h.hexdigest()


def tree_bytes(root: Path, subdirs: Sequence[str] = ("bin", "licenses")) -> int:
    """Total size in bytes of the regular files under ``root/<subdir>`` (what the zip ships)."""
    return sum(p.stat().st_size for d in subdirs for p in (root / d).rglob("*") if p.is_file())


def best(runs: Sequence[Run]) -> float:
    """Fastest wall time: the least disturbed repetition on a shared machine."""
    return min(r.wall_s for r in runs)


def median(runs: Sequence[Run]) -> float:
    """Median wall time."""
    return statistics.median(r.wall_s for r in runs)


def paired(ours: Sequence[Run], theirs: Sequence[Run]) -> float:
    """Median of the per-repetition ratios ours/theirs (each pair ran back to back)."""
    return statistics.median(a.wall_s / b.wall_s for a, b in zip(ours, theirs, strict=True))


def stats(values: Sequence[float]) -> dict[str, float]:
    """``{"min", "median", "max"}`` of ``values``, rounded to 3 decimals."""
    return {
        "min": round(min(values), 3),
        "median": round(statistics.median(values), 3),
        "max": round(max(values), 3),
    }


def pairs(ours: Sequence[Run], theirs: Sequence[Run]) -> dict[str, Any]:
    """Interleaved pairs (``ours[i]`` ran right before ``theirs[i]``): wall, CPU and ratio statistics.

    ``ratio`` is over the per-pair ratios ours/theirs (the verdicts use its median); CPU is
    user+sys seconds; every run is kept under ``runs`` as ``[ours, theirs]``.
    """
    return {
        "ours_s": stats([r.wall_s for r in ours]),
        "theirs_s": stats([r.wall_s for r in theirs]),
        "ratio": stats([a.wall_s / b.wall_s for a, b in zip(ours, theirs, strict=True)]),
        "ours_cpu_s": stats([r.user_s + r.sys_s for r in ours]),
        "theirs_cpu_s": stats([r.user_s + r.sys_s for r in theirs]),
        "ours_max_rss_mib": round(max(r.max_rss_kib for r in ours) / 1024, 1),
        "runs": [[a.as_dict(), b.as_dict()] for a, b in zip(ours, theirs, strict=True)],
    }


def load_average() -> list[float]:
    """The 1/5/15-minute load averages, rounded to 2 decimals."""
    return [round(x, 2) for x in os.getloadavg()]


@contextlib.contextmanager
def busy_core() -> Iterator[int]:
    """A competing CPU-bound process pinned to the last core (``taskset``) while the block runs.

    Yields its PID; it is killed by that PID afterwards. The benchmarked commands are not pinned:
    they keep both cores and share one of them with the burner, as under another user's job.
    """
    core = str((os.cpu_count() or 1) - 1)
    proc = subprocess.Popen(["taskset", "-c", core, sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it start spinning before the first timed command
        if proc.poll() is not None:
            raise BenchError(f"the busy-core process exited at once ({proc.returncode})")
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def io_run(label: str, cmd: Sequence[str | Path], **kw: Any) -> tuple[Run, dict[str, int]]:
    """``run`` plus the child's ``/proc/<pid>/io`` byte counters ``read_bytes``/``written_bytes``.

    They are ``rchar``/``wchar``: every read and write of the process (page cache hits, Python's
    own module files and the log included), polled every 50 ms until it exits.
    """
    io: dict[str, int] = {}
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        proc = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=log, **kw)
        while True:
            try:
                text = Path(f"/proc/{proc.pid}/io").read_text()
                io = {k: int(v) for k, v in (line.split(": ") for line in text.splitlines())}
            except (OSError, ValueError):
                pass
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.05)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            log.seek(0)
            raise BenchError(f"{label}: exit {code}\n{log.read()[-3000:].decode('utf-8', 'replace')}")
    result = Run(
        label=label, wall_s=wall, user_s=usage.ru_utime, sys_s=usage.ru_stime,
        max_rss_kib=usage.ru_maxrss, returncode=code,
    )  # fmt: skip
    return result, {"read_bytes": io.get("rchar", 0), "written_bytes": io.get("wchar", 0)}


def _first_line(cmd: Sequence[str]) -> str:
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    except OSError:
        return "not found"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else "?"


def _zip_version() -> str:
    if shutil.which("zip") is None:
        return "zip not found"
    out = subprocess.run(["zip", "-v"], capture_output=True, text=True, check=False).stdout
    lines = [line.strip().rstrip(".") for line in out.splitlines() if line.startswith("This is Zip")]
    return lines[0] if lines else "zip ?"


def machine_facts() -> dict[str, object]:
    """What the numbers were measured on: CPU, cores, load, tool and library versions, date."""
    import ssl
    import zlib

    from ninfer_release.packaging import DEFLATE_ENGINE

    cpu = "?"
    flags: set[str] = set()
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name") and cpu == "?":
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    return {
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "cpu_flags": sorted(flags & {"sha_ni", "avx2", "avx512f", "pclmulqdq", "vpclmulqdq"}),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "kernel": platform.release(),
        "python": platform.python_version(),
        "openssl": ssl.OPENSSL_VERSION,
        "python_zlib": zlib.ZLIB_RUNTIME_VERSION,
        "deflate_engine": DEFLATE_ENGINE,
        "zip": _zip_version(),
        "sha256sum": _first_line(["sha256sum", "--version"]),
        "docker": _first_line(["docker", "--version"]) if shutil.which("docker") else "not found",
    }


def small_samples(work: Path) -> Path:
    """``samples fetch`` (the small sample: real cudart/MSVC DLLs, stand-ins) into ``work/samples-small``."""
    out = work / "samples-small"
    if not (out / LANE / "build-info.json").is_file():
        if out.exists():
            shutil.rmtree(out)
        run("samples fetch", [CLI, "samples", "fetch", "--out", out])
    return out


def fetch_samples(work: Path) -> Path:
    """``ninfer-release samples fetch --full`` into ``work/samples`` (cached wheels; idempotent)."""
    out = work / "samples"
    marker = out / LANE / "bin" / "cublasLt64_13.dll"
    if not marker.is_file():
        if out.exists():
            shutil.rmtree(out)
        run("samples fetch --full", [CLI, "samples", "fetch", "--out", out, "--full"])
    return out


def _link_tree(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` with hard links (the staged bytes are never written through)."""
    shutil.copytree(src, dst, copy_function=os.link)


def add_engine_file(lane_dir: Path, rel: str, write: object, *, stand_in: bool = False) -> None:
    """Add ``rel`` (under ``bin/``) to ``build-info.json`` ``engine_files`` and create it with ``write``.

    ``stand_in`` marks the entry as a stand-in (needed when its PE version resource says so).
    """
    info_path = lane_dir / "build-info.json"
    info = json.loads(info_path.read_bytes())
    entry: dict[str, object] = {"path": rel, "license": "Apache-2.0"}
    if stand_in:
        entry["stand_in"] = True
    info["engine_files"].append(entry)
    info_path.unlink()  # a hard link to the sample's file: replace, never write through
    info_path.write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    assert callable(write)
    write(lane_dir / rel)


def big_tree(samples: Path, work: Path, *, min_bytes: int) -> Path:
    """The sample lane plus one engine file of real cuBLAS bytes, so the tree is ≥ ``min_bytes``.

    ``bin/ninfer-kernels-sm89.fatbin`` repeats ``cublasLt64_13.dll`` then ``cublas64_13.dll``
    (GPU code, as compressible as the real thing) up to the missing size. Cached in ``work``.
    """
    dst = work / f"tree-{min_bytes // MIB}mib-{samples.name}"
    lane = dst / LANE
    if lane.is_dir() and tree_bytes(lane) >= min_bytes:
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    _link_tree(samples / LANE, lane)
    need = min_bytes - tree_bytes(lane)
    sources = [samples / LANE / "bin" / "cublasLt64_13.dll", samples / LANE / "bin" / "cublas64_13.dll"]

    def write(path: Path) -> None:
        left = need
        with path.open("wb") as out:
            while left > 0:
                for src in sources:
                    with src.open("rb") as f:
                        while left > 0 and (block := f.read(min(16 * MIB, left))):
                            out.write(block)
                            left -= len(block)

    add_engine_file(lane, "bin/ninfer-kernels-sm89.fatbin", write)
    return dst


def many_files_tree(samples: Path, work: Path, *, count: int, size: int = 4096) -> Path:
    """The sample lane plus ``count`` extra ``size``-byte files ``licenses/extra/fNNNNNN.txt``.

    Each file's bytes are its index's SHA-256 (hex) repeated: distinct, compressible. They are
    shipped under ``licenses/`` (which needs no listing), so they are hashed, inventoried in the
    SPDX document, deflated and verified like every member; they are not engine files, because
    ``build-info.json`` is bounded to 1 MiB (strict reader), which 100k engine-file entries exceed.
    Cached in ``work``.
    """
    dst = work / f"tree-files-{count}-{samples.name}"
    lane = dst / LANE
    extra = lane / "licenses" / "extra"
    if extra.is_dir() and sum(1 for _ in extra.iterdir()) == count:
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    _link_tree(samples / LANE, lane)
    extra.mkdir(parents=True)
    for i in range(count):
        digest = hashlib.sha256(str(i).encode()).hexdigest().encode()
        (extra / f"f{i:06d}.txt").write_bytes((digest * (size // len(digest) + 1))[:size])
    return dst


def incompressible_tree(samples: Path, work: Path, *, size: int, seed: int = 13) -> Path:
    """The sample lane plus ``bin/ninfer-weights.bin``: ``size`` bytes of seeded pseudo-random data.

    The bytes are ``random.Random(seed).randbytes`` in 16 MiB blocks: incompressible, the same on
    every run (deflate cannot shrink them, so a good build stores the member). Generated once and
    kept in ``work`` (about 4 s per GiB).
    """
    dst = work / f"tree-random-{size}-s{seed}-{samples.name}"
    lane = dst / LANE
    member = lane / "bin" / "ninfer-weights.bin"
    if member.is_file() and member.stat().st_size == size:
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    _link_tree(samples / LANE, lane)

    def write(path: Path) -> None:
        rng = random.Random(seed)  # noqa: S311 - benchmark filler, not security
        left = size
        with path.open("wb") as out:
            while left > 0:
                n = min(16 * MIB, left)
                out.write(rng.randbytes(n))
                left -= n

    add_engine_file(lane, "bin/ninfer-weights.bin", write)
    return dst


def huge_file_tree(samples: Path, work: Path, *, size: int) -> Path:
    """The sample lane plus ``bin/ninfer-big.dll``: a real PE image with a ``size``-byte overlay.

    The file starts with the sample engine's own PE bytes (so SBOM PE parsing runs on it) and is
    extended to ``size`` bytes as a sparse file (zeros; no disk blocks).
    """
    dst = work / f"tree-big-{size // MIB}mib-{samples.name}"
    lane = dst / LANE
    big = lane / "bin" / "ninfer-big.dll"
    if big.is_file() and big.stat().st_size == size:
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    _link_tree(samples / LANE, lane)

    def write(path: Path) -> None:
        shutil.copyfile(samples / LANE / "bin" / "ninfer-server.exe", path)
        os.truncate(path, size)

    info = json.loads((samples / LANE / "build-info.json").read_bytes())
    server = next(e for e in info["engine_files"] if e["path"] == "bin/ninfer-server.exe")
    add_engine_file(lane, "bin/ninfer-big.dll", write, stand_in=bool(server.get("stand_in")))
    return dst


def build_lane(label: str, inputs: Path, out: Path, *, workers: int = 2) -> Run:
    """``ninfer-release build lane rtx4090`` (the product command, verify included) into ``out``."""
    if out.exists():
        shutil.rmtree(out)
    return run(
        label,
        [CLI, "build", "lane", LANE, "--release", RELEASE, "--inputs", inputs, "--out", out,
         "--workers", str(workers)],
    )  # fmt: skip


def build_io(
    label: str, tree: Path, out: Path, env: Mapping[str, str] | None = None
) -> tuple[Run, dict[str, int]]:
    """``build lane rtx4090 --offline`` of ``tree`` into a fresh ``out``, with its byte counters (``io_run``).

    ``env`` replaces the environment (the deflate cache is ``off`` unless it says otherwise).
    """
    if out.exists():
        shutil.rmtree(out)
    cmd: list[str | Path] = [
        CLI, "build", "lane", LANE, "--release", RELEASE, "--inputs", tree, "--out", out, "--offline",
    ]  # fmt: skip
    return io_run(label, cmd, env=dict(env) if env is not None else None)


def info_zip(label: str, tree: Path, work: Path) -> Run:
    """Info-ZIP ``zip -X -r -6 -q`` of the lane's ``bin`` and ``licenses`` (what we ship), in ``work``."""
    target = work / "info-zip.zip"
    target.unlink(missing_ok=True)
    result = run(label, ["zip", "-X", "-r", "-6", "-q", target, "bin", "licenses"], cwd=tree / LANE)
    target.unlink()
    return result


def set_dir(out: Path) -> Path:
    """The 11-file set directory ``build lane`` wrote under ``out``."""
    return out / LANE


def the_zip(out: Path) -> Path:
    """The package zip of the set under ``out``."""
    (z,) = set_dir(out).glob("*.zip")
    return z
