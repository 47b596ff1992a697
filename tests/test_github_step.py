"""The workflow's GitHub step (``jobs.github`` of .github/workflows/prerelease.yml), run here.

GitHub itself cannot be reached from here, so the step's own script runs against two stand-ins:
a ``gh`` on PATH that keeps releases in a directory (the subset of ``gh release`` the step uses,
with gh's rule that ``upload`` without ``--clobber`` refuses an existing asset name), and nginx
serving that directory over TLS as ``…/releases/download/<tag>/<name>``, so the step's
``verify https://…`` runs for real. Checked: prereleases created, every asset uploaded with its
bytes, verified by URL; a rerun uploads nothing; an existing asset with other bytes is never
replaced; an over-budget asset stops the step before anything is created or uploaded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import need_tool
from flow_support import NATIVE_LANES, REPO, TAGS, qualified_out, set_names, stem
from http_support import Nginx
from test_flow_workflow import _workflow

OWNER_REPO = "alphastorm/omp-ninfer"

FAKE_GH = textwrap.dedent(
    '''\
    #!/usr/bin/env python3
    """A stand-in for the part of `gh release` the workflow's GitHub step uses."""
    import json, os, shutil, sys
    from pathlib import Path

    assets = Path(os.environ["FAKE_GH_ASSETS"])  # served as …/releases/download/<tag>/<name>
    meta = Path(os.environ["FAKE_GH_META"])
    with open(meta / "calls.log", "a") as log:
        log.write(" ".join(sys.argv[1:]) + "\\n")
    args = sys.argv[1:]
    assert args[0] == "release", args
    cmd, tag, rest = args[1], args[2], args[3:]
    record = meta / f"{tag}.json"
    if cmd == "view":
        if not record.exists():
            sys.stderr.write("release not found\\n")
            sys.exit(1)
        if rest[:2] == ["--json", "assets"]:
            for p in sorted((assets / tag).iterdir()):
                print(p.name)
        sys.exit(0)
    if cmd == "create":
        assert not record.exists()
        record.write_text(json.dumps({"prerelease": "--prerelease" in rest, "draft": "--draft" in rest}))
        (assets / tag).mkdir(parents=True)
        sys.exit(0)
    if cmd == "upload":
        for f in rest:
            dest = assets / tag / Path(f).name
            if dest.exists():  # gh: without --clobber an existing asset name is an error
                sys.stderr.write(f"asset under the same name already exists: {dest.name}\\n")
                sys.exit(1)
            shutil.copyfile(f, dest)
        sys.exit(0)
    if cmd == "download":
        name = rest[rest.index("--pattern") + 1]
        shutil.copyfile(assets / tag / name, Path(rest[rest.index("--dir") + 1]) / name)
        sys.exit(0)
    sys.exit(f"fake gh: unsupported {args}")
    '''
)


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    server = Nginx.start(tmp_path_factory.mktemp("gh-nginx"))
    try:
        yield server
    finally:
        server.stop()


def _step_script() -> tuple[str, str]:
    steps = _workflow()["jobs"]["github"]["steps"]
    (step,) = [s for s in steps if "gh-release-upload.sh" in s.get("run", "")]
    return step["run"], step["working-directory"]


def _workspace(tmp_path: Path, factory: pytest.TempPathFactory, manifest: Path | None = None) -> Path:
    """The job's workspace after its download steps: lanes/lane-<lane>/… and the release manifest."""
    ws = tmp_path / "ws"
    (ws / "lanes").mkdir(parents=True)
    (ws / ".github").symlink_to(REPO / ".github")
    (ws / "manifests").symlink_to(REPO / "manifests" if manifest is None else manifest.parent)
    qual = qualified_out(factory)
    for lane in NATIVE_LANES:
        shutil.copytree(qual / lane, ws / "lanes" / f"lane-{lane}" / lane)
        shutil.copy(qual / f"{lane}.lane.json", ws / "lanes" / f"lane-{lane}" / f"{lane}.lane.json")
    shutil.copy(qual / "release-manifest.json", ws / "lanes" / "release-manifest.json")
    return ws


def _assets(server: Nginx, meta: Path) -> Path:
    """Where this test's stand-in GitHub keeps (and nginx serves) release assets."""
    return server.root / meta.parent.name / OWNER_REPO / "releases" / "download"


def _run_step(ws: Path, server: Nginx, meta: Path) -> subprocess.CompletedProcess[str]:
    need_tool("jq")
    script, workdir = _step_script()
    bin_dir = meta / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "gh").write_text(FAKE_GH.replace("#!/usr/bin/env python3", f"#!{sys.executable}", 1))
    (bin_dir / "gh").chmod(0o755)
    assets = _assets(server, meta)
    assets.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "RELEASE": "manifests/v0.13.1.yaml",
        "GH_REPO": OWNER_REPO,
        "DOWNLOAD_BASE": f"{server.base}/{assets.relative_to(server.root)}",
        "SSL_CERT_FILE": str(server.ca),  # the stand-in's CA, read by Python's default TLS context
        "FAKE_GH_ASSETS": str(assets),
        "FAKE_GH_META": str(meta),
    }
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=ws / workdir, env=env, capture_output=True, text=True, check=False
    )


def _calls(meta: Path) -> list[str]:
    log = meta / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_step_creates_prereleases_uploads_and_verifies_by_url(
    nginx: Nginx, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    meta = tmp_path / "meta"
    meta.mkdir()
    ws = _workspace(tmp_path, tmp_path_factory)
    res = _run_step(ws, nginx, meta)
    assert res.returncode == 0, res.stdout + res.stderr
    assets = _assets(nginx, meta)
    for lane in NATIVE_LANES:
        tag = TAGS[lane]
        assert json.loads((meta / f"{tag}.json").read_text()) == {"prerelease": True, "draft": False}
        assert sorted(p.name for p in (assets / tag).iterdir()) == set_names(lane)
        for name in set_names(lane):
            assert (assets / tag / name).read_bytes() == (
                qualified_out(tmp_path_factory) / lane / name
            ).read_bytes()
        verified = f"{nginx.base}/{assets.relative_to(nginx.root)}/{tag}/: OK ("
        assert any(line.startswith(verified) and stem(lane) in line for line in res.stdout.splitlines())
    # A rerun creates and uploads nothing: every asset is already there with the same bytes.
    before = len(_calls(meta))
    again = _run_step(_rerun_workspace(ws), nginx, meta)
    assert again.returncode == 0, again.stdout + again.stderr
    new = _calls(meta)[before:]
    assert not [c for c in new if c.startswith(("release create", "release upload"))], new
    assert "0 uploaded, 11 already there with the same bytes" in again.stdout


def _rerun_workspace(ws: Path) -> Path:
    shutil.rmtree(ws / "lanes" / "github-assets")  # a fresh runner: the files:// layout is redone
    return ws


def test_an_existing_asset_with_other_bytes_is_never_replaced(
    nginx: Nginx, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    meta = tmp_path / "meta"
    meta.mkdir()
    assets = _assets(nginx, meta)
    tag = TAGS["rtx4090"]
    # a release published earlier, holding a route block with other bytes
    (assets / tag).mkdir(parents=True)
    (meta / f"{tag}.json").write_text(json.dumps({"prerelease": True, "draft": False}))
    route = stem("rtx4090") + ".route.json"
    (assets / tag / route).write_bytes(b'{"other": "bytes"}\n')
    res = _run_step(_workspace(tmp_path, tmp_path_factory), nginx, meta)
    assert res.returncode == 7, res.stdout + res.stderr
    assert (
        f"release {tag}: asset {route} already exists with other bytes; refusing to replace it" in res.stderr
    )
    assert (assets / tag / route).read_bytes() == b'{"other": "bytes"}\n'
    assert not [c for c in _calls(meta) if c.startswith(f"release upload {tag}")]


def test_an_over_budget_asset_stops_the_step_before_any_upload(
    nginx: Nginx, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    repo = tmp_path / "repo"
    (repo / "manifests").mkdir(parents=True)
    for name in ("packaging", "containers", "releases", "sbom", "profiles"):
        (repo / name).symlink_to(REPO / name, target_is_directory=True)
    text = (REPO / "manifests" / "v0.13.1.yaml").read_text()
    (repo / "manifests" / "v0.13.1.yaml").write_text(
        text.replace("\ncomponents:\n", "\nasset_budget_bytes: 100000\n\ncomponents:\n", 1)
    )
    meta = tmp_path / "meta"
    meta.mkdir()
    res = _run_step(_workspace(tmp_path, tmp_path_factory, repo / "manifests" / "v0.13.1.yaml"), nginx, meta)
    assert res.returncode == 7, res.stdout + res.stderr
    assert "over the asset budget of 100,000 bytes" in res.stderr
    assert _calls(meta) == []  # gh was never called: nothing created, nothing uploaded
