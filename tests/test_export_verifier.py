"""``export-verifier``: one stdlib-only file that agrees with ``verify`` on every accept and reject.

The exported bytes are the package module ``releases/_standalone_verifier.py`` (one source). It is
run with a bare ``python3 -I -S`` (no site packages at all) beside ``ninfer-release verify`` over a
corpus of tampered sets built here from the sealed sample sets; the verdicts must be equal.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_support import TAGS, cli, flip_byte, ok, qualified_out, release_out, reseal, stem
from ninfer_release.releases import verifier_source
from ninfer_release.releases._standalone_verifier import parse_sums

SYSTEM_PYTHON = "/usr/bin/python3"


def _export(tmp_path: Path) -> Path:
    out = tmp_path / "ninfer-verify.py"
    ok(cli("export-verifier", "--out", out))
    return out


def _standalone(script: Path, set_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    python = SYSTEM_PYTHON if Path(SYSTEM_PYTHON).exists() else sys.executable
    # -I: no user site, no PYTHONPATH, no cwd on the path; -S: not even the system site-packages.
    return subprocess.run(
        [python, "-I", "-S", str(script), str(set_dir), *extra],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": os.environ.get("PATH", "/usr/bin")},
    )


def test_export_writes_the_module_verbatim_and_refuses_other_bytes(tmp_path: Path) -> None:
    out = _export(tmp_path)
    assert out.read_bytes() == verifier_source()
    assert (
        out.read_bytes()
        == (
            Path(__file__).resolve().parent.parent / "src/ninfer_release/releases/_standalone_verifier.py"
        ).read_bytes()
    )
    assert out.stat().st_mode & 0o777 == 0o755
    assert cli("export-verifier", "--out", out).code == 0  # same bytes again: fine
    other = tmp_path / "mine.py"
    other.write_text("print('mine')\n")
    res = cli("export-verifier", "--out", other)
    assert res.code == 4 and "refusing to overwrite" in res.err
    assert other.read_text() == "print('mine')\n"


def test_the_verifier_is_python39_stdlib_only() -> None:
    source = verifier_source().decode("utf-8")
    ast.parse(source, feature_version=(3, 9))  # no syntax newer than 3.9
    tree = ast.parse(source)
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    assert imported <= stdlib, imported - stdlib


def test_sums_parser_tolerates_crlf_and_bom_like_windows_tools_write() -> None:
    line = ("a" * 64 + "  engine.zip").encode()
    for data in (line + b"\r\n", b"\xef\xbb\xbf" + line + b"\n", b"\xef\xbb\xbf" + line + b"\r\n"):
        listed, warnings, errors = parse_sums(data)
        assert listed == {"engine.zip": "a" * 64} and warnings and not errors


def test_the_standalone_names_the_asset_contract_s_sets() -> None:
    """The stdlib verifier cannot import the package, so it holds the asset contract's names as
    data: the 10 entry suffixes in order, SHA256SUMS, the zip's config path and which entries
    the component manifest (1-9) and the provenance (1-7) bind. They must equal the contract's."""
    from ninfer_release.releases import _contract
    from ninfer_release.releases import _standalone_verifier as sv

    assert sv.ENTRY_SUFFIXES == _contract.ENTRY_SUFFIXES
    assert sv.SUMS_NAME == _contract.SUMS_NAME
    assert sv.ZIP_CONFIG_PATH == _contract.ZIP_CONFIG_PATH
    assert sv.COMPONENT_MANIFEST_ENTRIES == _contract.COMPONENT_MANIFEST_ENTRIES
    assert sv.PROVENANCE_SUBJECTS == _contract.PROVENANCE_SUBJECTS
    names = sv.Names("ninfer-x-windows-x64")
    contract_names = _contract.AssetNames(stem="ninfer-x-windows-x64")
    assert tuple(names.entries) == contract_names.entries
    assert tuple(names.component_manifest_entries) == contract_names.component_manifest_entries
    assert tuple(names.provenance_subjects) == contract_names.provenance_subjects
    assert names.spdx_member == _contract.zip_spdx_path("ninfer-x-windows-x64")


# --- the differential corpus ---------------------------------------------------------------------

#: A change to the set in ``d`` whose stem is ``s``; what it returns is ignored.
Mutation = Callable[[Path, str], object]
#: A parsed JSON document of the set (``json.loads``: any JSON value under each key).
JsonDoc = dict[str, Any]


def _steps(*edits: Mutation) -> Mutation:
    """One mutation made of several, applied in order."""

    def mutate(d: Path, s: str) -> None:
        for edit in edits:
            edit(d, s)

    return mutate


def _sums_lines(d: Path) -> list[bytes]:
    return (d / "SHA256SUMS").read_bytes().splitlines(keepends=True)


def _rewrite_sums(d: Path, f: Callable[[bytes], bytes]) -> None:
    (d / "SHA256SUMS").write_bytes(b"".join(f(line) for line in _sums_lines(d)))


def _edit_json(d: Path, name: str, edit: Callable[[JsonDoc], object]) -> None:
    doc = json.loads((d / name).read_bytes())
    edit(doc)
    (d / name).write_bytes((json.dumps(doc, indent=2, sort_keys=True) + "\n").encode())


def _reseal_manifest(d: Path, s: str) -> None:
    """Rewrite the component manifest's entries 1-9 to the files as they now are, then SHA256SUMS."""

    def edit(doc: JsonDoc) -> None:
        for e in doc["entries"]:
            data = (d / e["name"]).read_bytes()
            e["sha256"], e["size"] = hashlib.sha256(data).hexdigest(), len(data)

    _edit_json(d, s + ".manifest.json", edit)
    reseal(d)


def _reseal_all(d: Path, s: str) -> None:
    """Rewrite provenance subjects (entries 1-7), manifest entries 1-9, then SHA256SUMS: a set
    re-sealed as far as an attacker without the package can go."""

    def subjects(doc: JsonDoc) -> None:
        for subject in doc["subject"]:
            subject["digest"]["sha256"] = hashlib.sha256((d / subject["name"]).read_bytes()).hexdigest()

    _edit_json(d, s + ".provenance.json", subjects)
    _reseal_manifest(d, s)


def _cdx_edit(edit: Callable[[list[JsonDoc]], object]) -> Mutation:
    def mutate(d: Path, s: str) -> None:
        _edit_json(d, s + ".cdx.json", lambda doc: edit(doc["components"]))
        _reseal_all(d, s)

    return mutate


def _first_dll(components: list[JsonDoc]) -> JsonDoc:
    """The first component whose evidence lists a shipped DLL (one component per package)."""
    return next(
        c
        for c in components
        if any(str(o["location"]).endswith(".dll") for o in c.get("evidence", {}).get("occurrences", []))
    )


def _first_dll_occurrence(components: list[JsonDoc]) -> JsonDoc:
    occurrence: JsonDoc = _first_dll(components)["evidence"]["occurrences"][0]
    return occurrence


def _set_key(name: str, path: tuple[str, ...], value: object, *, deep: bool = False) -> Mutation:
    def mutate(d: Path, s: str) -> None:
        def edit(doc: JsonDoc) -> None:
            cur: JsonDoc = doc
            for p in path[:-1]:
                cur = cur[p]
            cur[path[-1]] = value

        _edit_json(d, s + name, edit)
        if deep:
            _reseal_manifest(d, s)
        else:
            reseal(d)

    return mutate


def _qualification_edit(edit: Callable[[JsonDoc], object]) -> Mutation:
    """Edit the qualification record, then re-seal everything around it (provenance, manifest,
    SHA256SUMS): only the record's own consistency with the package can tell."""

    def mutate(d: Path, s: str) -> None:
        _edit_json(d, s + ".qualification.json", edit)
        _reseal_all(d, s)

    return mutate


def _fail_gate_keep_qualified(doc: dict[str, Any]) -> None:
    doc["receipts"][0]["gates"]["G1"] = "fail"
    doc["gates"]["merged"]["G1"] = "fail"
    doc["gates"]["counts"] = {"pass": 1, "fail": 1, "not_applicable": 1}
    doc["gates"]["failed"] = ["G1"]


def _empty_gates_keep_qualified(doc: dict[str, Any]) -> None:
    """Every receipt an unfilled template (no gates), ledger consistent, status still ``qualified``."""
    for receipt in doc["receipts"]:
        receipt["gates"] = {}
    doc["gates"] = {"merged": {}, "counts": {"pass": 0, "fail": 0, "not_applicable": 0}, "failed": []}


def _flip(suffix: str, *, resealed: bool) -> Mutation:
    def mutate(d: Path, s: str) -> None:
        name = "SHA256SUMS" if suffix == "SHA256SUMS" else s + suffix
        flip_byte(d / name)
        if resealed and suffix != "SHA256SUMS":
            reseal(d)

    return mutate


def _zip_member_crc_flip(d: Path, s: str) -> None:
    """Flip one byte of the first member's data (not its header), then reseal everything."""
    data = bytearray((d / (s + ".zip")).read_bytes())
    name_len, extra_len = int.from_bytes(data[26:28], "little"), int.from_bytes(data[28:30], "little")
    data[30 + name_len + extra_len] ^= 0x01
    (d / (s + ".zip")).write_bytes(bytes(data))
    _reseal_manifest(d, s)


SUFFIXES = (
    ".zip",
    ".spdx.json",
    ".cdx.json",
    ".config.toml",
    ".profile.json",
    ".model.json",
    ".qualification.json",
    ".provenance.json",
    ".route.json",
    ".manifest.json",
)

#: name -> (mutation, expected verdict of both verifiers; None: only that they agree)
CORPUS: dict[str, tuple[Mutation, bool | None]] = {
    "pristine": (lambda d, s: None, True),
    "sums-crlf": (lambda d, s: _rewrite_sums(d, lambda b: b.replace(b"\n", b"\r\n")), True),
    "sums-bom": (
        lambda d, s: (d / "SHA256SUMS").write_bytes(b"\xef\xbb\xbf" + (d / "SHA256SUMS").read_bytes()),
        True,
    ),
    "sums-bom-crlf": (
        lambda d, s: (d / "SHA256SUMS").write_bytes(
            b"\xef\xbb\xbf" + (d / "SHA256SUMS").read_bytes().replace(b"\n", b"\r\n")
        ),
        True,
    ),
    "sums-binary-star": (lambda d, s: _rewrite_sums(d, lambda b: b.replace(b"  ", b" *", 1)), True),
    "sums-bsd-tag": (
        lambda d, s: _rewrite_sums(d, lambda b: b"SHA256 (%s) = %s\n" % (b[66:].rstrip(b"\n"), b[:64])),
        True,
    ),
    "sums-uppercase": (lambda d, s: _rewrite_sums(d, lambda b: b[:64].upper() + b[64:]), True),
    "sums-dot-slash": (lambda d, s: _rewrite_sums(d, lambda b: b[:66] + b"./" + b[66:]), True),
    "sums-line-twice": (lambda d, s: _rewrite_sums(d, lambda b: b + b if b"zip" in b else b), True),
    "sums-blank-and-comment": (
        lambda d, s: _rewrite_sums(d, lambda b: b"# signed\n\n" + b if b"zip" in b else b),
        True,
    ),
    "sums-no-final-newline": (
        lambda d, s: (d / "SHA256SUMS").write_bytes((d / "SHA256SUMS").read_bytes()[:-1]),
        True,
    ),
    "sums-conflicting-spellings": (
        lambda d, s: _rewrite_sums(d, lambda b: b + b"0" * 64 + b"  ./" + b[66:] if b"zip" in b else b),
        False,
    ),
    "sums-line-missing": (lambda d, s: _rewrite_sums(d, lambda b: b"" if b"route" in b else b), False),
    "sums-extra-name": (
        lambda d, s: _rewrite_sums(d, lambda b: b + b"0" * 64 + b"  extra.bin\n" if b"zip" in b else b),
        False,
    ),
    "sums-sha512-tag": (
        lambda d, s: _rewrite_sums(
            d, lambda b: b"SHA512 (x) = " + b"0" * 128 + b"\n" + b if b"zip" in b else b
        ),
        False,
    ),
    "sums-backslash": (
        lambda d, s: _rewrite_sums(d, lambda b: b[:66] + b"dist\\" + b[66:] if b"zip" in b else b),
        False,
    ),
    "sums-short-digest": (
        lambda d, s: _rewrite_sums(d, lambda b: b[:63] + b[64:] if b"zip" in b else b),
        False,
    ),
    "sums-not-a-line": (
        lambda d, s: _rewrite_sums(d, lambda b: b"garbage\n" + b if b"zip" in b else b),
        False,
    ),
    "extra-file": (lambda d, s: (d / "README.txt").write_bytes(b"hi\n"), False),
    "missing-file": (lambda d, s: (d / (s + ".cdx.json")).unlink(), False),
    "second-zip": (lambda d, s: (d / "other.zip").write_bytes(b"PK"), False),
    "symlinked-entry": (
        _steps(
            lambda d, s: shutil.move(d / (s + ".model.json"), d.parent / "model.json"),
            lambda d, s: (d / (s + ".model.json")).symlink_to(d.parent / "model.json"),
        ),
        False,
    ),
    "zip-member-data-flipped-resealed": (_zip_member_crc_flip, False),
    "zip-truncated-resealed": (
        _steps(
            lambda d, s: (d / (s + ".zip")).write_bytes((d / (s + ".zip")).read_bytes()[:-30]),
            lambda d, s: _reseal_manifest(d, s),
        ),
        False,
    ),
    "qualification-relabelled": (
        _set_key(".qualification.json", ("status",), "unqualified", deep=True),
        False,
    ),
    "qualification-failed-gate-kept-qualified": (_qualification_edit(_fail_gate_keep_qualified), False),
    "qualification-no-gates-kept-qualified": (_qualification_edit(_empty_gates_keep_qualified), False),
    "qualification-bound-to-other-package": (
        _qualification_edit(lambda q: q["bound_to"].update(package_sha256="ab" * 32)),
        False,
    ),
    "qualification-receipt-other-package": (
        _qualification_edit(lambda q: q["receipts"][0]["bound"].update(package_sha256="ab" * 32)),
        False,
    ),
    "qualification-receipt-other-source": (
        _qualification_edit(lambda q: q["receipts"][0]["bound"].update(source_commit="0" * 40)),
        False,
    ),
    "qualification-receipt-listed-twice": (
        _qualification_edit(lambda q: q["receipts"].append(dict(q["receipts"][0], name="run-2.json"))),
        False,
    ),
    "qualification-gate-counts-forged": (
        _qualification_edit(lambda q: q["gates"]["counts"].update(not_applicable=0)),
        False,
    ),
    "qualification-schema-1": (_qualification_edit(lambda q: q.update(schema=1)), False),
    "qualification-unknown-key": (_qualification_edit(lambda q: q.update(approved_by="QA")), False),
    "qualification-receipt-unknown-key": (
        _qualification_edit(lambda q: q["receipts"][0].update(signed_off=True)),
        False,
    ),
    "route-package-size": (_set_key(".route.json", ("package", "size"), 1, deep=True), False),
    "route-checkpoint-dir": (
        _set_key(".route.json", ("install", "checkpoint_dir"), "cache/x", deep=True),
        False,
    ),
    # Issue 8 §3: the route's paths must be where the config reads, never under Program Files.
    "route-key-file-program-files": (
        _set_key(
            ".route.json",
            ("install", "key_file"),
            "C:\\Program Files\\OMP NInfer\\v0.7.0-qwen38-4090-beta.2\\bearer.key",
            deep=True,
        ),
        False,
    ),
    "route-data-root-moved": (
        _set_key(".route.json", ("install", "data_root"), "C:\\Program Files\\x", deep=True),
        False,
    ),
    "route-model-store-as": (_set_key(".route.json", ("model", "store_as"), "v2.ninfer", deep=True), False),
    "profile-lane": (_set_key(".profile.json", ("lane",), "rtx3090", deep=True), False),
    "profile-config-hash": (
        _set_key(".profile.json", ("config", "bytes_sha256"), "0" * 64, deep=True),
        False,
    ),
    "manifest-release-instance": (
        _set_key(".manifest.json", ("release_instance_id",), "x", deep=False),
        False,
    ),
    "manifest-tag": (_set_key(".manifest.json", ("component_tag",), "v9.9.9", deep=False), False),
    "provenance-type": (_set_key(".provenance.json", ("_type",), "https://example.org/x", deep=True), False),
    "spdx-version": (_set_key(".spdx.json", ("spdxVersion",), "SPDX-2.2", deep=True), False),
    "cdx-spec-version": (_set_key(".cdx.json", ("specVersion",), "1.5", deep=True), False),
    "config-edited-resealed": (
        _steps(
            lambda d, s: (d / (s + ".config.toml")).write_bytes(
                (d / (s + ".config.toml")).read_bytes() + b"# x\n"
            ),
            lambda d, s: _reseal_manifest(d, s),
        ),
        False,
    ),
    "model-json-not-json": (
        _steps(
            lambda d, s: (d / (s + ".model.json")).write_bytes(b"{not json"),
            lambda d, s: _reseal_manifest(d, s),
        ),
        False,
    ),
    "route-is-a-list": (
        _steps(
            lambda d, s: (d / (s + ".route.json")).write_bytes(b"[]\n"), lambda d, s: _reseal_manifest(d, s)
        ),
        False,
    ),
    "cdx-dll-hash-changed-resealed": (
        _cdx_edit(lambda cs: _first_dll_occurrence(cs).update(additionalContext="sha256:" + "0" * 64)),
        False,
    ),
    "cdx-dll-component-dropped-resealed": (_cdx_edit(lambda cs: cs.remove(_first_dll(cs))), False),
    "cdx-serial-number-resealed": (
        _steps(
            lambda d, s: _edit_json(d, s + ".cdx.json", lambda doc: doc.update(serialNumber="urn:uuid:NOT")),
            lambda d, s: _reseal_all(d, s),
        ),
        False,
    ),
    "cdx-duplicate-bom-ref-resealed": (
        _cdx_edit(lambda cs: cs.append(dict(cs[0]))),
        False,
    ),
    "provenance-subject-not-a-list": (_set_key(".provenance.json", ("subject",), 7, deep=True), False),
    # verify reads these records as typed records: an unknown key is refused, and by the stdlib
    # verifier too (RECORD_SHAPES).
    "route-unknown-key": (_set_key(".route.json", ("colour",), "red", deep=True), False),
    "route-install-unknown-key": (_set_key(".route.json", ("install", "colour"), "red", deep=True), False),
    "provenance-unknown-key": (_set_key(".provenance.json", ("colour",), "red", deep=True), False),
    "manifest-unknown-key": (_set_key(".manifest.json", ("colour",), "red", deep=False), False),
    "profile-unknown-key": (_set_key(".profile.json", ("colour",), "red", deep=True), False),
    "model-unknown-key": (_set_key(".model.json", ("colour",), "red", deep=True), False),
    "route-schema-a-string": (_set_key(".route.json", ("schema",), "1", deep=True), False),
    "manifest-cuda-arch-a-number": (_set_key(".manifest.json", ("cuda_arch",), 7, deep=False), False),
    # Schema-only faults in a fully re-sealed CycloneDX (the issue 12 gap, closed): only the
    # schema's rules can see them; the stdlib verifier checks them as ``CDX_SHAPES``.
    "cdx-component-type-outside-enum-resealed": (_cdx_edit(lambda cs: cs[0].update(type="gizmo")), False),
    "cdx-component-unknown-key-resealed": (_cdx_edit(lambda cs: cs[0].update(colour="red")), False),
    "cdx-component-name-missing-resealed": (_cdx_edit(lambda cs: cs[0].pop("name")), False),
    "cdx-component-version-a-number-resealed": (_cdx_edit(lambda cs: cs[0].update(version=7)), False),
    "cdx-occurrence-line-negative-resealed": (
        _cdx_edit(lambda cs: _first_dll_occurrence(cs).update(line=-1)),
        False,
    ),
    "cdx-external-reference-type-resealed": (
        _cdx_edit(
            lambda cs: next(c for c in cs if "externalReferences" in c)["externalReferences"][0].update(
                type="x"
            )
        ),
        False,
    ),
    "cdx-external-reference-url-not-iri-resealed": (
        _cdx_edit(
            lambda cs: next(c for c in cs if "externalReferences" in c)["externalReferences"][0].update(
                url="https://a b"
            )
        ),
        False,
    ),
    # verify checks a CycloneDX licence expression as the schema does (a string), not against the
    # licence list; the stdlib verifier must say the same, whatever that is.
    "cdx-license-id-unknown-resealed": (
        _cdx_edit(
            lambda cs: next(c for c in cs if "licenses" in c).update(
                licenses=[{"expression": "NotARealLicense-1.0"}]
            )
        ),
        None,
    ),
    "cdx-two-license-expressions-resealed": (
        _cdx_edit(lambda cs: cs[0].update(licenses=[{"expression": "MIT"}, {"expression": "MIT"}])),
        False,
    ),
    "cdx-dependency-listed-twice-resealed": (
        _steps(
            lambda d, s: _edit_json(
                d, s + ".cdx.json", lambda doc: doc["dependencies"].append(doc["dependencies"][0])
            ),
            lambda d, s: _reseal_all(d, s),
        ),
        False,
    ),
    "cdx-lifecycle-phase-resealed": (
        _steps(
            lambda d, s: _edit_json(
                d, s + ".cdx.json", lambda doc: doc["metadata"].update(lifecycles=[{"phase": "ship"}])
            ),
            lambda d, s: _reseal_all(d, s),
        ),
        False,
    ),
    "cdx-timestamp-not-rfc3339-resealed": (
        _steps(
            lambda d, s: _edit_json(
                d, s + ".cdx.json", lambda doc: doc["metadata"].update(timestamp="2026-02-30T00:00:00Z")
            ),
            lambda d, s: _reseal_all(d, s),
        ),
        False,
    ),
    "cdx-composition-unknown-ref-resealed": (
        _steps(
            lambda d, s: _edit_json(
                d, s + ".cdx.json", lambda doc: doc["compositions"][0]["assemblies"].append("nobody")
            ),
            lambda d, s: _reseal_all(d, s),
        ),
        False,
    ),
    "cdx-bom-version-zero-resealed": (
        _steps(
            lambda d, s: _edit_json(d, s + ".cdx.json", lambda doc: doc.update(version=0)),
            lambda d, s: _reseal_all(d, s),
        ),
        False,
    ),
    **{f"flip{sfx}": (_flip(sfx, resealed=False), False) for sfx in (*SUFFIXES, "SHA256SUMS")},
    # A flipped byte in a field no record binds (say a URL in the manifest), resealed, is simply
    # another set: what matters is that both verifiers say the same.
    **{
        f"flip{sfx}-resealed": (_flip(sfx, resealed=True), None if sfx == ".manifest.json" else False)
        for sfx in SUFFIXES
    },
}


def test_schema_only_change_in_a_deeply_resealed_cyclonedx_fails_both(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A CycloneDX document whose only fault is schema-level (a component ``type`` outside the
    schema's enum), with provenance, manifest and SHA256SUMS all rewritten to match: ``verify``
    refuses it (cyclonedx-python-lib's JSON schema) and so does the stdlib verifier (the schema's
    rules for the shapes ninfer-release writes, as data: ``CDX_SHAPES``), naming the field. This
    was the one known gap of issue 12; the corpus below holds more such cases."""
    script = _export(tmp_path)
    d = tmp_path / "set"
    shutil.copytree(qualified_out(tmp_path_factory) / "rtx4090", d)
    _edit_json(d, stem("rtx4090") + ".cdx.json", lambda doc: doc["components"][0].update(type="gizmo"))
    _reseal_all(d, stem("rtx4090"))
    assert cli("verify", d).code == 5
    alone = _standalone(script, d)
    assert alone.returncode == 5
    assert "$.components[0].type: 'gizmo' is not one of the schema's component-type values" in alone.stderr


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _export(tmp_path_factory.mktemp("export"))


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_standalone_agrees_with_verify(
    case: str, script: Path, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    mutate, accept = CORPUS[case]
    src = qualified_out(tmp_path_factory) / "rtx4090"
    d = tmp_path / "set"
    shutil.copytree(src, d)
    mutate(d, stem("rtx4090"))
    full = cli("verify", d)
    alone = _standalone(script, d)
    assert full.code in (0, 1, 5), full.text  # 1: verify crashed on hostile input (still a reject)
    assert alone.returncode in (0, 5), alone.stderr
    assert (full.code == 0) == (alone.returncode == 0), f"verify: {full.text}\nstandalone: {alone.stderr}"
    if accept is not None:
        assert (full.code == 0) == accept, f"verify: {full.text}"
    if full.code != 0:
        assert "FAIL: " in alone.stderr and "Traceback" not in alone.stderr


def test_both_native_sets_pass_and_sums_sha256_pins(
    script: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for out in (qualified_out(tmp_path_factory), release_out(tmp_path_factory)):
        for lane in ("rtx4090", "rtx3090"):
            res = _standalone(script, out / lane, "--json")
            assert res.returncode == 0, res.stderr
            assert json.loads(res.stdout)["ok"] is True
    d = qualified_out(tmp_path_factory) / "rtx3090"
    sums = hashlib.sha256((d / "SHA256SUMS").read_bytes()).hexdigest()
    assert _standalone(script, d, "--sums-sha256", sums).returncode == 0
    assert _standalone(script, d, "--sums-sha256", "0" * 64).returncode == 5
    assert _standalone(script, d.parent / "nothing").returncode == 4
    assert _standalone(script, d, "--bogus", "x").returncode == 2
    assert TAGS["rtx3090"] in stem("rtx3090")


def test_standalone_states_the_qualification_never_a_plain_ok(
    script: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Like ``verify``: an unqualified set reads as an unqualified draft, a qualified one with its
    gate counts; ``--json`` carries ``qualification``, ``draft`` and ``gates``;
    ``--require-qualified`` fails an unqualified set (exit 5)."""
    draft = release_out(tmp_path_factory) / "rtx4090"
    res = _standalone(script, draft)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"{draft}: OK (unqualified draft, not for release; ")
    doc = json.loads(_standalone(script, draft, "--json").stdout)
    assert (doc["qualification"], doc["draft"]) == ("unqualified", True)
    assert doc["gates"] == {"pass": 0, "fail": 0, "not_applicable": 0}
    res = _standalone(script, draft, "--require-qualified")
    assert res.returncode == 5
    assert "qualification.json: status unqualified; --require-qualified needs a qualified set" in res.stderr
    sealed = qualified_out(tmp_path_factory) / "rtx4090"
    res = _standalone(script, sealed, "--require-qualified")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"{sealed}: OK (qualified: 2 pass, 0 fail, 1 not applicable; ")
    doc = json.loads(_standalone(script, sealed, "--json").stdout)
    assert (doc["qualification"], doc["draft"]) == ("qualified", False)
    assert doc["gates"] == {"pass": 2, "fail": 0, "not_applicable": 1}
    assert doc["bindings"] == {"public": 1, "scratch_equivalence": 0}


def _as_scratch_equivalence(q: dict[str, Any]) -> None:
    r = q["receipts"][0]
    public = {k: r["bound"][k] for k in ("package_sha256", "config_sha256")}
    r["bound"].update(package_sha256="cd" * 32, config_sha256="ab" * 32)
    r["binding"] = "scratch_equivalence"
    r["scratch"] = {"variant": "port-only", "equivalence": {**public, "evidence": "port only"}}


def test_both_say_qualified_by_scratch_equivalence_only(
    script: Path, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A set whose only receipt is a scratch run with equivalence evidence: both verifiers accept it
    and neither lets it read as a run of these very bytes."""
    d = tmp_path / "set"
    shutil.copytree(qualified_out(tmp_path_factory) / "rtx4090", d)
    _qualification_edit(_as_scratch_equivalence)(d, stem("rtx4090"))
    phrase = "OK (qualified by scratch equivalence only: 2 pass, 0 fail, 1 not applicable; "
    full, alone = cli("verify", d), _standalone(script, d)
    assert full.code == 0 and phrase in full.out, full.text
    assert alone.returncode == 0 and phrase in alone.stdout, alone.stderr
    doc = json.loads(_standalone(script, d, "--json").stdout)
    assert doc["bindings"] == {"public": 0, "scratch_equivalence": 1}


# --- the hostile-input suite's sets (tests/data/hostile/set.json, issue 9) -----------------------


def test_standalone_agrees_with_verify_on_every_hostile_set(
    script: Path, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Every *set* case of the hostile-input suite (h9's corpus and set factory), built from the
    sealed rtx4090 set: the stdlib verifier and ``verify`` give the same verdict on each."""
    from hostile_support import hostile_sets

    good = qualified_out(tmp_path_factory) / "rtx4090"
    disagreements = []
    count = 0
    for case, set_dir in hostile_sets(good, tmp_path / "hostile"):
        count += 1
        full = cli("verify", set_dir)
        alone = _standalone(script, set_dir)
        assert alone.returncode in (0, 4, 5), (case.id, alone.stderr)
        assert "Traceback" not in alone.stderr, (case.id, alone.stderr)
        if (full.code == 0) != (alone.returncode == 0):
            disagreements.append(f"{case.id}: verify {full.code}, standalone {alone.returncode}")
    assert count >= 100  # the suite's set cases, not an empty loop
    assert disagreements == [], "\n".join(disagreements)


# --- the CycloneDX shapes the stdlib verifier checks, against the library's schema ---------------

#: Each of ``CDX_SHAPES``'s object kinds -> where the schema defines it (a JSON pointer).
_CDX_KIND_POINTERS = {
    "bom": "",
    "metadata": "/definitions/metadata",
    "lifecycle": "/definitions/metadata/properties/lifecycles/items/oneOf/0",
    "tools": "/definitions/metadata/properties/tools/oneOf/0",
    "organization": "/definitions/organizationalEntity",
    "contact": "/definitions/organizationalContact",
    "component": "/definitions/component",
    "license-expression": "/definitions/licenseChoice/oneOf/1/items/0",
    "hash": "/definitions/hash",
    "external-reference": "/definitions/externalReference",
    "property": "/definitions/property",
    "evidence": "/definitions/componentEvidence",
    "occurrence": "/definitions/componentEvidence/properties/occurrences/items",
    "dependency": "/definitions/dependency",
    "composition": "/definitions/compositions",
}


def _cdx_schema() -> dict[str, Any]:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.schema._res import BOM_JSON_STRICT

    path = BOM_JSON_STRICT[SchemaVersion.V1_6]
    assert path is not None
    doc: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return doc


def _pointer(schema: dict[str, Any], pointer: str) -> Any:
    node: Any = schema
    for part in pointer.split("/")[1:]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = _pointer(schema, node["$ref"][1:])
    return node


def test_the_standalone_cyclonedx_shapes_are_the_schema_s() -> None:
    """``CDX_SHAPES``/``CDX_ENUMS`` of the stdlib verifier read against cyclonedx-python-lib's strict
    CycloneDX 1.6 schema: every kind closed (``additionalProperties: false``) with the same required
    keys, every key one the schema defines, arrays where the schema has them (``{}`` exactly where
    it says ``uniqueItems``), object kinds where it refers to that definition, enums equal."""
    from ninfer_release.releases import _standalone_verifier as sv

    schema = _cdx_schema()
    assert set(_CDX_KIND_POINTERS) == set(sv.CDX_SHAPES)
    pointer_of = {p: k for k, p in _CDX_KIND_POINTERS.items()}
    for kind, (required, keys) in sv.CDX_SHAPES.items():
        node = _resolve(schema, _pointer(schema, _CDX_KIND_POINTERS[kind]))
        assert node.get("additionalProperties") is False, kind
        assert sorted(required) == sorted(node.get("required", [])), kind
        for key, spec in keys.items():
            prop = node["properties"][key]
            if spec == "license-expression[]":  # licenseChoice: a list of licences, or one expression
                assert prop["$ref"] == "#/definitions/licenseChoice", (kind, key)
                assert (
                    _pointer(schema, _CDX_KIND_POINTERS["license-expression"][: -len("/items/0")])["maxItems"]
                    == 1
                )
                continue
            if spec.endswith(("[]", "{}")):
                assert _resolve(schema, prop).get("type") == "array", (kind, key)
                assert bool(_resolve(schema, prop).get("uniqueItems")) == spec.endswith("{}"), (kind, key)
                spec, prop = spec[:-2], prop.get("items", prop)
            if spec in sv.CDX_SHAPES and "$ref" in prop:
                assert pointer_of.get(prop["$ref"][1:]) == spec, (kind, key)
            elif spec.startswith("enum:"):
                assert tuple(_resolve(schema, prop)["enum"]) == sv.CDX_ENUMS[spec[5:]], (kind, key)


def test_the_standalone_iri_check_accepts_only_what_verify_accepts() -> None:
    """The stdlib IRI-reference rule is the project's RFC 3987 one, narrowed (ASCII, no IP literal):
    it accepts nothing ``verify``'s format checker refuses."""
    from ninfer_release.releases import _standalone_verifier as sv
    from ninfer_release.sbom._iri import is_iri_reference

    samples = [
        "https://github.com/fmtlib/fmt",
        "https://a.b/c?d=e&f#g",
        "http://user:pw@host:8080/p/a%20th",
        "mailto:x@example.org",
        "urn:cdx:1/2",
        "//host/path",
        "rel/path",
        "",
        "https://a b",
        "https://a:b:c",
        "%zz",
        "https://[::1]/",
        "https://\u00e9.example/",
        "a\\b",
        "https://x/<y>",
    ]
    for s in samples:
        if sv._IRI_REFERENCE.fullmatch(s):
            assert is_iri_reference(s), s
    assert sv._IRI_REFERENCE.fullmatch("https://github.com/fmtlib/fmt")
    assert not sv._IRI_REFERENCE.fullmatch("https://a b")


# --- the typed records' keys, against the record types verify reads them with --------------------


def _json_types(tp: Any) -> str:
    """The JSON types a value of annotation ``tp`` can have, ``|``-joined in a fixed order
    (``any``: not constrained here); a superset of what the record's decoder accepts."""
    import types
    import typing
    from collections.abc import Mapping

    from ninfer_release.jsonrecord import JsonRecord

    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        parts = {t for a in typing.get_args(tp) for t in _json_types(a).split("|")}
    elif origin is typing.Literal:
        parts = {_json_types(type(a)) for a in typing.get_args(tp)}
    elif origin is tuple or origin is list:
        parts = {"array"}
    elif origin is Mapping or (isinstance(tp, type) and issubclass(tp, JsonRecord)):
        parts = {"object"}
    else:
        parts = {{type(None): "null", bool: "bool", int: "int", float: "number", str: "str"}.get(tp, "any")}
    if "any" in parts:
        return "any"
    order = ("null", "bool", "int", "number", "str", "array", "object")
    return "|".join(t for t in order if t in parts)


def _record_shape(cls: type[Any]) -> dict[str, Any]:
    """``key -> (required, JSON types, nested)`` of a :class:`JsonRecord` type, as
    ``RECORD_SHAPES`` holds it: nested is a record's shape, ``[shape]`` for an array of records,
    or the JSON types of each element of an array or each value of an object of scalars."""
    import types
    import typing
    from collections.abc import Mapping

    from ninfer_release.jsonrecord import JsonRecord

    def unwrap(tp: Any) -> Any:
        if typing.get_origin(tp) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            return unwrap(args[0]) if len(args) == 1 else None
        return tp

    def is_record(tp: Any) -> bool:
        return isinstance(tp, type) and issubclass(tp, JsonRecord)

    out: dict[str, Any] = {}
    for f in cls._json_fields():
        tp = unwrap(f.type)
        nested: Any = None
        if f.decode is None and is_record(tp):
            nested = _record_shape(tp)
        elif f.decode is None and typing.get_origin(tp) in (tuple, list):
            item = unwrap(typing.get_args(tp)[0])
            nested = [_record_shape(item)] if is_record(item) else _json_types(item)
        elif f.decode is None and typing.get_origin(tp) is Mapping:
            nested = _json_types(typing.get_args(tp)[1])
        # A key absent when None is written without the key, never as null: null is refused.
        kinds = "any" if f.decode is not None else _json_types(tp if f.absent_when_none else f.type)
        out[f.key] = (not f.absent_when_none, kinds, nested)
    return out


def test_the_standalone_record_keys_are_the_record_types() -> None:
    """``RECORD_SHAPES`` of the stdlib verifier equals what ``releases._records`` declares for the
    records ``verify`` parses as typed records (profile, model, qualification, provenance, route,
    component manifest): keys, whether each is required, its JSON types and nested records. A field added
    on one side cannot be forgotten on the other."""
    from ninfer_release.releases import _records
    from ninfer_release.releases import _standalone_verifier as sv

    types_by_suffix = {
        ".profile.json": _records.ProfileAsset,
        ".model.json": _records.ModelRecord,
        ".qualification.json": _records.QualificationRecord,
        ".provenance.json": _records.ProvenanceStatement,
        ".route.json": _records.RouteRecord,
        ".manifest.json": _records.ComponentManifest,
    }
    assert {k: _record_shape(v) for k, v in types_by_suffix.items()} == sv.RECORD_SHAPES


# --- SPDX 2.3: schema-only faults in a fully re-sealed set ------------------------------------


def _rezip_spdx(d: Path, s: str) -> None:
    """Copy the SPDX asset into the package zip (same member order, dates and method), then
    re-seal everything that binds the zip or that member: every record naming the package digest
    (or the release-instance id made of it) or the member's digests, the route package size,
    provenance subjects, manifest entries, ``SHA256SUMS``: as far as an attacker can go."""
    zpath, member, spdx = d / (s + ".zip"), f"sbom/{s}.spdx.json", (d / (s + ".spdx.json")).read_bytes()
    old_zip = zpath.read_bytes()
    with zipfile.ZipFile(zpath) as old:
        items = [(info, old.read(info)) for info in old.infolist()]
    inner = next(data for info, data in items if info.filename == member)
    with zipfile.ZipFile(zpath, "w") as new:
        for info, data in items:
            new.writestr(info, spdx if info.filename == member else data, compress_type=info.compress_type)
    new_zip = zpath.read_bytes()
    swaps = [
        (hashlib.sha256(old_zip).hexdigest(), hashlib.sha256(new_zip).hexdigest()),
        (hashlib.sha256(inner).hexdigest(), hashlib.sha256(spdx).hexdigest()),
        (
            hashlib.sha1(inner, usedforsecurity=False).hexdigest(),
            hashlib.sha1(spdx, usedforsecurity=False).hexdigest(),
        ),
    ]
    swaps.append((swaps[0][0][:16], swaps[0][1][:16]))
    for path in d.iterdir():
        if path.name.endswith(".json") and not path.name.endswith(".spdx.json"):
            text = path.read_text(encoding="utf-8")
            for was, now in swaps:
                text = text.replace(was, now)
            path.write_text(text, encoding="utf-8")
    _edit_json(d, s + ".route.json", lambda doc: doc["package"].update(size=len(new_zip)))
    _reseal_all(d, s)


def _spdx_edit(edit: Callable[[JsonDoc], object]) -> Mutation:
    """Edit the SPDX asset (written as ``sbom/_spdx.py`` writes it), put it in the zip, re-seal."""

    def mutate(d: Path, s: str) -> None:
        path = d / (s + ".spdx.json")
        doc = json.loads(path.read_bytes())
        edit(doc)
        path.write_bytes((json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode())
        _rezip_spdx(d, s)

    return mutate


def _first_file(doc: JsonDoc) -> JsonDoc:
    first: JsonDoc = doc["files"][0]
    return first


#: Schema-only faults of the SPDX document, each in a fully re-sealed set: ``verify`` (spdx-tools'
#: validation) and the stdlib verifier (``SPDX_SHAPES`` and the cross rules) both refuse each.
SPDX_FAULTS: dict[str, Callable[[JsonDoc], object]] = {
    "name-missing": lambda doc: doc.pop("name"),
    "data-license": lambda doc: doc.update(dataLicense="MIT"),
    "namespace-not-a-uri": lambda doc: doc.update(documentNamespace="not a uri"),
    "created-not-rfc3339": lambda doc: doc["creationInfo"].update(created="2026-11-20 00:00:00"),
    "created-impossible-date": lambda doc: doc["creationInfo"].update(created="2026-02-30T00:00:00Z"),
    "creators-empty": lambda doc: doc["creationInfo"].update(creators=[]),
    "creator-form": lambda doc: doc["creationInfo"].update(creators=["Robot: x"]),
    "package-spdxid-bad": lambda doc: doc["packages"][0].update(SPDXID="Package-x"),
    "package-name-a-number": lambda doc: doc["packages"][0].update(name=7),
    "package-download-missing": lambda doc: doc["packages"][0].pop("downloadLocation"),
    "package-purpose-enum": lambda doc: doc["packages"][0].update(primaryPackagePurpose="GIZMO"),
    "package-files-analyzed-a-string": lambda doc: doc["packages"][0].update(filesAnalyzed="yes"),
    "package-built-date": lambda doc: doc["packages"][0].update(builtDate="yesterday"),
    "file-spdxid-bad": lambda doc: _first_file(doc).update(SPDXID="SPDXRef-a b"),
    "file-spdxid-duplicate": lambda doc: _first_file(doc).update(SPDXID=doc["files"][1]["SPDXID"]),
    "file-type-enum": lambda doc: _first_file(doc).update(fileTypes=["GIZMO"]),
    "checksum-sha1-short": lambda doc: _first_file(doc)["checksums"][0].update(checksumValue="ab" * 19),
    "checksum-algorithm-enum": lambda doc: _first_file(doc)["checksums"][0].update(algorithm="SHA-1"),
    "checksum-value-missing": lambda doc: _first_file(doc)["checksums"][0].pop("checksumValue"),
    "relationship-type-enum": lambda doc: doc["relationships"][1].update(relationshipType="HOLDS"),
    "relationship-dangling": lambda doc: doc["relationships"][1].update(relatedSpdxElement="SPDXRef-nobody"),
    "relationship-element-missing": lambda doc: doc["relationships"][1].pop("spdxElementId"),
    "describes-missing": lambda doc: doc.update(
        relationships=[r for r in doc["relationships"] if r["relationshipType"] != "DESCRIBES"]
    ),
    "license-ref-undeclared": lambda doc: doc["packages"][0].update(licenseConcluded="LicenseRef-Nobody"),
    "license-expression-grammar": lambda doc: doc["packages"][0].update(licenseConcluded="Apache-2.0 AND"),
    "file-license-a-number": lambda doc: _first_file(doc).update(licenseConcluded=7),
    "extracted-text-missing": lambda doc: doc["hasExtractedLicensingInfos"][0].pop("extractedText"),
    "extracted-id-bad": lambda doc: doc["hasExtractedLicensingInfos"][0].update(licenseId="Microsoft"),
    # Licence-list ids (SPDX_LICENSE_IDS / SPDX_EXCEPTION_IDS): re-sealed, only the list can tell.
    "license-id-unknown": lambda doc: doc["packages"][0].update(licenseConcluded="NotARealLicense-1.0"),
    "license-declared-id-unknown": lambda doc: doc["packages"][0].update(
        licenseDeclared="NotARealLicense-1.0"
    ),
    "file-license-id-unknown": lambda doc: _first_file(doc).update(licenseConcluded="NotARealLicense-1.0"),
    "license-id-unknown-in-and": lambda doc: doc["packages"][0].update(
        licenseConcluded="MIT AND (Apache-2.0 OR NotARealLicense-1.0)"
    ),
    "license-id-misspelt": lambda doc: doc["packages"][0].update(licenseConcluded="Apache-2.1"),
    "license-plus-not-an-alias": lambda doc: doc["packages"][0].update(licenseConcluded="Apache-2.0+"),
    "license-exception-as-licence": lambda doc: doc["packages"][0].update(licenseConcluded="LLVM-exception"),
    "license-licence-as-exception": lambda doc: doc["packages"][0].update(
        licenseConcluded="MIT WITH Apache-2.0"
    ),
    "license-unknown-exception": lambda doc: doc["packages"][0].update(
        licenseConcluded="Apache-2.0 WITH Not-An-Exception"
    ),
}

#: Licence-list spellings both accept: the list is matched case-insensitively, with its
#: deprecated aliases (``GPL-2.0+``), and exceptions after ``WITH``.
SPDX_LICENSES_ACCEPTED: dict[str, Callable[[JsonDoc], object]] = {
    "license-id-lowercase": lambda doc: doc["packages"][0].update(licenseConcluded="mit"),
    "license-id-deprecated-alias": lambda doc: doc["packages"][0].update(licenseConcluded="GPL-2.0+"),
    "license-with-exception": lambda doc: _first_file(doc).update(
        licenseConcluded="Apache-2.0 WITH LLVM-exception"
    ),
}

#: Faults ``verify`` accepts (spdx-tools' JSON parser ignores keys it does not know) and the stdlib
#: verifier refuses on purpose: it accepts only the fields ``sbom/_spdx.py`` writes.
SPDX_STRICTER: dict[str, Callable[[JsonDoc], object]] = {
    "document-unknown-key": lambda doc: doc.update(colour="red"),
    "file-unknown-key": lambda doc: _first_file(doc).update(colour="red"),
    "relationship-unknown-key": lambda doc: doc["relationships"][0].update(colour="red"),
}


@pytest.fixture(scope="module")
def draft_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The unqualified rtx4090 set (no receipts bind its zip), rebuilt and re-sealed unchanged."""
    d = tmp_path_factory.mktemp("spdx") / "set"
    shutil.copytree(release_out(tmp_path_factory) / "rtx4090", d)
    _spdx_edit(lambda doc: None)(d, stem("rtx4090"))
    return d


def test_a_rebuilt_and_resealed_unchanged_set_passes_both(script: Path, draft_set: Path) -> None:
    ok(cli("verify", draft_set))
    assert _standalone(script, draft_set).returncode == 0


@pytest.mark.parametrize("case", sorted(SPDX_FAULTS))
def test_schema_only_spdx_fault_in_a_resealed_set_fails_both(
    case: str, script: Path, draft_set: Path, tmp_path: Path
) -> None:
    d = tmp_path / "set"
    shutil.copytree(draft_set, d)
    _spdx_edit(SPDX_FAULTS[case])(d, stem("rtx4090"))
    full = cli("verify", d)
    assert full.code == 5, full.text
    assert "SPDX 2.3 invalid" in full.text
    alone = _standalone(script, d)
    assert alone.returncode == 5, alone.stderr
    assert ".spdx.json: SPDX 2.3 invalid" in alone.stderr, alone.stderr
    assert "Traceback" not in alone.stderr


@pytest.mark.parametrize("case", sorted(SPDX_LICENSES_ACCEPTED))
def test_licence_list_spellings_verify_accepts_pass_both(
    case: str, script: Path, draft_set: Path, tmp_path: Path
) -> None:
    d = tmp_path / "set"
    shutil.copytree(draft_set, d)
    _spdx_edit(SPDX_LICENSES_ACCEPTED[case])(d, stem("rtx4090"))
    ok(cli("verify", d))
    alone = _standalone(script, d)
    assert alone.returncode == 0, alone.stderr


def _licence_list() -> tuple[set[str], set[str]]:
    """license-expression's list as spdx-tools' licensing holds it: (licence ids and aliases,
    exception ids and aliases), lowercased, without ``LicenseRef-`` keys and aliases with spaces."""
    from spdx_tools.common.spdx_licensing import spdx_licensing

    licences: set[str] = set()
    exceptions: set[str] = set()
    for key, symbol in spdx_licensing.known_symbols.items():
        for name in {key, *symbol.aliases}:
            if name.startswith("LicenseRef-") or any(c.isspace() for c in name):
                continue
            (exceptions if getattr(symbol, "is_exception", False) else licences).add(name.lower())
    return licences, exceptions


def test_the_standalone_licence_list_is_spdx_tools_licensing_s() -> None:
    from ninfer_release.releases import _standalone_verifier as sv

    licences, exceptions = _licence_list()
    assert licences == sv.SPDX_LICENSE_IDS
    assert exceptions == sv.SPDX_EXCEPTION_IDS
    assert "mit" in licences and "llvm-exception" in exceptions and len(licences) > 500


#: Expressions (grammatical in both) and whether a document declaring only
#: ``LicenseRef-Declared`` may use them; verify's verdict is computed, the stdlib's must equal it.
LICENSE_EXPRESSIONS = (
    "MIT",
    "mit",
    "Apache-2.0 AND MIT",
    "(MIT OR Apache-2.0) AND BSD-3-Clause",
    "GPL-2.0",
    "GPL-2.0+",
    "gpl-2.0-or-later",
    "Apache-2.0+",
    "NotARealLicense-1.0",
    "MIT AND NotARealLicense-1.0",
    "Apache-2.1",
    "LLVM-exception",
    "Apache-2.0 WITH LLVM-exception",
    "GPL-2.0-only WITH Classpath-exception-2.0",
    "MIT WITH Apache-2.0",
    "Apache-2.0 WITH Not-An-Exception",
    "LicenseRef-Declared",
    "LicenseRef-Declared AND MIT",
    "LicenseRef-Nobody",
    "DocumentRef-x:LicenseRef-Declared",
    "NOASSERTION",
    "NONE",
)


def _verify_accepts_expression(expression: str) -> bool:
    """What ``verify`` says of one licence expression: spdx-tools' parse, then the validation's
    licence messages (sbom/_spdx_validate.py), with ``LicenseRef-Declared`` declared."""
    from types import SimpleNamespace

    from spdx_tools.spdx.parser.error import SPDXParsingError
    from spdx_tools.spdx.parser.jsonlikedict.license_expression_parser import LicenseExpressionParser

    from ninfer_release.sbom._spdx_validate import _license_texts

    try:
        parsed = LicenseExpressionParser.parse_license_expression(expression)
    except SPDXParsingError:
        return False
    if expression in ("NONE", "NOASSERTION"):
        return True
    index = SimpleNamespace(license_refs={"LicenseRef-Declared"}, external_refs=set(), license_cache={})
    return not _license_texts(parsed, index)  # type: ignore[arg-type]


@pytest.mark.parametrize("expression", LICENSE_EXPRESSIONS)
def test_the_standalone_licence_ids_agree_with_verify(expression: str) -> None:
    from ninfer_release.releases import _standalone_verifier as sv

    declared = {"LicenseRef-Declared"}
    alone = (
        sv._is_license_expression(expression)
        and not sv.license_id_problems(expression)
        and all(ref in declared for ref in sv._LICENSE_REF.findall(expression))
    )
    assert alone == _verify_accepts_expression(expression)


@pytest.mark.parametrize("case", sorted(SPDX_STRICTER))
def test_stdlib_verifier_refuses_spdx_fields_ninfer_release_never_writes(
    case: str, script: Path, draft_set: Path, tmp_path: Path
) -> None:
    d = tmp_path / "set"
    shutil.copytree(draft_set, d)
    _spdx_edit(SPDX_STRICTER[case])(d, stem("rtx4090"))
    ok(cli("verify", d))
    alone = _standalone(script, d)
    assert alone.returncode == 5
    assert "is not a field of a" in alone.stderr, alone.stderr


def test_spdx_enums_are_spdx_tools_models() -> None:
    """``SPDX_ENUMS`` hold the values of spdx-tools' model enums (the spec's lists), each in the
    JSON spelling (``-`` or ``_`` as spdx-tools' parser reads both), so they cannot drift."""
    from spdx_tools.spdx.model.checksum import ChecksumAlgorithm
    from spdx_tools.spdx.model.file import FileType
    from spdx_tools.spdx.model.package import ExternalPackageRefCategory, PackagePurpose
    from spdx_tools.spdx.model.relationship import RelationshipType

    from ninfer_release.releases import _standalone_verifier as sv

    def names(values: tuple[str, ...]) -> set[str]:
        return {v.replace("-", "_") for v in values}

    assert names(sv.SPDX_ENUMS["relationship-type"]) == {e.name for e in RelationshipType}
    assert names(sv.SPDX_ENUMS["file-type"]) == {e.name for e in FileType}
    assert names(sv.SPDX_ENUMS["purpose"]) == {e.name for e in PackagePurpose}
    assert names(sv.SPDX_ENUMS["reference-category"]) == {e.name for e in ExternalPackageRefCategory}
    assert names(sv.SPDX_ENUMS["checksum-alg"]) <= {e.name for e in ChecksumAlgorithm}
    assert sv.SPDX_ENUMS["spdx-version"] == ("SPDX-2.3",) and sv.SPDX_ENUMS["data-license"] == ("CC0-1.0",)
