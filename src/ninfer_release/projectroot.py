"""The project root: the one place the tool's data folders are found (issue 10, issue 15).

The release definitions, profiles, recipes, catalog and samples live in a checkout of the project
(``manifests/``, ``profiles/``, ``packaging/``, ``containers/``, ``sbom/``, ``releases/``,
``samples/``), never beside the installed package: an installed wheel holds code only. The root is
resolved once per command by :func:`resolve_root`, in this order:

1. an explicit root: the global ``--repo DIR`` option, else the ``NINFER_RELEASE_REPO``
   environment variable (the CLI reads both and passes them in; nothing below reads the
   environment);
2. for a command given a project file (a release definition ``manifests/X.yaml``, a recipe
   ``containers/X.yaml``), that file's project: the directory two levels up, as the release
   definition format states (docs/release-definition.md);
3. discovery: from the working directory up to the first directory that holds ``manifests/``,
   ``profiles/`` and ``sbom/`` (:data:`MARKERS`).

None found is exit 4 with one line saying to give ``--repo``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ninfer_release.errors import InputError, Problem

#: The environment variable naming the project root (read by the CLI only).
ENV_VAR = "NINFER_RELEASE_REPO"
#: The folders that mark a project root in discovery: the release definitions, the profiles they
#: name and the curated catalog (the folders a build reads; a checkout holds all three).
MARKERS = ("manifests", "profiles", "sbom")


@dataclass(frozen=True, kw_only=True)
class ProjectRoot:
    """A resolved project root (an absolute path); ``how`` says which rule found it (``--repo``,
    ``NINFER_RELEASE_REPO``, ``definition`` or ``discovered``)."""

    path: Path
    how: str


def is_project_root(path: Path) -> bool:
    """True when ``path`` holds the data folders every command may read: ``manifests/``,
    ``profiles/`` and ``sbom/`` (a checkout of the project, or a release project laid out like one)."""
    return all((path / name).is_dir() for name in MARKERS)


def discover_root(start: Path) -> Path | None:
    """The first of ``start`` and its parents that :func:`is_project_root`, else ``None``."""
    here = start.resolve()
    for candidate in (here, *here.parents):
        if is_project_root(candidate):
            return candidate
    return None


def resolve_root(
    *, option: str | None, env_value: str | None, cwd: Path, project_file: Path | None = None
) -> ProjectRoot:
    """Resolve the project root by the rules of the module docstring.

    ``option`` is ``--repo`` (or ``None``), ``env_value`` the ``NINFER_RELEASE_REPO`` value (an
    empty value counts as unset), ``cwd`` the working directory, ``project_file`` a release
    definition or recipe the command was given.

    Raises:
        InputError: an explicit root that is not a directory, or no root found (exit 4).
    """
    for how, given in (("--repo", option), (ENV_VAR, env_value)):
        if given:
            path = Path(given)
            if not path.is_dir():
                raise InputError(
                    problems=[Problem(file=given, field=how, message="project root is not a directory")]
                )
            return ProjectRoot(path=path.resolve(), how=how)
    if project_file is not None:
        return ProjectRoot(path=project_file.resolve().parent.parent, how="definition")
    found = discover_root(cwd)
    if found is None:
        raise InputError(
            f"no ninfer-release project root in {cwd} or its parents (a directory holding "
            f"{'/, '.join(MARKERS)}/); give --repo DIR or set {ENV_VAR}"
        )
    return ProjectRoot(path=found, how="discovered")
