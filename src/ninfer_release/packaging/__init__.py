"""packaging — deterministic Windows zip packages from a staged engine build.

Inputs: a staged engine build tree (``docs/staged-inputs.md``: ``build-info.json``,
``dependencies.lock.json``, ``bin/``, ``licenses/``), a package recipe (``packaging/*.yaml``) and
the generated members (config, profile, SPDX, NOTICE) as bytes. Output: one zip whose bytes depend
only on those inputs and the source-date epoch, plus the size, CRC-32, SHA-256 and SHA-1 of every
member, computed in the same single read that compresses it.

Flow (plan, then execute)::

    staged = load_staged_tree(dir, lane_id=..., source_commit=..., cuda_arch=..., cuda_version=...)
    recipe = load_recipe(Path("packaging/windows-native.yaml"))
    plan = plan_package(staged, recipe, {"config/ninfer.toml": cfg, "NOTICE.txt": render_notice(staged.lock),
                                         "profile/<id>.json": prof, "sbom/<stem>.spdx.json": None},
                        component=tag)                        # pure; Windows-safe (DESIGN §6)
    members = compress_members(plan.staged_entries, workdir=tmp)  # one read: digests + deflate
    check_lock_digests(staged, {m.staged_path: m.sha256 for m in members if m.staged_path})
    spdx = ...  # from member digests
    plan = plan.with_generated({"sbom/<stem>.spdx.json": spdx})
    members += compress_members(plan.generated_entries, workdir=tmp)
    result = write_zip(members, out, epoch=epoch)             # atomic; ZipResult with digests

Invariants: entries sorted by UTF-8 name bytes, ``/`` only, NFC; fixed date-time (clamped to
1980), create system 3, external attributes 0o100644; bit 11 exactly for non-ASCII names; no
directory entries, extra fields or comments, zip64 only when needed; symlinks inside the staged
tree ship the target's bytes under the link name (C23). Cases: C11 C15 C16 C17 C18 C19 C20 C23.

The verifier side reads archives with :func:`read_zip_index`, :func:`iter_member_digests`,
:func:`scan_zip` (the archive's own SHA-256 and every member's digests in one read) and
:func:`read_member`, which never extract to disk and refuse unsafe names and bombs.

Deflate engine: zlib-ng, pinned by the project (:data:`DEFLATE_ENGINE` names it); package bytes
are reproducible given the same engine, and building refuses to run without it. Reading archives
works with any zlib.
"""

from typing import TYPE_CHECKING

from ninfer_release.lazyexports import lazy_exports

if TYPE_CHECKING:  # the real imports, for type checkers; at run time each loads on first use
    from ninfer_release.packaging._ahead import StatIdentity
    from ninfer_release.packaging._cache import DeflateCache
    from ninfer_release.packaging._compress import (
        DEFAULT_CHUNK,
        CompressedMember,
        ZipLayout,
        compress_members,
    )
    from ninfer_release.packaging._paths import DEFAULT_INSTALL_ROOT, MAX_PATH, check_windows_paths
    from ninfer_release.packaging._recipe import (
        IncludeRule,
        PackagePlan,
        PackageRecipe,
        PlanEntry,
        load_recipe,
        plan_package,
        render_notice,
    )
    from ninfer_release.packaging._staged import (
        BUILD_INFO,
        LOCK,
        TODO_MARKER,
        BuildInfo,
        DependencyLock,
        EngineFile,
        Redistributable,
        StagedFile,
        StagedTree,
        VendoredSource,
        check_lock_digests,
        check_stand_in_claims,
        load_staged_tree,
        read_build_info,
    )
    from ninfer_release.packaging._zipread import (
        MemberDigest,
        ZipMember,
        ZipScan,
        iter_member_digests,
        read_member,
        read_zip_index,
        scan_zip,
        unsafe_name,
        zip_member_count,
    )
    from ninfer_release.packaging._zipwrite import (
        SelfCheckError,
        ZipEntryDigest,
        ZipResult,
        finish_zip,
        write_zip,
    )
    from ninfer_release.packaging._zlib import DEFLATE_ENGINE

_EXPORTS = {
    "._ahead": ("StatIdentity",),
    "._cache": ("DeflateCache",),
    "._compress": (
        "DEFAULT_CHUNK",
        "CompressedMember",
        "compress_members",
        "ZipLayout",
    ),
    "._paths": (
        "DEFAULT_INSTALL_ROOT",
        "MAX_PATH",
        "check_windows_paths",
    ),
    "._recipe": (
        "IncludeRule",
        "PackagePlan",
        "PackageRecipe",
        "PlanEntry",
        "load_recipe",
        "plan_package",
        "render_notice",
    ),
    "._staged": (
        "BUILD_INFO",
        "LOCK",
        "TODO_MARKER",
        "BuildInfo",
        "DependencyLock",
        "EngineFile",
        "Redistributable",
        "StagedFile",
        "StagedTree",
        "VendoredSource",
        "check_lock_digests",
        "check_stand_in_claims",
        "load_staged_tree",
        "read_build_info",
    ),
    "._zipread": (
        "MemberDigest",
        "ZipMember",
        "ZipScan",
        "iter_member_digests",
        "read_member",
        "read_zip_index",
        "scan_zip",
        "unsafe_name",
        "zip_member_count",
    ),
    "._zipwrite": (
        "SelfCheckError",
        "ZipEntryDigest",
        "ZipResult",
        "write_zip",
        "finish_zip",
    ),
    "._zlib": ("DEFLATE_ENGINE",),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "BUILD_INFO",
    "DEFAULT_CHUNK",
    "DEFAULT_INSTALL_ROOT",
    "DEFLATE_ENGINE",
    "LOCK",
    "MAX_PATH",
    "TODO_MARKER",
    "BuildInfo",
    "CompressedMember",
    "DeflateCache",
    "DependencyLock",
    "EngineFile",
    "IncludeRule",
    "MemberDigest",
    "PackagePlan",
    "PackageRecipe",
    "PlanEntry",
    "Redistributable",
    "SelfCheckError",
    "StagedFile",
    "StagedTree",
    "StatIdentity",
    "VendoredSource",
    "ZipEntryDigest",
    "ZipLayout",
    "ZipMember",
    "ZipResult",
    "ZipScan",
    "check_lock_digests",
    "check_stand_in_claims",
    "check_windows_paths",
    "compress_members",
    "finish_zip",
    "iter_member_digests",
    "load_recipe",
    "load_staged_tree",
    "plan_package",
    "read_build_info",
    "read_member",
    "read_zip_index",
    "render_notice",
    "scan_zip",
    "unsafe_name",
    "write_zip",
    "zip_member_count",
]
