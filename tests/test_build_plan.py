"""The pure lane plans of ``build`` (issue 10: plan, then execute): members, records and checks,
computed without touching the disk or starting a process.

The inputs are read once per module (the definition, its profile, a small staged tree, the
recipes); every plan call then runs with file and process access disabled.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from ninfer_release import containers, manifests, packaging, profiles
from ninfer_release.build import (
    CHECKS,
    ImageInputs,
    ImageWork,
    LanePlan,
    NativeInputs,
    NativeWork,
    plan_carried_lane,
    plan_image_lane,
    plan_native_lane,
)
from ninfer_release.errors import InputError
from ninfer_release.releases import names_for_tag
from test_staged_tree import LANE, make_staged_tree

REPO = Path(__file__).resolve().parent.parent
DEFINITION = REPO / "manifests" / "v0.13.1.yaml"
COMMIT_5090 = "a" * 40


@pytest.fixture(scope="module")
def release() -> manifests.Release:
    return manifests.load_release(DEFINITION, env={}, repo_root=REPO)


@pytest.fixture(scope="module")
def native(release: manifests.Release, tmp_path_factory: pytest.TempPathFactory) -> NativeInputs:
    lane = release.lanes["rtx4090"]
    profile = release.profile_of(lane.id)
    tree = make_staged_tree(tmp_path_factory.mktemp("plan") / "rtx4090")
    return NativeInputs(
        release=release,
        lane=lane,
        profile=profile,
        rendered=profiles.render_config(profile),
        staged=packaging.load_staged_tree(tree, **LANE),
        recipe=packaging.load_recipe(REPO / "packaging" / "windows-native.yaml"),
        definition_sha256="0" * 64,
        build_inputs={},
    )


def _image_inputs(release: manifests.Release, tmp: Path, **override: Any) -> ImageInputs:
    lane = dataclasses.replace(
        release.lanes["rtx5090"], mode="build", source_commit=COMMIT_5090, carried=None
    )
    fields: dict[str, Any] = {
        "release": release,
        "lane": lane,
        "recipe": containers.load_recipe(REPO / "containers" / "qwen38-5090.yaml"),
        "staged": tmp / "rtx5090",
        "files": (("bin/ninfer-server", 10), ("build-info.json", 3), ("config/a.toml", 2)),
        "info": containers.StagedImageInfo(
            lane="rtx5090", component_tag=lane.component_tag, source_commit=COMMIT_5090, stand_in=True
        ),
        "base": None,
        "default_base": tmp / "base-layout",
        "default_base_exists": True,
    }
    fields.update(override)
    return ImageInputs(**fields)


def _refuse(*_args: object, **_kwargs: object) -> NoReturn:
    raise AssertionError("a plan function touched the disk or started a process")


@contextlib.contextmanager
def _no_io() -> Iterator[None]:
    """File opens, stats, directory listings and subprocesses fail inside this block."""
    with pytest.MonkeyPatch.context() as patch:
        for target, name in (
            (builtins, "open"),
            (os, "open"),
            (os, "stat"),
            (os, "lstat"),
            (os, "scandir"),
            (os, "listdir"),
            (os, "replace"),
            (os, "rename"),
            (subprocess, "Popen"),
        ):
            patch.setattr(target, name, _refuse)
        yield


def _native(source: NativeInputs, **options: bool) -> LanePlan:
    with _no_io():
        return plan_native_lane(source, **options)


def _image(source: ImageInputs) -> LanePlan:
    with _no_io():
        return plan_image_lane(source)


def test_native_plan_lists_members_records_and_checks(native: NativeInputs) -> None:
    plan = _native(native)
    names = names_for_tag(native.lane.component_tag)
    assert (plan.lane_id, plan.kind, plan.mode) == ("rtx4090", "windows-zip", "build")
    assert plan.records == (*(f"rtx4090/{n}" for n in names.all), "rtx4090.lane.json")
    assert plan.checks == (
        "lock-digests",
        "stand-in-claims",
        "set-sboms",
        "package-budget",
        "receipts",
        "verify",
    )
    assert all(c in CHECKS for c in plan.checks)
    members = {m.name: m for m in plan.members}
    assert members["bin/ninfer-server.exe"].origin == "staged"
    assert members["bin/cudart64_13.dll"].size == len(b"MZ\x90\x00 cudart stand-in" * 100)
    assert members["config/ninfer.toml"].origin == "generated"
    assert members["config/ninfer.toml"].size == len(native.rendered.data)
    assert members[f"sbom/{names.stem}.spdx.json"].size is None  # its bytes need the others' digests
    assert plan.staged_bytes == sum(
        f.size for f in native.staged.files if f.path.startswith(("bin/", "licenses/"))
    )


def test_native_plan_work_names_what_the_executor_reads(native: NativeInputs) -> None:
    work = _native(native).work
    assert isinstance(work, NativeWork)
    assert work.zip_name_of == {
        "bin/cudart64_13.dll": "bin/cudart64_13.dll",
        "bin/ninfer-server.exe": "bin/ninfer-server.exe",
        "licenses/nlohmann-json.txt": "licenses/nlohmann-json.txt",
    }
    assert sorted(work.pe_paths) == ["bin/cudart64_13.dll", "bin/ninfer-server.exe"]
    assert work.known_sha256 == {r.file: r.sha256 for r in native.staged.lock.redistributables}
    assert work.spdx_member == f"sbom/{work.names.stem}.spdx.json"
    assert (
        work.facts.lane_id == "rtx4090" and work.facts.source_date_epoch == native.release.source_date_epoch
    )


def test_native_checks_follow_the_options_and_the_definition(native: NativeInputs) -> None:
    assert "verify" not in _native(native, verify=False).checks
    with_predecessor = dataclasses.replace(
        native, release=dataclasses.replace(native.release, predecessor="releases/v0.13.0")
    )
    assert _native(with_predecessor).checks[-1] == "documented-routes"


def test_native_plan_is_deterministic(native: NativeInputs) -> None:
    assert _native(native) == _native(native)


def test_image_plan_members_records_and_default_base(release: manifests.Release, tmp_path: Path) -> None:
    plan = _image(_image_inputs(release, tmp_path))
    assert [(m.name, m.size, m.origin) for m in plan.members] == [
        ("bin/ninfer-server", 10, "staged"),
        ("build-info.json", 3, "staged"),
        ("config/a.toml", 2, "staged"),
    ]
    assert plan.records == (
        "rtx5090/layout/",
        "rtx5090/image.tar",
        "rtx5090/image.json",
        "rtx5090/sbom.cdx.json",
        "rtx5090/sbom.spdx.json",
        "rtx5090.lane.json",
    )
    assert isinstance(plan.work, ImageWork)
    assert plan.work.base == str(tmp_path / "base-layout")
    assert plan.work.profile == REPO / "profiles" / "qwen38-5090-v0.13.0.yaml"
    explicit = _image(_image_inputs(release, tmp_path, base="oci:elsewhere", default_base_exists=False))
    assert isinstance(explicit.work, ImageWork) and explicit.work.base == "oci:elsewhere"


def test_image_plan_refuses_another_lanes_recipe_first(release: manifests.Release, tmp_path: Path) -> None:
    inputs = _image_inputs(release, tmp_path, default_base_exists=False)
    recipe = dataclasses.replace(inputs.recipe, lane="rtx4090")
    with pytest.raises(InputError) as caught:
        _image(dataclasses.replace(inputs, recipe=recipe))
    assert [p.field for p in caught.value.problems] == ["lane"]  # the base is reported once this holds


def test_image_plan_reports_build_info_and_base_problems_together(
    release: manifests.Release, tmp_path: Path
) -> None:
    info = containers.StagedImageInfo(
        lane="rtx5090", component_tag="other", source_commit="b" * 40, stand_in=False
    )
    with pytest.raises(InputError) as caught:
        _image(_image_inputs(release, tmp_path, info=info, default_base_exists=False))
    assert [p.field for p in caught.value.problems] == ["component_tag", "source_commit", "base"]
    assert "give --base LAYOUT_OR_REF" in caught.value.lines[-1]


def test_carried_plan_writes_only_the_lane_result(release: manifests.Release) -> None:
    with _no_io():
        plan = plan_carried_lane(release.lanes["rtx5090"])
    assert plan == LanePlan(
        lane_id="rtx5090", kind="oci-image", mode="carry", members=(), records=("rtx5090.lane.json",)
    )
    assert plan.work is None and plan.as_json()["staged_bytes"] == 0
