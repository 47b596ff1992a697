"""Qualification receipts, schema 2: one frozen record, one strict :meth:`Receipt.parse`, one
:meth:`Receipt.to_bytes` (DESIGN.md §3; docs/staged-inputs.md "Qualification receipts").

A *receipt* is what one hardware run leaves behind. It names what the run installed — lane, source
commit, profile id, the config **bytes** SHA-256 and the SHA-256 of the exact package zip (both as
listed in the draft set's ``SHA256SUMS``) — plus, optionally, gate results
(``{"G1": "pass", "G22": "not_applicable"}``) and flat measurements. A run on a *scratch*
installation (e.g. a port-only variant of the config) says so under ``scratch`` and names its own
bytes; it can qualify the public package only with explicit equivalence evidence
(``scratch.equivalence``), and the qualification record then shows that binding as such.

Receipts are byte-mirrored into a public asset (``<stem>.qualification.json`` records each by its
SHA-256), so :meth:`Receipt.parse` refuses anything shaped like a secret (a 64-hex bearer key, a
token) or a user path (``C:\\Users\\NAME``, ``/home/NAME``), naming the field.

Flow: :func:`read_receipts` (every ``*.json`` under ``--receipts DIR``, or ``DIR/<lane>/``; never
blocks on a FIFO) → :func:`bind_receipts` (per lane, after the package is built: each receipt
must name exactly these bytes, or exit 5) → :class:`Qualification` (status + gate ledger).
:func:`receipt_template` derives the receipt a hardware run fills in from a draft set.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from ninfer_release import strictjson
from ninfer_release.checksums import parse_sha256sums
from ninfer_release.digests import SHA256_HEX, SHA256_HEX_ANY_CASE
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.hashing import sha256_bytes
from ninfer_release.jsonbytes import dumps_stable
from ninfer_release.releases._contract import SUMS_NAME, AssetNames, stem_from_names

#: Receipt schema (ours). Schema 1 bound no package and is refused with what to add.
RECEIPT_SCHEMA = 2
#: A receipt is a small JSON record (bindings and gate results, ~1 KiB); 256 KiB bounds it
#: before reading, with room for long gate ledgers (docs/reliability.md).
MAX_RECEIPT_BYTES = 256 << 10
GateResult = Literal["pass", "fail", "not_applicable"]
GATE_RESULTS: tuple[GateResult, ...] = ("pass", "fail", "not_applicable")
#: How a receipt qualifies the package: it installed these very bytes, or a scratch variant
#: with equivalence evidence (release notes: public configuration and scratch equivalence are
#: distinct bindings).
BindingKind = Literal["public", "scratch_equivalence"]

_HEX40 = re.compile(r"[0-9a-f]{40}")
_LANE = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_PROFILE_ID = re.compile(r"[a-z0-9][a-z0-9.-]{0,119}")
_GATE_ID = re.compile(r"[A-Z][A-Z0-9]{0,15}")  # G1 … G26, G18L
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_MAX_TEXT = 2000

_REQUIRED = ("schema", "lane", "source_commit", "profile_id", "config_sha256", "package_sha256")
_OPTIONAL = ("gates", "measurements", "scratch", "notes")

#: Secret shapes refused anywhere in a receipt (key or value), with what they look like. Fields
#: declared as digests (``*_sha256``) are exempt from the hex rule: they must be 64 hex.
#: Compiled on first use (:func:`_secrets`): only reading a receipt needs them, and compiling
#: them costs every command's start-up ~2.5 ms (issue 13; ``verify`` imports this module).
_SECRET_SHAPES: tuple[tuple[str, str], ...] = (
    ("a 64-hex bearer key", r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{64,}(?![0-9A-Fa-f])"),
    ("a bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}"),
    ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("a GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("a Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("a Slack token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    ("an AWS access key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("an API key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("a JSON Web Token", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\."),
    ("a private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    (
        "a credential assignment",
        r"(?i)\b(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)\s*[=:]\s*\S",
    ),
    (
        "a Windows user path",
        r"(?i)(?<![A-Za-z])[a-z]:[\\/]+(?:users|documents and settings)[\\/]+[^\\/\s]",
    ),
    ("a user home path", r"(?<![A-Za-z0-9_.~-])/(?:home|Users)/[^/\s]"),
    ("a root home path", r"(?<![A-Za-z0-9_.~-])/root(?:/|\b)"),
)
#: Key names that only ever hold a secret.
_SECRET_KEY_NAMES = r"(?i)(?:password|passwd|secret|token|api_?key|bearer(?:_key)?|authorization)"  # noqa: S105 - a pattern of key names


@functools.cache
def _secrets() -> tuple[re.Pattern[str], tuple[tuple[str, re.Pattern[str]], ...]]:
    """``(secret key names, ((what, secret shape), ...))``, compiled once."""
    return re.compile(_SECRET_KEY_NAMES), tuple((what, re.compile(shape)) for what, shape in _SECRET_SHAPES)


@dataclass(frozen=True, kw_only=True)
class Equivalence:
    """Evidence that a scratch installation stands for the public package.

    ``package_sha256`` / ``config_sha256`` name the *public* bytes (the draft set's ``SHA256SUMS``
    lines); ``evidence`` says why the scratch run measures the same thing (free text, scrubbed).
    """

    package_sha256: str
    config_sha256: str
    evidence: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "package_sha256": self.package_sha256,
            "config_sha256": self.config_sha256,
            "evidence": self.evidence,
        }


@dataclass(frozen=True, kw_only=True)
class Scratch:
    """A run on a scratch installation: which variant, and its equivalence evidence if any."""

    variant: str
    equivalence: Equivalence | None = None

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"variant": self.variant}
        if self.equivalence is not None:
            doc["equivalence"] = self.equivalence.as_dict()
        return doc


@dataclass(frozen=True, kw_only=True)
class Receipt:
    """One hardware run's qualification receipt, schema 2 (see the module docstring).

    ``config_sha256`` and ``package_sha256`` are what the run installed (64 lowercase hex);
    ``gates`` maps gate ids (``G1``, ``G18L``) to ``pass`` / ``fail`` / ``not_applicable``;
    ``measurements`` maps names to a number, string or boolean. Both mappings are read-only and
    sorted by key.
    """

    lane: str
    source_commit: str
    profile_id: str
    config_sha256: str
    package_sha256: str
    gates: Mapping[str, GateResult] = field(default_factory=lambda: MappingProxyType({}))
    measurements: Mapping[str, float | int | str | bool] = field(default_factory=lambda: MappingProxyType({}))
    scratch: Scratch | None = None
    notes: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready document (what :meth:`to_bytes` renders)."""
        doc: dict[str, Any] = {
            "schema": RECEIPT_SCHEMA,
            "lane": self.lane,
            "source_commit": self.source_commit,
            "profile_id": self.profile_id,
            "config_sha256": self.config_sha256,
            "package_sha256": self.package_sha256,
            "gates": dict(self.gates),
            "measurements": dict(self.measurements),
        }
        if self.scratch is not None:
            doc["scratch"] = self.scratch.as_dict()
        if self.notes is not None:
            doc["notes"] = self.notes
        return doc

    def to_bytes(self) -> bytes:
        """Exact bytes: UTF-8 JSON, two-space indent, sorted keys, LF, one trailing newline."""
        return dumps_stable(self.as_dict())

    @classmethod
    def parse(cls, data: bytes, *, source: str) -> Receipt:
        """Parse receipt bytes strictly; ``source`` names the file in every message.

        Every problem is reported at once, each naming ``source`` and the field: not UTF-8 JSON,
        duplicate keys, not an object, schema other than 2 (schema 1 is told what to add),
        missing/unknown keys, wrong types, digests that are not 64 lowercase hex, a source commit
        that is not 40 hex, a gate result outside pass/fail/not_applicable, nested measurements,
        and anything shaped like a secret or a user path.

        Raises:
            InputError: the bytes are not a valid schema-2 receipt (exit 4).
        """
        if len(data) > MAX_RECEIPT_BYTES:
            raise InputError(
                problems=[Problem(file=source, message=f"larger than its bound of {MAX_RECEIPT_BYTES} bytes")]
            )
        doc = strictjson.parse_object(data, source=source)
        return _Parser(source).receipt(doc)


class _Parser:
    """Field-by-field checks of one receipt document, collecting every problem."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[Problem] = []

    def bad(self, where: str, message: str) -> None:
        self.problems.append(Problem(file=self.source, field=where, message=message))

    def receipt(self, doc: dict[str, Any]) -> Receipt:
        schema = doc.get("schema")
        if schema == 1:
            raise InputError(
                problems=[
                    Problem(
                        file=self.source,
                        field="schema",
                        message='a schema 1 receipt binds no package: add "package_sha256" (the '
                        '<stem>.zip line of the draft set\'s SHA256SUMS) and set "schema": 2',
                    )
                ]
            )
        if schema != RECEIPT_SCHEMA or isinstance(schema, bool):
            raise InputError(
                problems=[
                    Problem(
                        file=self.source, field="schema", message=f"{schema!r}; expected {RECEIPT_SCHEMA}"
                    )
                ]
            )
        self.keys(doc, "", _REQUIRED, _OPTIONAL)
        self.scrub(doc, "")
        lane = self.text(doc, "lane", pattern=_LANE, what="a lane id")
        commit = self.text(doc, "source_commit", pattern=_HEX40, what="a full 40-hex commit")
        profile = self.text(doc, "profile_id", pattern=_PROFILE_ID, what="a profile id")
        config = self.text(doc, "config_sha256", pattern=SHA256_HEX, what="64 lowercase hex")
        package = self.text(doc, "package_sha256", pattern=SHA256_HEX, what="64 lowercase hex")
        gates = self.gates(doc.get("gates", {}))
        measurements = self.measurements(doc.get("measurements", {}))
        scratch = self.scratch(doc["scratch"]) if "scratch" in doc else None
        notes = self.text(doc, "notes", max_len=_MAX_TEXT) if "notes" in doc else None
        if self.problems:
            raise InputError(problems=self.problems)
        return Receipt(
            lane=lane,
            source_commit=commit,
            profile_id=profile,
            config_sha256=config,
            package_sha256=package,
            gates=gates,
            measurements=measurements,
            scratch=scratch,
            notes=notes,
        )

    def keys(
        self, doc: Mapping[str, Any], where: str, required: Sequence[str], optional: Sequence[str]
    ) -> None:
        prefix = f"{where}." if where else ""
        for key in required:
            if key not in doc:
                self.bad(f"{prefix}{key}", "missing")
        for key in doc:
            if key not in required and key not in optional:
                self.bad(f"{prefix}{key}", f"unknown key (allowed: {', '.join((*required, *optional))})")

    def text(
        self,
        doc: Mapping[str, Any],
        key: str,
        *,
        where: str = "",
        pattern: re.Pattern[str] | None = None,
        what: str = "",
        max_len: int = 200,
    ) -> str:
        path = f"{where}.{key}" if where else key
        value = doc.get(key)
        if key not in doc:
            return ""  # reported by keys()
        if not isinstance(value, str) or not value:
            self.bad(path, f"not a non-empty string (got {value!r})")
            return ""
        if not value.strip():
            # Evidence (or a note) of whitespace only says nothing, yet would read as given.
            self.bad(path, "blank (whitespace only)")
            return ""
        if len(value) > max_len:
            self.bad(path, f"longer than {max_len} characters")
            return ""
        if pattern is not None and not pattern.fullmatch(value):
            self.bad(path, f"{value!r} is not {what}")
            return ""
        return value

    def gates(self, value: Any) -> Mapping[str, GateResult]:
        if not isinstance(value, dict):
            self.bad("gates", "not an object of gate id -> pass | fail | not_applicable")
            return MappingProxyType({})
        out: dict[str, GateResult] = {}
        for gate, result in value.items():
            if not _GATE_ID.fullmatch(gate):
                self.bad(f"gates.{gate}", "not a gate id (G1, G18L, ...)")
            elif result not in GATE_RESULTS:
                self.bad(f"gates.{gate}", f"{result!r} is not one of {', '.join(GATE_RESULTS)}")
            else:
                out[gate] = result
        return MappingProxyType(dict(sorted(out.items(), key=lambda kv: _gate_order(kv[0]))))

    def measurements(self, value: Any) -> Mapping[str, float | int | str | bool]:
        if not isinstance(value, dict):
            self.bad("measurements", "not an object of name -> number | string | boolean")
            return MappingProxyType({})
        out: dict[str, float | int | str | bool] = {}
        for name, v in value.items():
            if not _NAME.fullmatch(name):
                self.bad(f"measurements.{name}", "not a measurement name ([A-Za-z0-9_.-], at most 64)")
            elif isinstance(v, str) and len(v) > _MAX_TEXT:
                self.bad(f"measurements.{name}", f"longer than {_MAX_TEXT} characters")
            elif isinstance(v, bool | int | float | str):
                out[name] = v
            else:
                self.bad(f"measurements.{name}", "not a number, string or boolean (measurements are flat)")
        return MappingProxyType(dict(sorted(out.items())))

    def scratch(self, value: Any) -> Scratch | None:
        if not isinstance(value, dict):
            self.bad("scratch", "not an object {variant, equivalence?}")
            return None
        self.keys(value, "scratch", ("variant",), ("equivalence",))
        variant = self.text(value, "variant", where="scratch", pattern=_NAME, what="a variant name")
        equivalence = None
        eq = value.get("equivalence")
        if "equivalence" in value:
            if not isinstance(eq, dict):
                self.bad("scratch.equivalence", "not an object {package_sha256, config_sha256, evidence}")
            else:
                w = "scratch.equivalence"
                self.keys(eq, w, ("package_sha256", "config_sha256", "evidence"), ())
                equivalence = Equivalence(
                    package_sha256=self.text(
                        eq, "package_sha256", where=w, pattern=SHA256_HEX, what="64 lowercase hex"
                    ),
                    config_sha256=self.text(
                        eq, "config_sha256", where=w, pattern=SHA256_HEX, what="64 lowercase hex"
                    ),
                    evidence=self.text(eq, "evidence", where=w, max_len=_MAX_TEXT),
                )
        return Scratch(variant=variant, equivalence=equivalence)

    def scrub(self, value: Any, where: str) -> None:
        """Refuse secret- or user-path-shaped keys and strings anywhere, naming the field."""
        if isinstance(value, dict):
            for key, v in value.items():
                path = f"{where}.{key}" if where else str(key)
                if _secrets()[0].fullmatch(key):
                    self.bad(path, "a field of this name holds a secret; receipts are public")
                self.scrub_text(key, path, is_key=True)
                # A digest field is checked as a digest (an upper-case one is told "not 64
                # lowercase hex"), never mistaken for a bearer key.
                if not (key.endswith("_sha256") and isinstance(v, str) and SHA256_HEX_ANY_CASE.fullmatch(v)):
                    self.scrub(v, path)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.scrub(v, f"{where}[{i}]")
        elif isinstance(value, str):
            self.scrub_text(value, where, is_key=False)

    def scrub_text(self, text: str, where: str, *, is_key: bool) -> None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # JSON lets "\ud800" through; the record mirroring this receipt could not be written.
            self.bad(where, f"{'key' if is_key else 'value'} not valid Unicode (a lone surrogate escape)")
            return
        for what, pattern in _secrets()[1]:
            if pattern.search(text):
                # Never echo the value: it may be the secret.
                self.bad(
                    where, f"{'key' if is_key else 'value'} looks like {what}; receipts are public (scrub it)"
                )
                return


def _gate_order(gate: str) -> tuple[str, int, str]:
    """Sort G2 before G10: the letter prefix, the number, then any suffix (G18 < G18L)."""
    m = re.fullmatch(r"([A-Z]+)([0-9]*)(.*)", gate)
    assert m is not None
    return m.group(1), int(m.group(2) or 0), m.group(3)


# --- reading a receipts directory -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LoadedReceipt:
    """A parsed receipt with where it came from and the SHA-256 of its exact bytes."""

    path: str
    name: str
    sha256: str
    receipt: Receipt


def _refuse(path: Path | str, message: str, field: str = "") -> InputError:
    return InputError(problems=[Problem(file=str(path), field=field, message=message)])


def read_receipt_file(path: Path, *, root: Path, limit: int = MAX_RECEIPT_BYTES) -> bytes:
    """The bytes of the regular file ``path`` inside ``root`` (at most ``limit`` bytes).

    Never blocks and never opens a device: the type is checked with ``lstat`` before anything is
    opened, then :func:`ninfer_release.strictjson.read_regular` opens it ``O_NONBLOCK`` (and
    ``O_NOFOLLOW``) and checks ``fstat`` again, so a FIFO, device or socket — or one swapped in
    between — is refused instead of read. A symbolic link is followed only when its target is a
    regular file inside ``root``.

    Raises:
        InputError: not a regular file, a link out of ``root``, unreadable, or too big (exit 4).
    """
    try:
        st = os.lstat(path)
        target = path
        if stat.S_ISLNK(st.st_mode):
            target = Path(os.path.realpath(path))
            if not target.is_relative_to(Path(os.path.realpath(root))):
                raise _refuse(
                    path, f"a link out of {root} (to {target}); only regular files inside it are read"
                )
            st = os.lstat(target)
    except OSError as exc:
        raise _refuse(path, f"cannot read: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, f"not a regular file ({_kind(st.st_mode)})")
    return strictjson.read_regular(target, limit=limit, source=str(path), follow_symlinks=False)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_receipts(receipts_dir: Path, *, lanes: Collection[str]) -> tuple[LoadedReceipt, ...]:
    """Every receipt under ``receipts_dir``: ``DIR/*.json`` (each naming its lane) and ``DIR/<lane>/*.json``.

    ``lanes`` are the lanes that take receipts (the release's native lanes). Hidden entries
    (``.name``) are ignored. Everything else is checked, so a misspelt lane never silently
    leaves a set ``unqualified`` (docs/staged-inputs.md).

    Raises:
        InputError: (exit 4, naming the file) ``receipts_dir`` missing; a sub-directory naming no
            lane; an entry that is not ``*.json``; a receipt that is not a regular file inside the
            directory (FIFO, device, link out); a receipt that does not parse
            (:meth:`Receipt.parse`); a receipt naming no lane, or a lane other than its directory's;
            two receipts of one lane with the same file name; the same receipt bytes twice.
    """
    _require_directory(receipts_dir)
    known = ", ".join(sorted(lanes))
    out: list[LoadedReceipt] = []
    seen: set[tuple[str, str]] = set()
    by_digest: dict[str, Path] = {}
    for path, dir_lane in _receipt_paths(receipts_dir, lanes, known):
        loaded = _load_receipt(path, receipts_dir, by_digest)
        _check_receipt_lane(path, loaded.receipt.lane, dir_lane, lanes, known)
        if (loaded.receipt.lane, path.name) in seen:
            raise _refuse(path, f"a second receipt named {path.name} for lane {loaded.receipt.lane}")
        seen.add((loaded.receipt.lane, path.name))
        out.append(loaded)
    return tuple(out)


def _require_directory(receipts_dir: Path) -> None:
    """``--receipts`` must name an existing directory (InputError, exit 4)."""
    if not receipts_dir.is_dir():
        if receipts_dir.exists():
            raise _refuse(receipts_dir, "not a directory (--receipts names a directory of receipts)")
        raise _refuse(receipts_dir, "receipts directory not found")


def _visible(directory: Path) -> list[Path]:
    """The entries of ``directory`` by name, hidden ones (``.name``) left out."""
    return [p for p in sorted(directory.iterdir(), key=lambda p: p.name) if not p.name.startswith(".")]


def _receipt_paths(receipts_dir: Path, lanes: Collection[str], known: str) -> list[tuple[Path, str | None]]:
    """Every receipt file with the lane its directory names (None for ``DIR/*.json``), in name order.

    Raises:
        InputError: a sub-directory naming no lane; an entry that is not ``*.json`` (exit 4).
    """
    found: list[tuple[Path, str | None]] = []
    for entry in _visible(receipts_dir):
        if entry.is_dir() and not entry.is_symlink():
            found += _lane_directory(entry, lanes, known)
        elif entry.name.endswith(".json"):
            found.append((entry, None))
        else:
            raise _refuse(entry, "not a receipt (*.json) or a lane directory")
    return found


def _lane_directory(entry: Path, lanes: Collection[str], known: str) -> list[tuple[Path, str | None]]:
    """The receipts of ``DIR/<lane>/``; the directory must name a lane that takes receipts."""
    if entry.name not in lanes:
        raise _refuse(entry, f"directory names no lane of the release that takes receipts ({known})")
    found: list[tuple[Path, str | None]] = []
    for inner in _visible(entry):
        if not inner.name.endswith(".json"):
            raise _refuse(inner, "not a receipt (*.json)")
        found.append((inner, entry.name))
    return found


def _load_receipt(path: Path, receipts_dir: Path, by_digest: dict[str, Path]) -> LoadedReceipt:
    """Read and parse one receipt; ``by_digest`` (digest -> first path) refuses the same bytes twice."""
    raw = read_receipt_file(path, root=receipts_dir)
    digest = sha256_bytes(raw)
    if digest in by_digest:
        # One run counted twice (a copy, a link to it) would inflate the evidence.
        raise _refuse(path, f"the same receipt as {by_digest[digest]} (one run is one receipt)")
    by_digest[digest] = path
    rec = Receipt.parse(raw, source=str(path))
    return LoadedReceipt(path=str(path), name=path.name, sha256=digest, receipt=rec)


def _check_receipt_lane(
    path: Path, lane: str, dir_lane: str | None, lanes: Collection[str], known: str
) -> None:
    """The receipt's lane takes receipts and agrees with its directory (InputError on field ``lane``)."""
    if lane not in lanes:
        raise _refuse(path, f"{lane!r} is not a lane of this release that takes receipts ({known})", "lane")
    if dir_lane is not None and lane != dir_lane:
        raise _refuse(path, f"{lane!r} disagrees with its directory {dir_lane}/", "lane")


# --- binding receipts to the bytes a build produced ---------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Binding:
    """The bytes a lane's build produced: what a receipt must name to qualify them."""

    lane: str
    source_commit: str
    profile_id: str
    config_sha256: str
    package_sha256: str

    def as_dict(self) -> dict[str, str]:
        """The ``bound_to`` block of the qualification record."""
        return {
            "source_commit": self.source_commit,
            "profile_id": self.profile_id,
            "config_bytes_sha256": self.config_sha256,
            "package_sha256": self.package_sha256,
        }


@dataclass(frozen=True, kw_only=True)
class BoundReceipt:
    """An accepted receipt and how it binds the package (``public`` or ``scratch_equivalence``)."""

    loaded: LoadedReceipt
    kind: BindingKind

    def as_dict(self) -> dict[str, Any]:
        """Its entry in the qualification record: what it bound, by what evidence, its own SHA-256."""
        r = self.loaded.receipt
        doc: dict[str, Any] = {
            "name": self.loaded.name,
            "sha256": self.loaded.sha256,
            "binding": self.kind,
            "bound": {
                "source_commit": r.source_commit,
                "profile_id": r.profile_id,
                "config_sha256": r.config_sha256,
                "package_sha256": r.package_sha256,
            },
            "gates": dict(r.gates),
            "measurements": dict(r.measurements),
        }
        if r.scratch is not None:
            doc["scratch"] = r.scratch.as_dict()
        return doc


@dataclass(frozen=True, kw_only=True)
class GateLedger:
    """Gates merged over a lane's receipts: a gate fails if any receipt fails it, passes if any
    passes it (and none fails), else is not applicable."""

    gates: Mapping[str, GateResult]

    @property
    def counts(self) -> dict[str, int]:
        """``{"pass": n, "fail": n, "not_applicable": n}``."""
        return {result: sum(1 for v in self.gates.values() if v == result) for result in GATE_RESULTS}

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(g for g, v in self.gates.items() if v == "fail")

    def as_dict(self) -> dict[str, Any]:
        return {"merged": dict(self.gates), "counts": self.counts, "failed": list(self.failed)}


def merge_gates(reports: Iterable[Mapping[str, str]]) -> GateLedger:
    """Merge per-receipt gate results (``fail`` > ``pass`` > ``not_applicable``) into one ledger.

    Unknown results count as ``fail``: a ledger never reads better than its evidence.
    """
    rank = {"not_applicable": 0, "pass": 1, "fail": 2}
    merged: dict[str, GateResult] = {}
    for gates in reports:
        for gate, result in gates.items():
            value: GateResult = result if result in GATE_RESULTS else "fail"
            if gate not in merged or rank[value] > rank[merged[gate]]:
                merged[gate] = value
    order = sorted(merged, key=lambda g: _gate_order(g) if _GATE_ID.fullmatch(g) else ("~", 0, g))
    return GateLedger(gates=MappingProxyType({g: merged[g] for g in order}))


#: Why a receipt without gate results is refused at sealing (and never counts as qualifying).
NO_GATES = (
    "no gate results; a receipt is the record of a hardware run and qualifies nothing without one "
    "(add its results: ninfer-release receipt new SET --out FILE --gate G1=pass ...)"
)


def qualifies(reports: Sequence[Mapping[str, str]]) -> bool:
    """The qualification rule (docs/staged-inputs.md), shared by sealing and verify.

    ``reports`` is each receipt's gate mapping. True exactly when there is at least one receipt,
    every receipt reports at least one gate result, and no gate is ``fail`` (an unknown result
    counts as ``fail``): a set qualifies only on evidence of a hardware run of these bytes.
    """
    return bool(reports) and all(reports) and not merge_gates(reports).failed


@dataclass(frozen=True, kw_only=True)
class Qualification:
    """A lane's accepted receipts and their gate ledger; ``qualified`` per :func:`qualifies`."""

    receipts: tuple[BoundReceipt, ...]
    ledger: GateLedger

    @property
    def status(self) -> Literal["qualified", "unqualified"]:
        """``qualified`` exactly when :func:`qualifies` holds for the receipts' gate reports."""
        return "qualified" if qualifies([b.loaded.receipt.gates for b in self.receipts]) else "unqualified"


def bind_receipts(receipts: Iterable[LoadedReceipt], binding: Binding) -> Qualification:
    """Accept the receipts of ``binding.lane`` that name exactly the bytes this build produced.

    A receipt of another lane is ignored. A public receipt must name this source commit, profile
    id, config bytes SHA-256 and package SHA-256. A scratch receipt names its own config/package
    and qualifies only with ``scratch.equivalence`` naming this build's config and package.

    Raises:
        IntegrityError: any receipt of this lane names other bytes, reports no gate results, or
            is a scratch run without equivalence evidence — all at once, each naming the receipt
            file and field; evidence is never relabelled onto other bytes (exit 5).
    """
    bad: list[Problem] = []
    bound: list[BoundReceipt] = []
    for loaded in sorted((r for r in receipts if r.receipt.lane == binding.lane), key=lambda r: r.name):
        problems = _binding_problems(loaded, binding)
        bad += problems
        if not problems:
            kind: BindingKind = "public" if loaded.receipt.scratch is None else "scratch_equivalence"
            bound.append(BoundReceipt(loaded=loaded, kind=kind))
    if bad:
        raise IntegrityError(problems=bad)
    return Qualification(receipts=tuple(bound), ledger=merge_gates(b.loaded.receipt.gates for b in bound))


def _differences(loaded: LoadedReceipt, pairs: Iterable[tuple[str, str, str]]) -> list[Problem]:
    """One problem per ``(field, receipt's value, this build's value)`` that differs."""
    return [
        Problem(
            file=loaded.path,
            field=where,
            message=f"names {got!r}, but this build has {want!r}; "
            "a receipt is never relabelled onto other bytes",
        )
        for where, got, want in pairs
        if got != want
    ]


def _binding_problems(loaded: LoadedReceipt, binding: Binding) -> list[Problem]:
    """Why one receipt of the lane does not qualify ``binding``'s bytes (empty: it binds them)."""
    r = loaded.receipt
    bad: list[Problem] = []
    if not r.gates:
        # An unfilled template (`receipt new` without --gate) names the right bytes but carries
        # no evidence; sealing it would read `qualified` with no hardware run behind it.
        bad.append(Problem(file=loaded.path, field="gates", message=NO_GATES))
    bad += _differences(
        loaded,
        (
            ("source_commit", r.source_commit, binding.source_commit),
            ("profile_id", r.profile_id, binding.profile_id),
        ),
    )
    if r.scratch is None:
        bad += _differences(
            loaded,
            (
                ("config_sha256", r.config_sha256, binding.config_sha256),
                ("package_sha256", r.package_sha256, binding.package_sha256),
            ),
        )
    else:
        bad += _scratch_problems(loaded, r.scratch, binding)
    return bad


def _scratch_problems(loaded: LoadedReceipt, scratch: Scratch, binding: Binding) -> list[Problem]:
    """A scratch receipt names its own bytes and binds the public ones only through equivalence."""
    r = loaded.receipt
    if (r.config_sha256, r.package_sha256) == (binding.config_sha256, binding.package_sha256):
        return [
            Problem(
                file=loaded.path,
                field="scratch",
                message="names the public package's own bytes; a scratch run names its own",
            )
        ]
    eq = scratch.equivalence
    if eq is None:
        return [
            Problem(
                file=loaded.path,
                field="scratch.equivalence",
                message=f"a scratch run ({scratch.variant}) measured other bytes; it qualifies the "
                "public package only with equivalence evidence naming it",
            )
        ]
    return _differences(
        loaded,
        (
            ("scratch.equivalence.config_sha256", eq.config_sha256, binding.config_sha256),
            ("scratch.equivalence.package_sha256", eq.package_sha256, binding.package_sha256),
        ),
    )


# --- a receipt template from a draft set --------------------------------------------------------


def receipt_template(set_dir: Path) -> Receipt:
    """The receipt a hardware run of the draft set in ``set_dir`` fills in (gates, measurements).

    Lane, source commit and profile id come from the set's component manifest
    (``<stem>.manifest.json``); ``package_sha256`` and ``config_sha256`` are the ``<stem>.zip`` and
    ``<stem>.config.toml`` lines of its ``SHA256SUMS`` — exactly what sealing compares. The set
    is not verified here: run :func:`ninfer_release.releases.verify_set` on it first.

    Raises:
        InputError: ``set_dir`` holds no set, or its ``SHA256SUMS`` / component manifest lack a
            field the receipt needs (exit 4).
    """
    try:
        stem = stem_from_names(sorted(p.name for p in set_dir.iterdir()))
    except OSError as exc:
        raise _refuse(set_dir, f"cannot list: {exc.strerror or exc}") from exc
    if stem is None:
        raise _refuse(set_dir, "expected exactly one package '*.zip' in the set")
    names = AssetNames(stem=stem)
    sums_path, manifest_path = set_dir / SUMS_NAME, set_dir / names.manifest
    sums = parse_sha256sums(read_receipt_file(sums_path, root=set_dir), source=str(sums_path))
    if sums.errors:
        raise InputError(problems=list(sums.errors))
    listed = sums.as_dict()
    manifest = strictjson.parse(read_receipt_file(manifest_path, root=set_dir), source=str(manifest_path))
    problems: list[Problem] = []
    for name in (names.zip, names.config):
        if name not in listed:
            problems.append(Problem(file=str(sums_path), message=f"does not list {name}"))
    if not isinstance(manifest, dict):
        manifest = {}
        problems.append(Problem(file=str(manifest_path), message="not a JSON object"))
    for key in ("lane", "source_commit", "profile_id"):
        if not isinstance(manifest.get(key), str):
            problems.append(Problem(file=str(manifest_path), field=key, message="missing"))
    if problems:
        raise InputError(problems=problems)
    return Receipt(
        lane=manifest["lane"],
        source_commit=manifest["source_commit"],
        profile_id=manifest["profile_id"],
        config_sha256=listed[names.config],
        package_sha256=listed[names.zip],
    )
