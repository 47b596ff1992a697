"""Benchmark: publishing to and pulling from a registry vs ``skopeo copy`` of the same artifact.

Goals (issue 11): ``ninfer-release publish SET --to oci://…`` ≤ 1.2× ``skopeo copy
oci:STORE:TAG docker://…`` of the same artifact, and ``ninfer-release verify oci://…:TAG`` (pull
+ full set verification) ≤ 1.2× ``skopeo copy docker://… oci:DIR:TAG`` + ``sha256sum -c`` of
every blob.

The set is the rtx4090 set ``build lane`` writes (``--full``: the 388 MB cuBLAS tree; default the
small sample tree). It is published once to a ``dir://`` store (an OCI layout holding exactly the
artifact both sides move). Each repetition starts a **fresh** Debian ``docker-registry`` on a new
loopback port (no blob already there, no cross-repository mount, no skopeo blob-info cache hit),
then runs the pair back to back: ``skopeo copy`` first, ``publish`` to another repository of the
same registry second, then the pull pair from skopeo's copy. Our publish includes what the
command always does: the full consumer verification of the set (on ``oci://`` it overlaps the
upload; the manifest waits for it). The ratio is the median of the per-pair ratios.

Usage: ``.venv/bin/python bench/bench_registry.py [--work DIR] [--runs 3] [--full] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import CLI, LANE, Run, best, build_lane, fetch_samples, median, paired, run, set_dir  # noqa: E402

GOAL = 1.2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Registry:
    """A private plain-HTTP docker-registry on loopback, stopped by PID."""

    def __init__(self, work: Path) -> None:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        self.port = _free_port()
        config = work / "config.yml"
        config.write_text(
            "version: 0.1\nlog:\n  level: error\n"
            f"storage:\n  filesystem:\n    rootdirectory: {work / 'data'}\n"
            f"http:\n  addr: 127.0.0.1:{self.port}\n"
        )
        self._work = work
        self._log = (work / "registry.log").open("wb")
        self._proc = subprocess.Popen(
            ["docker-registry", "serve", str(config)], stdout=self._log, stderr=self._log
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"docker-registry did not start: {(work / 'registry.log').read_text()}"
                    ) from None
                time.sleep(0.1)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=20)
        self._log.close()
        shutil.rmtree(self._work, ignore_errors=True)


def _small_samples(work: Path) -> Path:
    out = work / "samples-small"
    if not (out / LANE).is_dir():
        run("samples fetch", [CLI, "samples", "fetch", "--out", out])
    return out


def _repetition(i: int, work: Path, store: Path, directory: Path, tag: str, pulled: Path) -> tuple[Run, ...]:
    """One repetition against a fresh registry: skopeo push, our publish, skopeo pull + sha256sum -c,
    our verify (in the order of the result's rows)."""
    reg = _Registry(work / "registry-run")
    try:
        base = f"docker://{reg.host}"
        skopeo_push = run(
            f"skopeo copy oci: -> docker:// #{i}",
            [
                "skopeo",
                "copy",
                "--quiet",
                "--dest-tls-verify=false",
                f"oci:{store}:{tag}",
                f"{base}/s/set:{tag}",
            ],
        )
        ours_push = run(
            f"publish #{i}", [CLI, "publish", directory, "--to", f"oci://{reg.host}/n/set", "--draft"]
        )
        shutil.rmtree(pulled, ignore_errors=True)
        blobs = pulled / "blobs" / "sha256"
        check = f'cd "{blobs}" && for f in *; do echo "$f  $f"; done | sha256sum -c --quiet --strict'
        skopeo_pull = run(
            f"skopeo copy docker:// -> oci: + sha256sum -c #{i}",
            [
                "bash",
                "-c",
                f'skopeo copy --quiet --src-tls-verify=false "{base}/s/set:{tag}" "oci:{pulled}:{tag}"'
                f" && {check}",
            ],
        )
        ours_pull = run(f"verify oci:// #{i}", [CLI, "verify", f"oci://{reg.host}/n/set:{tag}"])
    finally:
        reg.stop()
    return skopeo_push, ours_push, skopeo_pull, ours_pull


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the benchmark; returns (and with ``--json`` prints) the results."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ninfer-bench")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--full", action="store_true", help="the 388 MB cuBLAS sample tree")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    samples = fetch_samples(args.work) if args.full else _small_samples(args.work)
    out = args.work / "registry-set"
    build_lane("build lane (set to publish)", samples, out)
    directory = set_dir(out)
    size = sum(p.stat().st_size for p in directory.iterdir())
    store = args.work / "registry-store"
    shutil.rmtree(store, ignore_errors=True)
    run(
        "publish dir:// (the artifact skopeo copies)",
        [CLI, "publish", directory, "--to", f"dir://{store}", "--draft"],
    )
    manifest = json.loads(next(directory.glob("*.manifest.json")).read_bytes())
    tag = f"{manifest['component_tag']}.draft"
    pulled = args.work / "registry-pulled"
    rows: dict[str, list[Run]] = {
        "skopeo_push": [],
        "publish": [],
        "skopeo_pull_sha256sum": [],
        "verify_oci": [],
    }
    for i in range(args.runs + 1):  # repetition 0 warms caches and is not counted
        timings = _repetition(i, args.work, store, directory, tag, pulled)
        if i > 0:
            for key, timing in zip(rows, timings, strict=True):
                rows[key].append(timing)
    shutil.rmtree(pulled, ignore_errors=True)
    push_ratio = paired(rows["publish"], rows["skopeo_push"])
    pull_ratio = paired(rows["verify_oci"], rows["skopeo_pull_sha256sum"])
    result: dict[str, object] = {
        "set_bytes": size,
        "full": args.full,
        "runs": args.runs,
        **{k: [r.as_dict() for r in v] for k, v in rows.items()},
        **{f"{k}_median_s": round(median(v), 3) for k, v in rows.items()},
        **{f"{k}_best_s": round(best(v), 3) for k, v in rows.items()},
        "publish_ratio_paired_median": round(push_ratio, 3),
        "pull_verify_ratio_paired_median": round(pull_ratio, 3),
        "goal": GOAL,
        "meets_goal": push_ratio <= GOAL and pull_ratio <= GOAL,
        # Others' work on the machine distorts the ratios (docs/benchmarks.md, "Noise"): say how much.
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"set {size:,} bytes: publish/skopeo-push {push_ratio:.2f}, verify-oci/skopeo-pull+sha256sum "
            f"{pull_ratio:.2f} (paired medians; goal ≤ {GOAL})"
        )
    return result


if __name__ == "__main__":
    main()
