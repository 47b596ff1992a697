"""Both SBOMs are byte-identical across processes whatever the hash seed, time zone or locale."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = r"""
import hashlib, sys
from types import MappingProxyType
from ninfer_release.sbom import (
    DependencyRecord, FileRecord, PeInfo, ShippedFile, cyclonedx_dependency_inventory, spdx_file_inventory,
)

def h(text, algo):
    return hashlib.new(algo, text.encode()).hexdigest()

paths = ["bin/ninfer-server.exe", "bin/cudart64_13.dll", "bin/Qt6Core_d.dll", "bin/Qt6Core-d.dll",
         "licenses/é.txt"]
files = [FileRecord(path=p, size=1, sha1=h(p, "sha1"), sha256=h(p, "sha256"), license="MIT AND Custom-EULA")
         for p in paths]
spdx = spdx_file_inventory(
    package_name="engine", package_version="1.0#3", package_file_name="engine.zip", supplier="OMP",
    download_location=None, files=files, spdx_file_path="sbom/engine.spdx.json",
    namespace_base="https://example.invalid/spdx", document_name="engine", epoch=1700000000,
    creator_tool="ninfer-release-0.1.0", declared_license="Apache-2.0",
    extracted_licenses={"LicenseRef-Custom-EULA": "text"},
)
deps = [
    DependencyRecord(kind="engine", name="ninfer", version="1", supplier="OMP", license="Apache-2.0",
                     files=(ShippedFile(path=paths[0], sha256=h(paths[0], "sha256")),)),
    DependencyRecord(kind="redistributable", name="nvidia-cuda-runtime", version="13.3.29", group="cuda",
                     purl="pkg:pypi/nvidia-cuda-runtime@13.3.29", supplier="NVIDIA Corporation",
                     license="LicenseRef-NVIDIA-CUDA-EULA",
                     files=(ShippedFile(path=paths[1], sha256=h(paths[1], "sha256")),)),
    DependencyRecord(kind="vendored", name="a", version="1", license="MIT", purl="pkg:generic/a@1"),
    DependencyRecord(kind="vendored", name="b", version="2", license="BSD-3-Clause", purl="pkg:generic/b@2"),
]
pes = {
    paths[0]: PeInfo(machine="x86_64", file_version=None, product_version=None,
                     imports=("cudart64_13.dll", "kernel32.dll")),
    paths[1]: PeInfo(machine="x86_64", file_version="6.14.11.13030", product_version=None,
                     cuda_version="13.3.29",
                     version_strings=MappingProxyType({"ProductName": "NVIDIA CUDA 13.3.29 Runtime"})),
}
cdx = cyclonedx_dependency_inventory(
    component_name="engine", component_version="1.0", component_purl=None, supplier="OMP", dependencies=deps,
    pe_infos=pes, serial_identity="https://example.invalid/engine/1.0", epoch=1700000000,
    tool_name="ninfer-release", tool_version="0.1.0", tool_vendor="OMP",
)
sys.stdout.write(hashlib.sha256(spdx).hexdigest() + " " + hashlib.sha256(cdx).hexdigest() + "\n")
"""


def _digests(**env: str) -> str:
    full = {**os.environ, **env}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=full, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


#: SHA-256 of the SPDX and CycloneDX bytes SCRIPT writes (spdx-tools 0.8.5, cyclonedx-python-lib
#: 11.12). A change here is a change of published bytes: update these only on purpose, after
#: reading the diff of the two documents (run SCRIPT with the old and new code).
GOLDEN = (
    "efc14d9e3c3f4965c0487b4b0ebb6d1c4471668d9eee79b43294fa37469f291b "
    "7fc5d275f5da4c67c28910259a0ab1658900160e11628f89ee4941b7d3aae719\n"
)


def test_sboms_identical_across_hash_seed_time_zone_and_locale() -> None:
    """C33 (byte-identical BOMs) and the SPDX counterpart, proven in separate processes."""
    first = _digests(PYTHONHASHSEED="1", TZ="UTC", LC_ALL="C")
    second = _digests(PYTHONHASHSEED="4242", TZ="Asia/Kolkata", LC_ALL="C.UTF-8")
    assert first == second
    assert first == GOLDEN, f"SBOM bytes changed: {first!r}; update GOLDEN only on purpose"
