"""Publishing: pure planning (manifest bytes, titles, tags, targets) and the directory store's
crash safety and locking (DESIGN.md §8, C41). Registry-backed behaviour: test_publish_backends.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from ninfer_release.checksums import render_sha256sums
from ninfer_release.errors import ExitCode, InputError, IntegrityError, PublishError
from ninfer_release.hashing import sha256_bytes
from ninfer_release.releases._dir_store import DirStore
from ninfer_release.releases._publish import (
    ANN_REVISION,
    ARTIFACT_TYPE,
    DirTarget,
    OciTarget,
    PublishRequest,
    StorePublisher,
    default_media_type,
    is_prerelease,
    open_publisher,
    parse_manifest,
    parse_target,
    plan_publish,
)

REPO = Path(__file__).resolve().parent.parent
EPOCH = 1700000000  # 2023-11-14T22:13:20Z
COMMIT = "7a25cd72f490183e4113f1e84e68e36d653ddd28"


def make_set(root: Path, files: dict[str, bytes]) -> list[str]:
    """Write ``files`` and a correct GNU ``SHA256SUMS`` into ``root``; return all names."""
    root.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    (root / "SHA256SUMS").write_bytes(render_sha256sums({n: sha256_bytes(d) for n, d in files.items()}))
    return [*files, "SHA256SUMS"]


def request_for(set_dir: Path, names: list[str], tag: str = "v1.0.0-beta.1", **kw: object) -> PublishRequest:
    return PublishRequest(
        set_dir=set_dir,
        tag=tag,
        files=names,
        annotations={ANN_REVISION: COMMIT},
        epoch=EPOCH,
        **kw,  # type: ignore[arg-type]
    )


ENGINE = {"engine-1.0-win64.zip": b"PK\x05\x06" + bytes(18)}


# --- targets, tags, media types -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("oci://127.0.0.1:5000/ninfer/sets", OciTarget(host="127.0.0.1:5000", repository="ninfer/sets")),
        (
            "oci://reg.example.org/omp/ninfer:v0.7.0-qwen38-4090-beta.2",
            OciTarget(host="reg.example.org", repository="omp/ninfer", tag="v0.7.0-qwen38-4090-beta.2"),
        ),
        (
            "oci://localhost:5000/a@sha256:" + "0" * 64,
            OciTarget(host="localhost:5000", repository="a", digest="sha256:" + "0" * 64),
        ),
        ("dir:///srv/store", DirTarget(path=Path("/srv/store"))),
        ("dir:///srv/store:v1.0.0", DirTarget(path=Path("/srv/store"), tag="v1.0.0")),
        (
            "dir://rel/store@sha256:" + "a" * 64,
            DirTarget(path=Path("rel/store"), digest="sha256:" + "a" * 64),
        ),
    ],
)
def test_parse_target(url: str, expected: object) -> None:
    assert parse_target(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "127.0.0.1:5000/repo",  # no scheme
        "https://127.0.0.1/repo",  # wrong scheme
        "oci://127.0.0.1:5000",  # no repo
        "oci:///repo",  # no host
        "oci://127.0.0.1:5000/Repo",  # uppercase repo
        "oci://127.0.0.1:5000/repo:bad tag",
        "oci://127.0.0.1:5000/repo@sha256:XYZ",
        "dir://",
    ],
)
def test_parse_target_refuses_malformed_with_one_line_input_error(url: str) -> None:
    with pytest.raises(InputError) as info:
        parse_target(url)
    assert info.value.exit_code == ExitCode.INPUT
    assert len(info.value.lines) == 1 and url in info.value.lines[0]


def test_target_urls_round_trip() -> None:
    t = parse_target("oci://127.0.0.1:5000/ninfer/sets:v1")
    assert isinstance(t, OciTarget)
    assert t.url(t.reference) == "oci://127.0.0.1:5000/ninfer/sets:v1"
    assert t.url("sha256:" + "1" * 64) == "oci://127.0.0.1:5000/ninfer/sets@sha256:" + "1" * 64


@pytest.mark.parametrize(
    ("tag", "pre"),
    [
        ("v0.7.0-qwen38-4090-beta.2", True),
        ("v0.7.0-qwen38-3090-beta.1", True),
        ("v1.0.0-rc1", True),
        ("v1.0.0-alpha", True),
        ("1.2.3-dev.4", True),
        ("v0.7.0-qwen38-4090", False),
        ("v1.2.3", False),
        ("v1.2.3+build.5", False),
        ("nightly", True),  # not a version at all: never latest
    ],
)
def test_is_prerelease(tag: str, pre: bool) -> None:
    assert is_prerelease(tag) is pre


def test_default_media_types_of_the_eleven_files() -> None:
    stem = "ninfer-v0.7.0-qwen38-4090-beta.2-windows-x64"
    got = {
        suffix: default_media_type(stem + suffix)
        for suffix in (".zip", ".spdx.json", ".cdx.json", ".config.toml", ".profile.json", ".manifest.json")
    }
    assert got == {
        ".zip": "application/zip",
        ".spdx.json": "application/spdx+json",
        ".cdx.json": "application/vnd.cyclonedx+json",
        ".config.toml": "application/toml",
        ".profile.json": "application/json",
        ".manifest.json": "application/json",
    }
    assert default_media_type("SHA256SUMS") == "text/plain"
    assert default_media_type("notes.txt") is None


def test_open_publisher_picks_the_adapter(tmp_path: Path) -> None:
    store = open_publisher(f"dir://{tmp_path}/store")
    assert isinstance(store, DirStore) and store.root == tmp_path / "store"
    oci = open_publisher("oci://127.0.0.1:5000/ninfer/sets:v1")
    assert isinstance(oci, StorePublisher)
    assert oci.url("v1") == "oci://127.0.0.1:5000/ninfer/sets:v1"
    assert getattr(oci, "insecure", None) is True  # plain HTTP only for loopback
    remote = open_publisher("oci://reg.example.org/ninfer/sets")
    assert getattr(remote, "insecure", None) is False
    from ninfer_release.registry import RegistryOptions

    named = RegistryOptions(insecure_hosts=frozenset({"reg.example.org"}))
    assert getattr(open_publisher("oci://reg.example.org/x", options=named), "insecure", None) is True


# --- the plan: exact manifest bytes -------------------------------------------------------------


def test_manifest_exact_fields_sorted_layers_and_epoch_time(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", {"b.json": b"{}\n", "a.zip": b"zip", "c.cdx.json": b"[]\n"})
    plan = plan_publish(request_for(tmp_path / "set", names))
    doc = json.loads(plan.manifest)
    assert plan.manifest == json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()  # canonical
    assert plan.digest == "sha256:" + sha256_bytes(plan.manifest)
    assert doc["artifactType"] == ARTIFACT_TYPE
    assert doc["config"] == {
        "mediaType": ARTIFACT_TYPE,
        "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
        "size": 2,
    }
    assert [(x["annotations"]["org.opencontainers.image.title"], x["mediaType"]) for x in doc["layers"]] == [
        ("SHA256SUMS", "text/plain"),
        ("a.zip", "application/zip"),
        ("b.json", "application/json"),
        ("c.cdx.json", "application/vnd.cyclonedx+json"),
    ]
    sums = (tmp_path / "set" / "SHA256SUMS").read_bytes()
    assert doc["annotations"] == {
        "org.opencontainers.image.created": "2023-11-14T22:13:20Z",
        "org.opencontainers.image.revision": COMMIT,
        "vnd.omp-ninfer.component-tag": "v1.0.0-beta.1",
        "vnd.omp-ninfer.sha256sums": "sha256:" + sha256_bytes(sums),
    }
    assert doc["layers"][1] == {
        "mediaType": "application/zip",
        "digest": "sha256:" + sha256_bytes(b"zip"),
        "size": 3,
        "annotations": {"org.opencontainers.image.title": "a.zip"},
    }


def test_c41_titles_are_bare_names_and_manifest_identical_from_two_temp_dirs() -> None:
    """C41: publish /tmp/tmp.XXX/engine-1.0-win64.zip + SHA256SUMS as a prerelease: titles are the
    bare names, and the manifest bytes do not depend on the temp directory."""
    plans = []
    for _ in range(2):
        with tempfile.TemporaryDirectory(prefix="tmp.") as d:
            names = make_set(Path(d), ENGINE)
            plans.append(plan_publish(request_for(Path(d), names, tag="v1.0.0-beta.1")))
    a, b = plans
    assert a.manifest == b.manifest and a.digest == b.digest
    titles = [
        layer["annotations"]["org.opencontainers.image.title"] for layer in json.loads(a.manifest)["layers"]
    ]
    assert titles == ["SHA256SUMS", "engine-1.0-win64.zip"]
    assert b"/tmp" not in a.manifest and b"tmp." not in a.manifest


def test_plan_reports_every_request_problem_at_once(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", {"x.zip": b"x"})
    (tmp_path / "set" / "notes.txt").write_bytes(b"n")
    bad = PublishRequest(
        set_dir=tmp_path / "set",
        tag="latest",
        files=["x.zip", "../escape.zip", "notes.txt", "x.zip"],
        annotations={"vnd.omp-ninfer.sha256sums": "sha256:forged"},
        epoch=EPOCH,
    )
    with pytest.raises(InputError) as info:
        plan_publish(bad)
    text = "\n".join(info.value.lines)
    assert "tag: 'latest' is reserved" in text
    assert "SHA256SUMS is not among the files" in text
    assert "'x.zip' is listed twice" in text
    assert "'../escape.zip' is not a bare file name" in text
    assert "notes.txt: media_types: no media type known" in text
    assert "annotations.vnd.omp-ninfer.sha256sums: reserved" in text
    assert info.value.exit_code == ExitCode.INPUT
    del names


def test_plan_refuses_a_set_that_contradicts_its_sha256sums(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", {"a.zip": b"aaa", "b.json": b"{}\n"})
    (tmp_path / "set" / "a.zip").write_bytes(b"aab")
    with pytest.raises(IntegrityError) as info:
        plan_publish(request_for(tmp_path / "set", names))
    assert len(info.value.lines) == 1
    assert "a.zip: says " + sha256_bytes(b"aaa") + ", file is " + sha256_bytes(b"aab") in info.value.lines[0]


def test_plan_refuses_noncanonical_sha256sums(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", {"a.zip": b"aaa"})
    (tmp_path / "set" / "SHA256SUMS").write_bytes(f"{sha256_bytes(b'aaa').upper()} *a.zip\r\n".encode())
    with pytest.raises(IntegrityError):
        plan_publish(request_for(tmp_path / "set", names))


def test_move_latest_refused_for_prerelease_and_draft(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    with pytest.raises(PublishError, match="prerelease is never tagged latest") as info:
        plan_publish(request_for(tmp_path / "set", names, tag="v0.7.0-qwen38-4090-beta.2", move_latest=True))
    assert info.value.exit_code == ExitCode.PUBLISH
    with pytest.raises(PublishError, match="a draft is never tagged latest"):
        plan_publish(request_for(tmp_path / "set", names, tag="v1.0.0", move_latest=True, draft=True))


@pytest.mark.parametrize(
    "title", ["../SHA256SUMS", "/etc/passwd", "sub/file.zip", "..", "", "C:evil.zip", "a\\b.zip", ".hidden"]
)
def test_parse_manifest_refuses_titles_that_are_not_bare_names(title: str) -> None:
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": ARTIFACT_TYPE,
        "config": {"mediaType": ARTIFACT_TYPE, "digest": "sha256:" + "0" * 64, "size": 2},
        "layers": [
            {
                "mediaType": "application/zip",
                "digest": "sha256:" + "1" * 64,
                "size": 1,
                "annotations": {"org.opencontainers.image.title": title},
            }
        ],
    }
    with pytest.raises(IntegrityError, match="not a bare file name"):
        parse_manifest(json.dumps(manifest).encode(), ref="oci://h/r:t")


def test_parse_manifest_refuses_other_artifact_types() -> None:
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": "sha256:" + "0" * 64,
            "size": 2,
        },
        "layers": [],
    }
    with pytest.raises(IntegrityError, match=re.escape("is not application/vnd.omp-ninfer.asset-set.v1")):
        parse_manifest(json.dumps(manifest).encode(), ref="dir:///s:t")


# --- directory store specifics ------------------------------------------------------------------


def test_dir_store_is_an_oci_layout_readable_by_skopeo(tmp_path: Path) -> None:
    from conftest import need_tool

    skopeo = need_tool("skopeo")
    names = make_set(tmp_path / "set", ENGINE)
    store = DirStore(tmp_path / "store")
    result = store.publish(request_for(tmp_path / "set", names))
    assert json.loads((tmp_path / "store" / "oci-layout").read_bytes()) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads((tmp_path / "store" / "index.json").read_bytes())
    assert index["manifests"] == [
        {
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "artifactType": ARTIFACT_TYPE,
            "digest": result.manifest_digest,
            "size": len(plan_publish(request_for(tmp_path / "set", names)).manifest),
            "annotations": {"org.opencontainers.image.ref.name": "v1.0.0-beta.1"},
        }
    ]
    raw = subprocess.run(
        [skopeo, "inspect", "--raw", f"oci:{tmp_path / 'store'}:v1.0.0-beta.1"],
        capture_output=True,
        check=True,
    ).stdout
    assert "sha256:" + sha256_bytes(raw) == result.manifest_digest
    blobs = sorted(p.name for p in (tmp_path / "store" / "blobs" / "sha256").iterdir())
    assert len(blobs) == 4  # 2 files + config + manifest
    assert not (tmp_path / "store" / ".ninfer-tmp").exists()


def test_dir_store_refuses_a_directory_that_is_not_a_layout(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("mine")
    with pytest.raises(PublishError, match="not an OCI image layout"):
        DirStore(tmp_path / "home").publish(request_for(tmp_path / "set", names))
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["notes.txt"]


def test_dir_store_pull_refuses_a_tampered_blob_and_leaves_no_file(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    store = DirStore(tmp_path / "store")
    store.publish(request_for(tmp_path / "set", names))
    blob = tmp_path / "store" / "blobs" / "sha256" / sha256_bytes(ENGINE["engine-1.0-win64.zip"])
    blob.write_bytes(b"PK\x05\x07" + bytes(18))  # same size, one byte changed
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(IntegrityError, match=r"engine-1.0-win64.zip: blob is 22 bytes / sha256:"):
        store.pull("v1.0.0-beta.1", dest)
    assert sorted(p.name for p in dest.iterdir()) == ["SHA256SUMS"]


_CHILD = textwrap.dedent(
    """
    import json, os, signal, sys
    from pathlib import Path
    from ninfer_release.errors import PublishError
    from ninfer_release.releases._dir_store import DirStore
    from ninfer_release.releases._publish import PublishRequest

    store_dir, set_dir, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    names = sorted(p.name for p in Path(set_dir).iterdir())
    if mode == "kill-before-index":
        DirStore._write_index = lambda self, data: os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "kill-after-first-blob":
        original = DirStore._put_blob
        def put_then_die(self, blob):
            original(self, blob)
            os.kill(os.getpid(), signal.SIGKILL)
        DirStore._put_blob = put_then_die
    elif mode == "wait":
        sys.stdin.readline()  # released by the parent so both start together
    req = PublishRequest(set_dir=Path(set_dir), tag="v1.0.0-beta.1", files=names, epoch=1700000000)
    try:
        r = DirStore(Path(store_dir)).publish(req)
        print(json.dumps({"status": r.status, "digest": r.manifest_digest}))
    except PublishError as exc:
        print(json.dumps({"error": str(exc), "code": int(exc.exit_code)}))
    """
)


@pytest.mark.parametrize("mode", ["kill-before-index", "kill-after-first-blob"])
def test_dir_store_killed_publish_leaves_tag_absent_then_completes(tmp_path: Path, mode: str) -> None:
    """A publish killed (SIGKILL) between blob writes and the index update leaves the tag absent,
    the earlier tags intact, and the next publish completes (the flock dies with the process)."""
    store_dir = tmp_path / "store"
    first = make_set(tmp_path / "first", {"other.zip": b"other"})
    store = DirStore(store_dir)
    store.publish(request_for(tmp_path / "first", first, tag="v0.9.0"))
    index_before = (store_dir / "index.json").read_bytes()
    make_set(tmp_path / "set", ENGINE)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(store_dir), str(tmp_path / "set"), mode],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr
    assert (store_dir / "index.json").read_bytes() == index_before
    assert store.resolve("v1.0.0-beta.1") is None
    assert store.resolve("v0.9.0") is not None
    result = store.publish(
        request_for(tmp_path / "set", sorted(p.name for p in (tmp_path / "set").iterdir()))
    )
    assert result.status == "published"
    assert not (store_dir / ".ninfer-tmp").exists()


def test_dir_store_concurrent_processes_exactly_one_wins(tmp_path: Path) -> None:
    """Two processes publish different bytes to one tag at once: the flock serialises them, one
    publishes, the other is refused naming both digests (exit 7)."""
    make_set(tmp_path / "a", {"engine.zip": b"A"})
    make_set(tmp_path / "b", {"engine.zip": b"B"})
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(tmp_path / "store"), str(tmp_path / s), "wait"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for s in ("a", "b")
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(b"go\n")
        p.stdin.flush()
    outs = [json.loads(p.communicate()[0]) for p in procs]
    winners = [o for o in outs if o.get("status") == "published"]
    losers = [o for o in outs if "error" in o]
    assert len(winners) == 1 and len(losers) == 1
    assert losers[0]["code"] == 7
    assert winners[0]["digest"] in losers[0]["error"] and "already points to" in losers[0]["error"]
    assert DirStore(tmp_path / "store").resolve("v1.0.0-beta.1") == winners[0]["digest"]


def test_dir_store_concurrent_threads_exactly_one_wins(tmp_path: Path) -> None:
    names_a = make_set(tmp_path / "a", {"engine.zip": b"A" * 4096})
    names_b = make_set(tmp_path / "b", {"engine.zip": b"B" * 4096})
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def run(set_dir: Path, names: list[str]) -> None:
        barrier.wait()
        try:
            outcomes.append(DirStore(tmp_path / "store").publish(request_for(set_dir, names)))
        except PublishError as exc:
            outcomes.append(exc)

    threads = [
        threading.Thread(target=run, args=(tmp_path / "a", names_a)),
        threading.Thread(target=run, args=(tmp_path / "b", names_b)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [o for o in outcomes if isinstance(o, PublishError)]
    published = [o for o in outcomes if not isinstance(o, PublishError)]
    assert len(errors) == 1 and len(published) == 1


def test_pull_refuses_to_overwrite_existing_files(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    store = DirStore(tmp_path / "store")
    store.publish(request_for(tmp_path / "set", names))
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "SHA256SUMS").write_bytes(b"mine")
    with pytest.raises(InputError, match="already exists"):
        store.pull("v1.0.0-beta.1", dest)
    assert (dest / "SHA256SUMS").read_bytes() == b"mine"


def test_pull_of_missing_tag_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        DirStore(tmp_path / "nowhere").pull("v1.0.0", tmp_path)
    assert not (tmp_path / "nowhere").exists()


def test_environment_is_not_consulted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest does not change with SOURCE_DATE_EPOCH, TZ or the working directory: the epoch
    is a request field (the caller resolves it once)."""
    names = make_set(tmp_path / "set", ENGINE)
    before = plan_publish(request_for(tmp_path / "set", names)).manifest
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1")
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    monkeypatch.chdir(tmp_path / "set")
    assert plan_publish(request_for(tmp_path / "set", names)).manifest == before
    assert os.getcwd() == str(tmp_path / "set")


def test_refs_are_tags_or_digests_and_result_ref_parses_back(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    store = DirStore(tmp_path / "store")
    result = store.publish(request_for(tmp_path / "set", names))
    assert parse_target(result.ref) == DirTarget(path=tmp_path / "store", tag="v1.0.0-beta.1")
    for bad in ("../../etc", "v1/../x", "sha256:abc", ""):
        with pytest.raises(InputError, match="is not a tag or sha256 digest"):
            store.resolve(bad)
        with pytest.raises(InputError, match="is not a tag or sha256 digest"):
            store.pull(bad, tmp_path)


def test_tag_leaves_room_for_the_superseded_suffix(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    assert len(plan_publish(request_for(tmp_path / "set", names, tag="v" + "1" * 110)).tag) == 111
    with pytest.raises(InputError, match="longer than 111"):
        plan_publish(request_for(tmp_path / "set", names, tag="v" + "1" * 111))
    with pytest.raises(InputError, match="not one string"):
        plan_publish(PublishRequest(set_dir=tmp_path / "set", tag="v1.0.0", files="SHA256SUMS", epoch=0))
