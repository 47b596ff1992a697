"""The per-asset size budget (issue 12): the definition's ``asset_budget_bytes`` (default just under
2 GiB, GitHub's limit); the build warns past 90 % and refuses above it naming the largest members;
``publish --to files://`` refuses an over-budget asset before writing anything. Tiny budgets in a
test definition stand in for 2 GiB packages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flow_support import RELEASE, REPO, cli, qualified_out, samples, stem
from ninfer_release.errors import DefinitionError, ExitCode, InputError
from ninfer_release.manifests import DEFAULT_ASSET_BUDGET, load_release
from ninfer_release.releases._budget import check_package_budget


def _definition(root: Path, budget: object | None) -> Path:
    """A repo root whose v0.13.1 definition carries ``asset_budget_bytes: budget``."""
    root.mkdir(parents=True)
    for name in ("packaging", "containers", "releases", "sbom", "profiles"):
        (root / name).symlink_to(REPO / name, target_is_directory=True)
    (root / "manifests").mkdir()
    text = RELEASE.read_text()
    if budget is not None:
        text = text.replace("\ncomponents:\n", f"\nasset_budget_bytes: {budget}   # ours\n\ncomponents:\n", 1)
    (root / "manifests" / "v0.13.1.yaml").write_text(text)
    return root / "manifests" / "v0.13.1.yaml"


def test_default_budget_is_just_under_2_gib() -> None:
    assert DEFAULT_ASSET_BUDGET == 2 * 1024**3 - 1
    assert load_release(RELEASE, env={}).asset_budget == DEFAULT_ASSET_BUDGET


def test_budget_from_the_definition_and_bad_values(tmp_path: Path) -> None:
    assert load_release(_definition(tmp_path / "a", 123456), env={}).asset_budget == 123456
    for i, bad in enumerate(("0", "-5", "1.5", "true", "'2GB'")):
        with pytest.raises(DefinitionError) as info:
            load_release(_definition(tmp_path / f"bad{i}", bad), env={})
        assert info.value.exit_code == ExitCode.DEFINITION
        assert any(p.field == "asset_budget_bytes" for p in info.value.problems), info.value.lines


def test_check_names_the_largest_members_and_warns_past_90_percent(caplog: pytest.LogCaptureFixture) -> None:
    members = [("bin/a.dll", 50), ("bin/big.dll", 700), ("config/ninfer.toml", 3), ("bin/mid.dll", 200)]
    with pytest.raises(InputError) as info:
        check_package_budget(package="p.zip", size=1001, budget=1000, members=members, definition="d.yaml")
    (line,) = info.value.lines
    assert "1,001 bytes is over the asset budget of 1,000 bytes" in line and "d.yaml" in line
    assert (
        line.index("bin/big.dll (700 bytes)")
        < line.index("bin/mid.dll (200 bytes)")
        < line.index("bin/a.dll")
    )
    assert (
        check_package_budget(package="p.zip", size=900, budget=1000, members=members, definition="d") is None
    )
    warning = check_package_budget(package="p.zip", size=901, budget=1000, members=members, definition="d")
    assert warning is not None and "90% of the asset budget" in warning and "bin/big.dll" in warning
    assert warning in caplog.text


def _build(definition: Path, out: Path, factory: pytest.TempPathFactory) -> tuple[int, str]:
    res = cli("build", "lane", "rtx4090", "--release", definition, "--inputs", samples(factory), "--out", out,
              "--offline")  # fmt: skip
    return res.code, res.err


def test_build_refuses_an_over_budget_package_naming_its_largest_members(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    code, err = _build(_definition(tmp_path / "repo", 100_000), tmp_path / "out", tmp_path_factory)
    assert code == ExitCode.INPUT, err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "over the asset budget of 100,000 bytes" in lines[0], err
    assert "largest members: " in lines[0] and ".dll (" in lines[0]
    assert not (tmp_path / "out" / "rtx4090").exists()  # nothing partial left behind


def test_build_warns_past_90_percent_and_still_builds(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, caplog: pytest.LogCaptureFixture
) -> None:
    size = (qualified_out(tmp_path_factory) / "rtx4090" / (stem("rtx4090") + ".zip")).stat().st_size
    budget = int(size / 0.95)  # the package is 95 % of it
    code, err = _build(_definition(tmp_path / "repo", budget), tmp_path / "out", tmp_path_factory)
    assert code == 0, err
    # a logging warning: the CLI's handler prints it on stderr ("WARNING ninfer_release…: …")
    warnings = [r for r in caplog.records if r.levelname == "WARNING" and "asset budget" in r.getMessage()]
    assert len(warnings) == 1 and "95% of the asset budget" in warnings[0].getMessage()
    assert "largest members: bin/" in warnings[0].getMessage()


def test_publish_to_files_refuses_an_over_budget_asset_before_writing(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    qual = qualified_out(tmp_path_factory) / "rtx4090"
    www = tmp_path / "www"
    res = cli("publish", qual, "--to", f"files://{www}", "--release", _definition(tmp_path / "repo", 100_000))
    assert res.code == ExitCode.PUBLISH, res.text
    assert "over the asset budget of 100,000 bytes" in res.err and stem("rtx4090") + ".zip" in res.err
    assert not www.exists() or not any(www.iterdir())
    # the default budget (no --release) lets the sample set through
    res = cli("--json", "publish", qual, "--to", f"files://{www}")
    assert res.code == 0 and json.loads(res.out)["status"] == "published", res.text
