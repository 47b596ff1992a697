"""One image digest whichever way the build is asked for (issue 13: API, CLI and benchmark agreed not).

The daemonless build's digest is a function of the inputs *and* of version, revision and epoch.
The CLI takes version and revision from the staged ``build-info.json`` and the epoch from the
release definition (``SOURCE_DATE_EPOCH`` overrides it, as everywhere); the Python API takes
them as arguments. Given the same three, both give the same digest; any of them changed, another.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import need_tool
from flow_support import RELEASE, REPO, nr_command
from ninfer_release.containers import (
    ImageBuildRequest,
    build_image,
    load_recipe,
    make_sample_base_layout,
    make_sample_rtx5090_inputs,
    read_build_info,
    render_inputs,
)
from ninfer_release.manifests import load_release

RECIPE = REPO / "containers" / "qwen38-5090.yaml"
PROFILE = REPO / "profiles" / "qwen38-5090-v0.13.0.yaml"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    busybox = Path(need_tool("busybox"))
    root = tmp_path_factory.mktemp("image-digests")
    epoch = load_release(RELEASE, env={}).source_date_epoch
    make_sample_base_layout(root / "base", epoch=epoch, busybox=busybox)
    return make_sample_rtx5090_inputs(root, epoch=epoch), root / "base"


def _api(
    inputs: tuple[Path, Path], out: Path, *, revision: str | None = None, epoch: int | None = None
) -> str:
    """The image built through the library; ``revision``/``epoch`` default to the lane's and the release's."""
    lane, base = inputs
    info = read_build_info(lane)
    request = ImageBuildRequest(
        recipe=load_recipe(RECIPE),
        inputs=lane,
        base=str(base),
        out=out,
        rendered=render_inputs(PROFILE),
        version=info.component_tag,
        revision=info.source_commit if revision is None else revision,
        epoch=load_release(RELEASE, env={}).source_date_epoch if epoch is None else epoch,
    )
    return str(build_image(request).manifest_digest)


def _cli(inputs: tuple[Path, Path], out: Path, **env: str) -> str:
    lane, base = inputs
    full = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    full.update(env)
    args = ["image", "build", RECIPE, "--inputs", lane, "--base", base, "--out", out, "--release", RELEASE]
    res = subprocess.run(
        [*nr_command(), *map(str, args)], env=full, capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stderr
    return str(json.loads((out / "image.json").read_bytes())["manifest"]["digest"])


def test_api_and_cli_agree_given_the_same_version_revision_and_epoch(
    inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    assert _cli(inputs, tmp_path / "cli") == _api(inputs, tmp_path / "api")


def test_each_of_revision_and_epoch_changes_the_digest(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    same = _api(inputs, tmp_path / "same")
    # What bench_image.py used to pass: the native lanes' commit as revision.
    assert _api(inputs, tmp_path / "rev", revision="7a25cd72f490183e4113f1e84e68e36d653ddd28") != same
    assert _api(inputs, tmp_path / "epoch", epoch=1700000000) != same
    assert _cli(inputs, tmp_path / "cli-epoch", SOURCE_DATE_EPOCH="1700000000") == _api(
        inputs, tmp_path / "api-epoch", epoch=1700000000
    )
