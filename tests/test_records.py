"""Every published record is a typed frozen record: ``to_bytes()`` gives back the exact bytes a build
writes, ``parse(x.to_bytes()) == x``, and ``parse`` refuses a missing, unknown or wrongly typed field
naming the file and the field (issue 10)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from flow_support import release_out, stem
from ninfer_release.errors import InputError, IntegrityError
from ninfer_release.jsonrecord import JsonRecord
from ninfer_release.manifests import (
    BaseImageRef,
    ConfigHash,
    DocumentedRoutes,
    ImageLaneEntry,
    ImageOutputs,
    LaneResult,
    NativeLaneEntry,
    OutputRef,
    ReleaseManifest,
    SbomOutputs,
)
from ninfer_release.releases._contract import (
    COMPONENT_MANIFEST_ENTRIES,
    ENTRY_SUFFIXES,
    PROVENANCE_SUBJECTS,
    names_for_tag,
)
from ninfer_release.releases._records import (
    ComponentManifest,
    ModelRecord,
    ProfileAsset,
    ProvenanceStatement,
    QualificationRecord,
    RouteRecord,
)

LANE = "rtx4090"
S = stem(LANE)

#: (record type, file of the sample release output it is read from)
RECORDS: dict[str, tuple[type[JsonRecord], str]] = {
    "release-manifest": (ReleaseManifest, "release-manifest.json"),
    "lane-result": (LaneResult, f"{LANE}.lane.json"),
    "lane-result-carried": (LaneResult, "rtx5090.lane.json"),
    "component-manifest": (ComponentManifest, f"{LANE}/{S}.manifest.json"),
    "route": (RouteRecord, f"{LANE}/{S}.route.json"),
    "qualification": (QualificationRecord, f"{LANE}/{S}.qualification.json"),
    "model": (ModelRecord, f"{LANE}/{S}.model.json"),
    "profile": (ProfileAsset, f"{LANE}/{S}.profile.json"),
    "provenance": (ProvenanceStatement, f"{LANE}/{S}.provenance.json"),
}


def _sample(factory: pytest.TempPathFactory, kind: str) -> tuple[type[JsonRecord], bytes, str]:
    cls, rel = RECORDS[kind]
    return cls, (release_out(factory) / rel).read_bytes(), rel


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_round_trip_gives_the_written_bytes(kind: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    cls, data, rel = _sample(tmp_path_factory, kind)
    record = cls.parse(data, source=rel)
    assert record.to_bytes() == data
    assert cls.parse(record.to_bytes(), source=rel) == record


def _first_key(doc: dict[str, Any], want: type) -> str:
    return next(k for k, v in doc.items() if isinstance(v, want) and not isinstance(v, bool))


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_parse_refuses_a_missing_an_unknown_and_a_wrongly_typed_field(
    kind: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    cls, data, rel = _sample(tmp_path_factory, kind)
    doc = json.loads(data)
    missing = _first_key(doc, str)
    cases = {
        "missing": ({k: v for k, v in doc.items() if k != missing}, missing, "missing"),
        "unknown": ({**doc, "hostile": 1}, "hostile", "unknown field"),
        "type": ({**doc, missing: 7}, missing, "expected a string"),
    }
    for case, (bad, field, says) in cases.items():
        with pytest.raises(IntegrityError) as exc:
            cls.parse(json.dumps(bad).encode(), source=rel)
        (problem,) = exc.value.problems
        assert (problem.file, problem.field) == (rel, field), case
        assert says in problem.message, (case, problem.message)


def test_nested_fields_are_named_by_their_path(tmp_path_factory: pytest.TempPathFactory) -> None:
    _, data, rel = _sample(tmp_path_factory, "route")
    doc = json.loads(data)
    doc["install"]["path_budget"]["max_path"] = "260"
    doc["bearer_key"]["bom"] = 0
    doc["stand_ins"][1] = None
    with pytest.raises(IntegrityError) as exc:
        RouteRecord.parse(json.dumps(doc).encode(), source=rel)
    fields = {p.field: p.message for p in exc.value.problems}
    assert fields == {
        "install.path_budget.max_path": "expected an integer, got a string",
        "bearer_key.bom": "expected a boolean, got a number",
        "stand_ins[1]": "expected a string, got null",
    }


def test_a_boolean_is_never_an_integer(tmp_path_factory: pytest.TempPathFactory) -> None:
    _, data, rel = _sample(tmp_path_factory, "model")
    doc = {**json.loads(data), "size": True}
    with pytest.raises(IntegrityError, match="size: expected an integer, got a boolean"):
        ModelRecord.parse(json.dumps(doc).encode(), source=rel)


def test_lane_entries_are_chosen_by_kind_and_mode(tmp_path_factory: pytest.TempPathFactory) -> None:
    _, data, rel = _sample(tmp_path_factory, "release-manifest")
    manifest = ReleaseManifest.parse(data, source=rel)
    assert {k: type(v).__name__ for k, v in manifest.lanes.items()} == {
        "rtx3090": "NativeLaneEntry",
        "rtx4090": "NativeLaneEntry",
        "rtx5090": "CarriedLaneEntry",
    }
    doc = json.loads(data)
    doc["lanes"]["rtx5090"]["mode"] = "borrow"
    with pytest.raises(IntegrityError) as exc:
        ReleaseManifest.parse(json.dumps(doc).encode(), source=rel)
    assert [p.field for p in exc.value.problems] == ["lanes.rtx5090.kind"]


def test_a_lane_result_is_read_with_the_callers_error_type(tmp_path_factory: pytest.TempPathFactory) -> None:
    _, data, rel = _sample(tmp_path_factory, "lane-result")
    doc = json.loads(data)
    del doc["release"]["lane_ids"]
    with pytest.raises(InputError, match=r"rtx4090.lane.json: release.lane_ids: missing"):
        LaneResult.parse(json.dumps(doc).encode(), source=rel, error=InputError)


def _ref(name: str) -> OutputRef:
    return OutputRef(path=f"rtx5090/{name}", sha256="a" * 64, size=10)


def test_entries_only_built_in_other_flows_round_trip(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A built image lane's entry and a native entry with ``documented_routes``."""
    image = ImageLaneEntry(
        component_tag="v0.13.1-x",
        kind="oci-image",
        mode="build",
        profile_id="p",
        source_commit="b" * 40,
        image="ghcr.io/x/y",
        image_reference="ghcr.io/x/y:v0.13.1-x",
        image_digest="sha256:" + "c" * 64,
        image_config_digest="sha256:" + "d" * 64,
        base_image=BaseImageRef(name="base", digest="sha256:" + "e" * 64),
        base_digest="sha256:" + "e" * 64,
        version="v0.13.1-x",
        revision="b" * 40,
        created="2026-11-21T00:00:00Z",
        layers=("sha256:" + "f" * 64,),
        bindings={"server": "1" * 64},
        config=ConfigHash(hash_kind="semantic", sha256="2" * 64),
        outputs=ImageOutputs(
            archive=_ref("image.tar"),
            record=_ref("image.json"),
            sbom=SbomOutputs(cyclonedx=_ref("sbom.cdx.json"), spdx=_ref("sbom.spdx.json")),
        ),
        stand_in=True,
    )
    _, data, rel = _sample(tmp_path_factory, "lane-result")
    result = LaneResult.parse(data, source=rel)
    assert isinstance(result.entry, NativeLaneEntry)
    documented = dataclasses.replace(
        result.entry,
        documented_routes=DocumentedRoutes(
            predecessor="releases/v0.13.0/rtx4090.route.json", changed=(), document_change=None
        ),
    )
    for entry in (image, documented):
        again = dataclasses.replace(result, entry=entry)
        assert LaneResult.parse(again.to_bytes(), source="x") == again


def test_the_contract_names_what_each_record_binds() -> None:
    """Provenance subjects are entries 1–7, the component manifest lists 1–9 (DESIGN.md §4)."""
    assert ENTRY_SUFFIXES[:7] == PROVENANCE_SUBJECTS
    assert ENTRY_SUFFIXES[:9] == COMPONENT_MANIFEST_ENTRIES
    names = names_for_tag("v0.7.0-qwen38-4090-beta.2")
    assert names.provenance not in names.provenance_subjects
    assert names.manifest not in names.component_manifest_entries
    assert names.provenance in names.component_manifest_entries


def test_written_records_name_the_contracts_sets(tmp_path_factory: pytest.TempPathFactory) -> None:
    out: Path = release_out(tmp_path_factory) / LANE
    names = names_for_tag("v0.7.0-qwen38-4090-beta.2")
    prov = ProvenanceStatement.parse((out / names.provenance).read_bytes(), source=names.provenance)
    assert tuple(s.name for s in prov.subject) == names.provenance_subjects
    manifest = ComponentManifest.parse((out / names.manifest).read_bytes(), source=names.manifest)
    assert tuple(e.name for e in manifest.entries) == names.component_manifest_entries
