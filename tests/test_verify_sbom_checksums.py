"""The SBOMs' checksums are exactly the ones our writer writes, and each is checked against the
bytes it describes — in ``verify`` and in the exported stdlib verifier alike.

Found by a hostile review (2026-12-04): each of these sets, fully re-sealed (``reseal_support``),
verified OK before. An SPDX file with two SHA256 checksums passed when the wrong one came first
(the last one won); the SPDX SHA1 of a file was never compared with the member (nor, so, the
verification code made of them); ``verify`` took an extra MD5 or SHA512 file checksum and a
package ``checksums`` field; a CycloneDX ``hashes`` on any component but the root went unread, and
the root's first SHA-256 was the only one read. What our writer writes: every SPDX File has
``[SHA1, SHA256]`` (``sbom._spdx._file_entry``), the SPDX package none (the zip holds the
document); in CycloneDX only ``metadata.component`` has ``hashes``, one SHA-256, the zip's
(``sbom._cyclonedx._lane_root``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_support import TAGS, cli, record_forks, release_out, stem
from ninfer_release.releases import _scan_worker
from ninfer_release.releases import _standalone_verifier as standalone
from ninfer_release.releases._verify import verify_set
from reseal_support import members_of, rebuild, standalone_run

LANE = "rtx4090"
STEM = stem(LANE)
SERVER = "./bin/ninfer-server.exe"
PACKAGE_ID = f"SPDXRef-Package-{STEM}"


@pytest.fixture
def resealable(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> tuple[Path, list[tuple[str, bytes]]]:
    d = tmp_path / "set"
    shutil.copytree(release_out(tmp_path_factory) / LANE, d)
    return d, members_of(d, STEM)


def _file(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in doc["files"] if f["fileName"] == name)


def _component(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in doc["components"] if c["name"] == name)


# --- SPDX ------------------------------------------------------------------------------------------


def _second_sha256_first(doc: dict[str, Any]) -> None:
    """A wrong SHA256 before the right one (a consumer taking the first reads it)."""
    _file(doc, SERVER)["checksums"].insert(1, {"algorithm": "SHA256", "checksumValue": "0" * 64})


def _second_sha1(doc: dict[str, Any]) -> None:
    _file(doc, SERVER)["checksums"].append({"algorithm": "SHA1", "checksumValue": "0" * 40})


def _wrong_sha1(doc: dict[str, Any]) -> None:
    """The SHA1 of one file wrong (the helper makes the verification code from it again)."""
    sums = _file(doc, SERVER)["checksums"]
    assert sums[0]["algorithm"] == "SHA1"
    sums[0]["checksumValue"] = "0" * 40


def _extra(algorithm: str, digits: int) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        _file(doc, SERVER)["checksums"].append({"algorithm": algorithm, "checksumValue": "0" * digits})

    return edit


def _package_checksum(doc: dict[str, Any]) -> None:
    doc["packages"][0]["checksums"] = [{"algorithm": "SHA256", "checksumValue": "0" * 64}]


_DUP = "files[./bin/ninfer-server.exe].checksums: {} is given more than once"
_OTHER = (
    "files[./bin/ninfer-server.exe].checksums: '{}' is not SHA1 or SHA256, "
    + "the checksums ninfer-release writes"
)
_SCHEMA_ALG = (
    "SPDX 2.3 invalid: $.files[5].checksums[2].algorithm: '{}' is not one of the schema's checksum-alg values"
)


@pytest.mark.parametrize(
    ("edit", "says", "alone_says"),
    [
        (_second_sha256_first, _DUP.format("SHA256"), _DUP.format("SHA256")),
        (_second_sha1, _DUP.format("SHA1"), _DUP.format("SHA1")),
        (
            _wrong_sha1,
            "SHA1 of 'bin/ninfer-server.exe' differs from the package member",
            "SHA1 of 'bin/ninfer-server.exe' differs from the package member",
        ),
        # The stdlib verifier's schema has only SHA1 and SHA256 (its message comes first).
        (_extra("MD5", 32), _OTHER.format("MD5"), _SCHEMA_ALG.format("MD5")),
        (_extra("SHA512", 128), _OTHER.format("SHA512"), _SCHEMA_ALG.format("SHA512")),
        (
            _package_checksum,
            f"packages[{PACKAGE_ID}].checksums: a package checksum, which ninfer-release never writes"
            " (the zip holds this document)",
            "SPDX 2.3 invalid: $.packages[0]: 'checksums' is not a field of a package"
            " that ninfer-release writes",
        ),
    ],
    ids=["second-sha256-first", "second-sha1", "wrong-sha1", "md5", "sha512", "package-checksums"],
)
def test_a_resealed_spdx_checksum_our_writer_does_not_write_fails_both_verifiers(
    resealable: tuple[Path, list[tuple[str, bytes]]],
    tmp_path: Path,
    edit: Callable[[dict[str, Any]], None],
    says: str,
    alone_says: str,
) -> None:
    d, members = resealable
    rebuild(d, STEM, TAGS[LANE], members, spdx_edit=edit)
    _fails_both(d, tmp_path, f"{STEM}.spdx.json", says, alone_says)


# --- CycloneDX -------------------------------------------------------------------------------------


def _engine_hash(doc: dict[str, Any]) -> None:
    _component(doc, "ninfer-engine")["hashes"] = [{"alg": "SHA-256", "content": "0" * 64}]


def _tool_hash(doc: dict[str, Any]) -> None:
    doc["metadata"]["tools"]["components"][0]["hashes"] = [{"alg": "SHA-256", "content": "0" * 64}]


def _reference_hash(doc: dict[str, Any]) -> None:
    ref = _component(doc, "msvc-runtime")["externalReferences"][0]
    ref["hashes"] = [{"alg": "SHA-256", "content": "0" * 64}]


def _root_second_sha256(doc: dict[str, Any]) -> None:
    doc["metadata"]["component"]["hashes"].append({"alg": "SHA-256", "content": "1" * 64})


def _root_sha256_first(doc: dict[str, Any]) -> None:
    doc["metadata"]["component"]["hashes"].insert(0, {"alg": "SHA-256", "content": "1" * 64})


def _root_sha512(doc: dict[str, Any]) -> None:
    doc["metadata"]["component"]["hashes"].append({"alg": "SHA-512", "content": "2" * 128})


_NONE_HERE = "{}.hashes: a hash where ninfer-release writes none"
_ROOT = "$.metadata.component.hashes: "


_ONLY_ROOT = _ROOT + "SHA-256 is given more than once"
_REF = "$.components[2].externalReferences[0]"


@pytest.mark.parametrize(
    ("edit", "says", "alone_says"),
    [
        (_engine_hash, _NONE_HERE.format("$.components[0]"), _NONE_HERE.format("$.components[0]")),
        (_tool_hash, *[_NONE_HERE.format("$.metadata.tools.components[0]")] * 2),
        # The stdlib verifier's schema has no hashes on an external reference (its message comes first).
        (
            _reference_hash,
            _NONE_HERE.format(_REF),
            f"schema: {_REF}: 'hashes' is not a field of a external-reference that ninfer-release writes",
        ),
        (_root_second_sha256, _ONLY_ROOT, _ONLY_ROOT),
        (_root_sha256_first, _ONLY_ROOT, _ONLY_ROOT),
        (_root_sha512, *[_ROOT + "'SHA-512' is not SHA-256, the one hash ninfer-release writes here"] * 2),
    ],
    ids=[
        "engine",
        "tool",
        "external-reference",
        "root-second-sha256",
        "root-wrong-sha256-first",
        "root-sha512",
    ],
)
def test_a_resealed_cyclonedx_hash_our_writer_does_not_write_fails_both_verifiers(
    resealable: tuple[Path, list[tuple[str, bytes]]],
    tmp_path: Path,
    edit: Callable[[dict[str, Any]], None],
    says: str,
    alone_says: str,
) -> None:
    d, members = resealable
    rebuild(d, STEM, TAGS[LANE], members, cdx_edit=edit)
    _fails_both(d, tmp_path, f"{STEM}.cdx.json", says, alone_says)


def test_the_edits_land_where_the_cases_say(resealable: tuple[Path, list[tuple[str, bytes]]]) -> None:
    """The JSON paths and indexes the messages above name are those of the sample documents."""
    d, _ = resealable
    cdx = json.loads((d / f"{STEM}.cdx.json").read_bytes())
    assert cdx["components"][0]["name"] == "ninfer-engine"
    assert cdx["components"][2]["name"] == "msvc-runtime"
    spdx = json.loads((d / f"{STEM}.spdx.json").read_bytes())
    assert spdx["files"][5]["fileName"] == SERVER
    assert [c["algorithm"] for c in spdx["files"][5]["checksums"]] == ["SHA1", "SHA256"]


def _fails_both(d: Path, tmp_path: Path, name: str, says: str, alone_says: str) -> None:
    """``verify`` exits 5 with the one line ``error: DIR: NAME: SAYS`` among its lines, the
    stdlib verifier exits 5 with ``FAIL: NAME: ALONE_SAYS``."""
    result = cli("verify", d)
    assert result.code == 5, result.out
    assert f"error: {d}: {name}: {says}" in result.err.splitlines(), result.err
    alone = standalone_run(d, tmp_path)
    assert alone.returncode == 5, alone.stdout
    assert f"FAIL: {name}: {alone_says}" in alone.stderr.splitlines(), alone.stderr


# --- the forked member scan ------------------------------------------------------------------------


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The zip of the sample set scanned in the forked worker (as one of >= 2,000 members is);
    the pid of every worker forked."""
    monkeypatch.setattr("threading.active_count", lambda: 1)
    monkeypatch.delenv(_scan_worker.WORKER_ENV, raising=False)
    monkeypatch.setattr(_scan_worker, "MIN_MEMBERS", 0)
    return record_forks(monkeypatch)


@pytest.mark.parametrize("tampered", [False, True], ids=["control", "wrong-sha1"])
def test_the_forked_scan_gives_each_members_sha1(
    resealable: tuple[Path, list[tuple[str, bytes]]], forked: list[int], tampered: bool
) -> None:
    """Through the worker, a re-sealed untampered set verifies (every member's SHA-1 came over the
    pipe) and a wrong SPDX SHA1 fails with the thread's message."""
    d, members = resealable
    rebuild(d, STEM, TAGS[LANE], members, spdx_edit=_wrong_sha1 if tampered else None)
    report = verify_set(d)
    assert len(forked) == 1, "the worker was not used"
    if not tampered:
        assert report.ok, report.failures
        return
    assert report.failures == (
        f"{STEM}.spdx.json: SHA1 of 'bin/ninfer-server.exe' differs from the package member",
    )


# --- the stdlib verifier's rules where its schema would speak first ----------------------------------


def test_the_stdlib_verifier_refuses_a_file_checksum_it_does_not_write_on_its_own() -> None:
    """Its schema refuses an MD5 first (above); the rule holds without it."""
    sha1 = {"algorithm": "SHA1", "checksumValue": "1" * 40}
    sha256 = {"algorithm": "SHA256", "checksumValue": "2" * 64}
    md5 = {"algorithm": "MD5", "checksumValue": "3" * 32}
    doc = {"files": [{"fileName": "./a.dll", "checksums": [sha1, sha256, md5]}]}
    assert standalone._spdx_files(doc)[1] == [
        "files[./a.dll].checksums: 'MD5' is not SHA1 or SHA256, the checksums ninfer-release writes"
    ]


def test_the_stdlib_verifier_refuses_a_hash_on_an_external_reference_on_its_own() -> None:
    """Its schema refuses it first (above); the rule holds without it."""
    ref = {"type": "website", "url": "https://x", "hashes": [{"alg": "SHA-256", "content": "0" * 64}]}
    doc = {"components": [{"name": "fmt", "externalReferences": [ref]}]}
    assert standalone._cdx_hashes(doc) == (
        {},
        ["$.components[0].externalReferences[0].hashes: a hash where ninfer-release writes none"],
    )
