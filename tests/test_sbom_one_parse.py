"""One parse per SBOM in verify (issue 13): check_spdx_bytes / check_cyclonedx_bytes give exactly
what validate_*_bytes and the cross-check readers (parse_spdx_files, parse_cyclonedx_hashes,
cyclonedx_root_sha256) give on their own, for the hostile corpus of test_sbom_fast_hostile, and
verify parses each SBOM once (both streamed: tests/test_spdx_stream.py, tests/test_cdx_stream.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_support import release_out
from ninfer_release import strictjson
from ninfer_release.releases import verify_set
from ninfer_release.sbom import (
    _cdx_stream,
    _spdx_stream,
    check_cyclonedx_bytes,
    check_spdx_bytes,
    cyclonedx_root_sha256,
    parse_cyclonedx_hashes,
    parse_spdx_files,
    validate_cyclonedx_bytes,
    validate_spdx_bytes,
)
from ninfer_release.sbom._records import Outcome
from test_sbom_fast_hostile import _CDX, _CDX_BYTES, _SPDX, _SPDX_BYTES, _encode, _golden, _load


def _outcome(function: Callable[[bytes], Any], data: bytes) -> Any:
    try:
        return ("value", function(data))
    except Exception as exc:  # noqa: BLE001 - an exception is an outcome both must share
        return ("raised", type(exc).__name__, str(exc))


def _got(outcome: Outcome[Any]) -> Any:
    return _outcome(lambda _: outcome.get(), b"")


def _spdx_same(data: bytes) -> None:
    try:
        check = check_spdx_bytes(data)
    except Exception as exc:  # noqa: BLE001 - the validator crashes alike (a verdict elsewhere)
        assert _outcome(validate_spdx_bytes, data) == ("raised", type(exc).__name__, str(exc))
        return
    assert check.messages == validate_spdx_bytes(data)
    assert _got(check.files) == _outcome(parse_spdx_files, data)


def _cdx_same(data: bytes) -> None:
    check = check_cyclonedx_bytes(data)
    assert check.messages == validate_cyclonedx_bytes(data)
    assert _got(check.hashes) == _outcome(parse_cyclonedx_hashes, data)
    if not check.messages:  # verify reads the root only of a valid document
        assert _got(check.root_sha256) == _outcome(cyclonedx_root_sha256, data)


@pytest.mark.parametrize("name", list(_SPDX))
def test_spdx_mutation_one_parse_equals_the_separate_readers(name: str) -> None:
    raw = _load("spdx.json")
    _SPDX[name](raw)
    _spdx_same(_encode(raw))


@pytest.mark.parametrize("name", list(_SPDX_BYTES))
def test_spdx_json_attack_one_parse_equals_the_separate_readers(name: str) -> None:
    _spdx_same(_SPDX_BYTES[name](_golden("spdx.json")))


@pytest.mark.parametrize("name", list(_CDX))
def test_cyclonedx_mutation_one_parse_equals_the_separate_readers(name: str) -> None:
    raw = _load("cdx.json")
    _CDX[name](raw)
    _cdx_same(_encode(raw))


@pytest.mark.parametrize("name", list(_CDX_BYTES))
def test_cyclonedx_json_attack_one_parse_equals_the_separate_readers(name: str) -> None:
    _cdx_same(_CDX_BYTES[name](_golden("cdx.json")))


def test_verify_parses_each_sbom_once(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = release_out(tmp_path_factory) / "rtx4090"
    sources: list[str] = []
    real = strictjson.parse

    def counted(data: bytes, *, source: str, **kwargs: Any) -> Any:
        sources.append(source)
        return real(data, source=source, **kwargs)

    streamed: list[Path] = []
    real_spdx, real_cdx = _spdx_stream.read_streamed, _cdx_stream.read_streamed

    def counted_spdx(path: Path, **kwargs: Any) -> Any:
        streamed.append(path)
        return real_spdx(path, **kwargs)

    def counted_cdx(path: Path, **kwargs: Any) -> Any:
        streamed.append(path)
        return real_cdx(path, **kwargs)

    monkeypatch.setattr(strictjson, "parse", counted)
    monkeypatch.setattr(_spdx_stream, "read_streamed", counted_spdx)
    monkeypatch.setattr(_cdx_stream, "read_streamed", counted_cdx)
    report = verify_set(built)
    assert report.ok, report.failures
    # Our SBOMs are read once each, streamed (issue 13: memory), never parsed whole.
    assert sorted(p.name.split(".")[-2] for p in streamed) == ["cdx", "spdx"]
    assert sources.count("spdx") == 0 and sources.count("cyclonedx") == 0
