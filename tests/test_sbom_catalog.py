"""Curated dependency metadata (repo ``sbom/catalog.json``) and licence reference texts."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from conftest import REPO
from ninfer_release.errors import InputError
from ninfer_release.sbom import (
    DependencyRecord,
    ShippedFile,
    apply_catalog,
    check_against_catalog,
    license_refs_of,
    license_text_path,
    load_catalog,
    load_license_texts,
    normalize_license_expression,
)

SBOM_DIR = REPO / "sbom"


def test_repo_catalog_loads_and_every_license_ref_has_a_reference_text() -> None:
    catalog = load_catalog(SBOM_DIR)
    assert {"nvidia-cuda-runtime", "msvc-runtime", "Microsoft.Direct3D.DirectStorage"} <= set(catalog)
    assert catalog["nvidia-cuda-runtime"].license == "LicenseRef-NVIDIA-CUDA-EULA"
    assert catalog["msvc-runtime"].group == "crt"
    refs = {r for e in catalog.values() for r in normalize_license_expression(e.license).license_refs}
    texts = load_license_texts(refs, licenses_dir=SBOM_DIR / "licenses")
    assert sorted(texts) == sorted(refs)
    assert sorted(refs) == [
        "LicenseRef-Microsoft-DirectStorage",
        "LicenseRef-Microsoft-VC-Redist",
        "LicenseRef-NInfer-Sample-Stand-In",
        "LicenseRef-NVIDIA-CUDA-EULA",
    ]
    # Our own notice for the sample stand-ins is the licence itself, and says what they are not.
    stand_in = texts.pop("LicenseRef-NInfer-Sample-Stand-In")
    assert "are NOT Microsoft DirectStorage" in stand_in
    for ref, text in texts.items():
        # Honest references: marked as a summary, not the licence, with the official URL.
        assert text.startswith(ref + " ")
        assert "REFERENCE SUMMARY" in text and "NOT the licence" in text
        assert re.search(r"https://\S+", text)
        assert text.endswith("\n") and "\r" not in text
    assert "https://docs.nvidia.com/cuda/eula/index.html" in texts["LicenseRef-NVIDIA-CUDA-EULA"]


def test_license_text_path_accepts_both_spellings(tmp_path: Path) -> None:
    assert license_text_path(tmp_path, "LicenseRef-X") == tmp_path / "X.txt"
    (tmp_path / "LicenseRef-Y.txt").write_text("y\n")
    assert license_text_path(tmp_path, "LicenseRef-Y") == tmp_path / "LicenseRef-Y.txt"
    with pytest.raises(InputError, match="no licence text for LicenseRef-X"):
        load_license_texts(["LicenseRef-X"], licenses_dir=tmp_path)


CUDART = DependencyRecord(
    kind="redistributable",
    name="nvidia-cuda-runtime",
    version="13.3.29",
    purl="pkg:pypi/nvidia-cuda-runtime@13.3.29",
    group="cuda",
    files=(ShippedFile(path="bin/cudart64_13.dll", sha256="0" * 64),),
)


def test_apply_catalog_fills_in_curated_fields() -> None:
    (done,) = apply_catalog([CUDART], load_catalog(SBOM_DIR))
    assert done.supplier == "NVIDIA Corporation"
    assert done.license == "LicenseRef-NVIDIA-CUDA-EULA"
    assert done.homepage == "https://developer.nvidia.com/cuda-toolkit"
    assert done.files == CUDART.files


def test_apply_catalog_reports_every_disagreement() -> None:
    wrong = dataclasses.replace(
        CUDART, supplier="Someone Else", license="MIT", purl="pkg:generic/cudart@13.3.29", group="other"
    )
    unknown = dataclasses.replace(CUDART, name="not-curated")
    problems = check_against_catalog([wrong, unknown], load_catalog(SBOM_DIR), where="lock.json")
    fields = sorted(p.field for p in problems)
    assert fields == [
        "redistributable[not-curated]",
        "redistributable[nvidia-cuda-runtime].group",
        "redistributable[nvidia-cuda-runtime].license",
        "redistributable[nvidia-cuda-runtime].purl type",
        "redistributable[nvidia-cuda-runtime].supplier",
    ]
    assert all(p.file == "lock.json" for p in problems)


def test_load_catalog_refuses_bad_entries(tmp_path: Path) -> None:
    entries = [
        {"name": "a", "kind": "vendored", "supplier": "S", "license": "mit", "purl_type": "github"},
        {"name": "b", "kind": "weird", "supplier": "S", "license": "Nope-EULA", "purl_type": "generic"},
    ]
    (tmp_path / "catalog.json").write_text(json.dumps({"schema": 1, "entries": entries}))
    with pytest.raises(InputError) as info:
        load_catalog(tmp_path)
    text = str(info.value)
    assert "write it as 'MIT'" in text
    assert "unknown kind 'weird'" in text
    assert "no text for LicenseRef-Nope-EULA" in text


def test_license_refs_of_feeds_load_license_texts() -> None:
    refs = license_refs_of(["MIT", None, "LicenseRef-NVIDIA-CUDA-EULA AND Microsoft-VC-Redist"])
    assert refs == ("LicenseRef-Microsoft-VC-Redist", "LicenseRef-NVIDIA-CUDA-EULA")
    assert sorted(load_license_texts(refs, licenses_dir=SBOM_DIR / "licenses")) == list(refs)
    with pytest.raises(InputError, match="is not a licence id"):
        license_refs_of(["Acme Gov't (JPEG/netpbm)"])


def test_cpe_version_follows_the_catalog_source_per_component() -> None:
    """msvc-runtime's CPE carries its DLLs' 14.44.35211, not the wheel's 14.44.35112; the CUDA
    runtime's the CUDA version its strings name, not NVIDIA's fixed 6.14.11.13030 (issue 35)."""
    from types import MappingProxyType

    from ninfer_release.sbom import PeInfo

    catalog = load_catalog(SBOM_DIR)
    crt = DependencyRecord(
        kind="redistributable",
        name="msvc-runtime",
        version="14.44.35112",
        purl="pkg:pypi/msvc-runtime@14.44.35112",
        group="crt",
        files=(
            ShippedFile(path="bin/msvcp140.dll", sha256="a" * 64),
            ShippedFile(path="bin/vcruntime140.dll", sha256="b" * 64),
        ),
    )
    cudart = DependencyRecord(
        kind="redistributable",
        name="nvidia-cuda-runtime",
        version="13.3.29",
        purl="pkg:pypi/nvidia-cuda-runtime@13.3.29",
        group="cuda",
        files=(ShippedFile(path="bin/cudart64_13.dll", sha256="c" * 64),),
    )

    def info(version: str, cuda: str | None = None) -> PeInfo:
        return PeInfo(machine="x86_64", file_version=version, product_version=version,
                      version_strings=MappingProxyType({}), cuda_version=cuda)  # fmt: skip

    pes = {"bin/msvcp140.dll": info("14.44.35211.0"), "bin/vcruntime140.dll": info("14.44.35211.0"),
           "bin/cudart64_13.dll": info("6.14.11.13030", "13.3.29")}  # fmt: skip
    out = {d.name: d for d in apply_catalog([crt, cudart], catalog, pe_infos=pes)}
    assert out["msvc-runtime"].cpe == "cpe:2.3:a:microsoft:visual_c\\+\\+:14.44.35211:*:*:*:*:*:*:*"
    assert out["nvidia-cuda-runtime"].cpe == "cpe:2.3:a:nvidia:cuda_runtime:13.3.29:*:*:*:*:*:*:*"
    # Files that disagree (or say nothing) give no CPE rather than a guessed one.
    pes["bin/vcruntime140.dll"] = info("14.44.35212.0")
    assert apply_catalog([crt], catalog, pe_infos=pes)[0].cpe is None
    assert apply_catalog([crt], catalog)[0].cpe is None


def test_unknown_cpe_version_source_is_refused(tmp_path: Path) -> None:
    entry = {"name": "x", "kind": "redistributable", "group": "other", "supplier": "S", "license": "MIT"}
    entry |= {"purl_type": "generic", "cpe_vendor": "v", "cpe_product": "p", "cpe_version": "guess"}
    (tmp_path / "catalog.json").write_text(json.dumps({"schema": 1, "entries": [entry]}))
    with pytest.raises(InputError, match="unknown cpe_version 'guess'"):
        load_catalog(tmp_path)
