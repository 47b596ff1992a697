"""Uploads through the one registry client: chunked after a real 413 (nginx with a body cap),
HEAD-first skipping, cross-repository mount, retries of transient answers, concurrent identical
publishes (issue 11)."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from flow_support import TAGS, cli, qualified_out, registry_namespace, run_nr, start_nr
from ninfer_release.registry import BlobSource, RegistryClient, RegistryOptions
from ninfer_release.releases._oci_publisher import OciPublisher
from registry_fixtures import LoopbackCA, Proxy, Registry, write_docker_config
from test_publish import make_set, request_for


def _blob(data: bytes, name: str = "blob") -> BlobSource:
    return BlobSource(
        digest="sha256:" + hashlib.sha256(data).hexdigest(), size=len(data), data=data, name=name
    )


def _options(ca: LoopbackCA, docker: Path, **kw: object) -> RegistryOptions:
    return RegistryOptions(ca_file=ca.ca, environ={"DOCKER_CONFIG": str(docker)}, **kw)  # type: ignore[arg-type]


@pytest.fixture
def docker_dir(tls_registry: Registry, capped_proxy: Proxy, tmp_path: Path) -> Path:
    return write_docker_config(tmp_path / "docker", [tls_registry.host, capped_proxy.host])


class _Transfers:
    """A :class:`~ninfer_release.progress.Progress` keeping ``(step, bytes, step total)`` per advance."""

    def __init__(self) -> None:
        self.step_name = ""
        self.step_total: int | None = None
        self.seen: list[tuple[str, int, int | None]] = []

    def step(self, message: str, total: int | None = None) -> None:
        self.step_name, self.step_total = message, total

    def advance(self, nbytes: int) -> None:
        self.seen.append((self.step_name, nbytes, self.step_total))


def test_nginx_413_switches_to_chunked_upload(
    capped_proxy: Proxy, test_ca: LoopbackCA, docker_dir: Path, tmp_path: Path
) -> None:
    """A 1.5 MiB layer through nginx with client_max_body_size 1m: the monolithic PUT gets a real 413,
    the client switches to POST/PATCH/PUT chunks (chunk size from configuration) and the set pulls
    back byte for byte."""
    big = os.urandom(3 * (1 << 19))
    names = make_set(tmp_path / "set", {"engine.zip": big})
    transfers = _Transfers()
    pub = OciPublisher(
        host=capped_proxy.host,
        repository="up/chunked",
        options=_options(test_ca, docker_dir, chunk_size=512 * 1024),
        progress=transfers,
    )
    assert pub.publish(request_for(tmp_path / "set", names)).status == "published"
    assert pub.client._chunked  # the 413 was seen and remembered
    dest = tmp_path / "pulled"
    dest.mkdir()
    pub.pull("v1.0.0-beta.1", dest)
    assert (dest / "engine.zip").read_bytes() == big
    uploaded = sum(n for name, n, _ in transfers.seen if name == "engine.zip")
    assert uploaded >= 2 * len(big)  # uploaded (chunks) and pulled, each reported in bytes
    assert {total for name, _, total in transfers.seen if name == "engine.zip"} == {len(big)}


def test_chunked_above_the_threshold_without_a_413(
    tls_registry: Registry, test_ca: LoopbackCA, docker_dir: Path
) -> None:
    data = os.urandom(300_000)
    client = RegistryClient(
        tls_registry.host, options=_options(test_ca, docker_dir, monolithic_max=100_000, chunk_size=64 * 1024)
    )
    assert client.push_blob("up/threshold", _blob(data)) == "uploaded"
    assert not client._chunked  # no 413: the threshold alone chose chunks
    assert client.blob_bytes("up/threshold", _blob(data).digest, cap=len(data)) == data


def test_head_first_skips_present_blobs_and_mount_crosses_repositories(
    tls_registry: Registry, test_ca: LoopbackCA, docker_dir: Path
) -> None:
    blob = _blob(os.urandom(4096))
    client = RegistryClient(tls_registry.host, options=_options(test_ca, docker_dir))
    assert client.push_blob("up/source", blob) == "uploaded"
    assert client.push_blob("up/source", blob) == "present"
    assert not client.has_blob("up/target", blob.digest)
    assert client.push_blob("up/target", blob, mount_from="up/source") == "mounted"
    assert client.has_blob("up/target", blob.digest, blob.size)


class _Flaky(http.server.BaseHTTPRequestHandler):
    """A registry stand-in answering 429 (Retry-After: 0) then 503 then the real answer, per path."""

    seen: ClassVar[dict[str, int]] = {}
    lock = threading.Lock()

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        with self.lock:
            n = self.seen.get(self.path, 0)
            self.seen[self.path] = n + 1
        if self.path == "/v2/":
            self._send(200, b"{}")
        elif n == 0:
            self._send(429, b"", {"Retry-After": "0"})
        elif n == 1:
            self._send(503, b"")
        else:
            self._send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"no"}]}')

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def flaky() -> Iterator[str]:
    _Flaky.seen = {}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_429_and_503_are_retried_then_the_answer_counts(flaky: str) -> None:
    client = RegistryClient(flaky, options=RegistryOptions(retries=2, backoff=0.01))
    assert client.get_manifest("r/x", "v1") is None  # 429, 503, then 404 = not found
    assert _Flaky.seen["/v2/r/x/manifests/v1"] == 3
    _Flaky.seen.clear()
    stingy = RegistryClient(flaky, options=RegistryOptions(retries=1, backoff=0.01))
    with pytest.raises(Exception, match="HTTP 503"):
        stingy.get_manifest("r/y", "v1")  # bounded: one retry only, then the 503 is the answer


def test_refused_manifest_put_reads_the_tag_back(
    tls_registry: Registry, test_ca: LoopbackCA, docker_dir: Path, tmp_path: Path
) -> None:
    """A 4xx on the manifest PUT is never retried blindly: when the tag already holds our bytes the
    answer is already_published, otherwise the refusal stands."""
    names = make_set(tmp_path / "set", {"engine.zip": b"Z"})
    pub = OciPublisher(
        host=tls_registry.host, repository="up/readback", options=_options(test_ca, docker_dir)
    )
    pub.publish(request_for(tmp_path / "set", names))
    client = pub.client
    manifest = client.get_manifest("up/readback", "v1.0.0-beta.1")
    assert manifest is not None
    # A wrong Content-Type makes distribution refuse the PUT (400); the tag holds these bytes.
    put = client.put_manifest("up/readback", "v1.0.0-beta.1", manifest.data, "application/x-wrong")
    assert put.status == "already_published"
    with pytest.raises(Exception, match="HTTP 400"):
        client.put_manifest("up/readback", "other-tag", manifest.data, "application/x-wrong")


@pytest.mark.parametrize("round_", range(5))
def test_concurrent_identical_publishes_all_succeed(
    round_: int, registry: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """8 processes publish one sealed set to one fresh repository at once, five rounds: every one
    exits 0, exactly one says published and seven already_published."""
    lane = "rtx4090"
    set_dir = qualified_out(tmp_path_factory) / lane
    to = f"oci://{registry}/{registry_namespace(tmp_path_factory, f'concurrent-{round_}')}/{lane}"
    procs = [start_nr("publish", set_dir, "--to", to) for _ in range(8)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    assert [code for code, _, _ in results] == [0] * 8, [err for _, _, err in results]
    statuses = sorted(out.split(":", 1)[0] for _, out, _ in results)
    assert statuses == ["already_published"] * 7 + ["published"]
    ok = cli("verify", f"{to}:{TAGS[lane]}")
    assert ok.code == 0, ok.text


def test_publish_through_nginx_cap_from_the_cli(
    capped_proxy: Proxy, test_ca: LoopbackCA, docker_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The sample set (its 5.8 MB zip) through the 1 MiB body cap: chunked, then verified back."""
    lane = "rtx3090"
    env = {
        "DOCKER_CONFIG": str(docker_dir),
        "SSL_CERT_FILE": str(test_ca.ca),
        "NINFER_REGISTRY_CHUNK_SIZE": str(1 << 19),
    }
    to = f"oci://{capped_proxy.host}/{registry_namespace(tmp_path_factory, 'capped')}/{lane}"
    published = run_nr("publish", qualified_out(tmp_path_factory) / lane, "--to", to, env=env, timeout=300)
    assert published.returncode == 0, published.stderr
    assert published.stdout.startswith("published: ")
    verified = run_nr("verify", f"{to}:{TAGS[lane]}", env=env, timeout=300)
    assert verified.returncode == 0, verified.stderr


def _run_with_tty_stderr(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal (progress shows) and stdout on a pipe."""
    import pty
    import subprocess

    from flow_support import nr_command

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*nr_command(), *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        env={**os.environ, **env, "TERM": "xterm", "COLUMNS": "120"},
    )
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=300)
    os.close(master)
    return code, out, b"".join(chunks).decode("utf-8", "replace")


def test_progress_on_a_terminal_shows_files_and_total_and_never_touches_stdout(
    registry: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    lane = "rtx4090"
    set_dir = qualified_out(tmp_path_factory) / lane
    to = f"oci://{registry}/{registry_namespace(tmp_path_factory, 'progress')}/{lane}"
    code, out, err = _run_with_tty_stderr(["publish", str(set_dir), "--to", to], {})
    assert code == 0, err
    assert out.startswith("published: ") and out.count("\n") == 1  # stdout: the result line only
    zip_name = next(p.name for p in set_dir.glob("*.zip"))
    assert f"publish: {zip_name}" in err and "publish: total" in err
    code, out, err = _run_with_tty_stderr(["--json", "verify", f"{to}:{TAGS[lane]}"], {})
    assert code == 0, err
    assert json.loads(out)["ok"] is True  # stdout is exactly one JSON document
    assert "verify: total" not in err  # no progress under --json


def test_a_publish_waits_for_the_host_lock_until_its_own_deadline(
    registry: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Publishers to one repository on one host take turns; a waiter gives up when its overall
    deadline is spent (the holder may be uploading a large set), with one line, exit 7."""
    from ninfer_release.errors import PublishError

    # A repository of this session's own: a long-lived NINFER_REGISTRY keeps earlier runs' tags.
    repo = registry_namespace(tmp_path_factory, "up-locked")
    names = make_set(tmp_path / "set", {"engine.zip": b"L"})
    holder = OciPublisher(host=registry, repository=repo, options=RegistryOptions())
    # A long request deadline must not stretch the wait: the overall deadline (0.5 s) bounds it.
    waiter = OciPublisher(
        host=registry, repository=repo, options=RegistryOptions(deadline=0.5, request_deadline=600)
    )
    from concurrent.futures import ThreadPoolExecutor

    with holder._lock(), ThreadPoolExecutor(1) as pool:
        attempt = pool.submit(waiter.publish, request_for(tmp_path / "set", names))
        with pytest.raises(PublishError, match="another publish on this host holds the lock") as info:
            attempt.result(timeout=20)
    assert len(info.value.lines) == 1
    patient = OciPublisher(host=registry, repository=repo, options=RegistryOptions())
    assert patient.publish(request_for(tmp_path / "set", names)).status == "published"


class _Resumable(_Flaky):
    """A registry stand-in for one chunked upload whose second ``PATCH`` is cut: the registry keeps
    the first half of that chunk and answers 500. ``GET`` of the session says ``Range: 0-<last>``."""

    stored = bytearray()
    posts = 0
    patches = 0
    statuses = 0
    done = False
    lock = threading.Lock()

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/v2/":
            self._send(200, b"{}")
            return
        with self.lock:
            type(self).statuses += 1
            held = len(self.stored)
        self._send(
            204, b"", {"Range": f"0-{held - 1}", "Location": "/v2/r/x/blobs/uploads/u1?s=" + str(held)}
        )

    def do_HEAD(self) -> None:
        self._send(200 if self.done else 404, b"")

    def do_POST(self) -> None:
        with self.lock:
            type(self).posts += 1
            self.stored.clear()
        self._send(202, b"", {"Location": "/v2/r/x/blobs/uploads/u1"})

    def do_PATCH(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        start = int(self.headers["Content-Range"].split("-")[0])
        with self.lock:
            type(self).patches += 1
            if start != len(self.stored):
                self._send(416, b"")
                return
            if self.patches == 2:  # cut half-way through: half the chunk arrived
                self.stored += body[: len(body) // 2]
                self._send(500, b"")
                return
            self.stored += body
        self._send(202, b"", {"Location": "/v2/r/x/blobs/uploads/u1?s=" + str(len(self.stored))})

    def do_PUT(self) -> None:
        digest = self.path.split("digest=")[1]
        if digest != "sha256%3A" + hashlib.sha256(self.stored).hexdigest():
            self._send(400, b'{"errors":[{"code":"DIGEST_INVALID","message":"no"}]}')
            return
        type(self).done = True
        self._send(201, b"")


def test_a_cut_chunk_resumes_the_upload_session_from_its_range() -> None:
    """A transient failure in the middle of a chunked upload goes on from the bytes the registry
    holds (``GET`` of the session, ``Range: 0-<last>``), in the same session: one ``POST``, the
    bytes stored once, the final digest right."""
    _Resumable.stored, _Resumable.posts, _Resumable.patches, _Resumable.statuses = bytearray(), 0, 0, 0
    _Resumable.done = False
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Resumable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host = f"127.0.0.1:{server.server_address[1]}"
        data = os.urandom(5 * 64 * 1024 + 123)
        options = RegistryOptions(retries=2, backoff=0.01, monolithic_max=1, chunk_size=64 * 1024)
        assert RegistryClient(host, options=options).push_blob("r/x", _blob(data)) == "uploaded"
    finally:
        server.shutdown()
        server.server_close()
    assert bytes(_Resumable.stored) == data
    assert (_Resumable.posts, _Resumable.statuses) == (1, 1)
    # Two PATCHes up to the cut (64 KiB + the half of the next that arrived), then 4 from byte 96 Ki on.
    assert _Resumable.patches == 6
