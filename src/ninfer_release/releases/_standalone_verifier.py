#!/usr/bin/env python3
"""Verify an OMP NInfer native asset set with nothing but Python >= 3.9 and its standard library.

Written out verbatim by ``ninfer-release export-verifier --out FILE`` for installer hosts where
ninfer-release and its SBOM libraries are not installed. Usage::

    python3 -I ninfer-verify.py SET_DIR [--sums-sha256 HEX] [--json] [--require-qualified]

Exit 0: every check holds. Exit 5: the set fails (one ``FAIL:`` line per finding on stderr);
with ``--require-qualified``, also when the set is unqualified. Exit 2: usage. Exit 4: SET_DIR is
not a directory. Like ``verify``, the verdict always states the qualification:
``OK (qualified: 2 pass, 0 fail, 1 not applicable; N checks)`` or ``OK (unqualified draft, not for
release; N checks)``, never a plain ``OK``; and ``--json`` carries ``ok``, ``qualification``,
``draft``, ``gates`` (the gate counts), ``bindings`` (receipts per binding), ``checked``,
``warnings`` and ``failures``.

It checks what ``ninfer-release verify`` checks: the exact 11 files; ``SHA256SUMS`` (GNU text,
GNU binary ``*name`` and BSD tag forms; CRLF and a UTF-8 BOM tolerated, as Windows tooling writes
them) listing exactly the 10 entries with every digest holding; the package zip's structure
(central directory, local headers, overlaps, unsafe names, bomb ratios, CRC-32 and sizes of every
member, inflated with zlib) and its layout (exactly the records ninfer-release writes, tiling the
file; member names that a Windows install keeps apart); the cross-bindings
that need no SBOM library (config asset = zip copy = profile = manifest = qualification = route;
SPDX asset = zip copy; SPDX file checksums = zip members; CycloneDX hashes = zip DLLs; manifest
sizes and digests = entries 1-9; provenance subjects = entries 1-7; provenance staged inputs =
zip members; route package = zip; route
model = model entry; route endpoint = the config's ``[server]``) and the identity every record
states (component tag, lane, profile, source, release, release-instance id, qualification, CUDA
arch/version/runtime, epoch) and the contract's constants (``_CONSTANTS``). In place of the
SBOM libraries it checks, for SPDX 2.3, the schema's and spdx-tools' validation's rules for
every object shape ninfer-release writes (``SPDX_SHAPES``, :func:`spdx_problems`) and, for
CycloneDX 1.6, the schema's rules
(``CDX_SHAPES``); it refuses any other field, so it is stricter than ``verify`` on an SPDX field
spdx-tools' parser ignores. A licence expression's grammar, its ``LicenseRef-`` ids (declared)
and its other ids are checked, the last against the SPDX licence list embedded here
(``SPDX_LICENSE_IDS``, ``SPDX_EXCEPTION_IDS``), as ``verify`` does (a misspelt ``Apache-2.1``
fails both). Differential tests run this file beside
``ninfer-release verify`` over tampered and fully re-sealed sets: they agree on every accept and
reject, except those deliberately stricter refusals.

This file is the package module ``ninfer_release.releases._standalone_verifier``: it imports
nothing from the package, and the export writes its bytes unchanged, so the two cannot drift.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import sys
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

try:  # Python >= 3.11: the config is read by the TOML parser ``verify`` reads it with
    import tomllib
except ImportError:  # Python 3.9 and 3.10: :func:`_simple_toml`
    tomllib = None  # type: ignore[assignment]

#: One central-directory entry: name, flags, method, crc32, compressed size, size, header offset,
#: data offset.
Member = tuple[str, int, int, int, int, int, int, int]

SUMS_NAME = "SHA256SUMS"
ENTRY_SUFFIXES = (
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
#: The entries the component manifest binds by size and SHA-256, in order (entries 1-9: all but
#: itself), and the entries the provenance names as its subjects (entries 1-7): the asset
#: contract's named sets (``ninfer_release.releases._contract``), as data.
COMPONENT_MANIFEST_ENTRIES = (
    ".zip",
    ".spdx.json",
    ".cdx.json",
    ".config.toml",
    ".profile.json",
    ".model.json",
    ".qualification.json",
    ".provenance.json",
    ".route.json",
)
PROVENANCE_SUBJECTS = (
    ".zip",
    ".spdx.json",
    ".cdx.json",
    ".config.toml",
    ".profile.json",
    ".model.json",
    ".qualification.json",
)
ZIP_CONFIG_PATH = "config/ninfer.toml"
ZIP_NOTICE_PATH = "NOTICE.txt"
SHIPPED_FOLDERS = ("bin/", "licenses/")
#: What every route states that no input changes: the cache root's ACL and the bearer key's form
#: and ACL (its file aside), ``<service-account>`` standing for :func:`route_plan`'s ``account``
#: (``ninfer-release verify`` reads these; ``profiles.install_layout`` and ``profiles.KEY_FILE_SPEC``
#: write them, a test keeps them equal).
SERVICE_ACCOUNT_MARK = "<service-account>"
ROUTE_CACHE_ACL: dict[str, Any] = {
    "grants": [{"name": SERVICE_ACCOUNT_MARK, "rights": "modify"}],
    "inheritance": "enabled",
}
ROUTE_KEY_SPEC: dict[str, Any] = {
    "acl": {
        "grants": [
            {"name": "NT AUTHORITY\\SYSTEM", "rights": "full", "sid": "S-1-5-18"},
            {"name": "BUILTIN\\Administrators", "rights": "full", "sid": "S-1-5-32-544"},
            {"name": SERVICE_ACCOUNT_MARK, "rights": "read"},
        ],
        "inheritance": "disabled",
    },
    "alphabet": "0123456789abcdef",
    "bom": False,
    "encoding": "ascii",
    "file_bytes": 64,
    "generated_chars": 64,
    "min_bytes": 32,
    "overwrite_existing": False,
    "random_bytes": 32,
    "randomness": "operating-system CSPRNG",
    "stored_in_assets": False,
    "trailing_newline": False,
}
#: The Windows service of a component release: the Service Control Manager creates its virtual
#: account ``NT SERVICE\\<name>`` with the service, a named principal (issue 33 item 9).
SERVICE_NAME = "OMP-NInfer-<component>"
#: The engine inside the package, relative to the program root.
ENGINE_EXECUTABLE = "bin\\ninfer-server.exe"
#: The host-only values (the GPU UUID) the installer writes under the data root. The shipped
#: config stays byte-exact (its SHA-256 is published and bound by the receipts; the program root
#: is read-only), so the engine is given this file by its start arguments.
MACHINE_CONFIG = "machine.toml"
#: The shared, content-addressed model store beside the data roots: ``…\\sha256\\<hex>\\<file>``.
MODEL_STORE_ROOT = "C:\\ProgramData\\OMP NInfer\\models"
#: A GPU UUID as ``nvidia-smi --query-gpu=uuid`` prints it.
GPU_UUID_PATTERN = "^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
#: How long the service may take to answer its health check after start (loading a 20 GB model).
HEALTH_TIMEOUT_MS = 600_000


def with_account(doc: Any, account: str) -> Any:
    """``doc`` (JSON values) with every :data:`SERVICE_ACCOUNT_MARK` string replaced by ``account``."""
    if isinstance(doc, dict):
        return {k: with_account(v, account) for k, v in doc.items()}
    if isinstance(doc, list):
        return [with_account(v, account) for v in doc]
    return account if doc == SERVICE_ACCOUNT_MARK else doc


def route_plan_problems(route: dict[str, Any]) -> tuple[list[str], str]:
    """Why a decoded route block's executable steps (``install.extract``, ``install.machine_config``,
    ``parameters``, ``service``, the ``model`` store fields) are not :func:`route_plan`'s for its
    own tag, package name, install paths, endpoint and model (one line per block; empty: they
    are), and its service account. ``ninfer-release verify`` and this file both report these."""
    install, model = _get(route, "install") or {}, _get(route, "model") or {}
    plan = route_plan(
        tag=str(route.get("component_tag")),
        archive=str(_get(route, "package", "name")),
        install=install if isinstance(install, dict) else {},
        endpoint=_get(route, "endpoint") if isinstance(_get(route, "endpoint"), dict) else {},
        model=model if isinstance(model, dict) else {},
    )
    got = {
        "extract": _get(route, "install", "extract"),
        "machine_config": _get(route, "install", "machine_config"),
        "parameters": route.get("parameters"),
        "service": route.get("service"),
        "model_store": {k: _get(route, "model", k) for k in plan["model_store"]},
    }
    problems = [
        f"{key} is not the step the route's own paths and model give: {plan[key]!r}"
        for key in sorted(plan)
        if got[key] != plan[key]
    ]
    return problems, str(plan["service"]["account"])


def route_plan(
    *, tag: str, archive: str, install: dict[str, Any], endpoint: dict[str, Any], model: dict[str, Any]
) -> dict[str, Any]:
    """The executable steps of a route, from its tag, package name (``archive``), ``install`` paths
    (``program_root``, ``data_root``, ``config``, ``key_file``), ``endpoint`` (``host``, ``port``)
    and ``model`` (``sha256``, ``store_as``): ``{"extract", "machine_config", "parameters",
    "service", "model_store"}`` as the route block writes them (schema 3; docs/install-layout.md).
    The one rule: the build writes these blocks with it and verify compares a route's to it."""
    program, data = str(install.get("program_root")), str(install.get("data_root"))
    machine = data + "\\" + MACHINE_CONFIG
    name = SERVICE_NAME.replace("<component>", tag)
    store_dirs = [
        MODEL_STORE_ROOT,
        MODEL_STORE_ROOT + "\\sha256",
        f"{MODEL_STORE_ROOT}\\sha256\\{model.get('sha256')}",
    ]
    return {
        "extract": {
            "archive": archive,
            "destination": program,
            "format": "zip",
            "member_root": "",
            "overwrite_existing": False,
            "preserve_paths": True,
        },
        "machine_config": machine,
        "parameters": [
            {
                "describes": "UUID of the GPU named by hardware.gpu that this component is bound to",
                "file": machine,
                "key": "gpu.uuid",
                "name": "gpu_uuid",
                "pattern": GPU_UUID_PATTERN,
                "supplied_by": "installer",
            }
        ],
        "service": {
            "account": "NT SERVICE\\" + name,
            "account_kind": "virtual-service-account",
            "arguments": ["--config", install.get("config"), "--machine-config", machine],
            "executable": program + "\\" + ENGINE_EXECUTABLE,
            "health": {
                "auth": "bearer",
                "expect_status": 200,
                "key_file": install.get("key_file"),
                "method": "GET",
                "timeout_ms": HEALTH_TIMEOUT_MS,
                "url": f"http://{endpoint.get('host')}:{endpoint.get('port')}/health",
            },
            "name": name,
            "working_dir": data,
        },
        "model_store": {
            "link": "hardlink",
            "reuse": "size-and-sha256",
            "store_dirs": store_dirs,
            "store_path": f"{store_dirs[-1]}\\{model.get('store_as')}",
        },
    }


PROGRAM_ROOT = "C:\\Program Files\\OMP NInfer\\<component>"
DATA_ROOT = "C:\\ProgramData\\OMP NInfer\\<component>"

#: A Windows ACL as the route block writes it (``cache_acl`` and ``bearer_key.acl``).
_ACL_SHAPE = (
    True,
    "object",
    {
        "inheritance": (True, "str", None),
        "grants": (
            True,
            "array",
            [
                {
                    "rights": (True, "str", None),
                    "sid": (False, "str", None),
                    "name": (False, "str", None),
                    "principal": (False, "str", None),
                }
            ],
        ),
    },
)
_LONGEST_PATH_SHAPE = (
    True,
    "object",
    {"path": (True, "str", None), "chars": (True, "int", None), "limit": (True, "int", None)},
)
_ROOT_BUDGET_SHAPE = (
    True,
    "object",
    {"root": (True, "str", None), "longest_file": _LONGEST_PATH_SHAPE, "longest_dir": _LONGEST_PATH_SHAPE},
)
#: ``path_budget`` as both the route block and the component manifest hold it.
_PATH_BUDGET_SHAPE = (
    True,
    "object",
    {
        "max_path": (True, "int", None),
        "max_dir_path": (True, "int", None),
        "units": (True, "str", None),
        "checkpoint_file_name_chars": (True, "int", None),
        "extended_length": (True, "bool", None),
        "program_root": _ROOT_BUDGET_SHAPE,
        "data_root": _ROOT_BUDGET_SHAPE,
    },
)

#: The keys of each JSON record ``verify`` reads as a typed record (``ninfer_release.releases._records``),
#: by entry suffix: key -> (required, JSON types, nested): the types ``|``-joined (``null``, ``bool``,
#: ``int``, ``number``, ``str``, ``array``, ``object``; ``any``: not constrained; a key that is not
#: required is absent or of these types, never ``null``), nested ``None``, the keys of a nested
#: record, ``[keys]`` (a list of records), or the types of each element of an array or each value
#: of an object. ``verify`` refuses an unknown or missing key or a value of another type, at any
#: depth, so this file does too. Generated from the record types; a test keeps them equal.
RECORD_SHAPES: dict[str, dict[str, Any]] = {
    ".profile.json": {
        "profile_schema": (True, "int", None),
        "profile_id": (True, "str", None),
        "kind": (True, "str", None),
        "lane": (True, "str", None),
        "component_tag": (True, "null|str", None),
        "carried": (True, "bool", None),
        "carried_from": (True, "null|str", None),
        "gpu": (True, "str", None),
        "cuda_arch": (True, "null|str", None),
        "config_schema": (True, "null|int", None),
        "model": (True, "object", {"local_name": (True, "str", None), "sha256": (True, "str", None)}),
        "context_tokens": (True, "null|int", None),
        "kv_capacity_tokens": (True, "null|int", None),
        "kv_cache_dtype": (True, "null|str", None),
        "speculation": (
            True,
            "null|object",
            {
                "mode": (True, "str", None),
                "lm_head_draft": (True, "bool", None),
                "dflash2": (True, "bool", None),
            },
        ),
        "concurrent_requests": (True, "null|int", None),
        "pending_timeout_ms": (True, "null|int", None),
        "extra_device_state_slots": (True, "null|int", None),
        "prefill_chunk_tokens": (True, "null|int", None),
        "shared_host_budget_bytes": (True, "null|int", None),
        "shared_host_budget_mib": (True, "null|str", None),
        "admission_headroom_mib": (True, "null|int", None),
        "keep_warm_ms": (True, "null|int", None),
        "vision": (True, "null|bool", None),
        "host_memory_floor_mib": (True, "null|int", None),
        "gpu_power_limit_w": (True, "null|int", None),
        "endpoint": (
            True,
            "object",
            {
                "host": (True, "str", None),
                "port": (True, "int", None),
                "auth": (True, "str", None),
                "key_file": (True, "str", None),
                "key_min_bytes": (True, "int", None),
                "key_generation": (True, "str", None),
            },
        ),
        "checkpoint": (
            True,
            "object",
            {
                "root": (True, "null|str", None),
                "dir_template": (True, "null|str", None),
                "mount": (True, "null|str", None),
                "schema": (True, "null|int", None),
                "require_origin_auth": (True, "bool", None),
            },
        ),
        "strict_origin_config": (True, "null|str", None),
        "flags": (True, "array", "str"),
        "args": (True, "array", "str"),
        "config": (
            True,
            "object",
            {
                "path": (True, "str", None),
                "hash_kind": (True, "str", None),
                "bytes_sha256": (True, "str", None),
            },
        ),
    },
    ".model.json": {
        "schema": (True, "int", None),
        "binding": (True, "str", None),
        "repository": (True, "str", None),
        "revision": (True, "str", None),
        "artifact": (True, "str", None),
        "url": (True, "str", None),
        "size": (True, "int", None),
        "sha256": (True, "str", None),
        "local_name": (True, "str", None),
        "container_version": (True, "int", None),
    },
    ".qualification.json": {
        "schema": (True, "int", None),
        "lane": (True, "str", None),
        "component_tag": (True, "str", None),
        "status": (True, "str", None),
        "bound_to": (
            True,
            "object",
            {
                "source_commit": (True, "str", None),
                "profile_id": (True, "str", None),
                "config_bytes_sha256": (True, "str", None),
                "package_sha256": (True, "str", None),
            },
        ),
        "receipts": (
            True,
            "array",
            [
                {
                    "name": (True, "str", None),
                    "sha256": (True, "str", None),
                    "binding": (True, "str", None),
                    "bound": (
                        True,
                        "object",
                        {
                            "source_commit": (True, "str", None),
                            "profile_id": (True, "str", None),
                            "config_sha256": (True, "str", None),
                            "package_sha256": (True, "str", None),
                        },
                    ),
                    "gates": (True, "object", "str"),
                    "measurements": (True, "object", "bool|int|number|str"),
                    "scratch": (
                        False,
                        "object",
                        {
                            "variant": (True, "str", None),
                            "equivalence": (
                                False,
                                "object",
                                {
                                    "package_sha256": (True, "str", None),
                                    "config_sha256": (True, "str", None),
                                    "evidence": (True, "str", None),
                                },
                            ),
                        },
                    ),
                }
            ],
        ),
        "gates": (
            True,
            "object",
            {
                "merged": (True, "object", "str"),
                "counts": (True, "object", "int"),
                "failed": (True, "array", "str"),
            },
        ),
        "rollback": (
            True,
            "object",
            {"state": (True, "null|str", None), "directions": (True, "null|int", None)},
        ),
    },
    ".provenance.json": {
        "_type": (True, "str", None),
        "subject": (True, "array", [{"name": (True, "str", None), "digest": (True, "object", "str")}]),
        "predicateType": (True, "str", None),
        "predicate": (
            True,
            "object",
            {
                "buildDefinition": (
                    True,
                    "object",
                    {
                        "buildType": (True, "str", None),
                        "externalParameters": (
                            True,
                            "object",
                            {
                                "release": (True, "str", None),
                                "lane": (True, "str", None),
                                "component_tag": (True, "str", None),
                                "profile_id": (True, "str", None),
                                "definition_sha256": (True, "str", None),
                            },
                        ),
                        "internalParameters": (
                            True,
                            "object",
                            {
                                "source_date_epoch": (True, "int", None),
                                "cuda_arch": (True, "str", None),
                                "cuda_version": (True, "str", None),
                                "config_bytes_sha256": (True, "str", None),
                                "model_sha256": (True, "str", None),
                                "deflate_engine": (True, "str", None),
                            },
                        ),
                        "resolvedDependencies": (
                            True,
                            "array",
                            [
                                {
                                    "name": (True, "str", None),
                                    "uri": (False, "str", None),
                                    "digest": (False, "object", "str"),
                                }
                            ],
                        ),
                    },
                ),
                "runDetails": (
                    True,
                    "object",
                    {
                        "builder": (
                            True,
                            "object",
                            {"id": (True, "str", None), "version": (True, "object", "str")},
                        ),
                        "metadata": (True, "object", {"invocationId": (True, "str", None)}),
                    },
                ),
            },
        ),
    },
    ".route.json": {
        "schema": (True, "int", None),
        "release": (True, "str", None),
        "lane": (True, "str", None),
        "component_tag": (True, "str", None),
        "release_instance_id": (True, "str", None),
        "package": (
            True,
            "object",
            {
                "name": (True, "str", None),
                "url": (True, "str", None),
                "size": (True, "int", None),
                "sha256": (True, "str", None),
            },
        ),
        "stand_ins": (True, "array", "str"),
        "model": (
            True,
            "object",
            {
                "binding": (True, "str", None),
                "url": (True, "str", None),
                "size": (True, "int", None),
                "sha256": (True, "str", None),
                "revision": (True, "str", None),
                "store_as": (True, "str", None),
                "resume_onto_older_version": (True, "bool", None),
                "store_dirs": (True, "array", "str"),
                "store_path": (True, "str", None),
                "reuse": (True, "str", None),
                "link": (True, "str", None),
            },
        ),
        "hardware": (
            True,
            "object",
            {
                "gpu": (True, "str", None),
                "gpu_binding": (True, "str", None),
                "gpu_uuid_parameter": (True, "str", None),
                "cuda_arch": (True, "str", None),
                "cuda_version": (True, "str", None),
                "cuda_runtime_version": (True, "null|str", None),
                "host_memory_floor_mib": (True, "null|int", None),
                "gpu_power_limit_w": (True, "null|int", None),
                "exclusive": (True, "str", None),
            },
        ),
        "parameters": (
            True,
            "array",
            [
                {
                    "name": (True, "str", None),
                    "supplied_by": (True, "str", None),
                    "describes": (True, "str", None),
                    "pattern": (True, "str", None),
                    "file": (True, "str", None),
                    "key": (True, "str", None),
                }
            ],
        ),
        "install": (
            True,
            "object",
            {
                "program_root": (True, "str", None),
                "program_root_writable": (True, "bool", None),
                "extract": (
                    True,
                    "object",
                    {
                        "archive": (True, "str", None),
                        "format": (True, "str", None),
                        "member_root": (True, "str", None),
                        "destination": (True, "str", None),
                        "preserve_paths": (True, "bool", None),
                        "overwrite_existing": (True, "bool", None),
                    },
                ),
                "config": (True, "str", None),
                "machine_config": (True, "str", None),
                "config_bytes_sha256": (True, "str", None),
                "data_root": (True, "str", None),
                "create_dirs": (True, "array", "str"),
                "key_file": (True, "str", None),
                "model_path": (True, "str", None),
                "cache_root": (True, "str", None),
                "cache_acl": _ACL_SHAPE,
                "checkpoint_dir": (True, "str", None),
                "checkpoint_schema": (True, "int", None),
                "path_budget": _PATH_BUDGET_SHAPE,
            },
        ),
        "service": (
            True,
            "object",
            {
                "name": (True, "str", None),
                "account": (True, "str", None),
                "account_kind": (True, "str", None),
                "executable": (True, "str", None),
                "arguments": (True, "array", "str"),
                "working_dir": (True, "str", None),
                "health": (
                    True,
                    "object",
                    {
                        "method": (True, "str", None),
                        "url": (True, "str", None),
                        "auth": (True, "str", None),
                        "key_file": (True, "str", None),
                        "expect_status": (True, "int", None),
                        "timeout_ms": (True, "int", None),
                    },
                ),
            },
        ),
        "endpoint": (
            True,
            "object",
            {
                "host": (True, "str", None),
                "port": (True, "int", None),
                "auth": (True, "str", None),
                "loopback_only": (True, "bool", None),
            },
        ),
        "bearer_key": (
            True,
            "object",
            {
                "file": (True, "str", None),
                "min_bytes": (True, "int", None),
                "generated_chars": (True, "int", None),
                "file_bytes": (True, "int", None),
                "random_bytes": (True, "int", None),
                "randomness": (True, "str", None),
                "alphabet": (True, "str", None),
                "encoding": (True, "str", None),
                "bom": (True, "bool", None),
                "trailing_newline": (True, "bool", None),
                "overwrite_existing": (True, "bool", None),
                "acl": _ACL_SHAPE,
                "stored_in_assets": (True, "bool", None),
            },
        ),
    },
    ".manifest.json": {
        "schema": (True, "int", None),
        "release": (True, "str", None),
        "candidate_commit": (True, "str", None),
        "lane": (True, "str", None),
        "component_tag": (True, "str", None),
        "kind": (True, "str", None),
        "profile_id": (True, "str", None),
        "source_commit": (True, "str", None),
        "upstream_base": (True, "null|str", None),
        "cuda_arch": (True, "str", None),
        "cuda_version": (True, "str", None),
        "cuda_runtime_version": (True, "null|str", None),
        "config": (True, "object", {"hash_kind": (True, "str", None), "sha256": (True, "str", None)}),
        "release_instance_id": (True, "str", None),
        "qualification": (True, "str", None),
        "rollback": (
            True,
            "object",
            {"state": (True, "null|str", None), "directions": (True, "null|int", None)},
        ),
        "source_date_epoch": (True, "int", None),
        "path_budget": _PATH_BUDGET_SHAPE,
        "entries": (
            True,
            "array",
            [
                {
                    "name": (True, "str", None),
                    "url": (True, "str", None),
                    "size": (True, "int", None),
                    "sha256": (True, "str", None),
                }
            ],
        ),
    },
}
#: Bytes a JSON record or the config can legitimately be (as ``verify``: ours are 0.4-6 KiB).
MAX_RECORD_ENTRY = 1 << 20
#: An SBOM's bound: a fixed part plus one file/component entry per zip member; and the JSON
#: objects and arrays it may hold, counted as ``{`` and ``[`` bytes before it is decoded (a
#: decoded ``{}`` costs ~30x its bytes). As ``verify`` (``releases/_verify.py``).
SBOM_BASE_BYTES = 4 << 20
SBOM_BYTES_PER_MEMBER = 8 << 10
SBOM_BASE_CONTAINERS = 4096
SBOM_CONTAINERS_PER_MEMBER = 64
#: Members assumed when the zip's index cannot be read (the zip itself then fails).
FALLBACK_MEMBERS = 1024
#: SHA256SUMS: at most 512 bytes per listed line plus 4 KiB of slack, for the 10 entries.
MAX_SUMS_BYTES = 10 * 512 + 4096
#: Strict JSON (as ``ninfer_release.strictjson``): nesting, integer digits, other number literals.
MAX_DEPTH = 64
MAX_INT_DIGITS = 20
MAX_NUMBER_CHARS = 40
#: Deflate cannot exceed a ratio of about 1032:1, so a larger declared ratio is a lie.
MAX_RATIO = 1100
MAX_TOTAL = 64 << 30
MAX_CENTRAL_DIRECTORY = 64 << 20
_CHUNK = 4 << 20

_GNU = re.compile(rb"^([0-9A-Fa-f]+) ([ *])(.*)$", re.DOTALL)
_TAG = re.compile(rb"^([A-Za-z0-9-]+) \((.*)\) = ([0-9A-Fa-f]+)$", re.DOTALL)
_SHA256_TAGS = (b"SHA256", b"SHA2-256")
_BOM = b"\xef\xbb\xbf"


class Finding(Exception):
    """A structural failure that stops one check (reported as one line)."""


class Run:
    def __init__(self) -> None:
        self.checked: list[str] = []
        self.warnings: list[str] = []
        self.failures: list[str] = []
        #: The qualification record's status and gate counts, as ``verify`` reports them.
        self.qualification: str | None = None
        self.gate_counts: dict[str, int] = {}
        self.bindings: dict[str, int] = {}  # receipts per binding: public, scratch_equivalence
        self.record = ""  # the qualification record's file name, once the set's stem is known

    def fail(self, name: str, message: str) -> None:
        self.failures.append(f"{name}: {message}")

    def expect(self, cond: bool, name: str, message: str, passed: str) -> bool:
        if cond:
            self.checked.append(passed)
        else:
            self.fail(name, message)
        return cond


# --- SHA256SUMS ---------------------------------------------------------------------------------


def _unescape(raw: bytes) -> bytes | None:
    out = bytearray()
    i = 0
    while i < len(raw):
        b = raw[i]
        if b == 0x5C:
            if i + 1 >= len(raw):
                return None
            mapped = {0x5C: 0x5C, 0x6E: 0x0A, 0x72: 0x0D}.get(raw[i + 1])
            if mapped is None:
                return None
            out.append(mapped)
            i += 2
        else:
            out.append(b)
            i += 1
    return bytes(out)


def _name_problem(spelling: str, name: str) -> str:
    if "\\" in spelling:
        return f"non-portable path {spelling!r}: backslash separator"
    if "\x00" in spelling or "\n" in spelling or "\r" in spelling:
        return f"name {spelling!r} contains a control character"
    if name == "":
        return "empty name"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return f"absolute path {spelling!r}"
    parts = name.split("/")
    if ".." in parts:
        return f"path {spelling!r} leaves the directory ('..')"
    if name.startswith("./"):
        return f"path {spelling!r}: only one leading './' is accepted"
    if any(p in ("", ".") for p in parts[:-1]) or parts[-1] in ("", "."):
        return f"path {spelling!r} has an empty or '.' component"
    return ""


class _Listing:
    """The names SHA256SUMS lists so far: name -> digest, and how and where each was spelled."""

    def __init__(self) -> None:
        self.listed: dict[str, str] = {}
        self.spellings: dict[str, str] = {}
        self.lines: dict[str, int] = {}
        self.conflicted: set[str] = set()

    def add(self, number: int, spelling: str, name: str, digest: str) -> str:
        """List ``name``; a problem (``""``: none) when another line names the same file otherwise."""
        if name in self.listed or name in self.conflicted:
            if name in self.listed and self.spellings[name] == spelling and self.listed[name] == digest:
                return ""  # listed again identically: a warning in the full verifier
            first = self.lines.get(name, 0)
            self.conflicted.add(name)
            self.listed.pop(name, None)
            return f"{spelling!r} names the same file as line {first}; conflicting entries"
        self.listed[name], self.spellings[name], self.lines[name] = digest, spelling, number
        return ""


def parse_sums(data: bytes) -> tuple[dict[str, str], list[str], list[str]]:
    """``(name -> lowercase hex, warnings, errors)`` of SHA256SUMS bytes (GNU text/binary, BSD tag)."""
    warnings: list[str] = []
    errors: list[str] = []
    listing = _Listing()
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
        warnings.append("UTF-8 BOM ignored")
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    for number, body in enumerate(raw_lines, start=1):
        where = f"{SUMS_NAME}: line {number}"
        if body.endswith(b"\r"):
            body = body[:-1]
            warnings.append(where + ": CRLF line ending")
        if body == b"" or body.startswith(b"#"):
            warnings.append(where + ": blank or comment line ignored")
            continue
        parsed = _sums_line(body)
        problem = parsed if isinstance(parsed, str) else listing.add(number, *parsed)
        if problem:
            errors.append(f"{where}: {problem}")
    return listing.listed, warnings, errors


def _sums_line(body: bytes) -> tuple[str, str, str] | str:
    """``(spelling, name, lowercase hex)`` of one checksum line, or what is wrong with it."""
    escaped = body.startswith(b"\\")
    fields = _sums_fields(body[1:] if escaped else body)
    if isinstance(fields, str):
        return fields
    digest_b, name_raw = fields
    if len(digest_b) != 64:
        return f"digest has {len(digest_b)} hex characters; SHA-256 has 64"
    name_b = _unescape(name_raw) if escaped else name_raw
    if name_b is None:
        return "bad escape sequence in the name"
    try:
        spelling = name_b.decode("utf-8")
    except UnicodeDecodeError:
        return "name is not valid UTF-8"
    name = spelling[2:] if spelling.startswith("./") else spelling
    return _name_problem(spelling, name) or (spelling, name, digest_b.decode("ascii").lower())


def _sums_fields(body: bytes) -> tuple[bytes, bytes] | str:
    """``(digest, name)`` of a BSD tag line (SHA-256 only) or a GNU line, or why it is neither."""
    m = _TAG.match(body)
    if m is not None and not _GNU.match(body):
        algo = m.group(1)
        if algo.upper() not in _SHA256_TAGS:
            return "algorithm {} is not SHA-256".format(algo.decode("ascii"))
        return m.group(3), m.group(2)
    m = _GNU.match(body)
    if m is None:
        return "not a checksum line"
    return m.group(1), m.group(3)


# --- the package zip ----------------------------------------------------------------------------

_EOCD = struct.Struct("<IHHHHIIH")
_Z64_LOCATOR = struct.Struct("<IIQI")
_Z64_EOCD = struct.Struct("<IQHHIIQQQQ")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_LOCAL = struct.Struct("<IHHHHHIIIHH")


def _read_at(f: BinaryIO, offset: int, n: int) -> bytes:
    f.seek(offset)
    return f.read(n)


def _zip64(extra: bytes, want: list[str]) -> dict[str, int] | None:
    i = 0
    while i + 4 <= len(extra):
        hid, size = struct.unpack_from("<HH", extra, i)
        body = extra[i + 4 : i + 4 + size]
        if hid == 0x0001:
            if len(body) < 8 * len(want):
                return None
            return {k: struct.unpack_from("<Q", body, 8 * j)[0] for j, k in enumerate(want)}
        i += 4 + size
    return None


def zip_index(f: BinaryIO, file_size: int) -> list[Member]:
    """Central-directory entries cross-checked with their local headers; raises :class:`Finding`."""
    count, cd_size, cd_offset = _central_directory_span(f, file_size)
    cd = _read_at(f, cd_offset, cd_size)
    members = []
    i = 0
    for n in range(count):
        member, i = _central_entry(f, cd, i, (n, count), cd_offset)
        members.append(member)
    spans = sorted((m[6], m[7] + m[4], m[0]) for m in members)
    for a, b in zip(spans, spans[1:]):
        if b[0] < a[1]:
            raise Finding(f"members {a[2]!r} and {b[2]!r} overlap (zip bomb or corrupt archive)")
    return members


def _end_record_at(tail: bytes) -> int:
    """Offset in ``tail`` of the end-of-central-directory record whose comment ends the file."""
    search = len(tail)
    while True:
        pos = tail.rfind(struct.pack("<I", 0x06054B50), 0, search)
        if pos < 0:
            raise Finding("not a zip archive: no end-of-central-directory record")
        fits = pos + _EOCD.size <= len(tail)
        if fits and pos + _EOCD.size + struct.unpack_from("<H", tail, pos + 20)[0] == len(tail):
            return pos
        search = pos


def _central_directory_span(f: BinaryIO, file_size: int) -> tuple[int, int, int]:
    """``(entries, size, offset)`` of the central directory, from the end record (zip64 when
    present); raises :class:`Finding` for multi-disk, inconsistent or oversized values."""
    tail_len = min(file_size, _EOCD.size + 0xFFFF)
    tail = _read_at(f, file_size - tail_len, tail_len)
    pos = _end_record_at(tail)
    _, disk, cd_disk, n_disk, count, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, pos)
    if disk != 0 or cd_disk != 0 or n_disk != count:
        raise Finding("multi-disk archives are not supported")
    zip64 = _zip64_end_record(f, file_size - tail_len + pos - _Z64_LOCATOR.size)
    if zip64 is not None:
        count, cd_size, cd_offset = zip64
    elif count == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        raise Finding("end record needs zip64 values but there is no zip64 locator")
    if cd_size > MAX_CENTRAL_DIRECTORY or cd_offset + cd_size > file_size:
        raise Finding("central directory is outside the archive or too big")
    return count, cd_size, cd_offset


def _zip64_end_record(f: BinaryIO, locator_at: int) -> tuple[int, int, int] | None:
    """``(entries, size, offset)`` from the zip64 end record, or None when there is no locator."""
    if locator_at < 0:
        return None
    sig, _, z64_at, _ = _Z64_LOCATOR.unpack(_read_at(f, locator_at, _Z64_LOCATOR.size))
    if sig != 0x07064B50:
        return None
    rec = _read_at(f, z64_at, _Z64_EOCD.size)
    if len(rec) != _Z64_EOCD.size or _Z64_EOCD.unpack(rec)[0] != 0x06064B50:
        raise Finding("zip64 end-of-central-directory locator points at garbage")
    fields = _Z64_EOCD.unpack(rec)
    return fields[7], fields[8], fields[9]


def _central_entry(
    f: BinaryIO, cd: bytes, i: int, position: tuple[int, int], cd_offset: int
) -> tuple[Member, int]:
    """The entry at ``cd[i:]`` (entry ``n`` of ``count``) and the offset of the next one."""
    n, count = position
    if i + _CENTRAL.size > len(cd):
        raise Finding(f"central directory ends after {n} of {count} entries")
    fields = _CENTRAL.unpack_from(cd, i)
    sig, flags, method, crc, csize, usize = fields[0], fields[3], fields[4], fields[7], fields[8], fields[9]
    nlen, xlen, clen, offset = fields[10], fields[11], fields[12], fields[16]
    if sig != 0x02014B50:
        raise Finding(f"central directory entry {n} has a bad signature")
    j = i + _CENTRAL.size
    raw_name, extra = cd[j : j + nlen], cd[j + nlen : j + nlen + xlen]
    usize, csize, offset = _zip64_sizes(extra, n, (usize, csize, offset))
    name = raw_name.decode("utf-8", "replace") if flags & 0x800 else raw_name.decode("cp437")
    data_offset = _local_data_offset(f, name, raw_name, offset)
    if data_offset + csize > cd_offset:
        raise Finding(f"{name!r}: data runs past the member area")
    return (name, flags, method, crc, csize, usize, offset, data_offset), j + nlen + xlen + clen


def _zip64_sizes(extra: bytes, n: int, sizes: tuple[int, int, int]) -> tuple[int, int, int]:
    """``(size, compressed size, header offset)`` with each 0xFFFFFFFF taken from the zip64 extra."""
    usize, csize, offset = sizes
    want = [k for k, v in (("size", usize), ("csize", csize), ("offset", offset)) if v == 0xFFFFFFFF]
    if not want:
        return sizes
    z64 = _zip64(extra, want)
    if z64 is None:
        raise Finding(f"entry {n} needs a zip64 extra field but has none")
    return z64.get("size", usize), z64.get("csize", csize), z64.get("offset", offset)


def _local_data_offset(f: BinaryIO, name: str, raw_name: bytes, offset: int) -> int:
    """Where the member's data starts, after a local header that names the same member."""
    local = _read_at(f, offset, _LOCAL.size)
    if len(local) != _LOCAL.size or _LOCAL.unpack(local)[0] != 0x04034B50:
        raise Finding(f"{name!r}: no local header at offset {offset}")
    name_len, extra_len = int(_LOCAL.unpack(local)[9]), int(_LOCAL.unpack(local)[10])
    if _read_at(f, offset + _LOCAL.size, name_len) != raw_name:
        raise Finding(f"{name!r}: local header names another member")
    return offset + _LOCAL.size + name_len + extra_len


def unsafe_name(name: str) -> str:
    if "\\" in name:
        return "backslash in member name"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "absolute member name"
    if any(ord(c) < 32 for c in name):
        return "control character in member name"
    parts = name.split("/")
    if ".." in parts:
        return "'..' in member name"
    if any(p in ("", ".") for p in parts):
        return "empty or '.' component in member name"
    return ""


def _member_problems(member: Member) -> list[str]:
    name, flags, method, _crc, csize, usize = member[:6]
    problems = []
    why = unsafe_name(name)
    if why:
        problems.append(why + "; not read")
    if flags & 0x1:
        problems.append("encrypted member")
    if method not in (0, 8):
        problems.append(f"compression method {method} is not stored (0) or deflate (8)")
    if method == 0 and usize != csize:
        problems.append("stored member with different compressed and uncompressed sizes")
    if usize > max(csize, 1) * MAX_RATIO:
        problems.append(f"declares {usize} bytes from {csize} compressed; not inflated")
    return problems


class _Inflated:
    """SHA-256, CRC-32 and size of a member's bytes as they inflate, and the bytes if kept;
    at most ``limit`` bytes (the size its header declares)."""

    def __init__(self, limit: int, keep: bool) -> None:
        self.sha256 = hashlib.sha256()
        self.sha1 = hashlib.sha1(usedforsecurity=False)  # the SPDX SHA1 of the member is compared
        self.crc = 0
        self.size = 0
        self.limit = limit
        self.kept = bytearray() if keep else None

    def add(self, chunk: bytes) -> str:
        """Take ``chunk``; a problem (``""``: none) once the bytes pass ``limit``."""
        self.size += len(chunk)
        if self.size > self.limit:
            return f"inflates past {self.limit} bytes"
        self.sha256.update(chunk)
        self.sha1.update(chunk)
        self.crc = zlib.crc32(chunk, self.crc)
        if self.kept is not None:
            self.kept += chunk
        return ""


def _inflate(f: BinaryIO, member: Member, keep: bool) -> tuple[_Inflated, list[str], bytes | None]:
    """(digests, problems, bytes if ``keep``) of one member, inflated with zlib."""
    _name, _flags, method, crc32, csize, usize, _off, data_offset = member
    f.seek(data_offset)
    out = _Inflated(usize, keep)
    inflater = zlib.decompressobj(-15) if method == 8 else None
    try:
        problem = _feed(f, csize, inflater, out) or _finish(inflater, out)
    except zlib.error as exc:
        problem = f"cannot be read: {exc}"
    if problem:
        return out, [problem], None
    problems = []
    if out.size != usize:
        problems.append(f"inflates to {out.size} bytes, header declares {usize}")
    elif out.crc != crc32:
        problems.append(f"CRC-32 {out.crc:08x} does not match the header's {crc32:08x}")
    kept = bytes(out.kept) if out.kept is not None and not problems else None
    return out, problems, kept


def _feed(f: BinaryIO, left: int, inflater: Any, out: _Inflated) -> str:
    """Read ``left`` compressed bytes into ``out`` (inflated unless ``inflater`` is None)."""
    while left:
        block = f.read(min(_CHUNK, left))
        if not block:
            return "cannot be read: archive ends inside the member data"
        left -= len(block)
        problem = out.add(block) if inflater is None else _inflate_block(inflater, block, out)
        if problem:
            return problem
    return ""


def _inflate_block(inflater: Any, block: bytes, out: _Inflated) -> str:
    """Inflate ``block`` into ``out`` one bounded piece at a time, each at most one byte past the
    size the member declares: a stream that inflates to gigabytes is refused as soon as it passes
    that size, with memory bounded by the size and one piece."""
    while block:
        piece = inflater.decompress(block, min(_CHUNK, max(out.limit - out.size, 0) + 1))
        block = inflater.unconsumed_tail
        problem = out.add(piece)
        if problem:
            return problem
    return ""


def _finish(inflater: Any, out: _Inflated) -> str:
    """Flush the inflater into ``out``; the deflate stream must end exactly at the member's end."""
    if inflater is None:
        return ""
    problem = out.add(inflater.flush())
    if problem:
        return problem
    if not inflater.eof:
        return "cannot be read: deflate stream is truncated"
    if inflater.unused_data:
        return "cannot be read: data after the end of the deflate stream"
    return ""


#: The writer's fixed header values (ninfer_release.packaging._zipformat): made by Unix 4.5,
#: external attributes of a regular 0644 file.
_MADE_BY = (3 << 8) | 45
_FILE_ATTR = 0o100644 << 16


def _needed(method: int, zip64: bool) -> int:
    return 45 if zip64 else 20 if method == 8 else 10


def _layout_problems(f: BinaryIO, file_size: int) -> list[str]:
    """How the zip departs from the one layout ninfer-release writes: each central entry and
    local header rebuilt from the entry's own values and compared byte for byte (no foreign
    extra field, comment, attribute or flag; local = central), the records tiling the file
    (nothing before, between or after them), the end records the writer's."""
    count, cd_size, cd_offset = _central_directory_span(f, file_size)
    cd = _read_at(f, cd_offset, cd_size)
    out: list[str] = []
    i = pos = 0
    for _ in range(count):
        if len(out) >= 5:
            return out
        if i + _CENTRAL.size > len(cd):
            return [*out, "central directory entries do not follow each other"]
        fields = _CENTRAL.unpack_from(cd, i)
        method, dtime, ddate, crc = fields[4], fields[5], fields[6], fields[7]
        nlen, xlen, clen = fields[10], fields[11], fields[12]
        j = i + _CENTRAL.size
        raw, extra = cd[j : j + nlen], cd[j + nlen : j + nlen + xlen]
        usize, csize, offset = _zip64_sizes(extra, 0, (fields[9], fields[8], fields[16]))
        name = raw.decode("utf-8", "replace")
        flags = 0 if raw.isascii() else 0x800
        zip64 = usize >= 0xFFFFFFFF or csize >= 0xFFFFFFFF or offset >= 0xFFFFFFFF
        big = [v for v in (usize, csize, offset) if v >= 0xFFFFFFFF]
        x = struct.pack(f"<HH{len(big)}Q", 1, 8 * len(big), *big) if big else b""
        central = _CENTRAL.pack(
            0x02014B50, _MADE_BY, _needed(method, zip64), flags, method, dtime, ddate, crc,
            min(csize, 0xFFFFFFFF), min(usize, 0xFFFFFFFF), len(raw), len(x), 0, 0, 0, _FILE_ATTR,
            min(offset, 0xFFFFFFFF),
        ) + raw + x  # fmt: skip
        if name.encode("utf-8") != raw or cd[i : j + nlen + xlen + clen] != central:
            out.append(f"member {name!r}: central directory entry is not the one the writer makes for it")
        i = j + nlen + xlen + clen
        if offset != pos:
            out.append(f"member {name!r}: local header at offset {offset}, not {pos}")
        sizes64 = usize >= 0xFFFFFFFF or csize >= 0xFFFFFFFF
        lx = struct.pack("<HHQQ", 1, 16, usize, csize) if sizes64 else b""
        local = _LOCAL.pack(
            0x04034B50, _needed(method, zip64), flags, method, dtime, ddate, crc,
            0xFFFFFFFF if sizes64 else csize, 0xFFFFFFFF if sizes64 else usize, len(raw), len(lx),
        ) + raw + lx  # fmt: skip
        if _read_at(f, offset, len(local)) != local:
            out.append(f"member {name!r}: local header differs from its central directory entry")
        pos = offset + len(local) + csize
    if i != len(cd) or cd_offset != pos:
        out.append("central directory is not right after the last member's data")
    ends = b""
    if count >= 0xFFFF or cd_offset >= 0xFFFFFFFF or cd_size >= 0xFFFFFFFF:
        ends = _Z64_EOCD.pack(
            0x06064B50, _Z64_EOCD.size - 12, _MADE_BY, 45, 0, 0, count, count, cd_size, cd_offset
        )
        ends += _Z64_LOCATOR.pack(0x07064B50, 0, cd_offset + cd_size, 1)
    ends += _EOCD.pack(
        0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF), min(cd_size, 0xFFFFFFFF),
        min(cd_offset, 0xFFFFFFFF), 0,
    )  # fmt: skip
    if _read_at(f, cd_offset + cd_size, len(ends) + 1) != ends:
        out.append("the end records are not the writer's (an archive comment or appended bytes)")
    return out


_DEVICES = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"} | {
    f"{kind}{d}" for kind in ("COM", "LPT") for d in "123456789\u00b9\u00b2\u00b3"
}


#: A Windows 8.3 short name (``NINFER~1.EXE``): NTFS may give another file of the package this
#: alias, so extracting such a member can overwrite it.
_SHORT_NAME = re.compile(r"^[^.~]{1,7}~[0-9]{1,7}(\.[^.]{0,3})?$")
#: Invisible formatting characters (Unicode Cf), as the build refuses them in names
#: (``packaging/_paths.py``, ``INVISIBLE``; a test keeps them equal).
_INVISIBLE = re.compile(
    r"[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def _name_rule_problems(names: list[str]) -> list[str]:
    """The package path rules a Windows install needs, as the build checks them (DESIGN §6):
    NFC, no reserved device name, no ``<>:"|?*``, no component ending in a dot or space, no two
    names (or folders) equal under case folding, no file that is also a folder."""
    import unicodedata

    out: list[str] = []
    files: dict[str, str] = {}
    folders: dict[str, str] = {}
    for name in names:
        if unicodedata.normalize("NFC", name) != name:
            out.append(f"member {name!r} is not in Unicode NFC form")
        parts = name.split("/")
        for part in parts:
            if any(c in '<>:"|?*' for c in part):
                out.append(f"member {name!r}: component {part!r} contains a character Windows forbids")
            elif not part.isascii() and _INVISIBLE.search(part):
                out.append(f"member {name!r}: component {part!r} contains invisible formatting characters")
            elif part.endswith((".", " ")):
                out.append(f"member {name!r}: component {part!r} ends in a dot or space (Windows strips it)")
            elif part.split(".", 1)[0].rstrip(" ").upper() in _DEVICES:
                out.append(f"member {name!r}: component {part!r} is a reserved Windows device name")
            elif _SHORT_NAME.match(part):
                out.append(f"member {name!r}: component {part!r} has the form of a Windows 8.3 short name")
        key = unicodedata.normalize("NFC", name).casefold()
        other = files.setdefault(key, name)
        if other != name:
            out.append(f"member {name!r} collides with {other!r} on a case-insensitive file system")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            spelled = folders.setdefault(unicodedata.normalize("NFC", prefix).casefold(), prefix)
            if spelled != prefix:
                out.append(f"folder {prefix!r} collides with {spelled!r} on a case-insensitive file system")
    out += [f"member {path!r} is a file but also a folder" for key, path in files.items() if key in folders]
    return out


def scan_zip(
    path: str, keep: dict[str, int]
) -> tuple[dict[str, str], list[str], dict[str, bytes], dict[str, str]]:
    """``(members name -> sha256, problems, kept name -> bytes, members name -> sha1)``; raises
    :class:`Finding`."""
    members: dict[str, str] = {}
    sha1s: dict[str, str] = {}
    problems: list[str] = []
    kept: dict[str, bytes] = {}
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        index = zip_index(f, size)
        layout = _layout_problems(f, size) + _name_rule_problems([m[0] for m in index])
        if layout:
            raise Finding("not the package layout: " + "; ".join(layout[:5]))
        seen = set()
        total = 0
        for member in index:
            name = member[0]
            checks = _member_problems(member)
            if name in seen:
                checks.append("member name appears more than once in the archive")
            seen.add(name)
            total += member[5]
            if total > MAX_TOTAL:
                checks.append(f"archive declares more than {MAX_TOTAL} bytes in total; not inflated")
            if checks:
                members[name] = hashlib.sha256().hexdigest()
                sha1s[name] = hashlib.sha1(usedforsecurity=False).hexdigest()
            else:
                out, checks, data = _inflate(f, member, name in keep and member[5] <= keep[name])
                members[name] = out.sha256.hexdigest()
                sha1s[name] = out.sha1.hexdigest()
                if data is not None and name not in kept:
                    kept[name] = data
            problems.extend(f"member {name!r}: {p}" for p in checks)
        counts: dict[str, int] = {}
        for member in index:
            counts[member[0]] = counts.get(member[0], 0) + 1
        for name in keep:
            if counts.get(name, 0) != 1:
                kept.pop(name, None)
    return members, problems, kept, sha1s


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                return h.hexdigest()
            h.update(chunk)


# --- the set ------------------------------------------------------------------------------------


def _get(doc: Any, *path: str) -> Any:
    cur = doc
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


class _Refused(ValueError):
    """A strict-JSON rule broken while decoding."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Refused("duplicate key (JSON inputs are read strictly)")
    return obj


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def _int(text: str) -> int:
    if len(text) - (text[0] == "-") > MAX_INT_DIGITS:
        raise _Refused(f"an integer of more than {MAX_INT_DIGITS} digits")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _Refused(f"a number literal of more than {MAX_NUMBER_CHARS} characters")
    value = float(text)
    if value in (float("inf"), float("-inf")) or value != value:
        raise _Refused(f"{text} overflows to a non-finite number")
    return value


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_constant=_constant, parse_int=_int, parse_float=_float, strict=True
)


def _too_deep(doc: Any) -> bool:
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def strict_json(data: bytes) -> Any:
    """Decode UTF-8 JSON as strictly as ``verify`` does; raises ValueError naming the rule."""
    if data.startswith(_BOM):
        raise _Refused("starts with a UTF-8 BOM")
    try:
        doc = _DECODER.decode(data.decode("utf-8"))
    except RecursionError:
        raise _Refused(f"nested deeper than {MAX_DEPTH} levels") from None
    if data.count(b"[") + data.count(b"{") > MAX_DEPTH and _too_deep(doc):
        raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
    return doc


def _load_json(run: Run, name: str, data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        doc = strict_json(data)
    except (UnicodeDecodeError, ValueError) as exc:
        run.fail(name, f"not strict UTF-8 JSON: {exc}")
        return None
    if not isinstance(doc, dict):  # every record of a set is a JSON object
        run.fail(name, "top level must be a JSON object")
        return None
    return doc


def _bounds(zip_path: str, entries: list[str]) -> tuple[dict[str, int], int]:
    """The most bytes each non-zip file can legitimately hold, known before reading it, and the
    most JSON objects and arrays an SBOM or the provenance can hold."""
    members = FALLBACK_MEMBERS
    if os.path.isfile(zip_path) and not os.path.islink(zip_path):
        try:
            with open(zip_path, "rb") as f:
                f.seek(0, 2)
                members = len(zip_index(f, f.tell()))
        except (Finding, OSError, struct.error):
            members = FALLBACK_MEMBERS
    bounds = dict.fromkeys(entries, MAX_RECORD_ENTRY)
    # The SBOMs and the provenance (it lists resolved inputs per shipped file) grow with the
    # package: verify's bounds exactly (``releases/_verify.py``, ``_entry_bounds``).
    bounds[entries[1]] = bounds[entries[2]] = bounds[entries[7]] = (
        SBOM_BASE_BYTES + SBOM_BYTES_PER_MEMBER * members
    )
    bounds[SUMS_NAME] = MAX_SUMS_BYTES
    return bounds, SBOM_BASE_CONTAINERS + SBOM_CONTAINERS_PER_MEMBER * members


def verify(directory: str, expected_sums_sha256: str | None = None) -> Run:
    """Verify the set in ``directory``; returns a :class:`Run` (ok when it has no failures)."""
    run = Run()
    try:
        _verify(run, directory, expected_sums_sha256)
    except Exception as exc:  # noqa: BLE001 - any crash on hostile input is a rejection
        run.fail(directory, f"cannot be verified: {type(exc).__name__}: {exc}")
    return run


class Names:
    """The file names of one set, from its stem, as the asset contract names them
    (``ninfer_release.releases._contract``; this file cannot import it, a test keeps them equal)."""

    def __init__(self, stem: str) -> None:
        self.stem = stem
        self.entries = [stem + s for s in ENTRY_SUFFIXES]
        self.every = [*self.entries, SUMS_NAME]
        (
            self.zip,
            self.spdx,
            self.cdx,
            self.config,
            self.profile,
            self.model,
            self.qualification,
            self.provenance,
            self.route,
            self.manifest,
        ) = self.entries
        self.component_manifest_entries = [stem + s for s in COMPONENT_MANIFEST_ENTRIES]
        self.provenance_subjects = [stem + s for s in PROVENANCE_SUBJECTS]
        self.spdx_member = f"sbom/{stem}.spdx.json"


class Files:
    """What was read of a set: SHA-256 and size of each file, the bytes of each small entry, the
    package's members (name -> SHA-256 of the inflated bytes) and the members kept in memory."""

    def __init__(self) -> None:
        self.digests: dict[str, str] = {}
        self.sizes: dict[str, int] = {}
        self.small: dict[str, bytes] = {}
        self.members: dict[str, str] = {}
        #: The package's members, name -> SHA-1 of the inflated bytes (the SPDX SHA1 is compared).
        self.sha1s: dict[str, str] = {}
        self.kept: dict[str, bytes] = {}
        #: The package's structure was read to the end (its member list is the zip's, even empty).
        self.scanned = False


class Records:
    """The set's records as read strictly (``None``: missing or refused): the config's bytes and
    the profile, manifest, qualification, provenance, route and model JSON objects."""

    def __init__(self, run: Run, names: Names, small: dict[str, bytes]) -> None:
        self.config = small.get(names.config)
        self.profile = _load_record(run, names.profile, small.get(names.profile))
        self.manifest = _load_record(run, names.manifest, small.get(names.manifest))
        self.qualification = _load_qualification(run, names.qualification, small.get(names.qualification))
        _note_qualification(run, self.qualification)
        self.provenance = _load_record(run, names.provenance, small.get(names.provenance))
        self.route = _load_record(run, names.route, small.get(names.route))
        self.model = _load_record(run, names.model, small.get(names.model))


def _load_record(run: Run, name: str, data: bytes | None) -> Any:
    """The strict JSON object ``name`` holds, or None; each key its record type does not have,
    each required key it lacks and each value of another type, at any depth, is a failure
    (``RECORD_SHAPES``), and then the record is None, as in ``verify``: the later checks read only
    records of their shape."""
    return _shaped(run, name, _load_json(run, name, data))


def _load_qualification(run: Run, name: str, data: bytes | None) -> Any:
    """The qualification record, as :func:`_load_record`; its schema is read first (only schema 2
    binds the package bytes: another is refused as such, not field by field)."""
    doc = _load_json(run, name, data)
    if isinstance(doc, dict) and doc.get("schema") != 2:
        run.fail(name, f"schema {doc.get('schema')!r}: only schema 2 binds the package bytes")
        return None
    return _shaped(run, name, doc)


def _shaped(run: Run, name: str, doc: Any) -> Any:
    if not isinstance(doc, dict):
        return None
    shape = next(v for k, v in RECORD_SHAPES.items() if name.endswith(k))
    problems = list(_shape_problems(doc, shape, ""))
    for problem in problems:
        run.fail(name, problem)
    return None if problems else doc


def _shape_problems(doc: dict[str, Any], shape: dict[str, Any], where: str) -> Iterator[str]:
    """Unknown and missing keys of ``doc``, values of another JSON type, and the same in its
    nested records, under ``shape``."""
    for key in doc:
        if key not in shape:
            yield f"{where}{key}: unknown field"
    for key, (required, kinds, nested) in shape.items():
        if key not in doc:
            if required:
                yield f"{where}{key}: missing"
        elif not _fits(doc[key], kinds):
            yield f"{where}{key}: expected {kinds.replace('|', ' or ')}, got {_json_type(doc[key])}"
        elif nested is not None:
            yield from _nested_problems(doc[key], nested, f"{where}{key}")


def _fits(value: Any, kinds: str) -> bool:
    """Whether ``value`` is of one of the JSON ``kinds`` (an integer is also a ``number``)."""
    allowed = kinds.split("|")
    kind = _json_type(value)
    return "any" in allowed or kind in allowed or (kind == "int" and "number" in allowed)


def _json_type(value: Any) -> str:
    """``null``, ``bool``, ``int``, ``number`` (a fraction), ``str``, ``array`` or ``object``."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else "bool"
    if isinstance(value, (int, float)):
        return "int" if isinstance(value, int) else "number"
    return "str" if isinstance(value, str) else "array" if isinstance(value, list) else "object"


def _nested_problems(value: Any, nested: Any, where: str) -> Iterator[str]:
    """A nested record (``nested`` a dict of keys), list of records (``[keys]``), or the JSON
    types of each element of an array or value of an object (a string); ``value`` is of the
    field's JSON type already (:func:`_shape_problems`), null where that allows it."""
    if isinstance(value, dict) and isinstance(nested, dict):
        yield from _shape_problems(value, nested, where + ".")
    elif isinstance(nested, str) and isinstance(value, (list, dict)):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if not _fits(item, nested):
                at = f"{where}.{key}" if isinstance(value, dict) else f"{where}[{key}]"
                yield f"{at}: expected {nested.replace('|', ' or ')}, got {_json_type(item)}"
    elif isinstance(nested, list) and isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, dict):
                yield from _shape_problems(item, nested[0], f"{where}[{i}].")
            else:
                yield f"{where}[{i}]: expected object, got {_json_type(item)}"


def _verify(run: Run, directory: str, expected_sums_sha256: str | None) -> None:
    """The checks in order: the 11 files, their bytes, the package, SHA256SUMS, the SBOMs, then
    every record's bindings and identity. Failures land in ``run``."""
    names = _set_names(run, directory)
    if names is None:
        return
    files = _read_files(run, directory, names)
    _check_sums(run, names, files, expected_sums_sha256)
    # A zip with no members is no package: its checks run and fail, never a skip.
    have_zip = os.path.isfile(os.path.join(directory, names.zip)) and files.scanned
    _check_spdx(run, names, files, have_zip)
    _check_cdx(run, names, files, have_zip)
    records = Records(run, names, files.small)
    _check_config(run, names, files, records, have_zip)
    _check_manifest_entries(run, names, files, records.manifest)
    if have_zip and isinstance(records.profile, dict):
        _check_generated_members(run, names, files, records.profile.get("profile_id"))
    _check_provenance(run, names, files, records.provenance)
    _identity(run, names, records, files.digests.get(names.zip))
    _content_bindings(run, names, files, records)
    _constants(run, names, records)
    if isinstance(records.route, dict) and records.config is not None and isinstance(records.manifest, dict):
        instance = records.manifest.get("release_instance_id")
        _route_paths(run, names.route, names.config, records.route, records.config, instance)
    _check_route(run, names, files, records)


def _set_names(run: Run, directory: str) -> Names | None:
    """The set's names from its one ``*.zip``; fails each missing, irregular or extra file."""
    try:
        listing = sorted(os.listdir(directory))
    except OSError as exc:
        run.fail(directory, "cannot list: %s" % (exc.strerror or exc))
        return None
    zips = [n for n in listing if n.endswith(".zip")]
    if len(zips) != 1:
        run.fail(directory, "expected exactly one package '*.zip' in the set")
        return None
    names = Names(zips[0][: -len(".zip")])
    run.record = names.qualification
    for n in names.every:
        p = os.path.join(directory, n)
        if not os.path.isfile(p) or os.path.islink(p):
            run.fail(n, "missing from the set (or not a regular file)")
    for n in listing:
        if n not in names.every:
            run.fail(n, "not part of the asset set (exactly 10 entries + SHA256SUMS)")
    if not run.failures:
        run.checked.append(f"set: exactly the 11 files of {names.stem}")
    return names


def _read_files(run: Run, directory: str, names: Names) -> Files:
    """Hash every file (the small ones read whole, within their bound), then scan the package."""
    files = Files()
    zip_path = os.path.join(directory, names.zip)
    bounds, containers = _bounds(zip_path, names.entries)
    for n in names.every:
        p = os.path.join(directory, n)
        if os.path.isfile(p):
            _read_file(run, files, n, p, None if n == names.zip else bounds[n])
    for n in (names.spdx, names.cdx, names.provenance):  # they grow with the package
        data = files.small.get(n)
        count = 0 if data is None else data.count(b"{") + data.count(b"[")
        if count > containers:
            message = f"{count} JSON objects and arrays ('{{' and '[' bytes), more than the {containers}"
            run.fail(n, f"{message} such an entry can hold; not decoded")
            del files.small[n]
    if os.path.isfile(zip_path):
        try:
            keep = {ZIP_CONFIG_PATH: bounds[names.config], names.spdx_member: bounds[names.spdx]}
            files.members, problems, files.kept, files.sha1s = scan_zip(zip_path, keep)
            files.scanned = True
        except (Finding, OSError) as exc:
            files.members, problems = {}, [str(exc)]
        for msg in problems:
            run.fail(names.zip, msg)
    return files


def _read_file(run: Run, files: Files, name: str, path: str, bound: int | None) -> None:
    """Size and SHA-256 of one file; its bytes too unless ``bound`` is None (the package, streamed).
    Never a skip: a file larger than its bound fails, as what cannot be checked completely."""
    files.sizes[name] = os.stat(path).st_size
    if bound is None:
        files.digests[name] = _sha256_file(path)
    elif files.sizes[name] > bound:
        run.fail(
            name, f"{files.sizes[name]} bytes, larger than the {bound} bytes such an entry can be; not read"
        )
    else:
        with open(path, "rb") as f:
            files.small[name] = f.read(bound + 1)
        if len(files.small[name]) > bound:
            run.fail(name, "grew while being read")
        files.digests[name] = hashlib.sha256(files.small[name]).hexdigest()


def _check_sums(run: Run, names: Names, files: Files, expected: str | None) -> None:
    """SHA256SUMS lists exactly the 10 entries and each digest holds; ``expected`` pins its own."""
    sums = files.small.get(SUMS_NAME)
    if sums is not None:
        listed, warnings, errors = parse_sums(sums)
        run.warnings.extend(warnings)
        run.failures.extend(errors)
        for n in names.entries:
            if n not in listed:
                run.fail(SUMS_NAME, f"does not list {n!r}")
            elif n in files.digests:
                have = files.digests[n]
                message = f"SHA-256 mismatch: SHA256SUMS lists {listed[n]}, file has {have}"
                run.expect(listed[n] == have, n, message, f"{n}: OK")
        for n in listed:
            if n not in names.entries:
                run.fail(SUMS_NAME, f"lists {n!r}, which is not one of the 10 entries")
    if expected is not None and SUMS_NAME in files.digests:
        run.expect(
            files.digests[SUMS_NAME] == expected.lower(),
            SUMS_NAME,
            f"digest {files.digests[SUMS_NAME]} is not the expected {expected}",
            "SHA256SUMS: matches the expected digest",
        )


def _check_spdx(run: Run, names: Names, files: Files, have_zip: bool) -> None:
    """An SPDX 2.3 document (see :func:`spdx_problems`), equal to the package's copy, whose file
    inventory is the members, each once with its SHA-256."""
    spdx = files.small.get(names.spdx)
    if spdx is None:
        return
    doc = _load_json(run, names.spdx, spdx)
    problems = spdx_problems(doc, spdx) if doc is not None else []
    for msg in problems:
        run.fail(names.spdx, msg)
    if not have_zip:
        return
    inner = _member(run, names.zip, files.kept, files.members, names.spdx_member)
    if inner is not None:
        run.expect(
            inner == spdx, names.spdx, "differs from the copy inside the package", f"{names.spdx}: copy"
        )
    if doc is not None and not problems:
        _check_spdx_files(run, names, files, doc)


def _check_spdx_files(run: Run, names: Names, files: Files, doc: dict[str, Any]) -> None:
    """Every member but the SPDX copy listed once, with its SHA1 and SHA-256; nothing else listed."""
    listed, refused = _spdx_files(doc)
    for msg in refused:
        run.fail(names.spdx, msg)
    if refused:
        return
    inside = {k: v for k, v in files.members.items() if k != names.spdx_member}
    for path in sorted(set(inside) - set(listed)):
        run.fail(names.spdx, f"package member {path!r} is not in the file inventory")
    for path in sorted(set(listed) - set(inside)):
        run.fail(names.spdx, f"lists {path!r}, which is not in the package")
    for path in sorted(set(listed) & set(inside)):
        if listed[path][1] != inside[path]:
            run.fail(names.spdx, f"SHA-256 of {path!r} differs from the package member")
        # SPDX 2.3 requires the SHA1 of every file; the verification code is made of them (§7.9).
        if listed[path][0] != files.sha1s.get(path):
            run.fail(names.spdx, f"SHA1 of {path!r} differs from the package member")


def _check_cdx(run: Run, names: Names, files: Files, have_zip: bool) -> None:
    """A CycloneDX 1.6 document (see :func:`_cdx_problems`) whose evidence is the package's
    members, each once with its SHA-256, and whose root carries the package's SHA-256."""
    cdx = files.small.get(names.cdx)
    if cdx is None:
        return
    doc = _load_json(run, names.cdx, cdx)
    problems = _cdx_problems(doc, cdx) if doc is not None else []
    for msg in problems:
        run.fail(names.cdx, msg)
    if problems or not have_zip:
        return
    hashes, refused = _cdx_hashes(doc)
    root, root_refused = _cdx_root_sha256(doc)
    for msg in refused + root_refused:
        run.fail(names.cdx, msg)
    if refused or root_refused:
        return
    for path, sha in sorted(hashes.items()):
        if path not in files.members:
            run.fail(names.cdx, f"names {path!r}, which is not in the package")
        elif files.members[path] != sha:
            run.fail(names.cdx, f"SHA-256 of {path!r} differs from the package member")
    for path in sorted(set(files.members) - set(hashes)):
        run.fail(names.cdx, f"package member {path!r} is listed by no component")
    if root != files.digests.get(names.zip):
        run.fail(names.cdx, "metadata.component SHA-256 is not the package's")


def _note_qualification(run: Run, qualification: Any) -> None:
    """Keep what the verdict states: the record's status, gate counts and receipts per binding."""
    if not isinstance(qualification, dict):
        return
    status, counts = qualification.get("status"), _get(qualification, "gates", "counts")
    run.qualification = status if status in ("qualified", "unqualified") else None
    if isinstance(counts, dict) and all(type(v) is int for v in counts.values()):
        run.gate_counts = {str(k): v for k, v in counts.items()}
    receipts = qualification.get("receipts")
    if isinstance(receipts, list):
        kinds = [r.get("binding") for r in receipts if isinstance(r, dict)]
        run.bindings = {k: kinds.count(k) for k in ("public", "scratch_equivalence")}


def _check_config(run: Run, names: Names, files: Files, records: Records, have_zip: bool) -> None:
    """The config asset is the package's ``config/ninfer.toml`` and every record binds its SHA-256."""
    if records.config is None:
        return
    config_sha = files.digests[names.config]
    if have_zip:
        inner = _member(run, names.zip, files.kept, files.members, ZIP_CONFIG_PATH)
        if inner is not None:
            message = "differs from the package's config/ninfer.toml"
            run.expect(inner == records.config, names.config, message, "config copy")
    for doc_name, doc, field_path in (
        (names.profile, records.profile, ("config", "bytes_sha256")),
        (names.manifest, records.manifest, ("config", "sha256")),
        (names.qualification, records.qualification, ("bound_to", "config_bytes_sha256")),
        (names.route, records.route, ("install", "config_bytes_sha256")),
    ):
        if doc is not None:
            bound = _get(doc, *field_path)
            message = f"binds config SHA-256 {bound}, not {config_sha}"
            run.expect(bound == config_sha, doc_name, message, doc_name)


def _check_generated_members(run: Run, names: Names, files: Files, profile_id: object) -> None:
    """Every member outside the shipped folders (bin/, licenses/: bound by the provenance) is one
    the build generates (config, profile, SPDX copy, notices), each of those is there, and the
    package's profile is the profile asset's bytes."""
    if not isinstance(profile_id, str):
        run.fail(names.profile, "profile_id: missing or not a string")
        return
    profile = "profile/" + profile_id + ".json"
    generated = sorted((ZIP_CONFIG_PATH, profile, names.spdx_member, ZIP_NOTICE_PATH))
    before = len(run.failures)
    for member in files.members:
        if not member.startswith(SHIPPED_FOLDERS) and member not in generated:
            message = f"member {member!r} is neither a staged file ({', '.join(SHIPPED_FOLDERS)}) nor one"
            run.fail(names.zip, f"{message} the build generates ({', '.join(generated)})")
    for member in generated:
        if member not in files.members:
            run.fail(names.zip, f"has no member {member!r} (the build generates it)")
    if profile in files.members and files.members[profile] != files.digests.get(names.profile):
        run.fail(names.profile, f"differs from the package's {profile}")
    if len(run.failures) == before:
        run.checked.append("generated members; profile copy")


def _check_manifest_entries(run: Run, names: Names, files: Files, manifest: Any) -> None:
    """The component manifest lists the entries it binds (1-9), in order, with their sizes and digests."""
    if manifest is None:
        return
    listed = _get(manifest, "entries")
    got = [e.get("name") for e in listed] if isinstance(listed, list) else None
    want = names.component_manifest_entries
    if not run.expect(
        got == want, names.manifest, f"entries are {got}, expected entries 1-9", "manifest entries"
    ):
        return
    for e in listed:
        n = e["name"]
        if n in files.digests and (e.get("sha256") != files.digests[n] or e.get("size") != files.sizes[n]):
            run.fail(names.manifest, f"size/SHA-256 recorded for {n!r} differ from the file")


def _check_provenance(run: Run, names: Names, files: Files, provenance: Any) -> None:
    """The provenance is an in-toto Statement v1 whose subjects are entries 1-7 with their digests."""
    if provenance is None:
        return
    subjects = {
        s.get("name"): _get(s, "digest", "sha256")
        for s in provenance.get("subject", [])
        if isinstance(s, dict)
    }
    want = {n: files.digests.get(n) for n in names.provenance_subjects}
    run.expect(subjects == want, names.provenance, "subjects do not match entries 1-7", "provenance subjects")
    run.expect(
        provenance.get("_type") == "https://in-toto.io/Statement/v1",
        names.provenance,
        "is not an in-toto Statement v1",
        "provenance type",
    )
    # The staged inputs under the shipped folders (bin/, licenses/: the native recipe ships them
    # under their staged paths) are exactly the members there, each with the member's SHA-256.
    deps = _get(provenance, "predicate", "buildDefinition", "resolvedDependencies")
    before = len(run.failures)
    seen: set[str] = set()
    for dep in deps if isinstance(deps, list) else []:
        name = dep.get("name") if isinstance(dep, dict) else None
        if not isinstance(name, str) or not name.startswith(tuple("staged/" + f for f in SHIPPED_FOLDERS)):
            continue
        member = name[7:]
        if member in seen:
            run.fail(names.provenance, f"resolvedDependencies lists {name} twice")
        elif member not in files.members:
            run.fail(names.provenance, f"resolvedDependencies {name}: the package does not ship it")
        elif _get(dep, "digest", "sha256") != files.members[member]:
            message = f"resolvedDependencies {name}: SHA-256 differs from the package member"
            run.fail(names.provenance, message)
        seen.add(member)
    for member in files.members:
        if member.startswith(SHIPPED_FOLDERS) and member not in seen:
            run.fail(names.provenance, f"package member {member!r} is no staged input (by SHA-256) of it")
    if len(run.failures) == before:
        run.checked.append(f"provenance staged inputs = package members ({len(seen)})")


def _check_route(run: Run, names: Names, files: Files, records: Records) -> None:
    """The route block names the package by name, size and SHA-256, and binds the model entry."""
    route = records.route
    if route is None or names.zip not in files.digests:
        return
    pkg = _get(route, "package") or {}
    run.expect(
        pkg.get("sha256") == files.digests[names.zip]
        and pkg.get("size") == files.sizes[names.zip]
        and pkg.get("name") == names.zip,
        names.route,
        "package name/size/SHA-256 differ from the zip",
        "route package",
    )
    model = records.model
    if model is not None:
        rm = _get(route, "model") or {}
        run.expect(
            rm.get("sha256") == model.get("sha256")
            and rm.get("size") == model.get("size")
            and rm.get("store_as") == model.get("local_name")
            and rm.get("url") == model.get("url")
            and rm.get("revision") == model.get("revision"),
            names.route,
            "model binding differs from the model entry",
            "route model",
        )


def _member(
    run: Run, zip_name: str, kept: dict[str, bytes], members: dict[str, str], name: str
) -> bytes | None:
    if name in kept:
        return kept[name]
    run.fail(zip_name, f"cannot read member {name!r}" if name in members else f"member {name!r} is missing")
    return None


def _spdx_file_sums(name: str, checks: list[Any], problems: list[str]) -> dict[str, str]:
    """Algorithm -> lowercase value of one file's checksums; why they are not the ones
    ninfer-release writes (another algorithm, one given twice) appended to ``problems``."""
    sums: dict[str, str] = {}
    where = f"files[{name}].checksums"
    for c in checks:
        alg = str(c.get("algorithm")) if isinstance(c, dict) else ""
        if alg not in _SPDX_FILE_CHECKSUMS:
            problems.append(f"{where}: {alg!r} is not SHA1 or SHA256, the checksums ninfer-release writes")
        elif alg in sums:
            problems.append(f"{where}: {alg} is given more than once")
        else:
            sums[alg] = str(c.get("checksumValue")).lower()
    return sums


#: The file checksums ninfer-release writes (``sbom/_spdx.py`` ``FILE_CHECKSUMS``): these, each once.
_SPDX_FILE_CHECKSUMS = ("SHA1", "SHA256")


def _spdx_files(doc: dict[str, Any]) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """``(path -> (SHA1, SHA256), problems)`` of the document's files: each has exactly the
    checksums ninfer-release writes, each once (a second SHA256 is a digest a consumer taking it
    reads unchecked), and is listed once."""
    out: dict[str, tuple[str, str]] = {}
    problems: list[str] = []
    files = doc.get("files", [])
    if not isinstance(files, list):
        raise Finding("SPDX files is not a list")
    for entry in files:
        name = str(entry.get("fileName", "")) if isinstance(entry, dict) else ""
        checks = entry.get("checksums") or [] if isinstance(entry, dict) else []
        sums = _spdx_file_sums(name, checks if isinstance(checks, list) else [], problems)
        path = name[2:] if name.startswith("./") else name
        if "SHA1" not in sums or "SHA256" not in sums:
            problems.append(f"files[{name}]: needs SHA1 and SHA256")
        elif path in out:
            problems.append(f"files[{name}]: listed twice")
        else:
            out[path] = (sums["SHA1"], sums["SHA256"])
    return out, problems


def _walk(components: Any) -> Iterator[dict[str, Any]]:
    for c in components if isinstance(components, list) else []:
        if isinstance(c, dict):
            yield c
            yield from _walk(c.get("components") or [])


_URN_UUID = re.compile(r"^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _cdx_problems(doc: Any, data: bytes) -> list[str]:
    """What ``verify`` checks of a CycloneDX document: its schema's rules (see ``CDX_SHAPES``),
    specVersion, serial number, bom-refs and the references to them, one final LF."""
    if not isinstance(doc, dict):
        return ["top level is not a JSON object"]
    out = []
    schema = cdx_schema_problem(doc)
    if schema:
        out.append("schema: " + schema)
    if doc.get("bomFormat") != "CycloneDX" or doc.get("specVersion") != "1.6":
        out.append("not a CycloneDX 1.6 document")
    if not _URN_UUID.match(str(doc.get("serialNumber", ""))):
        out.append("serialNumber is not a lowercase urn:uuid")
    refs = _cdx_refs(doc, out)
    uses: dict[str, int] = {}
    for r in [*refs, *_cdx_occurrence_refs(doc)]:  # unique in the whole BOM (refType)
        uses[r] = uses.get(r, 0) + 1
    out.extend(f"bom-ref {r!r} is used more than once" for r in sorted(r for r, n in uses.items() if n > 1))
    out.extend(_cdx_reference_problems(doc, set(refs)))
    if not data.endswith(b"\n") or data.endswith(b"\n\n"):
        out.append("document must end with exactly one LF")
    return out


def _cdx_occurrence_refs(doc: dict[str, Any]) -> list[str]:
    """The bom-refs of every evidence occurrence (``metadata.component``'s, then the components')."""
    owners = [_get(doc, "metadata", "component"), *_walk(doc.get("components") or [])]
    out = []
    for owner in owners:
        occurrences = _get(owner, "evidence", "occurrences") if isinstance(owner, dict) else None
        for o in occurrences if isinstance(occurrences, list) else []:
            if isinstance(o, dict) and "bom-ref" in o:
                out.append(str(o["bom-ref"]))
    return out


def _cdx_refs(doc: dict[str, Any], out: list[str]) -> list[str]:
    """Every component's bom-ref, ``metadata.component``'s first; a component without one is a
    problem appended to ``out``."""
    refs = []
    component = _get(doc, "metadata", "component")
    if isinstance(component, dict) and "bom-ref" in component:
        refs.append(str(component["bom-ref"]))
    for c in _walk(doc.get("components") or []):
        if "bom-ref" in c:
            refs.append(str(c["bom-ref"]))
        else:
            out.append(f"component {c.get('name')!r} has no bom-ref")
    return refs


def _cdx_reference_problems(doc: dict[str, Any], known: set[str]) -> Iterator[str]:
    """Each dependency and composition reference that names no bom-ref of the document."""
    for dep in doc.get("dependencies") or []:
        for target in [dep.get("ref"), *(dep.get("dependsOn") or [])]:
            if target not in known:
                yield f"dependency names unknown bom-ref {target!r}"
    for composition in doc.get("compositions") or []:
        if not isinstance(composition, dict):
            continue
        for target in [*(composition.get("assemblies") or []), *(composition.get("dependencies") or [])]:
            if target not in known:
                yield f"composition names unknown bom-ref {target!r}"


# --- CycloneDX 1.6: the shapes ninfer-release writes, checked structurally ----------------------
# ``verify`` validates the CycloneDX document with the strict CycloneDX 1.6 JSON schema
# (cyclonedx-python-lib); this file cannot import jsonschema, so it checks the same rules of that
# schema (``additionalProperties: false``, ``required``, types, enums, patterns, formats,
# ``uniqueItems``) for the objects ninfer-release writes, as data. A field the schema allows but
# ninfer-release never writes is refused here: this verifier may refuse such a document, never
# accept one the schema refuses. ``tests/test_export_verifier.py`` checks these tables against the
# library's schema file, so they cannot drift from it.

#: The schema's enums this file checks (``definitions`` of bom-1.6.schema.json), space-separated.
CDX_ENUMS: dict[str, tuple[str, ...]] = {
    name: tuple(values.split())
    for name, values in {
        "bom-format": "CycloneDX",
        "component-type": "application framework library container platform operating-system device"
        " device-driver firmware file machine-learning-model data cryptographic-asset",
        "hash-alg": "MD5 SHA-1 SHA-256 SHA-384 SHA-512 SHA3-256 SHA3-384 SHA3-512 BLAKE2b-256 BLAKE2b-384"
        " BLAKE2b-512 BLAKE3",
        "lifecycle-phase": "design pre-build build post-build operations discovery decommission",
        "aggregate": "complete incomplete incomplete_first_party_only incomplete_first_party_proprietary_only"
        " incomplete_first_party_opensource_only incomplete_third_party_only"
        " incomplete_third_party_proprietary_only incomplete_third_party_opensource_only"
        " unknown not_specified",
        "external-reference-type": "vcs issue-tracker website advisories bom mailing-list social chat"
        " documentation support source-distribution distribution distribution-intake license build-meta"
        " build-system release-notes security-contact model-card log configuration evidence formulation"
        " attestation threat-model adversary-model risk-assessment vulnerability-assertion"
        " exploitability-statement pentest-report static-analysis-report dynamic-analysis-report"
        " runtime-analysis-report component-analysis-report maturity-report certification-report"
        " codified-infrastructure quality-metrics poam electronic-signature digital-signature rfc-9116 other",
    }.items()
}

#: Object kind -> (required keys, key -> value spec). A spec is an object kind, a scalar of
#: ``_CDX_SCALARS``, ``enum:<name>`` (one of ``CDX_ENUMS``), or either of those followed by ``[]``
#: (an array of it) or ``{}`` (an array of it with ``uniqueItems``).
CDX_SHAPES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "bom": (
        ("bomFormat", "specVersion"),
        {
            "$schema": "string",
            "bomFormat": "enum:bom-format",
            "specVersion": "string",
            "serialNumber": "serial-number",
            "version": "positive-integer",
            "metadata": "metadata",
            "components": "component{}",
            "dependencies": "dependency{}",
            "compositions": "composition{}",
        },
    ),
    "metadata": (
        (),
        {
            "timestamp": "date-time",
            "lifecycles": "lifecycle[]",
            "tools": "tools",
            "manufacturer": "organization",
            "supplier": "organization",
            "component": "component",
        },
    ),
    "lifecycle": (("phase",), {"phase": "enum:lifecycle-phase"}),
    "tools": ((), {"components": "component{}"}),
    "organization": ((), {"bom-ref": "ref", "name": "string"}),
    "contact": ((), {"bom-ref": "ref", "name": "string", "phone": "string"}),
    "component": (
        ("type", "name"),
        {
            "type": "enum:component-type",
            "name": "string",
            "version": "version",
            "bom-ref": "ref",
            "description": "string",
            "supplier": "organization",
            "manufacturer": "organization",
            "authors": "contact[]",
            "licenses": "license-expression[]",
            "hashes": "hash[]",
            "purl": "string",
            "cpe": "string",
            "externalReferences": "external-reference[]",
            "properties": "property[]",
            "evidence": "evidence",
            "components": "component{}",
        },
    ),
    "license-expression": (("expression",), {"expression": "string"}),
    "hash": (("alg", "content"), {"alg": "enum:hash-alg", "content": "hash-content"}),
    "external-reference": (
        ("url", "type"),
        {"url": "iri-reference", "comment": "string", "type": "enum:external-reference-type"},
    ),
    "property": (("name",), {"name": "string", "value": "string"}),
    "evidence": ((), {"occurrences": "occurrence[]"}),
    "occurrence": (
        ("location",),
        {
            "bom-ref": "ref",
            "location": "string",
            "line": "count",
            "offset": "count",
            "symbol": "string",
            "additionalContext": "string",
        },
    ),
    "dependency": (("ref",), {"ref": "ref", "dependsOn": "ref{}", "provides": "ref{}"}),
    "composition": (
        ("aggregate",),
        {"bom-ref": "ref", "aggregate": "enum:aggregate", "assemblies": "ref{}", "dependencies": "string{}"},
    ),
}

_HASH_CONTENT = re.compile(
    r"[a-fA-F0-9]{32}|[a-fA-F0-9]{40}|[a-fA-F0-9]{64}|[a-fA-F0-9]{96}|[a-fA-F0-9]{128}"
)
#: RFC 3339 ``date-time`` as the schema's format checker reads it (rfc3339-validator, upper-cased).
_DATE_TIME = re.compile(
    r"(\d{4})-(0[1-9]|1[0-2])-(\d{2})T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)",
    re.ASCII,
)
# RFC 3987 IRI-reference (section 2.2), ASCII only and without IP literals (both refused here,
# never written): the ABNF as ``ninfer_release.sbom._iri`` translates it, rule by rule.
_PCT = r"%[0-9A-Fa-f]{2}"
_IPCHAR = rf"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|{_PCT})"
_IAUTHORITY = (
    rf"(?:(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|{_PCT})*@)?(?:[A-Za-z0-9\-._~!$&'()*+,;=]|{_PCT})*(?::[0-9]*)?"
)
_IPATH_ABEMPTY = rf"(?:/{_IPCHAR}*)*"
_IPATH_ABSOLUTE = rf"/(?:{_IPCHAR}+{_IPATH_ABEMPTY})?"
_IPATH_ROOTLESS = rf"{_IPCHAR}+{_IPATH_ABEMPTY}"
_IPATH_NOSCHEME = rf"(?:[A-Za-z0-9\-._~!$&'()*+,;=@]|{_PCT})+{_IPATH_ABEMPTY}"
_ITAIL = rf"(?:\?(?:{_IPCHAR}|[/?])*)?(?:#(?:{_IPCHAR}|[/?])*)?"
_IRI_REFERENCE = re.compile(
    rf"[A-Za-z][A-Za-z0-9+\-.]*:(?://{_IAUTHORITY}{_IPATH_ABEMPTY}|{_IPATH_ABSOLUTE}|{_IPATH_ROOTLESS}|){_ITAIL}"
    rf"|(?://{_IAUTHORITY}{_IPATH_ABEMPTY}|{_IPATH_ABSOLUTE}|{_IPATH_NOSCHEME}|){_ITAIL}"
)


def _is_integer(value: Any) -> bool:
    """JSON Schema draft 7 ``integer``: any number with no fraction, never a boolean."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_date_time(value: Any) -> bool:
    m = _DATE_TIME.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        return False
    year, month, day = (int(g) for g in m.groups())
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    return year > 0 and 1 <= day <= days


#: Scalar spec -> (test, what the value must be).
_CDX_SCALARS: dict[str, tuple[Any, str]] = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "ref": (lambda v: isinstance(v, str) and len(v) >= 1, "a non-empty bom-ref string"),
    "version": (lambda v: isinstance(v, str) and len(v) <= 1024, "a string of at most 1024 characters"),
    "serial-number": (lambda v: isinstance(v, str) and bool(_URN_UUID.match(v)), "a lowercase urn:uuid"),
    "positive-integer": (lambda v: _is_integer(v) and v >= 1, "an integer of at least 1"),
    "count": (lambda v: _is_integer(v) and v >= 0, "an integer of at least 0"),
    "hash-content": (
        lambda v: isinstance(v, str) and bool(_HASH_CONTENT.fullmatch(v)),
        "a hex digest of 32, 40, 64, 96 or 128 characters",
    ),
    "date-time": (_is_date_time, "an RFC 3339 date-time"),
    "iri-reference": (
        lambda v: isinstance(v, str) and bool(_IRI_REFERENCE.fullmatch(v)),
        "an RFC 3987 IRI reference (ASCII, no IP literal)",
    ),
}


def _cdx_unique(items: list[Any]) -> bool:
    return len({json.dumps(i, sort_keys=True) for i in items}) == len(items)


#: One schema as data: object kinds (``CDX_SHAPES`` form), enums, scalar specs.
Schema = tuple[
    dict[str, tuple[tuple[str, ...], dict[str, str]]], dict[str, tuple[str, ...]], dict[str, tuple[Any, str]]
]


def _cdx_value(value: Any, spec: str, where: str, schema: Schema | None = None) -> Iterator[str]:
    """What is wrong with ``value`` under ``spec`` (see ``CDX_SHAPES``; ``schema`` defaults to
    CycloneDX 1.6's tables, ``_SPDX`` is SPDX 2.3's), path first."""
    shapes, enums, scalars = schema or (CDX_SHAPES, CDX_ENUMS, _CDX_SCALARS)
    if spec.endswith(("[]", "{}")):
        if not isinstance(value, list):
            yield f"{where}: is not an array"
            return
        if spec.endswith("{}") and not _cdx_unique(value):
            yield f"{where}: has non-unique items"
        if spec == "license-expression[]" and len(value) > 1:
            yield f"{where}: holds more than one license expression"
        for i, item in enumerate(value):
            yield from _cdx_value(item, spec[:-2], f"{where}[{i}]", schema)
    elif spec in shapes:
        yield from _cdx_object(value, spec, where, schema)
    elif spec.startswith("enum:"):
        if not isinstance(value, str) or value not in enums[spec[len("enum:") :]]:
            yield f"{where}: {value!r} is not one of the schema's {spec[len('enum:') :]} values"
    elif not scalars[spec][0](value):
        yield f"{where}: {value!r} is not {scalars[spec][1]}"


def _cdx_object(value: Any, kind: str, where: str, schema: Schema | None = None) -> Iterator[str]:
    if not isinstance(value, dict):
        yield f"{where}: is not an object ({kind})"
        return
    required, keys = (schema[0] if schema else CDX_SHAPES)[kind]
    for key in required:
        if key not in value:
            yield f"{where}: {key!r} is a required property"
    for key in value:
        if key not in keys:
            yield f"{where}: {key!r} is not a field of a {kind} that ninfer-release writes"
        else:
            yield from _cdx_value(value[key], keys[key], f"{where}.{key}", schema)


def cdx_schema_problem(doc: Any) -> str:
    """The first fault the CycloneDX 1.6 schema rules above find in ``doc`` (``""``: none)."""
    return next(_cdx_object(doc, "bom", "$"), "")


# --- SPDX 2.3: the shapes ninfer-release writes, checked structurally ---------------------------
# ``verify`` parses the SPDX document with spdx-tools and runs its full validation
# (``sbom/_spdx_validate.py``); this file cannot import spdx-tools, so it checks, as data, the SPDX
# 2.3 JSON schema's rules for the objects ``sbom/_spdx.py`` writes (closed objects, required keys,
# JSON types, enums, SPDXID and checksum forms) and the validation's rules that span objects
# (unique SPDXIDs, relationship ends that exist, one DESCRIBES of the document). It is stricter
# than ``verify`` where spdx-tools' parser ignores a key: an unknown field, or one the schema
# allows but ninfer-release never writes (say a file's ``attributionTexts``), is refused here.
# Licence expressions are checked for their grammar, their ``LicenseRef-`` ids for a declaration,
# and their other ids against the SPDX licence list (``SPDX_LICENSE_IDS``, ``SPDX_EXCEPTION_IDS``).
# ``tests/test_export_verifier.py`` mutates a document in schema-only ways and checks that
# ``verify``'s validation refuses each as this does.

#: SPDX 2.3 enums this file checks (the spec's annexes as spdx-tools 0.8 models them), space-separated.
SPDX_ENUMS: dict[str, tuple[str, ...]] = {
    name: tuple(values.split())
    for name, values in {
        "spdx-version": "SPDX-2.3",
        "data-license": "CC0-1.0",
        "checksum-alg": "SHA1 SHA256",
        "file-type": "SOURCE BINARY ARCHIVE APPLICATION AUDIO IMAGE TEXT VIDEO DOCUMENTATION SPDX OTHER",
        "purpose": "APPLICATION FRAMEWORK LIBRARY CONTAINER OPERATING-SYSTEM DEVICE FIRMWARE SOURCE ARCHIVE"
        " FILE INSTALL OTHER",
        "reference-category": "SECURITY PACKAGE-MANAGER PACKAGE_MANAGER PERSISTENT-ID PERSISTENT_ID OTHER",
        "relationship-type": "DESCRIBES DESCRIBED_BY CONTAINS CONTAINED_BY DEPENDS_ON DEPENDENCY_OF"
        " DEPENDENCY_MANIFEST_OF BUILD_DEPENDENCY_OF DEV_DEPENDENCY_OF OPTIONAL_DEPENDENCY_OF"
        " PROVIDED_DEPENDENCY_OF TEST_DEPENDENCY_OF RUNTIME_DEPENDENCY_OF EXAMPLE_OF GENERATES"
        " GENERATED_FROM ANCESTOR_OF DESCENDANT_OF VARIANT_OF DISTRIBUTION_ARTIFACT PATCH_FOR PATCH_APPLIED"
        " COPY_OF FILE_ADDED FILE_DELETED FILE_MODIFIED EXPANDED_FROM_ARCHIVE DYNAMIC_LINK STATIC_LINK"
        " DATA_FILE_OF TEST_CASE_OF BUILD_TOOL_OF DEV_TOOL_OF TEST_OF TEST_TOOL_OF DOCUMENTATION_OF"
        " OPTIONAL_COMPONENT_OF METAFILE_OF PACKAGE_OF AMENDS PREREQUISITE_FOR HAS_PREREQUISITE"
        " REQUIREMENT_DESCRIPTION_FOR SPECIFICATION_FOR OTHER",
    }.items()
}

#: Object kind -> (required keys, key -> value spec), as ``CDX_SHAPES``; the keys ``sbom/_spdx.py``
#: writes (SPDX 2.3 JSON schema names), the required ones those the schema or spdx-tools require.
SPDX_SHAPES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "document": (
        ("SPDXID", "spdxVersion", "dataLicense", "name", "documentNamespace", "creationInfo"),
        {
            "SPDXID": "document-id",
            "spdxVersion": "enum:spdx-version",
            "dataLicense": "enum:data-license",
            "name": "string",
            "documentNamespace": "absolute-uri",
            "comment": "string",
            "creationInfo": "creation-info",
            "packages": "package[]",
            "files": "file[]",
            "relationships": "relationship[]",
            "hasExtractedLicensingInfos": "extracted-licensing-info[]",
        },
    ),
    "creation-info": (("created", "creators"), {"created": "utc-date-time", "creators": "creator[]"}),
    "package": (
        ("SPDXID", "name", "downloadLocation"),
        {
            "SPDXID": "spdx-id",
            "name": "string",
            "versionInfo": "string",
            "packageFileName": "string",
            "supplier": "supplier",
            "downloadLocation": "download-location",
            "filesAnalyzed": "boolean",
            "packageVerificationCode": "verification-code",
            "homepage": "download-location",
            "licenseConcluded": "license",
            "licenseDeclared": "license",
            "copyrightText": "string",
            "comment": "string",
            "externalRefs": "external-ref[]",
            "primaryPackagePurpose": "enum:purpose",
            "builtDate": "utc-date-time",
        },
    ),
    "verification-code": (
        ("packageVerificationCodeValue",),
        {"packageVerificationCodeValue": "sha1", "packageVerificationCodeExcludedFiles": "string[]"},
    ),
    "external-ref": (
        ("referenceCategory", "referenceType", "referenceLocator"),
        {
            "referenceCategory": "enum:reference-category",
            "referenceType": "string",
            "referenceLocator": "string",
        },
    ),
    "file": (
        ("SPDXID", "fileName", "checksums"),
        {
            "SPDXID": "spdx-id",
            "fileName": "string",
            "checksums": "checksum[]",
            "fileTypes": "enum:file-type[]",
            "licenseConcluded": "license",
            "copyrightText": "string",
            "comment": "string",
        },
    ),
    "checksum": (("algorithm", "checksumValue"), {"algorithm": "enum:checksum-alg", "checksumValue": "hex"}),
    "relationship": (
        ("spdxElementId", "relationshipType", "relatedSpdxElement"),
        {
            "spdxElementId": "spdx-id",
            "relationshipType": "enum:relationship-type",
            "relatedSpdxElement": "element",
        },
    ),
    "extracted-licensing-info": (
        ("licenseId", "extractedText"),
        {"licenseId": "license-ref", "extractedText": "string", "name": "string"},
    ),
}

#: The SPDX licence list's licence ids and their aliases, lowercased (licence-list matching is
#: case-insensitive): license-expression's bundled list, the one spdx-tools' licensing uses
#: (``spdx_tools.common.spdx_licensing``), without its ``LicenseRef-scancode-*`` keys and the
#: aliases with spaces no token can be. Generated; tests/test_export_verifier.py holds it equal.
SPDX_LICENSE_IDS = frozenset(
    """
0bsd 3d-slicer-1.0 aal abstyles adacore-doc adobe-2006 adobe-display-postscript adobe-glyph
adobe-utopia adsl afl-1.1 afl-1.2 afl-2.0 afl-2.1 afl-3.0 afmparse agpl-1.0 agpl-1.0+
agpl-1.0-only agpl-1.0-or-later agpl-3.0 agpl-3.0+ agpl-3.0-only agpl-3.0-or-later aladdin
amd-newlib amdplpa aml aml-glslang ampas antlr-pd antlr-pd-fallback any-osi any-osi-perl-modules
apache-1.0 apache-1.1 apache-2.0 apafml apl-1.0 app-s2p apsl-1.0 apsl-1.1 apsl-1.2 apsl-2.0
arphic-1999 artistic-1.0 artistic-1.0-cl8 artistic-1.0-perl artistic-2.0 artistic-dist aspell-ru
aswf-digital-assets-1.0 aswf-digital-assets-1.1 baekmuk bahyph barr bcrypt-solar-designer
beerware bitstream-charter bitstream-vera bittorrent-1.0 bittorrent-1.1 blessing blueoak-1.0.0
boehm-gc boehm-gc-without-fee borceux brian-gladman-2-clause brian-gladman-3-clause bsd-1-clause
bsd-2 bsd-2-clause bsd-2-clause-darwin bsd-2-clause-first-lines bsd-2-clause-freebsd
bsd-2-clause-netbsd bsd-2-clause-patent bsd-2-clause-pkgconf-disclaimer bsd-2-clause-views
bsd-3-clause bsd-3-clause-acpica bsd-3-clause-attribution bsd-3-clause-clear bsd-3-clause-flex
bsd-3-clause-hp bsd-3-clause-lbnl bsd-3-clause-modification bsd-3-clause-no-military-license
bsd-3-clause-no-nuclear-license bsd-3-clause-no-nuclear-license-2014
bsd-3-clause-no-nuclear-warranty bsd-3-clause-open-mpi bsd-3-clause-sun bsd-4-clause
bsd-4-clause-shortened bsd-4-clause-uc bsd-4.3reno bsd-4.3tahoe bsd-advertising-acknowledgement
bsd-attribution-hpnd-disclaimer bsd-inferno-nettverk bsd-protection bsd-source-beginning-file
bsd-source-code bsd-systemics bsd-systemics-w3works bsl-1.0 busl-1.1 bzip2-1.0.5 bzip2-1.0.6
c-uda-1.0 cal-1.0 cal-1.0-combined-work-exception caldera caldera-no-preamble catharon
catosl-1.1 cc-by-1.0 cc-by-2.0 cc-by-2.5 cc-by-2.5-au cc-by-3.0 cc-by-3.0-at cc-by-3.0-au
cc-by-3.0-de cc-by-3.0-igo cc-by-3.0-nl cc-by-3.0-us cc-by-4.0 cc-by-nc-1.0 cc-by-nc-2.0
cc-by-nc-2.5 cc-by-nc-3.0 cc-by-nc-3.0-de cc-by-nc-4.0 cc-by-nc-nd-1.0 cc-by-nc-nd-2.0
cc-by-nc-nd-2.5 cc-by-nc-nd-3.0 cc-by-nc-nd-3.0-de cc-by-nc-nd-3.0-igo cc-by-nc-nd-4.0
cc-by-nc-sa-1.0 cc-by-nc-sa-2.0 cc-by-nc-sa-2.0-de cc-by-nc-sa-2.0-fr cc-by-nc-sa-2.0-uk
cc-by-nc-sa-2.5 cc-by-nc-sa-3.0 cc-by-nc-sa-3.0-de cc-by-nc-sa-3.0-igo cc-by-nc-sa-4.0
cc-by-nd-1.0 cc-by-nd-2.0 cc-by-nd-2.5 cc-by-nd-3.0 cc-by-nd-3.0-de cc-by-nd-4.0 cc-by-sa-1.0
cc-by-sa-2.0 cc-by-sa-2.0-uk cc-by-sa-2.1-jp cc-by-sa-2.5 cc-by-sa-3.0 cc-by-sa-3.0-at
cc-by-sa-3.0-de cc-by-sa-3.0-igo cc-by-sa-4.0 cc-pddc cc-pdm-1.0 cc-sa-1.0 cc0-1.0 cddl-1.0
cddl-1.1 cdl-1.0 cdla-permissive-1.0 cdla-permissive-2.0 cdla-sharing-1.0 cecill-1.0 cecill-1.1
cecill-2.0 cecill-2.1 cecill-b cecill-c cern-ohl-1.1 cern-ohl-1.2 cern-ohl-p-2.0 cern-ohl-s-2.0
cern-ohl-w-2.0 cfitsio check-cvs checkmk clartistic clips cmu-mach cmu-mach-nodoc cnri-jython
cnri-python cnri-python-gpl-compatible coil-1.0 community-spec-1.0 condor-1.1
copyleft-next-0.3.0 copyleft-next-0.3.1 cornell-lossless-jpeg cpal-1.0 cpl-1.0 cpol-1.02 cronyx
crossword cryptoswift crystalstacker cua-opl-1.0 cube curl cve-tou d-fsl-1.0 dec-3-clause
diffmark dl-de-by-2.0 dl-de-zero-2.0 doc docbook-dtd docbook-schema docbook-stylesheet
docbook-xml dotseqn drl-1.0 drl-1.1 dsdp dtoa dvipdfm ecl-1.0 ecl-2.0 efl-1.0 efl-2.0 egenix
elastic-2.0 entessa epics epl-1.0 epl-2.0 erlpl-1.1 etalab-2.0 eudatagrid eupl-1.0 eupl-1.1
eupl-1.2 eurosym fair fbm fdk-aac ferguson-twofish frameworx-1.0 freebsd-doc freeimage fsfap
fsfap-no-warranty-disclaimer fsful fsfullr fsfullrsd fsfullrwd fsl-1.1-alv2 fsl-1.1-mit ftl
furuseth fwlw game-programming-gems gcr-docs gd generic-xts gfdl-1.1 gfdl-1.1+
gfdl-1.1-invariants-only gfdl-1.1-invariants-or-later gfdl-1.1-no-invariants-only
gfdl-1.1-no-invariants-or-later gfdl-1.1-only gfdl-1.1-or-later gfdl-1.2 gfdl-1.2+
gfdl-1.2-invariants-only gfdl-1.2-invariants-or-later gfdl-1.2-no-invariants-only
gfdl-1.2-no-invariants-or-later gfdl-1.2-only gfdl-1.2-or-later gfdl-1.3 gfdl-1.3+
gfdl-1.3-invariants-only gfdl-1.3-invariants-or-later gfdl-1.3-no-invariants-only
gfdl-1.3-no-invariants-or-later gfdl-1.3-only gfdl-1.3-or-later giftware gl2ps glide glulxe
glwtpl gnuplot gpl gpl-1.0 gpl-1.0+ gpl-1.0-only gpl-1.0-or-later gpl-2.0 gpl-2.0+ gpl-2.0-only
gpl-2.0-or-later gpl-3.0 gpl-3.0+ gpl-3.0-only gpl-3.0-or-later graphics-gems gsoap-1.3b gtkbook
gutmann haskellreport hdf5 hdparm hidapi hippocratic-2.1 hp-1986 hp-1989 hpnd hpnd-dec hpnd-doc
hpnd-doc-sell hpnd-export-us hpnd-export-us-acknowledgement hpnd-export-us-modify
hpnd-export2-us hpnd-fenneberg-livingston hpnd-inria-imag hpnd-intel hpnd-kevlin-henney
hpnd-markus-kuhn hpnd-merchantability-variant hpnd-mit-disclaimer hpnd-netrek hpnd-pbmplus
hpnd-sell-mit-disclaimer-xserver hpnd-sell-regexpr hpnd-sell-variant
hpnd-sell-variant-mit-disclaimer hpnd-sell-variant-mit-disclaimer-rev hpnd-uc hpnd-uc-export-us
htmltidy ibm-pibs icu iec-code-components-eula ijg ijg-short imagemagick imatix imlib2 info-zip
inner-net-2.0 innosetup intel intel-acpi interbase-1.0 ipa ipl-1.0 isc isc-veillard jam
jasper-2.0 jove jpl-image jpnic json kastrup kazlib knuth-ctan lal-1.2 lal-1.3 latex2e
latex2e-translated-notice leptonica lgpl-2.0 lgpl-2.0+ lgpl-2.0-only lgpl-2.0-or-later lgpl-2.1
lgpl-2.1+ lgpl-2.1-only lgpl-2.1-or-later lgpl-3.0 lgpl-3.0+ lgpl-3.0-only lgpl-3.0-or-later
lgpllr libpng libpng-1.6.35 libpng-2.0 libselinux-1.0 libtiff libutil-david-nugent liliq-p-1.1
liliq-r-1.1 liliq-rplus-1.1 linux-man-pages-1-para linux-man-pages-copyleft
linux-man-pages-copyleft-2-para linux-man-pages-copyleft-var linux-openib loop lpd-document
lpl-1.0 lpl-1.02 lppl-1.0 lppl-1.1 lppl-1.2 lppl-1.3a lppl-1.3c lsof lucida-bitmap-fonts
lzma-sdk-9.11-to-9.20 lzma-sdk-9.22 mackerras-3-clause mackerras-3-clause-acknowledgment magaz
mailprio makeindex man2html martin-birgmeier mcphee-slideshow metamail minpack mips miros mit
mit-0 mit-advertising mit-click mit-cmu mit-enna mit-feh mit-festival mit-khronos-old
mit-modern-variant mit-open-group mit-testregex mit-wu mitnfa mmixware motosoto mpeg-ssg
mpi-permissive mpich2 mpl-1.0 mpl-1.1 mpl-2.0 mplus ms-lpl ms-pl ms-rl mtll mulanpsl-1.0
mulanpsl-2.0 multics mup naist-2003 nasa-1.3 naumen nbpl-1.0 ncbi-pd ncgl-uk-2.0 ncl ncsa
net-snmp netcdf newsletr ngpl ngrep nicta-1.0 nist-pd nist-pd-fallback nist-software nlod-1.0
nlod-2.0 nlpl nokia nosl noweb npl-1.0 npl-1.1 nposl-3.0 nrl ntia-pd ntp ntp-0 nunit o-uda-1.0
oar occt-pl oclc-2.0 odbl-1.0 odc-by-1.0 offis ofl-1.0 ofl-1.0-no-rfn ofl-1.0-rfn ofl-1.1
ofl-1.1-no-rfn ofl-1.1-rfn ogc-1.0 ogdl-taiwan-1.0 ogl-canada-2.0 ogl-uk-1.0 ogl-uk-2.0
ogl-uk-3.0 ogtsl oldap-1.1 oldap-1.2 oldap-1.3 oldap-1.4 oldap-2.0 oldap-2.0.1 oldap-2.1
oldap-2.2 oldap-2.2.1 oldap-2.2.2 oldap-2.3 oldap-2.4 oldap-2.5 oldap-2.6 oldap-2.7 oldap-2.8
olfl-1.3 oml openpbs-2.3 openssl openssl-standalone openvision opl-1.0 opl-uk-3.0 opubl-1.0
oset-pl-2.1 osl-1.0 osl-1.1 osl-2.0 osl-2.1 osl-3.0 padl parity-6.0.0 parity-7.0.0 pddl-1.0
php-3.0 php-3.01 pixar pkgconf plexus pnmstitch polyform-noncommercial-1.0.0
polyform-small-business-1.0.0 postgresql ppl psf-2.0 psfrag psutils python-2.0 python-2.0.1
python-ldap qhull qpl-1.0 qpl-1.0-inria-2004 radvd rdisc rhecos-1.1 rpl-1.1 rpl-1.5 rpsl-1.0
rsa-md rscpl ruby ruby-pty sax-pd sax-pd-2.0 saxpath scea schemereport sendmail sendmail-8.23
sendmail-open-source-1.1 sgi-b-1.0 sgi-b-1.1 sgi-b-2.0 sgi-opengl sgp4 shl-0.5 shl-0.51
simpl-2.0 sissl sissl-1.2 sl sleepycat smail-gpl smlnj smppl snia snprintf sofa softsurfer
soundex spencer-86 spencer-94 spencer-99 spl-1.0 ssh-keyscan ssh-openssh ssh-short
ssleay-standalone sspl-1.0 standardml-nj sugarcrm-1.1.3 sul-1.0 sun-ppp sun-ppp-2000 sunpro swl
swrule symlinks tapr-ohl-1.0 tcl tcp-wrappers termreadkey tgppl-1.0 thirdeye threeparttable
tmate torque-1.1 tosl tpdl tpl-1.0 trustedqsl ttwl ttyp0 tu-berlin-1.0 tu-berlin-2.0
ubuntu-font-1.0 ucar ucl-1.0 ulem umich-merit unicode-3.0 unicode-dfs-2015 unicode-dfs-2016
unicode-tou unixcrypt unlicense unlicense-libtelnet unlicense-libwhirlpool upl-1.0 urt-rle
verbatim-man-pages vim vostrom vsl-1.0 w3c w3c-19980720 w3c-20150513 w3m watcom-1.0
widget-workshop wsuipa wtfpl wwl wxwindows x11 x11-distribute-modifications-variant x11-swapped
xdebug-1.03 xerox xfig xfree86-1.1 xinetd xkeyboard-config-zinoviev xlock xnet xpp xskat xzoom
ypl-1.0 ypl-1.1 zed zeeff zend-2.0 zimbra-1.3 zimbra-1.4 zlib zlib-acknowledgement zpl-1.1
zpl-2.0 zpl-2.1
""".split()  # noqa: SIM905 - a generated table, one id per word
)

#: The licence list's exception ids (the right of ``WITH``), the same way.
SPDX_EXCEPTION_IDS = frozenset(
    """
389-exception assembly-exception asterisk-exception asterisk-linking-protocols-exception
autoconf-exception-2.0 autoconf-exception-3.0 autoconf-exception-generic
autoconf-exception-generic-3.0 autoconf-exception-macro bison-exception-1.24 bison-exception-2.2
bootloader-exception cgal-linking-exception classpath-exception-2.0 clisp-exception-2.0
cryptsetup-openssl-exception digia-qt-lgpl-exception-1.1 digirule-foss-exception ecos-2.0
ecos-exception-2.0 erlang-otp-linking-exception fawkes-runtime-exception fltk-exception
fmt-exception font-exception-2.0 freertos-exception-2.0 gcc-exception-2.0 gcc-exception-2.0-note
gcc-exception-3.1 gmsh-exception gnat-exception gnome-examples-exception gnu-compiler-exception
gnu-javamail-exception gpl-2.0-with-autoconf-exception gpl-2.0-with-classpath-exception
gpl-2.0-with-font-exception gpl-2.0-with-gcc-exception gpl-3.0-389-ds-base-exception
gpl-3.0-interface-exception gpl-3.0-linking-exception gpl-3.0-linking-source-exception
gpl-3.0-with-autoconf-exception gpl-3.0-with-gcc-exception gpl-cc-1.0 gstreamer-exception-2005
gstreamer-exception-2008 harbour-exception i2p-gpl-java-exception independent-modules-exception
kicad-libraries-exception lgpl-3.0-linking-exception libpri-openh323-exception libtool-exception
linux-syscall-note llgpl llvm-exception lzma-exception mif-exception
mpl-2.0-no-copyleft-exception mxml-exception nokia-qt-exception-1.1 ocaml-lgpl-linking-exception
occt-exception-1.0 openjdk-assembly-exception-1.0 openvpn-openssl-exception pcre2-exception
polyparse-exception ps-or-pdf-font-exception-20170817 qpl-1.0-inria-2004-exception
qt-gpl-exception-1.0 qt-lgpl-exception-1.1 qwt-exception-1.0 romic-exception
rrdtool-floss-exception-2.0 sane-exception shl-2.0 shl-2.1 stunnel-exception swi-exception
swift-exception texinfo-exception u-boot-exception-2.0 ubdl-exception
universal-foss-exception-1.0 vsftpd-openssl-exception wxwindows-exception-3.1
x11vnc-openssl-exception
""".split()  # noqa: SIM905 - a generated table, one id per word
)

_SPDX_ID = re.compile(r"SPDXRef-[A-Za-z0-9.\-]+", re.ASCII)
_LICENSE_REF = re.compile(r"LicenseRef-[A-Za-z0-9.\-]+", re.ASCII)
#: spdx-tools reads SPDX dates as ``%Y-%m-%dT%H:%M:%SZ``: UTC, whole seconds.
_UTC_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", re.ASCII)
#: An absolute URI without a fragment (SPDX 2.3 §6.5): scheme, ``//``, then no space or ``#``.
_ABSOLUTE_URI = re.compile(r"[A-Za-z][A-Za-z0-9+\-.]*://[^\s#]+", re.ASCII)
_CREATOR = re.compile(r"(?:Tool|Organization|Person): \S.*", re.DOTALL)
_SPDX_DIGEST_LENGTH = {"SHA1": 40, "SHA256": 64}

_LICENSE_TOKEN = re.compile(r"\s*(\(|\)|[A-Za-z0-9.\-+:]+)", re.ASCII)


def _is_license_expression(text: str) -> bool:
    """SPDX 2.3 Annex D: ``NONE``, ``NOASSERTION``, or ids joined by ``AND``/``OR`` (``WITH`` an
    exception), in parentheses at will; the ids' spelling only (the list: :func:`license_id_problems`)."""
    if text in ("NONE", "NOASSERTION"):
        return True
    tokens, at = [], 0
    while at < len(text.rstrip()):
        m = _LICENSE_TOKEN.match(text, at)
        if m is None:
            return False
        tokens.append(m.group(1))
        at = m.end()
    return _license_expression(tokens) and text == text.strip()


_LICENSE_WORDS = ("AND", "OR", "WITH", "(", ")")


def _license_expression(words: list[str]) -> bool:
    """Whether ``words`` are exactly one ``term ((AND|OR) term)*``, a term being
    ``( expression )`` or ``id [WITH id]``: one pass, no recursion (a licence field of 80k terms
    took 70 s, and 600 nested parentheses a RecursionError, when each term copied the rest of the
    tokens recursively; second hostile review, 2026-12-04)."""
    state, depth = "term", 0  # term: a term starts; id: after an id; exception: after WITH; end
    for word in words:
        if state == "term":
            if word == "(":
                depth += 1
                continue
            if word in _LICENSE_WORDS:
                return False
            state = "id"
        elif state == "exception":
            if word in _LICENSE_WORDS:
                return False
            state = "end"
        elif state == "id" and word == "WITH":
            state = "exception"
        elif word in ("AND", "OR"):
            state = "term"
        elif word == ")" and depth > 0:
            depth -= 1
            state = "end"
        else:
            return False
    return state in ("id", "end") and depth == 0


#: Scalar spec -> (test, what the value must be).
_SPDX_SCALARS: dict[str, tuple[Any, str]] = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "boolean": (lambda v: isinstance(v, bool), "a boolean"),
    "document-id": (lambda v: v == "SPDXRef-DOCUMENT", "SPDXRef-DOCUMENT"),
    "spdx-id": (lambda v: isinstance(v, str) and bool(_SPDX_ID.fullmatch(v)), "an SPDXRef- id"),
    "element": (
        lambda v: isinstance(v, str) and (v in ("NONE", "NOASSERTION") or bool(_SPDX_ID.fullmatch(v))),
        "an SPDXRef- id, NONE or NOASSERTION",
    ),
    "license-ref": (lambda v: isinstance(v, str) and bool(_LICENSE_REF.fullmatch(v)), "a LicenseRef- id"),
    "license": (lambda v: isinstance(v, str) and _is_license_expression(v), "an SPDX licence expression"),
    "utc-date-time": (
        lambda v: isinstance(v, str) and bool(_UTC_DATE_TIME.fullmatch(v)) and _is_date_time(v),
        "an RFC 3339 UTC date-time YYYY-MM-DDThh:mm:ssZ",
    ),
    "absolute-uri": (
        lambda v: isinstance(v, str) and bool(_ABSOLUTE_URI.fullmatch(v)),
        "an absolute URI without a fragment",
    ),
    "download-location": (
        lambda v: isinstance(v, str) and (v in ("NONE", "NOASSERTION") or bool(_ABSOLUTE_URI.fullmatch(v))),
        "an absolute URI, NONE or NOASSERTION",
    ),
    "creator": (
        lambda v: isinstance(v, str) and bool(_CREATOR.fullmatch(v)),
        "Tool:, Organization: or Person:",
    ),
    "supplier": (
        lambda v: (
            isinstance(v, str)
            and (v == "NOASSERTION" or bool(re.fullmatch(r"(?:Organization|Person): \S.*", v)))
        ),
        "Organization:, Person: or NOASSERTION",
    ),
    "hex": (lambda v: isinstance(v, str) and bool(re.fullmatch(r"[0-9a-f]+", v)), "lowercase hex"),
    "sha1": (
        lambda v: isinstance(v, str) and bool(re.fullmatch(r"[0-9a-f]{40}", v)),
        "40 lowercase hex digits",
    ),
}
_SPDX: Schema = (SPDX_SHAPES, SPDX_ENUMS, _SPDX_SCALARS)


def spdx_problems(doc: Any, data: bytes) -> list[str]:
    """What ``verify`` refuses in an SPDX 2.3 document, as this file can see it: the schema rules
    above (first fault), then SPDXID uniqueness, relationship ends, DESCRIBES, the checksum
    forms, declared licence refs, non-empty creators, one final LF."""
    if not isinstance(doc, dict):
        return ["top level is not a JSON object"]
    if doc.get("spdxVersion") != "SPDX-2.3" or doc.get("SPDXID") != "SPDXRef-DOCUMENT":
        return ["not an SPDX 2.3 document"]
    schema = next(_cdx_object(doc, "document", "$", _SPDX), "")
    if schema:
        return ["SPDX 2.3 invalid: " + schema]
    out = [f"SPDX 2.3 invalid: {p}" for p in _spdx_cross_problems(doc)]
    if not data.endswith(b"\n") or data.endswith(b"\n\n"):
        out.append("document must end with exactly one LF")
    return out


def _spdx_cross_problems(doc: dict[str, Any]) -> Iterator[str]:
    """The rules spanning objects of a schema-valid document (spdx-tools' validation)."""
    elements = [doc, *doc.get("packages", []), *doc.get("files", [])]
    ids = [e["SPDXID"] for e in elements]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        yield f"SPDXID {dup!r} is used more than once"
    known = set(ids)
    relationships = doc.get("relationships", [])
    for r in relationships:
        if r["spdxElementId"] not in known:
            yield f"relationship names unknown element {r['spdxElementId']!r}"
        if r["relatedSpdxElement"] not in known | {"NONE", "NOASSERTION"}:
            yield f"relationship names unknown element {r['relatedSpdxElement']!r}"
    if not any(
        r["spdxElementId"] == "SPDXRef-DOCUMENT" and r["relationshipType"] == "DESCRIBES"
        for r in relationships
    ):
        yield "the document DESCRIBES nothing"
    for f in doc.get("files", []):
        for c in f["checksums"]:
            want = _SPDX_DIGEST_LENGTH[c["algorithm"]]
            if len(c["checksumValue"]) != want:
                yield f"file {f['fileName']!r}: {c['algorithm']} is not {want} hex digits"
    if not doc["creationInfo"]["creators"]:
        yield "creationInfo.creators is empty"
    yield from _spdx_license_ref_problems(doc)


def _spdx_license_ref_problems(doc: dict[str, Any]) -> Iterator[str]:
    """Each ``LicenseRef-`` an expression uses that the document does not declare, each declared
    twice, and each other id that is not on the SPDX licence list (:func:`license_id_problems`)."""
    declared = [e["licenseId"] for e in doc.get("hasExtractedLicensingInfos", [])]
    for dup in sorted({i for i in declared if declared.count(i) > 1}):
        yield f"licence {dup!r} is declared more than once"
    for element in [*doc.get("packages", []), *doc.get("files", [])]:
        for key in ("licenseConcluded", "licenseDeclared"):
            for ref in _LICENSE_REF.findall(element.get(key, "")):
                if ref not in declared:
                    yield f"{element['SPDXID']}: {key} uses undeclared {ref!r}"
            for problem in license_id_problems(element.get(key, "")):
                yield f"{element['SPDXID']}: {key} {problem}"


def license_id_problems(expression: str) -> list[str]:
    """Why the ids of a grammatical licence ``expression`` are not what ``verify`` accepts: an id
    that is not on the SPDX licence list (:data:`SPDX_LICENSE_IDS`, case-insensitive, deprecated
    aliases included), an exception used as a licence, a licence or unknown id after ``WITH``
    (:data:`SPDX_EXCEPTION_IDS`), an external ``DocumentRef-…:`` reference (this document format
    declares none). ``LicenseRef-`` ids are checked against the declarations elsewhere."""
    if expression in ("NONE", "NOASSERTION"):
        return []
    out = []
    tokens = [m.group(1) for m in _LICENSE_TOKEN.finditer(expression)]
    for i, token in enumerate(tokens):
        if token in ("(", ")", "AND", "OR", "WITH") or _LICENSE_REF.fullmatch(token):
            continue
        after_with = i > 0 and tokens[i - 1] == "WITH"
        key = token.lower()
        if ":" in token:
            out.append(f"uses the external reference {token!r}; no external document is declared")
        elif after_with and key not in SPDX_EXCEPTION_IDS:
            what = (
                "a licence, not an exception" if key in SPDX_LICENSE_IDS else "not on the SPDX exception list"
            )
            out.append(f"uses {token!r} after WITH: {what}")
        elif not after_with and key not in SPDX_LICENSE_IDS:
            what = (
                "an exception, used as a licence"
                if key in SPDX_EXCEPTION_IDS
                else "not on the SPDX licence list"
            )
            out.append(f"uses {token!r}: {what}")
    return out


def _cdx_hashes(doc: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """``(zip path -> SHA-256, problems)`` of every file the document lists: the evidence
    occurrences of every component and of ``metadata.component`` (``location``,
    ``additionalContext`` = ``sha256:<hex>``). A ``hashes`` anywhere but on ``metadata.component``
    is a problem: ninfer-release writes none there, and a digest nothing compares is one a
    consumer may take (the older one-per-file shape, ``ninfer:path`` with a hash, is not read)."""
    out: dict[str, str] = {}
    outside = _hashes_outside_root(doc, "$")
    problems = [f"{w}.hashes: a hash where ninfer-release writes none" for w in outside]
    components = list(_walk(doc.get("components") or []))
    root = _get(doc, "metadata", "component")
    if isinstance(root, dict):
        components.append(root)
    for c in components:
        evidence = c.get("evidence")
        for o in (evidence.get("occurrences") or []) if isinstance(evidence, dict) else []:
            if not (isinstance(o, dict) and isinstance(o.get("location"), str)):
                continue
            key, context = o["location"], str(o.get("additionalContext") or "")
            if not context.startswith("sha256:"):
                problems.append(f"{key}: listed without a SHA-256")
            elif key in out:
                problems.append(f"{key}: listed twice")
            else:
                out[key] = context[len("sha256:") :].lower()
    return out, problems


#: The one object of a lane's CycloneDX document with ``hashes`` (the package's SHA-256).
_CDX_ROOT_PATH = "$.metadata.component"


def _hashes_outside_root(value: Any, where: str) -> Iterator[str]:
    """The JSON path of every object in ``value`` (at ``where``) with a ``hashes`` key, but the root."""
    if isinstance(value, dict):
        if "hashes" in value and where != _CDX_ROOT_PATH:
            yield where
        for key, item in value.items():
            yield from _hashes_outside_root(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _hashes_outside_root(item, f"{where}[{i}]")


def _cdx_root_sha256(doc: dict[str, Any]) -> tuple[str, list[str]]:
    """``(the SHA-256 metadata.component carries or "", problems)``: its ``hashes`` are the one
    SHA-256 ninfer-release writes there, or none; another algorithm or a second SHA-256 is a
    problem."""
    root = _get(doc, "metadata", "component")
    found: str | None = None
    problems = []
    field = f"{_CDX_ROOT_PATH}.hashes"
    for h in (root.get("hashes") or []) if isinstance(root, dict) else []:
        alg = h.get("alg") if isinstance(h, dict) else None
        if alg != "SHA-256":
            problems.append(f"{field}: {alg!r} is not SHA-256, the one hash ninfer-release writes here")
        elif found is not None:
            problems.append(f"{field}: SHA-256 is given more than once")
        else:
            found = str(h.get("content")).lower()
    return found or "", problems


#: One line of the config as ninfer-release renders it, for the reader used where ``tomllib``
#: is absent (Python < 3.11): a table header, or ``key = value`` with a one-line basic string
#: (``\\`` and ``\"`` its only escapes), a decimal integer, a boolean or a one-line array of
#: such strings. Any other line (a multi-line or literal string, a dotted key, an inline
#: comment, another escape) refuses the whole config: read otherwise than TOML reads it, it could
#: name other paths than the engine reads (a line inside a multi-line string is no key).
_TOML_TABLE = re.compile(r"\[([A-Za-z0-9_]+)\]")
_TOML_BASIC = r'"(?:[^"\\\x00-\x1f\x7f]|\\[\\"])*"'
_TOML_ARRAY = rf"\[(?:{_TOML_BASIC}(?:, {_TOML_BASIC})*)?\]"
_TOML_PAIR = re.compile(rf"([A-Za-z0-9_]+) = ({_TOML_BASIC}|-?(?:0|[1-9][0-9]*)|true|false|{_TOML_ARRAY})")
_TOML_ESCAPE = re.compile(r"\\(.)")
_TOML_STRING_IN_ARRAY = re.compile(_TOML_BASIC)


def _toml_value(text: str) -> Any:
    """A value :data:`_TOML_PAIR` matched, as ``tomllib`` reads it."""
    if text.startswith('"'):
        return _TOML_ESCAPE.sub(lambda m: m.group(1), text[1:-1])
    if text.startswith("["):
        return [_toml_value(s) for s in _TOML_STRING_IN_ARRAY.findall(text)]
    return text == "true" if text in ("true", "false") else int(text)


def _simple_toml(text: str) -> dict[str, Any]:
    """The config read line by line where ``tomllib`` is absent (:data:`_TOML_PAIR`); raises
    ValueError naming the first line it cannot read exactly."""
    doc: dict[str, Any] = {}
    table = doc
    for number, line in enumerate(text.split("\n"), 1):
        header, pair = _TOML_TABLE.fullmatch(line), _TOML_PAIR.fullmatch(line)
        if header and header.group(1) not in doc:
            table = doc[header.group(1)] = {}
        elif pair and pair.group(1) not in table:
            table[pair.group(1)] = _toml_value(pair.group(2))
        elif line and not line.startswith("#"):
            raise ValueError(f"line {number}: not a form this verifier reads without tomllib (Python < 3.11)")
    return doc


def config_toml(config: bytes) -> dict[str, Any]:
    """The config parsed as UTF-8 TOML, as ``verify`` parses it (``tomllib``; on Python < 3.11
    :func:`_simple_toml`, which refuses what it cannot read exactly); raises ValueError."""
    text = config.decode("utf-8")
    parser: Any = tomllib  # None on Python < 3.11
    if parser is None:
        return _simple_toml(text)
    doc: dict[str, Any] = parser.loads(text)
    return doc


def _route_paths(
    run: Run, n_route: str, n_config: str, route: dict[str, Any], config: bytes, instance: Any
) -> None:
    """Every path the route names is where the config reads it; nothing writable under Program Files
    (the same rule as ``ninfer-release verify``, docs/install-layout.md)."""
    try:
        cfg = config_toml(config)
    except ValueError as exc:
        run.fail(n_config, f"is not UTF-8 TOML: {exc}")
        return
    root = _get(cfg, "paths", "data_root")
    keys = {
        "key_file": ("server", "bearer_key_file"),
        "model_path": ("model", "path"),
        "cache_root": ("checkpoint", "root"),
        "checkpoint_dir": ("checkpoint", "dir_template"),
    }
    rels = {k: _get(cfg, *v) for k, v in keys.items()}
    if not isinstance(root, str) or not all(isinstance(v, str) for v in rels.values()):
        run.fail(n_config, "lacks paths.data_root or a relative key/model/checkpoint path")
        return

    def join(rel: str) -> str:
        return root.rstrip("\\") + "\\" + rel.replace("/", "\\")

    want = {k: join(v.replace("<release-instance-id>", str(instance))) for k, v in rels.items()}
    want["data_root"] = root
    install = _get(route, "install")
    install = install if isinstance(install, dict) else {}
    for key, path in sorted(want.items()):
        if install.get(key) != path:
            run.fail(n_route, f"install.{key} is not where {n_config} reads it ({path!r})")
    if _get(route, "bearer_key", "file") != want["key_file"]:
        run.fail(n_route, "bearer_key.file is not install.key_file")
    for key in ("host", "auth", "port"):
        got, value = _get(route, "endpoint", key), _get(cfg, "server", key)
        if got != value or type(got) is not type(value):
            run.fail(n_route, f"endpoint.{key} is {got!r}, but {n_config} [server] has {value!r}")
    program = install.get("program_root")
    if (
        not isinstance(program, str)
        or install.get("config") != program.rstrip("\\") + "\\config\\ninfer.toml"
    ):
        run.fail(n_route, "install.config is not config/ninfer.toml under install.program_root")
    for key in ("data_root", "key_file", "model_path", "cache_root", "checkpoint_dir"):
        if want[key].casefold().startswith("c:\\program files"):
            run.fail(n_route, f"install.{key} is writable state under C:\\Program Files")
    _route_dirs(run, n_route, install, want)
    _route_constants(run, n_route, route, install)


def _route_constants(run: Run, n_route: str, route: dict[str, Any], install: dict[str, Any]) -> None:
    """The install roots are the layout's for the route's component tag (and its path budget's),
    and the extraction, the cache ACL and the bearer key's form and ACL are what the build writes."""
    tag = route.get("component_tag")
    if not isinstance(tag, str):
        return  # the record's shape check reports it
    for key, root in (("program_root", PROGRAM_ROOT), ("data_root", DATA_ROOT)):
        want = root.replace("<component>", tag)
        if install.get(key) != want:
            run.fail(n_route, f"install.{key} is {install.get(key)!r}, not {want!r} (the layout's)")
        if _get(install, "path_budget", key, "root") != want:
            run.fail(n_route, f"install.path_budget.{key}.root is not {want!r}")
    problems, account = route_plan_problems(route)
    for problem in problems:
        run.fail(n_route, problem)
    if install.get("cache_acl") != with_account(ROUTE_CACHE_ACL, account):
        run.fail(n_route, "install.cache_acl is not the cache ACL the layout sets")
    block = route.get("bearer_key")
    spec: dict[str, Any] = {k: v for k, v in block.items() if k != "file"} if isinstance(block, dict) else {}
    key_spec = with_account(ROUTE_KEY_SPEC, account)
    for name in sorted(set(spec) | set(key_spec)):
        if spec.get(name) != key_spec.get(name) or type(spec.get(name)) is not type(key_spec.get(name)):
            run.fail(n_route, f"bearer_key.{name} is not the key file's {key_spec.get(name)!r}")


_PLAIN_NAME = re.compile(r'^[^<>:"/\\|?*\x00-\x1f]+$')


def _plain_path_problem(path: object) -> str | None:
    """Why ``path`` is not a plain absolute Windows path (``ninfer_release.winpaths.plain_path_problem``)."""
    if not isinstance(path, str):
        return "is not a string"
    if len(path) < 4 or not (path[0].isascii() and path[0].isalpha()) or path[1:3] != ":\\":
        return "does not start with a drive letter, a colon and a backslash"
    for part in path[3:].split("\\"):
        if part in ("", ".", ".."):
            return "has an empty, '.' or '..' name"
        if not _PLAIN_NAME.match(part):
            return f"name {part!r} has a character Windows refuses in a name"
        if part.endswith((".", " ")):
            return f"name {part!r} ends in a dot or space"
        if _SHORT_NAME.match(part):
            return f"name {part!r} has the form of an 8.3 short name"
    return None


def _route_dirs(run: Run, n_route: str, install: dict[str, Any], want: dict[str, str]) -> None:
    """The route's paths are plain absolute Windows paths, and ``install.create_dirs`` is exactly
    the folders the install layout creates for them (the same rule as ``ninfer-release verify``)."""
    paths = {**want, "program_root": install.get("program_root"), "config": install.get("config")}
    for key, path in sorted(paths.items()):
        problem = _plain_path_problem(path)
        if problem is not None:
            run.fail(n_route, f"install.{key} {path!r} {problem}")
    root = want["data_root"]

    def under(path: str) -> str:
        return path[len(root) + 1 :].replace("\\", "/") if path.startswith(root + "\\") else ""

    rels = {under(want["cache_root"])}
    for key in ("key_file", "model_path", "checkpoint_dir"):
        parts = under(want[key]).split("/")
        rels.update("/".join(parts[: i + 1]) for i in range(len(parts) - (key != "checkpoint_dir")))
    dirs = [root, *(root.rstrip("\\") + "\\" + r.replace("/", "\\") for r in sorted(rels) if r)]
    if install.get("create_dirs") != dirs:
        message = "install.create_dirs is not the folders the data root's key, model, cache and checkpoint"
        run.fail(n_route, f"{message} paths need: {dirs!r}")


#: Record field path -> the component manifest key it must equal, per record (``_identity``).
#: Config schema 4 key -> the public profile field it is rendered from, and the keys the route
#: check reads: every key the config may hold (as ``verify``: ``releases/_verify.py``; a test
#: keeps them equal).
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

_EXTERNAL = ("predicate", "buildDefinition", "externalParameters")
_INTERNAL = ("predicate", "buildDefinition", "internalParameters")
_IDENTITY_FIELDS: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "qualification": (
        (("component_tag",), "component_tag"),
        (("lane",), "lane"),
        (("status",), "qualification"),
        (("bound_to", "source_commit"), "source_commit"),
        (("bound_to", "profile_id"), "profile_id"),
    ),
    "route": (
        (("component_tag",), "component_tag"),
        (("lane",), "lane"),
        (("release",), "release"),
        (("release_instance_id",), "release_instance_id"),
        (("hardware", "cuda_arch"), "cuda_arch"),
        (("hardware", "cuda_version"), "cuda_version"),
        (("hardware", "cuda_runtime_version"), "cuda_runtime_version"),
    ),
    "profile": (
        (("profile_id",), "profile_id"),
        (("lane",), "lane"),
        (("component_tag",), "component_tag"),
        (("cuda_arch",), "cuda_arch"),
    ),
    "provenance": (
        ((*_EXTERNAL, "component_tag"), "component_tag"),
        ((*_EXTERNAL, "lane"), "lane"),
        ((*_EXTERNAL, "profile_id"), "profile_id"),
        ((*_EXTERNAL, "release"), "release"),
        ((*_INTERNAL, "cuda_arch"), "cuda_arch"),
        ((*_INTERNAL, "cuda_version"), "cuda_version"),
        ((*_INTERNAL, "source_date_epoch"), "source_date_epoch"),
    ),
}

#: Record -> (field path, the contract's constant): any other value (or JSON type) fails, as the
#: literal-typed records of ``ninfer-release verify`` do (releases/_records.py).
_CONSTANTS: dict[str, tuple[tuple[tuple[str, ...], Any], ...]] = {
    "manifest": ((("schema",), 1), (("kind",), "windows-zip")),
    "model": ((("schema",), 1), (("binding",), "components.model")),
    "route": (
        (("schema",), 3),
        (("model", "binding"), "components.model"),
        (("model", "resume_onto_older_version"), False),
        (("hardware", "gpu_binding"), "uuid"),
        (("hardware", "gpu_uuid_parameter"), "gpu_uuid"),
        (("install", "program_root_writable"), False),
        (("install", "checkpoint_schema"), 3),
        (("endpoint", "auth"), "bearer"),
        (("endpoint", "loopback_only"), True),
        (("bearer_key", "stored_in_assets"), False),
    ),
}


def _constants(run: Run, names: Names, records: Records) -> None:
    """Every contract constant a record states is the contract's (:data:`_CONSTANTS`)."""
    for record, fields in _CONSTANTS.items():
        doc = getattr(records, record)
        for path, want in fields if isinstance(doc, dict) else ():
            got = _get(doc, *path)
            if got != want or type(got) is not type(want):
                run.fail(getattr(names, record), "{} is {!r}, not {!r}".format(".".join(path), got, want))


def _dotted(doc: Any, path: str) -> Any:
    return _get(doc, *path.split("."))


def _leaves(doc: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in doc.items():
        out += _leaves(value, f"{prefix}{key}.") if isinstance(value, dict) else [f"{prefix}{key}"]
    return out


def _content_bindings(run: Run, names: Names, files: Files, records: Records) -> None:
    """The config holds what the profile renders (``CONFIG_FROM_PROFILE``, no other key), the
    profile's model is the model entry's, and the provenance's internalParameters bind the config
    bytes and the model (as ``verify``)."""
    profile, model, provenance = records.profile, records.model, records.provenance
    cfg = None
    if records.config is not None:
        try:
            cfg = config_toml(records.config)
        except ValueError:
            cfg = None  # the route check reports it
    if isinstance(cfg, dict) and isinstance(profile, dict):
        for key, field_path in CONFIG_FROM_PROFILE:
            got, want = _dotted(cfg, key), _dotted(profile, field_path)
            if got != want or type(got) is not type(want):
                run.fail(names.config, f"{key} is {got!r}, but {names.profile} {field_path} renders {want!r}")
        allowed = {k for k, _ in CONFIG_FROM_PROFILE} | set(CONFIG_FROM_LAYOUT)
        for key in sorted(set(_leaves(cfg)) - allowed):
            run.fail(names.config, f"{key} is no key the config's template writes")
    if isinstance(profile, dict) and isinstance(model, dict):
        for key, field_path in (("sha256", "model.sha256"), ("local_name", "model.local_name")):
            if model.get(key) != _dotted(profile, field_path):
                run.fail(names.model, f"{key} is not {names.profile} {field_path}")
    if isinstance(provenance, dict):
        _provenance_content(run, names, files, provenance, model)


def _provenance_content(run: Run, names: Names, files: Files, provenance: dict[str, Any], model: Any) -> None:
    internal = _get(provenance, *_INTERNAL)
    internal = internal if isinstance(internal, dict) else {}
    config_sha = files.digests.get(names.config)
    if config_sha is not None and internal.get("config_bytes_sha256") != config_sha:
        run.fail(names.provenance, "internalParameters.config_bytes_sha256 is not the config's SHA-256")
    if isinstance(model, dict) and internal.get("model_sha256") != model.get("sha256"):
        run.fail(names.provenance, "internalParameters.model_sha256 is not the model entry's sha256")


def _identity(run: Run, names: Names, records: Records, zip_sha256: str | None) -> None:
    """The identity every record states equals the component manifest's (tag, lane, profile,
    source, release, release-instance id, qualification); the qualification record itself."""
    manifest = records.manifest
    if not isinstance(manifest, dict):
        return
    tag = manifest.get("component_tag")
    if not isinstance(tag, str) or f"ninfer-{tag}-windows-x64" != names.stem:
        run.fail(names.manifest, f"component_tag {tag!r} does not name this set")
    for record, fields in _IDENTITY_FIELDS.items():
        doc = getattr(records, record)
        for path, key in fields:
            if isinstance(doc, dict) and _get(doc, *path) != manifest.get(key):
                message = "{} does not equal {} {}".format(".".join(path), names.manifest, key)
                run.fail(getattr(names, record), message)
    if isinstance(records.qualification, dict):
        _qualification(run, names.qualification, records.qualification, zip_sha256)
    if isinstance(tag, str) and zip_sha256 is not None:
        instance = f"{tag}-{zip_sha256[:16]}"
        if manifest.get("release_instance_id") != instance:
            run.fail(names.manifest, f"release_instance_id is not {instance!r}")


_GATE_RESULTS = ("pass", "fail", "not_applicable")
_GATE_ID = re.compile(r"[A-Z][A-Z0-9]{0,15}")


def _gate_key(gate: str) -> tuple[str, int, str]:
    """G2 before G10: the letter prefix, the number, then any suffix (as ``verify`` orders them)."""
    m = re.fullmatch(r"([A-Z]+)([0-9]*)(.*)", gate) if _GATE_ID.fullmatch(gate) else None
    return (m.group(1), int(m.group(2) or 0), m.group(3)) if m else ("~", 0, gate)


def _ledger(reports: list[dict[str, str]]) -> dict[str, Any]:
    """The receipts' gates merged (fail > pass > not_applicable; an unknown result is a fail)."""
    rank = {"not_applicable": 0, "pass": 1, "fail": 2}
    merged: dict[str, str] = {}
    for gates in reports:
        for gate, result in gates.items():
            value = result if result in rank else "fail"
            if gate not in merged or rank[value] > rank[merged[gate]]:
                merged[gate] = value
    order = sorted(merged, key=_gate_key)
    return {
        "merged": {g: merged[g] for g in order},
        "counts": {r: sum(1 for v in merged.values() if v == r) for r in _GATE_RESULTS},
        "failed": [g for g in order if merged[g] == "fail"],
    }


def _receipt_problems(entry: dict[str, Any], bound_to: Any) -> list[str]:
    """Why one receipt entry does not qualify ``bound_to`` (what sealing demands, read back)."""
    kind = entry.get("binding")
    if kind not in ("public", "scratch_equivalence"):
        return [f"binding {kind!r} is not public or scratch_equivalence"]
    want = {
        "source_commit": _get(bound_to, "source_commit"),
        "profile_id": _get(bound_to, "profile_id"),
    }
    problems = [
        f"bound.{key} {_get(entry, 'bound', key)!r} is not bound_to's {want[key]!r}"
        for key in ("source_commit", "profile_id")
        if _get(entry, "bound", key) != want[key]
    ]
    own = (_get(entry, "bound", "package_sha256"), _get(entry, "bound", "config_sha256"))
    public = (_get(bound_to, "package_sha256"), _get(bound_to, "config_bytes_sha256"))
    if kind == "public":
        if "scratch" in entry:
            problems.append("has binding 'public' but carries scratch evidence")
        if own != public:
            problems.append("does not bind this package and config")
        return problems
    equivalence = (
        _get(entry, "scratch", "equivalence", "package_sha256"),
        _get(entry, "scratch", "equivalence", "config_sha256"),
    )
    if own == public:
        problems.append("is a scratch run naming the public package's own bytes")
    if equivalence != public:
        problems.append("does not bind this package and config (scratch.equivalence)")
    return problems


def _qualification(run: Run, name: str, doc: dict[str, Any], zip_sha256: str | None) -> None:
    """The record (schema 2) binds this package; its status follows from its receipts and gates:
    ``qualified`` needs a receipt, every receipt with a gate result, and no failed gate."""
    bound = _get(doc, "bound_to", "package_sha256")
    if zip_sha256 is not None and bound != zip_sha256:
        run.fail(name, f"bound_to.package_sha256 is {bound!r}, but the package has {zip_sha256}")
    receipts = doc["receipts"]
    reports: list[dict[str, str]] = []
    seen: dict[Any, int] = {}
    for i, r in enumerate(receipts):
        for problem in _receipt_problems(r, doc.get("bound_to")):
            run.fail(name, f"receipts[{i}] ({r.get('name')!r}) {problem}")
        digest = r.get("sha256")
        if isinstance(digest, str) and digest in seen:
            run.fail(name, f"receipts[{i}] ({r.get('name')!r}) has the SHA-256 of receipts[{seen[digest]}]")
        seen.setdefault(digest, i)
        reports.append(r["gates"])
    ledger = _ledger(reports)
    if _get(doc, "gates") != ledger:
        run.fail(name, "gates (merged, counts, failed) do not follow from the receipts' gates")
    # The rule sealing applies: a receipt, every receipt with at least one gate result (an
    # unfilled template is no evidence of a hardware run), and no failed gate.
    evidence = bool(reports) and len(reports) == len(receipts) and all(reports)
    want = "qualified" if evidence and not ledger["failed"] else "unqualified"
    if doc.get("status") != want:
        empty = sum(1 for g in reports if not g)
        bare = f", {empty} reporting no gate results" if empty else ""
        run.fail(
            name, f"status {doc.get('status')!r} does not follow from its {len(receipts)} receipts{bare}"
        )


def _state(run: Run) -> str:
    """What the verdict says of qualification: an unqualified set never reads as a plain OK."""
    if run.qualification != "qualified":
        return f"{run.qualification or 'qualification unknown'} draft, not for release"
    c, b = run.gate_counts, run.bindings
    state = (
        "qualified by scratch equivalence only"
        if b.get("scratch_equivalence") and not b.get("public")
        else "qualified"
    )
    if not any(c.values()):
        return state + ": no gates reported"
    return "{}: {} pass, {} fail, {} not applicable".format(
        state, c.get("pass", 0), c.get("fail", 0), c.get("not_applicable", 0)
    )


USAGE = "usage: ninfer-verify SET_DIR [--sums-sha256 HEX] [--json] [--require-qualified]\n"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    require_qualified = "--require-qualified" in args
    args = [a for a in args if a not in ("--json", "--require-qualified")]
    expected = None
    if "--sums-sha256" in args:
        i = args.index("--sums-sha256")
        if i + 1 >= len(args):
            sys.stderr.write(USAGE)
            return 2
        expected = args[i + 1]
        del args[i : i + 2]
    if len(args) != 1 or args[0].startswith("-"):
        sys.stderr.write(USAGE)
        return 2
    directory = args[0]
    if not os.path.isdir(directory):
        sys.stderr.write(f"error: {directory}: not a directory\n")
        return 4
    run = verify(directory, expected)
    if require_qualified and run.qualification != "qualified":
        run.fail(
            run.record or directory,
            f"status {run.qualification or 'unknown'}; --require-qualified needs a qualified set",
        )
    for w in run.warnings:
        sys.stderr.write(f"warning: {w}\n")
    for f in run.failures:
        sys.stderr.write(f"FAIL: {f}\n")
    if as_json:
        doc = {
            "ok": not run.failures,
            "directory": directory,
            "qualification": run.qualification,
            "draft": run.qualification != "qualified",
            "gates": run.gate_counts,
            "bindings": run.bindings,
            "checked": run.checked,
            "warnings": run.warnings,
            "failures": run.failures,
        }
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    elif not run.failures:
        sys.stdout.write(f"{directory}: OK ({_state(run)}; {len(run.checked)} checks)\n")
    return 5 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
