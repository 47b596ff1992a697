"""CycloneDX 1.6 dependency inventory (C33 serial number, C34 1.6 shapes), graph, cross-checks."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from ninfer_release.errors import InputError, IntegrityError
from ninfer_release.sbom import (
    DependencyRecord,
    PeInfo,
    ShippedFile,
    cross_check_cyclonedx,
    cyclonedx_dependency_inventory,
    parse_cyclonedx_hashes,
    prewarm_validators,
    read_pe,
    validate_cyclonedx_bytes,
)
from test_pe import build_sample_pes, fetch_wheel_dlls

EPOCH = 1700000000
C33_IDENTITY = "https://example.invalid/engine/1.0.0-rc.1"
C33_SERIAL = "urn:uuid:ff894788-461a-5689-b71f-931dd8115649"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def pe(
    *imports: str, delay: tuple[str, ...] = (), file_version: str | None = None, cuda: str | None = None
) -> PeInfo:
    return PeInfo(
        machine="x86_64",
        file_version=file_version,
        product_version=file_version,
        version_strings=MappingProxyType({}),
        cuda_version=cuda,
        imports=tuple(sorted(imports)),
        delay_imports=delay,
    )


ENGINE = DependencyRecord(
    kind="engine",
    name="ninfer",
    version="7a25cd72f490183e4113f1e84e68e36d653ddd28",
    supplier="OMP NInfer",
    license="Apache-2.0",
    files=(ShippedFile(path="bin/ninfer-server.exe", sha256=sha("exe")),),
    commit="7a25cd72f490183e4113f1e84e68e36d653ddd28",
)
CUDART = DependencyRecord(
    kind="redistributable",
    name="nvidia-cuda-runtime",
    version="13.3.29",
    purl="pkg:pypi/nvidia-cuda-runtime@13.3.29",
    supplier="NVIDIA Corporation",
    license="LicenseRef-NVIDIA-CUDA-EULA",
    group="cuda",
    files=(ShippedFile(path="bin/cudart64_13.dll", sha256=sha("cudart")),),
)
CRT = DependencyRecord(
    kind="redistributable",
    name="msvc-runtime",
    version="14.44.35112",
    purl="pkg:pypi/msvc-runtime@14.44.35112",
    supplier="Microsoft Corporation",
    license="LicenseRef-Microsoft-VC-Redist",
    group="crt",
    files=(
        ShippedFile(path="bin/msvcp140.dll", sha256=sha("msvcp")),
        ShippedFile(path="bin/vcruntime140.dll", sha256=sha("vcrt")),
    ),
)
DSTORAGE = DependencyRecord(
    kind="redistributable",
    name="Microsoft.Direct3D.DirectStorage",
    version="1.2.2",
    purl="pkg:nuget/Microsoft.Direct3D.DirectStorage@1.2.2",
    supplier="Microsoft Corporation",
    license="LicenseRef-Microsoft-DirectStorage",
    group="directstorage",
    files=(
        ShippedFile(path="bin/dstorage.dll", sha256=sha("ds")),
        ShippedFile(path="bin/dstoragecore.dll", sha256=sha("dscore")),
    ),
    stand_in=True,
)
JSON_LIB = DependencyRecord(
    kind="vendored",
    name="nlohmann-json",
    version="3.11.3",
    purl="pkg:github/nlohmann/json@v3.11.3",
    supplier="Niels Lohmann",
    license="MIT",
    commit="9cca280a4d0ccf0c08f47a99aa71d1b0e52f8d03",
    source_url="https://github.com/nlohmann/json/archive/9cca280a4d0ccf0c08f47a99aa71d1b0e52f8d03.tar.gz",
)
DEPS = [ENGINE, CUDART, CRT, DSTORAGE, JSON_LIB]
PES = {
    "bin/ninfer-server.exe": pe(
        "cudart64_13.dll", "msvcp140.dll", "vcruntime140.dll", "kernel32.dll", delay=("dstorage.dll",)
    ),
    "bin/cudart64_13.dll": pe("kernel32.dll", file_version="6.14.11.13030", cuda="13.3.29"),
    "bin/msvcp140.dll": pe("vcruntime140.dll", "kernel32.dll", file_version="14.44.35211.0"),
    "bin/vcruntime140.dll": pe("kernel32.dll", file_version="14.44.35211.0"),
    "bin/dstorage.dll": pe("kernel32.dll", file_version="1.2.2.0"),
    "bin/dstoragecore.dll": pe("kernel32.dll", file_version="1.2.2.0"),
}


def make(
    deps: list[DependencyRecord] | None = None, pes: dict[str, PeInfo] | None = None, **over: Any
) -> bytes:
    args: dict[str, Any] = {
        "component_name": "ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64",
        "component_version": "v0.7.0-qwen38-4090-beta.2",
        "component_purl": "pkg:generic/ninfer@v0.7.0-qwen38-4090-beta.2",
        "supplier": "OMP NInfer",
        "dependencies": DEPS if deps is None else deps,
        "pe_infos": PES if pes is None else pes,
        "serial_identity": C33_IDENTITY,
        "epoch": EPOCH,
        "tool_name": "acme-release",
        "tool_version": "0.1.0",
        "tool_vendor": "Acme",
        "component_authors": ["Build Team"],
    }
    args.update(over)
    return cyclonedx_dependency_inventory(**args)


def load(data: bytes) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(data)
    return loaded


def components(d: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["bom-ref"]: c for c in d["components"]}


def props(component: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in component.get("properties", [])}


def graph(d: dict[str, Any]) -> dict[str, list[str]]:
    return {e["ref"]: e.get("dependsOn", []) for e in d["dependencies"]}


def test_c33_serial_number_is_uuid5_of_the_release_identity_and_output_is_byte_identical() -> None:
    first, second = make(), make()
    assert first == second
    assert hashlib.sha256(first).hexdigest() == hashlib.sha256(second).hexdigest()
    d = load(first)
    assert d["serialNumber"] == C33_SERIAL
    assert re.fullmatch(
        r"urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", d["serialNumber"]
    )
    assert d["metadata"]["timestamp"] == "2023-11-14T22:13:20+00:00"
    assert first.endswith(b"}\n") and not first.endswith(b"\n\n")
    assert (
        load(make(serial_identity="https://example.invalid/engine/1.0.0-rc.2"))["serialNumber"] != C33_SERIAL
    )


def test_c34_uses_the_1_6_shapes_and_passes_the_1_6_validator() -> None:
    data = make()
    d = load(data)
    assert d["specVersion"] == "1.6"
    assert d["$schema"] == "http://cyclonedx.org/schema/bom-1.6.schema.json"
    assert d["metadata"]["tools"] == {
        "components": [
            {
                "bom-ref": "tool:acme-release@0.1.0",
                "manufacturer": {"name": "Acme"},
                "name": "acme-release",
                "type": "application",
                "version": "0.1.0",
            }
        ]
    }
    root = d["metadata"]["component"]
    assert root["authors"] == [{"name": "Build Team"}]
    assert root["manufacturer"] == {"name": "OMP NInfer"}
    assert '"author"' not in data.decode()  # the deprecated string form never appears
    assert validate_cyclonedx_bytes(data) == []


ENGINE_REF = f"engine:ninfer@{ENGINE.version}"
CUDART_REF = "redistributable:nvidia-cuda-runtime@13.3.29"
CRT_REF = "redistributable:msvc-runtime@14.44.35112"
DSTORAGE_REF = "redistributable:Microsoft.Direct3D.DirectStorage@1.2.2"
ROOT_REF = "package:ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64@v0.7.0-qwen38-4090-beta.2"


def occurrences(component: dict[str, Any]) -> list[dict[str, str]]:
    found: list[dict[str, str]] = component.get("evidence", {}).get("occurrences", [])
    return found


def test_one_component_per_package_with_each_file_as_evidence() -> None:
    c = components(load(make()))
    assert sorted(c) == sorted(
        [ENGINE_REF, CUDART_REF, CRT_REF, DSTORAGE_REF, "vendored:nlohmann-json@3.11.3"]
    )
    cudart = c[CUDART_REF]
    assert cudart["version"] == "13.3.29"  # the purl's version (the wheel), not 6.14.11.13030
    assert cudart["purl"] == "pkg:pypi/nvidia-cuda-runtime@13.3.29"
    assert cudart["supplier"] == {"name": "NVIDIA Corporation"}
    assert cudart["licenses"] == [{"expression": "LicenseRef-NVIDIA-CUDA-EULA"}]
    assert occurrences(cudart) == [
        {
            "bom-ref": "file:bin/cudart64_13.dll",
            "location": "bin/cudart64_13.dll",
            "additionalContext": f"sha256:{sha('cudart')}",
        }
    ]
    assert props(cudart) == {
        "ninfer:file:bin/cudart64_13.dll:cuda-version": "13.3.29",
        "ninfer:file:bin/cudart64_13.dll:pe-file-version": "6.14.11.13030",
        "ninfer:file:bin/cudart64_13.dll:pe-machine": "x86_64",
        "ninfer:file:bin/cudart64_13.dll:pe-product-version": "6.14.11.13030",
        "ninfer:group": "cuda",
        "ninfer:kind": "redistributable",
        "ninfer:stand-in": "false",
    }
    assert [o["location"] for o in occurrences(c[CRT_REF])] == ["bin/msvcp140.dll", "bin/vcruntime140.dll"]
    assert c[CRT_REF]["version"] == "14.44.35112"
    assert props(c[CRT_REF])["ninfer:file:bin/msvcp140.dll:pe-file-version"] == "14.44.35211.0"
    assert c[ENGINE_REF]["type"] == "application"


def test_version_is_the_purl_version_for_every_component() -> None:
    from packageurl import PackageURL

    d = load(make())
    for c in [*d["components"], d["metadata"]["component"]]:
        if "purl" in c:
            assert c["version"] == PackageURL.from_string(c["purl"]).version, c["bom-ref"]
    vendored = components(d)["vendored:nlohmann-json@3.11.3"]
    assert vendored["version"] == "v3.11.3"
    assert props(vendored)["ninfer:lock-version"] == "3.11.3"


def test_two_components_with_one_purl_are_refused() -> None:
    twin = dataclasses.replace(DSTORAGE, name="dstorage-copy", purl=CUDART.purl)
    with pytest.raises(IntegrityError, match="is also the purl of"):
        make([ENGINE, CUDART, CRT, twin, JSON_LIB])


def test_root_component_carries_package_hash_licence_lifecycle_and_compositions() -> None:
    files = [f for d in DEPS for f in d.files] + [ShippedFile(path="NOTICE.txt", sha256=sha("notice"))]
    d = load(make(component_sha256=sha("zip"), package_files=files))
    root = d["metadata"]["component"]
    assert root["hashes"] == [{"alg": "SHA-256", "content": sha("zip")}]
    assert root["licenses"] == [
        {
            "expression": "Apache-2.0 AND LicenseRef-Microsoft-DirectStorage AND "
            "LicenseRef-Microsoft-VC-Redist AND LicenseRef-NVIDIA-CUDA-EULA AND MIT"
        }
    ]
    assert [o["location"] for o in occurrences(root)] == ["NOTICE.txt"]
    assert d["metadata"]["lifecycles"] == [{"phase": "build"}]
    assert d["compositions"] == [
        {"aggregate": "complete", "assemblies": [ROOT_REF]},
        # Every file imports kernel32.dll, which is not shipped: those dependencies are incomplete.
        {"aggregate": "incomplete", "dependencies": sorted([CRT_REF, CUDART_REF, DSTORAGE_REF, ENGINE_REF])},
        {"aggregate": "unknown", "dependencies": ["vendored:nlohmann-json@3.11.3"]},
    ]
    every = [o["location"] for c in [*d["components"], root] for o in occurrences(c)]
    assert sorted(every) == sorted(f.path for f in files)  # each shipped file exactly once


def test_a_file_shipped_by_two_packages_or_missing_from_the_zip_is_refused() -> None:
    twice = dataclasses.replace(DSTORAGE, files=(*DSTORAGE.files, CUDART.files[0]))
    with pytest.raises(IntegrityError, match="a file is evidence of one component"):
        make([ENGINE, CUDART, CRT, twice, JSON_LIB])
    files = [f for d in DEPS for f in d.files if f.path != "bin/dstorage.dll"]
    with pytest.raises(
        IntegrityError, match=r"bin/dstorage.dll: package_files: shipped file is not a package"
    ):
        make(package_files=files)


def test_catalog_cpes_reach_the_components() -> None:
    cdx = dataclasses.replace(CRT, cpe="cpe:2.3:a:microsoft:visual_c\\+\\+:14.44.35112:*:*:*:*:*:*:*")
    c = components(load(make([ENGINE, CUDART, cdx, DSTORAGE, JSON_LIB])))
    assert c[CRT_REF]["cpe"] == "cpe:2.3:a:microsoft:visual_c\\+\\+:14.44.35112:*:*:*:*:*:*:*"
    assert "cpe" not in c[CUDART_REF]


def test_stand_ins_are_flagged_and_described() -> None:
    c = components(load(make()))
    assert props(c[DSTORAGE_REF])["ninfer:stand-in"] == "true"
    assert c[DSTORAGE_REF]["description"].startswith("STAND-IN, not the real Microsoft DirectStorage runtime")
    assert "description" not in c[CUDART_REF]


def test_vendored_source_is_a_library_with_source_reference() -> None:
    v = components(load(make()))["vendored:nlohmann-json@3.11.3"]
    assert v["type"] == "library"
    assert v["purl"] == "pkg:github/nlohmann/json@v3.11.3"
    assert v["externalReferences"] == [{"type": "source-distribution", "url": JSON_LIB.source_url}]
    assert props(v)["ninfer:commit"] == "9cca280a4d0ccf0c08f47a99aa71d1b0e52f8d03"
    assert "hashes" not in v


def test_dependency_graph_follows_import_tables() -> None:
    g = graph(load(make()))
    assert g == {
        ROOT_REF: [ENGINE_REF],
        # the engine imports cudart and the CRT, delay-imports dstorage.dll (dstoragecore.dll is loaded
        # by name at run time, but belongs to the same package), and compiles in the vendored source.
        ENGINE_REF: sorted([CRT_REF, DSTORAGE_REF, CUDART_REF, "vendored:nlohmann-json@3.11.3"]),
        CRT_REF: [],  # msvcp140.dll imports vcruntime140.dll: the same package
        CUDART_REF: [],
        DSTORAGE_REF: [],
        "vendored:nlohmann-json@3.11.3": [],
    }


def test_a_package_no_import_reaches_hangs_off_the_root() -> None:
    pes = {**PES, "bin/ninfer-server.exe": pe("cudart64_13.dll", "msvcp140.dll")}
    assert graph(load(make(pes=pes)))[ROOT_REF] == sorted([DSTORAGE_REF, ENGINE_REF])


def test_pe_version_disagreeing_with_the_lock_is_an_integrity_error() -> None:
    stale = dataclasses.replace(CUDART, version="13.2.0", purl="pkg:pypi/nvidia-cuda-runtime@13.2.0")
    with pytest.raises(IntegrityError) as info:
        make([ENGINE, stale, CRT, DSTORAGE, JSON_LIB])
    assert (
        str(info.value)
        == "bin/cudart64_13.dll: version: PE version strings say CUDA 13.3.29, lock says 13.2.0"
    )


def test_duplicate_bom_refs_are_refused_not_renamed() -> None:
    twice = dataclasses.replace(CUDART, name="nvidia-cuda-runtime-copy")
    with pytest.raises(IntegrityError, match=r"bom-ref 'file:bin/cudart64_13.dll' is also used by"):
        make([ENGINE, CUDART, twice], {p: PES[p] for p in ("bin/ninfer-server.exe", "bin/cudart64_13.dll")})


def test_shipped_pe_without_pe_information_is_an_input_error() -> None:
    pes = {k: v for k, v in PES.items() if k != "bin/msvcp140.dll"}
    with pytest.raises(
        InputError, match=r"bin/msvcp140.dll: pe_infos: shipped PE file has no PE information"
    ):
        make(pes=pes)


def test_malformed_records_are_all_reported() -> None:
    bad_group = dataclasses.replace(CUDART, group=None)
    bad_hash = dataclasses.replace(CRT, files=(ShippedFile(path="bin\\msvcp140.dll", sha256="ABC"),))
    with pytest.raises(InputError) as info:
        make([ENGINE, bad_group, bad_hash])
    text = str(info.value)
    assert "redistributable needs a group" in text
    assert "backslash" in text and "not 64 lowercase hex" in text


def test_free_text_licence_is_refused() -> None:
    with pytest.raises(InputError, match="is not a licence id"):
        make([dataclasses.replace(JSON_LIB, license="Acme Gov't (JPEG/netpbm)")], pes={})


def test_parse_cyclonedx_hashes_keys_files_by_zip_path() -> None:
    hashes = parse_cyclonedx_hashes(make())
    expected = {f.path: f.sha256 for d in DEPS for f in d.files}
    assert hashes == expected


def test_validate_cyclonedx_bytes_reports_what_the_schema_misses() -> None:
    d = load(make())
    d["components"][1]["bom-ref"] = d["components"][0]["bom-ref"]
    messages = validate_cyclonedx_bytes((json.dumps(d, indent=2) + "\n").encode())
    assert any("is used more than once" in m for m in messages)
    d = load(make())
    d["serialNumber"] = "urn:uuid:1.5.0-1700000000"
    messages = validate_cyclonedx_bytes((json.dumps(d) + "\n").encode())
    assert any(m.startswith("schema:") for m in messages)
    assert validate_cyclonedx_bytes(make() + b"\n") == ["document must end with exactly one LF"]


def test_real_dlls_and_a_mingw_engine(tmp_path: Path) -> None:
    """Real cudart64_13.dll / msvcp140.dll / vcruntime140.dll from the wheels, with the lock's
    versions (13.3.29, 14.44.35112), and a mingw-built engine exe that imports cudart64_13.dll."""
    dlls = fetch_wheel_dlls()
    built = build_sample_pes(tmp_path / "pe")
    paths = {
        "bin/ninfer-server.exe": built["ninfer-server.exe"],
        "bin/cudart64_13.dll": dlls["cudart64_13.dll"],
        "bin/msvcp140.dll": dlls["msvcp140.dll"],
        "bin/vcruntime140.dll": dlls["vcruntime140.dll"],
        "bin/dstorage.dll": built["dstorage.dll"],
    }
    digests = {zp: hashlib.sha256(p.read_bytes()).hexdigest() for zp, p in paths.items()}

    def files(*names: str) -> tuple[ShippedFile, ...]:
        return tuple(ShippedFile(path=n, sha256=digests[n]) for n in names)

    deps = [
        dataclasses.replace(ENGINE, files=files("bin/ninfer-server.exe")),
        dataclasses.replace(CUDART, files=files("bin/cudart64_13.dll")),
        dataclasses.replace(CRT, files=files("bin/msvcp140.dll", "bin/vcruntime140.dll")),
        dataclasses.replace(DSTORAGE, files=files("bin/dstorage.dll")),
    ]
    data = make(deps, {zp: read_pe(p) for zp, p in paths.items()})
    d = load(data)
    c = components(d)
    assert props(c[CUDART_REF])["ninfer:file:bin/cudart64_13.dll:cuda-version"] == "13.3.29"
    assert props(c[CUDART_REF])["ninfer:file:bin/cudart64_13.dll:pe:FileVersion"] == "6,14,11,13030"
    assert props(c[CRT_REF])["ninfer:file:bin/msvcp140.dll:pe-file-version"] == "14.44.35211.0"
    assert props(c[DSTORAGE_REF])["ninfer:file:bin/dstorage.dll:pe-file-version"] == "1.2.2.0"
    g = graph(d)
    assert g[ENGINE_REF] == sorted([DSTORAGE_REF, CUDART_REF])
    assert parse_cyclonedx_hashes(data) == digests
    assert validate_cyclonedx_bytes(data) == []


def test_pe_information_for_an_unaccounted_file_is_an_input_error() -> None:
    pes = {**PES, "bin/stray.dll": pe("kernel32.dll", file_version="1.0.0.0")}
    with pytest.raises(InputError, match=r"bin/stray.dll: pe_infos: PE file is not a shipped file of any"):
        make(pes=pes)


def test_non_pe_files_of_a_dependency_are_evidence_of_it() -> None:
    notice = dataclasses.replace(
        CUDART, files=(*CUDART.files, ShippedFile(path="licenses/cuda/License.txt", sha256=sha("eula")))
    )
    c = components(load(make([ENGINE, notice, CRT, DSTORAGE, JSON_LIB])))
    assert [o["location"] for o in occurrences(c[CUDART_REF])] == [
        "bin/cudart64_13.dll",
        "licenses/cuda/License.txt",
    ]


def test_cross_check_cyclonedx_against_zip_members() -> None:
    data = make()
    members = {f.path: f.sha256 for d in DEPS for f in d.files}
    assert cross_check_cyclonedx(data, members) == []
    del members["bin/dstorage.dll"]
    members["bin/cudart64_13.dll"] = sha("tampered")
    members["config.toml"] = sha("cfg")
    problems = cross_check_cyclonedx(data, members)
    assert [(p.field, p.message) for p in problems] == [
        ("bin/cudart64_13.dll", "SHA-256 differs from the zip member"),
        ("bin/dstorage.dll", "component file is not in the zip"),
        ("config.toml", "zip member is listed by no component"),
    ]


def test_stand_in_description_is_not_repeated() -> None:
    prefix = "STAND-IN, not the real Microsoft DirectStorage runtime: "
    prefix += "a placeholder file for samples and tests."
    worded = dataclasses.replace(DSTORAGE, description="STAND-IN sample file, not the real redistributable")
    other = dataclasses.replace(DSTORAGE, description="DirectStorage runtime")
    for dep, expected in ((worded, prefix), (other, f"{prefix} DirectStorage runtime")):
        c = components(load(make([ENGINE, CUDART, CRT, dep, JSON_LIB])))
        assert c[DSTORAGE_REF]["description"] == expected


def test_prewarm_validators_loads_them_in_a_daemon_thread() -> None:
    thread = prewarm_validators()
    assert thread.daemon
    thread.join(timeout=300)
    assert not thread.is_alive()
    assert validate_cyclonedx_bytes(make()) == []


def test_one_prewarm_thread_per_process() -> None:
    """A second prewarm (fetch starts one for its downloads, its verify asks again) is the first
    thread: two prewarm threads importing the same packages at once race in the import system."""
    first = prewarm_validators()
    assert prewarm_validators() is first
    first.join(timeout=300)
    assert prewarm_validators() is first  # done, still the one: the imports are not repeated


def _engine_with(n: int) -> list[DependencyRecord]:
    files = tuple(ShippedFile(path=f"bin/extra/f{i:05d}.bin", sha256=sha(str(i))) for i in range(n))
    return [dataclasses.replace(ENGINE, files=ENGINE.files + files), *DEPS[1:]]


def test_output_is_the_librarys_json_writer_output(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ours skips the library's quadratic Bom.validate() / BomRefDiscriminator passes; the bytes
    # must be what the library's own JsonV1Dot6.generate writes.
    import ninfer_release.sbom._cyclonedx as cdx

    ours = make(deps=_engine_with(5))
    from cyclonedx.output.json import JsonV1Dot6

    monkeypatch.setattr(cdx, "_json_v1_6", lambda: JsonV1Dot6)
    assert make(deps=_engine_with(5)) == ours


@pytest.mark.parametrize(
    "items",
    [
        [1, True],
        [0, False],
        [1, 1.0],
        ["1", 1],
        [None, None],
        [[1, 2], [2, 1]],
        [{"a": 1}, {"a": 1}],
        [{"a": 1}, {"a": True}],
        [{"a": [1, {"b": True}]}, {"a": [1.0, {"b": True}]}],
        [{"a": 1, "b": 2}, {"b": 2, "a": 1}],
        [{"a": 1}, {"a": 1, "b": 2}],
    ],
)
def test_linear_unique_items_has_jsonschemas_verdict(items: list[Any]) -> None:
    from jsonschema._utils import uniq  # type: ignore[import-untyped]

    from ninfer_release.sbom._cyclonedx import _frozen

    assert (len({_frozen(i) for i in items}) == len(items)) == uniq(items)


def test_duplicate_component_is_a_schema_error() -> None:
    d = load(make())
    d["components"].append(dict(d["components"][0]))
    from ninfer_release.sbom._cyclonedx import _strict_validator

    errors = list(_strict_validator().iter_errors(d))
    assert [(e.validator, e.message.endswith("has non-unique elements")) for e in errors] == [
        ("uniqueItems", True)
    ]
    assert validate_cyclonedx_bytes((json.dumps(d, indent=2) + "\n").encode())[0].startswith(
        "schema: $.components:"
    )


def _count_calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    counter = [0]
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counter[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return counter


def test_generation_and_validation_are_linear_in_components(monkeypatch: pytest.MonkeyPatch) -> None:
    # Operation counts, not time: doubling the components must not quadruple the equality tests
    # (jsonschema's uniqueItems compared every pair; Bom.register_dependency scanned every entry).
    import jsonschema._utils  # type: ignore[import-untyped]
    from cyclonedx.model.bom_ref import BomRef

    data = {n: make(deps=_engine_with(n)) for n in (150, 300)}
    equal = _count_calls(monkeypatch, jsonschema._utils, "equal")
    bom_ref_eq = _count_calls(monkeypatch, BomRef, "__eq__")
    counts = {}
    for n in (150, 300):
        equal[0] = bom_ref_eq[0] = 0
        assert validate_cyclonedx_bytes(data[n]) == []
        validate_equal = equal[0]
        assert make(deps=_engine_with(n)) == data[n]
        counts[n] = (validate_equal, bom_ref_eq[0])
    assert counts[300][0] <= 2.5 * counts[150][0] + 100, counts
    assert counts[300][1] <= 2.5 * counts[150][1] + 100, counts


_ODD_MEMBERS = [
    "NOTICE.txt",
    "a/b.txt",
    "a-b.txt",
    "a/B.txt",
    "A/b.txt",
    "licenses/odd name (1)+[x].txt",
    "lib/\u00e9t\u00e9/\u4e2d\u6587.bin",
    "quote'and`tick.json",
    "z",
]


def _members(n: int) -> list[ShippedFile]:
    extra = [ShippedFile(path=p, sha256=sha(p)) for p in _ODD_MEMBERS]
    extra += [ShippedFile(path=f"licenses/extra/f{i:05d}.txt", sha256=sha(str(i))) for i in range(n)]
    return [f for d in DEPS for f in d.files] + list(reversed(extra))


@pytest.mark.parametrize(("n_root", "n_engine"), [(0, 0), (1, 1), (30, 40)])
def test_occurrences_written_as_the_library_writes_them(
    n_root: int, n_engine: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ninfer_release.sbom._cyclonedx as cdx

    deps = _engine_with(n_engine)
    files = [f for d in deps for f in d.files] + _members(n_root)[len([f for d in DEPS for f in d.files]) :]
    ours = make(deps=deps, component_sha256=sha("zip"), package_files=files)
    monkeypatch.setattr(cdx, "_PER_OCCURRENCE_MODELS", True)
    assert make(deps=deps, component_sha256=sha("zip"), package_files=files) == ours


def test_occurrences_fall_back_to_the_library_when_it_writes_one_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ninfer_release.sbom._cyclonedx as cdx

    reference = make(component_sha256=sha("zip"), package_files=_members(5))
    original = cdx._occurrence_dict
    monkeypatch.setattr(
        cdx, "_occurrence_dict", lambda keys, t: {**original(keys, t), "location": "elsewhere"}
    )
    assert make(component_sha256=sha("zip"), package_files=_members(5)) == reference


def test_held_occurrences_build_no_library_object_per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from cyclonedx.model.component_evidence import Occurrence

    built = [0]
    original = Occurrence.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        built[0] += 1
        original(self, *args, **kwargs)

    monkeypatch.setattr(Occurrence, "__init__", counted)
    d = load(make(component_sha256=sha("zip"), package_files=_members(50)))
    assert len(d["metadata"]["component"]["evidence"]["occurrences"]) == 50 + len(_ODD_MEMBERS)
    assert built[0] == len([c for c in d["components"] if "evidence" in c]) + 1  # one per evidence list


def test_a_failing_prewarm_prints_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The prewarm thread is only a head start: an import that fails in it (as when the interpreter
    tears the import system down after Ctrl-C) raises nothing and prints no traceback."""
    import threading

    from ninfer_release.sbom import _cyclonedx

    def broken() -> None:
        raise KeyError("spdx_tools.spdx")

    monkeypatch.setattr(_cyclonedx, "_strict_validator", broken)
    seen: list[object] = []
    monkeypatch.setattr(threading, "excepthook", seen.append)
    _cyclonedx.prewarm_validators().join(timeout=60)
    assert seen == []
    assert "Traceback" not in capsys.readouterr().err


def _pe_of(company: str, version: str, signer: str | None = None) -> PeInfo:
    strings = MappingProxyType({"CompanyName": company})
    return dataclasses.replace(
        pe("kernel32.dll", file_version=version), version_strings=strings, signer=signer
    )


def test_manufacturer_is_the_files_company_and_the_signer_is_recorded_per_file(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pes = dict(PES)
    pes["bin/msvcp140.dll"] = _pe_of("Microsoft Corporation", "14.44.35211.0", "Microsoft Code Signer")
    pes["bin/vcruntime140.dll"] = _pe_of("Microsoft Corporation", "14.44.35211.0")
    crt = dataclasses.replace(CRT, supplier="NOASSERTION")
    c = components(load(make([ENGINE, CUDART, crt, DSTORAGE, JSON_LIB], pes)))[
        "redistributable:msvc-runtime@14.44.35112"
    ]
    assert c["manufacturer"] == {"name": "Microsoft Corporation"}
    assert "supplier" not in c  # NOASSERTION: who distributed the wheel is not known
    assert props(c)["ninfer:file:bin/msvcp140.dll:authenticode-signer"] == "Microsoft Code Signer"
    assert "ninfer:file:bin/vcruntime140.dll:authenticode-signer" not in props(c)
    assert props(c)["ninfer:file:bin/msvcp140.dll:pe-file-version"] == "14.44.35211.0"
    assert c["version"] == "14.44.35112"  # the package version
    warned = [
        r.getMessage() for r in caplog.records if "differs from the file's FileVersion" in r.getMessage()
    ]
    tail = "lock version 14.44.35112 (package msvc-runtime) differs from the file's FileVersion 14.44.35211.0"
    assert warned == [f"bin/msvcp140.dll: {tail}", f"bin/vcruntime140.dll: {tail}"]


def test_two_company_names_give_no_manufacturer() -> None:
    pes = dict(PES)
    pes["bin/msvcp140.dll"] = _pe_of("Microsoft Corporation", "14.44.35211.0")
    pes["bin/vcruntime140.dll"] = _pe_of("Contoso", "14.44.35211.0")
    c = components(load(make(pes=pes)))["redistributable:msvc-runtime@14.44.35112"]
    assert "manufacturer" not in c
