"""The exported stdlib verifier sees what ``verify`` sees: the config as a TOML parser reads it, a
member's inflated bytes within the size it declares, and each record's shape.

Found by a hostile review (2026-12-04): a config whose multi-line string holds a second
``[model]`` table verified OK in the stdlib verifier only (its line reader took the string's
lines for keys); a member declaring 100 bytes whose 4 MiB deflate stream inflates to ~4 GiB took
4 GiB of memory there; and records ``verify`` refuses as malformed (a qualification record
without ``rollback``, a ``null`` ACL grant, a number among ``args``) verified OK there, or failed
on an internal ``AttributeError``. Each set here is fully re-sealed (``reseal_support``).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tomllib
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_support import TAGS, cli, qualified_out, release_out, stem
from ninfer_release.packaging._zipformat import central_header, end_records, local_header
from ninfer_release.releases import _standalone_verifier as sv
from ninfer_release.releases import verifier_source
from reseal_support import ORDER, members_of, rebuild, replace_zip, reseal_entries

LANE = "rtx4090"
GOLDEN = Path(__file__).resolve().parent / "golden" / "v0.13.1" / LANE
GOOD_PATH = b'path = "models/qwen3_8_27b-v3.ninfer"'


def _golden(suffix: str) -> bytes:
    return (GOLDEN / (stem(LANE) + suffix)).read_bytes()


def _run_standalone(
    script: Path, set_dir: Path, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-I", "-S", str(script), str(set_dir)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def script(tmp_path: Path) -> Path:
    out = tmp_path / "ninfer-verify.py"
    out.write_bytes(verifier_source())
    return out


@pytest.fixture
def draft(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A copy of the unqualified rtx4090 set."""
    d = tmp_path / "set"
    shutil.copytree(release_out(tmp_path_factory) / LANE, d)
    return d


# --- the config, as TOML reads it ------------------------------------------------------------


def _two_faced(config: bytes) -> bytes:
    """``config`` whose real ``model.path`` climbs out of the data root, followed by a multi-line
    string whose lines read as the old ``[model] path`` to a line-by-line reader."""
    evil = config.replace(GOOD_PATH, b'path = "../../../Users/Public/evil.ninfer"')
    return evil.rstrip(b"\n") + b'\nnote = """\n[model]\n' + GOOD_PATH + b'\n"""\n'


def test_a_config_a_line_reader_reads_otherwise_fails_both(draft: Path, script: Path) -> None:
    s = stem(LANE)
    config = _two_faced((draft / f"{s}.config.toml").read_bytes())
    assert tomllib.loads(config.decode())["model"]["path"] == "../../../Users/Public/evil.ninfer"
    members = [(n, config if n == sv.ZIP_CONFIG_PATH else b) for n, b in members_of(draft, s)]
    rebuild(draft, s, TAGS[LANE], members, entries={"config.toml": config})
    full = cli("verify", draft)
    assert full.code == 5, full.text
    assert "evil.ninfer" in full.err
    alone = _run_standalone(script, draft)
    assert alone.returncode == 5, alone.stdout
    assert f"FAIL: {s}.route.json: install.model_path is not where {s}.config.toml reads it" in alone.stderr
    assert "evil.ninfer" in alone.stderr


def test_without_tomllib_the_line_reader_reads_our_configs_as_tomllib() -> None:
    """Python 3.9/3.10 have no ``tomllib``: the line reader gives what it gives for every config
    the build renders (the rtx4090 golden; the rtx3090 one differs only in its values)."""
    config = _golden(".config.toml").decode()
    assert sv._simple_toml(config) == tomllib.loads(config)
    assert sv._simple_toml(config)["engine"]["args"][0] == "--lm-head-draft"


#: Lines the line reader cannot read exactly as TOML does: each refuses the whole config there.
NOT_READ_WITHOUT_TOMLLIB = {
    "multi-line basic string": b'note = """\n[model]\n' + GOOD_PATH + b'\n"""\n',
    "multi-line literal string": b"note = '''\n[model]\n" + GOOD_PATH + b"\n'''\n",
    "literal string": b"[extra]\nx = 'C:\\temp'\n",
    "dotted key": b'model.path = "elsewhere"\n',
    "inline comment": b"[extra]\nx = 1 # one\n",
    "unicode escape": b'[extra]\nx = "\\u0041"\n',
    "table redefined": b'[model]\nx = "y"\n',
    "key repeated": b'[server]\nhost = "0.0.0.0"\n',
    "array of tables": b"[[model]]\n",
    "inline table": b'[extra]\nx = { a = "b" }\n',
    "quoted key": b'[extra]\n"x" = "y"\n',
    "carriage return": b'[extra]\nx = "y"\r\n',
    "indented key": b'[extra]\n  x = "y"\n',
}


@pytest.mark.parametrize("case", sorted(NOT_READ_WITHOUT_TOMLLIB))
def test_without_tomllib_what_the_line_reader_cannot_read_exactly_is_refused(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _golden(".config.toml").rstrip(b"\n") + b"\n" + NOT_READ_WITHOUT_TOMLLIB[case]
    monkeypatch.setattr(sv, "tomllib", None)
    with pytest.raises(ValueError, match=r"^line \d+: not a form this verifier reads without tomllib"):
        sv.config_toml(config)


def test_without_tomllib_a_two_faced_config_is_refused_by_the_route_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the set test above finds with ``tomllib``, found without it as a config it cannot read."""
    run = sv.Run()
    route = sv.strict_json(_golden(".route.json"))
    monkeypatch.setattr(sv, "tomllib", None)
    sv._route_paths(run, "r.json", "c.toml", route, _two_faced(_golden(".config.toml")), "x")
    assert run.failures == [
        "c.toml: is not UTF-8 TOML: line 58: not a form this verifier reads without tomllib (Python < 3.11)"
    ]


# --- a member that inflates past the size it declares ------------------------------------------


def _deflated(name: str, data: bytes) -> tuple[str, int, int, bytes]:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return name, zlib.crc32(data), len(data), c.compress(data) + c.flush()


def _zip_of(path: Path, entries: list[tuple[str, int, int, bytes]]) -> None:
    """Deflated ``(name, crc32, declared size, stream)`` entries in the writer's exact records."""
    out, directory = bytearray(), bytearray()
    for name, crc, size, data in sorted(entries, key=lambda e: e[0].encode()):
        values: dict[str, Any] = {
            "name": name,
            "method": 8,
            "crc32": crc,
            "size": size,
            "compressed_size": len(data),
        }
        offset = len(out)
        out += local_header(**values, epoch=1763596800, zip64=False) + data
        directory += central_header(**values, offset=offset, epoch=1763596800)
    out += directory + end_records(count=len(entries), cd_offset=len(out), cd_size=len(directory))
    path.write_bytes(bytes(out))


def test_a_member_inflating_to_a_gibibyte_past_its_declared_100_bytes_is_refused_in_bounded_memory(
    draft: Path, script: Path
) -> None:
    """Its 4.6 MB stream is 1 GiB of zeros: the first 4 MiB read block alone, inflated whole
    before the size check, took more than the 512 MiB address space the stdlib verifier runs in
    here (a MemoryError); inflated a bounded piece at a time it is refused at byte 101."""
    s = stem(LANE)
    entries = [_deflated(n, b) for n, b in members_of(draft, s)]
    entries.append(_deflated(f"sbom/{s}.spdx.json", (draft / f"{s}.spdx.json").read_bytes()))
    c = zlib.compressobj(1, zlib.DEFLATED, -15)
    zeros = bytes(64 << 20)
    bomb = b"".join(c.compress(zeros) for _ in range(16)) + c.flush()
    entries.append(("bin/zz.dll", 0, 100, bomb))
    replace_zip(draft, s, TAGS[LANE], lambda z: _zip_of(z, entries))
    alone = _run_standalone(script, draft, prefix=("prlimit", f"--as={512 << 20}", "--"))
    assert alone.returncode == 5, alone.stderr
    assert f"FAIL: {s}.zip: member 'bin/zz.dll': inflates past 100 bytes" in alone.stderr, alone.stderr
    assert "MemoryError" not in alone.stderr


def test_inflating_stops_one_byte_past_the_declared_size() -> None:
    """No piece is inflated past what the size check needs: a member declaring 100 bytes is refused
    with 101 bytes inflated, not a 4 MiB piece (nor the 16 MiB its stream holds)."""
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    stream = c.compress(bytes(16 << 20)) + c.flush()
    for limit in (0, 100, 5 << 20):
        out = sv._Inflated(limit, keep=False)
        assert sv._inflate_block(zlib.decompressobj(-15), stream, out) == f"inflates past {limit} bytes"
        assert out.size == limit + 1


# --- record shapes: what the review found ----------------------------------------------------


def _dump(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _drop_rollback(doc: dict[str, Any]) -> None:
    del doc["rollback"]


def _route_shapes(doc: dict[str, Any]) -> None:
    doc["install"]["create_dirs"][3] = {}
    doc["bearer_key"]["acl"]["grants"][0] = None


def _profile_args(doc: dict[str, Any]) -> None:
    doc["args"][1] = 2
    doc["flags"][0] = None


def _dependency_a_number(doc: dict[str, Any]) -> None:
    doc["predicate"]["buildDefinition"]["resolvedDependencies"][0] = 7


def _dependency_uri_null(doc: dict[str, Any]) -> None:
    doc["predicate"]["buildDefinition"]["resolvedDependencies"][0]["uri"] = None


def _entry_a_number(doc: dict[str, Any]) -> None:
    doc["entries"][1] = 0


#: A malformed record (as ``verify`` reads it), fully re-sealed -> the stdlib verifier's findings.
MALFORMED = {
    "qualification-without-rollback": ("qualification.json", _drop_rollback, ["rollback: missing"]),
    "route-element-types": (
        "route.json",
        _route_shapes,
        [
            "install.create_dirs[3]: expected str, got object",
            "bearer_key.acl.grants[0]: expected object, got null",
        ],
    ),
    "profile-args-and-flags": (
        "profile.json",
        _profile_args,
        ["flags[0]: expected str, got null", "args[1]: expected str, got int"],
    ),
    "provenance-dependency-a-number": (
        "provenance.json",
        _dependency_a_number,
        ["predicate.buildDefinition.resolvedDependencies[0]: expected object, got int"],
    ),
    "provenance-optional-key-null": (
        "provenance.json",
        _dependency_uri_null,
        ["predicate.buildDefinition.resolvedDependencies[0].uri: expected str, got null"],
    ),
    "manifest-entry-a-number": ("manifest.json", _entry_a_number, ["entries[1]: expected object, got int"]),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_record_fails_both_naming_the_field(case: str, draft: Path) -> None:
    """Each verified OK in the stdlib verifier, or failed there on an ``AttributeError``; now it
    names the file and the field, and only that (a malformed record is not read further)."""
    record, edit, says = MALFORMED[case]
    s = stem(LANE)
    doc = json.loads((draft / f"{s}.{record}").read_bytes())
    edit(doc)
    reseal_entries(draft, s, TAGS[LANE], {record: _dump(doc)})
    full = cli("verify", draft)
    assert full.code == 5, full.text
    assert sv.verify(str(draft)).failures == [f"{s}.{record}: {message}" for message in says]


# --- record shapes: the differential corpus -----------------------------------------------------

#: The JSON records ``verify`` reads as typed records (entries 5-10), as ``reseal_support.ORDER``
#: names them.
RECORDS = ORDER[ORDER.index("profile.json") :]
#: What a mutation does at a path: delete the key, or put a value of each JSON type there.
VALUES: dict[str, Any] = {"null": None, "number": 7, "string": "x", "object": {}, "list": []}
KINDS = ("delete", *VALUES)
#: Mutations per path, drawn from ``KINDS`` with this seed: every path of every record is
#: mutated, each kind is drawn at ~1/3 of them, and the corpus stays the same from run to run.
SEED, PER_PATH = 20261204, 2


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path below ``value``: each key of an object, the first and last element of an array."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*at, key)
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for i in sorted({0, len(value) - 1}) if value else ():
            yield (*at, i)
            yield from _paths(value[i], (*at, i))


def _mutated(doc: dict[str, Any], path: tuple[Any, ...], kind: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(doc))
    parent: Any = out
    for step in path[:-1]:
        parent = parent[step]
    if kind == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = VALUES[kind]
    return out


def _corpus(docs: dict[str, dict[str, Any]]) -> list[tuple[str, tuple[Any, ...], str]]:
    """``(record, path, kind)`` for every path of every record, ``PER_PATH`` kinds each (seeded)."""
    rng = random.Random(SEED)  # noqa: S311 - a reproducible corpus, not a secret
    cases = []
    for record in RECORDS:
        for path in _paths(docs[record]):
            parent = docs[record]
            for step in path[:-1]:
                parent = parent[step]
            kinds = [k for k in KINDS if k != "delete" or isinstance(parent, dict)]
            cases += [(record, path, kind) for kind in rng.sample(kinds, PER_PATH)]
    return cases


def test_both_verifiers_agree_on_every_record_mutated_at_every_path(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Each JSON record of the qualified rtx4090 set, mutated at each path (a key deleted, a value
    of another JSON type put there), every later record and ``SHA256SUMS`` re-sealed: ``verify``
    and the stdlib verifier give the same verdict (5 for both, or 0 for both), and the stdlib
    verifier never fails on an internal error. Both run in-process: 618 cases, ~32 s on the loaded
    2-core machine (2026-12-04)."""
    s, tag = stem(LANE), TAGS[LANE]
    d = tmp_path / "set"
    shutil.copytree(qualified_out(tmp_path_factory) / LANE, d)
    base = {p.name: p.read_bytes() for p in d.iterdir() if p.name.endswith(RECORDS) or p.name == "SHA256SUMS"}
    docs = {r: json.loads(base[f"{s}.{r}"]) for r in RECORDS}
    cases = _corpus(docs)
    assert len(cases) > 500 and {k for _, _, k in cases} == set(KINDS)
    disagreements = []
    for record, path, kind in [("route.json", (), "control"), *cases]:
        for name, data in base.items():
            (d / name).write_bytes(data)
        doc = docs[record] if kind == "control" else _mutated(docs[record], path, kind)
        reseal_entries(d, s, tag, {record: _dump(doc)})
        full = cli("verify", d)
        alone = sv.verify(str(d))
        crashed = [f for f in alone.failures if "cannot be verified" in f]
        if full.code not in (0, 5) or (full.code == 5) != bool(alone.failures) or crashed:
            where = record + "".join(f"[{p!r}]" for p in path)
            disagreements.append(
                f"{where} {kind}: verify {full.code} {full.err[:300]!r}; standalone {alone.failures[:3]}"
            )
        if kind == "control":
            assert full.code == 0 and not alone.failures, (full.text, alone.failures)
    assert disagreements == [], f"{len(disagreements)} of {len(cases)}:\n" + "\n".join(disagreements)
