"""Images: ``image build``, ``image carry`` and a container lane in ``build`` mode (docs/containers.md).

The CLI passes the options as given; the rules for their defaults live here: the lane's staged
directory (:func:`~ninfer_release.build._inputs.lane_staged_dir`), the source-date epoch
(:func:`image_epoch`), the profile (``<repo>/profiles/<recipe profile>.yaml``), version and
revision (the staged ``build-info.json``), the backend, and which lane may be carried.
:func:`build_image_with_sboms` builds an image and its SBOMs; :func:`read_image_inputs` and
:func:`run_image_lane` read and execute a container lane's plan
(:func:`~ninfer_release.build._plan.plan_image_lane`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import select
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ninfer_release import __version__, containers, manifests, sbom
from ninfer_release.atomic import staged_directory, write_bytes
from ninfer_release.build._inputs import SBOM_SUPPLIER, lane_staged_dir
from ninfer_release.errors import InputError, Problem
from ninfer_release.hashing import sha256_bytes
from ninfer_release.progress import SILENT, Prefixed, Progress
from ninfer_release.reproducible import source_date_epoch

if TYPE_CHECKING:  # the lane plans load with a container lane's build, not with ``image build``
    from ninfer_release.build._plan import ImageInputs, LanePlan

#: The licence of what ninfer-release renders into an image (config, profile): the project's own
#: (pyproject.toml ``license``), as the image SBOMs state it.
OWN_LICENSE = "Apache-2.0"
#: The copyright notice of what an image build adds (rendered config and profile, our layers).
OWN_COPYRIGHT = "Copyright OMP NInfer contributors"
#: Default base of a built container lane, under ``--inputs`` (what ``samples fetch`` lays out).
DEFAULT_BASE_DIR = "base-layout"


@dataclass(frozen=True, kw_only=True)
class ImageBuildOptions:
    """The options of ``image build`` as given (``None``: the documented default).

    ``release`` is a release definition to take the epoch from, read with ``release_root`` as its
    project root; ``repo_root`` holds ``profiles/`` for the default profile. ``epoch`` in seconds.
    """

    recipe: Path
    inputs: Path
    base: str
    out: Path
    repo_root: Path
    version: str | None = None
    revision: str | None = None
    epoch: int | None = None
    release: Path | None = None
    release_root: Path | None = None
    profile: Path | None = None


@dataclass(frozen=True, kw_only=True)
class ImageBuildInputs:
    """An ``image build`` resolved: the request for the containers stage and what the staged
    ``build-info.json`` says (stand-in, licence) for the SBOMs."""

    request: containers.ImageBuildRequest
    info: containers.StagedImageInfo


def image_epoch(
    given: int | None, *, release: Path | None, release_root: Path | None, env: Mapping[str, str]
) -> int:
    """The source-date epoch of an image build, in seconds: ``given`` (``--source-date-epoch``),
    else ``SOURCE_DATE_EPOCH`` from ``env``, else the ``release`` definition's value.

    Raises:
        InputError: none of the three (exit 4).
        DefinitionError: ``SOURCE_DATE_EPOCH`` or the definition is invalid (exit 3).
    """
    if given is not None:
        return given
    default = None
    if release is not None:
        default = manifests.load_release(release, env=env, repo_root=release_root).source_date_epoch
    if default is None and not env.get("SOURCE_DATE_EPOCH"):
        raise InputError("no source-date epoch: give --source-date-epoch, SOURCE_DATE_EPOCH or --release")
    return source_date_epoch(default or 0, env)


def resolve_image_build(options: ImageBuildOptions, *, env: Mapping[str, str]) -> ImageBuildInputs:
    """Resolve ``image build``'s options into one :class:`~ninfer_release.containers.ImageBuildRequest`.

    The staged directory is the recipe's lane under ``options.inputs`` (or ``inputs`` itself);
    version and revision default to its ``build-info.json``; the config is rendered from the
    profile when the recipe ships rendered files.

    Raises:
        InputError: the recipe, staged inputs, profile or epoch is missing or invalid (exit 4).
        DefinitionError: the recipe, profile or definition is invalid (exit 3).
    """
    recipe = containers.load_recipe(options.recipe)
    lane_dir = lane_staged_dir(options.inputs, recipe.lane)
    info = containers.read_build_info(lane_dir)
    epoch = image_epoch(options.epoch, release=options.release, release_root=options.release_root, env=env)
    profile = options.profile or options.repo_root / "profiles" / f"{recipe.profile}.yaml"
    request = containers.ImageBuildRequest(
        recipe=recipe,
        inputs=lane_dir,
        base=options.base,
        out=options.out,
        version=options.version or info.component_tag,
        revision=options.revision or info.source_commit,
        epoch=epoch,
        rendered=containers.render_inputs(profile) if recipe.rendered_kinds else None,
    )
    return ImageBuildInputs(request=request, info=info)


def image_backend(
    kind: str,
    *,
    recipe: containers.ImageRecipe,
    env: Mapping[str, str],
    docker_host: str | None = None,
    push: str | None = None,
    smoke: bool = True,
) -> containers.ImageBackend:
    """The backend ``kind`` (``oci`` or ``docker``) names; the docker one reaches ``docker_host``
    (default ``DOCKER_HOST``), smoke-runs the recipe's check unless ``smoke`` is false and pushes
    to ``push`` (``REGISTRY/REPOSITORY:TAG``) when given."""
    if kind != "docker":
        return containers.OciBackend()
    return containers.DockerBackend(
        base_url=containers.docker_host(env, docker_host),
        smoke=recipe.smoke if smoke else None,
        push=containers.PushTarget.parse(push) if push else None,
    )


def carried_lane(release: manifests.Release, lane_id: str, *, where: str) -> manifests.CarriedImage:
    """The published record of lane ``lane_id``, which must be a carried lane; ``where`` names the
    definition as the user gave it.

    Raises:
        InputError: no such lane, or the lane is not carried (exit 4).
    """
    found = release.lanes.get(lane_id)
    if found is None:
        why = f"no such lane; known: {sorted(release.lanes)}"
        raise InputError(problems=[Problem(file=where, field=f"lanes.{lane_id}", message=why)])
    if found.mode != "carry" or found.carried is None:
        why = f"is {found.mode!r}; only a carried lane can be carried"
        raise InputError(problems=[Problem(file=where, field=f"lanes.{lane_id}.mode", message=why)])
    return found.carried


@dataclass(frozen=True, kw_only=True)
class ImageOutcome:
    """An image build plus its SBOMs, all in ``result.out`` (:func:`build_image_with_sboms`).

    ``sbom_files`` maps ``sbom.cdx.json`` / ``sbom.spdx.json`` to ``{"sha256", "size"}``.
    """

    result: containers.ImageBuildResult
    sboms: sbom.ImageSboms
    sbom_files: Mapping[str, Mapping[str, Any]]

    def as_json(self) -> dict[str, Any]:
        """The build record (as ``image.json``) plus the SBOM files by digest."""
        return {**self.result.as_json(), "sbom": {k: dict(v) for k, v in sorted(self.sbom_files.items())}}


@dataclass(frozen=True, kw_only=True)
class _SbomJob:
    """What :func:`_image_sboms` renders from (picklable: it crosses to the renderer process)."""

    built: containers.ImageBuildResult
    request: containers.ImageBuildRequest
    stage: Path
    stand_in: bool
    inputs_license: str | None

    def render(self) -> sbom.ImageSboms:
        return _image_sboms(
            self.built, self.request, self.stage, stand_in=self.stand_in, inputs_license=self.inputs_license
        )


class SbomRenderer:
    """A child process, forked before the image build starts, that renders its SBOMs (issue 13).

    The SBOM libraries (spdx-tools with beartype, cyclonedx, jsonschema and the schemas, the
    licence list) take about half a second of CPU to load, all Python: on the build's thread
    they were the longest part of what follows the layers, and they held the GIL against the
    thread writing ``image.tar``. Forked while the build is still one thread, the child loads
    them on the other core while the parent reads the recipe and writes the layers, then
    renders the SBOMs of the job it is sent (:meth:`render`) while the parent writes
    ``image.tar``. Same code, same inputs: the same bytes (tested).

    The child is only a head start: when it cannot answer — it failed, died, or the job raised
    there — :meth:`render` returns ``None`` and the caller renders in its own process, which
    raises any real error with its own message. The child ignores SIGINT (the parent handles
    Ctrl-C and then ends it), writes nothing to stdout or stderr, and leaves by ``os._exit``.
    """

    def __init__(self, pid: int, jobs: int, results: int) -> None:
        self._pid: int | None = pid
        self._jobs: int | None = jobs
        self._results: int | None = results

    @classmethod
    def start(cls) -> SbomRenderer | None:
        """Fork the renderer; ``None`` where there is no ``fork``, the process has threads
        (forking a threaded process could leave the child with locks no thread will release), or
        no pipe or process can be had (then the caller renders in its own process)."""
        if not hasattr(os, "fork") or threading.active_count() != 1:
            return None
        opened: list[int] = []
        try:
            opened.extend(os.pipe())
            opened.extend(os.pipe())
            pid = os.fork()
        except OSError:  # no descriptors (EMFILE) or processes (EAGAIN) to be had: render here
            for fd in opened:
                os.close(fd)
            return None
        jobs_r, jobs_w, results_r, results_w = opened
        if pid == 0:  # pragma: no cover - the child; its work is checked through the parent
            code = 1
            try:
                os.close(jobs_w)
                os.close(results_r)
                _serve_sboms(jobs_r, results_w)
                code = 0
            finally:
                os._exit(code)
        os.close(jobs_r)
        os.close(results_w)
        return cls(pid, jobs_w, results_r)

    def render(self, job: _SbomJob, *, timeout: float = 600.0) -> sbom.ImageSboms | None:
        """The SBOMs of ``job`` rendered by the child, or ``None`` if it gave none within
        ``timeout`` seconds (then the caller renders them); ends the child either way."""
        deadline = time.monotonic() + timeout
        try:
            if self._jobs is None or self._results is None:
                return None
            sent = _write_all(
                self._jobs, pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL), deadline=deadline
            )
            os.close(self._jobs)  # the end of the job for the child
            self._jobs = None
            answer = _read_all(self._results, deadline=deadline) if sent else None
        finally:
            self.close()
        try:
            found = pickle.loads(answer) if answer else None  # noqa: S301 - our own child, a private pipe
        except Exception:  # noqa: BLE001 - a child that died mid-answer: the caller renders instead
            return None
        return found if isinstance(found, sbom.ImageSboms) else None

    def close(self) -> None:
        """End the child (if still running) and reap it; idempotent."""
        for fd in (self._jobs, self._results):
            if fd is not None:
                os.close(fd)
        self._jobs = self._results = None
        if self._pid is not None:
            pid, self._pid = self._pid, None
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):  # reaped elsewhere (a waitpid(-1) of the caller's)
                os.waitpid(pid, 0)


def _wait(fd: int, events: int, *, deadline: float) -> bool:
    """Whether ``fd`` is ready for ``events`` (or hung up) before ``deadline`` (``time.monotonic``).

    ``poll``, not ``select``: a process started with many descriptors open gets pipes numbered
    above ``select``'s limit of 1024 (it raised ``ValueError`` there).
    """
    poller = select.poll()
    poller.register(fd, events)
    return bool(poller.poll(max(0.0, deadline - time.monotonic()) * 1000))


def _write_all(fd: int, data: bytes, *, deadline: float) -> bool:
    """Write ``data`` to the pipe ``fd`` before ``deadline``; ``False`` if that failed or did not
    finish in time (a child stuck before reading a job larger than the pipe's buffer)."""
    os.set_blocking(fd, False)
    view = memoryview(data)
    while view:
        if not _wait(fd, select.POLLOUT, deadline=deadline):
            return False
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            continue
        except OSError:  # EPIPE: the child is gone
            return False
    return True


def _read_all(fd: int, *, deadline: float) -> bytes | None:
    """Everything the pipe ``fd`` gives until its end, or ``None`` if it has not ended by ``deadline``."""
    pieces: list[bytes] = []
    while True:
        if not _wait(fd, select.POLLIN, deadline=deadline):
            return None
        piece = os.read(fd, 1 << 16)
        if not piece:
            return b"".join(pieces)
        pieces.append(piece)


def _serve_sboms(jobs: int, results: int) -> None:  # pragma: no cover - runs in the child
    """The renderer child: load the SBOM libraries, then answer one job (or nothing)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(BaseException):
        sbom.prewarm_validators().join()
        sbom.normalize_license_expression("MIT")  # the licence list's lookup tables
        containers.read_base_packages  # noqa: B018 - lazy exports: the import is the work
        containers.image_sbom_records  # noqa: B018
    answer: object = None
    with os.fdopen(jobs, "rb") as f:
        data = f.read()
    if data:
        with contextlib.suppress(Exception):
            answer = pickle.loads(data).render()  # noqa: S301 - our own parent, a private pipe
    with contextlib.suppress(OSError), os.fdopen(results, "wb") as f:
        pickle.dump(answer, f, protocol=pickle.HIGHEST_PROTOCOL)


@contextlib.contextmanager
def sbom_renderer() -> Iterator[SbomRenderer | None]:
    """An :class:`SbomRenderer` started now (or ``None``), ended when the block exits."""
    renderer = SbomRenderer.start()
    try:
        yield renderer
    finally:
        if renderer is not None:
            renderer.close()


def build_image_with_sboms(
    request: containers.ImageBuildRequest,
    *,
    backend: containers.ImageBackend | None = None,
    progress: Progress = SILENT,
    stand_in: bool = False,
    inputs_license: str | None = None,
    renderer: SbomRenderer | None = None,
) -> ImageOutcome:
    """Build an image (``containers.build_image``) and write its SBOMs beside ``image.json``, atomically.

    ``request.out`` appears complete — ``layout/``, ``image.tar``, ``image.json``,
    ``sbom.cdx.json`` (CycloneDX 1.6), ``sbom.spdx.json`` (SPDX 2.3) — or not at all: the image's
    layout is written into a staging directory (``containers.write_image_layout``), then
    ``containers.finish_image`` writes ``image.tar`` and ``image.json`` on a helper thread while
    the SBOMs are rendered from the layout's records (``sbom.image_sboms``, times from
    ``request.epoch``), then the directory is renamed into place.
    ``stand_in`` marks the staged inputs as sample stand-ins in the CycloneDX document;
    ``inputs_license`` is their licence. The base layers are read for the software they ship
    (``containers.read_base_packages``: BusyBox, dpkg packages) so the SBOMs list it. With a
    ``renderer`` (:func:`sbom_renderer`, started before the build) the SBOMs are rendered in
    that child process, else (or if it gives none) here; the bytes are the same.

    Raises:
        InputError: ``request.out`` exists, or as ``containers.build_image`` (exit 4).
        IntegrityError: the base is not the pinned one, a blob or an SBOM fails validation (exit 5).
        BackendError: the registry or the docker backend failed (exit 6).
    """
    out = request.out
    with staged_directory(out) as stage:
        laid = containers.write_image_layout(request, stage, progress=progress)
        progress.step("archive image.tar")
        progress.step(f"backend {(backend or containers.OciBackend()).name}")
        # image.tar is written (and every blob flushed to disk) on a thread while the SBOMs are
        # rendered from the layout's records: they need no archive, and the work of one is mostly
        # hashing and I/O, the other mostly Python.
        job = _SbomJob(
            built=laid.result, request=request, stage=stage, stand_in=stand_in, inputs_license=inputs_license
        )
        with ThreadPoolExecutor(1, thread_name_prefix="image-archive") as pool:
            finishing = pool.submit(containers.finish_image, laid, backend=backend)
            progress.step("sbom")
            sboms = (renderer.render(job) if renderer is not None else None) or job.render()
            # written (and flushed) while image.tar may still be flushing on the helper thread
            write_bytes(stage / sbom.IMAGE_CDX_NAME, sboms.cyclonedx, overwrite=False)
            write_bytes(stage / sbom.IMAGE_SPDX_NAME, sboms.spdx, overwrite=False)
            built = finishing.result()
    result = dataclasses.replace(built, out=out, layout=out / "layout", archive=out / "image.tar")
    return ImageOutcome(result=result, sboms=sboms, sbom_files=sbom.image_sbom_digests(sboms))


def _image_sboms(
    built: containers.ImageBuildResult,
    request: containers.ImageBuildRequest,
    stage: Path,
    *,
    stand_in: bool,
    inputs_license: str | None,
) -> sbom.ImageSboms:
    """The SBOMs of the image laid out in ``stage/layout``, its record ``built`` (no archive needed)."""
    base_packages = containers.read_base_packages(
        stage / "layout", [(layer.digest, layer.media_type) for layer in built.layers if layer.from_base]
    )
    records = containers.image_sbom_records(
        built,
        base_packages=base_packages,
        base_supplier=request.recipe.base_supplier,
        inputs_license=inputs_license,
    )
    # The recipe lives in <repo>/containers/; the curated licence texts in <repo>/sbom/licenses.
    licenses_dir = Path(request.recipe.file).resolve().parent.parent / "sbom" / "licenses"
    refs = sbom.image_license_refs(records, own_license=OWN_LICENSE)
    return sbom.image_sboms(
        records,
        epoch=request.epoch,
        supplier=SBOM_SUPPLIER,
        tool_name="ninfer-release",
        tool_version=__version__,
        stand_in=stand_in,
        own_license=OWN_LICENSE,
        license_texts=sbom.load_license_texts(refs, licenses_dir=licenses_dir),
        own_copyright=OWN_COPYRIGHT,
    )


def read_image_inputs(
    release: manifests.Release, lane: manifests.Lane, inputs: Path, *, base: str | None
) -> ImageInputs:
    """Read what container lane ``lane`` (``build`` mode) is planned from: the recipe
    ``container_recipe``, the lane's staged tree under ``inputs`` and its ``build-info.json``, the
    sizes of its files, and whether the default base ``<inputs>/base-layout`` exists.

    Raises:
        InputError: the recipe, the staged tree or ``build-info.json`` is missing or invalid (exit 4).
    """
    from ninfer_release.build._plan import ImageInputs

    assert lane.container_recipe is not None  # the definition requires it for an oci-image lane
    recipe = containers.load_recipe(release.repo_root / lane.container_recipe)
    staged = lane_staged_dir(inputs, lane.id)
    files = sorted(p for p in staged.rglob("*") if p.is_file())
    default_base = inputs / DEFAULT_BASE_DIR
    return ImageInputs(
        release=release,
        lane=lane,
        recipe=recipe,
        staged=staged,
        files=tuple((p.relative_to(staged).as_posix(), p.stat().st_size) for p in files),
        info=containers.read_build_info(staged),
        base=base,
        default_base=default_base,
        default_base_exists=(default_base / "index.json").is_file(),
    )


def _image_entry(
    lane: manifests.Lane, built: ImageOutcome, recipe: containers.ImageRecipe, *, stand_in: bool
) -> manifests.ImageLaneEntry:
    """The lane entry of a built image: its digests, base, layers, bindings and output files
    (``stand_in``: the staged inputs are sample stand-ins)."""
    result = built.result
    bindings = {b.name: b.sha256 for b in result.bound_inputs}

    def file_ref(name: str, sha256: str, size: int) -> manifests.OutputRef:
        return manifests.OutputRef(path=f"{lane.id}/{name}", sha256=sha256, size=size)

    record = result.as_bytes()
    return manifests.ImageLaneEntry(
        component_tag=lane.component_tag,
        kind=lane.kind,
        mode=lane.mode,
        profile_id=lane.profile_id,
        source_commit=lane.source_commit,
        image=result.image,
        image_reference=result.reference,
        image_digest=result.manifest_digest,
        image_config_digest=result.config_digest,
        base_image=manifests.BaseImageRef(name=result.base_name, digest=result.base_digest),
        base_digest=result.base_digest,
        version=result.version,
        revision=result.revision,
        created=result.created,
        layers=tuple(layer.digest for layer in result.layers),
        bindings={
            **bindings,
            "base_image": result.base_digest,
            "checkpoint_mount": recipe.checkpoint_mount,
        },
        config=manifests.ConfigHash(hash_kind="semantic", sha256=result.config_semantic_sha256),
        outputs=manifests.ImageOutputs(
            archive=file_ref("image.tar", result.archive_sha256, result.archive_size),
            record=file_ref("image.json", sha256_bytes(record), len(record)),
            sbom=manifests.SbomOutputs(
                cyclonedx=file_ref(sbom.IMAGE_CDX_NAME, **built.sbom_files[sbom.IMAGE_CDX_NAME]),
                spdx=file_ref(sbom.IMAGE_SPDX_NAME, **built.sbom_files[sbom.IMAGE_SPDX_NAME]),
            ),
        ),
        stand_in=stand_in,
    )


def run_image_lane(
    plan: LanePlan, *, out: Path, progress: Progress = SILENT
) -> tuple[manifests.ImageLaneEntry, Path]:
    """Execute container lane ``plan``: build its image daemonlessly into ``out/<lane>/`` on the
    planned base, with the lane's profile rendered (the lane binds the **semantic** config digest,
    DESIGN.md §5). Returns the lane entry and the image directory.

    Raises:
        InputError, IntegrityError, BackendError: as :func:`build_image_with_sboms`.
    """
    from ninfer_release.build._plan import ImageWork

    work = plan.work
    assert isinstance(work, ImageWork)
    source = work.source
    release, lane = source.release, source.lane
    request = containers.ImageBuildRequest(
        recipe=source.recipe,
        inputs=source.staged,
        base=work.base,
        out=out / lane.id,
        version=lane.component_tag,
        revision=lane.source_commit,
        epoch=release.source_date_epoch,
        rendered=containers.render_inputs(work.profile),
    )

    built = build_image_with_sboms(
        request,
        progress=Prefixed(progress, f"{lane.id} image"),
        stand_in=source.info.stand_in,
        inputs_license=source.info.license,
    )
    return _image_entry(lane, built, source.recipe, stand_in=source.info.stand_in), built.result.out
