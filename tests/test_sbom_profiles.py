"""Every SBOM of the sample build and the sample image build, checked by tools we did not write (issue 14).

* SPDX: ``ntia-conformance-checker`` (SPDX's ``sbomcheck``) under its ``ntia``, ``fsct3-min`` and
  ``bsi`` profiles. Version 6.0.0 evaluates three requirements only on SPDX 3 documents (its SPDX 2
  adapter returns nothing for them): FSCT3 "SBOM type" and BSI "Creator of the SBOM" / "Dependency
  Completeness". Everything else of each profile must pass; those three are asserted to be the only
  failures, so any other regression fails here (docs/sbom.md).
* CycloneDX: the official 1.6 schema (strict), version = purl version for every component, and
  every zip member exactly once as an evidence occurrence with its SHA-256.
* Provenance: the lock and build-info (the inputs the SBOMs derive from) by digest.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packageurl import PackageURL

from containers_support import RECIPE, make_samples
from flow_support import NATIVE_LANES, REPO, cli, ok, release_out, samples, stem
from ninfer_release.sbom import validate_cyclonedx_bytes

#: What ntia-conformance-checker 6.0.0 evaluates only for SPDX 3 (``Spdx2Adapter.get_sbom_types``
#: returns ``[]``; ``BSIChecker.check_doc_creator`` / ``check_dependency_completeness`` return
#: ``False`` unless the document is an SPDX 3 object set). An SPDX 2.3 document cannot pass them.
SPDX3_ONLY = {
    "fsct3-min": {"SBOM generation context (SBOM type) provided?"},
    "bsi": {"Creator of the SBOM", "Dependency Completeness"},
    "ntia": set(),
}


@pytest.fixture(scope="module")
def image_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = make_samples(tmp_path_factory.mktemp("profiles-samples"))
    out = tmp_path_factory.mktemp("profiles-image") / "out"
    ok(
        cli(
            "image", "build", RECIPE, "--inputs", made.inputs, "--base", made.base, "--out", out,
            "--release", REPO / "manifests" / "v0.13.1.yaml",
        )
    )  # fmt: skip
    return out


def _spdx_documents(factory: pytest.TempPathFactory, image_out: Path) -> list[Path]:
    out = release_out(factory)
    return [out / lane / f"{stem(lane)}.spdx.json" for lane in NATIVE_LANES] + [image_out / "sbom.spdx.json"]


def _failing(document: Path, profile: str) -> set[str]:
    from ntia_conformance_checker import SbomChecker

    checker = SbomChecker(str(document), compliance=profile)
    assert not checker.parsing_errors, checker.parsing_errors
    assert not checker.validation_messages, [m.validation_message for m in checker.validation_messages]
    assert checker.components_evaluated
    return {label for label, passed in checker.table_elements if not passed}


@pytest.mark.parametrize("profile", ["ntia", "fsct3-min", "bsi"])
def test_spdx_documents_pass_every_requirement_the_checker_evaluates_for_spdx_2(
    tmp_path_factory: pytest.TempPathFactory, image_out: Path, profile: str
) -> None:
    for document in _spdx_documents(tmp_path_factory, image_out):
        assert _failing(document, profile) == SPDX3_ONLY[profile], document.name


def test_sbomcheck_cli_says_ntia_conformant(
    tmp_path_factory: pytest.TempPathFactory, image_out: Path
) -> None:
    """What a consumer runs: ``sbomcheck -c ntia FILE`` (the console script of the checker)."""
    script = Path(sys.executable).with_name("sbomcheck")
    for document in _spdx_documents(tmp_path_factory, image_out):
        proc = subprocess.run(
            [str(script), "-c", "ntia", "-r", "json", str(document)],
            capture_output=True,
            text=True,
            check=False,
        )
        report = json.loads(proc.stdout)
        assert report["isConformant"] is True, (document.name, proc.stdout[-2000:])


def _cdx(lane: str, factory: pytest.TempPathFactory) -> tuple[bytes, Path]:
    path = release_out(factory) / lane / f"{stem(lane)}.cdx.json"
    return path.read_bytes(), path


def _occurrences(component: dict[str, Any]) -> list[dict[str, str]]:
    found: list[dict[str, str]] = component.get("evidence", {}).get("occurrences", [])
    return found


@pytest.mark.parametrize("lane", NATIVE_LANES)
def test_cyclonedx_version_is_purl_version_and_every_file_is_evidence_once(
    tmp_path_factory: pytest.TempPathFactory, lane: str
) -> None:
    data, _ = _cdx(lane, tmp_path_factory)
    assert validate_cyclonedx_bytes(data) == []  # the official CycloneDX 1.6 schema, strict
    doc = json.loads(data)
    root = doc["metadata"]["component"]
    every = [root, *doc["components"]]
    for c in every:
        if "purl" in c:
            assert c["version"] == PackageURL.from_string(c["purl"]).version, c["bom-ref"]
    purls = [c["purl"] for c in doc["components"]]
    assert len(purls) == len(set(purls))  # one component per package identity
    zip_path = release_out(tmp_path_factory) / lane / f"{stem(lane)}.zip"
    with zipfile.ZipFile(zip_path) as zf:
        members = {n: hashlib.sha256(zf.read(n)).hexdigest() for n in zf.namelist()}
    listed = [(o["location"], o["additionalContext"]) for c in every for o in _occurrences(c)]
    assert sorted(loc for loc, _ in listed) == sorted(members)  # each member exactly once
    assert all(ctx == f"sha256:{members[loc]}" for loc, ctx in listed)
    assert root["hashes"] == [
        {"alg": "SHA-256", "content": hashlib.sha256(zip_path.read_bytes()).hexdigest()}
    ]
    assert root["licenses"][0]["expression"].startswith("Apache-2.0 AND ")
    assert doc["metadata"]["lifecycles"] == [{"phase": "build"}]
    assert doc["compositions"][0] == {"aggregate": "complete", "assemblies": [root["bom-ref"]]}
    cpes = {c["name"]: c.get("cpe") for c in doc["components"]}
    assert cpes["nvidia-cuda-runtime"] == "cpe:2.3:a:nvidia:cuda_runtime:13.3.29:*:*:*:*:*:*:*"
    assert cpes["msvc-runtime"] == "cpe:2.3:a:microsoft:visual_c\\+\\+:14.44.35211:*:*:*:*:*:*:*"
    engine = next(c for c in doc["components"] if c["name"] == "ninfer-engine")
    props = {p["name"]: p["value"] for p in engine["properties"]}
    # Raw PE version strings kept: the stand-in's own FileVersion says beta.2, not 0.7.0.2.
    assert props["ninfer:file:bin/ninfer-server.exe:pe:FileVersion"] == "0.7.0-beta.2"
    assert (
        engine["version"]
        == {"rtx4090": "v0.7.0-qwen38-4090-beta.2", "rtx3090": "v0.7.0-qwen38-3090-beta.2"}[lane]
    )


@pytest.mark.parametrize("lane", NATIVE_LANES)
def test_provenance_names_build_info_lock_and_the_tool_by_digest_or_version(
    tmp_path_factory: pytest.TempPathFactory, lane: str
) -> None:
    out = release_out(tmp_path_factory) / lane
    statement = json.loads((out / f"{stem(lane)}.provenance.json").read_bytes())
    resolved = {r["name"]: r for r in statement["predicate"]["buildDefinition"]["resolvedDependencies"]}
    staged = samples(tmp_path_factory) / lane
    for name in ("build-info.json", "dependencies.lock.json"):
        digest = hashlib.sha256((staged / name).read_bytes()).hexdigest()
        assert resolved[f"staged/{name}"]["digest"] == {"sha256": digest}
    for path in (
        "manifests/v0.13.1.yaml",
        "packaging/windows-native.yaml",
        "profiles/templates/native-engine.toml.j2",
    ):
        assert resolved[path]["digest"] == {"sha256": hashlib.sha256((REPO / path).read_bytes()).hexdigest()}
    assert any(name.startswith("profiles/qwen38-") and name.endswith(".yaml") for name in resolved)
    assert resolved["python/ninfer-release"]["uri"].startswith("pkg:pypi/ninfer-release@")
    assert resolved["python/spdx-tools"]["uri"] == "pkg:pypi/spdx-tools@0.8.5"


def _tampered_set(tmp_path: Path, factory: pytest.TempPathFactory, edit: Any) -> Path:
    import shutil

    from flow_support import reseal

    lane = "rtx4090"
    target = tmp_path / lane
    shutil.copytree(release_out(factory) / lane, target)
    path = target / f"{stem(lane)}.cdx.json"
    doc = json.loads(path.read_bytes())
    edit(doc)
    path.write_bytes((json.dumps(doc, indent=2) + "\n").encode())
    reseal(target)
    return target


def test_verify_fails_a_member_no_component_lists(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    def drop_notice(doc: dict[str, Any]) -> None:
        occurrences = doc["metadata"]["component"]["evidence"]["occurrences"]
        occurrences[:] = [o for o in occurrences if o["location"] != "NOTICE.txt"]

    result = cli("verify", _tampered_set(tmp_path, tmp_path_factory, drop_notice))
    assert result.code == 5, result.text
    assert "package member 'NOTICE.txt' is listed by no component" in result.text


def test_verify_fails_a_root_hash_that_is_not_the_package(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    def other_hash(doc: dict[str, Any]) -> None:
        doc["metadata"]["component"]["hashes"][0]["content"] = "0" * 64

    result = cli("verify", _tampered_set(tmp_path, tmp_path_factory, other_hash))
    assert result.code == 5, result.text
    assert "metadata.component SHA-256 is not the package's" in result.text
