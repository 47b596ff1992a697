"""Where a lane's staged inputs are: one rule for ``build lane``, ``build release`` and ``image build``
(docs/staged-inputs.md: ``--inputs`` is the directory holding ``<lane>/`` or the lane's tree itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ninfer_release.build import check_release_inputs, lane_staged_dir
from ninfer_release.errors import InputError


def _tree(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "build-info.json").write_text("{}")
    return path


def test_the_parent_directory_gives_the_lane_subdirectory(tmp_path: Path) -> None:
    lane = _tree(tmp_path / "rtx4090")
    assert lane_staged_dir(tmp_path, "rtx4090") == lane


def test_the_lane_tree_itself_is_accepted(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "staged")
    assert lane_staged_dir(tree, "rtx4090") == tree


def test_the_lane_subdirectory_wins_over_a_build_info_beside_it(tmp_path: Path) -> None:
    """Both forms match: ``DIR/<lane>/``, the layout every command documents, is used."""
    _tree(tmp_path)
    lane = _tree(tmp_path / "rtx5090")
    assert lane_staged_dir(tmp_path, "rtx5090") == lane


def test_neither_form_is_an_input_error_naming_the_expected_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        lane_staged_dir(tmp_path, "rtx3090")
    assert caught.value.exit_code == 4
    assert caught.value.lines == [
        f"{tmp_path}: rtx3090: no staged tree for lane 'rtx3090' (expected {tmp_path / 'rtx3090'}/)"
    ]


def test_build_release_refuses_one_lanes_tree(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "staged")
    with pytest.raises(InputError, match="is one lane's staged tree"):
        check_release_inputs(tree, {"rtx4090": "build", "rtx5090": "carry"})


def test_build_release_accepts_a_parent_and_ignores_carried_lanes(tmp_path: Path) -> None:
    _tree(tmp_path / "rtx4090")
    check_release_inputs(tmp_path, {"rtx4090": "build", "rtx5090": "carry"})
    _tree(tmp_path)  # a stray build-info.json beside complete lane directories
    check_release_inputs(tmp_path, {"rtx4090": "build", "rtx5090": "carry"})


def test_inputs_that_is_a_file_says_not_a_directory(tmp_path: Path) -> None:
    # issue 36: `--inputs FILE` was reported as a missing `FILE/<lane>/` tree.
    inputs = tmp_path / "inputs"
    inputs.write_bytes(b"x")
    for call in (lambda: lane_staged_dir(inputs, "rtx4090"), lambda: check_release_inputs(inputs, {})):
        with pytest.raises(InputError) as err:
            call()
        (problem,) = err.value.problems
        assert (problem.file, problem.field, problem.message) == (str(inputs), "--inputs", "not a directory")
