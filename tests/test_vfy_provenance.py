"""verify's provenance statement without its resolved dependencies decoded one by one
(``releases._verify._provenance_doc``; issue 13): when it reads a statement, typing it gives the
whole path's problems and record (but the dependencies); anything it is not sure of is handed
back; our statements are read this way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ninfer_release import sbom, strictjson
from ninfer_release.errors import InputError
from ninfer_release.releases import _verify
from ninfer_release.releases._records import ProvenanceStatement

_GOLDEN = (
    Path(__file__).parent
    / "golden/v0.13.1/rtx4090/ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64.provenance.json"
)
_NAME = "x.provenance.json"


def _golden() -> bytes:
    return _GOLDEN.read_bytes()


def _outcome(run: _verify._Run, record: ProvenanceStatement | None) -> tuple[list[str], Any]:
    if record is None:
        return run.failures, None
    doc = record.to_json()
    doc["predicate"]["buildDefinition"].pop("resolvedDependencies")
    return run.failures, doc


def _whole(data: bytes) -> tuple[list[str], Any]:
    run = _verify._Run(directory=Path("."))
    return _outcome(run, _verify._typed(run, _NAME, data, ProvenanceStatement))


def _fast(data: bytes) -> tuple[list[str], Any] | None:
    doc = _verify._provenance_doc(data, _NAME)
    if doc is None:
        return None
    run = _verify._Run(directory=Path("."))
    return _outcome(run, _verify._typed_doc(run, _NAME, doc, ProvenanceStatement))


def _edit(change: Any) -> bytes:
    doc = json.loads(_golden())
    change(doc)
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def _deps(doc: Any) -> list[Any]:
    deps: list[Any] = doc["predicate"]["buildDefinition"]["resolvedDependencies"]
    return deps


def test_our_statement_is_read_without_its_dependencies() -> None:
    got = _fast(_golden())
    assert got is not None and got == _whole(_golden()) and got[0] == []


_HANDED_BACK = {
    "an unknown key": lambda d: _deps(d)[1].__setitem__("size", "1"),
    "a null uri": lambda d: _deps(d)[1].__setitem__("uri", None),
    "a number name": lambda d: _deps(d)[1].__setitem__("name", 1),
    "no name": lambda d: _deps(d)[1].pop("name"),
    "two digests": lambda d: _deps(d)[1]["digest"].__setitem__("sha512", "ab"),
    "a non-string digest": lambda d: _deps(d)[1]["digest"].__setitem__("sha256", 5),
    "an escape": lambda d: _deps(d)[1].__setitem__("name", 'a"b'),
    "non-ASCII": lambda d: _deps(d)[1].__setitem__("name", "\u00e9"),
    "no dependencies": lambda d: d["predicate"]["buildDefinition"].__setitem__("resolvedDependencies", []),
    # The same key in another object first: the span is not the statement's array.
    "another key's array": lambda d: d["predicate"]["buildDefinition"]["externalParameters"].__setitem__(
        "resolvedDependencies", [{"name": "a"}]
    ),
    "not a list": lambda d: d["predicate"]["buildDefinition"].__setitem__("resolvedDependencies", {"a": 1}),
}


@pytest.mark.parametrize("name", list(_HANDED_BACK))
def test_a_statement_it_is_not_sure_of_is_handed_back(name: str) -> None:
    assert _fast(_edit(_HANDED_BACK[name])) is None


_READ = {
    "as written": lambda d: None,
    "a wrong subject": lambda d: d["subject"][0].__setitem__("name", "other"),
    "an unknown top-level key": lambda d: d.__setitem__("extra", 1),
    "a missing lane": lambda d: d["predicate"]["buildDefinition"]["externalParameters"].pop("lane"),
    "the wrong type": lambda d: d.__setitem__("_type", "https://in-toto.io/Statement/v0.1"),
    "a digest without a uri": lambda d: _deps(d)[0].pop("uri"),
    "a uri without a digest": lambda d: _deps(d)[1].pop("digest"),
}


@pytest.mark.parametrize("name", list(_READ))
def test_a_statement_read_gives_the_whole_paths_verdict(name: str) -> None:
    data = _edit(_READ[name])
    got = _fast(data)
    assert got is not None and got == _whole(data)


@pytest.mark.parametrize(
    "attack",
    [
        lambda d: d.replace(b'"_type"', b'"_type": "x", "_type"', 1),  # a duplicate key
        lambda d: b"\xef\xbb\xbf" + d,  # a BOM
        lambda d: d.rstrip(b"\n") + b" {}\n",  # trailing data
        lambda d: d.replace(b'"buildType"', b'"buildType": 1e999, "x"', 1),  # a non-finite number
        lambda d: d.replace(b'"name": "engine-source"', b'"name": "engine-source", "name": "x"', 1),
    ],
)
def test_what_the_strict_decoder_refuses_is_not_read(attack: Any) -> None:
    data = attack(_golden())
    got = _fast(data)
    assert got is None or got == _whole(data)
    assert _whole(data)[0]  # the whole path reports it


@pytest.fixture
def golden_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built rtx4090 set of the sample release (read only)."""
    from flow_support import release_out

    return Path(release_out(tmp_path_factory)) / "rtx4090"


class _Steps:
    def __init__(self) -> None:
        self.seen: list[int] = []

    def step(self, message: str, total: int | None = None) -> None:
        pass

    def advance(self, nbytes: int) -> None:
        self.seen.append(nbytes)


def test_the_statement_is_read_before_the_sboms(monkeypatch: pytest.MonkeyPatch, golden_set: Path) -> None:
    """Its read's transient memory (about twice its bytes) comes before the SBOMs' maps exist."""
    order: list[str] = []
    read_regular, check_spdx_file = strictjson.read_regular, sbom.check_spdx_file

    def read(path: Path, **kwargs: Any) -> bytes:
        order.append((path.name.split(".")[-2:])[0])
        return read_regular(path, **kwargs)

    def spdx(path: Path, **kwargs: Any) -> Any:
        order.append("spdx")
        return check_spdx_file(path, **kwargs)

    monkeypatch.setattr(strictjson, "read_regular", read)
    monkeypatch.setattr(sbom, "check_spdx_file", spdx)
    assert _verify.verify_set(golden_set).ok
    assert order.index("provenance") < order.index("spdx")


def test_an_early_read_error_is_raised_where_the_entry_is_read(
    monkeypatch: pytest.MonkeyPatch, golden_set: Path
) -> None:
    """The entries before the statement are read (and counted) first, as when it was read in order."""
    read_regular = strictjson.read_regular
    failure = InputError(problems=[])

    def read(path: Path, **kwargs: Any) -> bytes:
        if path.name.endswith(".provenance.json"):
            raise failure
        return read_regular(path, **kwargs)

    monkeypatch.setattr(strictjson, "read_regular", read)
    steps = _Steps()
    with pytest.raises(InputError) as raised:
        _verify.verify_set(golden_set, progress=steps)
    assert raised.value is failure
    names = sorted(p.name for p in golden_set.iterdir())
    stem = next(n for n in names if n.endswith(".zip")).removesuffix(".zip")
    before = [
        ".spdx.json",
        ".cdx.json",
        ".config.toml",
        ".profile.json",
        ".model.json",
        ".qualification.json",
    ]
    assert steps.seen[: len(before)] == [(golden_set / (stem + s)).stat().st_size for s in before]
