"""reproducible.sorted_walk / sorted_walk_relative: every entry once, sorted by POSIX path, the
relative paths equal to ``relative_to(root).as_posix()`` (issue 13 cut them from the walk's strings)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ninfer_release.reproducible import sorted_walk, sorted_walk_relative


def _tree(root: Path) -> None:
    for rel in ["b/z.txt", "b/a b/é.txt", "a.txt", "a-b/x", "a/b/c/d.bin", "licenses/extra/f000001.txt", "Z"]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rel.encode())
    (root / "empty").mkdir()
    (root / "link.txt").symlink_to("a.txt")
    (root / "dirlink").symlink_to("b")


def _reference(root: Path) -> list[tuple[str, Path]]:
    found = [Path(d) / n for d, dirs, files in os.walk(root) for n in [*dirs, *files]]
    return [
        (p.relative_to(root).as_posix(), p)
        for p in sorted(found, key=lambda p: p.relative_to(root).as_posix())
    ]


@pytest.mark.parametrize("spelling", ["absolute", "trailing slash", "relative"])
def test_relative_paths_and_order_equal_relative_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    _tree(tmp_path / "t")
    monkeypatch.chdir(tmp_path)
    root = {"absolute": tmp_path / "t", "trailing slash": Path(f"{tmp_path}/t/"), "relative": Path("t")}[
        spelling
    ]
    got = sorted_walk_relative(root)
    assert got == _reference(root)
    assert sorted_walk(root) == [p for _, p in got]
    assert [r for r, _ in got] == sorted(r for r, _ in got)
    assert "dirlink" in [r for r, _ in got] and not any(r.startswith("dirlink/") for r, _ in got)


def test_a_directory_that_cannot_be_listed_is_reported(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_bytes(b"x")
    errors: list[OSError] = []
    assert sorted_walk_relative(not_a_dir, errors=errors) == []
    assert [e.filename for e in errors] == [str(not_a_dir)]
    with pytest.raises(OSError):
        sorted_walk(not_a_dir)
