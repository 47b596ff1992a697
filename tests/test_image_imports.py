"""``image build`` imports only what it uses (issue 13: its fixed cost), and ``build``'s lazy exports hold.

Measured as module sets, never as time: an image build from a base layout on disk must not load
the native lane's executor and plans (``build._native``, ``build._plan``, the sealing and zip
code), nor the registry HTTP client (requests, urllib3) it would need only for a registry base.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from containers_support import RECIPE, Samples, make_samples

#: Modules an image build from a layout has no use for (each was imported by it before).
NOT_FOR_IMAGE_BUILD = (
    "ninfer_release.build._native",
    "ninfer_release.build._plan",
    "ninfer_release.build._build",
    "ninfer_release.releases._seal",
    "ninfer_release.packaging._zipwrite",
    "ninfer_release.registry._client",
    "requests",
    "urllib3",
)

_PROBE = """
import json, sys
from ninfer_release.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
sys.stdout.flush()
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
sys.exit(code)
"""


def _modules_of(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Samples:
    return make_samples(tmp_path_factory.mktemp("samples"))


def test_image_build_from_a_layout_loads_no_native_lane_code_or_http_client(
    tmp_path: Path, samples: Samples
) -> None:
    args = ["image", "build", str(RECIPE), "--inputs", str(samples.inputs), "--base", str(samples.base)]
    modules = _modules_of(*args, "--out", str(tmp_path / "o"), "--source-date-epoch", "1795132800")
    assert (tmp_path / "o" / "image.json").is_file()  # the probe really built
    assert "ninfer_release.containers._build" in modules and "ninfer_release.build._image" in modules
    assert [m for m in NOT_FOR_IMAGE_BUILD if m in modules] == []


def test_build_lazy_exports_are_the_listed_names_and_match_the_type_checking_imports() -> None:
    pkg = importlib.import_module("ninfer_release.build")
    listed = {name for names in pkg._EXPORTS.values() for name in names}
    assert set(pkg.__all__) == listed
    for module, names in pkg._EXPORTS.items():
        source = importlib.import_module(module, "ninfer_release.build")
        for name in names:
            assert getattr(pkg, name) is getattr(source, name)
    tree = ast.parse(Path(pkg.__file__ or "").read_bytes())
    guarded = next(n for n in tree.body if isinstance(n, ast.If))
    imported = {
        (f".{n.module.rsplit('.', 1)[-1]}", a.name)
        for n in guarded.body
        if isinstance(n, ast.ImportFrom) and n.module
        for a in n.names
    }
    assert imported == {(m, name) for m, names in pkg._EXPORTS.items() for name in names}
