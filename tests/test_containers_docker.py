"""The docker backend against a real engine and registry (C37), and a fake Engine API (C39)."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import RunCli, need_tool
from containers_support import (
    RECIPE,
    RELEASE_EPOCH,
    FakeEngine,
    Samples,
    fake_engine,
    make_samples,
    request_for,
)
from ninfer_release.containers import DockerBackend, PushTarget, build_image, load_recipe
from ninfer_release.errors import BackendError, ExitCode
from registry_fixtures import LoopbackCA, Registry


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Samples:
    return make_samples(tmp_path_factory.mktemp("samples"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, samples: Samples) -> Path:
    """One daemonless build of the repo recipe on the samples (its ``image.tar`` is loaded below)."""
    out = tmp_path_factory.mktemp("built") / "o"
    from containers_support import request_for

    build_image(
        request_for(
            load_recipe(RECIPE),
            inputs=samples.inputs,
            base=str(samples.base),
            out=out,
            epoch=RELEASE_EPOCH,
            rendered=samples.rendered,
        )
    )
    return out


def _build_args(samples: Samples, out: Path, *extra: str) -> list[str]:
    return [
        "image", "build", str(RECIPE), "--inputs", str(samples.inputs), "--base", str(samples.base),
        "--out", str(out), "--source-date-epoch", str(RELEASE_EPOCH), *extra,
    ]  # fmt: skip


# --- real engine -------------------------------------------------------------------------------------


@pytest.mark.docker
def test_c37_docker_load_cli_and_docker_py_accept_the_archive(built: Path, docker_host: str) -> None:
    """C37: ``docker load`` (CLI) and ``docker.from_env().images.load()`` both load our tar."""
    import docker

    docker_cli = need_tool("docker")
    record = json.loads((built / "image.json").read_bytes())
    tag = record["outputs"]["repo_tags"][0]
    proc = subprocess.run(
        [docker_cli, "-H", docker_host, "load", "-i", str(built / "image.tar")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"Loaded image: {tag}" in proc.stdout
    inspect = json.loads(
        subprocess.run(
            [docker_cli, "-H", docker_host, "image", "inspect", tag], capture_output=True, check=True
        ).stdout
    )
    assert inspect[0]["Id"] == record["config"]["digest"]
    assert inspect[0]["Config"]["User"] == "10001:10001"
    subprocess.run([docker_cli, "-H", docker_host, "rmi", "-f", tag], capture_output=True, check=True)

    client = docker.DockerClient(base_url=docker_host)
    try:
        with (built / "image.tar").open("rb") as f:
            images = client.images.load(f)
        assert [img.id for img in images] == [record["config"]["digest"]]
        assert tag in images[0].tags
    finally:
        client.close()


@pytest.mark.docker
@pytest.mark.registry
def test_docker_backend_loads_smoke_runs_without_network_and_pushes(
    tmp_path: Path, samples: Samples, docker_host: str, registry: str, run_cli: RunCli
) -> None:
    """--backend docker: load, verify id, smoke-run with --network none as the non-root user, push."""
    skopeo = need_tool("skopeo")
    out = tmp_path / "o"
    target = f"{registry}/ninfer/runtime:smoke"
    code, stdout, stderr = run_cli(
        "--json",
        *_build_args(samples, out, "--backend", "docker", "--docker-host", docker_host, "--push", target),
    )
    assert code == 0, stderr
    doc = json.loads(stdout)
    backend = doc["backend"]
    assert backend["name"] == "docker"
    assert backend["image_id"] == doc["config"]["digest"]
    assert backend["smoke"]["network"] == "none" and backend["smoke"]["exit_code"] == 0
    assert "self-test ok uid=10001" in backend["smoke"]["output"]
    # Issue 8 §4: the self-test saved a checkpoint into the mount as the image user, on both kinds
    # of volume (a named volume is initialised from the image directory, ownership included).
    assert backend["smoke"]["checkpoint_mount"] == "/checkpoints-v013"
    assert backend["smoke"]["user"] == "10001:10001"
    assert backend["smoke"]["volumes"] == [
        {"volume": v, "exit_code": 0, "probe": "self-test.ckpt", "probe_uid": 10001}
        for v in ("anonymous", "named")
    ]
    pushed = backend["pushed"]
    assert pushed["reference"] == f"{target}@{pushed['digest']}"
    info = json.loads(
        subprocess.run(
            [skopeo, "inspect", "--tls-verify=false", f"docker://{target}"], capture_output=True, check=True
        ).stdout
    )
    assert info["Digest"] == pushed["digest"]
    assert info["Labels"]["io.ninfer.lane"] == "rtx5090"
    assert json.loads((out / "image.json").read_bytes())["backend"]["pushed"]["digest"] == pushed["digest"]


@pytest.mark.docker
def test_checkpoint_mount_is_writable_by_the_image_user_on_named_and_anonymous_volumes(
    built: Path, docker_host: str
) -> None:
    """Issue 8 §4: running as the image user (no --user override), write a checkpoint file into
    the mount on a fresh named volume and on the anonymous volume the image's VOLUME gives; both are
    real mounts, the file is owned by 10001, and the named volume keeps it."""
    docker_cli = need_tool("docker")
    record = json.loads((built / "image.json").read_bytes())
    tag = record["outputs"]["repo_tags"][0]
    base = [docker_cli, "-H", docker_host]
    subprocess.run([*base, "load", "-i", str(built / "image.tar")], capture_output=True, check=True)
    script = (
        "busybox grep -q ' /checkpoints-v013 ' /proc/mounts"
        " && echo ckpt > /checkpoints-v013/session.ckpt"
        " && busybox id -u && busybox stat -c %u /checkpoints-v013 /checkpoints-v013/session.ckpt"
    )
    volume = f"ninfer-test-{uuid.uuid4().hex[:12]}"
    subprocess.run([*base, "volume", "create", volume], capture_output=True, check=True)
    try:
        for mount in (["-v", f"{volume}:/checkpoints-v013"], []):  # named, then anonymous (VOLUME)
            proc = subprocess.run(
                [*base, "run", "--rm", "--network", "none", *mount, "--entrypoint", "/bin/busybox", tag,
                 "sh", "-c", script],
                capture_output=True, text=True,
            )  # fmt: skip
            assert proc.returncode == 0, (mount, proc.stderr)
            assert proc.stdout.split() == ["10001", "10001", "10001"], mount
        kept = subprocess.run(
            [*base, "run", "--rm", "--network", "none", "-v", f"{volume}:/c", "--entrypoint", "/bin/busybox",
             tag, "stat", "-c", "%u %s", "/c/session.ckpt"],
            capture_output=True, text=True,
        )  # fmt: skip
        assert kept.returncode == 0, kept.stderr
        assert kept.stdout.split() == ["10001", "5"]
    finally:
        subprocess.run([*base, "volume", "rm", "-f", volume], capture_output=True)


@pytest.mark.docker
def test_smoke_fails_when_the_checkpoint_probe_is_not_written(
    tmp_path: Path, samples: Samples, docker_host: str
) -> None:
    """The backend's smoke check can fail: a probe the self-test does not write is a backend error
    naming the mount, and no output directory is left."""
    import dataclasses

    recipe = load_recipe(RECIPE)
    assert recipe.smoke is not None
    recipe = dataclasses.replace(
        recipe, smoke=dataclasses.replace(recipe.smoke, checkpoint_probe="never.ckpt")
    )
    out = tmp_path / "o"
    result = build_image(
        request_for(recipe, inputs=samples.inputs, base=str(samples.base), out=out, epoch=RELEASE_EPOCH,
                    rendered=samples.rendered)
    )  # fmt: skip
    backend = DockerBackend(base_url=docker_host, smoke=recipe.smoke)
    with pytest.raises(BackendError) as exc:
        backend.deliver(result)
    assert "anonymous volume at /checkpoints-v013" in str(exc.value)
    assert "not writable by the image user" in str(exc.value)


@pytest.mark.docker
def test_smoke_run_has_no_network(built: Path, docker_host: str) -> None:
    """The smoke container runs with network mode none: only the loopback interface exists."""
    docker_cli = need_tool("docker")
    record = json.loads((built / "image.json").read_bytes())
    tag = record["outputs"]["repo_tags"][0]
    load = [docker_cli, "-H", docker_host, "load", "-i", str(built / "image.tar")]
    subprocess.run(load, capture_output=True, check=True)
    proc = subprocess.run(
        [docker_cli, "-H", docker_host, "run", "--rm", "--network", "none", "--entrypoint", "/bin/busybox",
         tag, "ls", "/sys/class/net"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["lo"]


@pytest.mark.docker
@pytest.mark.registry
def test_push_refused_by_registry_is_exit_6_and_nothing_recorded(
    tmp_path: Path, samples: Samples, docker_host: str, run_cli: RunCli
) -> None:
    """A registry that refuses the push (here: nothing listens) fails the build with exit 6; no output dir."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "o"
    code, _, stderr = run_cli(
        *_build_args(samples, out, "--backend", "docker", "--docker-host", docker_host, "--no-smoke",
                     "--push", f"127.0.0.1:{port}/ninfer/runtime:refused")
    )  # fmt: skip
    assert code == ExitCode.BACKEND
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and f"push 127.0.0.1:{port}/ninfer/runtime:refused" in errors[0], stderr
    assert "unreachable: Connection refused" in errors[0]
    assert not out.exists()


def test_daemon_not_running_is_exit_6_one_line(tmp_path: Path, samples: Samples, run_cli: RunCli) -> None:
    """A docker engine that is not running: one-line error, exit 6, no half-written output."""
    out = tmp_path / "o"
    code, _, stderr = run_cli(
        *_build_args(
            samples, out, "--backend", "docker", "--docker-host", f"unix://{tmp_path}/no-docker.sock"
        )
    )
    assert code == ExitCode.BACKEND
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "not reachable" in errors[0], stderr
    assert "Traceback" not in stderr
    assert not out.exists()
    assert not list(tmp_path.glob(".o.*"))


# --- fake Engine API: errors inside a 200 stream (C39) --------------------------------------------


def test_push_refused_by_an_authenticating_registry_fails_exit_6(
    tmp_path: Path, samples: Samples, run_cli: RunCli, tls_registry: Registry, test_ca: LoopbackCA
) -> None:
    """The push goes through the registry client, not the engine: a TLS + htpasswd registry with
    no credentials for it refuses → exit 6, one line, nothing recorded, the engine never pushes."""
    with fake_engine(FakeEngine()) as engine:
        out = tmp_path / "o"
        code, stdout, stderr = run_cli(
            *_build_args(samples, out, "--backend", "docker", "--docker-host", engine.url, "--no-smoke",
                         "--push", f"{tls_registry.host}/ninfer/runtime:denied"),
            env={"SSL_CERT_FILE": str(test_ca.ca), "DOCKER_CONFIG": str(tmp_path / "no-config")},
        )  # fmt: skip
    assert code == ExitCode.BACKEND
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "requires a login and no credentials were found" in errors[0], stderr
    assert "pushed" not in stdout
    assert not out.exists(), "a refused push must not leave a build record claiming publication"
    assert not any(c.endswith("/push") for c in engine.calls)


def test_c39_load_error_inside_200_stream_fails_exit_6(
    tmp_path: Path, samples: Samples, run_cli: RunCli
) -> None:
    """C39: a load stream containing errorDetail (e.g. disk full) fails the build with exit 6."""
    message = "write /var/lib/docker/tmp/docker-import: no space left on device"
    with fake_engine(FakeEngine(load_error=message)) as engine:
        out = tmp_path / "o"
        code, _, stderr = run_cli(
            *_build_args(samples, out, "--backend", "docker", "--docker-host", engine.url)
        )
    assert code == ExitCode.BACKEND
    assert message in stderr
    assert not out.exists()
    assert not any(c.endswith(("/push", "/tag")) for c in engine.calls)


def test_push_records_the_built_manifest_digest(built: Path, registry: str) -> None:
    """Library level: the push uploads the layout's exact bytes, so the recorded digest is the
    built manifest digest, and the registry serves those bytes under the tag."""
    import dataclasses

    from ninfer_release.containers import read_build_result
    from ninfer_release.registry import RegistryClient

    result = read_build_result(built)
    with fake_engine(FakeEngine()) as engine:
        backend = DockerBackend(base_url=engine.url, smoke=None, push=PushTarget.parse(f"{registry}/a/b:t"))
        facts = backend.deliver(dataclasses.replace(result))
    assert facts["pushed"] == {
        "reference": f"{registry}/a/b:t@{result.manifest_digest}",
        "digest": result.manifest_digest,
    }
    served = RegistryClient(registry).get_manifest("a/b", "t")
    assert served is not None and served.digest == result.manifest_digest
