"""What ``image build`` and ``image carry`` resolve before the containers stage runs (docs/containers.md).

The CLI passes the options as given; the rules for their defaults live here: the lane's staged
directory (:func:`~ninfer_release.build._inputs.lane_staged_dir`), the source-date epoch
(:func:`image_epoch`), the profile (``<repo>/profiles/<recipe profile>.yaml``), version and
revision (the staged ``build-info.json``), the backend, and which lane may be carried.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ninfer_release import containers, manifests
from ninfer_release.build._inputs import lane_staged_dir
from ninfer_release.errors import InputError, Problem
from ninfer_release.reproducible import source_date_epoch


@dataclass(frozen=True, kw_only=True)
class ImageBuildOptions:
    """The options of ``image build`` as given (``None``: the documented default).

    ``release`` is a release definition to take the epoch from, read with ``release_root`` as its
    project root; ``repo_root`` holds ``profiles/`` for the default profile. ``epoch`` in seconds.
    """

    recipe: Path
    inputs: Path
    base: str
    out: Path
    repo_root: Path
    version: str | None = None
    revision: str | None = None
    epoch: int | None = None
    release: Path | None = None
    release_root: Path | None = None
    profile: Path | None = None


@dataclass(frozen=True, kw_only=True)
class ImageBuildInputs:
    """An ``image build`` resolved: the request for the containers stage and what the staged
    ``build-info.json`` says (stand-in, licence) for the SBOMs."""

    request: containers.ImageBuildRequest
    info: containers.StagedImageInfo


def image_epoch(
    given: int | None, *, release: Path | None, release_root: Path | None, env: Mapping[str, str]
) -> int:
    """The source-date epoch of an image build, in seconds: ``given`` (``--source-date-epoch``),
    else ``SOURCE_DATE_EPOCH`` from ``env``, else the ``release`` definition's value.

    Raises:
        InputError: none of the three (exit 4).
        DefinitionError: ``SOURCE_DATE_EPOCH`` or the definition is invalid (exit 3).
    """
    if given is not None:
        return given
    default = None
    if release is not None:
        default = manifests.load_release(release, env=env, repo_root=release_root).source_date_epoch
    if default is None and not env.get("SOURCE_DATE_EPOCH"):
        raise InputError("no source-date epoch: give --source-date-epoch, SOURCE_DATE_EPOCH or --release")
    return source_date_epoch(default or 0, env)


def resolve_image_build(options: ImageBuildOptions, *, env: Mapping[str, str]) -> ImageBuildInputs:
    """Resolve ``image build``'s options into one :class:`~ninfer_release.containers.ImageBuildRequest`.

    The staged directory is the recipe's lane under ``options.inputs`` (or ``inputs`` itself);
    version and revision default to its ``build-info.json``; the config is rendered from the
    profile when the recipe ships rendered files.

    Raises:
        InputError: the recipe, staged inputs, profile or epoch is missing or invalid (exit 4).
        DefinitionError: the recipe, profile or definition is invalid (exit 3).
    """
    recipe = containers.load_recipe(options.recipe)
    lane_dir = lane_staged_dir(options.inputs, recipe.lane)
    info = containers.read_build_info(lane_dir)
    epoch = image_epoch(options.epoch, release=options.release, release_root=options.release_root, env=env)
    profile = options.profile or options.repo_root / "profiles" / f"{recipe.profile}.yaml"
    request = containers.ImageBuildRequest(
        recipe=recipe,
        inputs=lane_dir,
        base=options.base,
        out=options.out,
        version=options.version or info.component_tag,
        revision=options.revision or info.source_commit,
        epoch=epoch,
        rendered=containers.render_inputs(profile) if recipe.rendered_kinds else None,
    )
    return ImageBuildInputs(request=request, info=info)


def image_backend(
    kind: str,
    *,
    recipe: containers.ImageRecipe,
    env: Mapping[str, str],
    docker_host: str | None = None,
    push: str | None = None,
    smoke: bool = True,
) -> containers.ImageBackend:
    """The backend ``kind`` (``oci`` or ``docker``) names; the docker one reaches ``docker_host``
    (default ``DOCKER_HOST``), smoke-runs the recipe's check unless ``smoke`` is false and pushes
    to ``push`` (``REGISTRY/REPOSITORY:TAG``) when given."""
    if kind != "docker":
        return containers.OciBackend()
    return containers.DockerBackend(
        base_url=containers.docker_host(env, docker_host),
        smoke=recipe.smoke if smoke else None,
        push=containers.PushTarget.parse(push) if push else None,
    )


def carried_lane(release: manifests.Release, lane_id: str, *, where: str) -> manifests.CarriedImage:
    """The published record of lane ``lane_id``, which must be a carried lane; ``where`` names the
    definition as the user gave it.

    Raises:
        InputError: no such lane, or the lane is not carried (exit 4).
    """
    found = release.lanes.get(lane_id)
    if found is None:
        why = f"no such lane; known: {sorted(release.lanes)}"
        raise InputError(problems=[Problem(file=where, field=f"lanes.{lane_id}", message=why)])
    if found.mode != "carry" or found.carried is None:
        why = f"is {found.mode!r}; only a carried lane can be carried"
        raise InputError(problems=[Problem(file=where, field=f"lanes.{lane_id}.mode", message=why)])
    return found.carried
