"""Regenerate the golden files of ``tests/test_golden.py`` (the only way they change).

Usage (from the project root)::

    .venv/bin/python tests/golden/regen.py [--samples DIR]

Builds the sample outputs exactly as ``/work/svc/sample-out.sh`` does — ``build release
manifests/v0.13.1.yaml --offline`` and ``image build containers/qwen38-5090.yaml`` with
``--release`` — into a temporary directory and copies every file named in ``FILES`` to
``tests/golden/<same relative path>``, then writes ``tests/golden/TOOLCHAIN`` (the resolved Python
dependencies the provenance records). ``--samples`` reuses fetched sample inputs (default: fetch
them into the temporary directory). Review the diff: a changed golden file is a changed output byte.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent
ROOT = GOLDEN.parent.parent
LANE = "rtx4090"
STEM = "ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64"
RELEASE_DIR = "v0.13.1"
IMAGE_DIR = "v0.13.1-image-rtx5090"

#: Files whose bytes do not depend on the Python environment, relative to the sample output.
FILES: tuple[str, ...] = (
    f"{RELEASE_DIR}/{LANE}/{STEM}.spdx.json",
    f"{RELEASE_DIR}/{LANE}/{STEM}.cdx.json",
    f"{RELEASE_DIR}/{LANE}/{STEM}.config.toml",
    f"{RELEASE_DIR}/{LANE}/{STEM}.profile.json",
    f"{RELEASE_DIR}/{LANE}/{STEM}.model.json",
    f"{RELEASE_DIR}/{LANE}/{STEM}.qualification.json",
    f"{RELEASE_DIR}/{LANE}/{STEM}.route.json",
    f"{RELEASE_DIR}/rtx5090.lane.json",
    f"{IMAGE_DIR}/image.json",
    f"{IMAGE_DIR}/sbom.cdx.json",
    f"{IMAGE_DIR}/sbom.spdx.json",
)
#: Files that bind the provenance, which lists the resolved Python dependencies of the build
#: (``releases/_toolchain.py``): equal to the golden only in an environment with ``TOOLCHAIN``.
TOOLCHAIN_FILES: tuple[str, ...] = (
    f"{RELEASE_DIR}/{LANE}/{STEM}.provenance.json",
    f"{RELEASE_DIR}/{LANE}/{STEM}.manifest.json",
    f"{RELEASE_DIR}/{LANE}/SHA256SUMS",
    f"{RELEASE_DIR}/{LANE}.lane.json",
    f"{RELEASE_DIR}/release-manifest.json",
)
TOOLCHAIN = GOLDEN / "TOOLCHAIN"
COMMAND = ".venv/bin/python tests/golden/regen.py"


def toolchain_text() -> str:
    """``name==version`` per resolved Python dependency of this environment, sorted, one a line."""
    from ninfer_release.releases._toolchain import resolved_dependencies

    return "".join(f"{d.name}=={d.version}\n" for d in sorted(resolved_dependencies(), key=lambda d: d.name))


def build_samples(out: Path, samples: Path) -> None:
    """The sample outputs into ``out`` (``out/v0.13.1`` and ``out/v0.13.1-image-rtx5090``)."""
    nr = [sys.executable, "-m", "ninfer_release", "--repo", str(ROOT)]
    run = {"check": True, "cwd": ROOT, "stdout": subprocess.DEVNULL}
    release = "manifests/v0.13.1.yaml"
    subprocess.run(
        [
            *nr,
            "build",
            "release",
            release,
            "--inputs",
            str(samples),
            "--out",
            str(out / RELEASE_DIR),
            "--offline",
        ],
        **run,  # type: ignore[call-overload]
    )
    subprocess.run(
        [
            *nr,
            "image",
            "build",
            "containers/qwen38-5090.yaml",
            "--inputs",
            str(samples / "rtx5090"),
            "--base",
            str(samples / "base-layout"),
            "--out",
            str(out / IMAGE_DIR),
            "--release",
            release,
        ],
        **run,  # type: ignore[call-overload]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=Path, help="fetched sample inputs to reuse")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ninfer-golden-") as tmp:
        work = Path(tmp)
        samples = args.samples
        if samples is None:
            samples = work / "samples"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ninfer_release",
                    "--repo",
                    str(ROOT),
                    "samples",
                    "fetch",
                    "--out",
                    str(samples),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        build_samples(work / "out", samples.resolve())
        for rel in (*FILES, *TOOLCHAIN_FILES):
            dest = GOLDEN / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(work / "out" / rel, dest)
    TOOLCHAIN.write_text(toolchain_text())
    print(f"wrote {len(FILES) + len(TOOLCHAIN_FILES)} golden files and TOOLCHAIN under {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
