"""The messages issue 15 lists: one clear line, the documented exit code, no internals."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from flow_support import RELEASE, REPO, cli, ok, samples


def test_verify_on_a_directory_that_is_not_a_set_names_it_once_exit_4(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a set")
    result = cli("verify", tmp_path)
    assert result.code == 4, result.text
    lines = result.err.splitlines()
    assert lines == [f"error: {tmp_path}: not an asset set (no SHA256SUMS, no *.zip package)"]
    assert result.err.count(str(tmp_path)) == 1


def test_dev_without_a_target_prints_usage_not_its_source() -> None:
    proc = subprocess.run([str(REPO / "dev")], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "set -euo pipefail" not in proc.stdout + proc.stderr
    assert proc.stderr.startswith("usage: ./dev TARGET")


def test_unreachable_registry_is_one_line_without_http_library_internals(tmp_path: Path) -> None:
    """Nothing listens on the port: the host and 'Connection refused', not urllib3's retry story."""
    import socket

    with socket.socket() as s:  # a free loopback port that nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    target = f"oci://127.0.0.1:{port}/omp-ninfer/rtx4090"
    for args in (("verify", f"{target}:v0.7.0-qwen38-4090-beta.2"), ("supersede", RELEASE, "--to", target)):
        result = cli(*args)
        assert result.code in (4, 7), result.text
        lines = result.err.splitlines()
        assert lines == [f"error: {target}: registry 127.0.0.1:{port} unreachable: Connection refused"], lines
        for internal in ("HTTPConnectionPool", "Max retries", "NewConnectionError", "urllib3", "Errno"):
            assert internal not in result.err


def test_one_lanes_directory_given_to_build_release_says_so(tmp_path_factory: pytest.TempPathFactory) -> None:
    src = samples(tmp_path_factory) / "rtx4090"
    out = tmp_path_factory.mktemp("one-lane") / "out"
    result = cli("build", "release", RELEASE, "--inputs", src, "--out", out, "--offline")
    assert result.code == 4, result.text
    assert result.err.splitlines() == [
        f"error: {src}: is one lane's staged tree (it holds build-info.json); build release needs "
        f"DIR/<lane>/ for each lane (rtx3090, rtx4090): give the directory holding them, or use "
        f"'build lane LANE --inputs {src}'"
    ]
    assert "cuda_arch" not in result.err
    assert not out.exists()
    # ... while build lane takes one lane's tree as it is
    ok(cli("build", "lane", "rtx4090", "--release", RELEASE, "--inputs", src, "--out", out, "--offline"))


def _definition_copy(tmp_path: Path) -> Path:
    import shutil

    for sub in ("manifests", "profiles", "releases", "packaging", "containers", "sbom"):
        shutil.copytree(REPO / sub, tmp_path / sub)
    return tmp_path / "manifests" / "v0.13.1.yaml"


@pytest.mark.parametrize(
    ("field", "value", "reported"),
    [
        ("cuda_arch", None, "lanes.rtx4090.cuda_arch: required for a windows-zip lane in build mode"),
        ("cuda_arch", "7", "lanes.rtx4090.cuda_arch: must be a string, got number 7 (quote it)"),
        ("cuda_version", None, "lanes.rtx4090.cuda_version: required for a windows-zip lane in build mode"),
    ],
)
def test_a_bad_lane_value_is_reported_once_never_as_none(
    tmp_path: Path, field: str, value: str | None, reported: str
) -> None:
    manifest = _definition_copy(tmp_path)
    lines = manifest.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("  rtx4090:"))
    at = next(i for i in range(start, len(lines)) if lines[i].strip().startswith(f"{field}:"))
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines[at] = "" if value is None else f"{indent}{field}: {value}\n"
    manifest.write_text("".join(lines))
    result = cli("manifest", "check", manifest)
    assert result.code == 3, result.text
    assert result.err.splitlines() == [f"error: {manifest}: {reported}"]
    assert "None" not in result.err


def test_verify_on_a_dir_store_names_the_reference_to_use(tmp_path: Path) -> None:
    """The README publishes to ``dir://store``; ``verify store`` says to name ``dir://store:TAG``."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (store / "index.json").write_text('{"schemaVersion": 2, "manifests": []}')
    result = cli("verify", store)
    assert result.code == 4, result.text
    assert result.err.splitlines() == [
        f"error: {store}: not an asset set (no SHA256SUMS, no *.zip package); "
        f"it is a dir:// store: verify dir://{store}:TAG"
    ]


def test_build_into_an_existing_out_names_clean(tmp_path: Path) -> None:
    """Re-running the README's build into the same ``--out`` says how to replace it (``--clean``)."""
    out = tmp_path / "out"
    out.mkdir()
    result = cli(
        "build", "release", RELEASE, "--inputs", tmp_path / "staged", "--out", out, "--offline", "--dry-run"
    )
    assert result.code == 4, result.text
    assert result.err.splitlines() == [
        f"error: {out}: already exists; refusing to overwrite (choose a new --out, or pass --clean to "
        "replace an earlier build's output)"
    ]
