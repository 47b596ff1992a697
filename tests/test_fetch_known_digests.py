"""Digests a download established are passed down to the set verification, never hashed again
(issue 12: ``fetch`` hashes each file as it arrives; ``verify_set(known_sha256=…)``), while the
zip is still read whole for its members. And the partial a download writes is gathered into
blocks yet always a prefix of what arrived.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from flow_support import release_out, stem
from ninfer_release.packaging import scan_zip
from ninfer_release.releases._contract import AssetNames
from ninfer_release.releases._fetch_flow import verify_view
from ninfer_release.releases._http_fetch import _CHUNK, _Partial
from ninfer_release.releases._verify import verify_set


def _set(tmp_path: Path, factory: pytest.TempPathFactory) -> Path:
    d = tmp_path / "set"
    shutil.copytree(release_out(factory) / "rtx4090", d)
    return d


def _digests(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in d.iterdir()}


def test_known_digests_give_the_same_report(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    d = _set(tmp_path, tmp_path_factory)
    plain = verify_set(d)
    known = verify_set(d, known_sha256=_digests(d))
    assert plain.ok and known == plain


def test_a_known_digest_is_used_not_recomputed(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A (wrong) known digest of the zip is what every check sees: the file is not hashed again."""
    d = _set(tmp_path, tmp_path_factory)
    zip_name = stem("rtx4090") + ".zip"
    report = verify_set(d, known_sha256={zip_name: "0" * 64})
    assert not report.ok
    assert any(f.startswith(f"{zip_name}: SHA-256 mismatch") for f in report.failures), report.failures


def test_the_zip_is_still_read_for_its_members(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A zip whose member data changed fails on its CRC even when its (stale) digest is given."""
    d = _set(tmp_path, tmp_path_factory)
    zip_path = d / (stem("rtx4090") + ".zip")
    known = _digests(d)
    data = bytearray(zip_path.read_bytes())
    name_len, extra_len = int.from_bytes(data[26:28], "little"), int.from_bytes(data[28:30], "little")
    data[30 + name_len + extra_len] ^= 0x01  # the first member's first data byte
    zip_path.write_bytes(bytes(data))
    report = verify_set(d, known_sha256=known)
    assert not report.ok
    assert any(f.startswith(f"{zip_path.name}: member ") for f in report.failures), report.failures


def test_the_view_passes_the_established_digests_to_the_check(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    d = _set(tmp_path, tmp_path_factory)
    seen: list[dict[str, str]] = []

    def check(view: Path, known: object) -> object:
        assert isinstance(known, dict)
        seen.append(dict(known))
        return verify_set(view, known_sha256=known)

    known = _digests(d)
    report = verify_view(d, AssetNames(stem=stem("rtx4090")), check, known)  # type: ignore[arg-type]
    assert report.ok and seen == [known]
    assert report.directory == str(d)


def test_scan_zip_takes_an_established_archive_digest(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    zip_path = _set(tmp_path, tmp_path_factory) / (stem("rtx4090") + ".zip")
    full = scan_zip(zip_path, sha1=False)
    given = scan_zip(zip_path, sha1=False, archive_sha256="ab" * 32)
    assert given.sha256 == "ab" * 32 and full.sha256 == hashlib.sha256(zip_path.read_bytes()).hexdigest()
    assert given.members == full.members and given.size == full.size


def test_the_partial_is_written_in_blocks_and_always_a_prefix(tmp_path: Path) -> None:
    path = tmp_path / ("a" * 64 + ".partial")
    data = bytes(range(256)) * ((3 * _CHUNK) // 256 + 7)
    state = _Partial.open(path, len(data))
    at = 0
    for size in (1, 16384, _CHUNK - 5, 9, _CHUNK + 1):
        state.append(data[at : at + size])
        at += size
        on_disk = path.read_bytes()
        assert data.startswith(on_disk) and state.size == at and len(on_disk) <= at
    state.append(data[at:])
    state.close(sync=False)
    assert path.read_bytes() == data and state.hexdigest() == hashlib.sha256(data).hexdigest()
    resumed = _Partial.open(path, len(data))  # a resume hashes what is on disk
    assert resumed.size == len(data) and resumed.hexdigest() == hashlib.sha256(data).hexdigest()
    resumed.close()
