"""The pinned deflate engine: zlib-ng builds packages; without it building refuses, reading works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ninfer_release.packaging import DEFLATE_ENGINE

_WITHOUT_ZLIB_NG = """
import sys
sys.modules["zlib_ng"] = None  # as if zlib-ng were not installed
from pathlib import Path
from ninfer_release.packaging import DEFLATE_ENGINE, PlanEntry, compress_members, scan_zip
print(DEFLATE_ENGINE)
scan = scan_zip(Path(sys.argv[1]))
print(all(m.ok for m in scan.members))
try:
    compress_members([PlanEntry(name="a.txt", data=b"a")], workdir=Path(sys.argv[2]))
except RuntimeError as exc:
    print(str(exc).split(":")[0])
"""


def test_engine_is_zlib_ng() -> None:
    assert DEFLATE_ENGINE.startswith("zlib-ng 2.")


def test_without_zlib_ng_building_refuses_and_reading_works(tmp_path: Path) -> None:
    from ninfer_release.packaging import PlanEntry, compress_members, write_zip

    members = compress_members([PlanEntry(name="a.txt", data=b"abc" * 1000)], workdir=tmp_path)
    zip_path = write_zip(members, tmp_path / "p.zip", epoch=0).path
    out = subprocess.run(
        [sys.executable, "-c", _WITHOUT_ZLIB_NG, str(zip_path), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.splitlines() == [
        "none (zlib-ng is not installed)",
        "True",
        "zlib-ng is not installed",
    ]
