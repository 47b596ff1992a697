"""Windows install paths of a native lane: the two roots, Win32 length limits, joining (foundation).

A leaf module (imports nothing from the package) so that ``verify`` and the packaging path rules
can use the same constants as the install layout (``profiles.InstallLayout``) without loading the
profiles stage. See ``docs/install-layout.md``.
"""

from __future__ import annotations

#: Where the package is extracted (read-only after installation); ``<component>`` = component tag.
PROGRAM_ROOT = "C:\\Program Files\\OMP NInfer\\<component>"
#: Writable per-machine state of one component release (``%ProgramData%`` on a stock install).
DATA_ROOT = "C:\\ProgramData\\OMP NInfer\\<component>"
#: The engine config inside the package (relative to the program root).
CONFIG_PATH = "config/ninfer.toml"
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
