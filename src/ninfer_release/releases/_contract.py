"""The native asset contract (DESIGN.md §4, *ours*): names and order of the 11 files of a set,
and which of them each binding record names.

Every record of a set can only bind files that exist before it is written, so the order of the
table is the order of sealing and the sets below follow from it:

* :data:`PROVENANCE_SUBJECTS` — the provenance statement (entry 8) names entries 1–7 as its
  in-toto subjects: the package, its two SBOMs, the config, profile, model and qualification
  records. It cannot name itself, nor the route block (9) and component manifest (10), which are
  written after it (the component manifest binds the provenance's digest in turn).
* :data:`COMPONENT_MANIFEST_ENTRIES` — the component manifest (entry 10) lists the size and
  SHA-256 of entries 1–9 (DESIGN.md §4 table: "size + SHA-256 of entries 1–9").
* :data:`SUMS_ENTRIES` — ``SHA256SUMS`` lists entries 1–10 (DESIGN.md §4: "over entries 1–10").
"""

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

#: Entries the provenance statement's ``subject`` lists, by suffix, in contract order (1–7).
PROVENANCE_SUBJECTS: tuple[str, ...] = (
    ".zip",
    ".spdx.json",
    ".cdx.json",
    ".config.toml",
    ".profile.json",
    ".model.json",
    ".qualification.json",
)
#: Entries the component manifest's ``entries`` lists, by suffix, in contract order (1–9).
COMPONENT_MANIFEST_ENTRIES: tuple[str, ...] = (*PROVENANCE_SUBJECTS, ".provenance.json", ".route.json")
#: Entries ``SHA256SUMS`` lists, by suffix (all 10).
SUMS_ENTRIES: tuple[str, ...] = ENTRY_SUFFIXES

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


#: Where the package keeps its third-party notices (generated from the lane's lock).
ZIP_NOTICE_PATH = "NOTICE.txt"

#: The folders the native package ships staged files in, each under its staged path (the include
#: rules of ``packaging/windows-native.yaml``: ``bin/**`` → ``bin/``, ``licenses/**`` → ``licenses/``).
SHIPPED_FOLDERS = ("bin/", "licenses/")


def generated_members(stem: str, profile_id: str) -> tuple[str, ...]:
    """The members the build generates into the package, sorted: the config, the public profile,
    the SPDX copy and the notices (the ``generated`` templates of ``packaging/windows-native.yaml``;
    tests/test_verify_members.py keeps them equal). Every other member is a staged file under
    :data:`SHIPPED_FOLDERS`."""
    return tuple(
        sorted((ZIP_CONFIG_PATH, zip_profile_path(profile_id), zip_spdx_path(stem), ZIP_NOTICE_PATH))
    )


@dataclass(frozen=True, kw_only=True)
class AssetNames:
    """The 11 file names of one native asset set."""

    stem: str

    @property
    def entries(self) -> tuple[str, ...]:
        """The 10 hashed entries, in contract order."""
        return tuple(self.stem + s for s in ENTRY_SUFFIXES)

    @property
    def provenance_subjects(self) -> tuple[str, ...]:
        """The files the provenance names as subjects (:data:`PROVENANCE_SUBJECTS`)."""
        return tuple(self.stem + s for s in PROVENANCE_SUBJECTS)

    @property
    def component_manifest_entries(self) -> tuple[str, ...]:
        """The files the component manifest lists (:data:`COMPONENT_MANIFEST_ENTRIES`)."""
        return tuple(self.stem + s for s in COMPONENT_MANIFEST_ENTRIES)

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
