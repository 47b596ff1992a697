"""`ninfer-release samples fetch`: pinned wheels, staged lane trees, determinism, safe --out."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from pathlib import Path

import pefile
import pytest

from conftest import REPO, RunCli
from ninfer_release.errors import InputError, IntegrityError
from ninfer_release.samples import (
    MARKER,
    FromWheel,
    StepContext,
    WheelMember,
    WheelPin,
    default_wheel_cache,
    ensure_wheel,
    extract_member,
    fetch_samples,
    load_spec,
    plan_samples,
)

COMMIT = "7a25cd72f490183e4113f1e84e68e36d653ddd28"
CUDART_WHEEL = "nvidia_cuda_runtime-13.3.29-py3-none-win_amd64.whl"

BIN_4090 = [
    "bin/cudart64_13.dll",
    "bin/dstorage.dll",
    "bin/dstoragecore.dll",
    "bin/msvcp140.dll",
    "bin/ninfer-server.exe",
    "bin/vcruntime140.dll",
    "bin/vcruntime140_1.dll",
]
LICENSES_3090 = [
    "licenses/Apache-2.0.txt",
    "licenses/Microsoft-VC-Redist.txt",
    "licenses/NInfer-Sample-Stand-In.txt",
    "licenses/NVIDIA-CUDA-EULA.txt",
    "licenses/fmt-MIT.txt",
    "licenses/nlohmann-json-MIT.txt",
]


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def wheel_cache() -> Path:
    """The persistent wheel cache outside the repo (downloads once per machine; CI has PyPI)."""
    return default_wheel_cache(os.environ)


@pytest.fixture(scope="module")
def fetched(tmp_path_factory: pytest.TempPathFactory, wheel_cache: Path) -> Path:
    out = tmp_path_factory.mktemp("samples") / "inputs"
    fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO)
    return out


def test_plan_full_adds_cublas_to_every_lane_and_lock() -> None:
    """--full adds exactly the two pinned cuBLAS DLLs to each lane's bin/ and lock (pure plan)."""
    spec = load_spec(REPO)
    small = plan_samples(spec, full=False)
    full = plan_samples(spec, full=True)
    assert [w.package for w in small.wheels] == ["nvidia-cuda-runtime", "msvc-runtime"]
    assert [w.package for w in full.wheels] == ["nvidia-cuda-runtime", "msvc-runtime", "nvidia-cublas"]
    for lane_small, lane_full in zip(small.lanes, full.lanes, strict=True):
        added = {f.path: f for f in lane_full.files}.keys() - {f.path for f in lane_small.files}
        assert added == {"bin/cublas64_13.dll", "bin/cublasLt64_13.dll"}
        by_path = {f.path: f for f in lane_full.files}
        assert by_path["bin/cublasLt64_13.dll"].size == 453003888
        assert isinstance(by_path["bin/cublas64_13.dll"].source, FromWheel)
        lock = json.loads(by_path["dependencies.lock.json"].source.data)  # type: ignore[union-attr]
        cublas = [r for r in lock["redistributables"] if r["package"] == "nvidia-cublas"]
        assert [(r["file"], r["purl"], r["sha256"]) for r in cublas] == [
            (
                "bin/cublas64_13.dll",
                "pkg:pypi/nvidia-cublas@13.3.0.5",
                "b181c4ffb454840a49f802169d8826617841875607a2e2ba14ef9650e348c456",
            ),
            (
                "bin/cublasLt64_13.dll",
                "pkg:pypi/nvidia-cublas@13.3.0.5",
                "182baf9b1846630c2462cccdae744367b8ff4d2965651deb41a2beefb53f1de5",
            ),
        ]


def test_lane_trees_have_exactly_the_documented_layout(fetched: Path) -> None:
    """docs/staged-inputs.md: bin/, licenses/, build-info.json, dependencies.lock.json per lane."""
    top = sorted(p.name for p in fetched.iterdir())
    assert top == [MARKER, "rtx3090", "rtx4090"]
    files_4090 = sorted(_files(fetched / "rtx4090"))
    files_3090 = sorted(_files(fetched / "rtx3090"))
    assert files_3090 == sorted([*BIN_4090, *LICENSES_3090, "build-info.json", "dependencies.lock.json"])
    assert files_4090 == sorted([*files_3090, "licenses/spdlog-MIT.txt"])


@pytest.mark.parametrize(("lane", "arch"), [("rtx4090", "sm_89"), ("rtx3090", "sm_86")])
def test_build_info_is_exact(fetched: Path, lane: str, arch: str) -> None:
    info = json.loads((fetched / lane / "build-info.json").read_bytes())
    assert info == {
        "schema": 1,
        "source_commit": COMMIT,
        "cuda_version": "13.3",
        "cuda_arch": arch,
        "compiler": "x86_64-w64-mingw32-gcc 12-win32 "
        "(mingw-w64; sample stand-in build, not the real engine toolchain)",
        # The engine is a stand-in and build-info says so (issue 8 item 5).
        "engine_files": [
            {
                "path": "bin/ninfer-server.exe",
                "license": "Apache-2.0",
                "stand_in": True,
                "vendored": [],
                "built_by": {
                    "script": "samples/build-standins.sh",
                    "commit": "8cb11bdba697dc1494a1c361d941dfee6b0965c9",
                },
            }
        ],
    }
    raw = (fetched / lane / "build-info.json").read_bytes()
    assert raw.endswith(b"}\n") and b"\r" not in raw


@pytest.mark.parametrize("lane", ["rtx4090", "rtx3090"])
def test_lock_accounts_for_every_bin_file_with_its_sha256(fetched: Path, lane: str) -> None:
    """Every bin/ file is an engine file or a lock redistributable whose sha256 equals the file."""
    root = fetched / lane
    lock = json.loads((root / "dependencies.lock.json").read_bytes())
    info = json.loads((root / "build-info.json").read_bytes())
    redist = {r["file"]: r for r in lock["redistributables"]}
    engine = {e["path"] for e in info["engine_files"]}
    bin_files = {p for p in _files(root) if p.startswith("bin/")}
    assert bin_files == set(redist) | engine
    assert not set(redist) & engine
    for path, entry in redist.items():
        assert entry["sha256"] == _sha((root / path).read_bytes()), path
    assert {p: (r["group"], r["stand_in"]) for p, r in redist.items()} == {
        "bin/cudart64_13.dll": ("cuda", False),
        "bin/msvcp140.dll": ("crt", False),
        "bin/vcruntime140.dll": ("crt", False),
        "bin/vcruntime140_1.dll": ("crt", False),
        "bin/dstorage.dll": ("directstorage", True),
        "bin/dstoragecore.dll": ("directstorage", True),
    }
    assert redist["bin/cudart64_13.dll"]["purl"] == "pkg:pypi/nvidia-cuda-runtime@13.3.29"
    assert redist["bin/msvcp140.dll"]["purl"] == "pkg:pypi/msvc-runtime@14.44.35112"
    assert redist["bin/dstorage.dll"]["purl"] == "pkg:generic/ninfer-sample/dstorage-stand-in@0.1.0"
    assert redist["bin/dstorage.dll"]["license"] == "LicenseRef-NInfer-Sample-Stand-In"
    assert redist["bin/cudart64_13.dll"]["license"] == "LicenseRef-NVIDIA-CUDA-EULA"
    assert redist["bin/vcruntime140.dll"]["license"] == "LicenseRef-Microsoft-VC-Redist"
    for v in lock["vendored"]:
        assert len(v["commit"]) == 40
        assert v["source_url"].endswith(f"{v['commit']}.tar.gz")


def test_lanes_differ_in_engine_bytes_arch_and_lock(fetched: Path) -> None:
    a, b = fetched / "rtx4090", fetched / "rtx3090"
    exe_a, exe_b = (a / "bin/ninfer-server.exe").read_bytes(), (b / "bin/ninfer-server.exe").read_bytes()
    assert exe_a != exe_b
    assert b"sm_89" in exe_a.replace(b"\0", b"") and b"sm_86" in exe_b.replace(b"\0", b"")
    lock_a = json.loads((a / "dependencies.lock.json").read_bytes())
    lock_b = json.loads((b / "dependencies.lock.json").read_bytes())
    assert [v["name"] for v in lock_a["vendored"]] == ["fmt", "nlohmann-json", "spdlog"]
    assert [v["name"] for v in lock_b["vendored"]] == ["fmt", "nlohmann-json"]
    assert lock_a["redistributables"] == lock_b["redistributables"]
    # The same pinned DLL bytes in both lanes.
    assert (a / "bin/cudart64_13.dll").read_bytes() == (b / "bin/cudart64_13.dll").read_bytes()


def test_redistributables_are_the_pinned_real_dlls(fetched: Path) -> None:
    """Version strings read from the shipped DLLs (what the SBOM and route block report)."""

    def strings(path: Path) -> dict[str, str]:
        pe = pefile.PE(str(path), fast_load=True)
        pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_RESOURCE"]])
        out: dict[str, str] = {}
        for info in pe.FileInfo:
            for entry in info:
                for table in getattr(entry, "StringTable", []):
                    out.update({k.decode(): v.decode() for k, v in table.entries.items()})
        pe.close()
        return out

    cudart = strings(fetched / "rtx4090/bin/cudart64_13.dll")
    assert cudart["FileDescription"] == "NVIDIA CUDA Runtime, Version 13.3.29 "
    assert cudart["ProductName"] == "NVIDIA CUDA 13.3.29 Runtime"
    assert cudart["FileVersion"] == "6,14,11,13030"
    assert cudart["CompanyName"] == "NVIDIA Corporation"
    for name in ("msvcp140.dll", "vcruntime140.dll", "vcruntime140_1.dll"):
        crt = strings(fetched / "rtx4090/bin" / name)
        assert (crt["CompanyName"], crt["FileVersion"], crt["ProductVersion"], crt["OriginalFilename"]) == (
            "Microsoft Corporation",
            "14.44.35211.0",
            "14.44.35211.0",
            name,
        )
    dstorage = strings(fetched / "rtx4090/bin/dstorage.dll")
    assert dstorage["FileDescription"] == "STAND-IN for Microsoft DirectStorage (sample only)"


def test_fetch_twice_into_two_dirs_gives_identical_trees(
    fetched: Path, tmp_path: Path, wheel_cache: Path
) -> None:
    other = tmp_path / "again"
    result = fetch_samples(other, full=False, cache=wheel_cache, repo_root=REPO)
    assert _files(other) == _files(fetched)
    assert result.files == len(_files(other)) == 32
    assert result.bytes == sum(len(b) for b in _files(other).values())
    assert [(ln.lane, ln.cuda_arch, ln.files) for ln in result.lanes] == [
        ("rtx4090", "sm_89", 16),
        ("rtx3090", "sm_86", 15),
    ]
    assert all(not w.downloaded for w in result.wheels)
    for p in [other, *other.rglob("*")]:
        assert (p.stat().st_mode & 0o777) == (0o755 if p.is_dir() else 0o644), p


def test_refetch_into_previous_output_replaces_it_with_identical_bytes(
    tmp_path: Path, wheel_cache: Path
) -> None:
    out = tmp_path / "inputs"
    fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO)
    before = _files(out)
    result = fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO)
    assert result.replaced
    assert _files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inputs"]  # no staging leftovers


def test_refuses_non_empty_foreign_out_and_keeps_user_data(
    tmp_path: Path, run_cli: RunCli, wheel_cache: Path
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_bytes(b"user data")
    code, _, stderr = run_cli("samples", "fetch", "--out", str(out), "--cache", str(wheel_cache))
    assert code == 4
    assert f"{out}: is not empty and is not a previous `samples fetch` output" in stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert (out / "notes.txt").read_bytes() == b"user data"


def test_refuses_previous_output_the_user_changed(tmp_path: Path, run_cli: RunCli, wheel_cache: Path) -> None:
    out = tmp_path / "inputs"
    fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO)
    (out / "rtx4090" / "receipts").mkdir()
    (out / "rtx4090" / "receipts" / "run1.json").write_bytes(b"{}")
    code, _, stderr = run_cli("samples", "fetch", "--out", str(out), "--cache", str(wheel_cache))
    assert code == 4
    assert "has been changed since (rtx4090/receipts/run1.json)" in stderr
    assert (out / "rtx4090" / "receipts" / "run1.json").read_bytes() == b"{}"


def test_refuses_out_that_is_a_file(tmp_path: Path, wheel_cache: Path) -> None:
    out = tmp_path / "file"
    out.write_bytes(b"x")
    with pytest.raises(InputError, match="exists and is not a directory"):
        fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO)
    assert out.read_bytes() == b"x"


def test_empty_existing_out_is_used(tmp_path: Path, wheel_cache: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    result = fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO)
    assert not result.replaced
    assert (out / "rtx3090" / "bin" / "ninfer-server.exe").is_file()


def test_corrupted_cached_wheel_is_a_pin_mismatch_exit_5(
    tmp_path: Path, run_cli: RunCli, wheel_cache: Path
) -> None:
    """A cached wheel whose bytes differ from the SHA-256 pin is refused (exit 5), not used."""
    ensure_wheel(
        load_spec(REPO).pins.wheels[0], cache=wheel_cache, platform="win_amd64", python_version="3.11"
    )
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in (CUDART_WHEEL, "msvc_runtime-14.44.35112-cp311-cp311-win_amd64.whl"):
        if (wheel_cache / name).exists():
            shutil.copyfile(wheel_cache / name, cache / name)
    data = bytearray((cache / CUDART_WHEEL).read_bytes())
    data[1000] ^= 0xFF  # same size, other bytes
    (cache / CUDART_WHEEL).write_bytes(bytes(data))
    out = tmp_path / "out"
    code, _, stderr = run_cli("samples", "fetch", "--out", str(out), "--cache", str(cache))
    assert code == 5
    assert (
        f"{cache / CUDART_WHEEL}: wheels[nvidia-cuda-runtime==13.3.29]: cached wheel does not match its pin"
        in stderr
    )
    assert not out.exists()


def test_cached_verified_wheel_is_not_downloaded_again(wheel_cache: Path) -> None:
    pin = load_spec(REPO).pins.wheels[0]
    ensure_wheel(pin, cache=wheel_cache, platform="win_amd64", python_version="3.11")
    # pip pointed at a dead index: any download attempt would fail.
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_NO_INDEX": "1"}
    use = ensure_wheel(pin, cache=wheel_cache, platform="win_amd64", python_version="3.11", env=env)
    assert not use.downloaded
    assert use.path == wheel_cache / CUDART_WHEEL


def test_download_into_empty_cache_verifies_the_pin(tmp_path: Path) -> None:
    """Real PyPI: pip downloads the pinned msvc-runtime wheel (1.9 MB) and its SHA-256 matches."""
    pin = load_spec(REPO).pins.wheels[1]
    assert pin.package == "msvc-runtime"
    use = ensure_wheel(pin, cache=tmp_path, platform="win_amd64", python_version="3.11")
    assert use.downloaded
    assert _sha((tmp_path / pin.filename).read_bytes()) == pin.sha256
    assert sorted(p.name for p in tmp_path.iterdir()) == [pin.filename]  # no temp dirs left


def test_download_failure_is_input_error_naming_the_package(tmp_path: Path) -> None:
    pin = WheelPin(
        package="nvidia-cuda-runtime",
        version="13.3.999999",
        filename="nvidia_cuda_runtime-13.3.999999-py3-none-win_amd64.whl",
        sha256="0" * 64,
        size=1,
        full_only=False,
        group="cuda",
        supplier="NVIDIA Corporation",
        license="LicenseRef-NVIDIA-CUDA-EULA",
        members=(),
    )
    with pytest.raises(InputError) as info:
        ensure_wheel(pin, cache=tmp_path, platform="win_amd64", python_version="3.11")
    (problem,) = info.value.problems
    assert problem.file == "samples/pins.json"
    assert problem.field == "wheels[nvidia-cuda-runtime==13.3.999999]"
    assert problem.message.startswith("download of nvidia-cuda-runtime==13.3.999999 failed (pip exit 1)")
    assert info.value.exit_code == 4


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_member_whose_bytes_differ_from_the_pin_is_refused(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "x.whl", {"pkg/bin/a.dll": b"evil", "pkg/bin/other.dll": b"zz"})
    member = WheelMember(
        member="pkg/bin/a.dll", dest="bin/a.dll", kind="redistributable", sha256=_sha(b"good"), size=4
    )
    dest = tmp_path / "a.dll"
    with pytest.raises(IntegrityError, match=r"member SHA-256 [0-9a-f]{64} differs from the pin"):
        extract_member(wheel, member, dest)
    assert not dest.exists()
    missing = WheelMember(
        member="pkg/bin/b.dll", dest="bin/b.dll", kind="redistributable", sha256=_sha(b""), size=0
    )
    with pytest.raises(IntegrityError, match="member is missing"):
        extract_member(wheel, missing, tmp_path / "b.dll")
    good = WheelMember(
        member="pkg/bin/a.dll", dest="bin/a.dll", kind="redistributable", sha256=_sha(b"evil"), size=4
    )
    extract_member(wheel, good, dest)
    assert dest.read_bytes() == b"evil"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.dll", "x.whl"]  # nothing else extracted


def test_cli_json_prints_one_object(tmp_path: Path, run_cli: RunCli, wheel_cache: Path) -> None:
    out = tmp_path / "inputs"
    code, stdout, _ = run_cli("--json", "samples", "fetch", "--out", str(out), "--cache", str(wheel_cache))
    assert code == 0
    doc = json.loads(stdout)
    assert doc["ok"] is True and doc["full"] is False and doc["replaced"] is False
    # 31 files in the two native lane trees (16 + 15), the marker, plus the container lane's sample
    # base image and staged inputs (base-layout/, rtx5090/) that the CLI's extra layout step adds.
    assert [ln["files"] for ln in doc["lanes"]] == [16, 15]
    assert doc["extra"] == ["base-layout", "rtx5090"]
    assert doc["files"] == sum(1 for p in out.rglob("*") if p.is_file())
    assert (out / "base-layout" / "index.json").is_file() and (out / "rtx5090").is_dir()
    assert [(ln["lane"], ln["cuda_arch"]) for ln in doc["lanes"]] == [
        ("rtx4090", "sm_89"),
        ("rtx3090", "sm_86"),
    ]
    assert [(w["package"], w["version"]) for w in doc["wheels"]] == [
        ("nvidia-cuda-runtime", "13.3.29"),
        ("msvc-runtime", "14.44.35112"),
    ]


def test_extra_layout_steps_are_part_of_the_output(tmp_path: Path, wheel_cache: Path) -> None:
    """The hook for base-layout/ and rtx5090/: steps write into the staged output, tracked by the marker."""
    seen: list[StepContext] = []

    def step(stage: Path, ctx: StepContext) -> None:
        seen.append(ctx)
        (stage / "base-layout").mkdir()
        (stage / "base-layout" / "index.json").write_bytes(b"{}\n")

    out = tmp_path / "inputs"
    result = fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO, extra_steps=[step])
    assert result.extra == ("base-layout",)
    assert seen[0].cache == wheel_cache and seen[0].full is False
    marker = json.loads((out / MARKER).read_bytes())
    assert marker["files"]["base-layout/index.json"] == 3
    again = fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO, extra_steps=[step])
    assert again.replaced and (out / "base-layout" / "index.json").read_bytes() == b"{}\n"


def test_broken_samples_data_reports_every_problem(tmp_path: Path) -> None:
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    pins = json.loads((tmp_path / "samples/pins.json").read_bytes())
    pins["wheels"][0]["sha256"] = "XYZ"
    pins["wheels"][1]["group"] = "runtime"
    (tmp_path / "samples/pins.json").write_text(json.dumps(pins))
    (tmp_path / "samples/standins/dstorage.dll").unlink()
    with pytest.raises(InputError) as info:
        load_spec(tmp_path)
    got = [str(p) for p in info.value.problems]
    assert got[0] == "samples/pins.json: wheels[0].sha256: 'XYZ' does not match [0-9a-f]{64}"
    assert got[1].startswith("samples/pins.json: wheels[1].group: 'runtime' is not one of")
    assert got[2].startswith(
        "samples/lanes.json: stand_ins[0].from: samples/standins/dstorage.dll cannot be read"
    )
    assert len(got) == 3


def test_leftover_of_an_interrupted_replace_is_removed_only_if_ours(
    tmp_path: Path, wheel_cache: Path
) -> None:
    out = tmp_path / "inputs"
    fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO)
    leftover = tmp_path / ".inputs.samples-new"
    shutil.copytree(out, leftover)  # a finished staging dir that was never swapped in
    fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inputs"]
    leftover.mkdir()
    (leftover / "keep.txt").write_bytes(b"not ours")
    with pytest.raises(InputError, match="is not a samples output"):
        fetch_samples(out, full=False, cache=wheel_cache, repo_root=REPO)
    assert (leftover / "keep.txt").read_bytes() == b"not ours"


def test_cli_repo_without_samples_data_is_exit_4(tmp_path: Path, run_cli: RunCli, wheel_cache: Path) -> None:
    code, _, stderr = run_cli(
        "samples",
        "fetch",
        "--out",
        str(tmp_path / "out"),
        "--cache",
        str(wheel_cache),
        "--repo",
        str(tmp_path),
    )
    assert code == 4
    assert (
        f"error: samples/pins.json: missing (looked in {tmp_path}); is this an ninfer-release checkout?"
        in stderr
    )
    assert not (tmp_path / "out").exists()


def test_member_pin_mismatch_fails_the_whole_fetch_exit_5(
    tmp_path: Path, run_cli: RunCli, wheel_cache: Path
) -> None:
    """A wheel that matches its pin but whose DLL does not match the member pin: nothing is written."""
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "samples", repo / "samples")
    pins = json.loads((repo / "samples/pins.json").read_bytes())
    member = pins["wheels"][1]["members"][1]
    assert member["dest"] == "bin/vcruntime140.dll"
    member["sha256"] = "f" * 64
    (repo / "samples/pins.json").write_text(json.dumps(pins))
    out = tmp_path / "out"
    code, _, stderr = run_cli(
        "samples", "fetch", "--out", str(out), "--cache", str(wheel_cache), "--repo", str(repo)
    )
    assert code == 5
    assert "msvc_runtime-14.44.35112.data/data/Scripts/vcruntime140.dll: member SHA-256 d5e4d9a3" in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]  # no output, no staging leftovers


def test_without_busybox_native_samples_still_work_and_the_container_lane_says_what_is_missing(
    tmp_path: Path, run_cli: RunCli, wheel_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """busybox-static is needed only for the container lane's sample base (issue 15)."""
    import ninfer_release.containers._samples as container_samples

    missing = tmp_path / "no-busybox"
    monkeypatch.setattr(container_samples, "BUSYBOX", missing)
    out = tmp_path / "inputs"
    code, stdout, stderr = run_cli("samples", "fetch", "--out", str(out), "--cache", str(wheel_cache))
    assert code == 4
    assert stderr.splitlines() == [
        f"error: {missing}: not found: the rtx5090 container lane's sample base is built from Debian's "
        "busybox-static (apt-get install busybox-static); the native lanes do not need it "
        "(samples fetch --native-only)"
    ]
    assert not out.exists()
    code, stdout, stderr = run_cli(
        "--json", "samples", "fetch", "--out", str(out), "--cache", str(wheel_cache), "--native-only"
    )
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert [ln["lane"] for ln in doc["lanes"]] == ["rtx4090", "rtx3090"] and doc["extra"] == []
    assert sorted(p.name for p in out.iterdir()) == [".ninfer-samples.json", "rtx3090", "rtx4090"]


def test_a_lane_vendored_entry_that_is_not_a_name_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    shutil.copytree(REPO / "samples", tmp_path / "samples")
    lanes = json.loads((tmp_path / "samples/lanes.json").read_bytes())
    lanes["lanes"][0]["vendored"] = [{"name": "x"}, *lanes["lanes"][0]["vendored"]]
    (tmp_path / "samples/lanes.json").write_text(json.dumps(lanes))
    with pytest.raises(InputError) as info:
        load_spec(tmp_path)
    got = [str(p) for p in info.value.problems]
    assert got == ["samples/lanes.json: lanes[0].vendored: {'name': 'x'} is not a name (a string)"]
