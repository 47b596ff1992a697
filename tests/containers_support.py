"""Shared helpers for the containers tests: sample base, staged inputs, small recipes, a fake Engine API."""

from __future__ import annotations

import http.server
import io
import json
import re
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ninfer_release.containers import (
    ImageBuildRequest,
    ImageRecipe,
    RenderedInputs,
    make_sample_base_layout,
    make_sample_rtx5090_inputs,
    parse_recipe,
    render_inputs,
)

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "containers" / "qwen38-5090.yaml"
PROFILE = REPO / "profiles" / "qwen38-5090-v0.13.0.yaml"
#: The v0.13.1 source-date epoch (manifests/v0.13.1.yaml); the repo recipe pins the sample base made with it.
RELEASE_EPOCH = 1795132800
C36_EPOCH = 1700000000
C36_CREATED = "2023-11-14T22:13:20Z"
COMMIT = "7a25cd72f490183e4113f1e84e68e36d653ddd28"


@dataclass(frozen=True, kw_only=True)
class Samples:
    """Sample base layout (+ its digest), staged 5090 inputs, rendered config/profile."""

    base: Path
    base_digest: str
    inputs: Path
    rendered: RenderedInputs


def make_samples(root: Path, *, epoch: int = RELEASE_EPOCH) -> Samples:
    """Lay out the sample base and the staged 5090 inputs under ``root``."""
    base = root / "base-layout"
    digest = make_sample_base_layout(base, epoch=epoch)
    inputs = make_sample_rtx5090_inputs(root, epoch=epoch)
    return Samples(base=base, base_digest=digest, inputs=inputs, rendered=render_inputs(PROFILE))


def small_recipe(base_digest: str, **overrides: Any) -> dict[str, Any]:
    """A minimal valid recipe mapping: one staged file ``opt/engine/engine.cfg`` (C36 input)."""
    data: dict[str, Any] = {
        "schema": 1,
        "lane": "rtx5090",
        "image": "127.0.0.1/test/engine",
        "source": "https://example.invalid/engine",
        "profile": "qwen38-5090-v0.13.0",
        "config_binding": "semantic",
        "base": {"digest": base_digest, "name": "sample/busybox-static"},
        "user": "10001:10001",
        "workdir": "/opt/engine",
        "env": {"PATH": "/bin"},
        "entrypoint": ["/bin/sh"],
        "ports": [18082],
        "checkpoint_mount": "/checkpoints-v013",
        "layers": [
            {
                "name": "engine",
                "entries": [
                    {"staged": "engine.cfg", "dest": "opt/engine/engine.cfg"},
                    {"dir": "checkpoints-v013"},  # the checkpoint mount must be a layer directory
                ],
            }
        ],
    }
    data.update(overrides)
    return data


def request_for(
    recipe: ImageRecipe,
    *,
    inputs: Path,
    base: str,
    out: Path,
    epoch: int,
    rendered: RenderedInputs | None = None,
) -> ImageBuildRequest:
    """An :class:`ImageBuildRequest` with the stand-in version/commit used across tests."""
    return ImageBuildRequest(
        recipe=recipe,
        inputs=inputs,
        base=base,
        out=out,
        version="v0.7.0-qwen38-5090-beta.2",
        revision=COMMIT,
        epoch=epoch,
        rendered=rendered,
    )


def parse(data: dict[str, Any], file: str = "test-recipe.yaml") -> ImageRecipe:
    """Parse a recipe mapping."""
    return parse_recipe(data, file=file)


def read_blob(layout: Path, digest: str) -> bytes:
    """Bytes of a layout blob."""
    return (layout / "blobs" / "sha256" / digest.removeprefix("sha256:")).read_bytes()


def image_config_of(layout: Path) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(manifest, config, manifest digest) of the single image in ``layout``."""
    index = json.loads((layout / "index.json").read_bytes())
    digest = index["manifests"][0]["digest"]
    manifest = json.loads(read_blob(layout, digest))
    config = json.loads(read_blob(layout, manifest["config"]["digest"]))
    return manifest, config, digest


# --- a fake Engine API (C39) ------------------------------------------------------------------------

DENIED = "denied: requested access to the resource is denied"


@dataclass
class FakeEngine:
    """Behaviour and observations of the fake Engine API server."""

    load_error: str | None = None
    push_error: str | None = None
    calls: list[str] = field(default_factory=list)
    config_digest: str = ""
    url: str = ""


class _EngineHandler(http.server.BaseHTTPRequestHandler):
    """The fake Engine API: ``engine`` (a subclass attribute, see ``_handler``) holds behaviour and calls."""

    protocol_version = "HTTP/1.1"
    engine: FakeEngine

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, lines: list[dict[str, Any]]) -> None:
        # HTTP 200 + chunked JSON progress, like the Engine API (errors travel *inside* it).
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for line in lines:
            chunk = (json.dumps(line) + "\r\n").encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))

    def do_GET(self) -> None:
        path = re.sub(r"^/v[0-9.]+", "", self.path.split("?")[0])
        self.engine.calls.append(f"GET {path}")
        if path == "/version":
            self._json(200, {"ApiVersion": "1.41", "Version": "20.10.24-fake", "MinAPIVersion": "1.12"})
        elif path == "/_ping":
            self._json(200, "OK")
        elif path.startswith("/images/") and path.endswith("/json"):
            self._json(200, {"Id": self.engine.config_digest})
        else:
            self._json(404, {"message": f"fake engine: no route {path}"})

    def do_POST(self) -> None:
        path = re.sub(r"^/v[0-9.]+", "", self.path.split("?")[0])
        self.engine.calls.append(f"POST {path}")
        body = self._body()
        if path == "/images/load":
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                member = tar.extractfile("manifest.json")
                assert member is not None
                manifest = json.loads(member.read())
            self.engine.config_digest = "sha256:" + manifest[0]["Config"].rsplit("/", 1)[1]
            lines: list[dict[str, Any]] = [{"stream": "Loaded image: " + manifest[0]["RepoTags"][0] + "\n"}]
            if self.engine.load_error:
                lines = [
                    {"errorDetail": {"message": self.engine.load_error}, "error": self.engine.load_error}
                ]
            self._stream(lines)
        elif path.endswith("/tag"):
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path.endswith("/push"):
            lines = [{"status": "The push refers to repository [127.0.0.1:5000/ninfer/runtime]"}]
            if self.engine.push_error:
                lines.append(
                    {"errorDetail": {"message": self.engine.push_error}, "error": self.engine.push_error}
                )
            else:
                lines.append({"aux": {"Tag": "t", "Digest": "sha256:" + "ab" * 32, "Size": 1}})
            self._stream(lines)
        else:
            self._json(404, {"message": f"fake engine: no route {path}"})


def _handler(engine: FakeEngine) -> type[http.server.BaseHTTPRequestHandler]:
    """A handler class serving ``engine`` (one per server)."""
    return type("Handler", (_EngineHandler,), {"engine": engine})


@contextmanager
def fake_engine(engine: FakeEngine) -> Iterator[FakeEngine]:
    """Serve ``engine`` on 127.0.0.1 (a free port) for the duration of the block."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(engine))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    engine.url = f"tcp://127.0.0.1:{server.server_address[1]}"
    try:
        yield engine
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
