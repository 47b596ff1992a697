"""Benchmark: daemonless ``image build`` vs ``docker build --no-cache`` of the same layers (DESIGN.md §11).

Goal: ``ninfer-release image build`` ≤ 0.5× the wall time of ``docker build`` (legacy builder,
``--no-cache``) of the same base and the same files, with identical digests across rebuilds.

Like with like (issue 13): both sides are whole processes (``ninfer-release image build … --release``
as a user runs it, imports and all; ``docker build`` as a client process), run as interleaved pairs
(ours, then docker, ``--runs`` times), timed around ``wait4``. Compression: our build writes
gzip-6 layers (and a ``docker load``-able tar of them); ``docker build`` stores its layers
uncompressed and compresses only on ``docker save``/push. So two docker sides are measured:
``docker build`` alone (the goal's comparison, docker doing less work) and ``docker build`` +
``docker save | gzip -6`` (the same artifact: a loadable image tar with gzip-6 compression).

Digests: the daemonless build is run through the CLI with ``--release`` (version and revision from
the staged ``build-info.json``, epoch from the release definition) and ``SOURCE_DATE_EPOCH``
removed from its environment; the Python API with the same version, revision and epoch gives the
same digest (``tests/test_containers_build.py``). Earlier versions of this script called the API
with the native lanes' commit as revision and a payload of their own, hence other digests.

Usage (as root, with dockerd installed; or point NINFER_DOCKER_HOST at a running engine):

    .venv/bin/python bench/bench_image.py [--mib 256] [--runs 5] [--json]

The staged payload is deterministic: a server binary and a runtime archive whose members are half
incompressible (seeded pseudo-random) and half text, ``--mib`` MiB in total; the archive's gzip
header has MTIME 0, so every run of this script builds the same image (one digest per ``--mib``).
Both builders start from the same sample busybox base (loaded into the engine with skopeo, digest
unchanged).
"""

from __future__ import annotations

import argparse
import gzip
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CLI, RELEASE, Run, run
from ninfer_release.containers import (
    make_sample_base_layout,
    make_sample_rtx5090_inputs,
    render_inputs,
)

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "containers" / "qwen38-5090.yaml"
PROFILE = REPO / "profiles" / "qwen38-5090-v0.13.0.yaml"
EPOCH = 1795132800
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
    # gzip's header would carry the time of the run (tarfile's "w:gz" writes it): the archive's
    # digest, bound into the image as a label, and so the image's digest would change per run.
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=6, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w") as tar,
    ):
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


def _env_without_epoch() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}


def daemonless(lane: Path, base: Path, out: Path, label: str) -> tuple[Run, str]:
    """One ``ninfer-release image build`` process; returns (its run, manifest digest)."""
    result = run(
        label,
        [CLI, "image", "build", RECIPE, "--inputs", lane, "--base", base, "--out", out, "--release", RELEASE],
        env=_env_without_epoch(),
    )
    digest = str(json.loads((out / "image.json").read_bytes())["manifest"]["digest"])
    return result, digest


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


def docker_build(host: str, ctx: Path, tag: str, label: str, save_to: Path | None = None) -> Run:
    """One ``docker build --no-cache`` (legacy builder); with ``save_to`` also ``docker save | gzip -6``."""
    env = dict(os.environ, DOCKER_BUILDKIT="0", DOCKER_HOST=host)
    script = f"docker build --no-cache -q -t {tag} {ctx} >/dev/null"
    if save_to is not None:
        script += f" && docker save {tag} | gzip -6 > {save_to}"
    result = run(label, ["sh", "-c", script], env=env)
    subprocess.run(["docker", "rmi", "-f", tag], env=env, check=True, capture_output=True)
    return result


def _cpu_stats(runs: list[Run]) -> dict[str, float]:
    """min / median / max of user+sys CPU seconds of ``runs``."""
    cpu = [r.user_s + r.sys_s for r in runs]
    return {"min": min(cpu), "median": statistics.median(cpu), "max": max(cpu)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--mib", type=int, default=256, help="payload size in MiB (default 256)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-image-"))
    try:
        base, lane, _ = make_inputs(root, args.mib)
        ctx = root / "ctx"
        docker_context(lane, ctx)
        ours: list[Run] = []
        plain: list[Run] = []
        saved: list[Run] = []
        digests: set[str] = set()
        with engine() as host:
            subprocess.run(
                ["skopeo", "copy", f"oci:{base}:busybox-static", "docker-daemon:sample/busybox-static:base",
                 "--dest-daemon-host", host],
                check=True, capture_output=True,
            )  # fmt: skip
            load = [round(x, 2) for x in os.getloadavg()]
            for i in range(args.runs):
                seconds, digest = daemonless(lane, base, root / f"out-{i}", f"image build #{i}")
                ours.append(seconds)
                digests.add(digest)
                shutil.rmtree(root / f"out-{i}")
                plain.append(docker_build(host, ctx, f"bench/image:{i}", f"docker build #{i}"))
                saved.append(
                    docker_build(host, ctx, f"bench/image:{i}", f"docker build+save #{i}", root / "s.tgz")
                )
                (root / "s.tgz").unlink()

        def stats(runs: list[Run]) -> dict[str, float]:
            walls = [r.wall_s for r in runs]
            return {"min": round(min(walls), 3), "median": round(statistics.median(walls), 3),
                    "max": round(max(walls), 3)}  # fmt: skip

        def ratios(theirs: list[Run]) -> dict[str, float]:
            values = [a.wall_s / b.wall_s for a, b in zip(ours, theirs, strict=True)]
            return {"min": round(min(values), 3), "median": round(statistics.median(values), 3),
                    "max": round(max(values), 3)}  # fmt: skip

        result = {
            "payload_mib": args.mib,
            "runs": args.runs,
            "load_average_before": load,
            "daemonless_s": stats(ours),
            # our process's own CPU (user+sys, all threads): what a busy machine cannot hide; the
            # docker side's work runs in the daemon, so its client CPU is not comparable
            "daemonless_cpu_s": {k: round(v, 3) for k, v in _cpu_stats(ours).items()},
            "docker_build_s": stats(plain),
            "docker_build_save_gzip_s": stats(saved),
            "ratio_vs_docker_build": ratios(plain),
            "ratio_vs_docker_build_save_gzip": ratios(saved),
            "goal_ratio": 0.5,
            "identical_digests": len(digests) == 1,
            "digest": sorted(digests)[0],
            "pairs": [
                [a.as_dict(), b.as_dict(), c.as_dict()] for a, b, c in zip(ours, plain, saved, strict=True)
            ],
        }
        if args.json:
            print(json.dumps(result, indent=2, sort_keys=True))
        else:
            for k, v in result.items():
                if k != "pairs":
                    print(f"{k:32} {v}")
        return 0 if len(digests) == 1 else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
