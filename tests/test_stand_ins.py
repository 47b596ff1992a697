"""Stand-ins are declared, never presented as real; PE versions are never invented (issue 8 items 5, 7).

* The sample engine executable says "stand-in" in its own version resource, so the sample
  ``build-info.json`` declares it, and both SBOMs, NOTICE and the route block say so.
* A PE whose version resource says "stand-in" while its input claims it is real is refused (exit 4,
  naming the document and the field).
* A PE without a version resource gets no version (CycloneDX: none; SPDX: NOASSERTION) and a warning.
* SPDX ``extractedText`` of the NVIDIA and Microsoft licences is the text the package ships; the
  engine's concluded licence includes the vendored MIT code compiled into it.
"""

from __future__ import annotations

import json
import logging
import shutil
import zipfile
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from flow_support import NATIVE_LANES, RELEASE, cli, release_out, samples, stem
from ninfer_release.sbom import (
    DependencyRecord,
    PeInfo,
    ShippedFile,
    cyclonedx_dependency_inventory,
    load_license_texts,
    pe_version_summary,
    stand_in_marker,
)

ENGINE = "bin/ninfer-server.exe"


def _json(path: Path) -> Any:
    return json.loads(path.read_bytes())


def _cdx_component(doc: dict[str, Any], path: str) -> dict[str, Any]:
    """The CycloneDX component that ships the zip member ``path`` (property or evidence occurrence)."""
    for c in doc["components"]:
        props = {p["name"]: p["value"] for p in c.get("properties", [])}
        occurrences = [o["location"] for o in c.get("evidence", {}).get("occurrences", [])]
        if props.get("ninfer:path") == path or path in occurrences:
            return dict(c)
    raise AssertionError(f"no component ships {path}")


@pytest.mark.parametrize("lane", NATIVE_LANES)
def test_sample_engine_is_a_declared_stand_in_everywhere(
    tmp_path_factory: pytest.TempPathFactory, lane: str
) -> None:
    out = release_out(tmp_path_factory) / lane
    props = {
        p["name"]: p["value"]
        for p in _cdx_component(_json(out / f"{stem(lane)}.cdx.json"), ENGINE)["properties"]
    }
    assert props["ninfer:stand-in"] == "true"
    spdx = _json(out / f"{stem(lane)}.spdx.json")
    engine = next(f for f in spdx["files"] if f["fileName"] == f"./{ENGINE}")
    assert engine["comment"].startswith("STAND-IN: ")
    route = _json(out / f"{stem(lane)}.route.json")
    assert route["stand_ins"] == ["bin/dstorage.dll", "bin/dstoragecore.dll", ENGINE]
    with zipfile.ZipFile(out / f"{stem(lane)}.zip") as zf:
        notice = zf.read("NOTICE.txt").decode()
        inner = json.loads(zf.read(f"sbom/{stem(lane)}.spdx.json"))
    assert (
        f"{ENGINE}\n  license:  Apache-2.0\n  vendored: (none)\n"
        "  NOTE:     stand-in file for samples; NOT the real engine" in notice
    )
    assert inner == spdx


def _copy_lane(tmp_path: Path, factory: pytest.TempPathFactory, lane: str) -> Path:
    staged = tmp_path / "staged"
    shutil.copytree(samples(factory) / lane, staged / lane)
    return staged / lane


def _build(staged_lane: Path, out: Path, lane: str) -> Any:
    return cli(
        "build", "lane", lane, "--release", RELEASE, "--inputs", staged_lane, "--out", out, "--offline"
    )


def test_engine_claimed_real_while_its_version_resource_says_stand_in_is_refused(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    lane_dir = _copy_lane(tmp_path, tmp_path_factory, "rtx4090")
    info = _json(lane_dir / "build-info.json")
    info["engine_files"][0]["stand_in"] = False
    (lane_dir / "build-info.json").write_text(json.dumps(info))
    result = _build(lane_dir, tmp_path / "out", "rtx4090")
    assert result.code == 4, result.text
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert "build-info.json" in lines[0] and "engine_files[0].stand_in" in lines[0]
    assert "NInfer engine stand-in (sample; not the real engine)" in lines[0]
    assert not (tmp_path / "out").exists()


def _declare_in_lock(lane_dir: Path, file: str, stand_in: bool) -> int:
    """Set ``stand_in`` of the lock entry shipping ``file``; returns its index."""
    lock = _json(lane_dir / "dependencies.lock.json")
    index = next(i for i, r in enumerate(lock["redistributables"]) if r["file"] == file)
    lock["redistributables"][index]["stand_in"] = stand_in
    (lane_dir / "dependencies.lock.json").write_text(json.dumps(lock))
    return index


@pytest.mark.parametrize(
    ("lane", "file", "stand_in", "message"),
    [
        # The stand-in DirectStorage DLL says so in its version resource, but is declared real.
        ("rtx3090", "bin/dstorage.dll", False, "'s version resource says 'STAND-IN for Microsoft"),
        # The other way round (hostile review of issue 8 item 5): cudart's version resource presents
        # the real NVIDIA runtime, declared a stand-in: a real file is never labelled a placeholder.
        (
            "rtx4090",
            "bin/cudart64_13.dll",
            True,
            "bin/cudart64_13.dll is declared a stand-in, but its version resource does not say so",
        ),
    ],
)
def test_redistributable_whose_stand_in_claim_contradicts_its_version_resource_is_refused(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    lane: str,
    file: str,
    stand_in: bool,
    message: str,
) -> None:
    lane_dir = _copy_lane(tmp_path, tmp_path_factory, lane)
    index = _declare_in_lock(lane_dir, file, stand_in)
    result = _build(lane_dir, tmp_path / "out", lane)
    assert result.code == 4, result.text
    assert f"redistributables[{index}].stand_in" in result.err and "dependencies.lock.json" in result.err
    assert message in result.err, result.err
    assert not (tmp_path / "out").exists()


def _pe(file_version: str | None, strings: dict[str, str] | None = None) -> PeInfo:
    return PeInfo(
        machine="x86_64",
        file_version=file_version,
        product_version=file_version,
        version_strings=MappingProxyType(strings or {}),
    )


def test_stand_in_marker_reads_the_version_strings() -> None:
    assert stand_in_marker(_pe("1.0.0.0", {"FileDescription": "STAND-IN for Microsoft DirectStorage"})) == (
        "FileDescription",
        "STAND-IN for Microsoft DirectStorage",
    )
    assert stand_in_marker(_pe("1.0.0.0", {"FileDescription": "Outstanding standings"})) is None


def test_dll_without_version_resource_gets_no_invented_version(caplog: pytest.LogCaptureFixture) -> None:
    engine = DependencyRecord(
        kind="engine",
        name="ninfer-engine",
        version="v0.7.0-qwen38-4090-beta.2",
        purl="pkg:generic/omp-ninfer/ninfer-engine@v0.7.0-qwen38-4090-beta.2",
        supplier="OMP NInfer",
        license="Apache-2.0",
        files=(ShippedFile(path="bin/plugin.dll", sha256="a" * 64),),
    )
    with caplog.at_level(logging.WARNING):
        data = cyclonedx_dependency_inventory(
            component_name="pkg",
            component_version="1",
            component_purl=None,
            supplier="OMP NInfer",
            dependencies=[engine],
            pe_infos={"bin/plugin.dll": _pe(None)},
            serial_identity="https://example.invalid/pkg/1",
            epoch=1700000000,
            tool_name="ninfer-release",
            tool_version="0.1.0",
            tool_vendor="OMP NInfer",
        )
    component = _cdx_component(json.loads(data), "bin/plugin.dll")
    props = {p["name"]: p["value"] for p in component["properties"]}
    assert props["ninfer:file:bin/plugin.dll:pe-version-resource"] == "none"
    assert all("FileVersion" not in name for name in props)
    assert "bin/plugin.dll has no usable version resource" in caplog.text
    assert pe_version_summary(_pe(None)) == "PE version resource: none (version NOASSERTION)."


@pytest.mark.parametrize("lane", NATIVE_LANES)
def test_spdx_extracts_the_shipped_licence_texts(tmp_path_factory: pytest.TempPathFactory, lane: str) -> None:
    out = release_out(tmp_path_factory) / lane
    spdx = _json(out / f"{stem(lane)}.spdx.json")
    texts = {e["licenseId"]: e["extractedText"] for e in spdx["hasExtractedLicensingInfos"]}
    with zipfile.ZipFile(out / f"{stem(lane)}.zip") as zf:
        for ref in ("LicenseRef-NVIDIA-CUDA-EULA", "LicenseRef-Microsoft-VC-Redist"):
            shipped = zf.read(f"licenses/{ref.removeprefix('LicenseRef-')}.txt").decode()
            assert texts[ref] == shipped
            assert "NOT the licence text" not in texts[ref]
    engine = next(f for f in spdx["files"] if f["fileName"] == f"./{ENGINE}")
    # A stand-in contains no vendored source (build-info says so: "vendored": []), so no MIT.
    assert engine["licenseConcluded"] == "Apache-2.0"


def test_load_license_texts_prefers_the_shipped_text(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    curated = tmp_path / "curated"
    curated.mkdir()
    (curated / "A.txt").write_text("curated summary of A\n")
    (curated / "B.txt").write_text("curated summary of B\n")
    shipped_a = tmp_path / "A-real.txt"
    shipped_a.write_text("the real licence A\n")
    with caplog.at_level(logging.WARNING):
        texts = load_license_texts(
            ["LicenseRef-A", "LicenseRef-B"], licenses_dir=curated, shipped={"licenses/A.txt": shipped_a}
        )
    assert texts == {"LicenseRef-A": "the real licence A\n", "LicenseRef-B": "curated summary of B\n"}
    assert "LicenseRef-B: the package ships no licence text" in caplog.text
