"""The hostile-input corpus (``tests/data/hostile/*.json``): loading, building, running (issue 9).

A *case* is data: the input surface it attacks, a list of *edits* applied to a fresh copy of a
good input (a built asset set, a staged tree, the release definition...), the command's expected
exit code and the text one error line must contain (the file, and the field or reason). The
edits are plain operations (:func:`apply_edits`) so a case says what is hostile, not how.

Reusable outside ``test_hostile.py`` (the stdlib-only verifier's differential test, issue 12)::

    from hostile_support import hostile_sets
    for case, set_dir in hostile_sets(good_set_dir, tmp_path):   # surface "set" only
        ...  # case.exit: what ``ninfer-release verify set_dir`` exits with (0, 4 or 5)

Every command runs as a subprocess under an address-space limit (``prlimit --as``), a wall-clock
timeout, optionally as ``nobody`` (``setpriv``), and reports its peak RSS (``wait4``).
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flow_support import nr_command

DATA = Path(__file__).resolve().parent / "data" / "hostile"
#: Address-space limit of every command: a regression that allocates without bound fails
#: (MemoryError -> exit 1) instead of taking the machine down. Our runs peak below 300 MiB.
AS_LIMIT = 1 << 30
#: Wall-clock bound of one command; a hang fails the case by timeout.
TIMEOUT_S = 60.0
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
SURFACES = (
    "set",
    "staged",
    "receipts",
    "definition",
    "profile",
    "release-manifest",
    "lane-result",
    "dir-store",
    "publish-store",
    "recipe",
)


@dataclass(frozen=True, kw_only=True)
class Case:
    """One hostile input: ``surface``, ``edits`` to a good copy, and what the command must do.

    ``file`` and ``says`` must both appear in one ``error:`` line (``says`` may be empty for exit 0);
    ``as_user`` is ``root`` or ``nobody``; ``max_rss_mib`` bounds the command's peak RSS.
    """

    id: str
    surface: str
    edits: tuple[Mapping[str, Any], ...]
    exit: int
    file: str
    says: str
    as_user: str = "root"
    max_rss_mib: int = 400
    max_lines: int = 40


def _expand(raw: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A case with ``"each": {"name": [values...]}`` becomes one case per value (``{name}`` replaced)."""
    each = raw.get("each")
    if not each:
        yield dict(raw)
        return
    ((name, values),) = each.items()
    for value in values:
        text = json.dumps({k: v for k, v in raw.items() if k != "each"})
        text = text.replace("{" + name + "}", str(value).replace("\\", "\\\\").replace('"', '\\"'))
        yield json.loads(text)


def load_cases(surface: str | None = None) -> list[Case]:
    """Every case of ``tests/data/hostile/*.json`` (one file per surface), in file order."""
    out: list[Case] = []
    for path in sorted(DATA.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for raw in doc["cases"]:
            for c in _expand(raw):
                case = Case(
                    id=c["id"],
                    surface=doc["surface"],
                    edits=tuple(c.get("edits", ())),
                    exit=c["exit"],
                    file=c.get("file", ""),
                    says=c.get("says", ""),
                    as_user=c.get("as", "root"),
                    max_rss_mib=c.get("max_rss_mib", 400),
                    max_lines=c.get("max_lines", 40),
                )
                if surface is None or case.surface == surface:
                    out.append(case)
    return out


# --- edits ---------------------------------------------------------------------------------------


def _text(edit: Mapping[str, Any], key: str = "text", names: Mapping[str, str] | None = None) -> bytes:
    if "hex" in edit:
        return bytes.fromhex(edit["hex"])
    return _sub(str(edit.get(key, "")), names or {}).encode("utf-8", "surrogateescape")


def _sub(value: str, names: Mapping[str, str]) -> str:
    for k, v in names.items():
        value = value.replace("{" + k + "}", v)
    return value


def _set_path(doc: Any, path: str, value: Any) -> None:
    keys = path.split(".")
    cur = doc
    for k in keys[:-1]:
        cur = cur[int(k)] if isinstance(cur, list) else cur[k]
    last = keys[-1]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value


_RAW = "@@HOSTILE-RAW@@"


def _json_raw(path: Path, where: str, raw: str) -> None:
    doc = json.loads(path.read_bytes())
    _set_path(doc, where, _RAW)
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    path.write_text(text.replace(json.dumps(_RAW), raw), encoding="utf-8")


def _zip_truncate_half(data: bytearray, eocd: int, cd: int) -> bytearray:
    del data[len(data) // 2 :]
    return data


def _zip_no_eocd(data: bytearray, eocd: int, cd: int) -> bytearray:
    data[eocd : eocd + 4] = b"XXXX"
    return data


def _zip_pack(fmt: str, where: str, *values: int) -> Callable[[bytearray, int, int], bytearray]:
    """An edit packing ``values`` at ``eocd+N`` or ``cd+N`` (``where``: "eocd+16", "cd+24", ...)."""
    base, offset = where.split("+")

    def edit(data: bytearray, eocd: int, cd: int) -> bytearray:
        struct.pack_into(fmt, data, (eocd if base == "eocd" else cd) + int(offset), *values)
        return data

    return edit


def _zip_eocd_offset_past_end(data: bytearray, eocd: int, cd: int) -> bytearray:
    struct.pack_into("<I", data, eocd + 16, len(data) + 100)
    return data


def _zip_cd_signature(data: bytearray, eocd: int, cd: int) -> bytearray:
    data[cd : cd + 4] = b"PK\x09\x09"
    return data


def _zip_first_crc(data: bytearray, eocd: int, cd: int) -> bytearray:
    struct.pack_into("<I", data, cd + 16, struct.unpack_from("<I", data, cd + 16)[0] ^ 1)
    return data


def _zip_first_encrypted(data: bytearray, eocd: int, cd: int) -> bytearray:
    flags = struct.unpack_from("<H", data, cd + 8)[0]
    struct.pack_into("<H", data, cd + 8, flags | 1)
    return data


def _zip_first_local_offset_bad(data: bytearray, eocd: int, cd: int) -> bytearray:
    struct.pack_into("<I", data, cd + 42, len(data) + 10)
    return data


def _zip_junk_appended(data: bytearray, eocd: int, cd: int) -> bytearray:
    return data + b"\0" * 4096


def _zip_zero_length(data: bytearray, eocd: int, cd: int) -> bytearray:
    return bytearray()


def _zip_first_data_flipped(data: bytearray, eocd: int, cd: int) -> bytearray:
    local_name_len, local_extra = struct.unpack_from("<HH", data, 26)
    data[30 + local_name_len + local_extra] ^= 0xFF
    return data


# kind -> edit(data, offset of the end-of-central-directory record, offset of the central directory)
_ZIP_EDITS: dict[str, Callable[[bytearray, int, int], bytearray]] = {
    "truncate-half": _zip_truncate_half,
    "no-eocd": _zip_no_eocd,
    "eocd-offset-past-end": _zip_eocd_offset_past_end,
    "eocd-count-huge": _zip_pack("<HH", "eocd+8", 0xFFFE, 0xFFFE),
    "cd-signature": _zip_cd_signature,
    "first-crc": _zip_first_crc,
    "first-usize-huge": _zip_pack("<I", "cd+24", 0xFFFFFFF0),
    "first-method-unknown": _zip_pack("<H", "cd+10", 99),
    "first-encrypted": _zip_first_encrypted,
    "first-local-offset-bad": _zip_first_local_offset_bad,
    "junk-appended": _zip_junk_appended,
    "zero-length": _zip_zero_length,
    "first-data-flipped": _zip_first_data_flipped,
}


def _zip_edit(path: Path, kind: str) -> None:
    """Structural damage to the zip at ``path`` (its name stays)."""
    if kind not in _ZIP_EDITS:
        raise ValueError(kind)
    data = bytearray(path.read_bytes())
    eocd = data.rfind(b"PK\x05\x06")
    cd_offset = struct.unpack_from("<I", data, eocd + 16)[0]
    path.write_bytes(bytes(_ZIP_EDITS[kind](data, eocd, cd_offset)))


def _foreign_zip(path: Path, kind: str) -> None:
    """Replace the zip at ``path`` with a foreign archive holding the members plus an attack."""
    with zipfile.ZipFile(path) as zf:
        members = [(i.filename, zf.read(i)) for i in zf.infolist()]
    extra: list[tuple[str, bytes]] = {
        "zip-slip": [("../../evil.dll", b"MZ")],
        "absolute-member": [("/etc/evil.dll", b"MZ")],
        "backslash-member": [("bin\\evil.dll", b"MZ")],
        "duplicate-member": [members[0]],
        "bomb": [("bin/bomb.dll", b"\0" * (64 << 20))],
        "extra-dll": [("bin/extra.dll", b"MZ" + b"\0" * 64)],
        "control-char-member": [("bin/a\x01b.dll", b"MZ")],
        "dotdot-inside": [("bin/../../x.dll", b"MZ")],
        "directory-entry": [("bin/sub/", b"")],
    }[kind]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in [*members, *extra]:
            info = zipfile.ZipInfo(name, date_time=(2026, 11, 20, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            # A duplicate name is the point of one case; forgetting the first entry keeps zipfile
            # from warning (warnings filters are process-wide, and cases run in threads).
            zf.NameToInfo.pop(name, None)
            zf.writestr(info, data)


def reseal(set_dir: Path) -> None:
    """Rewrite ``SHA256SUMS`` over the set's entries as they now are (so deeper checks decide)."""
    import hashlib

    lines = []
    for p in sorted(set_dir.iterdir()):
        if p.name == "SHA256SUMS" or not p.is_file() or p.is_symlink():
            continue
        lines.append(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n")
    (set_dir / "SHA256SUMS").write_text("".join(lines), encoding="utf-8")


@dataclass(frozen=True)
class _Step:
    """One edit as its operation sees it: the edit's fields, its resolved target, the root, the names."""

    edit: Mapping[str, Any]
    target: Path
    root: Path
    names: Mapping[str, str]


def _op_append(step: _Step) -> None:
    chunk, times = _text(step.edit, names=step.names), int(step.edit.get("times", 1))
    with step.target.open("ab") as f:
        while times > 0:
            n = min(times, 1 << 20)
            f.write(chunk * n)
            times -= n


def _op_write(step: _Step) -> None:
    step.target.parent.mkdir(parents=True, exist_ok=True)
    step.target.write_bytes(_text(step.edit, names=step.names))


def _op_prepend(step: _Step) -> None:
    step.target.write_bytes(_text(step.edit) + step.target.read_bytes())


def _op_replace(step: _Step) -> None:
    data = step.target.read_bytes()
    old, new = _text(step.edit, "old"), _text(step.edit, "new")
    assert old in data, f"{step.edit}: {old!r} not in {step.target}"
    step.target.write_bytes(data.replace(old, new, int(step.edit.get("count", 1))))


def _op_json_raw(step: _Step) -> None:
    _json_raw(step.target, step.edit["path"], step.edit["raw"])


def _op_json_nest(step: _Step) -> None:
    depth = int(step.edit["depth"])
    _json_raw(step.target, step.edit["path"], "[" * depth + "]" * depth)


def _op_json_digits(step: _Step) -> None:
    digits = str(step.edit.get("sign", "")) + "9" * int(step.edit["digits"])
    _json_raw(step.target, step.edit["path"], digits)


def _op_json_dup(step: _Step) -> None:
    data = step.target.read_bytes()
    i = data.index(b"{")
    dup = f'"{step.edit["key"]}": {step.edit["raw"]}, '.encode()
    step.target.write_bytes(data[: i + 1] + dup + data[i + 1 :])


def _op_pad(step: _Step) -> None:
    """Trailing blanks keep a JSON document valid while it grows."""
    size = int(step.edit["size"])
    fill = _text(step.edit) or b" "
    with step.target.open("ab") as f:
        f.write(fill * max(0, (size - step.target.stat().st_size) // len(fill)))


def _op_truncate(step: _Step) -> None:
    with step.target.open("r+b") as f:
        f.truncate(int(step.edit["size"]))


def _op_regex(step: _Step) -> None:
    data = step.target.read_bytes()
    new = re.sub(_text(step.edit, "pattern"), _text(step.edit, "new"), data, flags=re.MULTILINE)
    assert new != data, f"{step.edit}: no match in {step.target}"
    step.target.write_bytes(new)


def _op_flip(step: _Step) -> None:
    flipped = bytearray(step.target.read_bytes())
    flipped[int(step.edit.get("offset", len(flipped) // 2))] ^= 0x01
    step.target.write_bytes(bytes(flipped))


def _op_delete(step: _Step) -> None:
    if step.target.is_dir() and not step.target.is_symlink():
        shutil.rmtree(step.target)
    else:
        step.target.unlink()


def _op_mkdir(step: _Step) -> None:
    if step.target.exists():
        step.target.unlink()
    step.target.mkdir(parents=True)


def _op_mkfifo(step: _Step) -> None:
    if step.target.exists() or step.target.is_symlink():
        step.target.unlink()
    os.mkfifo(step.target)


def _op_mknod(step: _Step) -> None:
    if step.target.exists():
        step.target.unlink()
    os.mknod(step.target, 0o644 | stat.S_IFCHR, os.makedev(1, 3))  # like /dev/null


def _op_symlink(step: _Step) -> None:
    if step.target.exists() or step.target.is_symlink():
        step.target.unlink()
    step.target.symlink_to(_sub(step.edit["target"], step.names))


def _op_chmod(step: _Step) -> None:
    step.target.chmod(int(step.edit["mode"], 8))


def _op_zip(step: _Step) -> None:
    _zip_edit(step.target, step.edit["kind"])


def _op_foreign_zip(step: _Step) -> None:
    _foreign_zip(step.target, step.edit["kind"])


def _op_reseal(step: _Step) -> None:
    reseal(step.root)


def _op_copy(step: _Step) -> None:
    shutil.copyfile(step.root / _sub(step.edit["from"], step.names), step.target)


# The edit operations of the corpus ("op" of an edit -> what it does to its target).
_EDIT_OPS: dict[str, Callable[[_Step], None]] = {
    "append": _op_append,
    "write": _op_write,
    "prepend": _op_prepend,
    "replace": _op_replace,
    "json_raw": _op_json_raw,
    "json_nest": _op_json_nest,
    "json_digits": _op_json_digits,
    "json_dup": _op_json_dup,
    "pad": _op_pad,
    "truncate": _op_truncate,
    "regex": _op_regex,
    "flip": _op_flip,
    "delete": _op_delete,
    "mkdir": _op_mkdir,
    "mkfifo": _op_mkfifo,
    "mknod": _op_mknod,
    "symlink": _op_symlink,
    "chmod": _op_chmod,
    "zip": _op_zip,
    "foreign_zip": _op_foreign_zip,
    "reseal": _op_reseal,
    "copy": _op_copy,
}


def apply_edits(root: Path, edits: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> None:
    """Apply ``edits`` under ``root``; ``{name}`` placeholders in file names come from ``names``."""
    for edit in edits:
        op = edit["op"]
        if op not in _EDIT_OPS:
            raise ValueError(f"unknown edit {op!r}")
        target = root / _sub(edit.get("file", ""), names)
        _EDIT_OPS[op](_Step(edit, target, root, names))


# --- running -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Run:
    """What one bounded command did: exit code (-N: killed by signal N), output, peak RSS."""

    code: int
    out: str
    err: str
    max_rss_mib: float
    timed_out: bool

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


# Linux keeps a process's peak RSS across exec, counting the memory of the process it was forked
# from: a command started straight from pytest reports pytest's own RSS (200+ MiB late in a full
# run). This wrapper, a fresh small interpreter, forks the command and writes the command's own
# peak (KiB) to argv[1], then exits as the command did.
_PEAK_RSS_WRAPPER = """
import os, signal, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def run_bounded(
    args: Sequence[str | Path],
    *,
    as_user: str = "root",
    timeout: float = TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    as_limit: int = AS_LIMIT,
) -> Run:
    """Run ``ninfer-release ARGS`` under ``prlimit --as``, a timeout and (optionally) as nobody."""
    cmd = ["prlimit", f"--as={as_limit}", "--", *(NOBODY if as_user == "nobody" else []), *nr_command()]
    cmd += [str(a) for a in args]
    rss_fd, rss_name = tempfile.mkstemp(prefix="ninfer-rss-")
    os.close(rss_fd)
    cmd = [sys.executable, "-I", "-c", _PEAK_RSS_WRAPPER, rss_name, *cmd]
    full = dict(os.environ)
    # glibc reserves 64 MiB of address space per malloc arena and makes up to 8 per core as
    # threads contend; under load that alone can reach the --as limit and abort a run that
    # needs a tenth of it. Two arenas keep the limit a bound on what the run really uses.
    full["MALLOC_ARENA_MAX"] = "2"
    full.update(env or {})
    full.pop("COLUMNS", None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=full, cwd="/", start_new_session=True
        )
        fired = threading.Event()

        def kill() -> None:
            fired.set()
            os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        peak = Path(rss_name).read_text().strip()
        Path(rss_name).unlink()
        return Run(
            code=proc.returncode,
            out=out.read().decode("utf-8", "replace"),
            err=err.read().decode("utf-8", "replace"),
            # ru_maxrss is KiB on Linux; the wrapper's own figure if it was killed before writing it
            max_rss_mib=int(peak or usage.ru_maxrss) / 1024,
            timed_out=fired.is_set(),
        )


def world_dir(prefix: str) -> Path:
    """A fresh directory ``nobody`` can traverse (pytest's own tmp dirs are 0700)."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("NINFER_HOSTILE_TMP", "/tmp")))
    d.chmod(0o755)
    return d


def open_up(root: Path) -> None:
    """Make ``root`` readable by ``nobody`` (before edits that take permissions away)."""
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)  # noqa: S103 - nobody must traverse it; test scratch only
        for f in filenames:
            p = Path(dirpath) / f
            if not p.is_symlink() and p.is_file():
                p.chmod(0o644)


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """``relative path -> (mode, size)`` of everything under ``root`` (lstat, no content reads)."""
    out: dict[str, tuple[int, int]] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_mode, st.st_size)
    return out


@dataclass
class SetFactory:
    """Copies of one good asset set with a case's edits applied (the reusable fixture for issue 12)."""

    good: Path
    dest: Path
    made: dict[str, Path] = field(default_factory=dict)

    @property
    def stem(self) -> str:
        return next(p.name for p in self.good.iterdir() if p.suffix == ".zip").removesuffix(".zip")

    def make(self, case: Case) -> Path:
        """A fresh copy of the good set with ``case``'s edits applied, under ``dest/<case.id>/``."""
        target = self.dest / case.id / "set"
        shutil.copytree(self.good, target, symlinks=True)
        open_up(target.parent)
        apply_edits(target, case.edits, {"stem": self.stem})
        self.made[case.id] = target
        return target


def hostile_sets(good_set: Path, dest: Path) -> Iterator[tuple[Case, Path]]:
    """Every hostile *set* case with its directory built under ``dest`` (see the module docstring).

    Cases run as ``nobody`` (unreadable entries) are skipped: their meaning depends on the user.
    """
    factory = SetFactory(good=good_set, dest=dest)
    for case in load_cases("set"):
        if case.as_user == "root":
            yield case, factory.make(case)


def rlimit_note() -> str:
    """The current soft address-space limit, for messages."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return "unlimited" if soft == resource.RLIM_INFINITY else f"{soft >> 20} MiB"
