"""Image SBOMs: ``image build`` writes ``sbom.cdx.json`` (CycloneDX 1.6) and ``sbom.spdx.json`` (SPDX 2.3).

Both are checked with independent validators (``pyspdxtools -i``, cyclonedx-python-lib's
``JsonStrictValidator``), against ``image.json`` (base digest, every layer digest, every file of
our layers), and for reproducibility (C33 serial, C28 namespace, byte-identical rebuilds).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import ninfer_release.sbom
from conftest import need_tool
from containers_support import RECIPE, RELEASE_EPOCH, Samples, make_samples, request_for
from flow_support import cli, ok
from ninfer_release.build import build_image_with_sboms
from ninfer_release.containers import (
    ImageComponentRecord,
    ImageLayerRecord,
    ImageSbomRecords,
    LayerFile,
    image_sbom_records,
    load_recipe,
    read_build_result,
)
from ninfer_release.errors import InputError
from ninfer_release.sbom import (
    IMAGE_CDX_NAME,
    IMAGE_SPDX_NAME,
    image_cyclonedx,
    image_spdx,
    validate_cyclonedx_bytes,
    validate_spdx_bytes,
)

REPO = Path(__file__).resolve().parent.parent


def _cyclonedx(records: ImageSbomRecords, *, epoch: int = RELEASE_EPOCH) -> bytes:
    return image_cyclonedx(
        records,
        epoch=epoch,
        supplier="OMP NInfer",
        tool_name="ninfer-release",
        tool_version="0.1.0",
        tool_vendor="OMP NInfer",
    )


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Samples:
    return make_samples(tmp_path_factory.mktemp("image-sbom-samples"))


def _image_build(samples: Samples, out: Path) -> Path:
    ok(
        cli(
            "image", "build", RECIPE, "--inputs", samples.inputs, "--base", samples.base, "--out", out,
            "--release", REPO / "manifests" / "v0.13.1.yaml",
        )
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def built(samples: Samples, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``image build`` of the repo's 5090 recipe on the sample inputs (the CLI, as a user runs it)."""
    return _image_build(samples, tmp_path_factory.mktemp("image-sbom") / "out")


def _record(out: Path) -> dict[str, Any]:
    doc = json.loads((out / "image.json").read_bytes())
    assert isinstance(doc, dict)
    return doc


def _cdx(out: Path) -> dict[str, Any]:
    doc = json.loads((out / IMAGE_CDX_NAME).read_bytes())
    assert isinstance(doc, dict)
    return doc


def _spdx(out: Path) -> dict[str, Any]:
    doc = json.loads((out / IMAGE_SPDX_NAME).read_bytes())
    assert isinstance(doc, dict)
    return doc


def _props(component: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in component.get("properties", []):
        out.setdefault(p["name"], []).append(p["value"])
    return out


def _hashes(component: dict[str, Any]) -> dict[str, str]:
    return {h["alg"]: h["content"] for h in component.get("hashes", [])}


def test_image_build_writes_both_sboms_beside_image_json(built: Path) -> None:
    """The output directory holds exactly the image outputs and the two SBOMs."""
    assert sorted(p.name for p in built.iterdir()) == [
        "image.json", "image.tar", "layout", IMAGE_CDX_NAME, IMAGE_SPDX_NAME,
    ]  # fmt: skip
    assert not [p for p in built.parent.iterdir() if p.name.startswith(".")]  # no staging left behind
    assert (built / IMAGE_CDX_NAME).stat().st_mode & 0o777 == 0o644
    assert (built / IMAGE_SPDX_NAME).read_bytes().endswith(b"}\n")


def test_image_spdx_passes_pyspdxtools(built: Path) -> None:
    """spdx-tools' own CLI (``pyspdxtools -i``) parses and validates the image SPDX 2.3 document."""
    tool = Path(sys.executable).parent / "pyspdxtools"
    if not tool.exists():
        tool = Path(need_tool("pyspdxtools"))
    res = subprocess.run(
        [str(tool), "-i", str(built / IMAGE_SPDX_NAME)], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ERROR" not in res.stdout + res.stderr
    assert validate_spdx_bytes((built / IMAGE_SPDX_NAME).read_bytes()) == []


def test_image_cyclonedx_passes_the_strict_1_6_validator(built: Path) -> None:
    """cyclonedx-python-lib's strict JSON schema validator (CycloneDX 1.6) accepts the image inventory."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    text = (built / IMAGE_CDX_NAME).read_text(encoding="utf-8")
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    assert validate_cyclonedx_bytes(text.encode("utf-8")) == []
    assert json.loads(text)["specVersion"] == "1.6"


def test_cyclonedx_lists_image_base_and_every_layer_by_digest(built: Path) -> None:
    """metadata.component is the image (container, purl by digest); base and each layer by digest."""
    record, doc = _record(built), _cdx(built)
    image = doc["metadata"]["component"]
    manifest_hex = record["manifest"]["digest"].removeprefix("sha256:")
    assert image["type"] == "container"
    assert image["name"] == "ghcr.io/alphastorm/ninfer-runtime"
    assert image["version"] == record["version"] == "v0.7.0-qwen38-5090-beta.2"
    assert _hashes(image) == {"SHA-256": manifest_hex}
    assert image["purl"] == (
        f"pkg:oci/ninfer-runtime@sha256:{manifest_hex}"
        "?repository_url=ghcr.io/alphastorm/ninfer-runtime&tag=v0.7.0-qwen38-5090-beta.2"
    )
    assert image["bom-ref"] == f"image:{record['reference']}"
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for c in doc["components"]:
        by_kind.setdefault(_props(c)["ninfer:kind"][0], []).append(c)
    (base,) = by_kind["base-image"]
    assert base["type"] == "container"
    assert base["version"] == record["base"]["digest"]
    assert _hashes(base) == {"SHA-256": record["base"]["digest"].removeprefix("sha256:")}
    assert base["purl"].startswith("pkg:oci/busybox-static@sha256:")
    layers = sorted(
        by_kind["base-layer"] + by_kind["layer"], key=lambda c: int(_props(c)["ninfer:layer-index"][0])
    )
    assert [_props(c)["ninfer:layer-digest"][0] for c in layers] == [
        lay["digest"] for lay in record["layers"]
    ]
    assert [_props(c)["ninfer:diff-id"][0] for c in layers] == [lay["diff_id"] for lay in record["layers"]]
    assert [_hashes(c)["SHA-256"] for c in layers] == [
        lay["digest"].removeprefix("sha256:") for lay in record["layers"]
    ]
    assert len(by_kind["base-layer"]) == sum(lay["from_base"] for lay in record["layers"]) == 1


def test_cyclonedx_components_our_layers_add_with_semantic_config_digest(built: Path) -> None:
    """Server, runtime archive, engine config (semantic digest property) and profile, hashed as shipped."""
    record, doc = _record(built), _cdx(built)
    comps = {c["bom-ref"]: c for c in doc["components"]}
    bound = {b["name"]: b for b in record["bound_inputs"]}
    server = comps["staged-input:server"]
    assert server["type"] == "application"
    assert server["name"] == "ninfer-server"
    assert _hashes(server) == {"SHA-256": bound["server"]["sha256"], "SHA-1": bound["server"]["sha1"]}
    assert _props(server)["ninfer:image-path"] == ["opt/ninfer/bin/ninfer-server"]
    assert _props(server)["ninfer:stand-in"] == ["true"]  # the samples are stand-ins, and say so
    archive = comps["staged-input:archive"]
    assert archive["type"] == "file"
    assert _hashes(archive)["SHA-256"] == bound["archive"]["sha256"]
    config = comps["engine-config:engine-config"]
    engine = record["engine_config"]
    assert _props(config)["ninfer:config-semantic-sha256"] == [engine["semantic_sha256"]]
    assert _props(config)["ninfer:config-binding"] == ["semantic"]
    assert _hashes(config)["SHA-256"] == engine["bytes_sha256"] != engine["semantic_sha256"]
    assert _props(doc["metadata"]["component"])["ninfer:config-semantic-sha256"] == [
        engine["semantic_sha256"]
    ]
    profile = comps["profile:profile"]
    assert _props(profile)["ninfer:image-path"] == ["etc/ninfer/profile.json"]


def test_cyclonedx_dependency_graph_image_to_base_layers_and_components(built: Path) -> None:
    """image → base + our layers + our components; base → its layers; each of our layers → what it adds."""
    record, doc = _record(built), _cdx(built)
    graph = {d["ref"]: sorted(d.get("dependsOn", [])) for d in doc["dependencies"]}
    layer_refs = [f"layer:{i}:{lay['digest']}" for i, lay in enumerate(record["layers"])]
    base_ref = f"base:{record['base']['digest']}"
    components = [
        "engine-config:engine-config",
        "profile:profile",
        "staged-input:archive",
        "staged-input:server",
    ]
    assert graph[f"image:{record['reference']}"] == sorted([base_ref, *layer_refs[1:], *components])
    assert graph[base_ref] == [layer_refs[0]]
    names = [lay["name"] for lay in record["layers"]]
    assert names == ["base-0", "runtime", "server", "config"]
    assert graph[layer_refs[1]] == ["staged-input:archive"]
    assert graph[layer_refs[2]] == ["staged-input:server"]
    assert graph[layer_refs[3]] == ["engine-config:engine-config", "profile:profile"]


def test_spdx_inventories_the_files_our_layers_add(built: Path) -> None:
    """Image package (checksum = manifest digest, purl), base package by digest, every file SHA1+SHA256."""
    record, doc = _record(built), _spdx(built)
    image, base, busybox = doc["packages"]
    assert (busybox["name"], busybox["versionInfo"], busybox["licenseConcluded"]) == (
        "busybox-static",
        "1:1.35.0-4+deb12u1+b1",
        "GPL-2.0-only",
    )
    assert image["name"] == "ghcr.io/alphastorm/ninfer-runtime"
    assert image["checksums"] == [
        {"algorithm": "SHA256", "checksumValue": record["manifest"]["digest"].removeprefix("sha256:")}
    ]
    assert image["externalRefs"][0]["referenceLocator"].startswith(
        "pkg:oci/ninfer-runtime@sha256:" + record["manifest"]["digest"].removeprefix("sha256:")
    )
    assert image["primaryPackagePurpose"] == "CONTAINER"
    assert base["checksums"] == [
        {"algorithm": "SHA256", "checksumValue": record["base"]["digest"].removeprefix("sha256:")}
    ]
    assert base["filesAnalyzed"] is False
    expected = {
        f"./{f['path']}": {"SHA1": f["sha1"], "SHA256": f["sha256"]}
        for lay in record["layers"]
        if not lay["from_base"]
        for f in lay["files"]
    }
    got = {f["fileName"]: {c["algorithm"]: c["checksumValue"] for c in f["checksums"]} for f in doc["files"]}
    assert got == expected
    assert len(got) == 5
    rels = {
        (r["spdxElementId"], r["relationshipType"], r["relatedSpdxElement"]) for r in doc["relationships"]
    }
    assert (image["SPDXID"], "DESCENDANT_OF", base["SPDXID"]) in rels
    assert (base["SPDXID"], "CONTAINS", busybox["SPDXID"]) in rels
    assert {r[2] for r in rels if r[1] == "CONTAINS" and r[0] == image["SPDXID"]} == {
        base["SPDXID"],
        *(f["SPDXID"] for f in doc["files"]),
    }


def test_every_image_component_has_supplier_version_and_licence(built: Path) -> None:
    """Issue 14: the image, its base, every layer, every component and the base's BusyBox."""
    doc = _cdx(built)
    for c in [doc["metadata"]["component"], *doc["components"]]:
        assert c.get("supplier", {}).get("name"), c["bom-ref"]
        assert c.get("version"), c["bom-ref"]
        assert c.get("licenses"), c["bom-ref"]
    assert doc["metadata"]["lifecycles"] == [{"phase": "build"}]
    layers = [c for c in doc["components"] if c["bom-ref"].startswith("layer:")]
    assert all(c["version"] == c["bom-ref"].split(":", 2)[2] for c in layers)  # the layer digest


def test_busybox_of_the_sample_base_is_found_by_reading_its_layer(built: Path) -> None:
    record, doc = _record(built), _cdx(built)
    busybox = next(c for c in doc["components"] if c["name"] == "busybox-static")
    assert busybox["version"] == "1:1.35.0-4+deb12u1+b1"  # the dpkg package the base was made from
    assert busybox["licenses"] == [{"expression": "GPL-2.0-only"}]
    assert busybox["supplier"] == {"name": "Debian"}  # the banner: "BusyBox v1.35.0 (Debian 1:1.35.0-4+…)"
    # issue 35 item 5: the Debian identity a tracker matches (purl spec: epoch ':' kept, '+' encoded)
    assert (
        busybox["purl"]
        == "pkg:deb/debian/busybox-static@1:1.35.0-4%2Bdeb12u1%2Bb1?arch=amd64&distro=debian-12"
    )
    assert busybox["evidence"]["occurrences"][0]["location"] == "bin/busybox"
    assert _props(busybox)["ninfer:build-version"] == ["1:1.35.0-4+deb12u1+b1"]
    base_layer = f"layer:0:{record['layers'][0]['digest']}"
    graph = {d["ref"]: d.get("dependsOn", []) for d in doc["dependencies"]}
    assert graph[base_layer] == [busybox["bom-ref"]]
    base = next(c for c in doc["components"] if c["bom-ref"].startswith("base:"))
    assert base["licenses"] == [{"expression": "GPL-2.0-only"}]


def test_c33_c28_image_sboms_are_byte_identical_across_two_builds(
    samples: Samples, built: Path, tmp_path: Path
) -> None:
    """C33/C28: a second build gives the same SBOM bytes; serial = UUIDv5 of the image reference;
    the SPDX namespace is an absolute URI without fragment, derived from the image."""
    again = _image_build(samples, tmp_path / "again")
    for name in (IMAGE_CDX_NAME, IMAGE_SPDX_NAME, "image.json"):
        assert (again / name).read_bytes() == (built / name).read_bytes(), name
    reference = _record(built)["reference"]
    assert _cdx(built)["serialNumber"] == f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, reference)}"
    assert _cdx(built)["metadata"]["timestamp"] == "2026-11-20T00:00:00+00:00"
    ns = _spdx(built)["documentNamespace"]
    manifest_hex = _record(built)["manifest"]["digest"].removeprefix("sha256:")
    assert ns.startswith(
        "https://ghcr.io/alphastorm/ninfer-runtime/spdx/ninfer-runtime-v0.7.0-qwen38-5090-beta.2-"
    )
    assert manifest_hex in ns and "#" not in ns
    assert _spdx(built)["creationInfo"]["created"] == "2026-11-20T00:00:00Z"


def _records(out: Path) -> ImageSbomRecords:
    return image_sbom_records(read_build_result(out))


def test_c28_other_image_bytes_get_another_namespace_and_serial(built: Path) -> None:
    """C28/C33: identifiers derive from the image: another manifest digest, another namespace and serial."""
    records = _records(built)
    zeros = "sha256:" + "0" * 64
    other = dataclasses.replace(records, manifest_digest=zeros, reference=f"{records.image}@{zeros}")
    a = json.loads(image_spdx(records, epoch=RELEASE_EPOCH, supplier="OMP NInfer", creator_tool="t-1"))
    b = json.loads(image_spdx(other, epoch=RELEASE_EPOCH, supplier="OMP NInfer", creator_tool="t-1"))
    assert a["documentNamespace"] != b["documentNamespace"]
    ca = json.loads(_cyclonedx(records))
    cb = json.loads(_cyclonedx(other))
    assert ca["serialNumber"] != cb["serialNumber"]


def test_sbom_epoch_must_be_the_images_created_time(built: Path) -> None:
    """Timestamps come only from the source-date epoch the image was built with (DESIGN.md §5)."""
    records = _records(built)
    with pytest.raises(InputError) as err:
        _cyclonedx(records, epoch=RELEASE_EPOCH + 1)
    assert "created" in str(err.value)
    with pytest.raises(InputError):
        image_spdx(records, epoch=RELEASE_EPOCH + 1, supplier="OMP NInfer", creator_tool="t-1")


def test_malformed_digest_or_inconsistent_reference_is_refused(built: Path) -> None:
    records = dataclasses.replace(_records(built), base_digest="sha256:abc")
    with pytest.raises(InputError) as err:
        _cyclonedx(records)
    assert "base_digest" in str(err.value)
    records = dataclasses.replace(_records(built), manifest_digest="sha256:" + "0" * 64)
    with pytest.raises(InputError) as err:
        image_spdx(records, epoch=RELEASE_EPOCH, supplier="OMP NInfer", creator_tool="t-1")
    assert "reference" in str(err.value)


def _synthetic(files_by_layer: list[tuple[str, list[LayerFile]]]) -> ImageSbomRecords:
    layers = [
        ImageLayerRecord(
            name="base-0", digest="sha256:" + "a" * 64, diff_id="sha256:" + "b" * 64, size=10,
            media_type="application/vnd.oci.image.layer.v1.tar+gzip", from_base=True, files=(),
        )
    ]  # fmt: skip
    for i, (name, files) in enumerate(files_by_layer):
        layers.append(
            ImageLayerRecord(
                name=name, digest=f"sha256:{i + 1:064x}", diff_id=f"sha256:{i + 101:064x}", size=20,
                media_type="application/vnd.oci.image.layer.v1.tar+gzip", from_base=False, files=tuple(files),
            )
        )  # fmt: skip
    return ImageSbomRecords(
        image="127.0.0.1/test/engine", reference="127.0.0.1/test/engine@sha256:" + "c" * 64, version="v1.0.0",
        revision="7a25cd72f490183e4113f1e84e68e36d653ddd28", created="2023-11-14T22:13:20Z",
        manifest_digest="sha256:" + "c" * 64, config_digest="sha256:" + "d" * 64, base_name="",
        base_digest="sha256:" + "e" * 64, layers=tuple(layers),
        components=(
            ImageComponentRecord(
                name="engine-config", kind="engine-config", path="etc/engine.toml", size=1,
                sha256="1" * 64, sha1="2" * 40, semantic_sha256="3" * 64,
            ),
        ),
        profile_id="p", config_semantic_sha256="3" * 64,
    )  # fmt: skip


def test_a_path_two_of_our_layers_write_is_listed_once_as_the_later_layer_leaves_it() -> None:
    """The SPDX inventory describes the image's file system: the later layer's file replaces the earlier."""
    old = LayerFile(path="etc/engine.toml", mode=0o644, size=1, sha256="4" * 64, sha1="5" * 40, origin="x")
    new = LayerFile(
        path="etc/engine.toml", mode=0o644, size=1, sha256="1" * 64, sha1="2" * 40, origin="rendered:config:p"
    )
    records = _synthetic([("first", [old]), ("second", [new])])
    doc = json.loads(image_spdx(records, epoch=1700000000, supplier="OMP NInfer", creator_tool="t-1"))
    assert [(f["fileName"], f["checksums"][1]["checksumValue"]) for f in doc["files"]] == [
        ("./etc/engine.toml", "1" * 64)
    ]
    assert doc["files"][0]["comment"].startswith(f"layer second sha256:{2:064x}")
    assert doc["packages"][1]["name"] == "base"  # a base without a name is still listed by digest
    cdx = json.loads(_cyclonedx(records, epoch=1700000000))
    graph = {d["ref"]: d.get("dependsOn", []) for d in cdx["dependencies"]}
    assert graph[f"layer:1:sha256:{1:064x}"] == []  # other bytes at that path: not the engine config
    assert graph[f"layer:2:sha256:{2:064x}"] == ["engine-config:engine-config"]


def test_failed_sbom_step_leaves_no_output(
    samples: Samples, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SBOMs are atomic with the image: if they fail, ``--out`` does not appear (nor any staging dir)."""

    def boom(*_a: object, **_k: object) -> None:
        raise InputError("sbom step failed on purpose")

    monkeypatch.setattr(ninfer_release.sbom, "image_sboms", boom)
    out = tmp_path / "o"
    req = request_for(
        load_recipe(RECIPE), inputs=samples.inputs, base=str(samples.base), out=out, epoch=RELEASE_EPOCH,
        rendered=samples.rendered,
    )  # fmt: skip
    with pytest.raises(InputError, match="on purpose"):
        build_image_with_sboms(req)
    assert list(tmp_path.iterdir()) == []


def test_library_build_matches_the_cli_and_reports_sbom_digests(samples: Samples, tmp_path: Path) -> None:
    """``build_image_with_sboms`` returns the SBOM bytes it wrote, by digest."""
    import hashlib

    out = tmp_path / "lib"
    req = request_for(
        load_recipe(RECIPE), inputs=samples.inputs, base=str(samples.base), out=out, epoch=RELEASE_EPOCH,
        rendered=samples.rendered,
    )  # fmt: skip
    outcome = build_image_with_sboms(req)
    assert outcome.result.out == out and outcome.result.layout == out / "layout"
    assert (out / IMAGE_CDX_NAME).read_bytes() == outcome.sboms.cyclonedx
    for name in (IMAGE_CDX_NAME, IMAGE_SPDX_NAME):
        data = (out / name).read_bytes()
        assert outcome.sbom_files[name] == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    assert (
        outcome.as_json()["sbom"][IMAGE_SPDX_NAME]["sha256"] == outcome.sbom_files[IMAGE_SPDX_NAME]["sha256"]
    )


def test_image_build_json_reports_the_sbom_digests(samples: Samples, tmp_path: Path) -> None:
    """``--json`` output carries the build record plus each SBOM file's SHA-256 and size."""
    import hashlib

    out = tmp_path / "j"
    res = cli(
        "--json", "image", "build", RECIPE, "--inputs", samples.inputs, "--base", samples.base, "--out", out,
        "--release", REPO / "manifests" / "v0.13.1.yaml",
    )  # fmt: skip
    ok(res)
    doc = json.loads(res.out)
    assert doc["ok"] is True and doc["out"] == str(out)
    assert doc["manifest"] == _record(out)["manifest"]
    for name in (IMAGE_CDX_NAME, IMAGE_SPDX_NAME):
        data = (out / name).read_bytes()
        assert doc["sbom"][name] == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def test_a_base_licence_that_is_not_spdx_is_left_unknown_not_fatal(
    built: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A DEP-5 name such as ``GPL-2+`` is what the base says, not an SPDX id: no licence, a warning."""
    from ninfer_release.containers import BasePackage

    records = _records(built)
    base_layer = next(layer for layer in records.layers if layer.from_base)
    odd = BasePackage(
        name="libfoo", version="1.0-1", build="1.0-1", supplier="Debian", license="GPL-2+",
        path="var/lib/dpkg/status", sha256="0" * 64, layer_digest=base_layer.digest, purl_type="deb",
        purl_namespace="debian",
    )  # fmt: skip
    doc = json.loads(_cyclonedx(dataclasses.replace(records, base_packages=(odd,))))
    libfoo = next(c for c in doc["components"] if c["name"] == "libfoo")
    assert "licenses" not in libfoo and libfoo["purl"] == "pkg:deb/debian/libfoo@1.0-1"
    assert "libfoo: licence 'GPL-2+' is not an SPDX expression; left unknown" in caplog.text
