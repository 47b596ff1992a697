"""Entry 8 written as rendered (issue 13: memory at 100k files): the bytes are those of the typed
statement's ``to_bytes()``, the staged inputs' resolved dependencies made one at a time."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import ninfer_release.releases._seal as seal
from flow_support import RELEASE, samples
from ninfer_release.build import build_lane
from ninfer_release.releases._records import ResolvedDependency


def test_the_written_statement_is_the_typed_statements_bytes(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = samples(tmp_path_factory)
    monkeypatch.setenv("NINFER_DEFLATE_CACHE", "off")
    compared: list[tuple[bytes, bytes, list[str]]] = []
    real = seal._write_provenance

    def spy(sealing: Any, path: Path) -> Any:
        ref = real(sealing, path)
        staged = sealing.package.staged_inputs
        compared.append((path.read_bytes(), seal._provenance(sealing, staged).to_bytes(), sorted(staged)))
        return ref

    monkeypatch.setattr(seal, "_write_provenance", spy)
    outcome = build_lane(
        RELEASE, "rtx4090", inputs=src, out=tmp_path / "o", env=dict(os.environ), offline=True
    )
    assert outcome.verified is True
    ((written, typed, staged),) = compared
    assert len(staged) > 2 and written == typed
    names = [d["name"] for d in json.loads(written)["predicate"]["buildDefinition"]["resolvedDependencies"]]
    assert names[0] == "engine-source" and names[1 : len(staged) + 1] == [f"staged/{p}" for p in staged]


def test_staged_dependencies_read_as_the_records_json() -> None:
    staged = [("a/b.dll", "1" * 64), ("c.txt", "2" * 64), ("é.bin", "3" * 64)]
    made = seal._staged_dependencies(staged)
    expected = [ResolvedDependency(name=f"staged/{p}", digest={"sha256": d}).to_json() for p, d in staged]
    assert len(made) == 3 and list(made) == expected
    assert made[1] == expected[1] and made[-1] == expected[-1] and made[1:] == expected[1:]
