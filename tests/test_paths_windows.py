"""Windows safety of package paths (DESIGN.md §6): cases C17 C18 C19 C20."""

from __future__ import annotations

import unicodedata

import pytest

from ninfer_release.packaging import check_windows_paths


def offending(paths: list[str], **kw: object) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in check_windows_paths(paths, **kw):  # type: ignore[arg-type]
        out.setdefault(p.field, []).append(p.message)
    return out


def test_safe_paths_pass() -> None:
    assert (
        check_windows_paths(["bin/ninfer-server.exe", "licenses/MIT.txt", "NOTICE.txt", "config/ninfer.toml"])
        == []
    )


def test_c18_reserved_device_names_every_path_listed() -> None:
    """C18: all five case inputs are refused at once, case-insensitively, on any component, any extension."""
    bad = ["plugins/aux/readme.txt", "logs/NUL", "lib/COM1.dll", "data/con.tar.gz", "tools/lpt9.cfg"]
    found = offending([*bad, "bin/ok.exe", "lib/COM10.dll", "lib/console.dll", "auxiliary/x"])
    assert sorted(found) == sorted(bad)
    assert found["data/con.tar.gz"] == [
        "component 'con.tar.gz' is the reserved Windows device name CON (C18)"
    ]
    assert found["plugins/aux/readme.txt"] == [
        "component 'aux' is the reserved Windows device name AUX (C18)"
    ]


@pytest.mark.parametrize(
    "name", ["nul.txt", "Nul", "PRN.x.y", "com9", "LPT1 .log", "COM\u00b9.txt", "CONOUT$"]
)
def test_c18_reserved_variants(name: str) -> None:
    assert list(offending([f"bin/{name}"])) == [f"bin/{name}"]


def test_c19_case_fold_collision_names_the_pair() -> None:
    """C19: `docs/README.txt` vs `docs/Readme.txt` fails naming both."""
    problems = check_windows_paths(["docs/README.txt", "docs/Readme.txt"])
    assert [(p.field, p.message) for p in problems] == [
        ("docs/Readme.txt", "collides with 'docs/README.txt' on a case-insensitive file system (C19)")
    ]


def test_c19_folder_collision_names_the_pair() -> None:
    """C19 second variant: folders `Tests/x` and `tests/y`."""
    problems = check_windows_paths(["Tests/x", "tests/y"])
    assert [(p.field, p.message) for p in problems] == [
        ("tests/y", "folder 'tests' collides with 'Tests' on a case-insensitive file system (C19)")
    ]


def test_c19_nfc_and_nfd_spellings_collide() -> None:
    nfd = unicodedata.normalize("NFD", "docs/é.txt")
    found = offending(["docs/é.txt", nfd])
    assert nfd in found
    assert any("NFC" in m for m in found[nfd])
    assert any("collides with 'docs/é.txt'" in m for m in found[nfd])


def test_file_and_folder_with_one_name() -> None:
    assert offending(["bin/tool", "bin/Tool/x.dll"]) == {
        "bin/tool": ["is a file but 'bin/Tool' is also a folder in the package"]
    }


def test_duplicate_path_listed_twice() -> None:
    assert offending(["a.txt", "a.txt"]) == {"a.txt": ["listed twice"]}


def test_c20_trailing_dot_or_space_both_named() -> None:
    """C20: `music/AC-DC - T.N.T./track.txt` and `notes.txt ` both fail, each named."""
    found = offending(["music/AC-DC - T.N.T./track.txt", "notes.txt ", "ok.txt"])
    assert found == {
        "music/AC-DC - T.N.T./track.txt": [
            "component 'AC-DC - T.N.T.' ends in a dot or space; Windows strips it silently (C20)"
        ],
        "notes.txt ": ["component 'notes.txt ' ends in a dot or space; Windows strips it silently (C20)"],
    }


def test_c17_backslash_refused() -> None:
    """C17: a stored name may not contain a backslash."""
    assert offending(["bin\\engine.exe"]) == {
        "bin\\engine.exe": ["contains a backslash; package paths use '/' only (C17)"]
    }


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("/etc/passwd", "is absolute"),
        ("C:/x.txt", "is absolute"),
        ("../x.txt", "'..' path component"),
        ("a//b.txt", "empty or '.'"),
        ("a/./b.txt", "empty or '.'"),
        ("a<b.txt", "forbids"),
        ('a"b.txt', "forbids"),
        ("what?.txt", "forbids"),
        ("a\tb.txt", "control characters"),
        ("a\x00b", "control characters"),
    ],
)
def test_other_unsafe_paths(path: str, fragment: str) -> None:
    found = offending([path])
    assert list(found) == [path]
    assert any(fragment in m for m in found[path])


def test_max_path_under_install_root() -> None:
    root = "C:\\Program Files\\OMP NInfer\\ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64"
    room = 259 - len(root) - 1  # longest relative path that still fits MAX_PATH (259 + NUL)
    fits = "bin/" + "a" * (room - 4)
    too_long = fits + "b"
    found = offending([fits, too_long], install_root=root)
    assert list(found) == [too_long]
    assert "installs as a 260-character path" in found[too_long][0]
    assert offending([fits, too_long], install_root=root, extended_length=True) == {}


def test_max_path_counts_utf16_units() -> None:
    root = "C:\\R"
    # U+1F600 is two UTF-16 code units: 127 of them plus "x/" reach 259 + root.
    name = "x/" + "\U0001f600" * 127
    assert len(name) < 200
    assert list(offending([name], install_root=root)) == [name]


def test_problems_come_path_by_path_in_rule_order() -> None:
    """Each path's problems in rule order (spelling, components, lengths, collisions), then the
    file-that-is-also-a-folder pairs after every path: the order a reader fixes them in."""
    root = "C:\\" + "r" * 200
    long_folder = "d" * 60
    paths = ["\\A/con.", f"{long_folder}/x", f"{long_folder.upper()}/y", "x", "x/z"]
    found = [(p.field, p.message) for p in check_windows_paths(paths, install_root=root)]
    assert [(field, message.split(" ")[0:2]) for field, message in found] == [
        ("\\A/con.", ["contains", "a"]),
        ("\\A/con.", ["component", "'con.'"]),
        ("\\A/con.", ["component", "'con.'"]),
        (f"{long_folder}/x", ["installs", "as"]),
        (f"{long_folder}/x", ["its", "folder"]),
        (f"{long_folder.upper()}/y", ["installs", "as"]),
        (f"{long_folder.upper()}/y", ["its", "folder"]),
        (f"{long_folder.upper()}/y", ["folder", f"'{long_folder.upper()}'"]),
        ("x", ["is", "a"]),
    ]


def test_a_folders_problems_are_reported_for_every_path_in_it() -> None:
    """Paths sharing a folder share its checks (issue 13: they are made once per folder), yet
    each path still gets its folder's problems, in the order of a path checked alone."""
    paths = ["Tests/a.txt", "tests/con/b.txt", "tests/con/c.", "Tests/d.txt", "tests/con/e.txt"]
    found = offending(paths, install_root="C:\\" + "r" * 240)
    alone = {p: offending([paths[0], p], install_root="C:\\" + "r" * 240)[p] for p in paths[1:]}
    assert {p: found[p] for p in paths[1:]} == alone
    root = "C:\\" + "r" * 240
    assert found["tests/con/e.txt"] == [
        "component 'con' is the reserved Windows device name CON (C18)",
        f"its folder 'tests/con' installs as a 253-character path under {root!r}; Windows creates "
        "folders of at most 247 unless the package declares extended-length support",
        "folder 'tests' collides with 'Tests' on a case-insensitive file system (C19)",
    ]


def test_no_folder_and_the_empty_folder_are_told_apart() -> None:
    """``""`` (no folder) and ``"/"`` (a file in the empty-named folder): the file ``""`` is then
    also a folder; the per-folder checks must not take one for the other."""
    found = [(p.field, p.message) for p in check_windows_paths(["", "/"])]
    assert ("", "is a file but '' is also a folder in the package") in found
