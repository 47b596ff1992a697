"""Each lane's publication repository (``lanes.<lane>.publication_repository``, issue 8 item 6):
the definition names it, ``publish --release`` refuses a set aimed at another lane's repository,
and the loader keeps the repositories apart."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flow_support import RELEASE, REPO, cli, qualified_out
from ninfer_release.errors import DefinitionError
from ninfer_release.manifests import load_release


def test_the_definition_names_each_native_lanes_repository() -> None:
    release = load_release(RELEASE, env={})
    assert {lane.id: lane.publication_repository for lane in release.lanes.values()} == {
        "rtx3090": "omp-ninfer/rtx3090",
        "rtx4090": "omp-ninfer/rtx4090",
        "rtx5090": None,
    }
    assert release.store_owner("ns/x/omp-ninfer/rtx3090").id == "rtx3090"  # type: ignore[union-attr]
    assert release.store_owner("omp-ninfer/rtx4090/").id == "rtx4090"  # type: ignore[union-attr]
    assert release.store_owner("x-omp-ninfer/rtx4090") is None  # whole path components only
    assert release.store_owner("store") is None


@pytest.mark.parametrize(
    "target",
    [
        "oci://127.0.0.1:9/omp-ninfer/rtx3090",
        "oci://127.0.0.1:9/some/namespace/omp-ninfer/rtx3090",
        "dir://{tmp}/omp-ninfer/rtx3090",
    ],
)
def test_publish_to_another_lanes_repository_is_refused(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, target: str
) -> None:
    """``publish sealed/rtx4090 --to …/rtx3090 --release``: exit 7 naming the target and both lanes,
    before anything is written (tags are immutable: a wrong publish could not be taken back)."""
    to = target.format(tmp=tmp_path)
    res = cli("publish", qualified_out(tmp_path_factory) / "rtx4090", "--to", to, "--release", RELEASE)
    assert res.code == 7, res.text
    assert (
        f"{to}: target: is lane rtx3090's publication repository (omp-ninfer/rtx3090); "
        "this set is lane rtx4090's (omp-ninfer/rtx4090)"
    ) in res.err
    assert not (tmp_path / "omp-ninfer").exists()


def test_publish_to_a_registry_repository_of_no_lane_is_refused(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    to = "oci://127.0.0.1:9/omp-ninfer/misc"
    res = cli("publish", qualified_out(tmp_path_factory) / "rtx4090", "--to", to, "--release", RELEASE)
    assert res.code == 7, res.text
    assert (
        "repository omp-ninfer/misc is not lane rtx4090's publication repository (omp-ninfer/rtx4090"
        in res.err
    )


def test_publish_to_its_own_lane_store_or_a_shared_store_is_allowed(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    qual = qualified_out(tmp_path_factory) / "rtx4090"
    for to in (f"dir://{tmp_path / 'omp-ninfer' / 'rtx4090'}", f"dir://{tmp_path / 'store'}"):
        res = cli("publish", qual, "--to", to, "--release", RELEASE)
        assert res.code == 0, res.text


def _definition(tmp_path: Path, text: str) -> Path:
    for name in ("profiles", "packaging", "sbom", "containers", "releases"):
        os.symlink(REPO / name, tmp_path / name)
    (tmp_path / "manifests").mkdir()
    path = tmp_path / "manifests" / "v0.13.1.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        (
            "publication_repository: omp-ninfer/rtx3090",
            "publication_repository: omp-ninfer/rtx4090",
            "lanes.rtx3090.publication_repository",
            "would also be lane rtx4090's store",
        ),
        (
            "publication_repository: omp-ninfer/rtx3090",
            "publication_repository: rtx4090",
            "lanes.rtx3090.publication_repository",
            "would also be lane rtx3090's store",
        ),
        (
            "publication_repository: omp-ninfer/rtx3090",
            "publication_repository: Omp-Ninfer/RTX3090",
            "lanes.rtx3090.publication_repository",
            "a registry repository path",
        ),
    ],
)
def test_repositories_that_are_not_each_lanes_own_are_refused(
    tmp_path: Path, old: str, new: str, field: str, message: str
) -> None:
    text = RELEASE.read_text()
    assert old in text
    path = _definition(tmp_path, text.replace(old, new))
    with pytest.raises(DefinitionError) as info:
        load_release(path, env={})
    assert any(p.field == field or message in p.message for p in info.value.problems), info.value.lines
    assert any(message in line for line in info.value.lines), info.value.lines


@pytest.mark.parametrize(
    "spelling",
    [
        "{tmp}/omp-ninfer/rtx4090/../rtx3090",
        "{tmp}/omp-ninfer/rtx3090/x/..",
        "{tmp}/link",
        "{tmp}/link/",
        "{tmp}/OMP-NINFER/RTX3090",
    ],
)
def test_another_lanes_directory_store_behind_dot_dot_or_a_link_is_refused(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, spelling: str
) -> None:
    """The store is the directory the path names, however it is spelt (hostile review of issue 8)."""
    real = tmp_path / "omp-ninfer" / "rtx3090"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    to = "dir://" + spelling.format(tmp=tmp_path)
    res = cli("publish", qualified_out(tmp_path_factory) / "rtx4090", "--to", to, "--release", RELEASE)
    assert res.code == 7, res.text
    assert "is lane rtx3090's publication repository (omp-ninfer/rtx3090)" in res.err
    assert list(real.iterdir()) == [] and not (tmp_path / "OMP-NINFER").exists()


def test_a_registry_repository_that_only_starts_like_a_lanes_is_no_lanes(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    for to in ("oci://127.0.0.1:9/omp-ninfer/rtx4090-other", "oci://127.0.0.1:9/omp-ninfer/rtx4090/x"):
        res = cli("publish", qualified_out(tmp_path_factory) / "rtx4090", "--to", to, "--release", RELEASE)
        assert res.code == 7, res.text
        assert "is not lane rtx4090's publication repository" in res.err
