"""Publishing to a registry verifies the set while its blobs upload (issue 11, the bench goal), and
the gate holds: the manifest is put, and any result returned (``already_published`` too), only
once the verification passed and established exactly the digests the upload used.

Against the real registry the other publish tests use (``registry`` fixture). Each of the three
gate calls in :meth:`StorePublisher.publish`, the digest comparison of the gate and the precedence
of the verification's failures is what one test here fails without.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from flow_support import TAGS, cli, flip_byte, qualified_out, registry_namespace, reseal, stem
from ninfer_release.errors import PublishError
from ninfer_release.registry import RegistryClient
from ninfer_release.releases import _flows
from ninfer_release.releases._files_store import FilesStore
from ninfer_release.releases._oci_publisher import OciPublisher
from ninfer_release.releases._publish import DRAFT_SUFFIX, PublishRequest
from ninfer_release.releases._verify import verify_set

LANE = "rtx4090"
TAG = TAGS[LANE]


@pytest.fixture
def sealed(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path / LANE
    shutil.copytree(qualified_out(tmp_path_factory) / LANE, target)
    return target


@pytest.fixture
def repo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    digest = hashlib.sha256(request.node.name.encode()).hexdigest()[:12]  # one repository per test
    return registry_namespace(tmp_path_factory, f"overlap-{digest}")


def _manifest(registry: str, repo: str, ref: str) -> bytes | None:
    found = RegistryClient(registry).get_manifest(repo, ref)
    return None if found is None else found.data


def _no_worker_left() -> bool:
    return not any(t.name == "publish-verify" and t.is_alive() for t in threading.enumerate())


def test_the_claims_read_first_are_what_the_verification_establishes(sealed: Path) -> None:
    assert _flows._claimed(sealed) == _flows._verified(sealed)


def test_a_set_whose_claims_cannot_be_read_is_verified_first(
    sealed: Path, registry: str, repo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (sealed / "SHA256SUMS").unlink()
    assert _flows._claimed(sealed) is None

    def no_overlap(*args: object) -> None:
        raise AssertionError("a set whose claims cannot be read is not verified on a worker")

    monkeypatch.setattr(_flows, "_Verification", no_overlap)
    with pytest.raises(PublishError) as refused:
        _flows.publish_set(sealed, f"oci://{registry}/{repo}")
    report = verify_set(sealed)
    assert [p.message for p in refused.value.problems] == [f"does not verify: {f}" for f in report.failures]


@pytest.mark.parametrize("reseal_it", [False, True], ids=["sums-unchanged", "resealed"])
def test_a_tampered_set_exits_7_and_the_registry_holds_no_tag(
    sealed: Path, registry: str, repo: str, reseal_it: bool
) -> None:
    """A changed zip: with SHA256SUMS unchanged the registry refuses the blob (or the gate does);
    resealed, every blob uploads (its digest is right) and only the gate keeps the manifest out,
    the uploaded blobs staying unreferenced (docs/publishing.md)."""
    zip_path = sealed / f"{stem(LANE)}.zip"
    flip_byte(zip_path)
    if reseal_it:
        reseal(sealed)
    res = cli("publish", sealed, "--to", f"oci://{registry}/{repo}")
    assert res.code == 7, res.text
    assert "does not verify" in res.err
    assert _manifest(registry, repo, TAG) is None
    if reseal_it:
        claimed = _flows._claimed(sealed)
        assert claimed is not None
        zip_digest = "sha256:" + claimed.digests[zip_path.name].sha256
        assert RegistryClient(registry).has_blob(repo, zip_digest)  # uploaded, referenced by nothing


@pytest.mark.parametrize("draft", [False, True], ids=["tag", "draft"])
def test_a_tampered_set_claiming_what_the_tag_holds_is_refused_not_already_published(
    sealed: Path, registry: str, repo: str, tmp_path: Path, draft: bool
) -> None:
    flags = ["--draft"] if draft else []
    first = cli("--json", "publish", sealed, "--to", f"oci://{registry}/{repo}", *flags)
    assert first.code == 0, first.text
    ref = TAG + DRAFT_SUFFIX if draft else TAG
    held = _manifest(registry, repo, ref)
    assert held is not None
    tampered = tmp_path / "tampered" / LANE
    shutil.copytree(sealed, tampered)
    flip_byte(tampered / f"{stem(LANE)}.cdx.json")  # SHA256SUMS still claims the published digests
    res = cli("--json", "publish", tampered, "--to", f"oci://{registry}/{repo}", *flags)
    assert res.code == 7, res.text
    assert "does not verify" in res.text
    assert "already_published" not in res.out
    assert _manifest(registry, repo, ref) == held


def test_the_verification_failure_comes_before_a_refusal_found_meanwhile(
    sealed: Path, registry: str, repo: str, tmp_path: Path
) -> None:
    """What verifying first reported (the set's own failures) is what is reported, not the tag
    conflict the main thread found while the verification ran."""
    assert cli("publish", sealed, "--to", f"oci://{registry}/{repo}").code == 0
    tampered = tmp_path / "tampered" / LANE
    shutil.copytree(sealed, tampered)
    flip_byte(tampered / f"{stem(LANE)}.zip")
    reseal(tampered)  # other SHA256SUMS: another manifest digest for the same tag
    res = cli("publish", tampered, "--to", f"oci://{registry}/{repo}")
    assert res.code == 7, res.text
    assert "does not verify" in res.err
    assert "already points to" not in res.err


def test_the_gate_refuses_a_verification_of_other_sha256sums(
    sealed: Path, registry: str, repo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The set changed between the claims and the verification: it passed, but of other bytes."""
    from dataclasses import replace

    real = verify_set

    def verified_other_bytes(set_dir: Path, **kwargs: Any) -> Any:
        return replace(real(set_dir, **kwargs), sums_sha256="0" * 64)

    monkeypatch.setattr(_flows, "verify_set", verified_other_bytes)
    with pytest.raises(PublishError, match=r"does not verify: SHA256SUMS: changed while publishing"):
        _flows.publish_set(sealed, f"oci://{registry}/{repo}")
    assert _manifest(registry, repo, TAG) is None


def test_a_file_swapped_after_the_verification_is_refused_by_the_registry(
    sealed: Path, registry: str, repo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client does not hash what it uploads: the registry's ``PUT ?digest=`` refuses bytes that
    changed after the verification (here: once it passed, before any blob goes), nothing is tagged."""
    from ninfer_release.errors import IntegrityError

    swapped = threading.Event()
    real_verify = verify_set
    real_put = OciPublisher._put_blob

    def verify_then_swap(set_dir: Path, **kwargs: Any) -> Any:
        report = real_verify(set_dir, **kwargs)
        flip_byte(set_dir / f"{stem(LANE)}.config.toml")  # same size, other bytes
        swapped.set()
        return report

    def put_after_the_swap(self: OciPublisher, blob: Any, **kwargs: Any) -> None:
        assert swapped.wait(120)
        real_put(self, blob, **kwargs)

    monkeypatch.setattr(_flows, "verify_set", verify_then_swap)
    monkeypatch.setattr(OciPublisher, "_put_blob", put_after_the_swap)
    with pytest.raises(IntegrityError, match=r"registry says the bytes are not sha256:.*changed while"):
        _flows.publish_set(sealed, f"oci://{registry}/{repo}")
    assert _manifest(registry, repo, TAG) is None
    assert _no_worker_left()


@pytest.mark.parametrize("raised", [KeyboardInterrupt, PublishError], ids=["ctrl-c", "error"])
def test_an_interrupt_or_error_while_uploading_never_leaves_the_worker_running(
    sealed: Path, registry: str, repo: str, monkeypatch: pytest.MonkeyPatch, raised: type[BaseException]
) -> None:
    finished = threading.Event()
    real_verify = verify_set

    def slow_verify(set_dir: Path, **kwargs: Any) -> Any:
        time.sleep(0.5)  # still verifying when the upload fails
        report = real_verify(set_dir, **kwargs)
        finished.set()
        return report

    def failing_put(self: OciPublisher, blob: Any, **kwargs: Any) -> None:
        raise raised("upload failed") if raised is PublishError else raised()

    monkeypatch.setattr(_flows, "verify_set", slow_verify)
    monkeypatch.setattr(OciPublisher, "_put_blob", failing_put)
    with pytest.raises(raised):
        _flows.publish_set(sealed, f"oci://{registry}/{repo}")
    assert finished.is_set()  # joined, not abandoned
    assert _no_worker_left()
    assert _manifest(registry, repo, TAG) is None


def test_a_files_store_passes_the_gate_before_anything(sealed: Path, tmp_path: Path) -> None:
    def refuse() -> None:
        raise PublishError("the gate refused")

    names = sorted(p.name for p in sealed.iterdir())
    request = PublishRequest(set_dir=sealed, tag=TAG, files=names, epoch=0, gate=refuse)
    with pytest.raises(PublishError, match="the gate refused"):
        FilesStore(tmp_path / "files").publish(request)
    assert not (tmp_path / "files" / TAG).exists()


def test_the_verification_thread_yields_the_cpu_to_the_upload() -> None:
    """The publish verification runs at a lower priority (Linux per-thread niceness) so the upload
    and the registry go first on busy cores; the main thread's priority is unchanged."""
    import os
    import threading

    from ninfer_release.releases import _flows

    main_before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: list[int] = []

    def worker() -> None:
        tid = threading.get_native_id()
        before = os.getpriority(os.PRIO_PROCESS, tid)
        _flows._yield_cpu_to_the_upload()
        seen.append(os.getpriority(os.PRIO_PROCESS, tid) - before)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [min(_flows._VERIFY_NICENESS, 19 - main_before)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main_before


def test_the_small_blobs_upload_beside_the_largest_and_report_after_it(
    sealed: Path, registry: str, repo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zip (the largest blob) goes on the calling thread while the other blobs upload on a
    helper thread: here the zip's upload waits until a small one has been stored. Their progress
    steps are reported after the zip's, each with its own bytes."""
    zip_name = f"{stem(LANE)}.zip"
    small_done = threading.Event()
    threads: dict[str, str] = {}
    real_put = OciPublisher._put_blob

    def put(self: OciPublisher, blob: Any, **kwargs: Any) -> None:
        threads[blob.title or "config"] = threading.current_thread().name
        if blob.title == zip_name:
            assert small_done.wait(60), "no small blob was uploaded while the zip was"
        real_put(self, blob, **kwargs)
        if blob.title != zip_name:
            small_done.set()

    steps: list[tuple[str, int]] = []

    class Steps:
        def step(self, message: str, total: int | None = None) -> None:
            steps.append((message, 0))

        def advance(self, nbytes: int) -> None:
            steps[-1] = (steps[-1][0], steps[-1][1] + nbytes)

    monkeypatch.setattr(OciPublisher, "_put_blob", put)
    result = _flows.publish_set(sealed, f"oci://{registry}/{repo}", draft=True, transfer=Steps())
    assert result.status == "published"
    assert threads.pop(zip_name) == threading.current_thread().name
    assert set(threads.values()) == {"publish-blobs"} and len(threads) == 11  # 10 files + config
    assert steps[0] == (zip_name, (sealed / zip_name).stat().st_size)
    sizes = {p.name: p.stat().st_size for p in sealed.iterdir()}
    assert {n: b for n, b in steps[1:] if n in sizes} == {n: s for n, s in sizes.items() if n != zip_name}
    assert _no_uploader_left()


def _no_uploader_left() -> bool:
    return not any(t.name == "publish-blobs" and t.is_alive() for t in threading.enumerate())


def test_a_small_file_changed_after_the_verification_is_refused_from_the_helper_thread(
    sealed: Path, registry: str, repo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small blob uploaded beside the zip whose file changed after the verification: the
    registry refuses it on the helper thread and that refusal is raised once the zip is up
    (exit 5 from the CLI); no manifest, no tag, no thread left."""
    from ninfer_release.errors import IntegrityError

    real_verify = verify_set

    def verify_then_change(set_dir: Path, **kwargs: Any) -> Any:
        report = real_verify(set_dir, **kwargs)
        flip_byte(set_dir / f"{stem(LANE)}.route.json")
        return report

    real_put = OciPublisher._put_blob
    verified = threading.Event()

    def put_once_verified(self: OciPublisher, blob: Any, **kwargs: Any) -> None:
        if blob.title != f"{stem(LANE)}.zip":
            assert verified.wait(120)
        real_put(self, blob, **kwargs)

    def verify_then_release(set_dir: Path, **kwargs: Any) -> Any:
        try:
            return verify_then_change(set_dir, **kwargs)
        finally:
            verified.set()

    monkeypatch.setattr(_flows, "verify_set", verify_then_release)
    monkeypatch.setattr(OciPublisher, "_put_blob", put_once_verified)
    with pytest.raises(IntegrityError, match=r"route\.json.*registry says the bytes are not sha256:"):
        _flows.publish_set(sealed, f"oci://{registry}/{repo}")
    assert _manifest(registry, repo, TAG) is None
    assert _no_uploader_left() and _no_worker_left()


def test_a_failed_largest_upload_stops_and_joins_the_helper(
    sealed: Path, registry: str, repo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zip's upload fails: that error is raised, the helper stops after its current blob and
    is joined first (nothing keeps uploading after publish returns)."""
    real_put = OciPublisher._put_blob
    started = threading.Event()
    stored: list[str] = []

    def put(self: OciPublisher, blob: Any, **kwargs: Any) -> None:
        if blob.title == f"{stem(LANE)}.zip":
            assert started.wait(60)
            raise PublishError("the zip failed")
        started.set()
        time.sleep(0.2)
        real_put(self, blob, **kwargs)
        stored.append(blob.title or "config")

    monkeypatch.setattr(OciPublisher, "_put_blob", put)
    with pytest.raises(PublishError, match="the zip failed"):
        _flows.publish_set(sealed, f"oci://{registry}/{repo}")
    assert _no_uploader_left()
    assert 1 <= len(stored) < 11  # stopped early, after the blob it was storing
    assert _manifest(registry, repo, TAG) is None


def test_a_failed_small_blob_cancels_the_largest_upload_midway(
    sealed: Path, registry: str, repo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small blob refused on the helper thread stops the zip's upload on the main thread before
    its next piece of body (here the zip goes in 64 KiB pieces, and its second piece waits for the
    refusal): that refusal is raised, the zip never completes in the registry, no tag, no thread
    left."""
    from ninfer_release.registry import _client

    zip_name = f"{stem(LANE)}.zip"
    zip_started, refused = threading.Event(), threading.Event()
    real_put = OciPublisher._put_blob
    real_iter = _client._Window.__iter__
    monkeypatch.setattr(_client, "_FILE_PIECE", 64 * 1024)

    def gated(self: Any) -> Any:
        for i, piece in enumerate(real_iter(self)):
            yield piece
            if i == 0 and self._name == zip_name:
                zip_started.set()
                assert refused.wait(60)

    def put(self: OciPublisher, blob: Any, **kwargs: Any) -> None:
        if blob.title == zip_name:
            real_put(self, blob, **kwargs)
            return
        assert zip_started.wait(60)
        try:
            raise PublishError(f"{blob.title}: refused")
        finally:
            refused.set()

    monkeypatch.setattr(_client._Window, "__iter__", gated)
    monkeypatch.setattr(OciPublisher, "_put_blob", put)
    assert (sealed / zip_name).stat().st_size > 2 * 64 * 1024
    with pytest.raises(PublishError, match=": refused"):
        _flows.publish_set(sealed, f"oci://{registry}/{repo}")
    digest = "sha256:" + hashlib.sha256((sealed / zip_name).read_bytes()).hexdigest()
    assert not RegistryClient(registry).has_blob(repo, digest)
    assert _manifest(registry, repo, TAG) is None
    assert _no_uploader_left() and _no_worker_left()


def test_waiting_for_the_verification_gives_its_threads_their_priority_back() -> None:
    """Once the publish waits for nothing but the verification, there is no upload left to yield
    the CPU to: the yielded threads get the waiting thread's priority again (needs the privilege
    to lower a niceness: root or RLIMIT_NICE)."""
    import os
    import resource

    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    if os.geteuid() != 0 and resource.getrlimit(resource.RLIMIT_NICE)[0] < 20 - base:
        pytest.skip("lowering a niceness needs root or RLIMIT_NICE here")
    yielded, restored, seen = threading.Event(), threading.Event(), []

    def worker() -> None:
        tid = threading.get_native_id()
        _flows._yield_cpu_to_the_upload()
        seen.append(os.getpriority(os.PRIO_PROCESS, tid))
        yielded.set()
        assert restored.wait(30)
        seen.append(os.getpriority(os.PRIO_PROCESS, tid))

    t = threading.Thread(target=worker)
    t.start()
    assert yielded.wait(30)
    _flows._restore_cpu_priority()
    restored.set()
    t.join()
    assert seen == [min(base + _flows._VERIFY_NICENESS, 19), base]
