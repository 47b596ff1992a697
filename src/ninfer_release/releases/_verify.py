"""Consumer verification of a native asset set (DESIGN.md §4; what installers run).

Checks, each failure one line naming the file:

1. the exact set: the 10 entries of the contract plus ``SHA256SUMS``, nothing missing, nothing extra;
2. ``SHA256SUMS`` (GNU text, GNU binary ``*name`` and BSD tag forms accepted, C01–C10) lists exactly
   the 10 entries, and every digest holds;
3. SPDX 2.3 and CycloneDX 1.6 validity;
4. the cross-bindings: SPDX file checksums = zip members; CycloneDX hashes = zip DLLs; config asset
   = zip copy = profile hash = component manifest = qualification binding; SPDX asset = zip copy;
   component manifest sizes/digests = entries 1–9; provenance subjects = entries 1–7; route package
   = zip; the package's members are exactly the provenance's staged inputs under ``bin/`` and
   ``licenses/`` plus the members the build generates (config, profile, SPDX copy, notices), and
   its profile = the profile asset; optionally ``SHA256SUMS`` = the digest the release manifest binds;
5. the identity: the component manifest's component tag names this set, and its lane, profile,
   source commit, release, release-instance id (derived from the package digest) and
   qualification status are the ones the qualification, route, profile and provenance records
   state, and so are its CUDA arch, version and runtime (route ``hardware``, provenance
   ``internalParameters`` with the epoch) -- so no single record can be relabelled (e.g.
   ``unqualified`` -> ``qualified``, which decides whether a set may be published without
   ``--draft``) and re-sealed unnoticed; the contract's constants (each record's ``schema``, the
   manifest ``kind``, the model binding, a loopback bearer endpoint, a read-only program root,
   checkpoint schema 3, no key in the assets, no resume onto an older model) are typed as
   literals, so a record stating another value fails to parse;
   and the config holds exactly what the profile renders (``CONFIG_FROM_PROFILE``), the
   profile's model is the model entry's, the provenance binds the config and model bytes;
6. the install paths: every path the route block names (key, model, cache, checkpoints, config)
   is where the config reads it, its endpoint host, port and auth are the config's ``[server]``
   ones, its model URL and revision are the model entry's, every path is a plain absolute Windows
   path, ``install.create_dirs`` are exactly the folders those paths need, and no writable path
   is under ``C:\\Program Files``.

The zip is never extracted to disk; what is read from it is bounded (unsafe names and bomb ratios
are reported, not followed). Every byte of every file is hashed once.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ninfer_release import packaging, sbom, strictjson
from ninfer_release.checksums import parse_sha256sums, sums_bound
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.hashing import sha256_bytes, sha256_file
from ninfer_release.jsonrecord import JsonRecord
from ninfer_release.progress import SILENT, Progress
from ninfer_release.releases import _scan_worker
from ninfer_release.releases._contract import (
    SHIPPED_FOLDERS,
    SUMS_NAME,
    ZIP_CONFIG_PATH,
    AssetNames,
    generated_members,
    package_stem,
    stem_from_names,
    zip_profile_path,
    zip_spdx_path,
)
from ninfer_release.releases._receipts import merge_gates, qualifies
from ninfer_release.releases._records import (
    STATEMENT_TYPE,
    BoundTo,
    ComponentManifest,
    ModelRecord,
    ProfileAsset,
    ProvenanceStatement,
    QualificationRecord,
    ReceiptEntry,
    RouteRecord,
    release_instance_id,
)
from ninfer_release.releases._standalone_verifier import (
    ROUTE_CACHE_ACL,
    ROUTE_KEY_SPEC,
    route_plan_problems,
    with_account,
)
from ninfer_release.winpaths import (
    DATA_ROOT,
    INSTANCE_PLACEHOLDER,
    PROGRAM_ROOT,
    plain_path_problem,
    windows_join,
)

#: Bytes a JSON record or the config of a set can legitimately be: ours are 0.4–6 KiB; 1 MiB is
#: generous and still bounds what verify holds in memory (docs/reliability.md).
MAX_RECORD_ENTRY = 1 << 20
#: An SBOM grows with the package: a fixed part (document header, packages, licence texts) plus
#: one file/component entry per zip member (ours: ~21 KiB for 20 members, ~0.93 KiB per file at
#: 100k files). The per-member part was 64 KiB until a hostile review (2026-12-04) showed 2,000
#: empty members buying a 130 MiB bound; 8 KiB leaves about 9x our largest entry.
SBOM_BASE_BYTES = 4 << 20
SBOM_BYTES_PER_MEMBER = 8 << 10
#: JSON objects and arrays an SBOM or the provenance may hold: a fixed part plus a number per zip
#: member (ours: at most ~12 per member; the sample set's SPDX has 133 for 18 members, its
#: CycloneDX 223). Counted as ``{`` and ``[`` bytes before the document is decoded, because a
#: decoded ``{}`` costs ~30x its 3 bytes: the same review's 105 MB of ``{}`` took 3 GB.
SBOM_BASE_CONTAINERS = 4096

#: Config schema 4 as ``profiles/templates/native-engine.toml.j2`` renders it: each config key
#: (a ``.`` path) and the public profile's field it is rendered from (``None`` in the profile: the
#: key is left out). With ``paths.data_root`` and ``model.path`` (the route check's) these are
#: every key the config may hold (second hostile review, 2026-12-04: a re-sealed config with
#: another model SHA-256, extra engine args, another arch or a ``[debug]`` section verified OK).
#: The stdlib verifier holds the same table (tests/test_verify_content_bindings.py).
CONFIG_FROM_PROFILE: tuple[tuple[str, str], ...] = (
    ("config_schema", "config_schema"),
    ("profile_id", "profile_id"),
    ("component_tag", "component_tag"),
    ("model.file", "model.local_name"),
    ("model.sha256", "model.sha256"),
    ("model.context_tokens", "context_tokens"),
    ("model.kv_capacity_tokens", "kv_capacity_tokens"),
    ("model.kv_cache_dtype", "kv_cache_dtype"),
    ("model.vision", "vision"),
    ("speculation.mode", "speculation.mode"),
    ("speculation.lm_head_draft", "speculation.lm_head_draft"),
    ("speculation.dflash2", "speculation.dflash2"),
    ("scheduler.concurrent_requests", "concurrent_requests"),
    ("scheduler.pending_timeout_ms", "pending_timeout_ms"),
    ("scheduler.extra_device_state_slots", "extra_device_state_slots"),
    ("scheduler.prefill_chunk_tokens", "prefill_chunk_tokens"),
    ("scheduler.admission_headroom_mib", "admission_headroom_mib"),
    ("scheduler.keep_warm_ms", "keep_warm_ms"),
    ("memory.shared_host_budget_bytes", "shared_host_budget_bytes"),
    ("memory.shared_host_budget_mib", "shared_host_budget_mib"),
    ("memory.host_memory_floor_mib", "host_memory_floor_mib"),
    ("gpu.name", "gpu"),
    ("gpu.cuda_arch", "cuda_arch"),
    ("gpu.power_limit_w", "gpu_power_limit_w"),
    ("server.host", "endpoint.host"),
    ("server.port", "endpoint.port"),
    ("server.auth", "endpoint.auth"),
    ("server.bearer_key_file", "endpoint.key_file"),
    ("checkpoint.root", "checkpoint.root"),
    ("checkpoint.dir_template", "checkpoint.dir_template"),
    ("checkpoint.schema", "checkpoint.schema"),
    ("checkpoint.require_origin_auth", "checkpoint.require_origin_auth"),
    ("engine.args", "args"),
)
#: Config keys the route check reads (``_config_paths``), not the profile.
CONFIG_FROM_LAYOUT = ("paths.data_root", "model.path")

SBOM_CONTAINERS_PER_MEMBER = 64
#: Members assumed when the zip's index cannot be read (the zip itself then fails verify).
_FALLBACK_MEMBERS = 1024


def _zip_index(zip_path: Path) -> list[packaging.ZipMember] | None:
    """The zip's index (:func:`ninfer_release.packaging.read_zip_index`), read once per verification
    for the entry bounds, the member scan and the member reads (issue 13: one read of a 10k-member
    central directory costs ~0.2 s). ``None`` when it cannot be read: each reader then reads it
    itself and reports why it fails."""
    # Only a regular file is opened: a FIFO in place of the zip must fail, never block (issue 9).
    if not zip_path.is_file() or zip_path.is_symlink():
        return None
    try:
        return packaging.read_zip_index(zip_path)
    except Exception:  # noqa: BLE001 - an unreadable index is reported by the zip's own check
        return None


def _entry_bounds(names: AssetNames, members: int | None) -> dict[str, int]:
    """The most bytes each non-zip file of the set can legitimately hold, known before reading.

    ``SHA256SUMS``: :func:`ninfer_release.checksums.sums_bound` of 10 entries; SBOMs:
    ``SBOM_BASE_BYTES + SBOM_BYTES_PER_MEMBER * members`` (the provenance too); every other record:
    ``MAX_RECORD_ENTRY``. ``members``: the zip index's length (:data:`_FALLBACK_MEMBERS` without one).
    """
    if members is None:
        members = _FALLBACK_MEMBERS
    sbom_bound = SBOM_BASE_BYTES + SBOM_BYTES_PER_MEMBER * members
    bounds = dict.fromkeys(names.entries, MAX_RECORD_ENTRY)
    bounds[names.spdx] = bounds[names.cdx] = sbom_bound
    # The provenance statement lists resolved inputs per shipped file too (~0.2 KiB each): a lane
    # with 10k files has a 2 MB one. It grows with the package like the SBOMs (issue 13).
    bounds[names.provenance] = sbom_bound
    bounds[SUMS_NAME] = sums_bound(len(names.entries))
    return bounds


def _container_bound(members: int | None) -> int:
    """The most JSON objects and arrays an SBOM or the provenance of a zip of ``members`` members
    can hold (:data:`SBOM_CONTAINERS_PER_MEMBER`; :data:`_FALLBACK_MEMBERS` without an index)."""
    return SBOM_BASE_CONTAINERS + SBOM_CONTAINERS_PER_MEMBER * (
        _FALLBACK_MEMBERS if members is None else members
    )


def _check_readable(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(
            problems=[Problem(file=str(path), message=f"cannot read: {exc.strerror or exc}")]
        ) from None
    os.close(fd)


@dataclass(frozen=True, kw_only=True)
class VerifyReport:
    """Outcome of :func:`verify_set`: one line per check passed, per warning and per failure."""

    directory: str
    stem: str | None
    checked: tuple[str, ...]
    warnings: tuple[str, ...]
    failures: tuple[str, ...]
    sums_sha256: str | None = None
    #: ``qualified`` / ``unqualified`` as the qualification record states it (checked against its
    #: receipts and gate ledger), ``None`` when the record is unreadable.
    qualification: str | None = None
    #: The record's gate counts ``{"pass": n, "fail": n, "not_applicable": n}`` (empty if none).
    gate_counts: Mapping[str, int] = field(default_factory=dict)
    #: How many receipts bind the package ``{"public": n, "scratch_equivalence": n}`` (empty if
    #: unreadable): a set qualified by scratch equivalence only had no run of these very bytes.
    bindings: Mapping[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "stem": self.stem,
            "ok": self.ok,
            "qualification": self.qualification,
            "gates": dict(self.gate_counts),
            "bindings": dict(self.bindings),
            "sha256sums_sha256": self.sums_sha256,
            "checked": list(self.checked),
            "warnings": list(self.warnings),
            "failures": list(self.failures),
        }


@dataclass
class _Run:
    directory: Path
    checked: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    bounds: dict[str, int] = field(default_factory=dict)
    #: The most JSON objects and arrays an entry that grows with the package may hold
    #: (:data:`SBOM_CONTAINERS_PER_MEMBER`); set with :attr:`bounds`.
    containers: int = SBOM_BASE_CONTAINERS

    def fail(self, name: str, message: str) -> None:
        self.failures.append(f"{name}: {message}")

    def expect(self, cond: bool, name: str, message: str, passed: str) -> bool:
        if cond:
            self.checked.append(passed)
        else:
            self.fail(name, message)
        return cond


def _load_json(run: _Run, name: str, data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        # Every record of a set is a JSON object; anything else fails here, not deep in a check.
        return strictjson.parse_object(data, source=name, error=IntegrityError)
    except IntegrityError as exc:
        run.failures.extend(exc.lines)
        return None


def _get(doc: Any, *path: str) -> Any:
    cur = doc
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


@dataclass
class _SetFiles:
    """What one read of the set gave: the bytes of every non-zip entry, every entry's SHA-256 and
    size, the zip members' SHA-256 by name, and the SBOMs' schema problems."""

    zip_path: Path
    #: The entries of the zip's index read once (:func:`_zip_index`) that are read again
    #: (:func:`_read_later`); ``None``: unreadable, each reader reports why.
    index: list[packaging.ZipMember] | None = None
    small: dict[str, bytes] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    members: dict[str, str] = field(default_factory=dict)
    #: The zip members' SHA-1 by name (the SPDX SHA1 of each is compared: SPDX 2.3 requires it,
    #: and the verification code is made of them); ``""`` for a member the scan did not read.
    member_sha1s: dict[str, str] = field(default_factory=dict)
    #: Members the scan found a problem with, or saw more than once (their digest is not used
    #: in place of a read of the member).
    troubled: set[str] = field(default_factory=set)
    schema_problems: dict[str, list[str]] = field(default_factory=dict)
    #: The provenance statement decoded without its resolved dependencies, each of which was
    #: clean (:func:`_provenance_doc`); ``None``: its bytes are in ``small``.
    provenance_doc: dict[str, Any] | None = None
    #: The SBOMs' one parse each: validation messages and the maps the cross-checks read.
    spdx: sbom.SpdxCheck | None = None
    cdx: sbom.CdxCheck | None = None

    #: The zip's structure was read to the end (its member list is the zip's, even when empty).
    zip_scanned: bool = False

    @property
    def have_zip(self) -> bool:
        """The zip is there and its structure was read: the checks against its members run, and
        a zip with no members fails them (an empty zip is no package, never a skipped check)."""
        return self.zip_scanned and self.zip_path.is_file()


class _ZipScan:
    """The zip's own SHA-256 and its members' in one read, in a worker process where one can be
    forked (:mod:`ninfer_release.releases._scan_worker`: the member scan and the SBOM checks are
    both per-member Python work, which two threads only take turns at), else on a worker thread
    (DESIGN §11); the zip's own SHA-256 not again when ``known`` (established by the caller); no
    read at all when ``given`` (the caller's scan of these very bytes: the build's self-check)
    still describes the file (``ZipScan.describes``: the same file, unchanged since; else the zip
    is read)."""

    def __init__(
        self,
        zip_path: Path,
        files: _SetFiles,
        known: str | None = None,
        given: packaging.ZipScan | None = None,
        index: list[packaging.ZipMember] | None = None,
        worker: _scan_worker.ForkedScan | None = None,
    ) -> None:
        self.zip_path = zip_path
        self.files = files
        self.known = known
        self.given = given
        #: The whole index, given up to the scan (``files.index`` keeps the entries still read).
        self.index = index
        self.errors: list[str] = []
        self.digest: list[str] = []
        self.thread: threading.Thread | None = None
        #: The scan started ahead for this very file (``take_ahead``), else forked by :meth:`start`.
        self.worker = worker

    def _run(self) -> None:
        try:
            given = self.given if self.given is not None and self.given.describes(self.zip_path) else None
            index, self.index = self.index, None
            # Each member's digests are taken as the scan hands them on, not kept as records,
            # and the index it is given goes as it goes (100k members: ~30 + ~35 MB; issue 13).
            scan = given or packaging.scan_zip(
                self.zip_path,
                sha1=True,
                archive_sha256=self.known,
                index=index,
                each=self._member,
                consume=index is not None,
                layout=True,
            )
            del index
        except Exception as exc:  # noqa: BLE001 - reported as a failure of the zip, never raised
            # What was handed on before the failure is not the zip's member list.
            self.files.members.clear()
            self.files.member_sha1s.clear()
            self.files.troubled.clear()
            self.errors[:] = [str(exc)]
            return
        self.digest.append(scan.sha256)
        for d in scan.members:
            self._member(d)

    def _member(self, d: packaging.MemberDigest) -> None:
        self._take(d.name, d.sha256, d.sha1, d.problems)

    def _take(self, name: str, sha256: str, sha1: str, problems: tuple[str, ...]) -> None:
        if problems or name in self.files.members:
            self.files.troubled.add(name)
        self.files.members[name] = sha256
        self.files.member_sha1s[name] = sha1
        # A member that fails its CRC/size check or was not inflated (unsafe name, bomb
        # ratio) is a finding about the zip, whatever its SHA-256 happens to be.
        self.errors.extend(f"member {name!r}: {p}" for p in problems)

    def start(self) -> None:
        if self.worker is not None:  # started ahead, by the CLI, for this very file
            self.worker.attach(self._take)
            return
        if not self.zip_path.is_file():
            return
        if self.given is None or not self.given.describes(self.zip_path):
            self.given = None
        if self.given is None and _scan_worker.worth_forking(None if self.index is None else len(self.index)):
            self.worker = _scan_worker.ForkedScan.start(
                self.zip_path, known=self.known, index=self.index, sink=self._take
            )
            if self.worker is not None:
                self.index = None  # the worker's now (its copy of the parent's pages)
                return
        # What the thread runs is imported here, in the main thread: a Ctrl-C landing inside an
        # import can leave that module's import lock held (CPython's importlib), and a thread
        # waiting for the lock would never end (CI, 2026-12-04; _signals.EXIT_DEADLINE_S).
        _ = packaging.scan_zip
        importlib.import_module("ninfer_release.packaging._ziplayout")
        self.thread = threading.Thread(target=self._run, name="zip-members")
        self.thread.start()

    def cancel(self) -> None:
        """End a worker process still scanning (the caller is unwinding: an interrupt, an error)."""
        if self.worker is not None:
            self.worker.cancel()

    def _join_worker(self, worker: _scan_worker.ForkedScan) -> None:
        worker.join()
        if worker.error is not None:
            # What was handed on before the failure is not the zip's member list.
            self.files.members.clear()
            self.files.member_sha1s.clear()
            self.files.troubled.clear()
            self.errors[:] = [worker.error]
        elif worker.digest is not None:
            self.digest.append(worker.digest)

    def join(self, run: _Run, name: str, progress: Progress) -> None:
        """Wait for the scan; the zip's digest (hashed again if its structure was unreadable)."""
        if self.worker is not None:
            self._join_worker(self.worker)
        elif self.thread is not None:
            self.thread.join()
        if self.worker is not None or self.thread is not None:
            if self.digest:
                self.files.zip_scanned = True
                self.files.digests[name] = self.digest[0]
                progress.advance(self.files.sizes[name])
            else:  # its structure could not be read: still hash the bytes for SHA256SUMS
                self.files.digests[name] = sha256_file(self.zip_path, progress=progress)
        for msg in self.errors:
            run.fail(name, msg)


def _listing(directory: Path) -> list[str] | VerifyReport:
    """The set directory's file names, or the report of a directory that cannot be listed."""
    try:
        return sorted(p.name for p in directory.iterdir())
    except OSError as exc:
        return VerifyReport(
            directory=str(directory),
            stem=None,
            checked=(),
            warnings=(),
            failures=(f"cannot list: {exc.strerror or exc}",),
        )


def _check_exact_set(run: _Run, names: AssetNames, listing: list[str]) -> None:
    """Check 1: exactly the 11 files, each a regular file."""
    for n in names.all:
        p = run.directory / n
        if not p.is_file() or p.is_symlink():
            run.fail(n, "missing from the set (or not a regular file)")
    for n in listing:
        if n not in names.all:
            run.fail(n, "not part of the asset set (exactly 10 entries + SHA256SUMS)")
    if not run.failures:
        run.checked.append(f"set: exactly the 11 files of {names.stem}")


def _read_small(
    run: _Run,
    names: AssetNames,
    files: _SetFiles,
    progress: Progress,
    known: Mapping[str, str],
    prewarm: threading.Thread | None = None,
) -> None:
    """Read every entry but the zip once, within its bound (what is larger fails, unread); hashed
    unless ``known`` holds its SHA-256. ``prewarm``: the validators' import thread, joined
    before the SBOMs are read (their readers import spdx-tools modules too: two threads
    importing one package's modules at once once ended a build's verify with ``KeyError:
    'spdx_tools.spdx.model'`` from the import system)."""
    early = _Early(run, names.provenance, known.get(names.provenance))
    if prewarm is not None:
        prewarm.join()
    for n in names.all:
        p = run.directory / n
        if not p.is_file():
            continue
        size = p.stat().st_size
        files.sizes[n] = size
        if n == names.zip:
            continue  # hashed by the zip's worker, in the read that inflates its members
        if size > run.bounds[n]:
            # Never a skip: what cannot be checked completely fails (issue 9).
            run.fail(n, f"{size} bytes, larger than the {run.bounds[n]} bytes such an entry can be; not read")
            continue
        if n == names.provenance and early.use(files):
            progress.advance(size)
            continue
        if n in (names.spdx, names.cdx) and not _few_containers(run, names, n, _containers_in_file(p)):
            continue
        if n == names.spdx and _read_spdx_streamed(run, p, files, known.get(n)):
            progress.advance(size)
            continue
        if n == names.cdx and _read_cdx_streamed(run, p, files, known.get(n)):
            progress.advance(size)
            continue
        data = strictjson.read_regular(p, limit=run.bounds[n], source=str(p))
        if _few_containers(run, names, n, _containers(data)):
            files.digests[n] = known[n] if n in known else sha256_bytes(data)
            _take_whole(names, files, n, data)
        progress.advance(size)


def _take_whole(names: AssetNames, files: _SetFiles, n: str, data: bytes) -> None:
    """Entry ``n`` read whole: an SBOM is checked as soon as read, then let go (the later checks
    read its digest, never its bytes, and its parse, ~4x its bytes, is not added to the later
    entries' bytes; issue 13); the provenance is decoded; any other entry kept as bytes."""
    if n == names.spdx:
        files.spdx = sbom.check_spdx_bytes(data)
        files.schema_problems[n] = files.spdx.messages
    elif n == names.cdx:
        files.cdx = sbom.check_cyclonedx_bytes(data)
        files.schema_problems[n] = files.cdx.messages
    elif n == names.provenance and (doc := _provenance_doc(data, n)) is not None:
        files.provenance_doc = doc  # its bytes (20 MB at 100k files) are let go here
    else:
        files.small[n] = data


class _Early:
    """The provenance statement read (and decoded, :func:`_provenance_doc`) before the SBOMs are
    read, its outcome taken where :func:`_read_small` comes to it, as if read there: its read
    and decode need about twice its bytes for a moment (40 MB at 100k files), which then no
    longer adds to the SBOMs' file maps (issue 13: peak memory). An error of the read is raised
    where the entry is read; an entry that is not a regular file or above its bound is not read
    early (the loop then reports it as always)."""

    def __init__(self, run: _Run, name: str, known: str | None) -> None:
        self.name = name
        self.data: bytes | None = None
        self.doc: dict[str, Any] | None = None
        self.digest = known
        self.error: Exception | None = None
        self.read = False
        path = run.directory / name
        if not path.is_file() or path.stat().st_size > run.bounds[name]:
            return
        self.read = True
        try:
            data = strictjson.read_regular(path, limit=run.bounds[name], source=str(path))
        except Exception as exc:  # noqa: BLE001 - raised again where the entry is read
            self.error = exc
            return
        if _containers(data) > run.containers:
            self.read = False  # never decoded: the loop reads it again and reports it
            return
        if self.digest is None:  # unless the caller established it (``known``)
            self.digest = sha256_bytes(data)
        self.doc = _provenance_doc(data, name)
        self.data = data if self.doc is None else None

    def use(self, files: _SetFiles) -> bool:
        """Take the early read's outcome for the entry (``False``: not read early, read it now)."""
        if not self.read:
            return False
        if self.error is not None:
            raise self.error
        if self.digest is not None:
            files.digests[self.name] = self.digest
        if self.doc is not None:
            files.provenance_doc = self.doc  # its bytes (20 MB at 100k files) were let go
        elif self.data is not None:
            files.small[self.name] = self.data
        self.data = self.doc = None
        return True


def _containers(data: bytes) -> int:
    """At least as many as the JSON objects and arrays in ``data``: its ``{`` and ``[`` bytes
    (those inside strings too), counted without decoding it."""
    return data.count(b"{") + data.count(b"[")


def _containers_in_file(path: Path) -> int:
    """:func:`_containers` of the file at ``path`` (its size already within its bound), read in
    1 MiB pieces: the streamed SBOM readers then decode it as they read it again."""
    count = 0
    try:
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                count += _containers(chunk)
    except OSError:
        return 0  # the reader that follows reports why it cannot read the file
    return count


def _few_containers(run: _Run, names: AssetNames, name: str, count: int) -> bool:
    """Whether entry ``name``, if it grows with the package (the SBOMs, the provenance), holds no
    more than :attr:`_Run.containers` JSON objects and arrays (``count``, :func:`_containers`); a
    failure else: such a document is not decoded, as one above its size bound is not read."""
    if name not in (names.spdx, names.cdx, names.provenance) or count <= run.containers:
        return True
    run.fail(
        name,
        f"{count} JSON objects and arrays ('{{' and '[' bytes), more than the {run.containers} "
        "such an entry can hold; not decoded",
    )
    return False


def _read_spdx_streamed(run: _Run, path: Path, files: _SetFiles, known: str | None) -> bool:
    """The SPDX document checked as it is read, without holding its bytes or a dict per file
    (:func:`ninfer_release.sbom.check_spdx_file`; issue 13); ``False``: it is not read that way,
    and the caller reads it whole."""
    checked = sbom.check_spdx_file(path, limit=run.bounds[path.name])
    if checked is None:
        return False
    files.spdx, digest = checked
    files.digests[path.name] = known or digest
    files.schema_problems[path.name] = files.spdx.messages
    return True


def _read_cdx_streamed(run: _Run, path: Path, files: _SetFiles, known: str | None) -> bool:
    """The CycloneDX document checked as it is read, its root's evidence occurrences kept only as
    hash entries (:func:`ninfer_release.sbom.check_cyclonedx_file`; issue 13); ``False``: it is not
    read that way, and the caller reads it whole."""
    checked = sbom.check_cyclonedx_file(path, limit=run.bounds[path.name])
    if checked is None:
        return False
    files.cdx, digest = checked
    files.digests[path.name] = known or digest
    files.schema_problems[path.name] = files.cdx.messages
    return True


def _read_set(
    run: _Run,
    names: AssetNames,
    progress: Progress,
    known: Mapping[str, str],
    zip_scan: packaging.ZipScan | None = None,
) -> _SetFiles:
    """Check 2's reading: every entry once; the zip (its digest and its members') on a worker thread
    while the other entries are read and the SBOMs validated; a digest in ``known`` is taken as it
    is (the zip is still read for its members)."""
    zip_path = run.directory / names.zip
    # A scan the CLI started ahead (releases/_scan_worker.py) for this very file: taken here, so
    # ended here on any way out but its join.
    worker = _scan_worker.take_ahead(zip_path, known=known.get(names.zip))
    try:
        return _read_set_with(run, names, progress, known, zip_scan, worker)
    except BaseException:
        if worker is not None:
            worker.cancel()
        raise


def _read_set_with(
    run: _Run,
    names: AssetNames,
    progress: Progress,
    known: Mapping[str, str],
    zip_scan: packaging.ZipScan | None,
    worker: _scan_worker.ForkedScan | None,
) -> _SetFiles:
    """:func:`_read_set` with the scan started ahead (or ``None``); the worker that started ahead
    read the index already: its length and the entries read again are taken from it instead of
    reading it a second time."""
    zip_path = run.directory / names.zip
    sent = worker.index_entries(_scan_worker.read_later(names.stem)) if worker is not None else None
    index = None if sent is not None else _zip_index(zip_path)
    files = _SetFiles(zip_path=zip_path, index=sent[1] if sent is not None else _read_later(names, index))
    members = sent[0] if sent is not None else None if index is None else len(index)
    run.bounds = _entry_bounds(names, members)
    run.containers = _container_bound(members)
    # An entry that cannot be opened is an environment fault (exit 4), not a verdict on the set;
    # it is found before the zip's worker starts so no thread is left behind.
    for n in names.all:
        p = run.directory / n
        if p.is_file() and not p.is_symlink():
            _check_readable(p)
    # No prewarm of the SBOM validators: a set our builder wrote is judged without spdx-tools or
    # jsonschema (sbom._spdx_skeleton, sbom._cdx_schema), and any other imports them when it needs
    # them. A prewarm thread another caller started is joined before the SBOMs are read.
    prewarm = sbom.started_prewarm()
    scan = _ZipScan(files.zip_path, files, known.get(names.zip), zip_scan, index, worker)
    del index  # the scan's to let go of
    scan.start()
    try:
        _read_small(run, names, files, progress, known, prewarm)
    except BaseException:
        scan.cancel()  # no worker process left scanning behind an interrupt or an error
        raise
    # The SBOMs were validated as read, while the worker inflates the zip's members
    # (DESIGN §11); each is parsed once: its validation and the maps its cross-checks read.
    scan.join(run, names.zip, progress)
    return files


def _check_sums(run: _Run, names: AssetNames, files: _SetFiles, expected_sums_sha256: str | None) -> None:
    """Check 2: ``SHA256SUMS`` lists exactly the 10 entries and every digest holds; optionally
    its own digest is the one the release manifest binds."""
    sums_data = files.small.get(SUMS_NAME)
    sums_sha = files.digests.get(SUMS_NAME)
    if sums_data is not None:
        parsed = parse_sha256sums(sums_data, source=SUMS_NAME)
        run.warnings.extend(str(w) for w in parsed.warnings)
        run.failures.extend(str(e) for e in parsed.errors)
        listed = parsed.as_dict()
        recorded = _recorded_digests(files.small.get(names.manifest))
        for n in names.entries:
            _check_sums_line(run, names, n, listed, files.digests, recorded)
        for n in listed:
            if n not in names.entries:
                run.fail(SUMS_NAME, f"lists {n!r}, which is not one of the 10 entries")
    if expected_sums_sha256 is not None and sums_sha is not None:
        run.expect(
            sums_sha == expected_sums_sha256.lower(),
            SUMS_NAME,
            f"digest {sums_sha} is not the {expected_sums_sha256} the release manifest binds",
            "SHA256SUMS: matches the release manifest",
        )


def _check_sums_line(
    run: _Run,
    names: AssetNames,
    n: str,
    listed: Mapping[str, str],
    digests: Mapping[str, str],
    recorded: Mapping[str, str],
) -> None:
    """One entry's line of ``SHA256SUMS`` against the file (and the component manifest)."""
    if n not in listed:
        run.fail(SUMS_NAME, f"does not list {n!r}")
    elif n in digests and listed[n] != digests[n] and recorded.get(n) == digests[n]:
        # The component manifest agrees with the file: the line in SHA256SUMS is what changed.
        run.fail(
            SUMS_NAME,
            f"lists {listed[n]} for {n!r}, but the file (and {names.manifest}) have {digests[n]}",
        )
    elif n in digests:
        run.expect(
            listed[n] == digests[n],
            n,
            f"SHA-256 mismatch: SHA256SUMS lists {listed[n]}, file has {digests[n]}",
            f"{n}: OK",
        )


def verify_set(
    directory: Path,
    *,
    expected_sums_sha256: str | None = None,
    progress: Progress = SILENT,
    known_sha256: Mapping[str, str] | None = None,
    zip_scan: packaging.ZipScan | None = None,
) -> VerifyReport:
    """Verify the native asset set in ``directory`` (see the module docstring for every check).

    ``expected_sums_sha256`` is the ``SHA256SUMS`` digest a release manifest binds, if known.
    ``progress`` gets the step ``hashed`` and every byte hashed. ``known_sha256`` (file name ->
    SHA-256 hex): digests the caller already established for these very bytes (``fetch`` hashed
    each file as it arrived); they are not hashed again, and every check uses them as if hashed
    here. The zip is still read whole for its members, unless ``zip_scan`` is the caller's
    :func:`~ninfer_release.packaging.scan_zip` of this very file (the build's self-check read it
    once, after it was written): its digests are then used as if read here.

    Raises:
        Nothing for a bad set: every finding is in the report (the CLI exits 5 when not ok).
    """
    run = _Run(directory=directory)
    listing = _listing(directory)
    if isinstance(listing, VerifyReport):
        return listing
    stem = stem_from_names(listing)
    if stem is None:
        # The caller names the directory; the line says only what is wrong with it.
        run.failures.append("expected exactly one package '*.zip' in the set")
        return VerifyReport(
            directory=str(directory),
            stem=None,
            checked=tuple(run.checked),
            warnings=(),
            failures=tuple(run.failures),
        )
    names = AssetNames(stem=stem)
    _check_exact_set(run, names, listing)
    progress.step("hashed")
    files = _read_set(run, names, progress, known_sha256 or {}, zip_scan)
    _check_sums(run, names, files, expected_sums_sha256)
    records = _check_bindings(run, names, files)
    status, counts, bindings = _qualification_state(records.qualification)
    return VerifyReport(
        directory=str(directory),
        stem=stem,
        checked=tuple(run.checked),
        warnings=tuple(run.warnings),
        failures=tuple(run.failures),
        sums_sha256=files.digests.get(SUMS_NAME),
        qualification=status,
        gate_counts=counts,
        bindings=bindings,
    )


def _qualification_state(
    record: QualificationRecord | None,
) -> tuple[str | None, dict[str, int], dict[str, int]]:
    """``(status, gate counts, receipts per binding)`` as the typed qualification record states
    them (checked by :func:`_check_qualification`; ``None, {}, {}`` when it did not parse)."""
    if record is None:
        return None, {}, {}
    kinds = [r.binding for r in record.receipts]
    return (
        record.status if record.status in ("qualified", "unqualified") else None,
        dict(record.gates.counts),
        {k: kinds.count(k) for k in ("public", "scratch_equivalence")},
    )


def _recorded_digests(manifest: bytes | None) -> dict[str, str]:
    """``name -> sha256`` of entries 1–9 as the component manifest records them (empty if unreadable)."""
    try:
        doc = strictjson.parse(manifest, source="manifest", error=IntegrityError) if manifest else None
    except IntegrityError:
        return {}  # reported where the component manifest itself is checked
    entries = _get(doc, "entries")
    if not isinstance(entries, list):
        return {}
    return {
        str(e["name"]): str(e["sha256"])
        for e in entries
        if isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("sha256"), str)
    }


def _zip_member(run: _Run, files: _SetFiles, member: str, max_bytes: int) -> bytes | None:
    """Member ``member`` of the set's zip, located by the index read once (``None``: reported)."""
    zip_path = files.zip_path
    try:
        return packaging.read_member(zip_path, member, max_bytes=max_bytes, index=files.index)
    except Exception as exc:  # noqa: BLE001 - any failure to read is a finding about the zip
        run.fail(zip_path.name, f"cannot read member {member!r}: {exc}")
        return None


R = TypeVar("R", bound=JsonRecord)
T = TypeVar("T")


def _typed(run: _Run, name: str, data: bytes | None, record: type[R]) -> R | None:
    """``data`` parsed strictly as ``record`` (``None``: absent, or its problems added to ``run``)."""
    doc = _load_json(run, name, data)
    if doc is None:
        return None
    try:
        return record.parse_doc(doc, source=name)
    except IntegrityError as exc:
        run.failures.extend(exc.lines)
        return None


def _typed_doc(run: _Run, name: str, doc: dict[str, Any], record: type[R]) -> R | None:
    """The decoded JSON object ``doc`` parsed strictly as ``record`` (``None``: its problems added)."""
    try:
        return record.parse_doc(doc, source=name)
    except IntegrityError as exc:
        run.failures.extend(exc.lines)
        return None


#: JSON whitespace, and a JSON string of printable ASCII without escapes (it decodes to the
#: bytes between its quotes; any other string is left to the strict decoder).
_WS = rb"[ \t\n\r]*"
_STR = rb'"[^"\\\x00-\x1f\x7f-\xff]*"'


def _member_key(name: bytes) -> bytes:
    return _WS + b'"' + name + b'"' + _WS + b":" + _WS


#: One element of ``resolvedDependencies`` as our writer spells it, and what follows it (``,``
#: or the array's ``]``): ``{["digest": {<one name>: <string>},] "name": <string>[, "uri":
#: <string>]}``, a value ``ResolvedDependency`` takes without a problem (strings where it wants
#: them, no unknown or duplicate key, no null).
_DEPENDENCY = re.compile(
    _WS + rb"\{(?:" + _member_key(b"digest") + rb"\{" + _WS + _STR + _WS + b":" + _WS + _STR + _WS + rb"\}"
    + _WS + b",)?" + _member_key(b"name") + _STR + _WS + b"(?:," + _member_key(b"uri") + _STR + _WS + b")?"
    + rb"\}" + _WS + rb"([,\]])"
)  # fmt: skip
_DEPENDENCIES = re.compile(rb'"resolvedDependencies"' + _WS + b":" + _WS + rb"\[")
_DEPENDENCIES_AT = ("predicate", "buildDefinition", "resolvedDependencies")


def _dependencies_span(data: bytes) -> tuple[int, int] | None:
    """Where the first ``"resolvedDependencies": [`` array's elements start and the array ends
    (after its ``]``), when every element is one :data:`_DEPENDENCY` matches; else ``None``."""
    found = _DEPENDENCIES.search(data)
    if found is None:
        return None
    pos = found.end()
    while True:
        element = _DEPENDENCY.match(data, pos)
        if element is None:
            return None
        pos = element.end()
        if element.group(1) == b"]":
            return found.end(), pos


#: A staged input in an element :data:`_DEPENDENCY` matched: its SHA-256 and its staged path.
_STAGED = re.compile(
    rb'"sha256"' + _WS + b":" + _WS + rb'"([^"]*)"' + _WS + rb"\}" + _WS + b","
    + _member_key(b"name") + rb'"staged/([^"]*)"'
)  # fmt: skip


def _staged_inputs(data: bytes) -> Iterator[tuple[str, str]]:
    """(staged path, SHA-256) of each ``staged/…`` dependency of the provenance bytes ``data``
    whose dependencies :func:`_provenance_doc` read in place (our writer's spelling: ASCII, no
    escapes), in order, without decoding the statement again (issue 13: 100k at 100k files)."""
    span = _dependencies_span(data)
    if span is None:
        return
    for m in _STAGED.finditer(data, span[0], span[1]):
        yield m.group(2).decode("ascii"), m.group(1).decode("ascii")


def _provenance_doc(data: bytes, name: str) -> dict[str, Any] | None:
    """The provenance statement ``data`` decoded strictly, its ``resolvedDependencies`` (one per
    shipped file: 100k at 100k files) checked by :data:`_DEPENDENCY` instead of being decoded
    and typed, and left out (``[]``); ``None`` when it is not read this way (the caller decodes
    and types it whole, with every message as before; issue 13: CPU and memory).

    The array is the first ``"resolvedDependencies": [`` of the bytes, followed by elements that
    each match, up to its ``]``. That it is the statement's own
    ``predicate.buildDefinition.resolvedDependencies`` (and not text inside a string, nor another
    key's) is proven by decoding the rest of the document twice, the span replaced by ``[0]``
    and by ``[1]``: only the value the span is gives ``[0]`` in one and ``[1]`` in the other. The
    rest is then what the strict decoder accepts (UTF-8 without BOM, no duplicate key, depth,
    numbers), and every element a clean value: typing the rest gives exactly the problems the
    whole statement gives.
    """
    span = _dependencies_span(data)
    if span is None:
        return None
    start, pos = span
    head, tail = data[: start - 1], data[pos:]
    docs = []
    for sentinel in (b"[0]", b"[1]"):
        try:
            docs.append(strictjson.parse_object(head + sentinel + tail, source=name, error=IntegrityError))
        except IntegrityError:
            return None
    if [_get(d, *_DEPENDENCIES_AT) for d in docs] != [[0], [1]]:
        return None
    doc = docs[0]
    doc["predicate"]["buildDefinition"]["resolvedDependencies"] = []
    return doc


def _read_qualification(run: _Run, name: str, data: bytes | None) -> QualificationRecord | None:
    """The qualification record, typed. Its schema is read first: only schema 2 binds the package
    bytes, so another one is refused as such rather than field by field."""
    doc = _load_json(run, name, data)
    if doc is None:
        return None
    if doc.get("schema") != 2:
        run.fail(name, f"schema {doc.get('schema')!r}: only schema 2 binds the package bytes")
        return None
    try:
        return QualificationRecord.parse_doc(doc, source=name)
    except IntegrityError as exc:
        run.failures.extend(exc.lines)
        return None


@dataclass(frozen=True, kw_only=True)
class _Records:
    """The set's JSON records, each parsed with the type sealing wrote it with (``None``: absent,
    unreadable or not that record — reported when read)."""

    profile: ProfileAsset | None
    manifest: ComponentManifest | None
    qualification: QualificationRecord | None
    provenance: ProvenanceStatement | None
    route: RouteRecord | None
    model: ModelRecord | None

    @classmethod
    def read(
        cls,
        run: _Run,
        names: AssetNames,
        small: Mapping[str, bytes],
        provenance: dict[str, Any] | None = None,
    ) -> _Records:
        """Each record typed; ``provenance``: the statement decoded by :func:`_provenance_doc`
        (its ``resolvedDependencies`` are then not in the typed record), else from ``small``."""
        return cls(
            profile=_typed(run, names.profile, small.get(names.profile), ProfileAsset),
            manifest=_typed(run, names.manifest, small.get(names.manifest), ComponentManifest),
            qualification=_read_qualification(run, names.qualification, small.get(names.qualification)),
            provenance=_typed(run, names.provenance, small.get(names.provenance), ProvenanceStatement)
            if provenance is None
            else _typed_doc(run, names.provenance, provenance, ProvenanceStatement),
            route=_typed(run, names.route, small.get(names.route), RouteRecord),
            model=_typed(run, names.model, small.get(names.model), ModelRecord),
        )


def _check_bindings(run: _Run, names: AssetNames, files: _SetFiles) -> _Records:
    """Checks 3–6 of the module docstring, one per record; the records as read."""
    _check_spdx(run, names, files)
    _check_cdx(run, names, files)
    _let_go_of_sboms(names, files)
    records = _Records.read(run, names, files.small, files.provenance_doc)
    files.provenance_doc = None
    # The provenance statement grows with the package (20 MB at 100k files): read, then let go.
    files.small.pop(names.provenance, None)
    config = files.small.get(names.config)
    # Parsed once for the route and content checks; its error is the route check's to report.
    parsed = _parse_toml(config) if config is not None else None
    if config is not None:
        _check_config(run, names, files, records, config)
    if records.manifest is not None:
        _check_manifest_entries(run, names, files, records.manifest)
    if files.have_zip and records.profile is not None:
        _check_generated_members(run, names, files, records.profile.profile_id)
    if records.provenance is not None:
        _check_provenance(run, names, files, records.provenance)
    _check_identity(run, names, records, zip_sha256=files.digests.get(names.zip))
    if records.route is not None and parsed is not None and records.manifest is not None:
        _check_route_paths(
            run, names, route=records.route, config=parsed, instance=records.manifest.release_instance_id
        )
    if records.route is not None and names.zip in files.digests:
        _check_route_package(run, names, files, records.route, records.model)
    _check_content_bindings(run, names, files, records, parsed[0] if parsed is not None else None)
    return records


def _read_later(
    names: AssetNames, index: list[packaging.ZipMember] | None
) -> list[packaging.ZipMember] | None:
    """The entries of the zip's index that are read again after the scan (the config and the
    SPDX copy: every entry of those names, as ``read_member`` still refuses one listed twice);
    the rest of the index is the scan's alone (issue 13: memory)."""
    if index is None:
        return None
    wanted = {ZIP_CONFIG_PATH, zip_spdx_path(names.stem)}
    return [m for m in index if m.name in wanted]


def _let_go_of_sboms(names: AssetNames, files: _SetFiles) -> None:
    """Drop what only the SBOM checks read: the SBOMs' file maps and any index entry but the
    config's and the SPDX copy's (:func:`_read_later`; the scan had the rest), so that the
    records parsed next reuse that memory instead of adding to the peak (issue 13)."""
    files.spdx = files.cdx = None
    files.member_sha1s = {}
    files.index = _read_later(names, files.index)


def _check_spdx(run: _Run, names: AssetNames, files: _SetFiles) -> None:
    """Check 3 (SPDX): valid SPDX 2.3, byte-identical to the package's copy, file checksums =
    package members."""
    if files.spdx is None:
        return
    problems = files.schema_problems[names.spdx]
    for msg in problems:
        run.fail(names.spdx, f"SPDX 2.3 invalid: {msg}")
    if not problems:
        run.checked.append(f"{names.spdx}: valid SPDX 2.3")
    if not files.have_zip:
        return
    inner = _member_sha256(run, files, zip_spdx_path(names.stem), run.bounds[names.spdx])
    if inner is not None:
        run.expect(
            inner == files.digests[names.spdx],
            names.spdx,
            "differs from the copy inside the package",
            f"{names.spdx}: byte-identical to the package copy",
        )
    if not problems:
        _check_spdx_files(run, names, files.spdx, files)


def _member_sha256(run: _Run, files: _SetFiles, member: str, max_bytes: int) -> str | None:
    """The SHA-256 of member ``member`` of the set's zip: the scan's, when it read the member
    cleanly and only once (an SPDX copy of 93 MB is not inflated a second time; issue 13), else
    of the bytes :func:`_zip_member` reads (``None``: reported)."""
    if member in files.members and member not in files.troubled:
        return files.members[member]
    inner = _zip_member(run, files, member, max_bytes)
    return None if inner is None else sha256_bytes(inner)


def _check_spdx_files(run: _Run, names: AssetNames, spdx: sbom.SpdxCheck, files: _SetFiles) -> None:
    """Every package member but the SPDX copy is listed with its SHA-1 and SHA-256, nothing else
    is listed. Reads the maps in place (no copies of 100k-entry maps; issue 13)."""
    members = files.members
    listed = _outcome(run, names.spdx, spdx.files.get)
    if listed is None:
        return
    if any(k.startswith("./") for k in listed):
        listed = {k.removeprefix("./"): v for k, v in listed.items()}
    own = zip_spdx_path(names.stem)
    missing = sorted(p for p in members if p != own and p not in listed)
    extra = sorted(p for p in listed if p == own or p not in members)
    for path in missing:
        run.fail(names.spdx, f"package member {path!r} is not in the file inventory")
    for path in extra:
        run.fail(names.spdx, f"lists {path!r}, which is not in the package")
    bad = sorted(p for p, v in listed.items() if p != own and p in members and v[1] != members[p])
    for path in bad:
        run.fail(names.spdx, f"SHA-256 of {path!r} differs from the package member")
    # SPDX 2.3 requires the SHA1 of every file; the verification code is made of them (§7.9).
    # A member whose read took no SHA-1 (a scan made with ``sha1=False``) cannot be checked: fails.
    sha1s = files.member_sha1s
    bad_sha1 = sorted(p for p, v in listed.items() if p != own and p in members and v[0] != sha1s.get(p, ""))
    for path in bad_sha1:
        if sha1s.get(path):
            run.fail(names.spdx, f"SHA1 of {path!r} differs from the package member")
        else:
            run.fail(names.spdx, f"SHA1 of {path!r} cannot be checked: the read of the zip took no SHA-1")
    if not missing and not extra and not bad and not bad_sha1:
        inside = len(members) - (own in members)
        run.checked.append(f"{names.spdx}: file checksums = package members ({inside})")


def _outcome(run: _Run, name: str, get: Callable[[], T]) -> T | None:
    """``get()``: an SBOM map the cross-checks read, or ``None`` once each problem that kept the
    document's reader from making it is a failure of entry ``name`` (its field named)."""
    try:
        return get()
    except IntegrityError as exc:
        for p in exc.problems:
            run.fail(name, f"{p.field}: {p.message}" if p.field else p.message)
        return None


def _check_cdx(run: _Run, names: AssetNames, files: _SetFiles) -> None:
    """Check 3 (CycloneDX): valid CycloneDX 1.6; every component hash is a package member's, every
    member is evidence of a component, the root is the package's SHA-256."""
    if files.cdx is None:
        return
    problems = files.schema_problems[names.cdx]
    for msg in problems:
        run.fail(names.cdx, f"CycloneDX 1.6 invalid: {msg}")
    if problems:
        return
    run.checked.append(f"{names.cdx}: valid CycloneDX 1.6")
    if files.have_zip and files.cdx is not None:
        _check_cdx_evidence(run, names, files.cdx, files)


def _check_cdx_evidence(run: _Run, names: AssetNames, cdx: sbom.CdxCheck, files: _SetFiles) -> None:
    members = files.members
    before = len(run.failures)
    hashes = _outcome(run, names.cdx, cdx.hashes.get)
    root = _outcome(run, names.cdx, cdx.root_sha256.get)
    if hashes is None or len(run.failures) != before:
        return
    for path, sha in sorted(hashes.items()):
        if path not in members:
            run.fail(names.cdx, f"names {path!r}, which is not in the package")
        elif members[path] != sha:
            run.fail(names.cdx, f"SHA-256 of {path!r} differs from the package member")
    # Every member is evidence of exactly one component (issue 14): a DLL, licence text or config
    # the inventory does not list is a hole in it.
    for path in sorted(set(members) - set(hashes)):
        run.fail(names.cdx, f"package member {path!r} is listed by no component")
    if root != files.digests[names.zip]:
        run.fail(names.cdx, "metadata.component SHA-256 is not the package's")
    if len(run.failures) == before:
        run.checked.append(
            f"{names.cdx}: evidence = package members ({len(members)}), root = package SHA-256"
        )


def _check_config(run: _Run, names: AssetNames, files: _SetFiles, records: _Records, config: bytes) -> None:
    """Check 4 (config): the config asset = the package's copy, and every record binds its bytes."""
    config_sha = files.digests[names.config]
    if files.have_zip:
        inner = _zip_member(run, files, ZIP_CONFIG_PATH, run.bounds[names.config])
        if inner is not None:
            run.expect(
                inner == config,
                names.config,
                "differs from the package's config/ninfer.toml",
                f"{names.config}: byte-identical to the package copy",
            )
    bound: list[tuple[str, Any]] = []
    if records.profile is not None:
        bound.append((names.profile, records.profile.config.bytes_sha256))
    if records.manifest is not None:
        bound.append((names.manifest, records.manifest.config.sha256))
    if records.qualification is not None:
        bound.append((names.qualification, records.qualification.bound_to.config_bytes_sha256))
    if records.route is not None:
        bound.append((names.route, records.route.install.config_bytes_sha256))
    for doc_name, sha in bound:
        run.expect(
            sha == config_sha,
            doc_name,
            f"binds config SHA-256 {sha}, but {names.config} has {config_sha}",
            f"{doc_name}: binds the config bytes {config_sha[:12]}…",
        )


def _check_generated_members(run: _Run, names: AssetNames, files: _SetFiles, profile_id: str) -> None:
    """Check 4 (package members): every member outside :data:`SHIPPED_FOLDERS` (whose members
    the provenance binds, :func:`_check_staged_inputs`) is one the build generates
    (:func:`generated_members`), each of those is there, and the package's profile is the profile
    asset's bytes (SHA-256), as its config is the config asset's (:func:`_check_config`)."""
    generated = generated_members(names.stem, profile_id)
    before = len(run.failures)
    for member in files.members:
        if not member.startswith(SHIPPED_FOLDERS) and member not in generated:
            run.fail(
                names.zip,
                f"member {member!r} is neither a staged file ({', '.join(SHIPPED_FOLDERS)}) nor one "
                f"the build generates ({', '.join(generated)})",
            )
    for member in generated:
        if member not in files.members:
            run.fail(names.zip, f"has no member {member!r} (the build generates it)")
    profile = zip_profile_path(profile_id)
    if profile in files.members and files.members[profile] != files.digests.get(names.profile):
        run.fail(names.profile, f"differs from the package's {profile}")
    if len(run.failures) == before:
        run.checked.append(f"{names.zip}: generated members {', '.join(generated)}")
        run.checked.append(f"{names.profile}: byte-identical to the package copy {profile}")


def _check_manifest_entries(
    run: _Run, names: AssetNames, files: _SetFiles, manifest: ComponentManifest
) -> None:
    """Check 4 (component manifest): it lists the contract's entries 1–9 with their sizes and digests."""
    want = list(names.component_manifest_entries)
    got = [e.name for e in manifest.entries]
    if run.expect(
        got == want,
        names.manifest,
        f"entries are {got}, expected entries 1–9 {want}",
        f"{names.manifest}: lists entries 1–9",
    ):
        for e in manifest.entries:
            n = e.name
            if n in files.digests and (e.sha256 != files.digests[n] or e.size != files.sizes[n]):
                run.fail(names.manifest, f"size/SHA-256 recorded for {n!r} differ from the file")


def _check_provenance(
    run: _Run, names: AssetNames, files: _SetFiles, provenance: ProvenanceStatement
) -> None:
    """Check 4 (provenance): an in-toto Statement v1 whose subjects are the contract's entries 1–7."""
    subj = {s.name: s.digest.get("sha256") for s in provenance.subject}
    want_subj = {n: files.digests.get(n) for n in names.provenance_subjects}
    run.expect(
        subj == want_subj,
        names.provenance,
        "subjects do not match entries 1–7 by name and SHA-256",
        f"{names.provenance}: subjects = entries 1–7",
    )
    run.expect(
        provenance.type == STATEMENT_TYPE,
        names.provenance,
        "is not an in-toto Statement v1",
        f"{names.provenance}: in-toto Statement v1",
    )
    if files.have_zip:
        _check_staged_inputs(run, names, files, provenance)


def _check_staged_inputs(
    run: _Run, names: AssetNames, files: _SetFiles, provenance: ProvenanceStatement
) -> None:
    """The staged inputs the provenance names under the shipped folders (``staged/<path>`` in
    ``resolvedDependencies``, :data:`SHIPPED_FOLDERS`) are exactly the package's members there,
    each with the member's SHA-256: the statement describes the bytes shipped, all of them. The
    dependencies were not kept as records (:func:`_provenance_doc`), so the statement is read
    again and must still have the SHA-256 checked against SHA256SUMS."""
    deps = provenance.predicate.buildDefinition.resolvedDependencies
    if deps:
        staged: Iterable[tuple[str, str]] = (
            (d.name.removeprefix("staged/"), (d.digest or {}).get("sha256", ""))
            for d in deps
            if d.name.startswith("staged/")
        )
    else:
        path = run.directory / names.provenance
        try:
            data = strictjson.read_regular(path, limit=run.bounds[names.provenance], source=str(path))
        except (OSError, InputError, IntegrityError) as exc:
            run.fail(names.provenance, f"cannot read it again: {exc}")
            return
        if sha256_bytes(data) != files.digests.get(names.provenance):
            run.fail(names.provenance, "changed while it was verified")
            return
        staged = _staged_inputs(data)
    members, before = files.members, len(run.failures)
    seen: set[str] = set()
    for member, sha in staged:
        if not member.startswith(SHIPPED_FOLDERS):
            continue
        shipped = members.get(member)
        if member in seen:
            run.fail(names.provenance, f"resolvedDependencies lists staged/{member} twice")
        elif shipped is None:
            run.fail(names.provenance, f"resolvedDependencies staged/{member}: the package does not ship it")
        elif shipped != sha:
            run.fail(
                names.provenance,
                f"resolvedDependencies staged/{member}: SHA-256 differs from the package member",
            )
        seen.add(member)
    for member in members:
        if member.startswith(SHIPPED_FOLDERS) and member not in seen:
            run.fail(names.provenance, f"package member {member!r} is no staged input (by SHA-256) of it")
    if len(run.failures) == before:
        run.checked.append(f"{names.provenance}: staged inputs = package members ({len(seen)})")


def _check_route_package(
    run: _Run, names: AssetNames, files: _SetFiles, route: RouteRecord, model: ModelRecord | None
) -> None:
    """Check 4 (route): its package is the zip, and its model block is the model entry."""
    pkg = route.package
    run.expect(
        pkg.sha256 == files.digests[names.zip]
        and pkg.size == files.sizes[names.zip]
        and pkg.name == names.zip,
        names.route,
        "package name/size/SHA-256 differ from the zip",
        f"{names.route}: package = {names.zip}",
    )
    if model is not None:
        rm = route.model
        run.expect(
            (rm.sha256, rm.size, rm.store_as, rm.url, rm.revision)
            == (model.sha256, model.size, model.local_name, model.url, model.revision),
            names.route,
            "model binding differs from the model entry",
            f"{names.route}: model = {names.model}",
        )


def _check_route_paths(
    run: _Run,
    names: AssetNames,
    *,
    route: RouteRecord,
    config: tuple[dict[str, Any] | None, str | None],
    instance: str,
) -> None:
    """Check 6: every path the route names is where the config looks (issue 8 §3).

    The config's ``[paths] data_root`` joined with its relative key, model, cache and checkpoint
    paths (``<release-instance-id>`` = the manifest's id) must equal the route's absolute paths;
    no writable path may sit under ``C:\\Program Files``.
    """
    before = len(run.failures)
    cfg, error = config
    if error is not None:
        run.fail(names.config, f"is not UTF-8 TOML: {error}")
    want = None if cfg is None else _config_paths(run, names, cfg, instance)
    if cfg is None or want is None:
        return
    _check_route_endpoint(run, names, route, cfg)
    install = route.install
    for key, path in sorted(want.items()):
        got = getattr(install, key)
        if got != path:
            run.fail(names.route, f"install.{key} is {got!r}, but {names.config} reads {path!r}")
    if route.bearer_key.file != want["key_file"]:
        run.fail(names.route, f"bearer_key.file is not {want['key_file']!r}")
    if install.config != windows_join(install.program_root, ZIP_CONFIG_PATH):
        run.fail(names.route, f"install.config is not {ZIP_CONFIG_PATH} under install.program_root")
    for key in ("data_root", "key_file", "model_path", "cache_root", "checkpoint_dir"):
        if want[key].casefold().startswith("c:\\program files"):
            run.fail(names.route, f"install.{key} {want[key]!r} is writable state under C:\\Program Files")
    _check_route_dirs(run, names, route, want)
    _check_route_constants(run, names, route)
    if len(run.failures) == before:
        run.checked.append(
            f"{names.route}: endpoint, key, model, cache and checkpoint paths = where {names.config} reads"
        )


def _check_route_dirs(run: _Run, names: AssetNames, route: RouteRecord, want: Mapping[str, str]) -> None:
    """The route's paths are plain absolute Windows paths (``winpaths.plain_path_problem``: only
    those compare as text, so the Program Files rule above holds), and ``install.create_dirs`` is
    exactly the folders the install layout creates for them (``profiles.InstallLayout.data_dirs``:
    the data root, then the cache root, every folder of the checkpoint directory and the parents
    of the key and model files, sorted by their ``/`` relative paths)."""
    install = route.install
    paths = {**want, "program_root": install.program_root, "config": install.config}
    for key, path in sorted(paths.items()):
        problem = plain_path_problem(path)
        if problem is not None:
            run.fail(names.route, f"install.{key} {path!r} {problem}")
    root = want["data_root"]
    rels = {_under(root, want["cache_root"])}
    for key in ("key_file", "model_path", "checkpoint_dir"):
        parts = _under(root, want[key]).split("/")
        rels.update("/".join(parts[: i + 1]) for i in range(len(parts) - (key != "checkpoint_dir")))
    dirs = (root, *(windows_join(root, r) for r in sorted(rels) if r))
    if tuple(install.create_dirs) != dirs:
        run.fail(
            names.route,
            f"install.create_dirs is not the folders the data root's key, model, cache and checkpoint "
            f"paths need: {list(dirs)!r}",
        )


def _check_route_constants(run: _Run, names: AssetNames, route: RouteRecord) -> None:
    """The route's install roots are the layout's for its component tag (``winpaths.PROGRAM_ROOT``,
    ``winpaths.DATA_ROOT``; its path budget names the same roots), and what no input changes is
    what the build writes: :func:`route_plan_problems`' steps, :data:`ROUTE_CACHE_ACL`, :data:`ROUTE_KEY_SPEC`
    (second hostile review, 2026-12-04: a re-sealed route extracting into ``C:\\Windows\\System32``,
    with a one-byte key or Everyone on the key's ACL, verified OK)."""
    install, tag = route.install, route.component_tag
    roots = {
        "program_root": PROGRAM_ROOT.replace("<component>", tag),
        "data_root": DATA_ROOT.replace("<component>", tag),
    }
    for key, root in roots.items():
        if getattr(install, key) != root:
            run.fail(names.route, f"install.{key} is {getattr(install, key)!r}, not {root!r} (the layout's)")
        if getattr(install.path_budget, key).root != root:
            run.fail(names.route, f"install.path_budget.{key}.root is not {root!r}")
    account = _check_route_plan(run, names, route)
    if install.cache_acl.to_json() != with_account(ROUTE_CACHE_ACL, account):
        run.fail(names.route, "install.cache_acl is not the cache ACL the layout sets")
    spec = {k: v for k, v in route.bearer_key.to_json().items() if k != "file"}
    key_spec = with_account(ROUTE_KEY_SPEC, account)
    for field_name in sorted(set(spec) | set(key_spec)):
        if spec.get(field_name) != key_spec.get(field_name):
            run.fail(
                names.route,
                f"bearer_key.{field_name} is not the key file's {key_spec.get(field_name)!r}",
            )


def _check_route_plan(run: _Run, names: AssetNames, route: RouteRecord) -> str:
    """The route's executable steps are :func:`route_plan`'s (``route_plan_problems``: issue 33
    item 9); returns the service account the ACLs must grant."""
    problems, account = route_plan_problems(route.to_json())
    for problem in problems:
        run.fail(names.route, problem)
    return account


def _under(root: str, path: str) -> str:
    """``path`` relative to ``root`` with ``/`` separators (``""``: not under it)."""
    return path[len(root) + 1 :].replace("\\", "/") if path.startswith(root + "\\") else ""


def _check_route_endpoint(run: _Run, names: AssetNames, route: RouteRecord, cfg: dict[str, Any]) -> None:
    """The route's endpoint is where the engine listens: the parsed config's ``[server]`` host,
    port and auth."""
    server = _get(cfg, "server")
    server = server if isinstance(server, dict) else {}
    endpoint = route.endpoint
    for key, got in (("host", endpoint.host), ("port", endpoint.port), ("auth", endpoint.auth)):
        want = server.get(key)
        if want != got or type(want) is not type(got):
            run.fail(names.route, f"endpoint.{key} is {got!r}, but {names.config} [server] has {want!r}")


def _dotted(doc: Any, path: str) -> Any:
    """The value at the ``.`` path ``path`` of the decoded document ``doc`` (``None``: absent)."""
    return _get(doc, *path.split("."))


def _leaves(doc: dict[str, Any], prefix: str = "") -> list[str]:
    """The ``.`` paths of every value of ``doc`` that is not a table."""
    out: list[str] = []
    for key, value in doc.items():
        path = f"{prefix}{key}"
        out += _leaves(value, path + ".") if isinstance(value, dict) else [path]
    return out


def _check_content_bindings(
    run: _Run, names: AssetNames, files: _SetFiles, records: _Records, cfg: dict[str, Any] | None
) -> None:
    """Check 5 (content): the config holds what the profile renders into it (:data:`CONFIG_FROM_PROFILE`,
    no other key), the profile's model is the model entry's, and the provenance's
    ``internalParameters`` bind the config and model bytes (second hostile review, 2026-12-04:
    each could be re-sealed alone unnoticed)."""
    before = len(run.failures)
    profile = records.profile.to_json() if records.profile is not None else None
    model = records.model.to_json() if records.model is not None else None
    if cfg is not None and profile is not None:
        for key, field_path in CONFIG_FROM_PROFILE:
            got, want = _dotted(cfg, key), _dotted(profile, field_path)
            if got != want or type(got) is not type(want):
                run.fail(names.config, f"{key} is {got!r}, but {names.profile} {field_path} renders {want!r}")
        allowed = {k for k, _ in CONFIG_FROM_PROFILE} | set(CONFIG_FROM_LAYOUT)
        for key in sorted(set(_leaves(cfg)) - allowed):
            run.fail(names.config, f"{key} is no key the config's template writes")
    if profile is not None and model is not None:
        for key, field_path in (("sha256", "model.sha256"), ("local_name", "model.local_name")):
            if model.get(key) != _dotted(profile, field_path):
                run.fail(names.model, f"{key} is not {names.profile} {field_path}")
    if records.provenance is not None:
        _check_provenance_content(run, names, files, records)
    if len(run.failures) == before and cfg is not None and profile is not None:
        run.checked.append(f"{names.config}: every key = what {names.profile} renders")


def _check_provenance_content(run: _Run, names: AssetNames, files: _SetFiles, records: _Records) -> None:
    """The provenance's ``internalParameters`` bind the config bytes and the model."""
    assert records.provenance is not None
    definition = records.provenance.predicate.buildDefinition.to_json()
    internal = definition.get("internalParameters") or {}
    config_sha = files.digests.get(names.config)
    if config_sha is not None and internal.get("config_bytes_sha256") != config_sha:
        run.fail(names.provenance, f"{_INTERNAL}.config_bytes_sha256 is not {names.config}'s SHA-256")
    if records.model is not None and internal.get("model_sha256") != records.model.sha256:
        run.fail(names.provenance, f"{_INTERNAL}.model_sha256 is not {names.model} sha256")


def _parse_toml(config: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """The config parsed once as UTF-8 TOML, or ``None`` and why not (the route check reports it)."""
    try:
        return tomllib.loads(config.decode("utf-8")), None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return None, str(exc)


def _config_paths(run: _Run, names: AssetNames, cfg: dict[str, Any], instance: str) -> dict[str, str] | None:
    """The absolute paths the parsed config reads (install key -> path), or ``None`` (reported)."""
    root = _get(cfg, "paths", "data_root")
    rels = {
        "key_file": _get(cfg, "server", "bearer_key_file"),
        "model_path": _get(cfg, "model", "path"),
        "cache_root": _get(cfg, "checkpoint", "root"),
        "checkpoint_dir": _get(cfg, "checkpoint", "dir_template"),
    }
    if not isinstance(root, str) or not all(isinstance(v, str) for v in rels.values()):
        run.fail(names.config, "lacks paths.data_root or a relative key/model/checkpoint path")
        return None
    want = {k: windows_join(root, str(v).replace(INSTANCE_PLACEHOLDER, instance)) for k, v in rels.items()}
    want["data_root"] = root
    return want


_EXTERNAL = "predicate.buildDefinition.externalParameters"
_INTERNAL = "predicate.buildDefinition.internalParameters"


def _identity_pairs(names: AssetNames, records: _Records) -> list[tuple[str, str, Any, str]]:
    """``(record, field path, its value, component manifest field it must equal)`` for every
    identity field a record states (check 5)."""
    pairs: list[tuple[str, str, Any, str]] = []
    q = records.qualification
    if q is not None:
        pairs += [
            (names.qualification, "component_tag", q.component_tag, "component_tag"),
            (names.qualification, "lane", q.lane, "lane"),
            (names.qualification, "status", q.status, "qualification"),
            (names.qualification, "bound_to.source_commit", q.bound_to.source_commit, "source_commit"),
            (names.qualification, "bound_to.profile_id", q.bound_to.profile_id, "profile_id"),
        ]
    r = records.route
    if r is not None:
        pairs += [
            (names.route, "component_tag", r.component_tag, "component_tag"),
            (names.route, "lane", r.lane, "lane"),
            (names.route, "release", r.release, "release"),
            (names.route, "release_instance_id", r.release_instance_id, "release_instance_id"),
        ]
        pairs += [
            (names.route, f"hardware.{key}", getattr(r.hardware, key), key)
            for key in ("cuda_arch", "cuda_version", "cuda_runtime_version")
        ]
    p = records.profile
    if p is not None:
        pairs += [
            (names.profile, "profile_id", p.profile_id, "profile_id"),
            (names.profile, "lane", p.lane, "lane"),
            (names.profile, "component_tag", p.component_tag, "component_tag"),
            (names.profile, "cuda_arch", p.cuda_arch, "cuda_arch"),
        ]
    if records.provenance is not None:
        definition = records.provenance.predicate.buildDefinition
        ext, internal = definition.externalParameters, definition.internalParameters
        pairs += [
            (names.provenance, f"{_EXTERNAL}.{key}", getattr(ext, key), key)
            for key in ("component_tag", "lane", "profile_id", "release")
        ]
        pairs += [
            (names.provenance, f"{_INTERNAL}.{key}", getattr(internal, key), key)
            for key in ("cuda_arch", "cuda_version", "source_date_epoch")
        ]
    return pairs


def _check_identity(run: _Run, names: AssetNames, records: _Records, *, zip_sha256: str | None) -> None:
    """Check 5 of the module docstring: every record states the same identity as the component manifest."""
    manifest = records.manifest
    if manifest is None:
        return
    before = len(run.failures)
    tag = manifest.component_tag
    if package_stem(tag) != names.stem:
        run.fail(names.manifest, f"component_tag {tag!r} does not name this set ({names.stem})")
    for doc_name, path, got, key in _identity_pairs(names, records):
        want = getattr(manifest, key)
        if got != want:
            run.fail(doc_name, f"{path} is {got!r}, but {names.manifest} has {key} {want!r}")
    if records.qualification is not None:
        _check_qualification(run, names.qualification, records.qualification, zip_sha256)
    if zip_sha256 is not None:
        instance = release_instance_id(tag, zip_sha256)
        if manifest.release_instance_id != instance:
            run.fail(
                names.manifest,
                f"release_instance_id {manifest.release_instance_id!r} is not {instance!r} "
                "(component tag + package digest)",
            )
    if len(run.failures) == before:
        run.checked.append(
            f"{names.manifest}: tag, lane, profile, source, release instance and qualification agree "
            "with every record"
        )


def _receipt_entry_problems(entry: ReceiptEntry, bound_to: BoundTo) -> list[str]:
    """Why one receipt entry of a qualification record does not qualify ``bound_to`` (empty: it does).

    What sealing (:func:`~._receipts.bind_receipts`) demands, read back: a ``public`` receipt bound
    this source commit, profile, config and package and carries no scratch evidence; a
    ``scratch_equivalence`` one bound this source and profile, its own other bytes, and
    equivalence evidence naming this config and package.
    """
    kind = entry.binding
    if kind not in ("public", "scratch_equivalence"):
        return [f"binding {kind!r} is not public or scratch_equivalence"]
    problems = [
        f"bound.{key} {got!r} is not bound_to's {want!r}"
        for key, got, want in (
            ("source_commit", entry.bound.source_commit, bound_to.source_commit),
            ("profile_id", entry.bound.profile_id, bound_to.profile_id),
        )
        if got != want
    ]
    own = (entry.bound.package_sha256, entry.bound.config_sha256)
    public = (bound_to.package_sha256, bound_to.config_bytes_sha256)
    if kind == "public":
        if entry.scratch is not None:
            problems.append("has binding 'public' but carries scratch evidence")
        if own != public:
            problems.append("does not bind this package and config")
        return problems
    eq = entry.scratch.equivalence if entry.scratch is not None else None
    if own == public:
        problems.append("is a scratch run naming the public package's own bytes")
    if eq is None or (eq.package_sha256, eq.config_sha256) != public:
        problems.append("does not bind this package and config (scratch.equivalence)")
    return problems


def _check_qualification(run: _Run, name: str, record: QualificationRecord, zip_sha256: str | None) -> None:
    """The typed qualification record (schema 2, unknown keys refused by its parse) binds this
    package, and its status follows from its receipts and gate ledger: ``qualified`` exactly when
    there is a receipt, every receipt reports at least one gate result and no gate failed
    (:func:`qualifies`); the ledger is the merge of the receipts' gates (docs/staged-inputs.md)."""
    bound = record.bound_to.package_sha256
    if zip_sha256 is not None and bound != zip_sha256:
        run.fail(name, f"bound_to.package_sha256 is {bound!r}, but the package has {zip_sha256}")
    seen: dict[str, int] = {}
    for i, r in enumerate(record.receipts):
        for problem in _receipt_entry_problems(r, record.bound_to):
            run.fail(name, f"receipts[{i}] ({r.name!r}) {problem}")
        if r.sha256 in seen:
            run.fail(name, f"receipts[{i}] ({r.name!r}) has the SHA-256 of receipts[{seen[r.sha256]}]")
        seen.setdefault(r.sha256, i)
    reports = [dict(r.gates) for r in record.receipts]
    ledger = merge_gates(reports)
    if record.gates.to_json() != ledger.as_dict():
        run.fail(name, "gates (merged, counts, failed) do not follow from the receipts' gates")
    want = "qualified" if qualifies(reports) else "unqualified"
    if record.status != want:
        failed = f", failed gates {', '.join(ledger.failed)}" if ledger.failed else ""
        empty = sum(1 for g in reports if not g)
        bare = f", {empty} reporting no gate results" if empty else ""
        run.fail(
            name, f"status {record.status!r} does not follow from its {len(reports)} receipts{failed}{bare}"
        )
