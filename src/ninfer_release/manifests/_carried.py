"""A carried container's record (``releases/<release>/<lane>.yaml``) → a validated :class:`CarriedImage`.

The bindings of a container carried unchanged, kept exactly as published (reference "Carried
RTX 5090 container"); its lane and profile cross-check it (``_definition._cross_check``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ninfer_release.digests import DIGEST, SHA256_HEX
from ninfer_release.profiles import load_yaml_data
from ninfer_release.profiles._check import SHORT_HEX, Checker
from ninfer_release.profiles._profile import COMPONENT_TAG, LANE_ID, PROFILE_ID

#: Carried-record schema (ours).
RECORD_SCHEMA = 1
VERSION = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?")
IMAGE_REF = re.compile(r"[a-z0-9.-]+(?::[0-9]+)?/[a-z0-9._/-]+@" + DIGEST.pattern)


@dataclass(frozen=True, kw_only=True)
class CarriedImage:
    """``releases/<release>/<lane>.yaml``: the bindings of a container carried unchanged.

    Short hex values are kept exactly as published (reference "Carried RTX 5090 container").
    """

    path: Path
    release: str
    lane: str
    component_tag: str
    source: str
    server: str
    archive: str
    image: str
    base_image: str
    profile_id: str
    strict_origin_config: str
    checkpoint_mount: str
    model_sha256: str

    @property
    def image_repository(self) -> str:
        """``image`` without its digest, e.g. ``ghcr.io/alphastorm/ninfer-runtime``."""
        return self.image.split("@", 1)[0]

    @property
    def image_digest(self) -> str:
        """``sha256:<64 hex>`` of the image manifest."""
        return self.image.split("@", 1)[1]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (without the local path)."""
        return {
            "release": self.release,
            "lane": self.lane,
            "component_tag": self.component_tag,
            "source": self.source,
            "server": self.server,
            "archive": self.archive,
            "image": self.image,
            "base_image": self.base_image,
            "profile_id": self.profile_id,
            "strict_origin_config": self.strict_origin_config,
            "checkpoint_mount": self.checkpoint_mount,
            "model_sha256": self.model_sha256,
        }


def load_carried_record(path: Path) -> CarriedImage:
    """Load and validate a carried-container record such as ``releases/v0.13.0/rtx5090.yaml``.

    Raises:
        InputError: the file is missing.
        DefinitionError: any field is missing or malformed (all at once).
    """
    data = load_yaml_data(path)
    c = Checker(str(path))
    d = c.document(data)
    c.keys(
        d,
        "",
        required=(
            "schema",
            "release",
            "lane",
            "component_tag",
            "source",
            "server",
            "archive",
            "image",
            "base_image",
            "profile",
            "strict_origin_config",
            "checkpoint_mount",
            "model_sha256",
        ),
        optional=("description",),
    )
    schema = c.get_int(d, "", "schema")
    if schema is not None and schema != RECORD_SCHEMA:
        c.add("schema", f"{schema} is not the supported record schema {RECORD_SCHEMA}")
    hexs = {
        k: c.get_str(d, "", k, pattern=SHORT_HEX, what="a hex digest as published")
        for k in ("source", "server", "archive", "base_image", "strict_origin_config")
    }
    release = c.get_str(d, "", "release", pattern=VERSION, what="a version")
    lane = c.get_str(d, "", "lane", pattern=LANE_ID, what="a lane id")
    tag = c.get_str(d, "", "component_tag", pattern=COMPONENT_TAG, what="a component tag")
    image = c.get_str(d, "", "image", pattern=IMAGE_REF, what="an image reference pinned by sha256 digest")
    profile = c.get_str(d, "", "profile", pattern=PROFILE_ID, what="a profile id")
    mount = c.get_str(
        d, "", "checkpoint_mount", pattern=re.compile(r"/[A-Za-z0-9._/-]+"), what="an absolute path"
    )
    model = c.get_str(d, "", "model_sha256", pattern=SHA256_HEX, what="64 lowercase hex digits")
    c.get_str(d, "", "description", required=False, max_len=2000)
    c.raise_if_any()
    assert release and lane and tag and image and profile and mount and model and all(hexs.values())
    return CarriedImage(
        path=path,
        release=release,
        lane=lane,
        component_tag=tag,
        source=str(hexs["source"]),
        server=str(hexs["server"]),
        archive=str(hexs["archive"]),
        image=image,
        base_image=str(hexs["base_image"]),
        profile_id=profile,
        strict_origin_config=str(hexs["strict_origin_config"]),
        checkpoint_mount=mount,
        model_sha256=model,
    )
