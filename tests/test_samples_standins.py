"""The committed stand-in binaries in samples/standins/: reproducible, honest, real import tables."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pefile
import pytest

from conftest import REPO, need_tool
from ninfer_release.samples import default_wheel_cache, ensure_wheel, load_spec

STANDINS = REPO / "samples" / "standins"
NAMES = ["dstorage.dll", "dstoragecore.dll", "ninfer-server-sm_86.exe", "ninfer-server-sm_89.exe"]


def _pe(path: Path) -> pefile.PE:
    pe = pefile.PE(str(path), fast_load=True)
    pe.parse_data_directories(
        directories=[
            pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
            pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"],
            pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_RESOURCE"],
        ]
    )
    return pe


def _imports(path: Path) -> dict[str, list[str]]:
    pe = _pe(path)
    out = {
        e.dll.decode(): sorted(i.name.decode() for i in e.imports)
        for e in getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])
    }
    pe.close()
    return out


def _exports(path: Path) -> list[str]:
    pe = _pe(path)
    names = sorted(s.name.decode() for s in pe.DIRECTORY_ENTRY_EXPORT.symbols if s.name)
    pe.close()
    return names


def _strings(path: Path) -> dict[str, str]:
    pe = _pe(path)
    out: dict[str, str] = {}
    for info in pe.FileInfo:
        for entry in info:
            for table in getattr(entry, "StringTable", []):
                out.update({k.decode(): v.decode() for k, v in table.entries.items()})
    pe.close()
    return out


def test_committed_standins_are_exactly_the_four_files() -> None:
    assert sorted(p.name for p in STANDINS.iterdir()) == NAMES


def test_rebuilding_standins_gives_byte_identical_files(tmp_path: Path) -> None:
    """samples/build-standins.sh reproduces the committed binaries bit for bit, from any directory."""
    for tool in ("x86_64-w64-mingw32-gcc", "x86_64-w64-mingw32-windres", "x86_64-w64-mingw32-dlltool"):
        need_tool(tool)
    out = tmp_path / "rebuilt"
    env = {k: v for k, v in os.environ.items() if k not in ("MINGW_CC", "MINGW_WINDRES", "MINGW_DLLTOOL")}
    proc = subprocess.run(
        ["bash", str(REPO / "samples" / "build-standins.sh"), str(out)],
        capture_output=True,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert sorted(p.name for p in out.iterdir()) == NAMES
    for name in NAMES:
        assert (out / name).read_bytes() == (STANDINS / name).read_bytes(), name


@pytest.mark.parametrize("arch", ["sm_89", "sm_86"])
def test_engine_standin_imports_name_the_real_runtime_dlls(arch: str) -> None:
    assert _imports(STANDINS / f"ninfer-server-{arch}.exe") == {
        "cudart64_13.dll": ["cudaGetDeviceCount", "cudaRuntimeGetVersion"],
        "msvcp140.dll": ["_Query_perf_frequency"],
        "vcruntime140.dll": ["memset"],
        "vcruntime140_1.dll": ["__CxxFrameHandler4"],
        "dstorage.dll": ["DStorageGetFactory"],
        "KERNEL32.dll": ["ExitProcess", "GetStdHandle", "WriteFile"],
    }


@pytest.mark.parametrize("arch", ["sm_89", "sm_86"])
def test_engine_standin_version_resource_says_what_it_is(arch: str) -> None:
    s = _strings(STANDINS / f"ninfer-server-{arch}.exe")
    assert s["CompanyName"] == "OMP NInfer sample"
    assert s["FileDescription"] == "NInfer engine stand-in (sample; not the real engine)"
    assert s["ProductVersion"] == "0.7.0-beta.2"
    assert s["OriginalFilename"] == "ninfer-server.exe"
    assert s["CudaArch"] == arch


def test_dstorage_standins_export_the_public_api_and_say_stand_in() -> None:
    assert _exports(STANDINS / "dstorage.dll") == [
        "DStorageCreateCompressionCodec",
        "DStorageGetFactory",
        "DStorageSetConfiguration",
    ]
    assert _imports(STANDINS / "dstorage.dll") == {
        "dstoragecore.dll": ["NInferStandInCreateCompressionCodec"]
    }
    assert _exports(STANDINS / "dstoragecore.dll") == ["NInferStandInCreateCompressionCodec"]
    for name in ("dstorage.dll", "dstoragecore.dll"):
        s = _strings(STANDINS / name)
        assert s["FileDescription"] == "STAND-IN for Microsoft DirectStorage (sample only)"
        assert s["ProductVersion"] == "0.1.0"
        assert s["OriginalFilename"] == name


def test_engine_standin_imports_are_real_exports_of_the_pinned_dlls(tmp_path: Path) -> None:
    """Every name the stand-in imports from a redistributable is exported by the pinned real DLL."""
    spec = load_spec(REPO)
    cache = default_wheel_cache(os.environ)
    real: dict[str, list[str]] = {}
    for pin in spec.pins.wheels:
        if pin.full_only:
            continue
        wheel = ensure_wheel(pin, cache=cache, platform="win_amd64", python_version="3.11").path
        with zipfile.ZipFile(wheel) as zf:
            for m in pin.members:
                if m.kind == "redistributable":
                    dest = tmp_path / m.dest.rsplit("/", 1)[-1]
                    dest.write_bytes(zf.read(m.member))
                    real[dest.name.lower()] = _exports(dest)
    imports = _imports(STANDINS / "ninfer-server-sm_89.exe")
    checked = 0
    for dll, names in imports.items():
        if dll.lower() in real:
            assert set(names) <= set(real[dll.lower()]), dll
            checked += 1
    assert checked == 4  # cudart64_13, msvcp140, vcruntime140, vcruntime140_1
