"""Archives for the zip reader tests: ours (from the writer), foreign (CPython zipfile), patched."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path
from typing import Any

from ninfer_release.packaging import (
    DeflateCache,
    PlanEntry,
    ZipLayout,
    compress_members,
    finish_zip,
    write_zip,
)
from ninfer_release.packaging._zipformat import CENTRAL_FMT

#: The source-date epoch of the archives built by :func:`ours`.
EPOCH = 1700000000


def stage_files(root: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (zip name -> bytes) under ``root / "staged"``, as a staged tree."""
    for name, content in files.items():
        (root / "staged" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "staged" / name).write_bytes(content)


def laid_out(
    tmp_path: Path,
    label: str,
    cache: DeflateCache | None,
    known: dict[str, str],
    names: tuple[str, ...],
    *,
    chunk_size: int,
    epoch: int,
) -> bytes:
    """The zip of the staged ``names`` as ``build lane`` builds it (streams laid out in place,
    ``ZipLayout``), self-checked, in ``tmp_path / label``; ``known``: the lock's digests."""
    work = tmp_path / label
    work.mkdir()
    entries = [PlanEntry(name=n, source=tmp_path / "staged" / n, staged_path=n) for n in names]
    layout = ZipLayout.create(work)
    members = compress_members(
        entries, workdir=work, chunk_size=chunk_size, cache=cache, known_sha256=known, layout=layout
    )
    return finish_zip(layout, members, work / "p.zip", epoch=epoch).path.read_bytes()


def count_proofs(monkeypatch: Any) -> list[int]:
    """Count the deflate-cache hits proven by an inflate (``_cache.StreamProof`` made): ``[n]``."""
    import ninfer_release.packaging._cache as cache
    import ninfer_release.packaging._compress as compress

    calls = [0]
    real = cache.StreamProof

    def counted(*args: Any, **kw: Any) -> cache.StreamProof:
        calls[0] += 1
        return real(*args, **kw)

    monkeypatch.setattr(compress, "StreamProof", counted)
    return calls


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
