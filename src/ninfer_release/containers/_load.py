"""Loading the container lane's data: recipe YAML, rendered config/profile, staged ``build-info.json``.

YAML is parsed by the profiles stage's bounded loader (the only YAML parser in the package).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ninfer_release import strictjson
from ninfer_release.errors import InputError, Problem
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.profiles import load_profile, load_yaml_data, render_config

from ._build import RenderedInputs
from ._recipe import ImageRecipe, parse_recipe


def load_recipe(path: Path) -> ImageRecipe:
    """Load and validate an image recipe (``containers/<name>.yaml``).

    Raises:
        InputError: the file is missing, is not valid YAML, or any recipe field is invalid (all at once).
    """
    return parse_recipe(load_yaml_data(path, error=InputError), file=str(path))


def render_inputs(profile_path: Path, *, config_path: str = "/etc/ninfer/config.toml") -> RenderedInputs:
    """Render a container lane's engine config and public profile document from its profile.

    The profile document is the profile's public data plus the config's two hashes under
    ``config`` (``semantic_sha256`` is the one the container lane binds, DESIGN.md §5).

    Raises:
        InputError: the profile is missing. DefinitionError: the profile or its template is invalid.
    """
    profile = load_profile(profile_path)
    rendered = render_config(profile)
    doc = dict(profile.public_dict())
    doc["config"] = {
        "path": config_path,
        "binding": "semantic",
        "semantic_sha256": rendered.semantic_sha256,
        "bytes_sha256": rendered.bytes_sha256,
    }
    return RenderedInputs(
        profile_id=profile.id,
        config=rendered.data,
        config_semantic_sha256=rendered.semantic_sha256,
        config_bytes_sha256=rendered.bytes_sha256,
        profile_document=dumps_stable(doc),
    )


@dataclass(frozen=True, kw_only=True)
class StagedImageInfo:
    """What ``build-info.json`` of a container lane's staged inputs says (``stand_in`` for samples)."""

    lane: str
    component_tag: str
    source_commit: str
    stand_in: bool
    #: The staged inputs' licence (SPDX expression; optional ``license``), for the image SBOM.
    license: str | None = None


def read_build_info(inputs: Path) -> StagedImageInfo:
    """Read ``<inputs>/build-info.json`` (schema 1): lane, component tag, source commit.

    Raises:
        InputError: missing file, not JSON, or a field missing (all at once).
    """
    path = inputs / "build-info.json"
    file = str(path)
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError(problems=[Problem(file=file, message="does not exist")]) from None
    except (OSError, ValueError) as exc:
        raise InputError(problems=[Problem(file=file, message=f"unreadable: {exc}")]) from None
    problems: list[Problem] = []
    if not isinstance(doc, dict):
        raise InputError(problems=[Problem(file=file, message="must be a JSON object")])
    if not strictjson.json_equal(doc.get("schema"), 1):
        problems.append(Problem(file=file, field="schema", message="must be 1"))
    values: dict[str, str] = {}
    for key in ("lane", "component_tag", "source_commit"):
        v = doc.get(key)
        if not isinstance(v, str) or not v:
            problems.append(Problem(file=file, field=key, message="required string"))
        else:
            values[key] = v
    if problems:
        raise InputError(problems=problems)
    return StagedImageInfo(
        lane=values["lane"],
        component_tag=values["component_tag"],
        source_commit=values["source_commit"],
        stand_in=bool(doc.get("stand_in", False)),
        license=doc["license"] if isinstance(doc.get("license"), str) and doc["license"] else None,
    )
