"""The stage layering of docs/architecture.md, enforced mechanically (import-linter contracts in
pyproject.toml): stages import only downward, third-party libraries stay in their stage."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO, unavailable


def test_import_contracts_are_kept() -> None:
    tool = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(tool).exists():
        unavailable("import-linter is not installed (pip install -e '.[dev]'; ./dev test does)")
    res = subprocess.run([tool, "--no-cache"], cwd=REPO, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "3 kept, 0 broken" in res.stdout
