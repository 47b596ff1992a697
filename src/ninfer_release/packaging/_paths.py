"""Windows safety of package paths (DESIGN.md §6; cases C17 C18 C19 C20).

A package path is a relative POSIX path (``bin/ninfer-server.exe``) that will be extracted on
Windows under an install root. Every rule below is checked for every path and every problem is
returned, so a build fails once, listing all offending paths.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from ninfer_release.errors import Problem
from ninfer_release.winpaths import MAX_DIR_PATH, PROGRAM_ROOT, utf16_len
from ninfer_release.winpaths import MAX_PATH as MAX_PATH  # re-exported: packaging.MAX_PATH

#: The documented install root (``<component>`` is the component tag): the install layout's
#: program root (``winpaths.PROGRAM_ROOT``, docs/install-layout.md); DESIGN.md §6.
DEFAULT_INSTALL_ROOT = PROGRAM_ROOT

#: Reserved device names; also reserved with any extension (``NUL.txt``, ``con.tar.gz``) and with
#: trailing blanks. Windows also treats the superscript digits ¹²³ as digits for COM/LPT, and
#: Windows 11 reserves CONIN$/CONOUT$.
_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{kind}{d}" for kind in ("COM", "LPT") for d in "123456789\u00b9\u00b2\u00b3"}
)
_FORBIDDEN = frozenset('<>:"|?*')
_DRIVE = re.compile(r"^[A-Za-z]:")


def _fold(path: str) -> str:
    """Comparison key of Windows' case-insensitive names (NFC, then Unicode case folding).

    Case folding is slightly broader than NTFS's upcase table (``ß`` folds to ``ss``); a false
    collision only refuses a package, it never lets one silently overwrite a file.
    """
    return unicodedata.normalize("NFC", path).casefold()


def _component_problems(part: str) -> list[str]:
    out: list[str] = []
    if part in ("", "."):
        out.append("empty or '.' path component")
        return out
    if part == "..":
        out.append("'..' path component leaves the install root")
        return out
    bad = sorted({c for c in part if c in _FORBIDDEN})
    if bad:
        out.append(f'component {part!r} contains {"".join(bad)!r}; Windows forbids <>:"|?*')
    controls = sorted({c for c in part if ord(c) < 32})
    if controls:
        out.append(f"component {part!r} contains control characters {''.join(controls)!r}")
    if part.endswith((".", " ")):
        out.append(f"component {part!r} ends in a dot or space; Windows strips it silently (C20)")
    base = part.split(".", 1)[0].rstrip(" ").upper()
    if base in _DEVICES:
        out.append(f"component {part!r} is the reserved Windows device name {base} (C18)")
    return out


def check_windows_paths(
    paths: Iterable[str],
    *,
    install_root: str = DEFAULT_INSTALL_ROOT,
    extended_length: bool = False,
    source: str = "package",
) -> list[Problem]:
    """Every reason the package ``paths`` could not be extracted faithfully on Windows (DESIGN.md §6).

    ``paths`` are relative POSIX paths as stored in the zip. Returned problems have
    ``file=source``, ``field=<the offending path>`` and a one-line message; an empty list means all
    paths are safe. Rules, checked on every path and every component:

    * no backslash (C17: stored names use ``/`` only), not absolute (``/x``, ``C:x``), no ``..``,
      no empty or ``.`` component, not NFC-normalised is reported too (names are stored NFC, C16);
    * no reserved device name, case-insensitive, with or without extension (C18);
    * no ``<>:"|?*`` and no control characters; no component ending in a dot or space (C20);
    * no two paths equal under case folding, including a folder spelled two ways
      (``Tests/x`` vs ``tests/y``) and a file that is also a folder (C19) — the pair is named;
    * ``install_root\\path`` shorter than 260 UTF-16 units (MAX_PATH incl. NUL), and every folder
      the extractor creates for it shorter than 248 (CreateDirectory's limit incl. NUL), unless
      ``extended_length``.

    Raises:
        Nothing: problems are returned; callers raise :class:`~ninfer_release.errors.InputError`.
    """
    problems: list[Problem] = []

    def add(path: str, message: str) -> None:
        problems.append(Problem(file=source, field=path, message=message))

    seen_files: dict[str, str] = {}
    seen_dirs: dict[str, str] = {}
    root_len = utf16_len(install_root.rstrip("\\/"))
    for path in paths:
        if "\\" in path:
            add(path, "contains a backslash; package paths use '/' only (C17)")
        if path.startswith("/") or _DRIVE.match(path):
            add(path, "is absolute; package paths are relative to the install root")
        if unicodedata.normalize("NFC", path) != path:
            add(path, "is not in Unicode NFC form (C16)")
        for part in path.split("/"):
            for message in _component_problems(part):
                add(path, message)
        full = root_len + 1 + utf16_len(path)
        if not extended_length and full >= MAX_PATH:
            add(
                path,
                f"installs as a {full}-character path under {install_root!r}; Windows MAX_PATH allows "
                f"{MAX_PATH - 1} unless the package declares extended-length support",
            )
        parts = path.split("/")
        if not extended_length:
            for depth in range(len(parts) - 1, 0, -1):
                folder_len = root_len + 1 + utf16_len("/".join(parts[:depth]))
                if folder_len >= MAX_DIR_PATH:
                    add(
                        path,
                        f"its folder {'/'.join(parts[:depth])!r} installs as a {folder_len}-character path "
                        f"under {install_root!r}; Windows creates folders of at most {MAX_DIR_PATH - 1} "
                        "unless the package declares extended-length support",
                    )
                    break
        # Case-fold collisions (C19): the full path, each parent folder, and file-vs-folder.
        key = _fold(path)
        other = seen_files.get(key)
        if other is not None:
            if other == path:
                add(path, "listed twice")
            else:
                add(path, f"collides with {other!r} on a case-insensitive file system (C19)")
        else:
            seen_files[key] = path
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            pkey = _fold(prefix)
            spelled = seen_dirs.setdefault(pkey, prefix)
            if spelled != prefix:
                add(
                    path,
                    f"folder {prefix!r} collides with {spelled!r} on a case-insensitive file system (C19)",
                )
    for key, path in seen_files.items():
        folder = seen_dirs.get(key)
        if folder is not None:
            add(path, f"is a file but {folder!r} is also a folder in the package")
    return problems
