"""Both SBOMs of a native lane written to their files as rendered, the CycloneDX document validated
from its file read piece by piece (issue 13: memory at 100k files): the same bytes and the same
verdict and messages as the in-memory path, and neither document's bytes held whole."""

from __future__ import annotations

import gc
import io
import math
import os
from pathlib import Path
from typing import Any

import pytest

import ninfer_release.sbom._cyclonedx as _cyclonedx
import test_spdx_fast
from flow_support import RELEASE, samples
from ninfer_release.build import build_lane
from ninfer_release.errors import IntegrityError
from ninfer_release.jsonbytes import LazyArray, dump_indented_into, dumps_indented_bytes
from ninfer_release.sbom import ShippedFile, spdx_file_inventory
from test_cyclonedx import DEPS, make, sha
from test_spdx_fast import _document_bytes

OBJECTS: list[Any] = [
    {"a": [1, 2.5, None, True, "é"], "b": {}, "c": [], "d": {"x": [{"y": "z"}]}},
    {"lazy": LazyArray([{"k": i} for i in range(3)], ["s", "t"]), "n": -0.0},
    [LazyArray(), "tail"],
]


@pytest.mark.parametrize("obj", OBJECTS)
@pytest.mark.parametrize("ascii_only", [True, False])
def test_dump_into_a_file_writes_what_dumps_indented_bytes_returns(obj: Any, ascii_only: bool) -> None:
    sink = io.BytesIO(b"head:")
    sink.seek(0, io.SEEK_END)
    dump_indented_into(obj, sink, indent=2, ensure_ascii=ascii_only, end="\n")
    assert sink.getvalue() == b"head:" + dumps_indented_bytes(
        obj, indent=2, ensure_ascii=ascii_only, end="\n"
    )


def test_a_value_left_to_json_rewrites_the_file_from_where_it_started() -> None:
    """A NaN with allow_nan=False is json's to refuse, after part of the text was written."""
    obj = {"a": [{"k": i} for i in range(5000)], "b": math.nan}  # spilled before the NaN
    sink = io.BytesIO(b"head:")
    sink.seek(0, io.SEEK_END)
    with pytest.raises(ValueError, match="Out of range float values"):
        dump_indented_into(obj, sink, indent=2, allow_nan=False)
    assert sink.getvalue() == b"head:"


def test_spdx_into_a_file_is_the_document_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _document_bytes()
    path = tmp_path / "p.spdx.json"
    monkeypatch.setattr(
        test_spdx_fast, "spdx_file_inventory", lambda **kw: spdx_file_inventory(**kw, into=path)
    )
    assert _document_bytes() == b""
    assert path.read_bytes() == expected


def _files(n: int) -> list[ShippedFile]:
    """Every file the sample dependencies ship, and ``n`` more the root lists."""
    extra = [ShippedFile(path=f"licenses/extra/f{i:03d}.txt", sha256=sha(str(i))) for i in range(n)]
    return [f for d in DEPS for f in d.files] + extra


def _outcome(**over: Any) -> tuple[bytes, list[str]]:
    try:
        return make(**over), []
    except IntegrityError as exc:
        return b"", [p.message for p in exc.problems]


@pytest.mark.parametrize("n", [0, 1, 2, 40])
def test_cyclonedx_into_a_file_is_the_document_bytes(tmp_path: Path, n: int) -> None:
    files = _files(n)
    expected = make(component_sha256=sha("zip"), package_files=files)
    path = tmp_path / "p.cdx.json"
    assert make(component_sha256=sha("zip"), package_files=files, into=path) == b""
    assert path.read_bytes() == expected
    # Read piece by piece, not whole (what the build's memory depends on).
    assert _cyclonedx.check_cyclonedx_file(path, limit=path.stat().st_size) is not None


BROKEN = {
    # Not what the schema allows: the streamed read gives up, the whole document reports it.
    "schema": [{"aggregate": "bogus", "assemblies": ["x"]}],
    # What only the checks beside the schema find, on the streamed path.
    "dangling": [{"aggregate": "complete", "assemblies": ["nobody@1"]}],
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_cyclonedx_from_its_file_has_the_verdict_and_messages_of_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    files = _files(30)
    real = _cyclonedx._lane_compositions
    monkeypatch.setattr(_cyclonedx, "_lane_compositions", lambda root, c: real(root, c) + BROKEN[case])
    in_memory = _outcome(component_sha256=sha("zip"), package_files=files)
    from_file = _outcome(component_sha256=sha("zip"), package_files=files, into=tmp_path / "p.cdx.json")
    assert in_memory[1] and from_file[1] == in_memory[1]
    if case == "dangling":
        path = tmp_path / "p.cdx.json"
        assert _cyclonedx.check_cyclonedx_file(path, limit=path.stat().st_size) is not None
        assert from_file[1] == ["composition names unknown bom-ref 'nobody@1'"]
    else:
        assert from_file[1][0].startswith("schema: $.compositions[")


def _bytes_held(size: int, heads: tuple[bytes, ...]) -> int:
    """How many ``bytes`` objects of at least ``size`` bytes that begin like one of the documents
    (``heads``: their first bytes) the collector can reach. Only such objects: other large bytes
    that earlier tests of the same process keep (schemas, fixtures) are not the SBOMs; and since
    the sample lane's documents are the same bytes in every build, the caller subtracts what is
    held once the build is over (earlier tests' copies)."""
    gc.collect()
    seen = 0
    for o in gc.get_objects():
        for r in gc.get_referents(o):
            if isinstance(r, bytes) and len(r) >= size and r.startswith(heads):
                seen += 1
    return seen


def _head(path: Path) -> bytes:
    """The first 256 bytes of ``path`` (with the size, enough to tell the document)."""
    with path.open("rb") as f:
        return f.read(256)


def test_the_build_holds_neither_sbom_whole_while_the_cyclonedx_document_is_validated(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = samples(tmp_path_factory)
    monkeypatch.setenv("NINFER_DEFLATE_CACHE", "off")
    seen: list[tuple[int, int]] = []
    real = _cyclonedx.validate_cyclonedx_file

    def spy(path: Path) -> list[str]:
        spdx_path = next(path.parent.glob("*.spdx.json"))
        smallest = min(spdx_path.stat().st_size, path.stat().st_size)
        heads.extend((_head(spdx_path), _head(path)))
        seen.append((smallest, _bytes_held(smallest, tuple(heads))))
        return real(path)

    heads: list[bytes] = []
    monkeypatch.setattr(_cyclonedx, "validate_cyclonedx_file", spy)
    outcome = build_lane(
        RELEASE, "rtx4090", inputs=src, out=tmp_path / "o", env=dict(os.environ), offline=True
    )
    assert outcome.verified is True
    del outcome  # what the build held is let go: what is left is others' (earlier tests')
    ((smallest, held),) = seen
    assert smallest > 4096 and held - _bytes_held(smallest, tuple(heads)) <= 0
