"""Pinned wheel downloads into a cache outside the repo, and checked extraction of members.

A wheel is fetched with ``python -m pip download --no-deps --only-binary=:all: --platform
win_amd64 --python-version 3.11 NAME==VERSION`` into a temp dir inside the cache, checked
against its SHA-256 pin, then moved into place; a cached wheel is re-checked and reused, never
re-downloaded. Members are extracted by exact name only and checked against their own pins.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.hashing import CHUNK, sha256_file
from ninfer_release.progress import SILENT, Progress
from ninfer_release.samples._spec import PINS_FILE, WheelMember, WheelPin


@dataclass(frozen=True, kw_only=True)
class WheelUse:
    """A pinned wheel as used by one fetch: where it is and whether it was downloaded now."""

    package: str
    version: str
    filename: str
    sha256: str
    size: int
    path: Path
    downloaded: bool


def default_wheel_cache(env: Mapping[str, str]) -> Path:
    """The wheel cache directory: ``$NINFER_CACHE/wheels``, else ``$XDG_CACHE_HOME/ninfer-release/wheels``,
    else ``$HOME/.cache/ninfer-release/wheels`` (always outside the repo).

    Raises:
        InputError: none of ``NINFER_CACHE``, ``XDG_CACHE_HOME``, ``HOME`` is set.
    """
    if env.get("NINFER_CACHE"):
        return Path(env["NINFER_CACHE"]) / "wheels"
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "ninfer-release" / "wheels"
    if env.get("HOME"):
        return Path(env["HOME"]) / ".cache" / "ninfer-release" / "wheels"
    raise InputError("no wheel cache: set NINFER_CACHE (or HOME), or pass --cache")


def _pin_field(pin: WheelPin) -> str:
    return f"wheels[{pin.package}=={pin.version}]"


def _check_wheel_file(pin: WheelPin, path: Path, what: str) -> None:
    size = path.stat().st_size
    digest = sha256_file(path) if size == pin.size else None
    if digest != pin.sha256:
        got = f"SHA-256 {digest}" if digest is not None else f"size {size} bytes (pinned {pin.size})"
        raise IntegrityError(
            problems=[
                Problem(
                    file=str(path),
                    field=_pin_field(pin),
                    message=f"{what} wheel does not match its pin in {PINS_FILE}: {got}, pinned SHA-256 "
                    f"{pin.sha256}; delete the file to download it again",
                )
            ]
        )


def _use(pin: WheelPin, path: Path, *, downloaded: bool) -> WheelUse:
    """The pinned wheel as used from ``path``."""
    return WheelUse(
        package=pin.package,
        version=pin.version,
        filename=pin.filename,
        sha256=pin.sha256,
        size=pin.size,
        path=path,
        downloaded=downloaded,
    )


def _pip_download_command(pin: WheelPin, *, platform: str, python_version: str, dest: str) -> list[str]:
    """``pip download`` of exactly the pinned wheel for ``platform``/``python_version`` into ``dest``."""
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--platform",
        platform,
        "--python-version",
        python_version,
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        pin.requirement,
        "-d",
        dest,
    ]


def _run_pip(pin: WheelPin, cmd: list[str], env: Mapping[str, str] | None) -> None:
    """Run ``cmd`` (output captured; ``env`` ``None``: this process's environment).

    Raises:
        InputError: pip exited non-zero; the message carries its last meaningful stderr line.
    """
    proc = subprocess.run(cmd, capture_output=True, check=False, env=dict(env) if env is not None else None)
    if proc.returncode == 0:
        return
    lines = [
        ln
        for ln in proc.stderr.decode("utf-8", "replace").splitlines()
        if ln.strip() and "is ignored" not in ln
    ]
    detail = lines[-1].strip() if lines else "no output"
    raise InputError(
        problems=[
            Problem(
                file=PINS_FILE,
                field=_pin_field(pin),
                message=f"download of {pin.requirement} failed (pip exit {proc.returncode}): {detail}",
            )
        ]
    )


def _downloaded(pin: WheelPin, folder: Path) -> Path:
    """The pinned file pip wrote into ``folder``, checked against its pin.

    Raises:
        InputError: pip wrote other files than the pinned name (exit 4).
        IntegrityError: the file's size or SHA-256 differs from the pin (exit 5).
    """
    got = folder / pin.filename
    if not got.is_file():
        names = sorted(p.name for p in folder.iterdir())
        raise InputError(
            problems=[
                Problem(
                    file=PINS_FILE,
                    field=_pin_field(pin),
                    message=f"pip download {pin.requirement} gave {names}, not the pinned {pin.filename}",
                )
            ]
        )
    _check_wheel_file(pin, got, "downloaded")
    return got


def ensure_wheel(
    pin: WheelPin,
    *,
    cache: Path,
    platform: str,
    python_version: str,
    env: Mapping[str, str] | None = None,
    progress: Progress = SILENT,
) -> WheelUse:
    """Return the pinned wheel from ``cache``, downloading it with pip first if absent.

    ``env`` is the environment pip runs with (``None``: this process's). Size in bytes.

    Raises:
        IntegrityError: the cached or downloaded wheel's SHA-256 differs from the pin (exit 5).
        InputError: pip failed, or did not produce the pinned file name (exit 4); names the package.
    """
    path = cache / pin.filename
    if path.is_file():
        progress.step(f"checking cached {pin.filename}")
        _check_wheel_file(pin, path, "cached")
        return _use(pin, path, downloaded=False)
    cache.mkdir(parents=True, exist_ok=True)
    progress.step(f"downloading {pin.requirement} ({pin.size / 2**20:.1f} MiB) into {cache}")
    with tempfile.TemporaryDirectory(prefix=".download-", dir=cache) as tmp:
        cmd = _pip_download_command(pin, platform=platform, python_version=python_version, dest=tmp)
        _run_pip(pin, cmd, env)
        _downloaded(pin, Path(tmp)).replace(path)
    return _use(pin, path, downloaded=True)


def extract_member(wheel: Path, member: WheelMember, dest: Path) -> None:
    """Copy one pinned member of ``wheel`` to ``dest`` (created, mode 0644), checking its pin.

    Only the named member is read; nothing else in the wheel is extracted.

    Raises:
        IntegrityError: the member is missing, or its size or SHA-256 differs from the pin; ``dest``
            is removed.
    """

    def fail(message: str) -> IntegrityError:
        return IntegrityError(problems=[Problem(file=str(wheel), field=member.member, message=message)])

    with zipfile.ZipFile(wheel) as zf:
        try:
            info = zf.getinfo(member.member)
        except KeyError:
            raise fail(f"member is missing (pinned in {PINS_FILE})") from None
        if info.file_size != member.size:
            raise fail(f"member size {info.file_size} bytes differs from the pin {member.size}")
        h = hashlib.sha256()
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with zf.open(info) as src, os.fdopen(fd, "wb") as out:
                while chunk := src.read(CHUNK):
                    h.update(chunk)
                    out.write(chunk)
            dest.chmod(0o644)
            if h.hexdigest() != member.sha256:
                raise fail(f"member SHA-256 {h.hexdigest()} differs from the pin {member.sha256}")
        except BaseException:
            dest.unlink(missing_ok=True)
            raise
