"""verify's size bounds grow with the package where the records do (issue 13: 10k-file lanes).

The provenance statement lists resolved inputs per shipped file, like the SBOMs list files and
components: a lane with 10k extra files has a 2 MB provenance, over the 1 MiB of a fixed record.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ninfer_release.releases._contract import AssetNames
from ninfer_release.releases._verify import (
    _FALLBACK_MEMBERS,
    MAX_RECORD_ENTRY,
    SBOM_BYTES_PER_MEMBER,
    _container_bound,
    _entry_bounds,
    _zip_index,
)
from zip_support import ours


def test_provenance_bound_scales_with_members_like_the_sboms(tmp_path: Path) -> None:
    names = AssetNames(stem="ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64")
    small = tmp_path / "small"
    small.mkdir()
    big = tmp_path / "big"
    big.mkdir()
    few = _entry_bounds(names, len(_zip_index(ours(small, {"a.txt": b"a"})) or ()))
    many = _entry_bounds(names, len(_zip_index(ours(big, {f"f/{i:05d}": b"x" for i in range(64)})) or ()))
    assert many[names.provenance] == many[names.spdx] == many[names.cdx]
    assert many[names.provenance] - few[names.provenance] == 63 * SBOM_BYTES_PER_MEMBER
    assert many[names.manifest] == MAX_RECORD_ENTRY  # fixed-size records keep the fixed bound


def test_an_unreadable_index_falls_back_to_the_default_member_count(tmp_path: Path) -> None:
    names = AssetNames(stem="ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64")
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"not a zip")
    assert _zip_index(broken) is None
    assert _zip_index(tmp_path / "absent.zip") is None
    assert _entry_bounds(names, None)[names.spdx] == _entry_bounds(names, 0)[names.spdx] + (
        _FALLBACK_MEMBERS * SBOM_BYTES_PER_MEMBER
    )


def test_the_exported_verifier_bounds_every_entry_as_verify_does(tmp_path: Path) -> None:
    """A 10k-file lane's 2 MB provenance passed verify but failed the exported verifier (1 MiB):
    a different verdict. Both now take the same bound for every entry, whatever the member count."""
    from ninfer_release.releases import _standalone_verifier as standalone

    names = AssetNames(stem="ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64")
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"not a zip")
    cases = {"few": {"a.txt": b"a"}, "many": {f"f/{i:05d}": b"x" for i in range(64)}}
    zips = [broken]
    for label, members in cases.items():
        where = tmp_path / label
        where.mkdir()
        zips.append(ours(where, members))
    for zip_path in zips:
        index = _zip_index(zip_path)
        ours_bounds = _entry_bounds(names, None if index is None else len(index))
        theirs, their_containers = standalone._bounds(str(zip_path), list(names.entries))
        assert theirs == {n: b for n, b in ours_bounds.items() if n in theirs}, zip_path.name
        assert set(ours_bounds) == set(theirs), zip_path.name
        assert their_containers == _container_bound(None if index is None else len(index)), zip_path.name


def test_after_the_sbom_checks_only_the_members_still_read_stay_indexed(tmp_path: Path) -> None:
    """Issue 13 (memory): the SBOM maps and the index of 100k members are let go before the
    records are parsed; every entry of the config and the SPDX copy stays, so a name listed twice
    is still refused when read."""
    from ninfer_release import packaging
    from ninfer_release.releases._contract import ZIP_CONFIG_PATH, zip_spdx_path
    from ninfer_release.releases._verify import _let_go_of_sboms, _SetFiles

    names = AssetNames(stem="ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64")
    spdx = zip_spdx_path(names.stem)
    index = _zip_index(ours(tmp_path, {ZIP_CONFIG_PATH: b"c", spdx: b"s", "bin/a.dll": b"a", "x/y": b"y"}))
    assert index is not None
    twice = [*index, *(m for m in index if m.name == ZIP_CONFIG_PATH)]  # the config listed twice
    files = _SetFiles(zip_path=tmp_path / "z.zip", index=twice)
    _let_go_of_sboms(names, files)
    assert files.spdx is None and files.cdx is None
    assert files.index is not None
    assert sorted(m.name for m in files.index) == sorted([ZIP_CONFIG_PATH, ZIP_CONFIG_PATH, spdx])
    with pytest.raises(Exception, match="listed more than once"):
        packaging.read_member(tmp_path / "z.zip", ZIP_CONFIG_PATH, max_bytes=10, index=files.index)


@pytest.mark.parametrize("entry", ["spdx.json", "cdx.json", "provenance.json"])
def test_a_document_of_more_objects_than_its_bound_is_not_decoded_by_either_verifier(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, entry: str
) -> None:
    """Hostile review (2026-12-04): a decoded ``{}`` costs ~30x its 3 bytes, so 105 MB of them in
    a CycloneDX took 3 GB (5 GB in the stdlib verifier). Now the ``{``/``[`` bytes are counted
    first: here 10,000 empty objects (30 KB, well within the size bound) in each document that
    grows with the package are refused unread (exit 5) by both verifiers, re-sealed."""
    import json
    import shutil

    from flow_support import TAGS, cli, release_out, stem
    from reseal_support import ORDER, _propagate, standalone_run

    d = tmp_path / "set"
    shutil.copytree(release_out(tmp_path_factory) / "rtx4090", d)
    s = stem("rtx4090")
    before = {ext: (d / f"{s}.{ext}").read_bytes() for ext in ORDER}
    path = d / f"{s}.{entry}"
    doc = json.loads(path.read_bytes())
    doc["xpad"] = [{}] * 10_000
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    _propagate(d, s, TAGS["rtx4090"], before)
    assert path.stat().st_size < 4 << 20
    ours = cli("verify", d)
    assert ours.code == 5, ours.err
    assert f"{s}.{entry}: " in ours.err and "JSON objects and arrays" in ours.err, ours.err
    alone = standalone_run(d, tmp_path)
    assert alone.returncode == 5, alone.stdout
    assert f"{s}.{entry}: " in alone.stderr and "JSON objects and arrays" in alone.stderr, alone.stderr
