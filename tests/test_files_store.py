"""The files store (``files://DIR``): ``DIR/<tag>/<name>`` exactly as ``publication_base_url``
promises, with the rules of the other stores (issue 12): immutable tags, drafts, a tag complete or
absent, concurrent publishers serialised by the shared flock.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from ninfer_release.errors import ExitCode, InputError, IntegrityError, PublishError
from ninfer_release.hashing import sha256_file
from ninfer_release.releases._files_store import FilesStore
from ninfer_release.releases._publish import Blob, FilesTarget, open_publisher, parse_target
from test_publish import ENGINE, make_set, request_for

TAG = "v1.0.0-beta.1"


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".ninfer")
    }


def test_parse_and_open_files_target(tmp_path: Path) -> None:
    assert parse_target("files:///srv/www") == FilesTarget(path=Path("/srv/www"))
    assert parse_target("files:///srv/www:v1.0.0") == FilesTarget(path=Path("/srv/www"), tag="v1.0.0")
    assert isinstance(open_publisher(f"files://{tmp_path}"), FilesStore)
    with pytest.raises(InputError):
        parse_target("files:///srv/www@sha256:" + "0" * 64)


def test_layout_is_tag_slash_name_with_the_exact_bytes(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", {**ENGINE, "notes.json": b"{}\n"})
    result = FilesStore(tmp_path / "www").publish(request_for(tmp_path / "set", names))
    assert result.status == "published"
    assert result.ref == f"files://{tmp_path / 'www'}/{TAG}"
    assert result.manifest_digest == "sha256:" + sha256_file(tmp_path / "set" / "SHA256SUMS")
    assert _tree(tmp_path / "www") == {f"{TAG}/{n}": (tmp_path / "set" / n).read_bytes() for n in names}
    assert not (tmp_path / "www" / ".ninfer-tmp").exists()
    # a static web server serves the files as they are: world-readable, no mode from the umask
    assert {oct((tmp_path / "www" / TAG / n).stat().st_mode & 0o777) for n in names} == {"0o644"}
    # sha256sum -c in the published directory passes (an independent checker)
    proc = subprocess.run(
        ["sha256sum", "--strict", "-c", "SHA256SUMS"], cwd=tmp_path / "www" / TAG, capture_output=True
    )
    assert proc.returncode == 0, proc.stdout


def test_same_bytes_again_is_already_published(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    store = FilesStore(tmp_path / "www")
    store.publish(request_for(tmp_path / "set", names))
    again = store.publish(request_for(tmp_path / "set", names))
    assert again.status == "already_published"


def test_other_bytes_are_refused_exit_7_naming_tag_and_file(tmp_path: Path) -> None:
    store = FilesStore(tmp_path / "www")
    store.publish(request_for(tmp_path / "a", make_set(tmp_path / "a", {"engine.zip": b"A"})))
    before = _tree(tmp_path / "www")
    with pytest.raises(PublishError) as info:
        store.publish(request_for(tmp_path / "b", make_set(tmp_path / "b", {"engine.zip": b"B"})))
    assert info.value.exit_code == ExitCode.PUBLISH
    assert TAG in str(info.value) and "engine.zip is" in str(info.value) and "immutable" in str(info.value)
    assert _tree(tmp_path / "www") == before


def test_an_extra_file_under_the_tag_is_other_bytes(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    store = FilesStore(tmp_path / "www")
    store.publish(request_for(tmp_path / "set", names))
    (tmp_path / "www" / TAG / "extra.txt").write_bytes(b"x")
    with pytest.raises(PublishError, match=r"extra\.txt"):
        store.publish(request_for(tmp_path / "set", names))


def test_draft_goes_to_tag_draft_and_is_replaceable(tmp_path: Path) -> None:
    store = FilesStore(tmp_path / "www")
    a = make_set(tmp_path / "a", {"engine.zip": b"A"})
    b = make_set(tmp_path / "b", {"engine.zip": b"B"})
    r1 = store.publish(request_for(tmp_path / "a", a, draft=True))
    assert r1.ref.endswith(f"/{TAG}.draft") and not (tmp_path / "www" / TAG).exists()
    assert store.publish(request_for(tmp_path / "a", a, draft=True)).status == "already_published"
    r2 = store.publish(request_for(tmp_path / "b", b, draft=True))
    assert r2.status == "published"
    assert (tmp_path / "www" / f"{TAG}.draft" / "engine.zip").read_bytes() == b"B"
    # promoting: the same set without --draft becomes the immutable tag
    assert store.publish(request_for(tmp_path / "b", b)).status == "published"
    assert store.publish(request_for(tmp_path / "b", b, draft=True)).status == "already_published"
    # once the tag exists, a draft of other bytes is refused like the tag itself (as dir:// / oci://)
    with pytest.raises(PublishError, match="immutable"):
        store.publish(request_for(tmp_path / "a", a, draft=True))


def test_latest_is_refused(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    store = FilesStore(tmp_path / "www")
    with pytest.raises(PublishError, match="latest"):
        store.publish(request_for(tmp_path / "set", names, tag="v1.0.0", move_latest=True))
    assert not (tmp_path / "www" / "v1.0.0").exists()


def test_a_file_changed_after_planning_leaves_no_tag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    import ninfer_release.releases._files_store as fs
    from ninfer_release.releases._store_io import write_verified

    def tamper_then_write(blob: Blob, dest: Path) -> None:
        if blob.path is not None and blob.title == "engine-1.0-win64.zip":
            blob.path.write_bytes(b"changed")
        write_verified(blob, dest)

    monkeypatch.setattr(fs, "write_verified", tamper_then_write)
    with pytest.raises(IntegrityError, match="changed since it was hashed"):
        FilesStore(tmp_path / "www").publish(request_for(tmp_path / "set", names))
    # nothing partial: the staging directory goes with the refusal (issue 9)
    assert sorted(p.name for p in (tmp_path / "www").iterdir()) == [
        ".ninfer-files-store",
        ".ninfer-publish.lock",
    ]


_CHILD = textwrap.dedent(
    """
    import json, os, signal, sys
    from pathlib import Path
    from ninfer_release.errors import PublishError
    import ninfer_release.releases._files_store as fs
    from ninfer_release.releases._publish import PublishRequest

    store_dir, set_dir, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    names = sorted(p.name for p in Path(set_dir).iterdir())
    if mode == "kill-before-rename":
        fs.fsync_path = lambda path: os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "kill-after-first-file":
        original = fs.write_verified
        def write_then_die(blob, dest):
            original(blob, dest)
            os.kill(os.getpid(), signal.SIGKILL)
        fs.write_verified = write_then_die
    elif mode == "wait":
        sys.stdin.readline()  # released by the parent so both start together
    req = PublishRequest(set_dir=Path(set_dir), tag="v1.0.0-beta.1", files=names, epoch=1700000000)
    try:
        r = fs.FilesStore(Path(store_dir)).publish(req)
        print(json.dumps({"status": r.status, "digest": r.manifest_digest}))
    except PublishError as exc:
        print(json.dumps({"error": str(exc), "code": int(exc.exit_code)}))
    """
)


@pytest.mark.parametrize("mode", ["kill-before-rename", "kill-after-first-file"])
def test_killed_publish_leaves_the_tag_absent_then_completes(tmp_path: Path, mode: str) -> None:
    store = FilesStore(tmp_path / "www")
    store.publish(
        request_for(tmp_path / "first", make_set(tmp_path / "first", {"o.zip": b"o"}), tag="v0.9.0")
    )
    make_set(tmp_path / "set", ENGINE)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "www"), str(tmp_path / "set"), mode],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr
    assert not (tmp_path / "www" / TAG).exists()
    assert store.resolve("v0.9.0") is not None
    names = sorted(p.name for p in (tmp_path / "set").iterdir())
    assert store.publish(request_for(tmp_path / "set", names)).status == "published"
    assert not (tmp_path / "www" / ".ninfer-tmp").exists()


def test_concurrent_processes_exactly_one_wins(tmp_path: Path) -> None:
    make_set(tmp_path / "a", {"engine.zip": b"A" * 4096})
    make_set(tmp_path / "b", {"engine.zip": b"B" * 4096})
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(tmp_path / "www"), str(tmp_path / s), "wait"],
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
    assert sorted("status" in o for o in outs) == [False, True]
    loser = next(o for o in outs if "error" in o)
    assert loser["code"] == 7 and "immutable" in loser["error"]
    winner = next(o for o in outs if "status" in o)
    assert FilesStore(tmp_path / "www").resolve(TAG) == winner["digest"]


def test_concurrent_threads_exactly_one_wins(tmp_path: Path) -> None:
    sets = {s: make_set(tmp_path / s, {"engine.zip": s.encode() * 4096}) for s in ("a", "b")}
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def run(s: str) -> None:
        barrier.wait()
        try:
            outcomes.append(FilesStore(tmp_path / "www").publish(request_for(tmp_path / s, sets[s])))
        except PublishError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in sets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(isinstance(o, PublishError) for o in outcomes) == [False, True]


def test_pull_copies_verified_files_and_refuses_tampered_ones(tmp_path: Path) -> None:
    names = make_set(tmp_path / "set", ENGINE)
    store = FilesStore(tmp_path / "www")
    store.publish(request_for(tmp_path / "set", names))
    (tmp_path / "ok").mkdir()
    pulled = store.pull(TAG, tmp_path / "ok")
    assert sorted(f.name for f in pulled.files) == sorted(names)
    (tmp_path / "www" / TAG / "engine-1.0-win64.zip").write_bytes(b"tampered")
    (tmp_path / "bad").mkdir()
    with pytest.raises(IntegrityError, match=r"engine-1\.0-win64\.zip"):
        store.pull(TAG, tmp_path / "bad")
    assert not (tmp_path / "bad" / "engine-1.0-win64.zip").exists()
    with pytest.raises(InputError, match="not found"):
        store.pull("v9.9.9", tmp_path / "bad")


def test_cli_publish_both_native_sets_to_files_then_verify(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``publish SET --to files://DIR`` lays both sealed sets out as ``DIR/<tag>/<name>`` (the
    URLs of ``publication_base_url``); ``verify DIR/<tag>`` and ``verify files://DIR:<tag>`` pass."""
    from flow_support import NATIVE_LANES, RELEASE, TAGS, cli, qualified_out, set_names

    qual = qualified_out(tmp_path_factory)
    www = tmp_path / "www"
    for lane in NATIVE_LANES:
        res = cli("--json", "publish", qual / lane, "--to", f"files://{www}", "--release", RELEASE)
        assert res.code == 0, res.text
        assert json.loads(res.out)["status"] == "published"
        assert sorted(p.name for p in (www / TAGS[lane]).iterdir()) == set_names(lane)
        assert cli("verify", www / TAGS[lane]).code == 0
        assert cli("verify", f"files://{www}:{TAGS[lane]}").code == 0
        again = cli("--json", "publish", qual / lane, "--to", f"files://{www}")
        assert again.code == 0 and json.loads(again.out)["status"] == "already_published"
    assert sorted(p.name for p in www.iterdir() if not p.name.startswith(".")) == sorted(
        TAGS[lane] for lane in NATIVE_LANES
    )
    # the rtx3090 set published under the rtx4090 tag's directory name is refused (its own tag only)
    res = cli("publish", qual / "rtx3090", "--to", f"files://{www}:{TAGS['rtx4090']}")
    assert res.code == 7, res.text
