"""Publish hashes a set once (issue 11): the digests the verification established are passed down
to the plan as :class:`FileDigest` records, and no check is weaker for it — a file changed after
the verification is refused by the store's own upload check (``write_verified`` for ``dir://`` and
``files://``, the registry's ``PUT ?digest=`` for ``oci://``: tests/test_publish_overlap.py), and
nothing appears at the tag."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from flow_support import TAGS, qualified_out, stem
from ninfer_release.errors import IntegrityError
from ninfer_release.releases import _flows, _publish
from ninfer_release.releases._publish import FileDigest

LANE = "rtx4090"


@pytest.fixture
def sealed(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path / LANE
    shutil.copytree(qualified_out(tmp_path_factory) / LANE, target)
    return target


def _swap_after_verify(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Verify as usual, then change one byte of ``name`` in the set (same size): the window
    between verifying a set and uploading it."""
    real = _flows.verify_set  # type: ignore[attr-defined]

    def verify_then_swap(set_dir: Path, **kwargs: Any) -> Any:
        report = real(set_dir, **kwargs)
        path = set_dir / name
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))
        return report

    monkeypatch.setattr(_flows, "verify_set", verify_then_swap)


def _never_hashed(path: Path) -> tuple[str, int]:
    raise AssertionError(f"plan_publish hashed {path} again")


def test_publish_reuses_the_verified_digests(
    sealed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_publish, "_hashed", _never_hashed)
    result = _flows.publish_set(sealed, f"files://{tmp_path / 'files'}")
    assert result.status == "published"
    assert sorted(p.name for p in (tmp_path / "files" / TAGS[LANE]).iterdir()) == sorted(
        p.name for p in sealed.iterdir()
    )


def test_file_digest_refuses_what_is_no_sha256() -> None:
    with pytest.raises(ValueError, match="not a SHA-256"):
        FileDigest(sha256="ABC", size=1)
    with pytest.raises(ValueError, match="not a SHA-256"):
        FileDigest(sha256="a" * 64, size=-1)


@pytest.mark.parametrize("suffix", [".zip", ".cdx.json"])
@pytest.mark.parametrize("scheme", ["dir", "files"])
def test_a_file_swapped_after_verify_is_refused_by_a_local_store(
    sealed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheme: str, suffix: str
) -> None:
    _swap_after_verify(monkeypatch, stem(LANE) + suffix)
    root = tmp_path / "store"
    with pytest.raises(IntegrityError, match=r"changed since it was hashed"):
        _flows.publish_set(sealed, f"{scheme}://{root}")
    if scheme == "files":
        assert not (root / TAGS[LANE]).exists()
    else:
        from ninfer_release.releases._dir_store import DirStore

        assert DirStore(root).resolve(TAGS[LANE]) is None
