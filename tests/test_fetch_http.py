"""``verify https://…/<tag>/`` and ``fetch`` by URL against Debian's nginx over TLS (issue 12).

Done-when: publish → nginx → ``verify https://127.0.0.1:PORT/<base>/<tag>/`` passes for both
native sets, and flipping one byte of any served file fails it naming the file; a fetch cut
half-way through the package resumes and ends byte-identical; a partial of another digest is
never appended to; ``fetch --route`` fetches the package (and a stand-in model) by the route's
URLs. The servers are started here, on loopback, and stopped by PID.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from flow_support import (
    NATIVE_LANES,
    TAGS,
    Result,
    cli,
    flip_byte,
    ok,
    qualified_out,
    release_out,
    samples,
    set_names,
    stem,
)
from http_support import TEST_HOST, CuttingProxy, Nginx, resolving_test_host
from ninfer_release.errors import InputError
from ninfer_release.releases._http_fetch import check_url

BASE = "omp"  # the path under which the files:// tree is served: https://127.0.0.1:P/omp/<tag>/


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nginx]:
    """nginx serving a files:// store holding both sealed native sets under ``/omp/``."""
    server = Nginx.start(tmp_path_factory.mktemp("nginx"))
    try:
        qual = qualified_out(tmp_path_factory)
        for lane in NATIVE_LANES:
            ok(cli("publish", qual / lane, "--to", f"files://{server.root / BASE}"))
        yield server
    finally:
        server.stop()


def _url(server: Nginx, lane: str, *, prefix: str = "") -> str:
    return f"{server.base}/{prefix}{BASE}/{TAGS[lane]}/"


def _run(server: Nginx, *args: str | Path) -> Result:
    return cli("--json", *args, "--ca-file", server.ca, "--retries", "1")


def _copy_tag(server: Nginx, lane: str, name: str) -> Path:
    """A copy of ``lane``'s served set under ``/<name>/<tag>/`` (to tamper with)."""
    dest = server.root / name / TAGS[lane]
    shutil.copytree(server.root / BASE / TAGS[lane], dest)
    return dest


def _errors(res: Result) -> list[str]:
    return [line for line in res.err.splitlines() if line.startswith("error: ")]


def test_verify_https_passes_for_both_native_sets(nginx: Nginx) -> None:
    for lane in NATIVE_LANES:
        res = _run(nginx, "verify", _url(nginx, lane))
        assert res.code == 0, res.text
        doc = json.loads(res.out)
        assert doc["ok"] is True and doc["stem"] == stem(lane)
        assert (
            doc["artifact_digest"]
            == "sha256:"
            + hashlib.sha256((nginx.root / BASE / TAGS[lane] / "SHA256SUMS").read_bytes()).hexdigest()
        )


@pytest.mark.parametrize("suffix", [s.removeprefix(stem("rtx4090")) for s in set_names("rtx4090")])
def test_flipping_one_byte_of_any_served_file_fails_naming_it(nginx: Nginx, suffix: str) -> None:
    name = stem("rtx4090") + suffix if suffix != "SHA256SUMS" else "SHA256SUMS"
    where = re.sub(r"[^a-z0-9]+", "-", name.lower())
    tree = _copy_tag(nginx, "rtx4090", where)
    flip_byte(tree / name)
    res = _run(nginx, "verify", f"{nginx.base}/{where}/{TAGS['rtx4090']}/")
    assert res.code in (4, 5), res.text
    assert res.code == 5 or name == "SHA256SUMS", res.text  # a flipped SHA256SUMS may stop parsing
    named = name if name != "SHA256SUMS" else "SHA256SUMS"
    assert any(named in line for line in _errors(res)), res.err


def test_404_tls_failure_and_plain_http_are_one_line_exit_4(nginx: Nginx) -> None:
    res = _run(nginx, "verify", f"{nginx.base}/{BASE}/v9.9.9-nothing/")
    assert res.code == 4 and len(_errors(res)) == 1 and "HTTP 404" in res.err, res.text
    res = cli("verify", _url(nginx, "rtx4090"))  # no --ca-file: the test CA is not trusted
    assert res.code == 4 and len(_errors(res)) == 1 and "TLS certificate not trusted" in res.err, res.text
    assert "certificate verify failed" in res.err and "--ca-file or SSL_CERT_FILE" in res.err
    with pytest.raises(InputError, match="loopback"):
        check_url("http://example.org/omp/v1/")
    res = cli("verify", f"{nginx.http_base}/{BASE}/{TAGS['rtx3090']}/")  # loopback: plain http allowed
    assert res.code == 0, res.text


def test_wrong_size_and_wrong_digest_are_exit_5_naming_the_file(nginx: Nginx) -> None:
    zip_name = stem("rtx4090") + ".zip"
    longer = _copy_tag(nginx, "rtx4090", "longer")
    with (longer / zip_name).open("ab") as f:
        f.write(b"\0")
    res = _run(nginx, "verify", f"{nginx.base}/longer/{TAGS['rtx4090']}/")
    assert res.code == 5 and "wrong size" in res.err and zip_name in res.err, res.text
    flipped = _copy_tag(nginx, "rtx4090", "flipped")
    flip_byte(flipped / zip_name)
    res = _run(nginx, "verify", f"{nginx.base}/flipped/{TAGS['rtx4090']}/")
    assert res.code == 5 and "wrong digest" in res.err and zip_name in res.err, res.text
    assert len(_errors(res)) == 1


def test_redirects_cross_host_followed_downgrade_and_loops_refused(nginx: Nginx) -> None:
    # /to-secondary/ answers 302 to https://localhost:S/…: another host, followed by default
    res = _run(nginx, "verify", _url(nginx, "rtx4090", prefix="to-secondary/"))
    assert res.code == 0, res.text
    res = _run(nginx, "verify", _url(nginx, "rtx4090", prefix="to-secondary/"), "--no-cross-host-redirects")
    assert res.code == 4 and "refused" in res.err and "another host" in res.err, res.text
    res = _run(nginx, "verify", _url(nginx, "rtx4090", prefix="to-http/"))
    assert res.code == 4 and "redirect to http://example.invalid" in res.err and "not https" in res.err
    res = _run(nginx, "verify", _url(nginx, "rtx4090", prefix="loop/"))
    assert res.code == 4 and "more than 5 redirects" in res.err, res.text
    assert all(len(_errors(r)) == 1 for r in [res])


def test_fetch_writes_the_set_and_reports_json(nginx: Nginx, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = _run(nginx, "fetch", _url(nginx, "rtx3090"), "--out", out)
    assert res.code == 0, res.text
    doc = json.loads(res.out)
    assert sorted(f["name"] for f in doc["files"]) == set_names("rtx3090")
    assert {f["status"] for f in doc["files"]} == {"downloaded"}
    assert doc["verify"]["ok"] is True
    assert sorted(p.name for p in out.iterdir()) == set_names("rtx3090")  # no partials left
    for name in set_names("rtx3090"):
        assert (out / name).read_bytes() == (nginx.root / BASE / TAGS["rtx3090"] / name).read_bytes()
    again = _run(nginx, "fetch", _url(nginx, "rtx3090"), "--out", out)
    assert again.code == 0 and {f["status"] for f in json.loads(again.out)["files"]} == {"present"}


def test_fetch_never_overwrites_a_file_with_other_bytes(nginx: Nginx, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    zip_name = stem("rtx4090") + ".zip"
    (out / zip_name).write_bytes(b"mine")
    res = _run(nginx, "fetch", _url(nginx, "rtx4090"), "--out", out)
    assert res.code == 4 and "refusing to overwrite" in res.err, res.text
    assert (out / zip_name).read_bytes() == b"mine"


def _ranged(server: Nginx, lane: str, name: str) -> int:
    """How many ``206 Partial Content`` answers nginx has logged for ``name`` of ``lane``."""
    return (server.work / "access.log").read_text().count(f'/{BASE}/{TAGS[lane]}/{name} HTTP/1.1" 206')


def _cutting_proxy(server: Nginx, lane: str) -> CuttingProxy:
    """A proxy whose first connection is cut half-way through the package (the last file fetched;
    one kept-alive connection carries every file before it)."""
    tree = server.root / BASE / TAGS[lane]
    zip_size = (tree / (stem(lane) + ".zip")).stat().st_size
    before = sum(p.stat().st_size for p in tree.iterdir() if not p.name.endswith(".zip"))
    return CuttingProxy(server.primary, after=before + zip_size // 2, cuts=1)


def test_fetch_cut_half_way_resumes_with_range_in_the_same_run(nginx: Nginx, tmp_path: Path) -> None:
    zip_name = stem("rtx4090") + ".zip"
    proxy = _cutting_proxy(nginx, "rtx4090")
    ranged = _ranged(nginx, "rtx4090", zip_name)
    try:
        url = f"https://127.0.0.1:{proxy.port}/{BASE}/{TAGS['rtx4090']}/"
        res = _run(nginx, "fetch", url, "--out", tmp_path / "out", "--retries", "3")
        assert res.code == 0, res.text
    finally:
        proxy.close()
    assert proxy.cuts_left == 0 and proxy.connections >= 2  # it was cut, and a new connection resumed
    assert _ranged(nginx, "rtx4090", zip_name) == ranged + 1
    for name in set_names("rtx4090"):
        assert (tmp_path / "out" / name).read_bytes() == (
            nginx.root / BASE / TAGS["rtx4090"] / name
        ).read_bytes()


def test_fetch_interrupted_then_rerun_resumes_from_the_partial(nginx: Nginx, tmp_path: Path) -> None:
    zip_name = stem("rtx4090") + ".zip"
    served = nginx.root / BASE / TAGS["rtx4090"]
    out = tmp_path / "out"
    proxy = _cutting_proxy(nginx, "rtx4090")
    try:
        url = f"https://127.0.0.1:{proxy.port}/{BASE}/{TAGS['rtx4090']}/"
        res = cli("fetch", url, "--out", out, "--ca-file", nginx.ca, "--retries", "0")
    finally:
        proxy.close()
    assert res.code == 4 and len(_errors(res)) == 1 and "failed after 1 attempts" in res.err, res.text
    sha = hashlib.sha256((served / zip_name).read_bytes()).hexdigest()
    partial = out / ".ninfer-partial" / f"{sha}.partial"
    assert 0 < partial.stat().st_size < (served / zip_name).stat().st_size
    assert not (out / zip_name).exists()  # a file appears only once its digest checks
    have = partial.stat().st_size
    ranged = _ranged(nginx, "rtx4090", zip_name)
    res = _run(nginx, "fetch", _url(nginx, "rtx4090"), "--out", out)
    assert res.code == 0, res.text
    entry = next(f for f in json.loads(res.out)["files"] if f["name"] == zip_name)
    assert entry["resumed_from"] == have and entry["status"] == "downloaded"
    assert _ranged(nginx, "rtx4090", zip_name) == ranged + 1
    assert sorted(p.name for p in out.iterdir()) == set_names("rtx4090")
    for name in set_names("rtx4090"):
        assert (out / name).read_bytes() == (served / name).read_bytes()


def test_a_partial_of_another_digest_is_never_appended_to(nginx: Nginx, tmp_path: Path) -> None:
    zip_name = stem("rtx4090") + ".zip"
    data = (nginx.root / BASE / TAGS["rtx4090"] / zip_name).read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    out = tmp_path / "out"
    (out / ".ninfer-partial").mkdir(parents=True)
    # An older artifact's partial: the same first half, but named by its own (other) digest.
    old = data[: len(data) // 2]
    other = out / ".ninfer-partial" / (hashlib.sha256(b"v2 model").hexdigest() + ".partial")
    other.write_bytes(old)
    res = _run(nginx, "fetch", _url(nginx, "rtx4090"), "--out", out)
    assert res.code == 0, res.text
    entry = next(f for f in json.loads(res.out)["files"] if f["name"] == zip_name)
    assert entry["resumed_from"] == 0
    assert other.read_bytes() == old  # untouched, never appended to
    assert (out / zip_name).read_bytes() == data
    # A partial under the right digest whose bytes are not a prefix: refused at the digest, removed.
    out2 = tmp_path / "out2"
    (out2 / ".ninfer-partial").mkdir(parents=True)
    bad = out2 / ".ninfer-partial" / f"{sha}.partial"
    bad.write_bytes(b"\0" * 1000)
    res = _run(nginx, "fetch", _url(nginx, "rtx4090"), "--out", out2)
    assert res.code == 5 and "wrong digest" in res.err, res.text
    assert not bad.exists() and not (out2 / zip_name).exists()
    assert _run(nginx, "fetch", _url(nginx, "rtx4090"), "--out", out2).code == 0


# --- fetch --route, with a stand-in model binding ------------------------------------------------

STANDIN_REVISION = "0123456789abcdef0123456789abcdef01234567"
#: A small stand-in for the 20 GB model: deterministic bytes, never the real artifact.
STANDIN_MODEL = hashlib.sha256(b"stand-in model").digest() * 20000  # 640,000 bytes


def _named(server: Nginx) -> str:
    return f"https://{TEST_HOST}:{server.primary}"


@pytest.fixture
def test_host() -> Iterator[None]:
    with resolving_test_host():
        yield


def _route_release(root: Path, server: Nginx) -> Path:
    """A repo root whose definition publishes under this nginx and binds the stand-in model."""
    repo = Path(__file__).resolve().parent.parent
    root.mkdir(parents=True)
    for name in ("packaging", "containers", "sbom"):
        (root / name).symlink_to(repo / name, target_is_directory=True)
    real = "81f924d440c27261d820c19a9f8d45794c5aee410f8a68bd358133fa8c0375da"  # the 20 GB model
    for name in ("profiles", "releases"):  # every record that binds the model, rebound to the stand-in
        shutil.copytree(repo / name, root / name)
        for record in (root / name).rglob("*.yaml"):
            record.write_text(record.read_text().replace(real, hashlib.sha256(STANDIN_MODEL).hexdigest()))
    text = (repo / "manifests" / "v0.13.1.yaml").read_text()
    text, n = re.subn(
        r"(?m)^publication_base_url: .*$", f"publication_base_url: {_named(server)}/route-{BASE}", text
    )
    assert n == 1
    model = (
        "  model:\n"
        f"    repository: {_named(server)}/hf/standin\n"
        f"    revision: {STANDIN_REVISION}\n"
        "    artifact: standin.ninfer\n"
        f"    size: {len(STANDIN_MODEL)}\n"
        f"    sha256: {hashlib.sha256(STANDIN_MODEL).hexdigest()}\n"
        "    local_name: qwen3_8_27b-v3.ninfer\n"
        "    container_version: 3\n"
    )
    text, n = re.subn(r"(?m)^  model:\n(?:    .*\n)+", model, text)
    assert n == 1
    (root / "manifests").mkdir()
    (root / "manifests" / "v0.13.1.yaml").write_text(text)
    return root / "manifests" / "v0.13.1.yaml"


@pytest.fixture(scope="module")
def route_set(nginx: Nginx, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rtx4090 set built with the test definition, published where its route says; returns
    the route block (what an installer holds)."""
    from flow_support import write_receipts

    work = tmp_path_factory.mktemp("route")
    definition = _route_release(work / "repo", nginx)
    build = ("build", "lane", "rtx4090", "--release", definition, "--inputs", samples(tmp_path_factory))
    ok(cli(*build, "--out", work / "draft", "--offline"))
    receipts = write_receipts(work / "receipts", tmp_path_factory, drafts=work / "draft")
    out = work / "out"
    ok(cli(*build, "--out", out, "--receipts", receipts, "--offline"))
    ok(cli("publish", out / "rtx4090", "--to", f"files://{nginx.root / f'route-{BASE}'}"))
    model_dir = nginx.root / "hf" / "standin" / "resolve" / STANDIN_REVISION
    model_dir.mkdir(parents=True)
    (model_dir / "standin.ninfer").write_bytes(STANDIN_MODEL)
    return out / "rtx4090" / (stem("rtx4090") + ".route.json")


@pytest.mark.usefixtures("test_host")
def test_fetch_route_takes_every_url_from_the_route_block(
    nginx: Nginx, route_set: Path, tmp_path: Path
) -> None:
    route = json.loads(route_set.read_bytes())
    assert route["package"]["url"].startswith(f"{_named(nginx)}/route-{BASE}/{TAGS['rtx4090']}/")
    res = _run(nginx, "fetch", "--route", route_set, "--out", tmp_path / "install")
    assert res.code == 0, res.text
    doc = json.loads(res.out)
    assert doc["url"] == route["package"]["url"].rsplit("/", 1)[0] + "/" and doc["model"] is None
    assert sorted(p.name for p in (tmp_path / "install").iterdir()) == set_names("rtx4090")
    pkg = (tmp_path / "install" / route["package"]["name"]).read_bytes()
    assert (
        hashlib.sha256(pkg).hexdigest() == route["package"]["sha256"] and len(pkg) == route["package"]["size"]
    )
    # a route block that differs from the published one is refused
    edited = tmp_path / "edited.route.json"
    edited.write_bytes(route_set.read_bytes().replace(b'"lane": "rtx4090"', b'"lane": "rtx4090" '))
    res = _run(nginx, "fetch", "--route", edited, "--out", tmp_path / "other")
    assert res.code == 5 and "differs from the published" in res.err, res.text


@pytest.mark.usefixtures("test_host")
@pytest.mark.usefixtures("test_host")
def test_fetch_route_with_model_resumes_onto_the_same_digest_only(
    nginx: Nginx, route_set: Path, tmp_path: Path
) -> None:
    route = json.loads(route_set.read_bytes())
    model = route["model"]
    assert model["url"] == f"{_named(nginx)}/hf/standin/resolve/{STANDIN_REVISION}/standin.ninfer"
    models = tmp_path / "models"
    (models / ".ninfer-partial").mkdir(parents=True)
    half = len(STANDIN_MODEL) // 2
    (models / ".ninfer-partial" / f"{model['sha256']}.partial").write_bytes(STANDIN_MODEL[:half])
    old = models / ".ninfer-partial" / (hashlib.sha256(b"the v2 model").hexdigest() + ".partial")
    old.write_bytes(b"v2" * 1000)
    res = _run(
        nginx,
        "fetch",
        "--route",
        route_set,
        "--out",
        tmp_path / "install",
        "--with-model",
        "--model-dir",
        models,
    )
    assert res.code == 0, res.text
    got = json.loads(res.out)["model"]
    assert got["name"] == model["store_as"] == "qwen3_8_27b-v3.ninfer"
    assert got["resumed_from"] == half and got["size"] == len(STANDIN_MODEL)
    assert (models / "qwen3_8_27b-v3.ninfer").read_bytes() == STANDIN_MODEL
    assert old.read_bytes() == b"v2" * 1000  # another digest's partial: never appended to
    assert _ranged_path(nginx, f"/hf/standin/resolve/{STANDIN_REVISION}/standin.ninfer") >= 1
    # a second run finds everything present
    again = _run(nginx, "fetch", "--route", route_set, "--out", tmp_path / "install", "--with-model",
                 "--model-dir", models)  # fmt: skip
    assert again.code == 0 and json.loads(again.out)["model"]["status"] == "present"


def test_with_model_needs_route(tmp_path: Path) -> None:
    res = cli("fetch", "https://127.0.0.1:1/x/", "--out", tmp_path, "--with-model")
    assert res.code == 2 and "--route" in res.err


def _ranged_path(server: Nginx, path: str) -> int:
    return (server.work / "access.log").read_text().count(f'{path} HTTP/1.1" 206')


def test_text_verdicts_over_https_state_the_qualification(
    nginx: Nginx, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """``verify https://…`` and ``fetch`` never print a plain ``OK``: an unqualified draft says so,
    a qualified set gives its gate counts; ``--require-qualified`` fails the draft (exit 5)."""
    shutil.copytree(release_out(tmp_path_factory) / "rtx4090", nginx.root / "unqualified" / TAGS["rtx4090"])
    draft = f"{nginx.base}/unqualified/{TAGS['rtx4090']}/"
    tls = ("--ca-file", nginx.ca, "--retries", "1")
    for args in (("verify", draft), ("fetch", draft, "--out", tmp_path / "out")):
        res = cli(*args, *tls)
        assert res.code == 0, res.text
        assert f"OK (unqualified draft, not for release; {stem('rtx4090')}, " in res.out, res.out
    assert cli("verify", draft, "--require-qualified", *tls).code == 5
    res = cli("fetch", _url(nginx, "rtx4090"), "--out", tmp_path / "q", *tls)
    assert res.code == 0, res.text
    assert f"OK (qualified: 2 pass, 0 fail, 1 not applicable; {stem('rtx4090')}, " in res.out, res.out


def test_progress_bars_per_file_and_total_on_a_terminal_only(nginx: Nginx, tmp_path: Path) -> None:
    import os
    import pty

    from flow_support import nr_command

    master, slave = pty.openpty()
    args = ["fetch", _url(nginx, "rtx4090"), "--out", str(tmp_path / "out"), "--ca-file", str(nginx.ca)]
    proc = subprocess.Popen(
        [*nr_command(), *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "160"},
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
    assert proc.wait(timeout=300) == 0
    os.close(master)
    err = b"".join(chunks).decode("utf-8", "replace")
    assert stem("rtx4090") + ".zip" in err and "total" in err  # one bar per file, one for the total
    assert out.count("\n") == 1 and ": fetched into " in out  # stdout: the result line only
    # off a terminal (and under --json): no bars at all
    res = _run(nginx, "fetch", _url(nginx, "rtx4090"), "--out", tmp_path / "out2")
    assert res.code == 0 and "total" not in res.err


def test_sha256sums_is_size_capped_and_every_file_needs_a_recorded_size(nginx: Nginx) -> None:
    big = _copy_tag(nginx, "rtx4090", "big-sums")
    with (big / "SHA256SUMS").open("ab") as f:
        f.write(b"# padding\n" * 1000)  # 10 kB more: beyond what a 10-entry SHA256SUMS can be
    res = _run(nginx, "verify", f"{nginx.base}/big-sums/{TAGS['rtx4090']}/")
    assert res.code == 5 and "longer than its cap of 9216 bytes" in res.err, res.text
    extra = _copy_tag(nginx, "rtx4090", "unsized")
    (extra / "notes.txt").write_bytes(b"hello\n")
    with (extra / "SHA256SUMS").open("ab") as f:
        f.write(hashlib.sha256(b"hello\n").hexdigest().encode() + b"  notes.txt\n")
    res = _run(nginx, "verify", f"{nginx.base}/unsized/{TAGS['rtx4090']}/")
    assert res.code == 5 and "records no size for it; cannot fetch it completely" in res.err, res.text


# --- signatures beside a tag served over https (issue 14) ----------------------------------------


@pytest.fixture(scope="module")
def signed(nginx: Nginx, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The rtx4090 set published with ``--sign`` into ``/signed/`` of the served tree: its URL and
    the public key (the bundles sit in ``/signed/<tag>.sigstore/``)."""
    from test_signing import _write_keys

    keys = tmp_path_factory.mktemp("keys")
    private, public = _write_keys(keys, "ed25519")
    qual = qualified_out(tmp_path_factory)
    ok(cli("publish", qual / "rtx4090", "--to", f"files://{nginx.root / 'signed'}", "--sign", private))
    assert (nginx.root / "signed" / f"{TAGS['rtx4090']}.sigstore").is_dir()
    return f"{nginx.base}/signed/{TAGS['rtx4090']}/", public


def _failure_lines(res: Result) -> list[str]:
    return [line for line in res.err.splitlines() if line.strip() and not line.startswith("warning")]


def test_verify_https_with_key_fetches_and_checks_the_signatures(
    nginx: Nginx, signed: tuple[str, Path]
) -> None:
    url, public = signed
    res = _run(nginx, "verify", url, "--key", public, "--require-signature")
    assert res.code == 0, res.text
    checked = json.loads(res.out)["checked"]
    assert any("sha256sums.sigstore.json: ed25519 signature" in c.lower() for c in checked), checked
    assert any(".provenance.json.sigstore.json" in c for c in checked), checked


def test_verify_https_require_signature_fails_when_none_is_served(nginx: Nginx, tmp_path: Path) -> None:
    """The unsigned set under ``/omp/``: ``--key`` alone passes; ``--require-signature`` fails,
    one line, exit 5."""
    from test_signing import _write_keys

    _, public = _write_keys(tmp_path, "ed25519")
    url = _url(nginx, "rtx4090")
    assert _run(nginx, "verify", url, "--key", public).code == 0
    res = cli("verify", url, "--key", public, "--require-signature", "--ca-file", nginx.ca, "--retries", "1")
    assert res.code == 5, res.text
    lines = _failure_lines(res)
    assert len(lines) == 1 and "no signature (--require-signature)" in lines[0], res.err


def test_verify_https_with_another_key_or_a_changed_bundle_fails_one_line(
    nginx: Nginx, signed: tuple[str, Path], tmp_path: Path
) -> None:
    from ninfer_release.releases._signing import Bundle
    from test_signing import _write_keys

    url, public = signed
    _, other = _write_keys(tmp_path, "p256")
    res = cli("verify", url, "--key", other, "--ca-file", nginx.ca, "--retries", "1")
    assert res.code == 5 and len(_failure_lines(res)) == 1, res.text
    assert "signature does not verify with key" in res.err
    # A copy of the signed tag whose served SHA256SUMS bundle signs other bytes.
    tag = TAGS["rtx4090"]
    shutil.copytree(nginx.root / "signed" / tag, nginx.root / "resigned" / tag)
    shutil.copytree(nginx.root / "signed" / f"{tag}.sigstore", nginx.root / "resigned" / f"{tag}.sigstore")
    path = nginx.root / "resigned" / f"{tag}.sigstore" / "SHA256SUMS.sigstore.json"
    bundle = Bundle.parse(path.read_bytes(), where="test")
    payload = bytearray(bundle.payload)
    payload[0] ^= 0x01
    path.write_bytes(
        Bundle(
            payload_type=bundle.payload_type,
            payload=bytes(payload),
            key_id=bundle.key_id,
            signature=bundle.signature,
        ).to_bytes()
    )
    res = cli(
        "verify", f"{nginx.base}/resigned/{tag}/", "--key", public, "--ca-file", nginx.ca, "--retries", "1"
    )
    assert res.code == 5, res.text
    lines = _failure_lines(res)
    assert len(lines) == 1 and "SHA256SUMS.sigstore.json: signature does not verify" in lines[0], res.err


def test_a_url_whose_tag_names_another_set_fails(nginx: Nginx) -> None:
    """Second hostile review (2026-12-04): the 4090 set served under the 3090 tag verified OK,
    even with ``--release-manifest`` (its binding is looked up by the set's own stem)."""
    dest = nginx.root / "swapped" / TAGS["rtx3090"]
    shutil.copytree(nginx.root / BASE / TAGS["rtx4090"], dest)
    res = _run(nginx, "verify", f"{nginx.base}/swapped/{TAGS['rtx3090']}/")
    assert res.code == 5, res.text
    want = f"the reference names tag {TAGS['rtx3090']!r}, but the set is {TAGS['rtx4090']!r}"
    assert any(want in line for line in _errors(res)), res.err
