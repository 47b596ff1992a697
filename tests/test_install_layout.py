"""Issue 8 §3: the route block and the config come from one install layout (docs/install-layout.md).

The main test acts as an installer would: it reads ``route.json`` and nothing else to lay out an
install tree (Windows paths mapped onto a temp dir), then checks that the config it installed finds
the key, model, cache and checkpoint directory exactly there, and that nothing writable sits under
``C:\\Program Files``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import tomllib
import zipfile
from pathlib import Path, PureWindowsPath
from typing import Any

import pytest

from flow_support import cli, release_out, stem
from ninfer_release.errors import DefinitionError, InputError
from ninfer_release.packaging import check_windows_paths, load_recipe
from ninfer_release.profiles import (
    CHECKPOINT_FILE_NAME_CHARS,
    KEY_FILE_SPEC,
    install_layout,
    load_profile,
    path_budget,
    read_bearer_key,
    write_bearer_key,
)
from ninfer_release.releases._standalone_verifier import with_account

REPO = Path(__file__).resolve().parent.parent
LANES = ["rtx4090", "rtx3090"]
P4090 = REPO / "profiles" / "qwen38-4090-native-v0.7.0-beta.2.yaml"


def _asset(factory: pytest.TempPathFactory, lane: str, suffix: str) -> Path:
    return release_out(factory) / lane / f"{stem(lane)}{suffix}"


def _json(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_bytes())
    assert isinstance(doc, dict)
    return doc


def _on_disk(machine: Path, windows_path: str) -> Path:
    """``C:\\A\\B`` → ``machine/C/A/B``: a Windows absolute path on the simulated machine."""
    p = PureWindowsPath(windows_path)
    assert p.is_absolute() and p.drive, windows_path
    return machine.joinpath(p.drive.rstrip(":"), *p.parts[1:])


def _write_key_as_route_says(path: Path, spec: dict[str, Any]) -> None:
    """An installer following ``bearer_key``: random bytes → alphabet → encoding, no BOM, no newline."""
    alphabet = spec["alphabet"]
    assert len(alphabet) == 16, "the route's alphabet is hex: one character per nibble"
    raw = secrets.token_bytes(spec["random_bytes"])
    text = "".join(alphabet[b >> 4] + alphabet[b & 15] for b in raw)
    data = text.encode(spec["encoding"])
    assert spec["bom"] is False and spec["trailing_newline"] is False
    assert len(data) == spec["file_bytes"] == spec["generated_chars"]
    assert not path.exists() or spec["overwrite_existing"]
    path.write_bytes(data)


@pytest.mark.parametrize("lane", LANES)
def test_route_lays_out_an_install_tree_the_config_finds(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, lane: str
) -> None:
    route = _json(_asset(tmp_path_factory, lane, ".route.json"))
    install = route["install"]
    machine = tmp_path / "machine"
    # 1. Extract the package into the program root, preserving paths.
    program = _on_disk(machine, install["program_root"])
    with zipfile.ZipFile(_asset(tmp_path_factory, lane, ".zip")) as z:
        z.extractall(program)
    # 2. Create the data directories, write the key, store the model (an empty stand-in file).
    for directory in install["create_dirs"]:
        _on_disk(machine, directory).mkdir(parents=True)
    _write_key_as_route_says(_on_disk(machine, route["bearer_key"]["file"]), route["bearer_key"])
    _on_disk(machine, install["model_path"]).write_bytes(b"")

    # 3. The installed config is the bound one, and every path it names is there.
    config_file = _on_disk(machine, install["config"])
    data = config_file.read_bytes()
    assert hashlib.sha256(data).hexdigest() == install["config_bytes_sha256"]
    cfg = tomllib.loads(data.decode("utf-8"))
    data_root = _on_disk(machine, cfg["paths"]["data_root"])
    assert data_root.is_dir()
    key = data_root / cfg["server"]["bearer_key_file"]
    assert read_bearer_key(key) and key.stat().st_size == 64
    model = data_root / cfg["model"]["path"]
    assert model.is_file() and model.name == cfg["model"]["file"] == route["model"]["store_as"]
    assert (data_root / cfg["checkpoint"]["root"]).is_dir()
    checkpoints = data_root / cfg["checkpoint"]["dir_template"].replace(
        "<release-instance-id>", route["release_instance_id"]
    )
    assert checkpoints.is_dir()
    assert checkpoints.relative_to(data_root).as_posix() == (
        f"cache/{route['release_instance_id']}/session-checkpoints-v3"  # the release notes' form
    )
    (checkpoints / "probe.ckpt").write_bytes(b"x")

    # 4. Nothing writable is under Program Files, nor under the (read-only) program root.
    for written in (key, model, checkpoints, data_root / cfg["checkpoint"]["root"]):
        assert not written.is_relative_to(program), written
        assert not written.is_relative_to(machine / "C" / "Program Files"), written
    assert install["program_root"].startswith("C:\\Program Files\\")
    assert install["data_root"].startswith("C:\\ProgramData\\")
    assert install["program_root_writable"] is False


@pytest.mark.parametrize("lane", LANES)
def test_key_is_described_as_data_the_installer_acts_on(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, lane: str
) -> None:
    """No shell recipe (PowerShell 5.1 has no RandomNumberGenerator.Fill; ``>`` writes UTF-16 +
    BOM): length, alphabet, encoding and ACL, and ``profile keygen`` writes exactly that."""
    key = _json(_asset(tmp_path_factory, lane, ".route.json"))["bearer_key"]
    text = json.dumps(key)
    assert "Fill" not in text and "powershell" not in text.lower() and "generate" not in key
    account = (
        "NT SERVICE\\OMP-NInfer-" + _json(_asset(tmp_path_factory, lane, ".route.json"))["component_tag"]
    )
    assert key == {"file": key["file"], **with_account(KEY_FILE_SPEC.as_dict(), account)}
    assert (key["file_bytes"], key["random_bytes"], key["min_bytes"]) == (64, 32, 32)
    assert (key["alphabet"], key["encoding"], key["bom"], key["trailing_newline"]) == (
        "0123456789abcdef",
        "ascii",
        False,
        False,
    )
    acl = key["acl"]
    assert acl["inheritance"] == "disabled"
    principals = [g.get("name") or g.get("principal") for g in acl["grants"]]
    assert principals == ["NT AUTHORITY\\SYSTEM", "BUILTIN\\Administrators", account]
    assert [g["rights"] for g in acl["grants"]] == ["full", "full", "read"]
    written = tmp_path / "bearer.key"
    write_bearer_key(written)
    raw = written.read_bytes()
    assert len(raw) == key["file_bytes"] and set(raw.decode(key["encoding"])) <= set(key["alphabet"])
    assert not raw.startswith(b"\xef\xbb\xbf") and not raw.endswith(b"\n")


@pytest.mark.parametrize("lane", LANES)
def test_path_budget_is_the_real_longest_path_and_is_reported(
    tmp_path_factory: pytest.TempPathFactory, lane: str
) -> None:
    route = _json(_asset(tmp_path_factory, lane, ".route.json"))
    manifest = _json(_asset(tmp_path_factory, lane, ".manifest.json"))
    budget = manifest["path_budget"]
    assert budget == route["install"]["path_budget"]
    assert (budget["max_path"], budget["max_dir_path"]) == (260, 248)
    with zipfile.ZipFile(_asset(tmp_path_factory, lane, ".zip")) as z:
        names = z.namelist()
    root = route["install"]["program_root"]
    files = [root + "\\" + n.replace("/", "\\") for n in names]
    dirs = {root} | {
        root + "\\" + "\\".join(n.split("/")[:i]) for n in names for i in range(1, n.count("/") + 1)
    }
    program = budget["program_root"]
    assert program["longest_file"] == {
        "path": max(files, key=lambda p: (len(p), p)),
        "chars": max(map(len, files)),
        "limit": 259,
    }
    assert program["longest_dir"] == {
        "path": max(dirs, key=lambda p: (len(p), p)),
        "chars": max(map(len, dirs)),
        "limit": 247,
    }
    data = budget["data_root"]
    ckpt = route["install"]["checkpoint_dir"]
    assert data["longest_file"] == {
        "path": ckpt + "\\<checkpoint file>",
        "chars": len(ckpt) + 1 + CHECKPOINT_FILE_NAME_CHARS,
        "limit": 259,
    }
    assert data["longest_dir"] == {"path": ckpt, "chars": len(ckpt), "limit": 247}
    assert budget["checkpoint_file_name_chars"] == CHECKPOINT_FILE_NAME_CHARS


def test_build_json_reports_the_path_budget(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    from flow_support import RELEASE, samples

    staged = samples(tmp_path_factory)
    res = cli("--json", "build", "lane", "rtx3090", "--release", RELEASE, "--inputs", staged,
              "--out", tmp_path / "o", "--offline")  # fmt: skip
    assert res.code == 0, res.text
    doc = json.loads(res.out)
    manifest = _json(tmp_path / "o" / "rtx3090" / f"{stem('rtx3090')}.manifest.json")
    assert doc["path_budget"] == manifest["path_budget"]
    assert doc["path_budget"]["data_root"]["longest_file"]["chars"] <= 259


# --- the budget rules on their own --------------------------------------------------------------


def _layout(tag: str) -> Any:
    import dataclasses

    return install_layout(dataclasses.replace(load_profile(P4090), component_tag=tag))


def test_checkpoint_file_names_count_against_max_path() -> None:
    """A tag short enough for every directory still fails once the checkpoint file name is counted."""
    tag = "v0.7.0-" + "x" * 38  # the checkpoint file path is then exactly 260 characters
    layout = _layout(tag)
    instance = f"{tag}-0123456789abcdef"
    ckpt = layout.checkpoint_path(instance)
    assert len(ckpt) < 248 and len(ckpt) + 1 + CHECKPOINT_FILE_NAME_CHARS == 260
    with pytest.raises(DefinitionError) as exc:
        path_budget(layout, package_paths=["bin/a.exe"], instance_id=instance)
    assert [p.field for p in exc.value.problems] == [ckpt + "\\<checkpoint file>"]
    assert "Windows allows 259" in exc.value.problems[0].message
    # One character less fits.
    shorter = _layout(tag[:-1])
    path_budget(shorter, package_paths=["bin/a.exe"], instance_id=f"{tag[:-1]}-0123456789abcdef")


def test_directories_must_fit_the_248_limit() -> None:
    """A package folder of 248+ characters is refused even when its files would fit 260 (not with
    extended-length support), by the package plan and by the budget."""
    root = "C:\\Program Files\\OMP NInfer\\v0.7.0-t"
    folder = "d" * (248 - len(root) - 1)  # root\folder is exactly 248 characters
    member = f"{folder}/f"
    assert len(root) + 1 + len(member) < 260
    problems = check_windows_paths([member], install_root=root)
    assert len(problems) == 1 and "folders of at most 247" in problems[0].message
    assert check_windows_paths([member], install_root=root, extended_length=True) == []
    assert check_windows_paths([f"{folder[1:]}/f"], install_root=root) == []
    layout = _layout("v0.7.0-t")
    with pytest.raises(DefinitionError) as exc:
        path_budget(layout, package_paths=[member], instance_id="v0.7.0-t-0123456789abcdef")
    assert [p.field for p in exc.value.problems] == [root + "\\" + folder]
    report = path_budget(
        layout, package_paths=[member], instance_id="v0.7.0-t-0123456789abcdef", extended_length=True
    )
    assert report.program.longest_dir.chars == 248


def test_the_config_and_the_route_share_the_layout() -> None:
    """The rendered config's paths are the layout's (one record renders both)."""
    from ninfer_release.profiles import render_config

    profile = load_profile(P4090)
    layout = install_layout(profile)
    cfg = tomllib.loads(render_config(profile).data.decode())
    assert (
        cfg["paths"]["data_root"]
        == layout.data_root
        == "C:\\ProgramData\\OMP NInfer\\v0.7.0-qwen38-4090-beta.2"
    )
    assert cfg["server"]["bearer_key_file"] == layout.key_file == "secrets/bearer.key"
    assert cfg["model"]["path"] == layout.model == "models/qwen3_8_27b-v3.ninfer"
    assert cfg["checkpoint"]["dir_template"] == layout.checkpoint_dir_template
    assert layout.key_path == "C:\\ProgramData\\OMP NInfer\\v0.7.0-qwen38-4090-beta.2\\secrets\\bearer.key"


def test_recipe_install_root_is_refused(tmp_path: Path) -> None:
    """The install roots have one source (the layout); a recipe naming its own is refused."""
    recipe = (REPO / "packaging" / "windows-native.yaml").read_text()
    bad = tmp_path / "r.yaml"
    bad.write_text(recipe + "install_root: 'D:\\\\NInfer\\\\<component>'\n")
    with pytest.raises(InputError) as exc:
        load_recipe(bad)
    assert [p.field for p in exc.value.problems] == ["install_root"]


def test_profile_component_tag_must_match_its_lane(tmp_path: Path) -> None:
    """The profile's component tag names the install roots, so it must be its lane's tag."""
    import shutil

    repo = tmp_path / "repo"
    shutil.copytree(REPO / "profiles", repo / "profiles")
    shutil.copytree(REPO / "manifests", repo / "manifests")
    shutil.copytree(REPO / "releases", repo / "releases")
    shutil.copytree(REPO / "packaging", repo / "packaging")
    shutil.copytree(REPO / "containers", repo / "containers")
    p = repo / "profiles" / P4090.name
    p.write_text(
        p.read_text().replace(
            "component_tag: v0.7.0-qwen38-4090-beta.2", "component_tag: v0.7.0-qwen38-4090-beta.3"
        )
    )
    res = cli("manifest", "check", repo / "manifests" / "v0.13.1.yaml", "--repo", repo)
    assert res.code == 3, res.text
    assert "component_tag" in res.err and "v0.7.0-qwen38-4090-beta.3" in res.err
