"""Golden files: the sample outputs' records and SBOMs, byte for byte (issue 10, "Done when").

One file per record kind and per SBOM of the sample inputs lives under ``tests/golden/``, at its
path in the sample output (``v0.13.1/rtx4090/<stem>.route.json``, ``v0.13.1-image-rtx5090/
sbom.cdx.json`` ...): the rtx4090 lane's release manifest, lane result, component manifest,
route block, qualification, model, profile, provenance, config, SPDX and CycloneDX, the carried
lane's result, and the image's build record and SBOMs. A test builds the sample outputs and
compares each file with its golden copy. The golden files change only through the command the
failure names (``tests/golden/regen.py``), and such a change is a change of output bytes.

The provenance lists the resolved Python dependencies of the build, so it (and every file that
binds its digest) equals the golden copy only in an environment with the dependencies of
``tests/golden/TOOLCHAIN``; elsewhere those comparisons are skipped, saying which versions differ.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from flow_support import RELEASE, cli, ok, release_out, samples
from golden.regen import (
    COMMAND,
    FILES,
    GOLDEN,
    IMAGE_DIR,
    RELEASE_DIR,
    TOOLCHAIN,
    TOOLCHAIN_FILES,
    toolchain_text,
)

_IMAGE: dict[str, Path] = {}


def _image_out(factory: pytest.TempPathFactory) -> Path:
    """``image build containers/qwen38-5090.yaml --release`` of the sample inputs, once per session."""
    if "out" not in _IMAGE:
        src = samples(factory)
        out = factory.mktemp("golden") / IMAGE_DIR
        recipe = Path(RELEASE).parent.parent / "containers" / "qwen38-5090.yaml"
        ok(
            cli(
                "image",
                "build",
                recipe,
                "--inputs",
                src / "rtx5090",
                "--base",
                src / "base-layout",
                "--out",
                out,
                "--release",
                RELEASE,
            )
        )
        _IMAGE["out"] = out
    return _IMAGE["out"]


def _built(rel: str, factory: pytest.TempPathFactory) -> Path:
    top, _, rest = rel.partition("/")
    if top == RELEASE_DIR:
        return release_out(factory) / rest
    assert top == IMAGE_DIR
    return _image_out(factory) / rest


def _compare(rel: str, factory: pytest.TempPathFactory) -> None:
    golden = (GOLDEN / rel).read_bytes()
    built = _built(rel, factory).read_bytes()
    if built == golden:
        return
    diff = "".join(
        list(
            difflib.unified_diff(
                golden.decode("utf-8", "replace").splitlines(keepends=True),
                built.decode("utf-8", "replace").splitlines(keepends=True),
                f"golden/{rel}",
                "built",
            )
        )[:60]
    )
    pytest.fail(
        f"tests/golden/{rel} differs from the bytes a build writes now. An output byte changed: "
        f"if that is intended, regenerate the golden files with `{COMMAND}` and review the diff.\n{diff}"
    )


@pytest.mark.parametrize("rel", FILES)
def test_record_and_sbom_bytes_equal_the_golden_files(
    rel: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _compare(rel, tmp_path_factory)


@pytest.mark.parametrize("rel", TOOLCHAIN_FILES)
def test_provenance_and_what_binds_it_equal_the_golden_files(
    rel: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    want, have = TOOLCHAIN.read_text(), toolchain_text()
    if want != have:
        changed = [line for line in difflib.ndiff(want.splitlines(), have.splitlines()) if line[:1] in "+-"]
        pytest.skip(
            "the provenance records the resolved Python dependencies; this environment's differ from "
            f"tests/golden/TOOLCHAIN ({', '.join(changed[:6])})"
        )
    _compare(rel, tmp_path_factory)


def test_every_golden_file_is_compared() -> None:
    """No stray golden file: each one under tests/golden/ is listed, and each listed one exists."""
    on_disk = {
        p.relative_to(GOLDEN).as_posix()
        for p in GOLDEN.rglob("*")
        if p.is_file() and p.suffix != ".py" and p.name != "TOOLCHAIN" and "__pycache__" not in p.parts
    }
    assert on_disk == set(FILES) | set(TOOLCHAIN_FILES)
