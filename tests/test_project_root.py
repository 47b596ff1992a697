"""The project root comes from one place (issue 10, issue 15): ``--repo`` / ``NINFER_RELEASE_REPO``,
else a definition's project, else discovered upward from the working directory; none is exit 4.

Each CLI case runs the installed entry point as a subprocess with its own working directory (the
in-process runner shares the test's), so these prove the tool works from any directory.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from flow_support import REPO, nr_command
from ninfer_release.errors import InputError
from ninfer_release.projectroot import ENV_VAR, discover_root, resolve_root

MANIFEST = Path("manifests") / "v0.13.1.yaml"


def _run(*args: str | Path, cwd: Path, env_root: str | None = None) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    if env_root is not None:
        env[ENV_VAR] = env_root
    return subprocess.run(
        [*nr_command(), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def _staged_without_bin(tmp_path: Path) -> Path:
    staged = tmp_path / "staged"
    staged.mkdir()
    return staged


def test_discovered_from_a_subdirectory_of_the_checkout() -> None:
    """From ``docs/`` (no data folders there) the root is found upward: ``lock init`` reads the
    catalog of the checkout and reaches its own check (no bin/), not a root error."""
    assert discover_root(REPO / "docs") == REPO
    res = _run("lock", "init", "does-not-exist", cwd=REPO / "docs")
    assert res.returncode == 4, res.stderr
    assert "project root" not in res.stderr
    res = _run("manifest", "check", Path("..") / MANIFEST, cwd=REPO / "docs")
    assert res.returncode == 0, res.stderr


def test_unrelated_directory_with_repo_option_and_env(tmp_path: Path) -> None:
    """From a temp dir with no data folders: ``--repo`` (before or after the command) or the env
    var names the root, and the catalog there is what ``lock init`` reads."""
    staged = _staged_without_bin(tmp_path)
    for args in (("--repo", REPO, "lock", "init", staged), ("lock", "init", staged, "--repo", REPO)):
        res = _run(*args, cwd=tmp_path)
        assert res.returncode == 4 and "no bin/ directory" in res.stderr, res.stderr
    res = _run("lock", "init", staged, cwd=tmp_path, env_root=str(REPO))
    assert res.returncode == 4 and "no bin/ directory" in res.stderr, res.stderr
    # --repo wins over the environment; a --repo naming no directory is one line, exit 4.
    res = _run("--repo", tmp_path / "nowhere", "lock", "init", staged, cwd=tmp_path, env_root=str(REPO))
    assert res.returncode == 4, res.stderr
    assert res.stderr == f"error: {tmp_path / 'nowhere'}: --repo: project root is not a directory\n"
    # A release definition named by path from anywhere: its own project, as before.
    res = _run("manifest", "check", REPO / MANIFEST, cwd=tmp_path)
    assert res.returncode == 0, res.stderr


def test_unrelated_directory_without_repo_is_a_clean_exit_4(tmp_path: Path) -> None:
    staged = _staged_without_bin(tmp_path)
    for args in (("lock", "init", staged), ("samples", "fetch", "--out", tmp_path / "s", "--native-only")):
        res = _run(*args, cwd=tmp_path)
        assert res.returncode == 4, res.stderr
        assert res.stderr == (
            f"error: no ninfer-release project root in {tmp_path.resolve()} or its parents (a directory "
            f"holding manifests/, profiles/, sbom/); give --repo DIR or set {ENV_VAR}\n"
        )
        assert not (tmp_path / "s").exists()


def test_resolution_order(tmp_path: Path) -> None:
    """``--repo`` > env > the definition's project > discovery; an empty env value is unset."""
    project = tmp_path / "p"
    for name in ("manifests", "profiles", "sbom"):
        (project / name).mkdir(parents=True)
    (project / "docs").mkdir()
    other = tmp_path / "other"
    other.mkdir()
    definition = project / "manifests" / "x.yaml"

    def root(option: str | None, env: str | None, file: Path | None = None) -> Path:
        return resolve_root(option=option, env_value=env, cwd=project / "docs", project_file=file).path

    assert root(str(other), str(project)) == other.resolve()
    assert root(None, str(other), definition) == other.resolve()
    assert root(None, "", definition) == project.resolve()
    assert root(None, None) == project.resolve()
    hows = [
        resolve_root(option=o, env_value=e, cwd=project / "docs", project_file=f).how
        for o, e, f in (
            (str(other), None, None),
            (None, str(other), None),
            (None, None, definition),
            (None, None, None),
        )
    ]
    assert hows == ["--repo", ENV_VAR, "definition", "discovered"]
    (project / "sbom").rmdir()  # no longer a root: discovery walks past it and finds none
    with pytest.raises(InputError, match="give --repo DIR"):
        root(None, None)
