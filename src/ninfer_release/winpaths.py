"""Windows install paths of a native lane: the two roots, Win32 length limits, joining (foundation).

A leaf module (imports nothing from the package) so that ``verify`` and the packaging path rules
can use the same constants as the install layout (``profiles.InstallLayout``) without loading the
profiles stage. See ``docs/install-layout.md``.
"""

from __future__ import annotations

import re

#: Where the package is extracted (read-only after installation); ``<component>`` = component tag.
PROGRAM_ROOT = "C:\\Program Files\\OMP NInfer\\<component>"
#: Writable per-machine state of one component release (``%ProgramData%`` on a stock install).
DATA_ROOT = "C:\\ProgramData\\OMP NInfer\\<component>"
#: The engine config inside the package (relative to the program root).
CONFIG_PATH = "config/ninfer.toml"
#: Where an ACL grants the engine's account: the route block writes its service's virtual account
#: there (``releases._standalone_verifier.route_plan``, which holds the same text).
SERVICE_ACCOUNT_MARK = "<service-account>"
#: The placeholder the route block resolves (reference: ``cache/<release-instance-id>/...``).
INSTANCE_PLACEHOLDER = "<release-instance-id>"

#: Win32 MAX_PATH: 260 UTF-16 units *including* the terminating NUL, so a file path may have 259
#: (https://learn.microsoft.com/windows/win32/fileio/maximum-file-path-limitation).
MAX_PATH = 260
#: CreateDirectory's lower limit: a directory path must leave room for an 8.3 name, 248 units
#: including the NUL (MAX_PATH - 12), so 247 usable; extractors create every parent folder with it
#: (https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-createdirectoryw).
MAX_DIR_PATH = 248


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (how Win32 measures a path)."""
    return len(text.encode("utf-16-le")) // 2


def windows_join(root: str, relative: str) -> str:
    """``root`` + ``\\`` + ``relative`` with its ``/`` turned into ``\\`` (``root`` alone for ``""``)."""
    base = root.rstrip("\\")
    return base + "\\" + relative.replace("/", "\\") if relative else base


#: A Windows 8.3 short name (``NINFER~1.EXE``, ``PROGRA~1``): at most 8 characters before ``~`` and
#: digits, an extension of at most 3 (the alias NTFS makes for a long name).
SHORT_NAME = re.compile(r"^[^.~]{1,7}~[0-9]{1,7}(\.[^.]{0,3})?$")
#: One name of a path: none of the characters Win32 refuses in a name, no control character.
_NAME = re.compile(r'^[^<>:"/\\|?*\x00-\x1f]+$')


def plain_path_problem(path: str) -> str | None:
    """Why ``path`` is not a plain absolute Windows path, or ``None`` when it is one.

    Plain: a drive letter, ``:\\``, then names joined by single backslashes, none of them empty,
    ``.`` or ``..``, none with a character Win32 refuses (``<>:"/\\|?*``, controls), none ending in a
    dot or space (Windows strips them) and none in the 8.3 short-name form (``PROGRA~1``). Only
    such a path can be compared as text: ``C:\\ProgramData\\..\\Program Files``, ``C:/Program Files``,
    ``\\\\?\\C:\\Program Files`` and ``C:\\PROGRA~1`` all name ``C:\\Program Files`` (hostile review,
    2026-12-04: each passed the route's "nothing writable under Program Files" rule).
    """
    if len(path) < 4 or not (path[0].isascii() and path[0].isalpha()) or path[1:3] != ":\\":
        return "does not start with a drive letter, a colon and a backslash"
    for part in path[3:].split("\\"):
        if part in ("", ".", ".."):
            return "has an empty, '.' or '..' name"
        if not _NAME.match(part):
            return f"name {part!r} has a character Windows refuses in a name"
        if part.endswith((".", " ")):
            return f"name {part!r} ends in a dot or space"
        if SHORT_NAME.match(part):
            return f"name {part!r} has the form of an 8.3 short name"
    return None
