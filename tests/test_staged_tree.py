"""Staged engine build loading (docs/staged-inputs.md; DESIGN.md §3, §6; case C23).

``make_staged_tree`` is reused by the package and zip tests.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from ninfer_release.errors import InputError
from ninfer_release.packaging import (
    BuildInfo,
    EngineFile,
    Redistributable,
    StagedFile,
    VendoredSource,
    check_lock_digests,
    load_staged_tree,
)

COMMIT = "7a25cd72f490183e4113f1e84e68e36d653ddd28"
LANE = {"lane_id": "rtx4090", "source_commit": COMMIT, "cuda_arch": "sm_89", "cuda_version": "13.3"}
ENGINE = b"MZ\x90\x00 ninfer-server stand-in"
CUDART = b"MZ\x90\x00 cudart stand-in" * 100
LICENSE = b"MIT License\n\nCopyright (c) 2013-2022 Niels Lohmann\n"


def build_info(**override: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": 1,
        "source_commit": COMMIT,
        "cuda_version": "13.3",
        "cuda_arch": "sm_89",
        "compiler": "MSVC 19.44.35112 (cl.exe) + nvcc 13.3",
        "engine_files": [{"path": "bin/ninfer-server.exe", "license": "Apache-2.0"}],
    }
    doc.update(override)
    return doc


def lock(**override: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": 1,
        "vendored": [
            {
                "name": "nlohmann-json",
                "version": "3.11.3",
                "commit": "9cca280a4d0ccf0c08f47a99aa71d1b0e52f8d03",
                "license": "MIT",
                "purl": "pkg:github/nlohmann/json@v3.11.3",
                "source_url": "https://github.com/nlohmann/json/archive/9cca280a4d0ccf0c08f47a99aa71d1b0e52f8d03.tar.gz",
                "supplier": "Niels Lohmann",
            }
        ],
        "redistributables": [
            {
                "file": "bin/cudart64_13.dll",
                "group": "cuda",
                "package": "nvidia-cuda-runtime",
                "version": "13.3.29",
                "purl": "pkg:pypi/nvidia-cuda-runtime@13.3.29",
                "sha256": hashlib.sha256(CUDART).hexdigest(),
                "supplier": "NVIDIA Corporation",
                "license": "LicenseRef-NVIDIA-CUDA-EULA",
                "stand_in": False,
            }
        ],
    }
    doc.update(override)
    return doc


def make_staged_tree(
    root: Path, *, info: dict[str, Any] | None = None, deps: dict[str, Any] | None = None
) -> Path:
    """A minimal valid staged tree for lane rtx4090 at ``root`` (created)."""
    (root / "bin").mkdir(parents=True)
    (root / "licenses").mkdir()
    (root / "build-info.json").write_text(json.dumps(info or build_info()))
    (root / "dependencies.lock.json").write_text(json.dumps(deps or lock()))
    (root / "bin" / "ninfer-server.exe").write_bytes(ENGINE)
    (root / "bin" / "cudart64_13.dll").write_bytes(CUDART)
    (root / "licenses" / "nlohmann-json.txt").write_bytes(LICENSE)
    return root


def messages(exc: pytest.ExceptionInfo[InputError]) -> list[str]:
    return exc.value.lines


def test_loads_typed_tree(tmp_path: Path) -> None:
    root = make_staged_tree(tmp_path / "rtx4090")
    staged = load_staged_tree(root, **LANE)
    assert staged.root == root
    assert staged.build_info == BuildInfo(
        source_commit=COMMIT,
        cuda_version="13.3",
        cuda_arch="sm_89",
        compiler="MSVC 19.44.35112 (cl.exe) + nvcc 13.3",
        engine_files=(EngineFile(path="bin/ninfer-server.exe", license="Apache-2.0"),),
    )
    assert staged.lock.vendored[0] == VendoredSource(
        name="nlohmann-json",
        version="3.11.3",
        commit="9cca280a4d0ccf0c08f47a99aa71d1b0e52f8d03",
        license="MIT",
        purl="pkg:github/nlohmann/json@v3.11.3",
        source_url="https://github.com/nlohmann/json/archive/9cca280a4d0ccf0c08f47a99aa71d1b0e52f8d03.tar.gz",
        supplier="Niels Lohmann",
    )
    assert isinstance(staged.lock.redistributables[0], Redistributable)
    assert [f.path for f in staged.files] == [
        "bin/cudart64_13.dll",
        "bin/ninfer-server.exe",
        "build-info.json",
        "dependencies.lock.json",
        "licenses/nlohmann-json.txt",
    ]
    assert staged.file("bin/cudart64_13.dll") == StagedFile(
        path="bin/cudart64_13.dll", source=root / "bin" / "cudart64_13.dll", size=len(CUDART)
    )


def test_parent_directory_with_lane_folder(tmp_path: Path) -> None:
    make_staged_tree(tmp_path / "rtx4090")
    assert load_staged_tree(tmp_path, **LANE).root == tmp_path / "rtx4090"


def test_mismatched_build_info_names_each_field(tmp_path: Path) -> None:
    root = make_staged_tree(
        tmp_path / "t", info=build_info(source_commit="0" * 40, cuda_arch="sm_86", cuda_version="13.2")
    )
    with pytest.raises(InputError) as exc:
        load_staged_tree(root, **LANE)
    info = str(root / "build-info.json")
    tail = "in the release definition"
    assert messages(exc) == [
        f"{info}: source_commit: '{'0' * 40}' does not match lane rtx4090's '{COMMIT}' {tail}",
        f"{info}: cuda_arch: 'sm_86' does not match lane rtx4090's 'sm_89' {tail}",
        f"{info}: cuda_version: '13.2' does not match lane rtx4090's '13.3' {tail}",
    ]
    assert exc.value.exit_code == 4


def test_unaccounted_binary_and_missing_lock_file(tmp_path: Path) -> None:
    root = make_staged_tree(tmp_path / "t")
    (root / "bin" / "cudart64_13.dll").unlink()
    (root / "bin" / "evil.dll").write_bytes(b"MZ")
    with pytest.raises(InputError) as exc:
        load_staged_tree(root, **LANE)
    assert messages(exc) == [
        f"{root / 'dependencies.lock.json'}: redistributables[0].file: 'bin/cudart64_13.dll' "
        "is not in the staged tree",
        f"{root}: bin/evil.dll: unaccounted binary: in neither build-info.json nor dependencies.lock.json",
    ]


def test_missing_engine_file(tmp_path: Path) -> None:
    root = make_staged_tree(tmp_path / "t")
    (root / "bin" / "ninfer-server.exe").unlink()
    with pytest.raises(InputError) as exc:
        load_staged_tree(root, **LANE)
    assert messages(exc) == [
        f"{root / 'build-info.json'}: engine_files[0].path: 'bin/ninfer-server.exe' is not in the staged tree"
    ]


def test_invalid_documents_report_every_problem(tmp_path: Path) -> None:
    bad_lock = lock()
    bad_lock["redistributables"][0].update(
        sha256="ABC", group="gpu", stand_in="no", file="bin\\cudart64_13.dll"
    )
    bad_lock["surprise"] = 1
    root = make_staged_tree(tmp_path / "t", info=build_info(schema=2, compiler=""), deps=bad_lock)
    with pytest.raises(InputError) as exc:
        load_staged_tree(root, **LANE)
    text = "\n".join(messages(exc))
    for fragment in (
        "build-info.json: schema: unsupported schema 2",
        "build-info.json: compiler: missing or not a non-empty string",
        "dependencies.lock.json: surprise: unknown field",
        "redistributables[0].file: 'bin\\\\cudart64_13.dll' contains a backslash",
        "redistributables[0].group: 'gpu' is not one of",
        "redistributables[0].stand_in: must be true or false",
        "redistributables[0].sha256: 'ABC' does not match",
    ):
        assert fragment in text


def test_missing_documents(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "bin").mkdir(parents=True)
    with pytest.raises(InputError) as exc:
        load_staged_tree(root, **LANE)
    assert messages(exc) == [
        f"{root / 'build-info.json'}: missing from the staged tree",
        f"{root / 'dependencies.lock.json'}: missing from the staged tree",
    ]


def test_c23_symlink_inside_tree_ships_target_bytes(tmp_path: Path) -> None:
    """C23: `lib/libfoo.dll` -> `libfoo-1.2.dll` is resolved; the file keeps the link's name."""
    deps = lock()
    real = b"MZ libfoo 1.2 bytes"
    for name in ("bin/libfoo.dll", "bin/libfoo-1.2.dll"):
        deps["redistributables"].append(
            {**deps["redistributables"][0], "file": name, "sha256": hashlib.sha256(real).hexdigest()}
        )
    root = make_staged_tree(tmp_path / "t", deps=deps)
    (root / "bin" / "libfoo-1.2.dll").write_bytes(real)
    (root / "bin" / "libfoo.dll").symlink_to("libfoo-1.2.dll")
    staged = load_staged_tree(root, **LANE)
    link = staged.file("bin/libfoo.dll")
    assert link == StagedFile(
        path="bin/libfoo.dll",
        source=root / "bin" / "libfoo-1.2.dll",
        size=len(real),
        link_target="libfoo-1.2.dll",
    )


def test_symlink_escaping_tree_refused(tmp_path: Path) -> None:
    """DESIGN §6: a symlink pointing outside the staged tree is refused, named."""
    root = make_staged_tree(tmp_path / "t")
    (tmp_path / "secret.txt").write_text("x")
    (root / "licenses" / "escape.txt").symlink_to("../../secret.txt")
    (root / "licenses" / "abs.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(InputError) as exc:
        load_staged_tree(root, **LANE)
    tail = "leaves the staged tree; refused (DESIGN §6)"
    assert messages(exc) == [
        f"{root}: licenses/abs.txt: symlink to '{tmp_path / 'secret.txt'}' {tail}",
        f"{root}: licenses/escape.txt: symlink to '../../secret.txt' {tail}",
    ]


def test_dangling_and_folder_symlinks_refused(tmp_path: Path) -> None:
    root = make_staged_tree(tmp_path / "t")
    (root / "licenses" / "gone.txt").symlink_to("nothing-here.txt")
    (root / "licenses" / "sub").symlink_to(".")
    with pytest.raises(InputError) as exc:
        load_staged_tree(root, **LANE)
    assert messages(exc) == [
        f"{root}: licenses/gone.txt: dangling symlink to 'nothing-here.txt'",
        f"{root}: licenses/sub: symlink to folder '.'; only file symlinks are resolved (C23)",
    ]


def test_fifo_refused(tmp_path: Path) -> None:
    root = make_staged_tree(tmp_path / "t")
    os.mkfifo(root / "licenses" / "pipe")
    with pytest.raises(InputError) as exc:
        load_staged_tree(root, **LANE)
    assert messages(exc) == [f"{root}: licenses/pipe: not a regular file (device, fifo or socket)"]


def test_check_lock_digests(tmp_path: Path) -> None:
    staged = load_staged_tree(make_staged_tree(tmp_path / "t"), **LANE)
    check_lock_digests(staged, {"bin/cudart64_13.dll": hashlib.sha256(CUDART).hexdigest()})
    with pytest.raises(InputError) as exc:
        check_lock_digests(staged, {"bin/cudart64_13.dll": "0" * 64})
    assert messages(exc) == [
        f"{staged.root / 'dependencies.lock.json'}: redistributables[0].sha256: "
        f"'bin/cudart64_13.dll' has SHA-256 {'0' * 64}, the lock says {hashlib.sha256(CUDART).hexdigest()}"
    ]
    with pytest.raises(InputError):
        check_lock_digests(staged, {})


def _engine(**extra: Any) -> dict[str, Any]:
    return {"path": "bin/ninfer-server.exe", "license": "Apache-2.0", **extra}


def test_engine_file_vendored_and_built_by_are_read(tmp_path: Path) -> None:
    built_by = {"script": "samples/build-standins.sh", "commit": "8cb11bdba697dc1494a1c361d941dfee6b0965c9"}
    info = build_info(engine_files=[_engine(vendored=["nlohmann-json"], built_by=built_by)])
    staged = load_staged_tree(make_staged_tree(tmp_path / "t", info=info), **LANE)
    engine = staged.build_info.engine_files[0]
    assert engine.vendored == ("nlohmann-json",)
    assert engine.built_by == ("samples/build-standins.sh", "8cb11bdba697dc1494a1c361d941dfee6b0965c9")
    assert [v.name for v in staged.vendored_in("bin/ninfer-server.exe")] == ["nlohmann-json"]
    assert [v.name for v in staged.contained_vendored()] == ["nlohmann-json"]
    assert staged.vendored_in("bin/cudart64_13.dll") == ()


def test_no_vendored_list_means_the_file_contains_none(tmp_path: Path) -> None:
    staged = load_staged_tree(make_staged_tree(tmp_path / "t"), **LANE)
    assert staged.lock.vendored  # the lock names one
    assert staged.vendored_in("bin/ninfer-server.exe") == ()
    assert staged.contained_vendored() == ()


@pytest.mark.parametrize(
    ("engine", "field", "message"),
    [
        (_engine(vendored=["fmt"]), "engine_files[0].vendored", "'fmt' is not a vendored source of"),
        (_engine(vendored="nlohmann-json"), "engine_files[0].vendored", "must be a list"),
        (_engine(vendored=["nlohmann-json", "nlohmann-json"]), "engine_files[0].vendored", "twice"),
        (
            _engine(stand_in=True, vendored=["nlohmann-json"]),
            "engine_files[0].vendored",
            "a stand-in contains no",
        ),
        (
            _engine(built_by={"script": "x.sh", "commit": "8cb11bd"}),
            "engine_files[0].built_by.commit",
            "40-hex",
        ),
        (_engine(built_by={"script": "x.sh", "commit": "0" * 40, "by": 1}), "engine_files[0].built_by", "by"),
        (_engine(built_by="x.sh"), "engine_files[0].built_by", "must be an object"),
    ],
)
def test_bad_vendored_or_built_by_names_the_field(
    tmp_path: Path, engine: dict[str, Any], field: str, message: str
) -> None:
    root = make_staged_tree(tmp_path / "t", info=build_info(engine_files=[engine]))
    with pytest.raises(InputError) as exc:
        load_staged_tree(root, **LANE)
    assert exc.value.exit_code == 4
    line = next(line for line in messages(exc) if field in line)
    assert "build-info.json" in line and message in line
