""".github/workflows/prerelease.yml: one job per lane, then one job that assembles, verifies and
publishes (DESIGN.md §8). Checked against the release definition and the real CLI, not by eye.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from conftest import need_tool
from flow_support import RELEASE, REPO, TAGS, cli, link_project, registry_namespace, release_out

WORKFLOW = REPO / ".github" / "workflows" / "prerelease.yml"
#: Shell operators that end one command (shlex with punctuation_chars yields them as tokens).
_OPERATORS = {";", "&&", "||", "|", "(", ")", "&", ";;"}
_SHELL_WORDS = {"do", "then", "else", "if", "while", "for", "done", "fi"}


def _workflow() -> dict[str, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def _definition_lanes() -> list[str]:
    doc = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    return list(doc["lanes"])


def _steps(job: str) -> list[dict[str, Any]]:
    steps = _workflow()["jobs"][job]["steps"]
    assert isinstance(steps, list)
    return steps


def _invocations(script: str) -> list[list[str]]:
    """Every ``ninfer-release ARGS`` command in a shell script, as argument lists."""
    found: list[list[str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        code = line.split(" # ", 1)[0]
        lexer = shlex.shlex(code, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
        for i, tok in enumerate(tokens):
            if tok != "ninfer-release":
                continue
            args: list[str] = []
            for t in tokens[i + 1 :]:
                if t in _OPERATORS or t in _SHELL_WORDS:
                    break
                args.append(t)
            found.append(args)
    return found


def _all_invocations() -> list[tuple[str, list[str]]]:
    out = []
    for job, spec in _workflow()["jobs"].items():
        for step in spec["steps"]:
            if "run" in step:
                out += [(job, args) for args in _invocations(step["run"])]
    return out


def _command(args: list[str]) -> tuple[list[str], click.Command]:
    """Resolve ``args`` (global options first) to the command path and the Click command object."""
    from ninfer_release.cli import cli as root

    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest.pop(0)
    path: list[str] = []
    cmd: click.Command = root
    while isinstance(cmd, click.Group):
        assert rest, f"no sub-command in {args}"
        name = rest.pop(0)
        sub = cmd.commands.get(name)
        assert sub is not None, f"ninfer-release {' '.join([*path, name])}: no such command"
        path.append(name)
        cmd = sub
    return path, cmd


def test_matrix_lanes_equal_the_release_definition() -> None:
    """The matrix has one job per lane id of manifests/v0.13.1.yaml -- no more, no fewer."""
    matrix = _workflow()["jobs"]["lane"]["strategy"]["matrix"]["lane"]
    assert sorted(matrix) == sorted(_definition_lanes()) == ["rtx3090", "rtx4090", "rtx5090"]
    assert len(set(matrix)) == len(matrix)


def test_release_job_needs_every_lane_job() -> None:
    jobs = _workflow()["jobs"]
    assert set(jobs) == {"lane", "release", "github"}
    assert jobs["release"]["needs"] in ("lane", ["lane"])
    # the GitHub prerelease step (tests/test_github_step.py) runs after the release job, and only
    # where GitHub is (a repository variable turns it on)
    assert jobs["github"]["needs"] in ("release", ["release"])
    assert jobs["github"]["if"] == "vars.NINFER_GITHUB_RELEASES == 'true'"


def test_lane_job_fetches_builds_and_uploads_its_lane() -> None:
    """samples fetch, build lane <matrix.lane> --out out/<lane>, then upload-artifact of out/<lane>."""
    steps = _steps("lane")
    invocations = [args for s in steps if "run" in s for args in _invocations(s["run"])]
    assert ["samples", "fetch", "--out", "staged"] in invocations
    builds = [a for a in invocations if a[:2] == ["build", "lane"]]
    assert len(builds) == 1
    build = builds[0]
    assert build[2] == "${{ matrix.lane }}"
    assert build[build.index("--out") + 1] == "out/${{ matrix.lane }}"
    assert build[build.index("--inputs") + 1] == "staged"
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert len(uploads) == 1
    assert uploads[0]["with"]["path"] == "out/${{ matrix.lane }}"
    assert uploads[0]["with"]["name"] == "lane-${{ matrix.lane }}"


def test_release_job_downloads_assembles_verifies_and_publishes_drafts() -> None:
    steps = _steps("release")
    downloads = [s for s in steps if str(s.get("uses", "")).startswith("actions/download-artifact@")]
    assert len(downloads) == 1 and downloads[0]["with"]["pattern"] == "lane-*"
    lanes_dir = downloads[0]["with"]["path"]
    invocations = [
        (s.get("working-directory"), args) for s in steps if "run" in s for args in _invocations(s["run"])
    ]
    assemble = [(wd, a) for wd, a in invocations if a[:2] == ["manifest", "assemble"]]
    assert assemble == [
        (lanes_dir, ["manifest", "assemble", "*/*.lane.json", "--out", "release-manifest.json"])
    ]
    verifies = [a for _, a in invocations if a[:1] == ["verify"]]
    assert any(a[1] == "$set_dir" for a in verifies) and any(
        a[1].startswith("oci://$REGISTRY/") for a in verifies
    )
    # One digest pins everything: every set is verified against the assembled release manifest.
    assert all(a[a.index("--release-manifest") + 1] == "release-manifest.json" for a in verifies)
    publishes = [a for _, a in invocations if a[:1] == ["publish"]]
    assert len(publishes) == 1
    publish = publishes[0]
    assert "--draft" in publish
    assert publish[publish.index("--to") + 1] == "oci://$REGISTRY/omp-ninfer/$lane"


def test_release_job_passes_registry_credentials_from_repository_secrets() -> None:
    """Publishing to a real registry needs credentials: the release job hands the repository
    secrets to ninfer-release's variables (docs/publishing.md, "Registry client"), never inline."""
    job = _workflow()["jobs"]["release"]
    env = job["env"]
    assert env["NINFER_REGISTRY_USERNAME"] == "${{ secrets.NINFER_REGISTRY_USERNAME || '' }}"
    assert env["NINFER_REGISTRY_PASSWORD"] == "${{ secrets.NINFER_REGISTRY_PASSWORD || '' }}"
    assert env["GITHUB_TOKEN"] == "${{ secrets.GITHUB_TOKEN || '' }}"
    assert job["permissions"]["packages"] == "write"


def test_every_command_in_the_workflow_exists_with_its_options() -> None:
    """Each ``ninfer-release …`` line names a real command (``--help`` exits 0) and only its options."""
    invocations = _all_invocations()
    assert len(invocations) >= 7
    for job, args in invocations:
        path, cmd = _command(args)
        res = cli(*path, "--help")
        assert res.code == 0, (job, args, res.text)
        known = {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
        used = {a for a in args[len(path) :] if a.startswith("-")}
        assert used <= known, f"{job}: ninfer-release {' '.join(path)} has no {sorted(used - known)}"


def test_only_pinned_major_versions_of_known_actions() -> None:
    """Every ``uses:`` is one of GitHub's own actions at a major-version tag."""
    allowed = {
        "actions/checkout",
        "actions/setup-python",
        "actions/cache",
        "actions/upload-artifact",
        "actions/download-artifact",
    }
    for spec in _workflow()["jobs"].values():
        for step in spec["steps"]:
            if "uses" in step:
                name, _, version = step["uses"].partition("@")
                assert name in allowed and re.fullmatch(r"v\d+", version), step["uses"]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("ninfer-release verify a --sums-sha256 x", [["verify", "a", "--sums-sha256", "x"]]),
        ('for r in */*.j; do ninfer-release verify "$d"; done', [["verify", "$d"]]),
        ("ninfer-release build lane \\\n  x --out y && cmp a b", [["build", "lane", "x", "--out", "y"]]),
    ],
)
def test_invocation_parser(script: str, expected: list[list[str]]) -> None:
    """The shell scanning the checks above rely on finds each command and stops at operators."""
    assert _invocations(script) == expected


def test_a_misspelt_command_would_be_caught() -> None:
    """The command check fails for a command or option the CLI does not have."""
    with pytest.raises(AssertionError, match="no such command"):
        _command(["manifest", "asemble", "x"])
    _, cmd = _command(["verify", "x"])
    assert "--release-manifest" in {o for p in cmd.params for o in p.opts}
    assert "--draft" not in {o for p in cmd.params for o in p.opts}


# --- running the workflow locally ----------------------------------------------------------------

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _expand(text: str, matrix: dict[str, str]) -> str:
    """Evaluate the ``${{ … }}`` forms this workflow uses, as a run without inputs/vars would."""

    def one(m: re.Match[str]) -> str:
        for operand in (o.strip() for o in m.group(1).split("||")):
            if operand.startswith("'") and operand.endswith("'"):
                return operand[1:-1]
            if operand.startswith("matrix."):
                return matrix[operand.removeprefix("matrix.")]
            # inputs.* / vars.* are unset in a local run: fall through to the default.
        raise AssertionError(f"cannot evaluate {m.group(0)}")

    return _EXPR.sub(one, text)


def _run_job(job: str, workspace: Path, artifacts: Path, matrix: dict[str, str], env: dict[str, str]) -> None:
    """Run ``job``'s steps in ``workspace`` as the runner would (bash -e), artifacts as directories."""
    spec = _workflow()["jobs"][job]
    workspace.mkdir(parents=True)
    link_project(workspace)
    full = dict(os.environ)
    full["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full['PATH']}"
    for scope in (_workflow().get("env", {}), spec.get("env", {})):
        full.update({k: _expand(str(v), matrix) for k, v in scope.items()})
    full.update(env)
    for step in spec["steps"]:
        uses = str(step.get("uses", ""))
        artifact_step = uses.startswith(("actions/upload-artifact@", "actions/download-artifact@"))
        with_ = {k: _expand(str(v), matrix) for k, v in step.get("with", {}).items()} if artifact_step else {}
        if uses.startswith("actions/upload-artifact@"):
            src = workspace / with_["path"]
            assert src.exists(), f"{job}: nothing to upload at {with_['path']}"
            if src.is_dir():
                shutil.copytree(src, artifacts / with_["name"])
            else:  # one file: the artifact holds it at its top level
                (artifacts / with_["name"]).mkdir()
                shutil.copy2(src, artifacts / with_["name"] / src.name)
        elif uses.startswith("actions/download-artifact@"):
            for art in sorted(artifacts.glob(with_["pattern"])):
                shutil.copytree(art, workspace / with_["path"] / art.name)
        elif "run" in step and "pip install" not in step["run"]:  # the package is installed already
            cwd = workspace / step.get("working-directory", ".")
            res = subprocess.run(
                ["bash", "-e", "-c", _expand(step["run"], matrix)],
                cwd=cwd,
                env=full,
                capture_output=True,
                text=True,
                check=False,
            )
            assert res.returncode == 0, f"{job} {matrix}: {step.get('name')}\n{res.stdout}\n{res.stderr}"


def test_workflow_runs_locally_and_assembles_the_single_process_manifest(
    registry: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The workflow's own scripts, run here: three lane jobs side by side (separate workspaces),
    artifacts handed over as directories, then the release job (assemble, cmp against a
    single-process build, verify, publish drafts to the loopback registry, verify them back)."""
    need_tool("jq")
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    lanes = _workflow()["jobs"]["lane"]["strategy"]["matrix"]["lane"]
    with ThreadPoolExecutor(max_workers=len(lanes)) as pool:
        jobs = [
            pool.submit(_run_job, "lane", tmp_path / f"lane-{lane}", artifacts, {"lane": lane}, {})
            for lane in lanes
        ]
        for job in jobs:
            job.result()
    assert sorted(p.name for p in artifacts.iterdir()) == sorted(f"lane-{lane}" for lane in lanes)
    # The job's REGISTRY, inside a repository namespace of this test's own.
    reg = f"{registry}/{registry_namespace(tmp_path_factory, 'workflow')}"
    _run_job("release", tmp_path / "release", artifacts, {}, {"REGISTRY": reg})
    assembled = artifacts / "release-manifest" / "release-manifest.json"
    assert assembled.read_bytes() == (release_out(tmp_path_factory) / "release-manifest.json").read_bytes()
    for lane in ("rtx4090", "rtx3090"):
        res = cli("verify", f"oci://{reg}/omp-ninfer/{lane}:{TAGS[lane]}.draft")
        assert res.code == 0, res.text


# --- the lane matrix from the definition (manifest lanes; issue 33 item 8) ----------------------


def test_manifest_lanes_json_of_v0_13_1_is_exact() -> None:
    """``manifest lanes --json``: each lane with its CI kind, the native lanes listed apart."""
    res = cli("--json", "manifest", "lanes", str(RELEASE))
    assert res.code == 0, res.text
    assert json.loads(res.text) == {
        "ok": True,
        "version": "v0.13.1",
        "native": ["rtx3090", "rtx4090"],
        "lanes": [
            {
                "lane": "rtx3090",
                "kind": "native",
                "mode": "build",
                "component_tag": "v0.7.0-qwen38-3090-beta.2",
                "profile_id": "qwen38-3090-native-v0.7.0-beta.2",
            },
            {
                "lane": "rtx4090",
                "kind": "native",
                "mode": "build",
                "component_tag": "v0.7.0-qwen38-4090-beta.2",
                "profile_id": "qwen38-4090-native-v0.7.0-beta.2",
            },
            {
                "lane": "rtx5090",
                "kind": "carried",
                "mode": "carry",
                "component_tag": "v0.7.0-qwen38-5090-beta.2",
                "profile_id": "qwen38-5090-v0.13.0",
            },
        ],
    }


def test_manifest_lanes_follows_a_modified_definition(tmp_path: Path) -> None:
    """A definition without the RTX 3090 lane gives a matrix without it: nothing is hard-coded."""
    doc = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    del doc["lanes"]["rtx3090"]
    doc["superseded"] = [s for s in doc["superseded"] if "-3090-" not in s["tag"]]
    modified = tmp_path / "two-lanes.yaml"
    modified.write_text(yaml.safe_dump(doc), encoding="utf-8")
    res = cli("--json", "--repo", str(REPO), "manifest", "lanes", str(modified))
    assert res.code == 0, res.text
    got = json.loads(res.text)
    assert [(e["lane"], e["kind"]) for e in got["lanes"]] == [("rtx4090", "native"), ("rtx5090", "carried")]
    assert got["native"] == ["rtx4090"]
