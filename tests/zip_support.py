"""Archives for the zip reader tests: ours (from the writer), foreign (CPython zipfile), patched."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path
from typing import Any

from ninfer_release.packaging import PlanEntry, compress_members, write_zip
from ninfer_release.packaging._zipformat import CENTRAL_FMT

#: The source-date epoch of the archives built by :func:`ours`.
EPOCH = 1700000000


def stage_files(root: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (zip name -> bytes) under ``root / "staged"``, as a staged tree."""
    for name, content in files.items():
        (root / "staged" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "staged" / name).write_bytes(content)


def ours(tmp_path: Path, files: dict[str, bytes]) -> Path:
    members = compress_members([PlanEntry(name=n, data=d) for n, d in files.items()], workdir=tmp_path)
    return write_zip(members, tmp_path / "ours.zip", epoch=EPOCH).path


def foreign(tmp_path: Path, files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    path = tmp_path / "foreign.zip"
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = method
            zf.writestr(info, data)
    return path


def patch_central(path: Path, index: int, **fields: int) -> None:
    """Rewrite fields of the ``index``-th central header (crc, csize, usize, offset)."""
    data = bytearray(path.read_bytes())
    pos = data.find(b"PK\x01\x02")
    for _ in range(index):
        f = CENTRAL_FMT.unpack_from(data, pos)
        pos += CENTRAL_FMT.size + f[10] + f[11] + f[12]
    slots = {"crc": 16, "csize": 20, "usize": 24, "offset": 42}
    for key, value in fields.items():
        struct.pack_into("<I", data, pos + slots[key], value)
    path.write_bytes(bytes(data))


def count_deflates(monkeypatch: Any) -> list[int]:
    """Count calls of the per-piece deflate (``packaging._compress._deflate_piece``): ``[n]``."""
    import ninfer_release.packaging._compress as compress

    calls = [0]
    original = compress._deflate_piece

    def counted(*args: Any) -> bytes:
        calls[0] += 1
        return original(*args)

    monkeypatch.setattr(compress, "_deflate_piece", counted)
    return calls
