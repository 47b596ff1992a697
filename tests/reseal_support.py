"""Re-seal a tampered native set completely, as an attacker who controls the download would.

``flow_support.reseal`` rewrites ``SHA256SUMS`` only, so a changed zip still fails on the records
that bind its digest. Here a new package zip is written with *our own writer* (so its layout is
the one ``verify`` expects) from the given members, and every binding is carried over: the SPDX
document (its file list, checksums, CONTAINS relationships, verification code; also the copy in
the zip), the CycloneDX evidence, the zip's digest and size in every later record (manifest,
route, provenance subjects), the release-instance id, then ``SHA256SUMS``. What is left for
``verify`` to find is only what the tampering itself contradicts.

A control (an untampered rebuild, re-sealed) must verify OK, so that a failure of a tampered set
is the finding of the check under test, not of this helper.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ninfer_release.packaging import PlanEntry, compress_members, read_member, read_zip_index, write_zip

#: The entries a change propagates into, in binding order (a record binds the ones before it).
ORDER = (
    "zip",
    "spdx.json",
    "cdx.json",
    "config.toml",
    "profile.json",
    "model.json",
    "qualification.json",
    "provenance.json",
    "route.json",
    "manifest.json",
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def members_of(set_dir: Path, stem: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of every member of the set's zip but its SPDX copy, in zip order."""
    zip_path = set_dir / f"{stem}.zip"
    own = f"sbom/{stem}.spdx.json"
    return [
        (m.name, read_member(zip_path, m.name, max_bytes=64 << 20))
        for m in read_zip_index(zip_path)
        if m.name != own
    ]


#: An edit of a regenerated SBOM document (the parsed JSON object, changed in place).
Edit = Callable[[dict[str, Any]], None]


def rebuild(
    set_dir: Path,
    stem: str,
    tag: str,
    members: Sequence[tuple[str, bytes]],
    entries: Mapping[str, bytes] | None = None,
    *,
    spdx_edit: Edit | None = None,
    cdx_edit: Edit | None = None,
) -> None:
    """Write a zip of ``members`` (plus a regenerated SPDX copy) with our writer into ``set_dir``
    and re-seal every binding (module docstring); ``entries`` (``ORDER`` suffix -> bytes, say
    ``config.toml``) are written first and re-sealed as changed too. ``spdx_edit`` / ``cdx_edit``
    change the regenerated SBOM before it is written (the SPDX verification code is then made
    again from the edited SHA1 values, so the edit is the only thing left to find)."""
    before = {ext: (set_dir / f"{stem}.{ext}").read_bytes() for ext in ORDER}
    for ext, data in (entries or {}).items():
        (set_dir / f"{stem}.{ext}").write_bytes(data)
    spdx = _spdx(before["spdx.json"], stem, members, spdx_edit)
    (set_dir / f"{stem}.spdx.json").write_bytes(spdx)
    full = sorted([*members, (f"sbom/{stem}.spdx.json", spdx)], key=lambda e: e[0].encode())
    (set_dir / f"{stem}.cdx.json").write_bytes(_cdx(before["cdx.json"], full, cdx_edit))
    with tempfile.TemporaryDirectory() as work:
        compressed = compress_members(
            [PlanEntry(name=n, data=b) for n, b in full], level=6, workdir=Path(work)
        )
        write_zip(compressed, set_dir / f"{stem}.zip", epoch=1763596800)
    _propagate(set_dir, stem, tag, before)


def replace_zip(set_dir: Path, stem: str, tag: str, write: Callable[[Path], object]) -> None:
    """Let ``write`` put other bytes at the set's zip path (the SBOMs unchanged), then re-seal
    the records that bind the zip (module docstring)."""
    before = {ext: (set_dir / f"{stem}.{ext}").read_bytes() for ext in ORDER}
    write(set_dir / f"{stem}.zip")
    _propagate(set_dir, stem, tag, before)


def reseal_entries(set_dir: Path, stem: str, tag: str, entries: Mapping[str, bytes]) -> None:
    """Write ``entries`` (``ORDER`` suffix -> bytes: records after the SBOMs) with the zip and
    SBOMs unchanged, then re-seal every later record that binds them, and ``SHA256SUMS``."""
    before = {ext: (set_dir / f"{stem}.{ext}").read_bytes() for ext in ORDER}
    for ext, data in entries.items():
        (set_dir / f"{stem}.{ext}").write_bytes(data)
    _propagate(set_dir, stem, tag, before)


def _spdx(
    original: bytes, stem: str, members: Sequence[tuple[str, bytes]], edit: Edit | None = None
) -> bytes:
    doc = json.loads(original)
    by_name = {f["fileName"].removeprefix("./"): f for f in doc["files"]}
    template = doc["files"][0]
    files = []
    for name, data in members:
        entry = json.loads(json.dumps(by_name.get(name, template)))
        if name not in by_name:
            entry["SPDXID"] = "SPDXRef-File-x" + _sha(name.encode())[:12]
            entry["fileName"] = "./" + name
        entry["checksums"] = [
            {"algorithm": "SHA1", "checksumValue": hashlib.sha1(data, usedforsecurity=False).hexdigest()},
            {"algorithm": "SHA256", "checksumValue": _sha(data)},
        ]
        files.append(entry)
    doc["files"] = files
    package = doc["packages"][0]
    relationships = [r for r in doc["relationships"] if r["relationshipType"] != "CONTAINS"]
    relationships += [
        {
            "spdxElementId": package["SPDXID"],
            "relatedSpdxElement": f["SPDXID"],
            "relationshipType": "CONTAINS",
        }
        for f in files
    ]
    doc["relationships"] = relationships
    if edit is not None:
        edit(doc)
    # Every SHA1 value listed, as the validation recomputes the code (an edit may add one).
    sha1s = "".join(
        sorted(c["checksumValue"] for f in files for c in f["checksums"] if c["algorithm"] == "SHA1")
    )
    code = hashlib.sha1(sha1s.encode(), usedforsecurity=False).hexdigest()
    package["packageVerificationCode"]["packageVerificationCodeValue"] = code
    return json.dumps(doc, indent=2, ensure_ascii=False).encode() + b"\n"


def _cdx(original: bytes, members: Sequence[tuple[str, bytes]], edit: Edit | None = None) -> bytes:
    doc = json.loads(original)
    current = {n: _sha(b) for n, b in members}

    def kept(occurrences: list[dict[str, str]]) -> list[dict[str, str]]:
        out = []
        for o in occurrences:
            if o["location"] in current:
                o["additionalContext"] = "sha256:" + current[o["location"]]
                out.append(o)
        return out

    known: set[str] = set()
    for component in doc.get("components", []):
        evidence = component.get("evidence", {})
        if "occurrences" in evidence:
            evidence["occurrences"] = kept(evidence["occurrences"])
            known |= {o["location"] for o in evidence["occurrences"]}
    root = kept(doc["metadata"]["component"]["evidence"]["occurrences"])
    known |= {o["location"] for o in root}
    root += [
        {"additionalContext": "sha256:" + current[n], "bom-ref": "file:" + n, "location": n}
        for n, _ in members
        if n not in known
    ]
    doc["metadata"]["component"]["evidence"]["occurrences"] = root
    if edit is not None:
        edit(doc)
    return json.dumps(doc, indent=2, ensure_ascii=False).encode() + b"\n"


def _propagate(set_dir: Path, stem: str, tag: str, before: dict[str, bytes]) -> None:
    """Carry each changed entry's digest (and size, and the instance id) into the later records."""
    for i, ext in enumerate(ORDER):
        data = (set_dir / f"{stem}.{ext}").read_bytes()
        old_sha = _sha(before[ext])
        if data == before[ext]:
            continue
        swaps = [(old_sha, _sha(data))]
        if ext == "zip":
            swaps.append((f"{tag}-{old_sha[:16]}", f"{tag}-{_sha(data)[:16]}"))
        for later in ORDER[i + 1 :]:
            path = set_dir / f"{stem}.{later}"
            text = path.read_text(encoding="utf-8")
            for a, b in swaps:
                text = text.replace(a, b)
            if later in ("manifest.json", "route.json"):
                sized = re.escape(f"{stem}.{ext}")
                pattern = rf'("name": "{sized}",\s*"sha256": "[0-9a-f]+",\s*"size": )\d+'
                text = re.sub(pattern, rf"\g<1>{len(data)}", text)
            path.write_text(text, encoding="utf-8")
    lines = sorted(f"{_sha((set_dir / f'{stem}.{e}').read_bytes())}  {stem}.{e}\n" for e in ORDER)
    lines.sort(key=lambda line: line.split("  ", 1)[1])
    (set_dir / "SHA256SUMS").write_text("".join(lines), encoding="utf-8")


def standalone_run(set_dir: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The exported stdlib verifier (``verifier_source``) run on ``set_dir`` as an installer runs
    it (``python -I -S``), its file written into ``tmp_path``."""
    from ninfer_release.releases import verifier_source

    script = tmp_path / "ninfer-verify.py"
    script.write_bytes(verifier_source())
    return subprocess.run(
        [sys.executable, "-I", "-S", str(script), str(set_dir)], capture_output=True, text=True, check=False
    )


def both_verdicts(set_dir: Path, tmp_path: Path) -> tuple[tuple[int, str], tuple[int, str]]:
    """(exit code, stderr) of ``ninfer-release verify`` (in-process) and of the stdlib verifier."""
    from flow_support import cli

    ours = cli("verify", set_dir)
    alone = standalone_run(set_dir, tmp_path)
    return (ours.code, ours.err), (alone.returncode, alone.stderr)


def both_fail(set_dir: Path, tmp_path: Path, says: str) -> None:
    """Both verifiers refuse the set (exit 5), each with ``says`` in what it prints."""
    (ours, ours_err), (alone, alone_err) = both_verdicts(set_dir, tmp_path)
    assert ours == 5, ours_err
    assert says in ours_err, ours_err
    assert alone == 5, alone_err
    assert says in alone_err, alone_err
