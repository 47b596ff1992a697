"""Sample inputs for the container lane, made locally (nothing is pulled from outside).

* :func:`make_sample_base_layout` — a base image from Debian's ``busybox-static`` (``/bin/busybox``)
  as an OCI image layout: one layer with ``bin/busybox``, applet links, ``etc/passwd``/``etc/group``
  naming the non-root ``ninfer`` user (10001) and a ``tmp`` directory.
* :func:`make_sample_rtx5090_inputs` — the staged inputs of the RTX 5090 lane (``DIR/rtx5090/``):
  a busybox-shell **stand-in** server (not the NInfer engine), a stand-in runtime archive and a
  ``build-info.json`` that says so (``"stand_in": true``).

Both are deterministic: same busybox bytes and epoch → same digests.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ninfer_release.atomic import staged_directory, write_bytes
from ninfer_release.errors import InputError, Problem
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.reproducible import DIR_MODE, iso8601

from ._layers import EXEC_MODE, LayerEntry, write_layer
from ._layout import MT_LAYER_GZIP, blob_dir, blob_path
from ._oci import Descriptor, finish_layout, json_blob

BUSYBOX = Path("/bin/busybox")
#: Applets linked in the sample base's ``bin/`` (busybox-static picks the applet by argv[0]).
APPLETS = ("cat", "echo", "env", "ls", "sh", "sha256sum", "sleep", "test", "true")
SAMPLE_BASE_NAME = "sample/busybox-static"
SAMPLE_BASE_TAG = "busybox-static"
#: The 5090 lane's component tag (reference table "Lanes").
RTX5090_COMPONENT_TAG = "v0.7.0-qwen38-5090-beta.2"
#: Epoch of the sample base: the v0.13.1 source-date epoch; ``containers/qwen38-5090.yaml`` pins the
#: digest this gives (with Debian 12 busybox-static 1:1.35.0-4+deb12u1+b1).
SAMPLE_EPOCH = 1795132800

_PASSWD = b"root:x:0:0:root:/root:/bin/sh\nninfer:x:10001:10001:ninfer:/nonexistent:/bin/false\n"
_GROUP = b"root:x:0:\nninfer:x:10001:\n"

_SERVER = b"""#!/bin/sh
# ninfer-server STAND-IN (sample input of ninfer-release; NOT the NInfer engine).
# It only proves the image wiring: config present, checkpoint mount writable, runs as non-root.
set -eu
config="${NINFER_CONFIG:-/etc/ninfer/config.toml}"
case "${1:-}" in
  --version)
    echo "ninfer-server stand-in (sample)"
    ;;
  --self-test)
    test -r "$config" || { echo "self-test failed: cannot read $config" >&2; exit 3; }
    ckpt="${NINFER_CHECKPOINT_DIR:-/checkpoints-v013}"
    runtime=/opt/ninfer/runtime/share/ninfer/RUNTIME-VERSION
    test -d "$ckpt" || { echo "self-test failed: no checkpoint dir $ckpt" >&2; exit 3; }
    test -r "$runtime" || { echo "self-test failed: no runtime" >&2; exit 3; }
    # Save a checkpoint as the engine would: the mount must be writable by this (non-root) user.
    echo "self-test checkpoint uid=$(busybox id -u)" > "$ckpt/self-test.ckpt" \
      || { echo "self-test failed: cannot write a checkpoint into $ckpt" >&2; exit 3; }
    echo "self-test ok uid=$(busybox id -u) config=$(busybox sha256sum "$config" | busybox cut -d' ' -f1)"
    ;;
  *)
    echo "ninfer-server stand-in: would serve on 127.0.0.1:18082 with $config" >&2
    exec busybox sleep 3600
    ;;
esac
"""


def stand_in_commit(label: str) -> str:
    """A 40-hex **stand-in** source identity for sample inputs: SHA-1 of ``label``, not a real commit."""
    return hashlib.sha1(label.encode("utf-8"), usedforsecurity=False).hexdigest()


def check_sample_base_tool(busybox: Path | None = None) -> None:
    """Check that Debian's ``busybox-static`` is there (default :data:`BUSYBOX`, read at call time).

    Only the container lane's sample base needs it; the native lanes' samples do not.

    Raises:
        InputError: the file is missing, naming it and what to do (exit 4).
    """
    path = BUSYBOX if busybox is None else busybox
    if not path.is_file():
        raise InputError(
            problems=[
                Problem(
                    file=str(path),
                    message="not found: the rtx5090 container lane's sample base is built from Debian's "
                    "busybox-static (apt-get install busybox-static); the native lanes do not need it "
                    "(samples fetch --native-only)",
                )
            ]
        )


#: Upper bound on a host dpkg/os-release file read for the sample base, in bytes.
_MAX_HOST_METADATA = 64 << 20


def _host_text(path: Path) -> bytes | None:
    """The bytes of host file ``path`` (symlinks followed), ``None`` when absent or over the bound."""
    try:
        with path.open("rb") as f:
            data = f.read(_MAX_HOST_METADATA + 1)
    except OSError:
        return None
    return data if len(data) <= _MAX_HOST_METADATA else None


def _dpkg_evidence(busybox: Path, root: Path) -> list[LayerEntry]:
    """The host's dpkg metadata of the package that installed ``busybox`` (issue 35 item 5), as
    base layer entries: its ``var/lib/dpkg/status`` stanza, its file list cut to ``/bin/busybox``
    (the one file of it the base carries) and ``etc/os-release`` (the distribution it is from).
    Empty when ``root`` (``/``) has no such package: the SBOM then says only what the binary says.
    """
    info = root / "var/lib/dpkg/info"
    target = busybox.resolve()
    status = _host_text(root / "var/lib/dpkg/status") or b""
    for stanza in status.split(b"\n\n"):
        fields = dict(
            line.split(b": ", 1) for line in stanza.splitlines() if b": " in line and line[:1] != b" "
        )
        name = fields.get(b"Package", b"").decode("ascii", errors="replace")
        if fields.get(b"Status") != b"install ok installed" or not name:
            continue
        arch = fields.get(b"Architecture", b"").decode("ascii", errors="replace")
        listed = _host_text(info / f"{name}.list") or _host_text(info / f"{name}:{arch}.list") or b""
        owns = any(
            line.strip("/") and (root / line.lstrip("/")).resolve() == target
            for line in listed.decode("utf-8", errors="replace").splitlines()
        )
        os_release = _host_text(root / "etc/os-release")
        if owns and os_release is not None:
            return [
                LayerEntry(path="etc/os-release", kind="file", data=os_release),
                LayerEntry(path="var/lib/dpkg/status", kind="file", data=stanza.strip(b"\n") + b"\n"),
                LayerEntry(path=f"var/lib/dpkg/info/{name}.list", kind="file", data=b"/bin/busybox\n"),
            ]
    return []


def make_sample_base_layout(
    out: Path, *, epoch: int, busybox: Path | None = None, dpkg_root: Path = Path("/")
) -> str:
    """Write a one-layer busybox base image as an OCI layout at ``out``; returns its manifest digest.

    ``out`` must not exist (written atomically). The layout's ``index.json`` names the image
    ``busybox-static`` (so ``oci:OUT:busybox-static`` works for skopeo/umoci). The layer carries
    the dpkg metadata of the package that installed ``busybox`` on ``dpkg_root`` (its status
    stanza, its file list cut to ``/bin/busybox``, the host's ``etc/os-release``), so the image
    SBOM can name the Debian package it came from (``pkg:deb/debian/busybox-static@…``).

    Raises:
        InputError: ``busybox`` is missing (``apt-get install busybox-static``) or ``out`` exists.
    """
    check_sample_base_tool(busybox)
    busybox = BUSYBOX if busybox is None else busybox
    entries = [
        *_dpkg_evidence(busybox, dpkg_root),
        LayerEntry(path="bin/busybox", kind="file", mode=EXEC_MODE, source=busybox, origin=str(busybox)),
        *(LayerEntry(path=f"bin/{a}", kind="symlink", target="busybox") for a in APPLETS),
        LayerEntry(path="etc/passwd", kind="file", data=_PASSWD),
        LayerEntry(path="etc/group", kind="file", data=_GROUP),
        LayerEntry(path="tmp", kind="dir"),
    ]
    with staged_directory(out) as stage:
        blob_dir(stage, mode=DIR_MODE)
        tmp = stage / "layer.tmp"
        blob = write_layer(entries, tmp, epoch=epoch)
        tmp.replace(blob_path(stage, blob.digest))
        created = iso8601(epoch)
        config = {
            "architecture": "amd64",
            "os": "linux",
            "created": created,
            "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sh"]},
            "rootfs": {"type": "layers", "diff_ids": [blob.diff_id]},
            "history": [
                {"created": created, "created_by": "ninfer-release sample base: Debian busybox-static"}
            ],
        }
        written = finish_layout(
            stage,
            config_bytes=json_blob(config),
            layers=[Descriptor(media_type=MT_LAYER_GZIP, digest=blob.digest, size=blob.size)],
            ref_name=SAMPLE_BASE_TAG,
            annotations={
                "org.opencontainers.image.created": created,
                "org.opencontainers.image.title": SAMPLE_BASE_NAME,
            },
        )
    return written.manifest.digest


def _runtime_archive(dest: Path, *, epoch: int) -> None:
    entries = [
        LayerEntry(
            path="lib/libninfer-runtime.so.0.stand-in",
            kind="file",
            data=b"STAND-IN runtime library of the ninfer-release samples; not NInfer code.\n",
        ),
        LayerEntry(
            path="lib/libninfer-runtime.so.0", kind="symlink", target="libninfer-runtime.so.0.stand-in"
        ),
        LayerEntry(
            path="share/ninfer/RUNTIME-VERSION", kind="file", data=b"stand-in 0.7.0-qwen38-5090-beta.2\n"
        ),
    ]
    write_layer(entries, dest, epoch=epoch)


def make_sample_rtx5090_inputs(root: Path, *, epoch: int) -> Path:
    """Lay out the RTX 5090 lane's staged inputs under ``root/rtx5090/``; returns that directory.

    Files: ``build-info.json`` (component tag, a 40-hex *stand-in* source identity, ``stand_in``
    true), ``bin/ninfer-server`` (busybox shell stand-in, 0755), ``runtime/ninfer-runtime.tar.gz``
    (deterministic stand-in runtime archive). Existing files are overwritten with the same bytes.
    """
    lane = root / "rtx5090"
    (lane / "runtime").mkdir(parents=True, exist_ok=True)
    info = {
        "schema": 1,
        "lane": "rtx5090",
        "component_tag": RTX5090_COMPONENT_TAG,
        "source_commit": stand_in_commit("ninfer-release sample rtx5090 stand-in"),
        "stand_in": True,
        "license": "LicenseRef-NInfer-Sample-Stand-In",
        "note": "sample inputs: server and runtime are stand-ins; source_commit is the SHA-1 of a label",
    }
    write_bytes(lane / "build-info.json", dumps_stable(info))
    write_bytes(lane / "bin" / "ninfer-server", _SERVER, mode=EXEC_MODE)
    tmp = lane / "runtime" / ".ninfer-runtime.tar.gz.tmp"
    _runtime_archive(tmp, epoch=epoch)
    tmp.replace(lane / "runtime" / "ninfer-runtime.tar.gz")
    return lane


def sample_layout_step(staging: Path, context: object = None) -> None:
    """``samples fetch`` layout step: write ``staging/base-layout/`` and ``staging/rtx5090/``.

    Uses :data:`SAMPLE_EPOCH`, so the base digest is the one ``containers/qwen38-5090.yaml`` pins.
    ``context`` (the samples stage's step context) may carry a ``progress``
    (:class:`~ninfer_release.progress.Progress`).

    Raises:
        InputError: busybox-static is not installed, or ``staging/base-layout`` exists.
    """
    progress = getattr(context, "progress", None)
    digest = make_sample_base_layout(staging / "base-layout", epoch=SAMPLE_EPOCH)
    make_sample_rtx5090_inputs(staging, epoch=SAMPLE_EPOCH)
    if progress is not None:
        progress.step(f"rtx5090: sample base {digest} and stand-in inputs")
