"""Supersession visible to consumers (issue 33 item 7): the one reader of a supersession record
(:func:`read_supersession`), files:// markers, a final retiring its draft, and the verdict line
and ``--refuse-superseded`` of verify (:class:`LocatedReport`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flow_support import registry_namespace
from http_support import Nginx
from ninfer_release.errors import IntegrityError, PublishError
from ninfer_release.releases._dir_store import DirStore
from ninfer_release.releases._files_store import FilesStore
from ninfer_release.releases._flows import LocatedReport, _not_superseded, verify_location
from ninfer_release.releases._publish import (
    SUPERSESSION_TYPE,
    open_publisher,
    plan_draft_retirement,
    plan_supersession,
    read_supersession,
)
from ninfer_release.releases._verify import VerifyReport
from test_publish import ENGINE, EPOCH, make_set, request_for

OLD, NEW = "v0.7.0-qwen38-4090-beta.1", "v0.7.0-qwen38-4090-beta.2"


def _marker(**annotations: str) -> bytes:
    doc = json.loads(plan_supersession(tag=OLD, by=NEW, epoch=EPOCH, subject=None).manifest)
    doc["annotations"].update(annotations)
    return json.dumps(doc).encode()


def test_the_reader_names_the_successor_of_a_marker() -> None:
    data = plan_supersession(tag=OLD, by=NEW, epoch=EPOCH, subject=None).manifest
    assert read_supersession(data, tag=OLD, source="m") == NEW
    retired = plan_draft_retirement(tag=NEW, epoch=EPOCH)
    assert retired.tag == f"{NEW}.draft.superseded"
    assert read_supersession(retired.manifest, tag=f"{NEW}.draft", source="m") == NEW


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (b"<html>200 with garbage</html>", None),
        (b'{"artifactType": "application/vnd.other"}', "artifactType"),
        (_marker(**{"vnd.omp-ninfer.superseded-by": "?"}), "annotations.vnd.omp-ninfer.superseded-by"),
        (
            _marker(**{"vnd.omp-ninfer.superseded-by": f"{NEW}.draft"}),
            "annotations.vnd.omp-ninfer.superseded-by",
        ),
        (_marker(**{"vnd.omp-ninfer.superseded-tag": "v9.9.9"}), "annotations.vnd.omp-ninfer.superseded-tag"),
        (b" " * (64 << 10) + b"{}", None),
    ],
    ids=["not-json", "other-type", "no-successor", "draft-successor", "other-tag", "too-large"],
)
def test_a_malformed_record_is_an_integrity_failure_naming_it(data: bytes, field: str | None) -> None:
    with pytest.raises(IntegrityError) as caught:
        read_supersession(data, tag=OLD, source="files:///www/x.superseded")
    (problem,) = caught.value.problems
    assert problem.file == "files:///www/x.superseded"
    if field is not None:
        assert problem.field == field
    assert SUPERSESSION_TYPE  # the type the reader asks for


def test_files_store_keeps_markers_beside_the_tags(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    store = FilesStore(tmp_path / "www")
    store.publish(request_for(tmp_path / "set", names, tag=OLD))
    first = store.supersede(OLD, by=NEW, epoch=EPOCH)
    assert first.status == "published"
    marker = tmp_path / "www" / f"{OLD}.superseded"
    assert marker.read_bytes() == plan_supersession(tag=OLD, by=NEW, epoch=EPOCH, subject=None).manifest
    assert store.supersede(OLD, by=NEW, epoch=EPOCH).status == "already_published"
    with pytest.raises(PublishError, match="already recorded as superseded by"):
        store.supersede(OLD, by="v0.7.0-qwen38-4090-beta.3", epoch=EPOCH)
    with pytest.raises(PublishError, match="superseded by"):
        store.publish(request_for(tmp_path / "set", names, tag=OLD))
    dest = tmp_path / "pulled"
    dest.mkdir()
    assert store.pull(OLD, dest).superseded_by == NEW
    marker.write_bytes(b"garbage")
    (tmp_path / "again").mkdir()
    with pytest.raises(IntegrityError):
        store.pull(OLD, tmp_path / "again")
    assert list((tmp_path / "again").iterdir()) == []  # nothing copied


@pytest.mark.parametrize("kind", ["dir", "files"])
def test_publishing_the_final_retires_its_draft(tmp_path: Path, kind: str) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    store = DirStore(tmp_path / "s") if kind == "dir" else FilesStore(tmp_path / "s")
    tag = "v1.0.0-beta.1"
    assert store.publish(request_for(tmp_path / "set", names, tag=tag, draft=True)).retired_draft is None
    final = store.publish(request_for(tmp_path / "set", names, tag=tag))
    assert final.retired_draft == store.url(f"{tag}.draft.superseded")
    again = store.publish(request_for(tmp_path / "set", names, tag=tag))
    assert again.status == "already_published" and again.retired_draft == final.retired_draft
    dest = tmp_path / "d"
    dest.mkdir()
    assert store.pull(f"{tag}.draft", dest).superseded_by == tag
    final_dest = tmp_path / "f"
    final_dest.mkdir()
    assert store.pull(tag, final_dest).superseded_by is None  # the final is no one's superseded tag


def _located(superseded_by: str | None) -> LocatedReport:
    report = VerifyReport(
        directory="x", stem=f"ninfer-{OLD}-windows-x64", checked=("a",), warnings=(), failures=()
    )
    return LocatedReport(
        location=f"dir://s:{OLD}", manifest_digest=None, report=report, superseded_by=superseded_by
    )


def test_the_verdict_names_the_successor_and_refuse_superseded_fails() -> None:
    located = _located(NEW)
    assert f"; superseded by {NEW}; ninfer-{OLD}-windows-x64, 1 checks)" in located.summary()
    assert located.as_dict()["superseded_by"] == NEW
    refused = _not_superseded(located, True)
    assert refused.report.failures == (f"superseded by {NEW}; --refuse-superseded refuses a superseded tag",)
    assert _not_superseded(located, False).report.failures == ()
    plain = _located(None)
    assert "superseded" not in plain.summary() and plain.as_dict()["superseded_by"] is None
    assert _not_superseded(plain, True).report.failures == ()


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[Nginx]:
    """nginx on loopback serving a files:// store at its root (stopped by PID)."""
    server = Nginx.start(tmp_path / "nginx")
    try:
        yield server
    finally:
        server.stop()


def _store_and_ref(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """(store URL to publish to, the reference verify reads ``OLD`` by) for a store ``kind``."""
    if kind == "oci":
        registry: str = request.getfixturevalue("registry")
        repo = registry_namespace(request.getfixturevalue("tmp_path_factory"), "t/supersession")
        return f"oci://{registry}/{repo}", f"oci://{registry}/{repo}:{OLD}"
    store = tmp_path / "store"
    return f"{kind}://{store}", f"{kind}://{store}:{OLD}"


@pytest.mark.parametrize("kind", ["dir", "files", "oci"])
def test_verify_reads_each_store_kinds_record(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The wiring from each store kind's record to the verdict: removing it fails this test (the
    set here is a stand-in, so the verdict is FAILED; what matters is the successor and the line)."""
    store, ref = _store_and_ref(kind, request, tmp_path)
    names = make_set(tmp_path / "set", ENGINE)
    publisher = open_publisher(store)
    publisher.publish(request_for(tmp_path / "set", names, tag=OLD))
    plain = verify_location(ref, refuse_superseded=True)
    assert plain.superseded_by is None
    assert not any("refuse-superseded" in f for f in plain.report.failures)
    publisher.supersede(OLD, by=NEW, epoch=EPOCH)
    located = verify_location(ref, refuse_superseded=True)
    assert located.superseded_by == NEW
    assert f"; superseded by {NEW}; " in located.summary()
    assert f"superseded by {NEW}; --refuse-superseded refuses a superseded tag" in located.report.failures


def test_a_url_reads_the_record_beside_the_set(nginx: Nginx, tmp_path: Path) -> None:
    """``https://…/<tag>/`` (here plain http on loopback) reads ``…/<tag>.superseded``, the file a
    files:// store served as is keeps; absent is none, garbage fails (exit 5). (A full verify by URL
    needs a real set: tests/test_fetch_http.py; this is the record's step of it.)"""
    from ninfer_release.releases._flows import _url_superseded_by
    from ninfer_release.releases._http_fetch import HttpPolicy

    names = make_set(tmp_path / "set", ENGINE)
    store = FilesStore(nginx.root)
    store.publish(request_for(tmp_path / "set", names, tag=OLD))
    base = f"{nginx.http_base}/{OLD}/"
    assert _url_superseded_by(base, OLD, HttpPolicy(retries=0)) is None
    store.supersede(OLD, by=NEW, epoch=EPOCH)
    assert _url_superseded_by(base, OLD, HttpPolicy(retries=0)) == NEW
    (nginx.root / f"{OLD}.superseded").write_bytes(b"<html>ok</html>")
    with pytest.raises(IntegrityError) as caught:
        _url_superseded_by(base, OLD, HttpPolicy(retries=0))
    assert caught.value.problems[0].file == f"{nginx.http_base}/{OLD}.superseded"


def test_the_cli_passes_refuse_superseded(tmp_path: Path) -> None:
    from flow_support import cli

    names = make_set(tmp_path / "set", ENGINE)
    store = DirStore(tmp_path / "store")
    store.publish(request_for(tmp_path / "set", names, tag=OLD))
    store.supersede(OLD, by=NEW, epoch=EPOCH)
    line = f"superseded by {NEW}; --refuse-superseded refuses a superseded tag"
    refused = cli("verify", "--refuse-superseded", f"dir://{store.root}:{OLD}")
    assert refused.code == 5 and f"error: dir://{store.root}:{OLD}: {line}" in refused.err.splitlines()
    assert line not in cli("verify", f"dir://{store.root}:{OLD}").err
