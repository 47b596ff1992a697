"""PE reading (pefile): version resource, CUDA version from strings, imports, delay imports.

Two kinds of inputs:

* tiny PE images built here with mingw-w64 (``windres`` VERSIONINFO, ``-Wl,--no-insert-timestamp``),
  so these tests always run where CI installs mingw;
* the real NVIDIA / Microsoft DLLs from PyPI's ``win_amd64`` wheels, fetched once into
  ``~/.cache/ninfer-release/wheels`` (skipped, or failed under CI, when PyPI is unreachable).

The builders are imported by ``test_cyclonedx.py``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import need_tool, unavailable
from ninfer_release.errors import InputError
from ninfer_release.sbom import (
    PeInfo,
    check_pe_against_lock,
    cuda_version_from_strings,
    pe_component_version,
    read_pe,
    read_pe_bytes,
)

WHEELS = {
    "nvidia_cuda_runtime-13.3.29-py3-none-win_amd64.whl": "nvidia-cuda-runtime==13.3.29",
    "msvc_runtime-14.44.35112-cp311-cp311-win_amd64.whl": "msvc-runtime==14.44.35112",
}
#: zip member in a wheel → (the name the DLL is shipped under, its SHA-256 as measured 2026-11-29).
WHEEL_DLLS = {
    "nvidia/cu13/bin/x86_64/cudart64_13.dll": (
        "cudart64_13.dll",
        "b00ca6f53699120da815bf3e06e2e4285fae2f201235b883dcbb50eec51e2a2a",
    ),
    "msvc_runtime-14.44.35112.data/data/Scripts/msvcp140.dll": (
        "msvcp140.dll",
        "0f885b509a685d2bbfa652fed26b5fb31d88fbdab0a978c641d1c7b8aa460aa9",
    ),
    "msvc_runtime-14.44.35112.data/data/Scripts/vcruntime140.dll": (
        "vcruntime140.dll",
        "d5e4d9a3e835fa679450145d6a7d94e36573a509317111904d9b3712c30d9066",
    ),
}

_VERSION_RC = """1 VERSIONINFO
FILEVERSION {fixed}
PRODUCTVERSION {fixed}
BEGIN
  BLOCK "StringFileInfo"
  BEGIN
    BLOCK "040904E4"
    BEGIN
{values}
    END
  END
  BLOCK "VarFileInfo"
  BEGIN
    VALUE "Translation", 0x409, 1252
  END
END
"""


def _run(*args: str | Path, cwd: Path) -> None:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{args}: {proc.stderr}"


def _version_object(work: Path, name: str, fixed: str, strings: dict[str, str]) -> Path:
    values = "\n".join(f'      VALUE "{k}", "{v}"' for k, v in strings.items())
    rc = work / f"{name}.rc"
    rc.write_text(_VERSION_RC.format(fixed=fixed, values=values))
    obj = work / f"{name}.res.o"
    _run(need_tool("x86_64-w64-mingw32-windres"), rc, "-O", "coff", "-o", obj, cwd=work)
    return obj


def _patch_delay_directory(exe: Path) -> None:
    """Point DataDirectory[13] at the delay-import descriptor GNU ld emitted but did not register.

    GNU ld links dlltool's ``--output-delaylib`` thunks but leaves the delay-import data
    directory empty; MSVC's linker fills it. Patching it gives a real delay-import table to read.
    """
    import pefile

    symbols = subprocess.run(
        [need_tool("x86_64-w64-mingw32-nm"), str(exe)], capture_output=True, text=True, check=True
    ).stdout
    address = next(
        int(line.split()[0], 16) for line in symbols.splitlines() if "__DELAY_IMPORT_DESCRIPTOR_" in line
    )
    pe = pefile.PE(str(exe))
    directory = pe.OPTIONAL_HEADER.DATA_DIRECTORY[
        pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"]
    ]
    directory.VirtualAddress = address - pe.OPTIONAL_HEADER.ImageBase
    directory.Size = 64  # this descriptor plus the all-zero terminator
    data = pe.write()
    pe.close()
    exe.write_bytes(bytes(data))


def build_sample_pes(work: Path) -> dict[str, Path]:
    """Build with mingw: a CUDA-runtime-like DLL (NVIDIA-style version strings), a DirectStorage-like
    DLL (FileVersion 1.2.2.0), and ``ninfer-server.exe`` importing the first and delay-importing the
    second. Returns shipped name → path.
    """
    gcc = need_tool("x86_64-w64-mingw32-gcc")
    dlltool = need_tool("x86_64-w64-mingw32-dlltool")
    work.mkdir(parents=True, exist_ok=True)
    cuda_res = _version_object(
        work,
        "cudart",
        "6,14,11,13030",
        {
            "CompanyName": "ninfer-release test fixture",
            "FileDescription": "NVIDIA CUDA Runtime, Version 13.3.29 ",
            "FileVersion": "6,14,11,13030",
            "ProductName": "NVIDIA CUDA 13.3.29 Runtime",
            "ProductVersion": "6,14,11,13030",
        },
    )
    ds_res = _version_object(
        work,
        "dstorage",
        "1,2,2,0",
        {
            "CompanyName": "ninfer-release test fixture (STAND-IN)",
            "FileDescription": "DirectStorage stand-in",
            "FileVersion": "1.2.2.0",
            "ProductName": "DirectStorage stand-in",
            "ProductVersion": "1.2.2.0",
        },
    )
    (work / "cudart.c").write_text("__declspec(dllexport) int fake_cuda(void) { return 13; }\n")
    (work / "dstorage.c").write_text("__declspec(dllexport) int fake_ds(void) { return 1; }\n")
    (work / "dstorage.def").write_text("LIBRARY dstorage.dll\nEXPORTS\nfake_ds\n")
    (work / "server.c").write_text(
        "int fake_cuda(void);\nint fake_ds(void);\nint main(void) { return fake_cuda() + fake_ds(); }\n"
    )
    flags = ["-Wl,--no-insert-timestamp", "-s"]
    _run(gcc, "-shared", "-o", "cudart64_13.dll", "cudart.c", cuda_res, *flags, cwd=work)
    _run(gcc, "-shared", "-o", "dstorage.dll", "dstorage.c", ds_res, *flags, cwd=work)
    _run(dlltool, "--input-def", "dstorage.def", "--output-delaylib", "libdstorage_delay.a", cwd=work)
    _run(
        gcc,
        "-o",
        "ninfer-server.exe",
        "server.c",
        "cudart64_13.dll",
        "libdstorage_delay.a",
        *flags[:1],
        cwd=work,
    )
    _patch_delay_directory(work / "ninfer-server.exe")
    return {name: work / name for name in ("cudart64_13.dll", "dstorage.dll", "ninfer-server.exe")}


def fetch_wheel_dlls() -> dict[str, Path]:
    """The real DLLs of the CUDA runtime and MSVC runtime wheels, checked by SHA-256.

    Wheels are cached in ``$NINFER_CACHE/wheels`` (default ``~/.cache/ninfer-release/wheels``, the
    cache ``samples fetch`` uses) and downloaded once with ``pip download --no-deps
    --only-binary=:all: --platform win_amd64``; skips (fails under CI) when PyPI cannot be reached.
    """
    root = Path(os.environ.get("NINFER_CACHE") or Path.home() / ".cache" / "ninfer-release")
    cache = root / "wheels"
    cache.mkdir(parents=True, exist_ok=True)
    missing = [spec for name, spec in WHEELS.items() if not (cache / name).is_file()]
    if missing:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--platform",
             "win_amd64", "--python-version", "3.11", "-d", str(cache), "-q", *missing],
            capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
        if proc.returncode != 0:
            unavailable(f"cannot download {missing} from PyPI: {proc.stderr.strip()[-300:]}")
    out: dict[str, Path] = {}
    dll_dir = root / "test-dlls"
    dll_dir.mkdir(exist_ok=True)
    for wheel in WHEELS:
        with zipfile.ZipFile(cache / wheel) as zf:
            for member, (shipped, sha256) in WHEEL_DLLS.items():
                if member not in zf.namelist():
                    continue
                target = dll_dir / shipped
                if not target.is_file() or hashlib.sha256(target.read_bytes()).hexdigest() != sha256:
                    target.write_bytes(zf.read(member))
                assert hashlib.sha256(target.read_bytes()).hexdigest() == sha256, f"{wheel}: {member}"
                out[shipped] = target
    assert sorted(out) == sorted(name for name, _ in WHEEL_DLLS.values())
    return out


@pytest.fixture(scope="session")
def sample_pes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_sample_pes(tmp_path_factory.mktemp("pe"))


@pytest.fixture(scope="session")
def wheel_dlls() -> dict[str, Path]:
    return fetch_wheel_dlls()


# --- built with mingw ---------------------------------------------------------------------------


def test_mingw_dll_version_strings_and_cuda_version(sample_pes: dict[str, Path]) -> None:
    info = read_pe(sample_pes["cudart64_13.dll"])
    assert info.machine == "x86_64"
    assert info.file_version == "6.14.11.13030"
    assert info.version_strings["FileDescription"] == "NVIDIA CUDA Runtime, Version 13.3.29"  # stripped
    assert info.version_strings["ProductName"] == "NVIDIA CUDA 13.3.29 Runtime"
    # The CUDA version comes from the strings, never from NVIDIA's fixed 6.14.11.N FileVersion.
    assert info.cuda_version == "13.3.29"
    assert pe_component_version(info, group="cuda") == "13.3.29"


def test_mingw_exe_imports_and_delay_imports(sample_pes: dict[str, Path]) -> None:
    info = read_pe(sample_pes["ninfer-server.exe"])
    assert "cudart64_13.dll" in info.imports
    assert "kernel32.dll" in info.imports  # lowercased
    assert info.delay_imports == ("dstorage.dll",)
    assert "dstorage.dll" not in info.imports
    assert info.all_imports == tuple(sorted({*info.imports, "dstorage.dll"}))
    assert info.file_version is None and info.cuda_version is None
    assert dict(info.version_strings) == {}


def test_read_pe_bytes_equals_read_pe(sample_pes: dict[str, Path]) -> None:
    path = sample_pes["dstorage.dll"]
    assert read_pe_bytes(path.read_bytes(), name="bin/dstorage.dll") == read_pe(path)
    assert read_pe(path).file_version == "1.2.2.0"


def test_not_a_pe_is_an_input_error_naming_the_file(tmp_path: Path) -> None:
    bogus = tmp_path / "fake.dll"
    bogus.write_bytes(b"MZ but not really a PE image")
    with pytest.raises(InputError, match=r"fake\.dll: not a readable PE image"):
        read_pe(bogus)


# --- version policy --------------------------------------------------------------------------


def _info(**kw: object) -> PeInfo:
    base: dict[str, object] = {"machine": "x86_64", "file_version": None, "product_version": None}
    base.update(kw)
    return PeInfo(**base)  # type: ignore[arg-type]


def test_cuda_version_mismatch_names_file_and_both_versions() -> None:
    info = _info(file_version="6.14.11.13030", cuda_version="13.3.29")
    assert (
        check_pe_against_lock(path="bin/cudart64_13.dll", group="cuda", lock_version="13.3.29", pe=info) == []
    )
    (problem,) = check_pe_against_lock(
        path="bin/cudart64_13.dll", group="cuda", lock_version="13.2.0", pe=info
    )
    assert (
        str(problem) == "bin/cudart64_13.dll: version: PE version strings say CUDA 13.3.29, lock says 13.2.0"
    )


def test_cuda_dll_without_cuda_strings_is_refused_unless_stand_in() -> None:
    info = _info(file_version="6.14.11.13030")
    assert check_pe_against_lock(path="bin/x.dll", group="cuda", lock_version="13.3.29", pe=info)
    assert (
        check_pe_against_lock(path="bin/x.dll", group="cuda", lock_version="13.3.29", pe=info, stand_in=True)
        == []
    )


def test_other_group_compares_whole_file_version_ignoring_trailing_zeros() -> None:
    info = _info(file_version="1.2.2.0")
    assert check_pe_against_lock(path="bin/d.dll", group="directstorage", lock_version="1.2.2", pe=info) == []
    (problem,) = check_pe_against_lock(path="bin/d.dll", group="directstorage", lock_version="1.2.3", pe=info)
    assert "1.2.2.0" in problem.message and "1.2.3" in problem.message
    assert check_pe_against_lock(path="bin/d.dll", group="other", lock_version="1.2", pe=_info())
    assert (
        check_pe_against_lock(path="bin/d.dll", group="other", lock_version="1.2", pe=_info(), stand_in=True)
        == []
    )


def test_cuda_strings_that_disagree_are_refused() -> None:
    strings = {
        "FileDescription": "NVIDIA CUDA Runtime, Version 13.3.29",
        "ProductName": "NVIDIA CUDA 13.2.1 Runtime",
    }
    with pytest.raises(InputError, match="disagree"):
        cuda_version_from_strings(strings, where="bin/cudart64_13.dll")
    assert cuda_version_from_strings({"FileVersion": "6,14,11,13030"}) is None


# --- the real DLLs --------------------------------------------------------------------------


def test_real_cudart_cuda_version_is_in_the_strings(wheel_dlls: dict[str, Path]) -> None:
    info = read_pe(wheel_dlls["cudart64_13.dll"])
    assert info.machine == "x86_64"
    assert info.file_version == "6.14.11.13030"  # NVIDIA's fixed FileVersion: not the CUDA version
    assert info.version_strings["FileDescription"] == "NVIDIA CUDA Runtime, Version 13.3.29"
    assert info.cuda_version == "13.3.29"
    assert (
        check_pe_against_lock(path="bin/cudart64_13.dll", group="cuda", lock_version="13.3.29", pe=info) == []
    )


def test_real_msvc_runtime_version_policy(wheel_dlls: dict[str, Path]) -> None:
    """The msvc-runtime 14.44.35112 wheel ships DLLs whose FileVersion is 14.44.35211.0."""
    info = read_pe(wheel_dlls["msvcp140.dll"])
    assert info.file_version == "14.44.35211.0"
    assert info.cuda_version is None
    assert "vcruntime140.dll" in info.imports and "vcruntime140_1.dll" in info.imports
    assert (
        check_pe_against_lock(path="bin/msvcp140.dll", group="crt", lock_version="14.44.35112", pe=info) == []
    )
    assert check_pe_against_lock(path="bin/msvcp140.dll", group="crt", lock_version="14.43.34808", pe=info)
    # Under the whole-version rule the wheel version would not match: that is why crt differs.
    assert check_pe_against_lock(path="bin/msvcp140.dll", group="other", lock_version="14.44.35112", pe=info)


def test_real_dlls_name_their_authenticode_signer(wheel_dlls: dict[str, Path]) -> None:
    """The signing certificate's subject CN as read from the security directory (issue 35 item 2)."""
    assert read_pe(wheel_dlls["cudart64_13.dll"]).signer == "NVIDIA Corporation"
    assert read_pe(wheel_dlls["msvcp140.dll"]).signer == "Microsoft Windows Software Compatibility Publisher"


def test_cuda_versions_may_differ_in_precision_but_never_contradict() -> None:
    short = _info(cuda_version="13.3")
    assert check_pe_against_lock(path="bin/c.dll", group="cuda", lock_version="13.3.29", pe=short) == []
    assert check_pe_against_lock(path="bin/c.dll", group="cuda", lock_version="13.4.1", pe=short)
    four = _info(cuda_version="13.1.0.3")
    assert check_pe_against_lock(path="bin/c.dll", group="cuda", lock_version="13.1.0.3", pe=four) == []
    assert check_pe_against_lock(
        path="bin/c.dll", group="cuda", lock_version="13", pe=_info(cuda_version="13.3")
    )
    assert (
        cuda_version_from_strings({"FileDescription": "NVIDIA CUDA BLAS Library, Version 13.1.0.3"})
        == "13.1.0.3"
    )


def test_cublas_strings_name_fewer_parts_than_the_wheel() -> None:
    """Measured on nvidia-cublas 13.3.0.5's cublas64_13.dll: "NVIDIA CUDA BLAS Library, Version 13.3.0"."""
    strings = {
        "FileDescription": "NVIDIA CUDA BLAS Library, Version 13.3.0",
        "ProductName": "NVIDIA CUDA BLAS Library",
    }
    info = _info(file_version="6.14.11.1330", cuda_version=cuda_version_from_strings(strings))
    assert info.cuda_version == "13.3.0"
    assert (
        check_pe_against_lock(path="bin/cublas64_13.dll", group="cuda", lock_version="13.3.0.5", pe=info)
        == []
    )
    assert check_pe_against_lock(path="bin/cublas64_13.dll", group="cuda", lock_version="13.2.1.1", pe=info)


def test_reading_closes_the_map_without_a_garbage_collection(
    sample_pes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pefile's ``close()`` runs ``gc.collect()`` (cost grows with the heap: issue 13); ours
    closes the file's mmap only."""
    import gc
    import mmap

    import pefile

    maps: list[mmap.mmap] = []
    real_init = pefile.PE.__init__

    def init(self: pefile.PE, *args: object, **kwargs: object) -> None:
        real_init(self, *args, **kwargs)
        maps.append(self.__data__)

    def no_collect(*args: object) -> int:
        raise AssertionError("gc.collect() called while reading a PE image")

    monkeypatch.setattr(pefile.PE, "__init__", init)
    monkeypatch.setattr(gc, "collect", no_collect)
    info = read_pe(sample_pes["dstorage.dll"])
    assert info.file_version is not None
    assert len(maps) == 1 and isinstance(maps[0], mmap.mmap) and maps[0].closed
