"""The install layout of a native Windows lane: the one record every installed path comes from.

The engine config (``[paths]``, ``[model] path``, ``[server] bearer_key_file``, ``[checkpoint]``),
the route block's ``install`` and ``bearer_key`` sections, and the 260/248-character path budget
are all rendered from one :class:`InstallLayout`, so they cannot disagree (issue 8 §3;
``docs/install-layout.md``).

Two roots (ours):

* the **program root** ``C:\\Program Files\\OMP NInfer\\<component>``: the package is extracted
  there and nothing in it is written after installation (standard users cannot write under
  ``C:\\Program Files``, and every local user can read it);
* the **data root** ``C:\\ProgramData\\OMP NInfer\\<component>``: the writable, per-machine state of
  this component release — bearer key (``secrets/``), model (``models/``), cache and checkpoints
  (``cache/<release-instance-id>/session-checkpoints-v3``, reference: "each immutable component
  release's own cache root").

Relative paths in the layout use ``/`` (as the config writes them); Windows paths join with ``\\``.
Lengths are counted in UTF-16 code units, as Win32 counts them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ninfer_release.errors import DefinitionError, Problem
from ninfer_release.profiles._keys import KEY_FILE_SPEC, AclGrant, KeyFileSpec
from ninfer_release.profiles._profile import CHECKPOINT_DIR_TEMPLATE, CHECKPOINT_ROOT, Profile
from ninfer_release.winpaths import (
    CONFIG_PATH,
    DATA_ROOT,
    INSTANCE_PLACEHOLDER,
    MAX_DIR_PATH,
    MAX_PATH,
    PROGRAM_ROOT,
    utf16_len,
    windows_join,
)

#: Folder of the downloaded model under the data root (ours).
MODELS_DIR = "models"
#: Characters the budget reserves for one checkpoint file name inside the checkpoint directory
#: (ours: the engine names its schema-3 generation files; 96 covers a 64-hex identity, a
#: generation counter and a temporary suffix).
CHECKPOINT_FILE_NAME_CHARS = 96
#: Grants on the cache root (ours): the engine's account may create and replace checkpoints there.
CACHE_GRANTS = (AclGrant(rights="modify"),)


@dataclass(frozen=True, kw_only=True)
class InstallLayout:
    """Where one native component release lives on the Windows host.

    ``program_root`` and ``data_root`` are absolute Windows paths; ``config`` is relative to the
    program root; ``key_file``, ``model``, ``cache_root`` and ``checkpoint_dir_template`` (holding
    ``<release-instance-id>``) are relative to the data root, ``/``-separated, exactly as the config
    writes them. ``key_spec`` is what the key file holds and its ACL.
    """

    component_tag: str
    program_root: str
    data_root: str
    config: str
    key_file: str
    model: str
    cache_root: str
    checkpoint_dir_template: str
    key_spec: KeyFileSpec = KEY_FILE_SPEC

    def cache_acl(self) -> dict[str, Any]:
        """The ACL the installer sets on the cache root (inherited by every checkpoint below it)."""
        return {"inheritance": "enabled", "grants": [g.as_dict() for g in CACHE_GRANTS]}

    @property
    def config_path(self) -> str:
        """Absolute Windows path of the installed config."""
        return windows_join(self.program_root, self.config)

    @property
    def key_path(self) -> str:
        """Absolute Windows path of the bearer key file the installer writes."""
        return windows_join(self.data_root, self.key_file)

    @property
    def model_path(self) -> str:
        """Absolute Windows path the model artifact is stored at."""
        return windows_join(self.data_root, self.model)

    @property
    def cache_path(self) -> str:
        """Absolute Windows path of the component release's cache root."""
        return windows_join(self.data_root, self.cache_root)

    def checkpoint_dir(self, instance_id: str) -> str:
        """The checkpoint directory relative to the data root: ``cache/<id>/session-checkpoints-v3``."""
        return self.checkpoint_dir_template.replace(INSTANCE_PLACEHOLDER, instance_id)

    def checkpoint_path(self, instance_id: str) -> str:
        """Absolute Windows path of the checkpoint directory of release instance ``instance_id``."""
        return windows_join(self.data_root, self.checkpoint_dir(instance_id))

    def data_dirs(self, instance_id: str) -> tuple[str, ...]:
        """Every directory the installer creates under the data root, parents first (absolute)."""
        rels = {self.cache_root}
        for rel in (self.key_file, self.model):
            rels.update(_parents(rel))
        rels.update(_parents(self.checkpoint_dir(instance_id) + "/x"))
        return (self.data_root, *(windows_join(self.data_root, r) for r in sorted(rels) if r))


def _parents(relative: str) -> list[str]:
    """The parent folders of a ``/``-separated relative path (``a/b/c`` → ``a``, ``a/b``)."""
    parts = relative.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def install_layout(profile: Profile) -> InstallLayout:
    """The install layout of a native ``profile`` (its component tag names both roots).

    Raises:
        DefinitionError: ``profile`` is not a native profile with a component tag.
    """
    if profile.kind != "native" or profile.component_tag is None:
        raise DefinitionError(
            problems=[
                Problem(
                    file=str(profile.path),
                    field="component_tag",
                    message="a native profile needs its component tag (it names the install roots)",
                )
            ]
        )
    tag = profile.component_tag
    return InstallLayout(
        component_tag=tag,
        program_root=PROGRAM_ROOT.replace("<component>", tag),
        data_root=DATA_ROOT.replace("<component>", tag),
        config=CONFIG_PATH,
        key_file=profile.endpoint.key_file,
        model=f"{MODELS_DIR}/{profile.model_file}",
        cache_root=profile.checkpoint.root or CHECKPOINT_ROOT,
        checkpoint_dir_template=profile.checkpoint.dir_template or CHECKPOINT_DIR_TEMPLATE,
    )


@dataclass(frozen=True, kw_only=True)
class LongestPath:
    """The longest path of one kind under a root: the path, its length and the usable maximum.

    ``chars`` and ``limit`` are UTF-16 units without the NUL (``limit`` = 259 for files, 247 for
    directories). A ``path`` ending in ``<checkpoint file>`` counts :data:`CHECKPOINT_FILE_NAME_CHARS`
    for that name.
    """

    path: str
    chars: int
    limit: int

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "chars": self.chars, "limit": self.limit}


@dataclass(frozen=True, kw_only=True)
class RootBudget:
    """The longest file path and the longest directory path under one install root."""

    root: str
    longest_file: LongestPath
    longest_dir: LongestPath

    def as_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "longest_file": self.longest_file.as_dict(),
            "longest_dir": self.longest_dir.as_dict(),
        }


@dataclass(frozen=True, kw_only=True)
class PathBudget:
    """The 260/248 budget checked against the real paths under both roots (build ``--json``, manifest)."""

    program: RootBudget
    data: RootBudget
    extended_length: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "max_path": MAX_PATH,
            "max_dir_path": MAX_DIR_PATH,
            "units": "UTF-16 code units, NUL excluded from chars, included in max_path/max_dir_path",
            "checkpoint_file_name_chars": CHECKPOINT_FILE_NAME_CHARS,
            "extended_length": self.extended_length,
            "program_root": self.program.as_dict(),
            "data_root": self.data.as_dict(),
        }


CHECKPOINT_FILE_MARK = "<checkpoint file>"


def _longest(paths: Iterable[tuple[str, int]], limit: int) -> LongestPath:
    # Longest first; ties broken by the path text so the report is deterministic.
    path, chars = max(paths, key=lambda pc: (pc[1], pc[0]))
    return LongestPath(path=path, chars=chars, limit=limit - 1)


def path_budget(
    layout: InstallLayout,
    *,
    package_paths: Iterable[str],
    instance_id: str,
    extended_length: bool = False,
    source: str = "install layout",
) -> PathBudget:
    """Measure and check the longest file and directory paths under both roots.

    ``package_paths`` are the zip's member names (``/``-separated); every parent folder of a member
    is a directory the extractor creates. Under the data root: the key, the model, and one
    checkpoint file of :data:`CHECKPOINT_FILE_NAME_CHARS` characters in the checkpoint directory of
    ``instance_id``, and every folder the installer creates. Files must fit MAX_PATH (260 incl.
    NUL), directories the CreateDirectory limit (248 incl. NUL). The program root is exempt when
    the package declares ``extended_length``; the data root never is (installers and tools outside
    the engine open it with plain Win32 paths).

    Raises:
        DefinitionError: a path is over its limit (each named, with its length and the limit).
    """
    files: list[tuple[str, int]] = []
    dirs: dict[str, int] = {layout.program_root: utf16_len(layout.program_root)}
    for member in package_paths:
        full = windows_join(layout.program_root, member)
        files.append((full, utf16_len(full)))
        for parent in _parents(member):
            d = windows_join(layout.program_root, parent)
            dirs[d] = utf16_len(d)
    if not files:
        files.append((layout.config_path, utf16_len(layout.config_path)))
    ckpt_dir = layout.checkpoint_path(instance_id)
    data_files = [
        (layout.key_path, utf16_len(layout.key_path)),
        (layout.model_path, utf16_len(layout.model_path)),
        (ckpt_dir + "\\" + CHECKPOINT_FILE_MARK, utf16_len(ckpt_dir) + 1 + CHECKPOINT_FILE_NAME_CHARS),
    ]
    data_dirs = [(d, utf16_len(d)) for d in layout.data_dirs(instance_id)]
    roots = (
        (layout.program_root, files, list(dirs.items()), not extended_length),
        (layout.data_root, data_files, data_dirs, True),
    )
    problems: list[Problem] = []
    budgets: list[RootBudget] = []
    for root, root_files, root_dirs, checked in roots:
        for kind, entries, limit in (("file", root_files, MAX_PATH), ("directory", root_dirs, MAX_DIR_PATH)):
            for path, chars in entries if checked else ():
                if chars >= limit:
                    problems.append(
                        Problem(
                            file=source,
                            field=path,
                            message=f"{kind} path is {chars} characters; Windows allows {limit - 1} "
                            f"({limit} with the NUL)",
                        )
                    )
        budgets.append(
            RootBudget(
                root=root,
                longest_file=_longest(root_files, MAX_PATH),
                longest_dir=_longest(root_dirs, MAX_DIR_PATH),
            )
        )
    if problems:
        raise DefinitionError(problems=problems)
    program, data = budgets
    return PathBudget(program=program, data=data, extended_length=extended_length)
