"""The native asset contract (DESIGN.md §4, *ours*): names and order of the 11 files of a set."""

from __future__ import annotations

from dataclasses import dataclass

from ninfer_release.winpaths import CONFIG_PATH

SUMS_NAME = "SHA256SUMS"

#: Entry suffixes in contract order (DESIGN.md §4 table, entries 1–10).
ENTRY_SUFFIXES: tuple[str, ...] = (
    ".zip",
    ".spdx.json",
    ".cdx.json",
    ".config.toml",
    ".profile.json",
    ".model.json",
    ".qualification.json",
    ".provenance.json",
    ".route.json",
    ".manifest.json",
)

#: Where the package keeps its copy of the config: the install layout's ``config`` (one source).
ZIP_CONFIG_PATH = CONFIG_PATH


def package_stem(component_tag: str) -> str:
    """``ninfer-<component-tag>-windows-x64`` (DESIGN.md §4)."""
    return f"ninfer-{component_tag}-windows-x64"


def zip_spdx_path(stem: str) -> str:
    """Path of the SPDX inventory inside the zip: ``sbom/<stem>.spdx.json``."""
    return f"sbom/{stem}.spdx.json"


def zip_profile_path(profile_id: str) -> str:
    """Path of the public profile inside the zip: ``profile/<profile-id>.json``."""
    return f"profile/{profile_id}.json"


@dataclass(frozen=True, kw_only=True)
class AssetNames:
    """The 11 file names of one native asset set."""

    stem: str

    @property
    def entries(self) -> tuple[str, ...]:
        """The 10 hashed entries, in contract order."""
        return tuple(self.stem + s for s in ENTRY_SUFFIXES)

    @property
    def all(self) -> tuple[str, ...]:
        """All 11 files: the 10 entries and ``SHA256SUMS``."""
        return (*self.entries, SUMS_NAME)

    @property
    def zip(self) -> str:
        return self.stem + ".zip"

    @property
    def spdx(self) -> str:
        return self.stem + ".spdx.json"

    @property
    def cdx(self) -> str:
        return self.stem + ".cdx.json"

    @property
    def config(self) -> str:
        return self.stem + ".config.toml"

    @property
    def profile(self) -> str:
        return self.stem + ".profile.json"

    @property
    def model(self) -> str:
        return self.stem + ".model.json"

    @property
    def qualification(self) -> str:
        return self.stem + ".qualification.json"

    @property
    def provenance(self) -> str:
        return self.stem + ".provenance.json"

    @property
    def route(self) -> str:
        return self.stem + ".route.json"

    @property
    def manifest(self) -> str:
        return self.stem + ".manifest.json"


def names_for_tag(component_tag: str) -> AssetNames:
    """The asset names of the set of ``component_tag``."""
    return AssetNames(stem=package_stem(component_tag))


def stem_from_names(names: list[str]) -> str | None:
    """Recover the stem from a directory listing (the one ``*.zip``), or None if not exactly one."""
    zips = [n for n in names if n.endswith(".zip")]
    if len(zips) != 1:
        return None
    return zips[0][: -len(".zip")]
