"""Package recipe, pure plan and NOTICE (DESIGN.md §2, §6; cases C17 C18 C19 C20)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ninfer_release.errors import InputError
from ninfer_release.packaging import (
    DependencyLock,
    EngineFile,
    IncludeRule,
    PackageRecipe,
    Redistributable,
    StagedTree,
    VendoredSource,
    load_recipe,
    load_staged_tree,
    plan_package,
    render_notice,
)
from test_staged_tree import LANE, lock, make_staged_tree

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "packaging" / "windows-native.yaml"
STEM = "ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64"
PROFILE = "qwen38-4090-native-v0.7.0-beta.2"


#: One vendored source, as a lock names it (the tests' example).
_ZLIB = VendoredSource(
    name="zlib",
    version="1.3.1",
    commit="51b7f2abdade71cd9bb0e7a373ef2610ec6f9daf",
    license="Zlib",
    purl="pkg:github/madler/zlib@v1.3.1",
    source_url="https://github.com/madler/zlib/archive/v1.3.1.tar.gz",
    supplier="Jean-loup Gailly and Mark Adler",
)


def generated(**extra: bytes | None) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {
        "config/ninfer.toml": b"[server]\n",
        f"profile/{PROFILE}.json": b"{}\n",
        f"sbom/{STEM}.spdx.json": None,
        "NOTICE.txt": b"notice\n",
    }
    out.update(extra)
    return out


@pytest.fixture
def staged(tmp_path: Path) -> StagedTree:
    return load_staged_tree(make_staged_tree(tmp_path / "rtx4090"), **LANE)


def write_recipe(tmp_path: Path, **override: object) -> Path:
    doc: dict[str, object] = {
        "schema": 1,
        "id": "test",
        "include": [{"from": "bin/**", "to": "bin/"}, {"from": "licenses/**", "to": "licenses/"}],
        "exclude": ["build-info.json", "dependencies.lock.json", "receipts/**"],
        "generated": [
            "config/ninfer.toml",
            "profile/{profile_id}.json",
            "sbom/{stem}.spdx.json",
            "NOTICE.txt",
        ],
    }
    doc.update(override)
    path = tmp_path / "recipe.json"
    path.write_text(json.dumps(doc))
    return path


def test_repo_recipe_loads() -> None:
    recipe = load_recipe(RECIPE)
    assert recipe == PackageRecipe(
        path=str(RECIPE),
        id="windows-native",
        description="OMP NInfer native Windows x64 package (engine, DLLs, licences, config, profile, SBOM)",
        extended_length=False,
        deflate_level=6,
        include=(
            IncludeRule(source="bin/**", dest="bin/"),
            IncludeRule(source="licenses/**", dest="licenses/"),
        ),
        exclude=("build-info.json", "dependencies.lock.json", "receipts/**"),
        generated=("config/ninfer.toml", "profile/{profile_id}.json", "sbom/{stem}.spdx.json", "NOTICE.txt"),
    )


def test_c17_recipe_backslash_paths_refused(tmp_path: Path) -> None:
    """C17 / DESIGN §6: a recipe listing `bin\\engine.exe` is refused with the path named."""
    path = write_recipe(
        tmp_path, include=[{"from": "bin\\engine.exe", "to": "bin\\engine.exe"}], exclude=["receipts\\**"]
    )
    with pytest.raises(InputError) as exc:
        load_recipe(path)
    rule = "contains a backslash; recipe paths use '/' (DESIGN §6, C17)"
    assert exc.value.lines == [
        f"{path}: include[0].from: 'bin\\\\engine.exe' {rule}",
        f"{path}: include[0].to: 'bin\\\\engine.exe' {rule}",
        f"{path}: exclude[0]: 'receipts\\\\**' {rule}",
    ]


def test_recipe_field_errors_all_reported(tmp_path: Path) -> None:
    path = write_recipe(
        tmp_path,
        schema=2,
        deflate_level=11,
        extended_length="yes",
        include=[{"from": "bin/**", "to": "bin"}, {"from": "/abs", "to": "x"}, {"src": "a"}],
        generated=["../x", "a", "a"],
        extra=1,
    )
    with pytest.raises(InputError) as exc:
        load_recipe(path)
    fields = [p.field for p in exc.value.problems]
    assert fields == [
        "extra",
        "schema",
        "extended_length",
        "deflate_level",
        "include[0].to",
        "include[1].from",
        "include[2]",
        "generated[0]",
        "generated",
    ]


def test_plan_maps_staged_and_generated_sorted(staged: StagedTree) -> None:
    plan = plan_package(staged, load_recipe(RECIPE), generated(), component=STEM)
    assert plan.names == (
        "NOTICE.txt",
        "bin/cudart64_13.dll",
        "bin/ninfer-server.exe",
        "config/ninfer.toml",
        "licenses/nlohmann-json.txt",
        f"profile/{PROFILE}.json",
        f"sbom/{STEM}.spdx.json",
    )
    assert [e.name for e in plan.staged_entries] == [
        "bin/cudart64_13.dll",
        "bin/ninfer-server.exe",
        "licenses/nlohmann-json.txt",
    ]
    cudart = plan.staged_entries[0]
    assert cudart.source == staged.root / "bin" / "cudart64_13.dll"
    assert cudart.staged_path == "bin/cudart64_13.dll"
    assert plan.deflate_level == 6
    sbom = next(e for e in plan.generated_entries if e.name.startswith("sbom/"))
    assert not sbom.ready
    filled = plan.with_generated({f"sbom/{STEM}.spdx.json": b"{}\n"})
    assert all(e.ready for e in filled.entries)
    with pytest.raises(InputError):
        plan.with_generated({"bin/ninfer-server.exe": b"x"})


def test_plan_is_independent_of_mapping_order(staged: StagedTree) -> None:
    recipe = load_recipe(RECIPE)
    forward = plan_package(staged, recipe, generated())
    backward = plan_package(staged, recipe, dict(reversed(list(generated().items()))))
    assert forward == backward


def test_unaccounted_staged_file_refused(staged: StagedTree, tmp_path: Path) -> None:
    (staged.root / "README.md").write_text("hi")
    again = load_staged_tree(staged.root, **LANE)
    with pytest.raises(InputError) as exc:
        plan_package(again, load_recipe(RECIPE), generated())
    assert exc.value.lines == [
        f"{RECIPE}: README.md: staged file is neither shipped (include) nor left out on purpose (exclude)"
    ]


def test_generated_members_must_match_templates(staged: StagedTree) -> None:
    gen = generated(**{"extra/thing.txt": b"x"})
    del gen["NOTICE.txt"]
    with pytest.raises(InputError) as exc:
        plan_package(staged, load_recipe(RECIPE), gen)
    assert [p.field for p in exc.value.problems] == ["extra/thing.txt", "generated"]
    assert "template 'NOTICE.txt' needs exactly one generated member, got []" in exc.value.lines[1]


def test_generated_name_colliding_with_staged_file(staged: StagedTree, tmp_path: Path) -> None:
    recipe = load_recipe(write_recipe(tmp_path, generated=["bin/{x}.exe"]))
    with pytest.raises(InputError) as exc:
        plan_package(staged, recipe, {"bin/ninfer-server.exe": b"x"})
    assert "zip name produced twice" in exc.value.lines[0]


def test_c18_plan_fails_before_writing_listing_every_path(tmp_path: Path) -> None:
    """C18: reserved names in the payload fail the plan (no I/O yet), every path listed."""
    bad = ["plugins/aux/readme.txt", "logs/NUL", "lib/COM1.dll", "data/con.tar.gz", "tools/lpt9.cfg"]
    root = make_staged_tree(tmp_path / "t")
    for p in bad:
        (root / "payload" / p).parent.mkdir(parents=True, exist_ok=True)
        (root / "payload" / p).write_bytes(b"x")
    staged = load_staged_tree(root, **LANE)
    recipe = load_recipe(
        write_recipe(
            tmp_path,
            include=[{"from": "payload/**", "to": ""}],
            exclude=["bin/**", "licenses/**", "build-info.json", "dependencies.lock.json"],
        )
    )
    with pytest.raises(InputError) as exc:
        plan_package(staged, recipe, generated())
    assert sorted(p.field for p in exc.value.problems) == sorted(bad)


def test_c19_c20_plan_names_every_offender(tmp_path: Path) -> None:
    """C19 + C20 through the plan: case collisions and trailing dot/space, all at once."""
    root = make_staged_tree(tmp_path / "t")
    for p in [
        "docs/README.txt",
        "docs/Readme.txt",
        "Tests/x",
        "tests/y",
        "music/AC-DC - T.N.T./track.txt",
        "notes.txt ",
    ]:
        (root / "licenses" / p).parent.mkdir(parents=True, exist_ok=True)
        (root / "licenses" / p).write_bytes(b"x")
    staged = load_staged_tree(root, **LANE)
    with pytest.raises(InputError) as exc:
        plan_package(staged, load_recipe(RECIPE), generated())
    assert sorted(p.field for p in exc.value.problems) == [
        "licenses/docs/Readme.txt",
        "licenses/music/AC-DC - T.N.T./track.txt",
        "licenses/notes.txt ",
        "licenses/tests/y",
    ]


def test_c17_staged_file_with_backslash_in_name_refused(tmp_path: Path) -> None:
    """C17: a staged file literally named `engine\\x.dll` (possible on Linux) never becomes a zip name."""
    root = make_staged_tree(tmp_path / "t")
    (root / "licenses" / "sub\\x.txt").write_bytes(b"x")
    staged = load_staged_tree(root, **LANE)
    with pytest.raises(InputError) as exc:
        plan_package(staged, load_recipe(RECIPE), generated())
    assert exc.value.lines == [
        f"{RECIPE}: licenses/sub\\x.txt: contains a backslash; package paths use '/' only (C17)"
    ]


def test_install_path_length_uses_component(tmp_path: Path) -> None:
    root = make_staged_tree(tmp_path / "t")
    (root / "licenses" / ("l" * 180 + ".txt")).write_bytes(b"x")
    staged = load_staged_tree(root, **LANE)
    recipe = load_recipe(RECIPE)
    plan_package(staged, recipe, generated(), component="c")  # fits with a short tag
    with pytest.raises(InputError) as exc:
        plan_package(staged, recipe, generated(), component=STEM)
    assert "MAX_PATH" in exc.value.lines[0]


def test_render_notice_exact_bytes() -> None:
    deps = DependencyLock(
        vendored=(_ZLIB,),
        redistributables=(
            Redistributable(
                file="bin/dstorage.dll",
                group="directstorage",
                package="Microsoft.Direct3D.DirectStorage",
                version="1.2.3",
                purl="pkg:nuget/Microsoft.Direct3D.DirectStorage@1.2.3",
                sha256="a" * 64,
                supplier="Microsoft Corporation",
                license="LicenseRef-Microsoft-DirectStorage",
                stand_in=True,
            ),
        ),
    )
    assert (
        render_notice(deps)
        == (
            "OMP NInfer - third-party notices\n"
            "\n"
            "This package contains third-party software. Licence texts are in the licenses/ folder.\n"
            "\n"
            "Vendored sources (compiled into the engine)\n"
            "-------------------------------------------\n"
            "zlib 1.3.1\n"
            "  license:  Zlib\n"
            "  supplier: Jean-loup Gailly and Mark Adler\n"
            "  commit:   51b7f2abdade71cd9bb0e7a373ef2610ec6f9daf\n"
            "  source:   https://github.com/madler/zlib/archive/v1.3.1.tar.gz\n"
            "  purl:     pkg:github/madler/zlib@v1.3.1\n"
            "\n"
            "Redistributable files (shipped unmodified)\n"
            "------------------------------------------\n"
            "bin/dstorage.dll\n"
            "  package:  Microsoft.Direct3D.DirectStorage 1.2.3 (directstorage)\n"
            "  license:  LicenseRef-Microsoft-DirectStorage\n"
            "  supplier: Microsoft Corporation\n"
            "  purl:     pkg:nuget/Microsoft.Direct3D.DirectStorage@1.2.3\n"
            f"  sha256:   {'a' * 64}\n"
            "  NOTE:     stand-in file for samples; NOT the real redistributable\n"
        ).encode()
    )


def test_render_notice_sorted_and_stable(tmp_path: Path) -> None:
    staged = load_staged_tree(make_staged_tree(tmp_path / "t", deps=lock()), **LANE)
    a = render_notice(staged.lock)
    b = render_notice(
        DependencyLock(
            vendored=tuple(reversed(staged.lock.vendored)),
            redistributables=tuple(reversed(staged.lock.redistributables)),
        )
    )
    assert a == b
    assert a.endswith(b"\n") and not a.endswith(b"\n\n") and b"\r" not in a


def test_render_notice_names_only_the_vendored_sources_an_engine_file_contains() -> None:
    zlib = _ZLIB
    fmt = dataclasses.replace(zlib, name="fmt", version="11.0.2", license="MIT")
    deps = DependencyLock(vendored=(zlib, fmt), redistributables=())
    engine = EngineFile(path="bin/a.exe", license="Apache-2.0", vendored=("zlib",))
    stand_in = EngineFile(path="bin/b.exe", license="Apache-2.0", stand_in=True)
    text = render_notice(deps, engine_files=(engine, stand_in)).decode()
    assert "bin/a.exe\n  license:  Apache-2.0\n  vendored: zlib 1.3.1\n\n" in text
    assert "bin/b.exe\n  license:  Apache-2.0\n  vendored: (none)\n  NOTE:     stand-in" in text
    assert "zlib 1.3.1\n  license:  Zlib" in text
    assert "fmt 11.0.2" not in text  # in the lock, but build-info puts it in no file
    none = render_notice(deps, engine_files=(stand_in,)).decode()
    assert (
        "Vendored sources (compiled into the engine)\n-------------------------------------------\n(none)\n"
        in none
    )
