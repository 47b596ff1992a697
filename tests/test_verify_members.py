"""The package's members are the staged files under ``bin/`` and ``licenses/`` (bound by the
provenance) and exactly the members the build generates; the package's profile is the profile
asset (hostile review, 2026-12-04: both were bound by the SBOMs alone, so a re-sealed set with a
``version.dll`` at the root, a ``tools/evil.exe`` or another profile verified OK)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flow_support import REPO, TAGS, release_out, stem
from ninfer_release.packaging import load_recipe
from ninfer_release.releases._contract import generated_members
from reseal_support import both_fail, both_verdicts, members_of, rebuild

LANE = "rtx4090"
PROFILE_ID = "qwen38-4090-native-v0.7.0-beta.2"


@pytest.fixture
def resealable(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> tuple[Path, str, list[tuple[str, bytes]]]:
    d = tmp_path / "set"
    shutil.copytree(release_out(tmp_path_factory) / LANE, d)
    return d, stem(LANE), members_of(d, stem(LANE))


def test_the_generated_members_are_the_recipes() -> None:
    """One list of generated members for the verifiers, equal to the recipe's templates."""
    recipe = load_recipe(REPO / "packaging" / "windows-native.yaml")
    s = stem(LANE)
    filled = sorted(t.format(profile_id=PROFILE_ID, stem=s) for t in recipe.generated)
    assert list(generated_members(s, PROFILE_ID)) == filled


def test_control_the_untampered_rebuild_verifies(
    resealable: tuple[Path, str, list[tuple[str, bytes]]], tmp_path: Path
) -> None:
    d, s, members = resealable
    rebuild(d, s, TAGS[LANE], members)
    (ours, _), (alone, _) = both_verdicts(d, tmp_path)
    assert (ours, alone) == (0, 0)


def _profile_changed(members: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    out = []
    for name, data in members:
        if name == f"profile/{PROFILE_ID}.json":
            doc = json.loads(data)
            doc["gpu_power_limit_w"] = 999
            data = json.dumps(doc).encode()
        out.append((name, data))
    return out


@pytest.mark.parametrize(
    ("tamper", "says"),
    [
        (lambda m: [*m, ("version.dll", b"MZ evil")], "member 'version.dll' is neither a staged file"),
        (lambda m: [*m, ("tools/evil.exe", b"MZ evil")], "member 'tools/evil.exe' is neither a staged file"),
        (
            lambda m: [(n, b) for n, b in m if n != "NOTICE.txt"],
            "has no member 'NOTICE.txt' (the build generates it)",
        ),
        (
            lambda m: [("profile/other.json" if n.startswith("profile/") else n, b) for n, b in m],
            "member 'profile/other.json' is neither a staged file",
        ),
        (_profile_changed, f".profile.json: differs from the package's profile/{PROFILE_ID}.json"),
    ],
    ids=["root-dll", "other-folder", "no-notice", "profile-renamed", "profile-changed"],
)
def test_a_resealed_set_with_other_members_fails_both_verifiers(
    resealable: tuple[Path, str, list[tuple[str, bytes]]], tmp_path: Path, tamper: object, says: str
) -> None:
    d, s, members = resealable
    assert callable(tamper)
    rebuild(d, s, TAGS[LANE], tamper(members))
    both_fail(d, tmp_path, says)
