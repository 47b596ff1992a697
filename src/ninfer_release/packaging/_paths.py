"""Windows safety of package paths (DESIGN.md §6; cases C17 C18 C19 C20).

A package path is a relative POSIX path (``bin/ninfer-server.exe``) that will be extracted on
Windows under an install root. Every rule below is checked for every path and every problem is
returned, so a build fails once, listing all offending paths.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from ninfer_release.errors import Problem
from ninfer_release.winpaths import MAX_DIR_PATH, PROGRAM_ROOT, SHORT_NAME, utf16_len
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
#: A character of :data:`_FORBIDDEN` or a control character (below U+0020).
_SUSPECT = re.compile(r'[<>:"|?*\x00-\x1f]')
_DRIVE = re.compile(r"^[A-Za-z]:")
#: The invisible formatting characters (Unicode category Cf: zero-width spaces and joiners,
#: bidirectional embeddings, overrides and isolates, the BOM, soft hyphen...): a name holding one
#: does not read as it is (``bin/\u202eexe.dll`` shows as ``bin/lld.exe``), or reads as another
#: name (``cudart64_13\u200b.dll``). tests/test_verify_package_layout.py holds the class to
#: ``unicodedata``'s Cf set.
INVISIBLE = re.compile(
    r"[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
_SHORT_NAME = SHORT_NAME


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
    if _SUSPECT.search(part):  # the two character scans only where one can find something
        bad = sorted({c for c in part if c in _FORBIDDEN})
        if bad:
            out.append(f'component {part!r} contains {"".join(bad)!r}; Windows forbids <>:"|?*')
        controls = sorted({c for c in part if ord(c) < 32})
        if controls:
            out.append(f"component {part!r} contains control characters {''.join(controls)!r}")
    if not part.isascii() and INVISIBLE.search(part):
        out.append(f"component {part!r} contains invisible formatting characters; a name must read as it is")
    if part.endswith((".", " ")):
        out.append(f"component {part!r} ends in a dot or space; Windows strips it silently (C20)")
    base = part.split(".", 1)[0].rstrip(" ").upper()
    if base in _DEVICES:
        out.append(f"component {part!r} is the reserved Windows device name {base} (C18)")
    if "~" in part and _SHORT_NAME.match(part):
        out.append(
            f"component {part!r} has the form of a Windows 8.3 short name; NTFS may give that alias "
            "to another file of the package, which extracting it would overwrite"
        )
    return out


def _form_problems(path: str, folders: dict[str, list[str]] | None = None) -> list[str]:
    """What is wrong with ``path``'s spelling: backslash (C17), absolute, not NFC (C16), components.

    ``folders`` (folder → its components' problems, filled here) spares the components of a
    folder many paths share their check (issue 13: 100k files in a few folders).
    """
    out: list[str] = []
    if "\\" in path:
        out.append("contains a backslash; package paths use '/' only (C17)")
    if path.startswith("/") or _DRIVE.match(path):
        out.append("is absolute; package paths are relative to the install root")
    if unicodedata.normalize("NFC", path) != path:
        out.append("is not in Unicode NFC form (C16)")
    folder, slash, name = path.rpartition("/")
    if slash:
        known = folders.get(folder) if folders is not None else None
        if known is None:
            known = [m for part in folder.split("/") for m in _component_problems(part)]
            if folders is not None:
                folders[folder] = known
        out.extend(known)
    out.extend(_component_problems(name))
    return out


def _length_problems(
    path: str, *, install_root: str, root_len: int, folders: dict[str, list[str]] | None = None
) -> list[str]:
    """``path`` (and its deepest too-long folder) against MAX_PATH / CreateDirectory's limit.

    Lengths are UTF-16 units of ``install_root\\path``; ``root_len`` is the root's (no trailing
    separator). Windows: MAX_PATH 260 incl. NUL, folders 248 incl. NUL (DESIGN.md §6).
    ``folders`` (folder with its ``/`` → its problem, filled here) spares paths sharing a folder
    its check.
    """
    out: list[str] = []
    full = root_len + 1 + utf16_len(path)
    if full >= MAX_PATH:
        out.append(
            f"installs as a {full}-character path under {install_root!r}; Windows MAX_PATH allows "
            f"{MAX_PATH - 1} unless the package declares extended-length support"
        )
    folder = path[: path.rfind("/") + 1]  # with its "/": "" is no folder, "/" the empty one
    known = folders.get(folder) if folders is not None else None
    if known is None:
        known = _folder_length_problems(path, install_root=install_root, root_len=root_len)
        if folders is not None:
            folders[folder] = known
    return out + known


def _folder_length_problems(path: str, *, install_root: str, root_len: int) -> list[str]:
    """The deepest folder of ``path`` too long for CreateDirectory, as a problem (or none)."""
    out: list[str] = []
    parts = path.split("/")
    for depth in range(len(parts) - 1, 0, -1):
        folder = "/".join(parts[:depth])
        folder_len = root_len + 1 + utf16_len(folder)
        if folder_len >= MAX_DIR_PATH:
            out.append(
                f"its folder {folder!r} installs as a {folder_len}-character path "
                f"under {install_root!r}; Windows creates folders of at most {MAX_DIR_PATH - 1} "
                "unless the package declares extended-length support"
            )
            break
    return out


@dataclass(kw_only=True)
class _Spellings:
    """Paths and folders seen so far, by their case-folded key (C19): key → first spelling."""

    files: dict[str, str] = field(default_factory=dict)
    folders: dict[str, str] = field(default_factory=dict)
    #: Each folder seen (exact spelling, with its ``/``) → its folders' collisions: the same for
    #: every later path in it, since a folder key keeps its first spelling (issue 13: 100k files
    #: in a few folders).
    seen: dict[str, list[str]] = field(default_factory=dict)

    def add(self, path: str) -> list[str]:
        """Record ``path`` and its folders; why it collides with a path or folder seen before."""
        out: list[str] = []
        key = _fold(path)
        other = self.files.get(key)
        if other is None:
            self.files[key] = path
        elif other == path:
            out.append("listed twice")
        else:
            out.append(f"collides with {other!r} on a case-insensitive file system (C19)")
        folder = path[: path.rfind("/") + 1]  # with its "/": "" is no folder, "/" the empty one
        known = self.seen.get(folder)
        if known is None:
            known = self.seen[folder] = self._folders_of(path)
        return out + known

    def _folders_of(self, path: str) -> list[str]:
        """Record the folders of ``path``; why they collide with a folder spelled otherwise."""
        out: list[str] = []
        parts = path.split("/")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            spelled = self.folders.setdefault(_fold(prefix), prefix)
            if spelled != prefix:
                out.append(
                    f"folder {prefix!r} collides with {spelled!r} on a case-insensitive file system (C19)"
                )
        return out

    def files_that_are_folders(self) -> list[tuple[str, str]]:
        """``(path, message)`` for each file whose name is also a folder of the package."""
        return [
            (path, f"is a file but {folder!r} is also a folder in the package")
            for key, path in self.files.items()
            if (folder := self.folders.get(key)) is not None
        ]


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
    found: list[tuple[str, str]] = []
    spellings = _Spellings()
    root_len = utf16_len(install_root.rstrip("\\/"))
    forms: dict[str, list[str]] = {}
    lengths: dict[str, list[str]] = {}
    for path in paths:
        messages = _form_problems(path, forms)
        if not extended_length:
            messages += _length_problems(path, install_root=install_root, root_len=root_len, folders=lengths)
        messages += spellings.add(path)
        found += [(path, message) for message in messages]
    found += spellings.files_that_are_folders()
    return [Problem(file=source, field=path, message=message) for path, message in found]
