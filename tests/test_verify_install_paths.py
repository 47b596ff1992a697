"""The route's install paths are plain absolute Windows paths and its ``create_dirs`` are exactly
the folders the layout needs (hostile review, 2026-12-04: ``C:\\PROGRA~1``, ``C:\\ProgramData\\..``,
``C:/Program Files`` and ``\\\\?\\C:\\Program Files`` all passed the "nothing writable under
Program Files" rule, which compares text; a ``create_dirs`` entry anywhere on the disk passed)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flow_support import TAGS, release_out, stem
from ninfer_release.releases import _standalone_verifier as standalone
from ninfer_release.winpaths import plain_path_problem
from reseal_support import ORDER, _propagate, both_fail, both_verdicts

LANE = "rtx4090"

PLAIN = [
    "C:\\ProgramData\\OMP NInfer\\v0.7.0-qwen38-4090-beta.2\\models\\qwen3_8_27b-v3.ninfer",
    "D:\\a b\\c.d",
    "c:\\x",
]
NOT_PLAIN = [
    ("C:\\PROGRA~1\\OMP NInfer", "8.3 short name"),
    ("C:\\ProgramData\\..\\Program Files\\x", "'..'"),
    ("C:\\ProgramData\\.\\x", "'..'"),
    ("C:/Program Files/x", "drive letter"),
    ("C:\\ProgramData/x", "refuses"),
    ("\\\\?\\C:\\Program Files\\x", "drive letter"),
    ("\\\\server\\share\\x", "drive letter"),
    ("C:\\a\\\\b", "empty"),
    ("C:\\a\\", "empty"),
    ("C:\\", "drive letter"),
    ("C:x", "drive letter"),
    ("C:\\a.\\b", "dot or space"),
    ("C:\\a \\b", "dot or space"),
    ("C:\\a:b", "refuses"),
    ("C:\\a\x01b", "refuses"),
    ("1:\\a", "drive letter"),
]


@pytest.mark.parametrize("path", PLAIN)
def test_a_plain_path_is_plain_to_both_verifiers(path: str) -> None:
    assert plain_path_problem(path) is None
    assert standalone._plain_path_problem(path) is None


@pytest.mark.parametrize(("path", "says"), NOT_PLAIN)
def test_each_other_spelling_is_refused_by_both_verifiers(path: str, says: str) -> None:
    ours, alone = plain_path_problem(path), standalone._plain_path_problem(path)
    assert ours is not None and says in ours, ours
    assert ours == alone


def _set(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, edit: Callable[[Any], None]) -> Path:
    """The sample set with its route block edited by ``edit`` and every binding re-sealed."""
    d = tmp_path / "set"
    shutil.copytree(release_out(tmp_path_factory) / LANE, d)
    s = stem(LANE)
    before = {ext: (d / f"{s}.{ext}").read_bytes() for ext in ORDER}
    route = d / f"{s}.route.json"
    doc = json.loads(route.read_bytes())
    edit(doc)
    route.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    _propagate(d, s, TAGS[LANE], before)
    return d


def _short_program_root(doc: Any) -> None:
    install = doc["install"]
    for key in ("program_root", "config"):
        install[key] = install[key].replace("C:\\Program Files\\", "C:\\PROGRA~1\\")


def _extra_dir(doc: Any) -> None:
    doc["install"]["create_dirs"].append("C:\\Windows\\System32\\evil")


def _no_dir(doc: Any) -> None:
    doc["install"]["create_dirs"].pop()


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda doc: None, None),
        (_short_program_root, "install.program_root 'C:\\\\PROGRA~1\\\\OMP NInfer"),
        (_extra_dir, "install.create_dirs is not the folders"),
        (_no_dir, "install.create_dirs is not the folders"),
    ],
    ids=["control", "program-root-8.3", "create-dirs-extra", "create-dirs-missing"],
)
def test_a_resealed_route_with_other_paths_fails_both_verifiers(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, edit: Callable[[Any], None], says: str | None
) -> None:
    d = _set(tmp_path_factory, tmp_path, edit)
    if says is None:  # the control: re-sealing alone leaves nothing for verify to find
        (ours, ours_err), (alone, alone_err) = both_verdicts(d, tmp_path)
        assert (ours, alone) == (0, 0), (ours_err, alone_err)
        return
    both_fail(d, tmp_path, says)


def test_the_route_constants_are_the_layouts_in_both_verifiers(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """One set of values: what the build writes (the sample route, the profiles' key spec and
    cache grants), what verify compares with, what the stdlib verifier compares with."""
    from ninfer_release import winpaths
    from ninfer_release.profiles import KEY_FILE_SPEC
    from ninfer_release.profiles._layout import CACHE_GRANTS

    route = json.loads((release_out(tmp_path_factory) / LANE / f"{stem(LANE)}.route.json").read_bytes())
    account = route["service"]["account"]
    assert account == "NT SERVICE\\OMP-NInfer-" + route["component_tag"]
    cache_acl = {"inheritance": "enabled", "grants": [g.as_dict() for g in CACHE_GRANTS]}
    assert cache_acl == standalone.ROUTE_CACHE_ACL
    assert standalone.with_account(cache_acl, account) == route["install"]["cache_acl"]
    key = {k: v for k, v in route["bearer_key"].items() if k != "file"}
    assert KEY_FILE_SPEC.as_dict() == standalone.ROUTE_KEY_SPEC
    assert standalone.with_account(standalone.ROUTE_KEY_SPEC, account) == key
    assert standalone.route_plan_problems(route) == ([], account)
    assert (standalone.PROGRAM_ROOT, standalone.DATA_ROOT) == (winpaths.PROGRAM_ROOT, winpaths.DATA_ROOT)
    assert standalone.SERVICE_ACCOUNT_MARK == winpaths.SERVICE_ACCOUNT_MARK


def _program_root_elsewhere(doc: Any) -> None:
    install = doc["install"]
    old = install["program_root"]
    install["program_root"] = "C:\\Windows\\System32"
    install["config"] = install["config"].replace(old, "C:\\Windows\\System32")


def _set_key(field: str, value: Any) -> Callable[[Any], None]:
    def edit(doc: Any) -> None:
        doc["bearer_key"][field] = value

    return edit


def _everyone_on_the_cache(doc: Any) -> None:
    doc["install"]["cache_acl"]["grants"] = [{"principal": "Everyone", "rights": "full"}]


def _extract_elsewhere(doc: Any) -> None:
    doc["install"]["extract"]["destination"] = "C:\\Windows\\System32"


def _service_as_system(doc: Any) -> None:
    doc["service"]["account"] = "NT AUTHORITY\\SYSTEM"


def _start_another_executable(doc: Any) -> None:
    doc["service"]["executable"] = "C:\\Windows\\System32\\cmd.exe"


def _gpu_uuid_into_the_shipped_config(doc: Any) -> None:
    doc["parameters"][0]["file"] = doc["install"]["config"]


def _model_store_of_another_digest(doc: Any) -> None:
    doc["model"]["store_path"] = doc["model"]["store_path"].replace(doc["model"]["sha256"], "0" * 64)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_program_root_elsewhere, "install.program_root is 'C:\\\\Windows\\\\System32', not "),
        (_extract_elsewhere, "extract is not the step the route's own paths and model give"),
        (_service_as_system, "service is not the step the route's own paths and model give"),
        (_start_another_executable, "service is not the step"),
        (_gpu_uuid_into_the_shipped_config, "parameters is not the step"),
        (_model_store_of_another_digest, "model_store is not the step"),
        (_everyone_on_the_cache, "install.cache_acl is not the cache ACL the layout sets"),
        (_set_key("random_bytes", 1), "bearer_key.random_bytes is not the key file's 32"),
        (_set_key("overwrite_existing", True), "bearer_key.overwrite_existing is not the key file's False"),
        (
            _set_key(
                "acl",
                {
                    "grants": [{"name": "Everyone", "rights": "full", "sid": "S-1-1-0"}],
                    "inheritance": "enabled",
                },
            ),
            "bearer_key.acl is not the key file's",
        ),
    ],
    ids=[
        "program-root-system32",
        "extract",
        "service-as-system",
        "start-cmd",
        "gpu-uuid-into-shipped-config",
        "model-store-other-digest",
        "cache-acl-everyone",
        "key-1-byte",
        "key-overwrite",
        "key-acl-everyone",
    ],
)
def test_a_resealed_route_with_other_install_instructions_fails_both_verifiers(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, edit: Callable[[Any], None], says: str
) -> None:
    """Second hostile review (2026-12-04): each of these verified OK in both verifiers."""
    d = _set(tmp_path_factory, tmp_path, edit)
    both_fail(d, tmp_path, says)
