"""Benchmark (issue 13): the floors under the goals still missed, beside the same standard tools.

Each row pairs a *floor* — the least a Python process doing the goal's job must spend, with
nothing of ours in it — with the tool the goal is measured against, as interleaved pairs in one
run. A floor ratio above the goal's target means no tuning of our code meets that goal on this
machine; it takes another design (another language for the per-file loop, another deflate level
or engine, fewer checks), which the brief rules out or which would change the output bytes.

* ``startup`` — ``python -c pass`` (the interpreter that runs ``ninfer-release``) beside
  ``sha256sum -c --quiet SHA256SUMS`` in the small sample set (goal: verify ≤ 1.0×);
* ``files`` — one child that imports what a build must load (spdx-tools' model, cyclonedx-python-lib,
  Click) and runs the minimal per-file loop (open, read, SHA-256, SHA-1, CRC-32, raw deflate at
  level 6 with zlib-ng, one write per file; no SBOM entry, no zip record, no self-check, no verify)
  over ``bin``/``licenses`` of the sample lane plus ``--count`` 4 KiB files, beside
  ``zip -X -r -6`` of the same tree (goal: build ≤ 1.0×);
* ``deflate`` — one child that deflates every shipped byte of the ``--full`` lane in the package
  format's 4 MiB pieces (level 6, memLevel 8, the previous piece's last 32 KiB as dictionary,
  zlib-ng) on two threads, beside ``zip -X -r -6`` (goal: build ≤ 0.35×); and the same child with
  the digests a set claims and the inflate proof the self-check relies on (SHA-256 and SHA-1 of the
  bytes, CRC-32, SHA-256 of the stream, one sequential inflate), on the same two threads.

Usage: ``.venv/bin/python bench/bench_floors.py [--work DIR] [--runs 5] [--count 10000]
[--parts startup,files,deflate] [--json]``; results also go to ``WORK/floors.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    LANE,
    MIB,
    build_lane,
    fetch_samples,
    info_zip,
    load_average,
    many_files_tree,
    pairs,
    run,
    set_dir,
    small_samples,
    tree_bytes,
)

TARGETS = {"startup": 1.0, "files": 1.0, "deflate": 0.35, "deflate+checks": 0.35}
_CHUNK = 4 << 20
_WINDOW = 32 << 10


def _shipped(lane: Path) -> list[Path]:
    """The files ``zip -r bin licenses`` takes, in path order."""
    return sorted(p for d in ("bin", "licenses") for p in (lane / d).rglob("*") if p.is_file())


def _child_files(lane: Path, out: Path) -> None:
    """The minimal per-file build loop (module docstring, ``files``), after the imports."""
    import hashlib
    import os
    import struct
    import zlib as crc

    import click  # noqa: F401
    import cyclonedx.model.bom  # noqa: F401
    import spdx_tools.spdx.model.document  # noqa: F401
    from zlib_ng import zlib_ng as zl

    with out.open("wb") as sink:
        for path in _shipped(lane):
            fd = os.open(path, os.O_RDONLY)
            data = os.read(fd, os.fstat(fd).st_size + 1)
            os.close(fd)
            hashlib.sha256(data).digest()
            hashlib.sha1(data, usedforsecurity=False).digest()
            c = zl.compressobj(6, zl.DEFLATED, -15, 8)
            blob = c.compress(data) + c.flush()
            sink.write(struct.pack("<III", crc.crc32(data), len(blob), len(data)) + blob)


def _digests(data: bytes) -> tuple[bytes, bytes, int]:
    """What the set claims of a member's bytes: SHA-256, SHA-1 (SPDX), CRC-32 (the zip)."""
    import hashlib
    import zlib as crc

    return hashlib.sha256(data).digest(), hashlib.sha1(data, usedforsecurity=False).digest(), crc.crc32(data)


def _proves(inflater: Any, blob: bytes, piece: bytes) -> bool:
    """The self-check's proof of one piece: the sequential inflate gives back exactly the piece."""
    return bool(inflater.decompress(blob, len(piece) + 1) == piece)


def _child_deflate(lane: Path, checks: bool) -> None:
    """Every shipped byte deflated in the format's pieces on two threads (``checks``: with the
    digests and the sequential inflate proof, each on a helper as the build does)."""
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    from zlib_ng import zlib_ng as zl

    def deflate(piece: bytes, zdict: bytes, final: bool) -> bytes:
        c = zl.compressobj(6, zl.DEFLATED, -15, 8, zl.Z_DEFAULT_STRATEGY, *([zdict] if zdict else []))
        return c.compress(piece) + c.flush(zl.Z_FINISH if final else zl.Z_SYNC_FLUSH)

    with ThreadPoolExecutor(2) as pool, ThreadPoolExecutor(1) as digests, ThreadPoolExecutor(1) as proof:
        for path in _shipped(lane):
            data = path.read_bytes()
            starts = range(0, max(len(data), 1), _CHUNK)
            pieces = [data[s : s + _CHUNK] for s in starts]
            streams = [
                pool.submit(deflate, p, data[max(0, s - _WINDOW) : s], s + _CHUNK >= len(data))
                for s, p in zip(starts, pieces, strict=True)
            ]
            if not checks:
                for f in streams:
                    f.result()
                continue
            sums = digests.submit(_digests, data)
            inflater, stream_sha = zl.decompressobj(-15), hashlib.sha256()
            proofs = []
            for piece, f in zip(pieces, streams, strict=True):
                blob = f.result()
                proofs.append(proof.submit(_proves, inflater, blob, piece))  # in order, one thread
                stream_sha.update(blob)
            sums.result()
            if not all(p.result() for p in proofs):
                raise SystemExit(f"{path}: the pieces did not inflate back")


def _child(argv: list[str]) -> None:
    mode, lane = argv[0], Path(argv[1])
    if mode == "files":
        _child_files(lane, Path(argv[2]))
    else:
        _child_deflate(lane, checks=mode == "deflate+checks")


def _pairs(label: str, ours: list[str | Path], tree: Path, work: Path, runs: int) -> dict[str, Any]:
    mine, zips = [], []
    for i in range(runs):
        mine.append(run(f"{label} #{i}", ours))
        zips.append(info_zip(f"zip #{i}", tree, work))
    return pairs(mine, zips)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--parts", default="startup,files,deflate")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child)
        return
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    me: list[str | Path] = [sys.executable, Path(__file__).resolve(), "--child"]
    results: dict[str, Any] = {"load_before": load_average()[0], "targets": TARGETS}
    if "startup" in parts:
        out = work / "floors-small-out"
        shutil.rmtree(out, ignore_errors=True)
        build_lane("build small set (untimed)", small_samples(work), out)
        ours, theirs = [], []
        for i in range(max(args.runs, 11)):
            ours.append(run(f"python -c pass #{i}", [sys.executable, "-c", "pass"], own_rss=False))
            theirs.append(
                run(
                    f"sha256sum -c #{i}",
                    ["sha256sum", "-c", "--quiet", "SHA256SUMS"],
                    cwd=set_dir(out),
                    own_rss=False,
                )
            )
        results["startup"] = pairs(ours, theirs)
        shutil.rmtree(out)
    if "files" in parts:
        tree = many_files_tree(small_samples(work), work, count=args.count)
        sink = work / "floors-files.out"
        results["files"] = _pairs("floor loop", [*me, "files", tree / LANE, sink], tree, work, args.runs)
        results["files"]["extra_files"] = args.count
        sink.unlink(missing_ok=True)
    if "deflate" in parts:
        tree = fetch_samples(work)
        results["tree_mib"] = round(tree_bytes(tree / LANE) / MIB, 1)
        for mode in ("deflate", "deflate+checks"):
            results[mode] = _pairs(f"floor {mode}", [*me, mode, tree / LANE], tree, work, args.runs)
    (work / "floors.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"load before: {results['load_before']}")
    for key, target in TARGETS.items():
        if key in results:
            r = results[key]["ratio"]
            # On the median, as the goals' verdicts (docs/benchmarks.md).
            verdict = "over the target: unreachable by tuning" if r["median"] > target else "under the target"
            print(
                f"{key:15} floor {r['min']:.3f}× / {r['median']:.3f}× / {r['max']:.3f}× "
                f"(min/median/max) vs target {target}×: {verdict}"
            )


if __name__ == "__main__":
    main()
