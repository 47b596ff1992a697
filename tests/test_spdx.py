"""SPDX 2.3 file inventory (C26 verification code, C27 SPDXIDs, C28 namespace, C29 licences)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import need_tool
from ninfer_release.errors import DefinitionError, InputError, IntegrityError
from ninfer_release.sbom import (
    FileRecord,
    cross_check_spdx,
    normalize_license_expression,
    package_verification_code,
    parse_spdx_files,
    spdx_file_inventory,
    validate_spdx_bytes,
)

EPOCH = 1700000000  # 2023-11-14T22:13:20Z


def rec(path: str, data: bytes, license: str | None = None) -> FileRecord:
    return FileRecord(
        path=path,
        size=len(data),
        sha1=hashlib.sha1(data, usedforsecurity=False).hexdigest(),
        sha256=hashlib.sha256(data).hexdigest(),
        license=license,
    )


def make(files: list[FileRecord], **over: Any) -> bytes:
    args: dict[str, Any] = {
        "package_name": "engine",
        "package_version": "1.0",
        "package_file_name": "engine.zip",
        "supplier": "OMP NInfer",
        "download_location": None,
        "files": files,
        "spdx_file_path": "engine.spdx.json",
        "namespace_base": "https://example.invalid/spdx",
        "document_name": "engine",
        "epoch": EPOCH,
        "creator_tool": "ninfer-release-0.1.0",
        "declared_license": "Apache-2.0",
        "extracted_licenses": {},
    }
    args.update(over)
    return spdx_file_inventory(**args)


def doc(data: bytes) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(data)
    return loaded


AB = [rec("bin/a.dll", b"A"), rec("bin/b.dll", b"B")]


def test_c26_verification_code_excludes_the_document_itself() -> None:
    files = [*AB, rec("engine.spdx.json", b"{}")]  # the document as a zip member: never counted
    d = doc(make(files))
    (package,) = d["packages"]
    assert package["packageVerificationCode"] == {
        "packageVerificationCodeExcludedFiles": ["./engine.spdx.json"],
        "packageVerificationCodeValue": "859572ac3bd09bc4f777a4ce6cb326e3251ee29a",
    }
    assert [f["fileName"] for f in d["files"]] == ["./bin/a.dll", "./bin/b.dll"]
    assert "checksums" not in package  # the zip contains this document: it cannot carry the zip's hash


def test_c26_code_is_independent_of_file_order_and_not_the_wrong_answers() -> None:
    a, b = (f.sha1 for f in AB)
    assert package_verification_code([b, a]) == "859572ac3bd09bc4f777a4ce6cb326e3251ee29a"
    assert package_verification_code([a.upper(), b]) == "859572ac3bd09bc4f777a4ce6cb326e3251ee29a"
    # Known wrong answers (CASES.md C26): unsorted concatenation, or counting the document.
    assert hashlib.sha1((b + a).encode(), usedforsecurity=False).hexdigest().startswith("a34e1b61")
    document_sha1 = hashlib.sha1(b"{}", usedforsecurity=False).hexdigest()
    assert package_verification_code([a, b, document_sha1]).startswith("38dd43aa")
    assert make(list(reversed(AB))) == make(AB)


def test_c27_spdx_ids_are_valid_unique_and_deterministic() -> None:
    files = [rec("bin/Qt6Core_d.dll", b"1"), rec("bin/Qt6Core-d.dll", b"2")]
    data = make(files, package_name="engine_win64", package_version="2.0+build.5")
    d = doc(data)
    ids = [d["SPDXID"], *(p["SPDXID"] for p in d["packages"]), *(f["SPDXID"] for f in d["files"])]
    assert all(re.fullmatch(r"SPDXRef-[A-Za-z0-9.-]+", i) for i in ids), ids
    assert len(set(ids)) == len(ids)
    by_name = {f["fileName"]: f["SPDXID"] for f in d["files"]}
    assert by_name["./bin/Qt6Core_d.dll"] != by_name["./bin/Qt6Core-d.dll"]
    assert d["packages"][0]["SPDXID"] == "SPDXRef-Package-engine-win64"
    assert d["packages"][0]["versionInfo"] == "2.0+build.5"
    assert doc(make(files, package_name="engine_win64", package_version="2.0+build.5")) == d
    assert validate_spdx_bytes(data) == []


def test_c28_namespace_is_an_absolute_uri_without_fragment_and_reproducible() -> None:
    data = make(AB, release_id="1.0#3")
    namespace = doc(data)["documentNamespace"]
    assert re.fullmatch(
        r"https://example\.invalid/spdx/engine-1\.0-3-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        namespace,
    ), namespace
    assert "#" not in namespace
    assert doc(make(AB, release_id="1.0#3"))["documentNamespace"] == namespace
    # Other bytes, other document version: the namespace changes.
    changed = doc(make([rec("bin/a.dll", b"A2"), AB[1]], release_id="1.0#3"))["documentNamespace"]
    assert changed != namespace


@pytest.mark.parametrize(
    "base", ["https//example.invalid/spdx", "https://example.invalid/spdx#frag", "example.invalid/x"]
)
def test_c28_bad_namespace_base_is_a_definition_error(base: str) -> None:
    with pytest.raises(DefinitionError, match="namespace_base"):
        make(AB, namespace_base=base)


def test_c29_unknown_id_becomes_license_ref_with_extracted_text() -> None:
    files = [rec("bin/a.dll", b"A", "MIT AND Custom-EULA"), AB[1]]
    data = make(
        files, extracted_licenses={"LicenseRef-Custom-EULA": "Custom EULA text\n", "LicenseRef-Unused": "x"}
    )
    d = doc(data)
    assert d["files"][0]["licenseConcluded"] == "MIT AND LicenseRef-Custom-EULA"
    assert d["hasExtractedLicensingInfos"] == [
        {"extractedText": "Custom EULA text\n", "licenseId": "LicenseRef-Custom-EULA", "name": "Custom-EULA"}
    ]
    assert validate_spdx_bytes(data) == []


def test_c29_free_text_is_rejected_with_a_message() -> None:
    with pytest.raises(InputError) as info:
        make([rec("bin/a.dll", b"A", "Acme Gov't (JPEG/netpbm)")])
    assert '"Gov\'t" is not a licence id' in str(info.value)
    assert "files[bin/a.dll]" in str(info.value)
    assert normalize_license_expression("MIT AND Custom-EULA").expression == "MIT AND LicenseRef-Custom-EULA"


@pytest.mark.parametrize("text", ["( )", "()", "(())", "MIT AND ( )", "( ) OR MIT"])
def test_c29_empty_parentheses_are_an_input_error_not_a_crash(text: str) -> None:
    """The licensing library raises IndexError on these; the user gets one line naming the field."""
    with pytest.raises(InputError, match="not a well-formed licence expression") as info:
        normalize_license_expression(text, where="sbom/catalog.json", field="license")
    assert "sbom/catalog.json" in str(info.value)


def test_c29_license_ref_without_text_is_an_input_error() -> None:
    with pytest.raises(InputError, match="LicenseRef-Custom-EULA: no extracted licence text"):
        make([rec("bin/a.dll", b"A", "MIT AND Custom-EULA")])


def test_output_is_deterministic_with_one_trailing_lf() -> None:
    first, second = make(AB), make(AB)
    assert first == second
    assert first.endswith(b"}\n") and not first.endswith(b"\n\n")
    d = doc(first)
    assert d["creationInfo"]["created"] == "2023-11-14T22:13:20Z"
    assert d["spdxVersion"] == "SPDX-2.3"
    rels = d["relationships"]
    assert {
        "spdxElementId": "SPDXRef-DOCUMENT",
        "relatedSpdxElement": "SPDXRef-Package-engine",
        "relationshipType": "DESCRIBES",
    } in rels
    assert sum(r["relationshipType"] == "CONTAINS" for r in rels) == 2


@pytest.mark.parametrize("path", ["bin\\a.dll", "/bin/a.dll", "./bin/a.dll", "bin/../a.dll"])
def test_unsafe_paths_are_refused(path: str) -> None:
    with pytest.raises(InputError, match="files"):
        make([rec(path, b"A")])


def test_parse_spdx_files_gives_zip_paths_and_digests() -> None:
    assert parse_spdx_files(make(AB)) == {f.path: (f.sha1, f.sha256) for f in AB}


def test_validate_spdx_bytes_reports_problems() -> None:
    d = doc(make(AB))
    d["files"][0]["fileName"] = ".\\bin\\a.dll"  # spdx-tools does not flag backslashes; we do
    bad = (json.dumps(d, indent=4) + "\n").encode()
    assert any("not a './'-relative zip path" in m for m in validate_spdx_bytes(bad))
    d = doc(make(AB))
    d["packages"][0]["packageVerificationCode"]["packageVerificationCodeValue"] = (
        "859572AC3BD09BC4F777A4CE6CB326E3251EE29A"
    )
    assert validate_spdx_bytes((json.dumps(d) + "\n").encode())  # spdx-tools rejects the uppercase code
    assert validate_spdx_bytes(make(AB).rstrip(b"\n")) == ["document must end with exactly one LF"]
    assert validate_spdx_bytes(b"not json")


def _pyspdxtools() -> str:
    beside = Path(sys.executable).with_name("pyspdxtools")
    return str(beside) if beside.is_file() else shutil.which("pyspdxtools") or need_tool("pyspdxtools")


def test_pyspdxtools_accepts_the_document(tmp_path: Path) -> None:
    target = tmp_path / "engine.spdx.json"
    target.write_bytes(
        make(
            [rec("bin/a.dll", b"A", "MIT AND Custom-EULA"), AB[1]],
            extracted_licenses={"LicenseRef-Custom-EULA": "t"},
        )
    )
    proc = subprocess.run([_pyspdxtools(), "-i", str(target)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_spdx_tools_validation_messages_become_an_integrity_error() -> None:
    with pytest.raises(IntegrityError) as info:
        make(AB, download_location="not a download location")
    assert "SPDXRef-Package-engine" in str(info.value)
    assert "download_location" in str(info.value)


def test_file_types_come_from_the_name() -> None:
    files = [rec("bin/a.dll", b"A"), rec("licenses/LICENSE.txt", b"L"), rec("data/blob", b"x")]
    types = {f["fileName"]: f["fileTypes"] for f in doc(make(files))["files"]}
    assert types == {"./bin/a.dll": ["BINARY"], "./licenses/LICENSE.txt": ["TEXT"], "./data/blob": ["OTHER"]}


def test_c26_validate_recomputes_the_verification_code() -> None:
    d = doc(make(AB))
    d["files"][0]["checksums"][0]["checksumValue"] = hashlib.sha1(b"other", usedforsecurity=False).hexdigest()
    messages = validate_spdx_bytes((json.dumps(d, indent=4) + "\n").encode())
    assert messages == [
        "package SPDXRef-Package-engine: packageVerificationCode 859572ac3bd09bc4f777a4ce6cb326e3251ee29a"
        f" != {package_verification_code([d['files'][0]['checksums'][0]['checksumValue'], AB[1].sha1])}"
        " of its files"
    ]


def test_cross_check_spdx_against_zip_members() -> None:
    data = make(AB)
    members = {f.path: (f.sha1, f.sha256) for f in AB}
    members["engine.spdx.json"] = ("0" * 40, "0" * 64)  # the document itself: never compared
    assert cross_check_spdx(data, members, spdx_file_path="engine.spdx.json") == []
    changed = {**members, "bin/a.dll": (AB[1].sha1, AB[1].sha256), "bin/extra.dll": ("1" * 40, "1" * 64)}
    problems = cross_check_spdx(data, changed, spdx_file_path="engine.spdx.json")
    assert [(p.field, p.message) for p in problems] == [
        ("bin/a.dll", "SPDX checksums differ from the member"),
        ("bin/extra.dll", "zip member not in the SPDX file list"),
    ]
    wrong_name = cross_check_spdx(data, members, spdx_file_path="sbom/engine.spdx.json")
    assert any(p.field == "packageVerificationCodeExcludedFiles" for p in wrong_name)
