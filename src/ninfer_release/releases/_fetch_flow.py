"""Fetch a published set by its URLs, then verify it: what an installer runs (issue 12).

Order (each step bounded, each byte checked before it is trusted):

1. ``{base}SHA256SUMS`` — capped at :data:`MAX_SUMS_BYTES`; names the one package ``*.zip``,
   hence the stem and the component manifest ``<stem>.manifest.json``;
2. the component manifest — capped at :data:`MAX_MANIFEST_BYTES`, must hash to the digest
   ``SHA256SUMS`` lists; it records the size of entries 1–9;
3. every other listed file, by URL, with that size and the listed SHA-256 (resumable, see
   :mod:`._http_fetch`); a listed file whose size no record states cannot be fetched completely
   and fails;
4. the full set verification (:func:`~._verify.verify_set`) over exactly the fetched files,
   given the SHA-256 of each file as the download established it (each byte was hashed as it
   arrived, and the file placed only when that digest was the listed one), so no file is hashed a
   second time; the zip is still read whole for its members. The downloaded files are flushed to
   disk on a helper thread meanwhile (:class:`~._http_fetch.HttpFetcher`).

``fetch --route ROUTE.json`` takes the set's URL from the route block (the directory of
``package.url``), checks that the fetched route block is byte-identical to the one given, and with
``with_model`` also fetches ``model.url`` (``model.size``, ``model.sha256``) into
``model_dir/<model.store_as>`` by the same resume rule.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ninfer_release import atomic, hashing, strictjson
from ninfer_release.checksums import parse_sha256sums, sums_bound
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.releases._contract import ENTRY_SUFFIXES, SUMS_NAME, AssetNames, stem_from_names
from ninfer_release.releases._http_fetch import (
    Fetched,
    FetchProgress,
    HttpFetcher,
    HttpPolicy,
    Wanted,
    check_url,
    join_url,
)
from ninfer_release.releases._publish import is_bare_name
from ninfer_release.releases._verify import VerifyReport, verify_set

#: ``SHA256SUMS`` of a set lists 10 entries: the bound ``verify`` applies (9,216 bytes).
MAX_SUMS_BYTES = sums_bound(len(ENTRY_SUFFIXES))
#: The component manifest is a few KiB; 1 MiB bounds what an unknown server can make us hold.
MAX_MANIFEST_BYTES = 1 << 20
#: A route block is ~2 KiB.
MAX_ROUTE_BYTES = 1 << 20
#: Hidden directory in ``--out`` holding partials (named by digest) and the verification view.
PARTIALS_DIR = ".ninfer-partial"

#: The set verification :func:`fetch_set` runs: ``check(directory, known)``, where ``known`` maps
#: each fetched file's name to the SHA-256 its download established for those very bytes.
SetCheck = Callable[[Path, Mapping[str, str]], VerifyReport]


def verify_fetched(directory: Path, known: Mapping[str, str]) -> VerifyReport:
    """The default :data:`SetCheck`: :func:`verify_set` with the established digests."""
    return verify_set(directory, known_sha256=known)


@dataclass(frozen=True, kw_only=True)
class FetchReport:
    """What :func:`fetch_set` did: the files (in fetch order) and the set verification."""

    url: str
    out: str
    files: tuple[Fetched, ...]
    report: VerifyReport
    model: Fetched | None = None

    @property
    def ok(self) -> bool:
        return self.report.ok

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``--json`` summary)."""
        return {
            "url": self.url,
            "out": self.out,
            "files": [f.as_dict() for f in self.files],
            "bytes_downloaded": sum(f.size - f.resumed_from for f in self.files if f.status == "downloaded"),
            "model": self.model.as_dict() if self.model is not None else None,
            "verify": self.report.as_dict(),
        }


def set_base_url(url: str) -> str:
    """The set's base URL ``https://HOST/…/<tag>/`` (a trailing ``/`` added when missing).

    Raises:
        InputError: not https (http only for loopback), or no path (exit 4).
    """
    parsed = check_url(url)
    if not parsed.path or parsed.path == "/" or parsed.query or parsed.fragment:
        raise InputError(
            problems=[Problem(file=url, message="expected https://HOST/…/<tag>/ (the set's directory)")]
        )
    return url if url.endswith("/") else url + "/"


def _plan(base: str, sums: bytes) -> tuple[AssetNames, dict[str, str]]:
    parsed = parse_sha256sums(sums, source=join_url(base, SUMS_NAME))
    if parsed.errors:
        raise IntegrityError(problems=list(parsed.errors))
    listed = parsed.as_dict()
    bad = [n for n in listed if not is_bare_name(n)]
    if bad:
        raise IntegrityError(
            problems=[
                Problem(file=join_url(base, SUMS_NAME), field=n, message="not a bare file name") for n in bad
            ]
        )
    stem = stem_from_names(sorted(listed))
    if stem is None:
        raise IntegrityError(
            problems=[Problem(file=join_url(base, SUMS_NAME), message="lists no single package '*.zip'")]
        )
    names = AssetNames(stem=stem)
    if names.manifest not in listed:
        raise IntegrityError(
            problems=[Problem(file=join_url(base, SUMS_NAME), message=f"does not list {names.manifest}")]
        )
    return names, listed


def _sizes(manifest: Mapping[str, Any], source: str) -> dict[str, int]:
    entries = manifest.get("entries")
    out: dict[str, int] = {}
    if isinstance(entries, list):
        for e in entries:
            if isinstance(e, dict) and isinstance(e.get("name"), str) and strictjson.is_int(e.get("size")):
                out[e["name"]] = int(e["size"])
    if not out:
        raise IntegrityError(
            problems=[Problem(file=source, field="entries", message="records no entry sizes")]
        )
    return out


def _place(dest: Path, data: bytes) -> None:
    """Write ``data`` as the new file ``dest``, unless it is already there with these bytes.

    Raises:
        InputError: ``dest`` exists with other bytes (never overwritten).
    """
    if dest.is_file() and not dest.is_symlink():
        if dest.read_bytes() == data:
            return
        raise InputError(
            problems=[
                Problem(file=str(dest), message="already exists with other bytes; refusing to overwrite")
            ]
        )
    atomic.write_bytes(dest, data, overwrite=False)


def fetch_set(
    url: str,
    out: Path,
    *,
    policy: HttpPolicy,
    progress: FetchProgress | None = None,
    expected_sums_sha256: str | None = None,
    check: SetCheck = verify_fetched,
) -> FetchReport:
    """Download the set at ``url`` into ``out`` (created if missing), then verify it.

    ``check`` is the set verification run over exactly the fetched files, given the digests the
    download established (default :func:`verify_fetched`; ``verify --release-manifest`` passes
    one that also checks the binding).

    Files already in ``out`` with the expected bytes are kept; others are never overwritten.
    Partials live in ``out/.ninfer-partial/<sha256>.partial`` so a later run resumes them; files
    whose digest checked stay when a later file fails (a rerun finds them ``present``). When the
    set verification fails, the files this run added are removed again (exit 5 follows).

    Raises:
        InputError: bad URL, 404, TLS failure, refused redirect, network failure after the
            retries, the deadline, a file in ``out`` with other bytes (exit 4).
        IntegrityError: wrong size or digest of any file, ``SHA256SUMS`` unusable, or
            ``expected_sums_sha256`` not met (exit 5).
    """
    base = set_base_url(url)
    out.mkdir(parents=True, exist_ok=True)
    partials = out / PARTIALS_DIR
    added: list[Path] = []
    with HttpFetcher(policy, progress=progress) as http:
        sums = _read_sums(http, base, expected_sums_sha256)
        names, listed = _plan(base, sums.data)
        manifest = _read_manifest(http, base, names, listed)
        wanted = _wanted(base, names, listed, _sizes(manifest.record, manifest.url))
        if progress is not None:
            progress("total", "", len(sums.data) + len(manifest.data) + sum(w.size for w in wanted))
        fetched = [_place_read(out, read, added, progress) for read in (sums, manifest)]
        for w in wanted:
            got = http.fetch(w, dest=out / w.name, partials=partials)
            if got.status == "downloaded":
                added.append(out / w.name)
            fetched.append(got)
        known = {f.name: f.sha256 for f in fetched}
        report = verify_view(out, names, check, known)
    if not report.ok:
        _remove(added)
    with contextlib.suppress(OSError):
        partials.rmdir()  # only when empty: a partial of another artifact is left alone
    return FetchReport(url=base, out=str(out), files=tuple(fetched), report=report)


@dataclass(frozen=True, kw_only=True)
class _Read:
    """A file read whole before the others (``SHA256SUMS``, the component manifest): its bare
    ``name``, the URL asked for and the one that answered, its bytes and (manifest) record."""

    name: str
    url: str
    final_url: str
    data: bytes
    record: Mapping[str, Any] = field(default_factory=dict)


def _read_sums(http: HttpFetcher, base: str, expected: str | None) -> _Read:
    """``{base}SHA256SUMS``, capped; its digest must be ``expected`` when given.

    Raises:
        IntegrityError: it is not ``expected``.
    """
    url = join_url(base, SUMS_NAME)
    data, final = http.read_capped(url, cap=MAX_SUMS_BYTES, name=SUMS_NAME)
    sha = hashing.sha256_bytes(data)
    if expected is not None and sha != expected.lower():
        raise IntegrityError(
            problems=[Problem(file=url, message=f"digest {sha} is not the bound {expected}")]
        )
    return _Read(name=SUMS_NAME, url=url, final_url=final, data=data)


def _read_manifest(http: HttpFetcher, base: str, names: AssetNames, listed: Mapping[str, str]) -> _Read:
    """The component manifest, capped, hashing to what ``SHA256SUMS`` lists, as strict JSON.

    Raises:
        IntegrityError: another digest, or not a JSON object.
    """
    url = join_url(base, names.manifest)
    data, final = http.read_capped(url, cap=MAX_MANIFEST_BYTES, name=names.manifest)
    sha = hashing.sha256_bytes(data)
    if sha != listed[names.manifest]:
        message = f"wrong digest: SHA-256 is {sha}, SHA256SUMS lists {listed[names.manifest]}"
        raise IntegrityError(problems=[Problem(file=url, field=names.manifest, message=message)])
    record = strictjson.parse_object(data, source=url, error=IntegrityError)
    return _Read(name=names.manifest, url=url, final_url=final, data=data, record=record)


def _wanted(
    base: str, names: AssetNames, listed: Mapping[str, str], sizes: Mapping[str, int]
) -> list[Wanted]:
    """Every listed file but the component manifest, with the size it records, in name order.

    Raises:
        IntegrityError: a listed file whose size the manifest does not record (it could not be
            fetched completely).
    """
    wanted: list[Wanted] = []
    for name in sorted(listed):
        if name == names.manifest:
            continue
        if name not in sizes:
            message = f"listed, but {names.manifest} records no size for it; cannot fetch it completely"
            raise IntegrityError(
                problems=[Problem(file=join_url(base, SUMS_NAME), field=name, message=message)]
            )
        wanted.append(
            Wanted(
                name=name,
                url=join_url(base, name),
                size=sizes[name],
                sha256=listed[name],
                listed_by=f"{SUMS_NAME} lists",
            )
        )
    return wanted


def _place_read(out: Path, read: _Read, added: list[Path], progress: FetchProgress | None) -> Fetched:
    """Put a file read whole into ``out`` (noting it in ``added`` when new) and report it."""
    dest = out / read.name
    present = dest.is_file()
    _place(dest, read.data)
    if not present:
        added.append(dest)
    if progress is not None:
        progress("start", read.name, len(read.data))
        progress("advance", read.name, len(read.data))
    return Fetched(
        name=read.name,
        url=read.url,
        final_url=read.final_url,
        size=len(read.data),
        sha256=hashing.sha256_bytes(read.data),
        status="present" if present else "downloaded",
    )


def verify_view(
    out: Path, names: AssetNames, check: SetCheck = verify_fetched, known: Mapping[str, str] | None = None
) -> VerifyReport:
    """Verify exactly the 11 files of ``names`` in ``out`` (other files there are not the set's),
    ``known``: name -> SHA-256 established for them (passed on to ``check``).

    The files are hard-linked into a private directory under ``out/.ninfer-partial`` and
    ``check`` runs on that view, so a stale partial or an unrelated file in ``out``
    neither fails nor hides anything.
    """
    (out / PARTIALS_DIR).mkdir(exist_ok=True)
    view = Path(tempfile.mkdtemp(prefix="verify-", dir=out / PARTIALS_DIR))
    try:
        for name in names.all:
            if (out / name).is_file():
                os.link(out / name, view / name)
        report = check(view, known or {})
    finally:
        shutil.rmtree(view, ignore_errors=True)
    return replace(report, directory=str(out))


def _remove(paths: list[Path]) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def read_route(path: Path) -> dict[str, Any]:
    """The route block at ``path`` (strict JSON, at most :data:`MAX_ROUTE_BYTES`).

    Raises:
        InputError: unreadable, not strict JSON, or without ``package.url`` (exit 4).
    """
    doc = strictjson.read_object(path, limit=MAX_ROUTE_BYTES)
    pkg = doc.get("package")
    if not isinstance(pkg, dict) or not isinstance(pkg.get("url"), str) or "/" not in pkg["url"]:
        raise InputError(
            problems=[Problem(file=str(path), field="package.url", message="missing or not a URL")]
        )
    return doc


def _model_wanted(route: Mapping[str, Any], source: str) -> Wanted:
    model = route.get("model")
    problems: list[Problem] = []
    if not isinstance(model, dict):
        raise InputError(problems=[Problem(file=source, field="model", message="missing")])
    url, size, sha, store_as = model.get("url"), model.get("size"), model.get("sha256"), model.get("store_as")
    if not isinstance(url, str):
        problems.append(Problem(file=source, field="model.url", message="missing"))
    if not strictjson.is_int(size) or int(size) < 1:  # type: ignore[arg-type]
        problems.append(Problem(file=source, field="model.size", message="not a positive integer (bytes)"))
    if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        problems.append(Problem(file=source, field="model.sha256", message="not 64 lowercase hex digits"))
    if not isinstance(store_as, str) or not is_bare_name(store_as):
        problems.append(Problem(file=source, field="model.store_as", message="not a bare file name"))
    if problems:
        raise InputError(problems=problems)
    assert isinstance(url, str) and isinstance(sha, str) and isinstance(store_as, str)
    check_url(url)
    return Wanted(
        name=store_as,
        url=url,
        size=int(size),  # type: ignore[arg-type]
        sha256=sha,
        listed_by=f"{source} model.sha256 is",
    )


def fetch_route(
    route_path: Path,
    out: Path,
    *,
    policy: HttpPolicy,
    with_model: bool = False,
    model_dir: Path | None = None,
    progress: FetchProgress | None = None,
) -> FetchReport:
    """Fetch and verify the set a route block names (the directory of its ``package.url``).

    The fetched set's route block must be byte-identical to ``route_path`` (what the installer
    holds is what was published). With ``with_model``, ``model.url`` is fetched into
    ``model_dir/<model.store_as>`` (default ``out``) with the route's size and SHA-256.

    Raises:
        InputError, IntegrityError: as :func:`fetch_set`; a route that differs from the
            published one is an :class:`IntegrityError`.
    """
    route = read_route(route_path)
    model = _model_wanted(route, str(route_path)) if with_model else None
    base = route["package"]["url"].rsplit("/", 1)[0] + "/"
    report = fetch_set(base, out, policy=policy, progress=progress)
    names = AssetNames(stem=report.report.stem or "")
    if report.report.stem is not None and (out / names.route).read_bytes() != route_path.read_bytes():
        raise IntegrityError(
            problems=[
                Problem(file=str(route_path), message=f"differs from the published {names.route} at {base}")
            ]
        )
    if model is None or not report.ok:
        return report
    target = model_dir if model_dir is not None else out
    target.mkdir(parents=True, exist_ok=True)
    with HttpFetcher(policy, progress=progress) as http:
        if progress is not None:
            progress("total", "", model.size)
        got = http.fetch(model, dest=target / model.name, partials=target / PARTIALS_DIR)
    with contextlib.suppress(OSError):
        (target / PARTIALS_DIR).rmdir()
    return replace(report, model=got)
