"""The build's self-check reuse (issue 13) attacked: a zip that changed after its scan never passes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from flow_support import RELEASE, samples
from ninfer_release.errors import IntegrityError


def _flip_byte_of_the_staged_zip(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Change one byte of the zip after the self-check scanned it (before or after the seal)."""
    from ninfer_release.build import _native

    real: Any = getattr(_native, "seal_native_set")  # noqa: B009 - not re-exported

    def damaged(stage: Path, **kwargs: Any) -> Any:
        def flip(directory: Path) -> None:
            (zip_path,) = directory.glob("*.zip")
            with zip_path.open("r+b") as f:
                f.seek(200)
                b = f.read(1)
                f.seek(200)
                f.write(bytes([b[0] ^ 0xFF]))
            # A later write: its mtime moves on (within one tick of the file system's clock a
            # same-size rewrite keeps the mtime; that window is not what this test is about).
            st = zip_path.stat()
            os.utime(zip_path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))

        if where == "before-seal":
            flip(stage)
            return real(stage, **kwargs)
        sealed = real(stage, **kwargs)
        flip(stage)  # the staged set is renamed into place when the lane's stage closes
        return sealed

    monkeypatch.setattr(_native, "seal_native_set", damaged)


@pytest.mark.parametrize("where", ["before-seal", "after-seal"])
def test_a_zip_changed_after_the_self_check_fails_the_build(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    from ninfer_release.build import build_lane

    src = samples(tmp_path_factory)
    monkeypatch.setenv("NINFER_DEFLATE_CACHE", "off")
    _flip_byte_of_the_staged_zip(monkeypatch, where)
    with pytest.raises(IntegrityError):
        build_lane(RELEASE, "rtx4090", inputs=src, out=tmp_path / "bad", env=dict(os.environ), offline=True)
    assert not (tmp_path / "bad" / "rtx4090").exists()


def test_a_scan_describes_only_the_unchanged_file_it_read(tmp_path: Path) -> None:
    from ninfer_release import packaging
    from ninfer_release.packaging import PlanEntry, compress_members, write_zip

    members = compress_members([PlanEntry(name="a.txt", data=b"hello " * 1000)], workdir=tmp_path)
    path = write_zip(members, tmp_path / "a.zip", epoch=315532800).path
    scan = packaging.scan_zip(path, sha1=False)
    assert scan.describes(path)
    other = tmp_path / "b.zip"
    other.write_bytes(path.read_bytes())
    assert not scan.describes(other)  # the same bytes, another file: not what was read
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert not scan.describes(path)
    assert not scan.describes(tmp_path / "missing.zip")


@pytest.mark.parametrize("order", ["in-place", "copied"])
def test_a_failed_self_check_leaves_an_existing_zip_as_it_was(tmp_path: Path, order: str) -> None:
    import dataclasses

    from ninfer_release.packaging import PlanEntry, ZipLayout, compress_members, finish_zip

    out = tmp_path / "p.zip"
    out.write_bytes(b"the user's previous archive")
    layout = ZipLayout.create(tmp_path)
    names = ["a.txt", "b.txt"] if order == "in-place" else ["b.txt", "a.txt"]
    entries = [PlanEntry(name=n, data=n.encode() * 5000) for n in names]
    members = compress_members(entries, workdir=tmp_path, layout=layout)
    lied = [dataclasses.replace(m, sha256="0" * 64) if m.name == "a.txt" else m for m in members]
    with pytest.raises(IntegrityError, match=r"a\.txt: inflates to"):
        finish_zip(layout, lied, out, epoch=315532800)
    assert out.read_bytes() == b"the user's previous archive"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.zip"]  # no temp file left
