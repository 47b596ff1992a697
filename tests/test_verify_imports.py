"""``verify`` and ``build lane`` import only what they use (issue 13: start-up cost), and the lazy
stage exports hold.

Measured as module sets, never as time: a ``verify`` of a directory must not load the publisher,
the HTTP client, the release-definition loader (Jinja2, YAML) or the CLI-only libraries of other
commands; a native ``build lane`` must not load the container lane's code; the lazy ``__init__``
of each stage must export exactly the names it lists.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from flow_support import RELEASE, release_out, samples

LANE = "rtx4090"
#: Modules a directory verify has no use for (each was imported by verify before issue 13).
NOT_FOR_VERIFY = (
    "ninfer_release.releases._publish",
    "ninfer_release.releases._http_fetch",
    "ninfer_release.releases._seal",
    "ninfer_release.profiles",
    "ninfer_release.packaging._recipe",
    "ninfer_release.build",
    # issue 13, the fixed cost: the release-manifest records (a set's component manifest needs
    # only the shared blocks of manifests._refs) and the uri format's RFC 3986 expressions
    # (loaded on the first uri value; a set's CycloneDX document has none).
    "ninfer_release.manifests._records",
    "ninfer_release.manifests._assemble",
    "rfc3986_validator",
    "urllib3",
    "jinja2",
    "yaml",
)

_PROBE = """
import json, sys
from ninfer_release.cli import main
try:
    main(sys.argv[1:])
finally:
    sys.stdout.flush()
    sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def _modules_of(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, check=False)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(line.removeprefix("MODULES ")))


def test_verify_of_a_directory_loads_no_publisher_http_client_or_templates(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    set_dir = release_out(tmp_path_factory) / LANE
    modules = _modules_of("verify", str(set_dir))
    assert "ninfer_release.releases._verify" in modules  # the probe really ran verify
    assert "ninfer_release.sbom._spdx_validate" in modules
    loaded = [m for m in NOT_FOR_VERIFY if m in modules]
    assert loaded == []


#: The SBOM libraries a verify of a set our builder wrote has no use for: its SPDX skeleton and
#: CycloneDX document are judged clean without them (sbom._spdx_skeleton, sbom._cdx_schema).
SBOM_LIBRARIES = ("spdx_tools", "beartype", "jsonschema", "referencing", "license_expression", "uritools")


def test_verify_of_a_canonical_set_imports_no_sbom_library(tmp_path_factory: pytest.TempPathFactory) -> None:
    set_dir = release_out(tmp_path_factory) / LANE
    modules = _modules_of("verify", str(set_dir))
    assert "ninfer_release.sbom._spdx_skeleton" in modules  # the fast path really ran
    assert "ninfer_release.sbom._cdx_schema" in modules
    loaded = sorted(m for m in modules if m.split(".")[0] in SBOM_LIBRARIES)
    assert loaded == []


def test_verify_of_a_set_off_the_fast_path_imports_the_library(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """The fallback is real: a valid SPDX document outside the canonical shape is judged by
    spdx-tools (and still verifies only if it is the set's own bytes: here it fails the digest)."""
    import shutil

    set_dir = tmp_path / LANE
    shutil.copytree(release_out(tmp_path_factory) / LANE, set_dir)
    spdx = next(set_dir.glob("*.spdx.json"))
    raw = json.loads(spdx.read_bytes())
    raw["packages"][0]["licenseDeclared"] = "(Apache-2.0 OR MIT)"
    spdx.write_bytes((json.dumps(raw, indent=2) + "\n").encode())
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, "verify", str(set_dir)], capture_output=True, text=True, check=False
    )
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    assert proc.returncode != 0  # SHA256SUMS no longer holds
    assert "spdx_tools" in set(json.loads(line.removeprefix("MODULES ")))


#: Modules a native lane's build has no use for (each was imported by it before issue 13's
#: start-up work): the container lane's executor and image SBOMs, the container builder.
NOT_FOR_NATIVE_BUILD = (
    "ninfer_release.build._image",
    "ninfer_release.sbom._image",
    "ninfer_release.containers._build",
    "ninfer_release.releases._publish",
    "ninfer_release.releases._http_fetch",
    "urllib3",
)


def test_a_native_build_lane_loads_no_container_lane_code(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    inputs = samples(tmp_path_factory)
    out = tmp_path / "out"
    modules = _modules_of(
        "build",
        "lane",
        LANE,
        "--release",
        str(RELEASE),
        "--inputs",
        str(inputs),
        "--out",
        str(out),
        "--offline",
    )
    assert "ninfer_release.build._native" in modules  # the probe really built the lane
    loaded = [m for m in NOT_FOR_NATIVE_BUILD if m in modules]
    assert loaded == []


@pytest.mark.parametrize(
    "package",
    [
        "ninfer_release.releases",
        "ninfer_release.packaging",
        "ninfer_release.sbom",
        "ninfer_release.containers",
    ],
)
def test_lazy_exports_are_the_listed_names_and_resolve(package: str) -> None:
    pkg = importlib.import_module(package)
    listed = {name for names in pkg._EXPORTS.values() for name in names}
    assert set(pkg.__all__) == listed
    assert set(dir(pkg)) >= listed
    for module, names in pkg._EXPORTS.items():
        source = importlib.import_module(module, package)
        for name in names:
            assert getattr(pkg, name) is getattr(source, name)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        pkg.nothing_here  # noqa: B018


def test_the_type_checking_imports_match_the_exports() -> None:
    # The TYPE_CHECKING block (what mypy sees) and _EXPORTS (what runs) list the same names.
    import ast

    for package in ("releases", "packaging", "sbom", "containers"):
        init = Path(importlib.import_module(f"ninfer_release.{package}").__file__ or "")
        tree = ast.parse(init.read_bytes())
        guarded = next(n for n in tree.body if isinstance(n, ast.If))
        imported = {
            (f".{n.module.rsplit('.', 1)[-1]}", a.name)
            for n in guarded.body
            if isinstance(n, ast.ImportFrom) and n.module
            for a in n.names
        }
        pkg = importlib.import_module(f"ninfer_release.{package}")
        exported = {(m, name) for m, names in pkg._EXPORTS.items() for name in names}
        assert imported == exported, package
