"""Benchmark: daemonless image build vs ``docker build`` of the same layers (DESIGN.md §11).

Goal: daemonless build ≤ 0.5× the wall time of ``docker build`` (legacy builder, ``--no-cache``)
of the same base and the same files, with identical digests across daemonless rebuilds.

Usage (as root, with dockerd installed; or point NINFER_DOCKER_HOST at a running engine):

    .venv/bin/python bench/bench_image.py [--mib 256] [--runs 3] [--json]

The staged payload is deterministic: a server binary and a runtime archive whose members are half
incompressible (seeded pseudo-random) and half text, ``--mib`` MiB in total. Both builders start
from the same sample busybox base (loaded into the engine with skopeo, digest unchanged). The
docker side is timed from ``docker build`` start to its end (context upload, layer commits); the
daemonless side from request to finished layout + ``docker load``-able tar + record.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ninfer_release.containers import (
    ImageBuildRequest,
    build_image,
    load_recipe,
    make_sample_base_layout,
    make_sample_rtx5090_inputs,
    render_inputs,
)

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "containers" / "qwen38-5090.yaml"
PROFILE = REPO / "profiles" / "qwen38-5090-v0.13.0.yaml"
EPOCH = 1795132800
COMMIT = "7a25cd72f490183e4113f1e84e68e36d653ddd28"
MIB = 1 << 20


def _payload(size: int, seed: int) -> bytes:
    rng = random.Random(seed)  # noqa: S311 - benchmark filler, not security
    half = size // 2
    text = (b"ninfer runtime stand-in text block; compressible filler line\n" * (half // 62 + 1))[:half]
    return rng.randbytes(size - half) + text


def make_inputs(root: Path, mib: int) -> tuple[Path, Path, str]:
    """Sample base + 5090 inputs with a ``mib``-MiB payload; returns (base layout, lane dir, base digest)."""
    digest = make_sample_base_layout(root / "base-layout", epoch=EPOCH)
    lane = make_sample_rtx5090_inputs(root, epoch=EPOCH)
    server_size = max(mib // 4, 1) * MIB
    (lane / "bin" / "ninfer-server").write_bytes(
        b"#!/bin/sh\necho stand-in\nexit 0\n" + _payload(server_size, 1)
    )
    archive = lane / "runtime" / "ninfer-runtime.tar.gz"
    per_file = max((mib * MIB - server_size) // 4, MIB)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        for i in range(4):
            data = _payload(per_file, 10 + i)
            info = tarfile.TarInfo(f"lib/libruntime-{i}.so")
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
        version = b"stand-in bench\n"
        info = tarfile.TarInfo("share/ninfer/RUNTIME-VERSION")
        info.size = len(version)
        tar.addfile(info, io.BytesIO(version))
    archive.write_bytes(buf.getvalue())
    return root / "base-layout", lane, digest


def daemonless(lane: Path, base: Path, out: Path) -> tuple[float, str]:
    """One daemonless build; returns (seconds, manifest digest)."""
    start = time.perf_counter()
    result = build_image(
        ImageBuildRequest(
            recipe=load_recipe(RECIPE),
            inputs=lane,
            base=str(base),
            out=out,
            version="v0.7.0-qwen38-5090-beta.2",
            revision=COMMIT,
            epoch=EPOCH,
            rendered=render_inputs(PROFILE),
        )
    )
    return time.perf_counter() - start, result.manifest_digest


def docker_context(lane: Path, ctx: Path) -> None:
    """A docker build context with the same files at the same image paths as the recipe."""
    rendered = render_inputs(PROFILE)
    shutil.copytree(lane, ctx)
    (ctx / "etc").mkdir()
    (ctx / "etc" / "config.toml").write_bytes(rendered.config)
    assert rendered.profile_document is not None
    (ctx / "etc" / "profile.json").write_bytes(rendered.profile_document)
    (ctx / "Dockerfile").write_text(
        "FROM sample/busybox-static:base\n"
        "ADD runtime/ninfer-runtime.tar.gz /opt/ninfer/runtime/\n"
        "COPY bin/ninfer-server /opt/ninfer/bin/ninfer-server\n"
        "COPY etc/config.toml etc/profile.json /etc/ninfer/\n"
        'USER 10001:10001\nEXPOSE 18082\nVOLUME ["/checkpoints-v013"]\n'
        'ENTRYPOINT ["/opt/ninfer/bin/ninfer-server"]\n'
    )


@contextmanager
def engine() -> Iterator[str]:
    """A docker engine: NINFER_DOCKER_HOST, or a private dockerd stopped by PID afterwards."""
    given = os.environ.get("NINFER_DOCKER_HOST")
    if given:
        yield given
        return
    work = Path(tempfile.mkdtemp(prefix="bench-dockerd-", dir="/tmp"))
    sock = work / "docker.sock"
    log = (work / "dockerd.log").open("wb")
    proc = subprocess.Popen(
        ["dockerd", "--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
         "--ip-forward=false", f"--host=unix://{sock}", f"--data-root={work / 'data'}",
         f"--exec-root={work / 'exec'}", f"--pidfile={work / 'dockerd.pid'}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(["docker", "-H", f"unix://{sock}", "version"], capture_output=True).returncode:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"dockerd did not start: {(work / 'dockerd.log').read_text()[-500:]}")
            time.sleep(0.3)
        yield f"unix://{sock}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
        subprocess.run(["umount", "-R", str(work / "data")], capture_output=True, check=False)
        shutil.rmtree(work, ignore_errors=True)


def docker_build(host: str, ctx: Path, tag: str) -> float:
    """One ``docker build --no-cache`` (legacy builder); returns seconds."""
    env = dict(os.environ, DOCKER_BUILDKIT="0", DOCKER_HOST=host)
    start = time.perf_counter()
    subprocess.run(["docker", "build", "--no-cache", "-q", "-t", tag, str(ctx)], env=env, check=True,
                   capture_output=True)  # fmt: skip
    seconds = time.perf_counter() - start
    subprocess.run(["docker", "rmi", "-f", tag], env=env, check=True, capture_output=True)
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=256, help="payload size in MiB (default 256)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-image-"))
    try:
        base, lane, _ = make_inputs(root, args.mib)
        ours: list[float] = []
        digests: set[str] = set()
        for i in range(args.runs):
            seconds, digest = daemonless(lane, base, root / f"out-{i}")
            ours.append(seconds)
            digests.add(digest)
            shutil.rmtree(root / f"out-{i}")
        ctx = root / "ctx"
        docker_context(lane, ctx)
        theirs: list[float] = []
        with engine() as host:
            subprocess.run(
                ["skopeo", "copy", f"oci:{base}:busybox-static", "docker-daemon:sample/busybox-static:base",
                 "--dest-daemon-host", host],
                check=True, capture_output=True,
            )  # fmt: skip
            for i in range(args.runs):
                theirs.append(docker_build(host, ctx, f"bench/image:{i}"))
        result = {
            "payload_mib": args.mib,
            "runs": args.runs,
            "daemonless_s": [round(s, 3) for s in ours],
            "docker_build_s": [round(s, 3) for s in theirs],
            "daemonless_median_s": round(statistics.median(ours), 3),
            "docker_build_median_s": round(statistics.median(theirs), 3),
            "ratio": round(statistics.median(ours) / statistics.median(theirs), 3),
            "goal_ratio": 0.5,
            "identical_digests": len(digests) == 1,
            "digest": sorted(digests)[0],
        }
        if args.json:
            print(json.dumps(result, indent=2, sort_keys=True))
        else:
            for k, v in result.items():
                print(f"{k:24} {v}")
        return 0 if len(digests) == 1 else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
