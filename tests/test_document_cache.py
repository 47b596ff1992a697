"""The SBOM document cache (issue 13, the unchanged rebuild): a document rendered from the same
inputs is reused only as this user's signed, unchanged bytes; the set's bytes never depend on it
(``build/_documents.py``, ``packaging/_cache.py`` ``reuse_document``)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flow_support import RELEASE, samples
from ninfer_release import sbom
from ninfer_release.build import _documents
from ninfer_release.build._documents import inputs_sha256, render_or_reuse
from ninfer_release.packaging import DeflateCache


@dataclass(frozen=True)
class _Rendered:
    """A stand-in writer: writes its arguments' JSON, counts its calls, may log a warning."""

    calls: list[int]

    def __call__(self, *, into: Path, **arguments: Any) -> bytes:
        self.calls.append(1)
        if arguments.get("warn"):
            logging.getLogger("ninfer_release.sbom._cyclonedx").warning(
                "%s has no version", arguments["warn"]
            )
        into.write_bytes(json.dumps(arguments, sort_keys=True, default=repr).encode() + b"\n")
        return b""


def _cache(tmp_path: Path, key: str | None = "key") -> DeflateCache:
    return DeflateCache(
        root=tmp_path / "cache", max_bytes=1 << 30, key_path=tmp_path / "state" / key if key else None
    )


def _entry(tmp_path: Path, kind: str = "spdx") -> tuple[Path, Path]:
    (record,) = (tmp_path / "cache" / f"documents-{kind}-v1").glob("*.json")
    return record, record.with_suffix(".bin")


ARGS: dict[str, Any] = {
    "files": [sbom.FileRecord(path="bin/a.dll", size=3, sha1="0" * 40, sha256="1" * 64)],
    "name": "pkg",
}


def test_a_second_rendering_of_the_same_inputs_is_the_first_ones_bytes(tmp_path: Path) -> None:
    cache, render = _cache(tmp_path), _Rendered([])
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    assert render_or_reuse(cache, "spdx", ARGS, render, first) is False
    assert render_or_reuse(cache, "spdx", ARGS, render, second) is True
    assert second.read_bytes() == first.read_bytes() and len(render.calls) == 1


def test_any_changed_input_is_rendered_again(tmp_path: Path) -> None:
    cache, render = _cache(tmp_path), _Rendered([])
    render_or_reuse(cache, "spdx", ARGS, render, tmp_path / "a.json")
    changed = dict(ARGS, files=[sbom.FileRecord(path="bin/a.dll", size=3, sha1="0" * 40, sha256="2" * 64)])
    assert render_or_reuse(cache, "spdx", changed, render, tmp_path / "b.json") is False
    assert render_or_reuse(cache, "cdx", ARGS, render, tmp_path / "c.json") is False  # another kind
    assert len(render.calls) == 3


def test_the_key_covers_the_arguments_the_code_the_toolchain_and_the_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = inputs_sha256("spdx", ARGS)
    assert inputs_sha256("spdx", dict(ARGS)) == base
    assert inputs_sha256("cdx", ARGS) != base
    assert inputs_sha256("spdx", dict(ARGS, name="pkg2")) != base
    assert inputs_sha256("spdx", dict(ARGS, extra=None)) != base
    # a list and the same values as a mapping's, a record and its fields as a list: all told apart
    assert inputs_sha256("spdx", {"x": {"a": 1}}) != inputs_sha256("spdx", {"x": [["a", 1]]})
    monkeypatch.setattr(_documents, "code_fingerprint", lambda: "0" * 64)
    assert inputs_sha256("spdx", ARGS) != base  # an edit to the tool's code (same version)
    monkeypatch.undo()
    monkeypatch.setattr(_documents, "installed_toolchain", lambda: ())
    assert inputs_sha256("spdx", ARGS) != base  # another spdx-tools, cyclonedx-python-lib …


def test_a_long_sequence_is_spelled_as_a_short_one_would_be() -> None:
    rows = [sbom.ShippedFile(path=f"bin/{i}.dll", sha256=f"{i:064x}") for i in range(3000)]
    plain = json.dumps({"rows": [_documents._plain(r) for r in rows]}, separators=(",", ":")).encode()
    assert b"".join(_documents._encoded({"rows": rows})) == plain
    assert b"".join(_documents._encoded({"rows": tuple(rows)})) == plain


def test_an_argument_without_a_canonical_spelling_is_always_rendered(tmp_path: Path) -> None:
    cache, render = _cache(tmp_path), _Rendered([])
    odd = dict(ARGS, where=tmp_path)  # a Path: no spelling, so no key
    for name in ("a", "b"):
        assert render_or_reuse(cache, "spdx", odd, render, tmp_path / f"{name}.json") is False
    assert len(render.calls) == 2 and not (tmp_path / "cache").exists()


def test_changed_bytes_are_never_used_and_the_entry_goes(tmp_path: Path) -> None:
    cache, render = _cache(tmp_path), _Rendered([])
    first = tmp_path / "first.json"
    render_or_reuse(cache, "spdx", ARGS, render, first)
    record, document = _entry(tmp_path)
    data = bytearray(document.read_bytes())
    data[5] ^= 0x01  # same length, other bytes
    document.write_bytes(bytes(data))
    again = tmp_path / "again.json"
    assert render_or_reuse(cache, "spdx", ARGS, render, again) is False
    assert again.read_bytes() == first.read_bytes() and len(render.calls) == 2
    record, document = _entry(tmp_path)  # stored afresh
    assert hashlib.sha256(document.read_bytes()).hexdigest() == json.loads(record.read_bytes())["sha256"]


def test_a_longer_or_shorter_document_is_a_miss(tmp_path: Path) -> None:
    cache, render = _cache(tmp_path), _Rendered([])
    render_or_reuse(cache, "spdx", ARGS, render, tmp_path / "first.json")
    _, document = _entry(tmp_path)
    original = document.read_bytes()
    for changed in (original + b" ", original[:-1]):
        document.write_bytes(changed)
        into = tmp_path / "into.json"
        assert cache.reuse_document("spdx", inputs_sha256("spdx", ARGS), into) is None
        assert not into.exists()  # nothing partial left behind
        document.write_bytes(original)


def _forge(record: Path, document: Path, data: bytes, mac: str | None) -> None:
    """Put ``data`` in the entry with a record that describes it exactly, MAC ``mac`` (None: none)."""
    body = json.loads(record.read_bytes())
    body.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    body.pop("mac")
    if mac is not None:
        body["mac"] = mac
    document.write_bytes(data)
    record.write_text(json.dumps(body))


@pytest.mark.parametrize("mac", [None, "0" * 64, "kept"])
def test_a_record_this_users_key_did_not_sign_is_a_miss(tmp_path: Path, mac: str | None) -> None:
    cache, render = _cache(tmp_path), _Rendered([])
    first = tmp_path / "first.json"
    render_or_reuse(cache, "spdx", ARGS, render, first)
    record, document = _entry(tmp_path)
    kept = json.loads(record.read_bytes())["mac"]
    # A forged document whose record names its size and SHA-256: only the MAC can tell.
    _forge(record, document, b'{"forged": true}\n', kept if mac == "kept" else mac)
    again = tmp_path / "again.json"
    assert render_or_reuse(cache, "spdx", ARGS, render, again) is False
    assert again.read_bytes() == first.read_bytes()


def test_another_users_key_is_a_miss(tmp_path: Path) -> None:
    render = _Rendered([])
    render_or_reuse(_cache(tmp_path, "mine"), "spdx", ARGS, render, tmp_path / "a.json")
    assert render_or_reuse(_cache(tmp_path, "theirs"), "spdx", ARGS, render, tmp_path / "b.json") is False
    assert len(render.calls) == 2


def test_without_a_key_documents_are_neither_stored_nor_reused(tmp_path: Path) -> None:
    cache, render = _cache(tmp_path, key=None), _Rendered([])
    for name in ("a", "b"):
        assert render_or_reuse(cache, "spdx", ARGS, render, tmp_path / f"{name}.json") is False
    assert len(render.calls) == 2 and not list((tmp_path / "cache").glob("documents-*/*"))


def test_after_a_rejected_deflate_entry_no_document_is_reused(tmp_path: Path) -> None:
    cache, render = _cache(tmp_path), _Rendered([])
    render_or_reuse(cache, "spdx", ARGS, render, tmp_path / "a.json")
    cache.reject_key("3" * 64, level=6, chunk_size=1 << 22)
    assert render_or_reuse(cache, "spdx", ARGS, render, tmp_path / "b.json") is False


def test_a_reused_document_logs_the_warnings_its_rendering_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache, render = _cache(tmp_path), _Rendered([])
    noisy = dict(ARGS, warn="bin/x.dll")
    with caplog.at_level(logging.WARNING):
        render_or_reuse(cache, "cdx", noisy, render, tmp_path / "a.json")
        rendered = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
        caplog.clear()
        assert render_or_reuse(cache, "cdx", noisy, render, tmp_path / "b.json") is True
        reused = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert (
        rendered
        == reused
        == [("ninfer_release.sbom._cyclonedx", logging.WARNING, "bin/x.dll has no version")]
    )


def test_a_rendering_that_raises_stores_nothing(tmp_path: Path) -> None:
    cache = _cache(tmp_path)

    def fails(*, into: Path, **_: Any) -> bytes:
        into.write_bytes(b"half")
        raise ValueError("invalid")

    with pytest.raises(ValueError, match="invalid"):
        render_or_reuse(cache, "spdx", ARGS, fails, tmp_path / "a.json")
    assert not list((tmp_path / "cache").glob("documents-*/*.json"))


def test_an_unchanged_rebuild_reuses_both_documents_and_writes_the_same_set(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ninfer_release.build import build_lane

    src = samples(tmp_path_factory)
    monkeypatch.setenv("NINFER_DEFLATE_CACHE_KEY", str(tmp_path / "state" / "key"))
    rendered: list[str] = []
    real = _documents.render_or_reuse

    def counted(cache: DeflateCache | None, kind: str, *args: Any) -> bool:
        reused = real(cache, kind, *args)
        rendered.extend([] if reused else [kind])
        return reused

    monkeypatch.setattr("ninfer_release.build._native.render_or_reuse", counted)
    outs = {}
    for label, setting in (
        ("off", "off"),
        ("cold", str(tmp_path / "cache")),
        ("warm", str(tmp_path / "cache")),
    ):
        monkeypatch.setenv("NINFER_DEFLATE_CACHE", setting)
        rendered.clear()
        build_lane(RELEASE, "rtx4090", inputs=src, out=tmp_path / label, env=dict(os.environ), offline=True)
        outs[label] = (
            {p.name: p.read_bytes() for p in (tmp_path / label / "rtx4090").iterdir()},
            list(rendered),
        )
    assert outs["cold"][0] == outs["off"][0] and outs["warm"][0] == outs["off"][0]
    assert outs["off"][1] == outs["cold"][1] == ["spdx", "cdx"]
    assert outs["warm"][1] == []  # both reused
