"""Shared helpers for the end-to-end flow tests (build -> verify -> publish), run as a user would.

The expensive steps run once per test session and are cached here (module globals keyed by the
session's base temp dir), so every ``test_build_*`` / ``test_verify_*`` / ``test_flow_*`` /
``test_assemble*`` module shares them:

* :func:`samples` -- ``ninfer-release samples fetch`` into ``<base>/samples`` (pinned wheels,
  cached under ``~/.cache/ninfer-release``);
* :func:`release_out` -- ``ninfer-release build release manifests/v0.13.1.yaml --offline``;
* :func:`qualified_out` -- the same with qualification receipts (``--receipts``), so both native
  sets are ``qualified``.

Commands run either in-process through :func:`ninfer_release.cli.main` (:func:`cli`) or as a
separate process of the installed console script (:func:`run_nr`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
#: The data folders of a project root (src/ninfer_release/projectroot.py): a workspace that links
#: them is a project root as a checkout is, so commands run there find it.
DATA_FOLDERS = ("manifests", "profiles", "packaging", "containers", "sbom", "releases", "samples")


def link_project(workspace: Path, *, skip: tuple[str, ...] = ()) -> None:
    """Symlink the checkout's data folders (but ``skip``) into ``workspace``, as a CI checkout has them."""
    for name in DATA_FOLDERS:
        if name not in skip:
            (workspace / name).symlink_to(REPO / name)


RELEASE = REPO / "manifests" / "v0.13.1.yaml"
NATIVE_LANES = ("rtx4090", "rtx3090")
ALL_LANES = ("rtx3090", "rtx4090", "rtx5090")
TAGS = {
    "rtx4090": "v0.7.0-qwen38-4090-beta.2",
    "rtx3090": "v0.7.0-qwen38-3090-beta.2",
    "rtx5090": "v0.7.0-qwen38-5090-beta.2",
}
SOURCE_COMMIT = "7a25cd72f490183e4113f1e84e68e36d653ddd28"
PROFILE_IDS = {
    "rtx4090": "qwen38-4090-native-v0.7.0-beta.2",
    "rtx3090": "qwen38-3090-native-v0.7.0-beta.2",
}
#: The 10 hashed entries of the asset contract, in contract order (DESIGN.md §4).
ENTRY_SUFFIXES = (
    ".zip",
    ".spdx.json",
    ".cdx.json",
    ".config.toml",
    ".profile.json",
    ".model.json",
    ".qualification.json",
    ".provenance.json",
    ".route.json",
    ".manifest.json",
)
#: A source-date epoch other than the definition's (1795132800): another release's bytes.
OTHER_EPOCH = "1795219200"


def stem(lane: str) -> str:
    """Package stem of a native lane: ``ninfer-<component-tag>-windows-x64``."""
    return f"ninfer-{TAGS[lane]}-windows-x64"


def set_names(lane: str) -> list[str]:
    """The exact 11 file names of ``lane``'s asset set, sorted."""
    return sorted([stem(lane) + s for s in ENTRY_SUFFIXES] + ["SHA256SUMS"])


def nr_command() -> list[str]:
    """How to start the CLI as a separate process (the venv's console script)."""
    script = Path(sys.executable).parent / "ninfer-release"
    return [str(script)] if script.exists() else [sys.executable, "-m", "ninfer_release"]


def run_nr(
    *args: str | Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    umask: int | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``ninfer-release ARGS`` as a subprocess; ``env`` entries override the inherited ones.

    ``timeout`` (seconds) makes a hang a test failure (``subprocess.TimeoutExpired``)."""
    full = dict(os.environ)
    if env:
        full.update(env)

    def _preexec() -> None:
        if umask is not None:
            os.umask(umask)

    return subprocess.run(
        [*nr_command(), *map(str, args)],
        env=full,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=_preexec if umask is not None else None,
        timeout=timeout,
    )


def start_nr(*args: str | Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``ninfer-release ARGS`` as a subprocess without waiting (for jobs that run side by side)."""
    full = dict(os.environ)
    if env:
        full.update(env)
    return subprocess.Popen(
        [*nr_command(), *map(str, args)],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@dataclass(frozen=True, kw_only=True)
class Result:
    """Exit code and captured output of one CLI run."""

    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def cli(*args: str | Path, env: Mapping[str, str] | None = None) -> Result:
    """Run the CLI in-process through :func:`ninfer_release.cli.main` (as the console script does)."""
    from ninfer_release.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    if env:
        os.environ.update(env)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(a) for a in args])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return Result(code=code, out=out.getvalue(), err=err.getvalue())


def ok(result: Result | subprocess.CompletedProcess[str]) -> None:
    """Fail with the command's output unless it exited 0."""
    code = result.code if isinstance(result, Result) else result.returncode
    text = result.text if isinstance(result, Result) else result.stdout + result.stderr
    assert code == 0, text


# --- session-wide cached work --------------------------------------------------------------------

_CACHE: dict[tuple[str, str], Path] = {}


def _base(factory: pytest.TempPathFactory) -> Path:
    return factory.getbasetemp()


def _cached(factory: pytest.TempPathFactory, key: str) -> Path | None:
    return _CACHE.get((str(_base(factory)), key))


def _remember(factory: pytest.TempPathFactory, key: str, path: Path) -> Path:
    _CACHE[(str(_base(factory)), key)] = path
    return path


def samples(factory: pytest.TempPathFactory) -> Path:
    """``samples fetch`` once per session: ``S/rtx4090`` and ``S/rtx3090``."""
    hit = _cached(factory, "samples")
    if hit is not None:
        return hit
    out = factory.mktemp("flow") / "samples"
    ok(cli("samples", "fetch", "--out", out))
    return _remember(factory, "samples", out)


def release_out(factory: pytest.TempPathFactory) -> Path:
    """``build release manifests/v0.13.1.yaml --offline`` once per session (unqualified sets)."""
    hit = _cached(factory, "release")
    if hit is not None:
        return hit
    src = samples(factory)
    out = factory.mktemp("flow") / "release"
    ok(cli("build", "release", RELEASE, "--inputs", src, "--out", out, "--offline"))
    return _remember(factory, "release", out)


def release_manifest(factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The parsed ``release-manifest.json`` of :func:`release_out`."""
    doc = json.loads((release_out(factory) / "release-manifest.json").read_bytes())
    assert isinstance(doc, dict)
    return doc


def receipt(lane: str, config_sha256: str, package_sha256: str, **override: Any) -> dict[str, Any]:
    """A schema-2 qualification receipt for ``lane`` naming ``config_sha256`` and ``package_sha256``
    (docs/staged-inputs.md); ``override`` replaces or adds fields."""
    doc: dict[str, Any] = {
        "schema": 2,
        "lane": lane,
        "source_commit": SOURCE_COMMIT,
        "profile_id": PROFILE_IDS[lane],
        "config_sha256": config_sha256,
        "package_sha256": package_sha256,
        "gates": {"G1": "pass", "G2": "pass", "G22": "not_applicable"},
        "measurements": {"c1_decode_tok_s": 150.94 if lane == "rtx4090" else 84.06},
    }
    doc.update(override)
    return doc


def package_sha256(lane_entry: Mapping[str, Any]) -> str:
    """The package zip's SHA-256 a release manifest's lane entry lists."""
    (digest,) = [e["sha256"] for e in lane_entry["entries"] if e["name"].endswith(".zip")]
    return str(digest)


def draft_receipt(set_dir: Path, **override: Any) -> dict[str, Any]:
    """A receipt for the draft set in ``set_dir``: its lane, config and package as its SHA256SUMS lists."""
    from ninfer_release.releases import receipt_template

    tmpl = receipt_template(set_dir)
    return {**receipt(tmpl.lane, tmpl.config_sha256, tmpl.package_sha256), **override}


def write_receipts(directory: Path, factory: pytest.TempPathFactory, drafts: Path | None = None) -> Path:
    """``DIR/<lane>/run-1.json`` for both native lanes, each naming the config and package bytes of
    the draft sets in ``drafts`` (default: :func:`release_out`)."""
    drafts = release_out(factory) if drafts is None else drafts
    for lane in NATIVE_LANES:
        if not (drafts / lane).is_dir():
            continue
        (directory / lane).mkdir(parents=True, exist_ok=True)
        doc = draft_receipt(drafts / lane)
        (directory / lane / "run-1.json").write_text(json.dumps(doc, indent=2) + "\n")
    return directory


def qualified_out(factory: pytest.TempPathFactory) -> Path:
    """``build release --receipts R --offline`` once per session: both native sets ``qualified``."""
    hit = _cached(factory, "qualified")
    if hit is not None:
        return hit
    work = factory.mktemp("flow")
    receipts = write_receipts(work / "receipts", factory)
    out = work / "qualified"
    ok(
        cli(
            "build",
            "release",
            RELEASE,
            "--inputs",
            samples(factory),
            "--out",
            out,
            "--receipts",
            receipts,
            "--offline",
        )
    )
    return _remember(factory, "qualified", out)


# --- small file helpers --------------------------------------------------------------------------


def gone(pid: int) -> bool:
    """True when ``pid`` is no child of ours any more (reaped)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def flip_byte(path: Path, offset: int | None = None) -> int:
    """XOR 0x01 into the byte at ``offset`` (default: the middle) of ``path``; returns the offset."""
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if offset is None else offset
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    return at


def tree_digests(root: Path) -> dict[str, str]:
    """``relative path -> SHA-256`` of every regular file under ``root``."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def reseal(set_dir: Path) -> None:
    """Rewrite ``SHA256SUMS`` over the 10 entries as they now are (GNU text form, sorted, LF)."""
    lines = [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n"
        for p in sorted(set_dir.iterdir(), key=lambda p: p.name.encode())
        if p.name != "SHA256SUMS"
    ]
    (set_dir / "SHA256SUMS").write_bytes("".join(lines).encode())


def registry_namespace(factory: pytest.TempPathFactory, name: str) -> str:
    """A repository prefix private to this test session and ``name``, so tests sharing one registry
    (or a long-lived ``NINFER_REGISTRY``) never see each other's tags."""
    session = re.sub(r"[^a-z0-9]+", "-", f"{_base(factory).name}-{os.getpid()}".lower()).strip("-")
    return f"{session}/{name}"


def record_forks(monkeypatch: Any) -> list[int]:
    """The pid of every verify scan worker forked from now on (recorded by the parent as each
    ``releases._scan_worker.ForkedScan`` is made), through ``monkeypatch``."""
    from ninfer_release.releases import _scan_worker

    pids: list[int] = []
    real = _scan_worker.ForkedScan.__init__

    def init(self: _scan_worker.ForkedScan, pid: int, *args: Any) -> None:
        pids.append(pid)
        real(self, pid, *args)

    monkeypatch.setattr(_scan_worker.ForkedScan, "__init__", init)
    return pids
