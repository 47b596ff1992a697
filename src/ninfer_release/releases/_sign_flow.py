"""Signing flows: sign a local set, or sign a published one where it is stored (issue 14).

* :func:`sign_local` — verify the set, then write its Sigstore bundles into ``<set dir>.sigstore/``
  (or ``out``), never into the 11-file set.
* :func:`sign_published` — sign the set and attach the bundles beside its tag in the store it was
  published to: an OCI referrer tagged ``<tag>.sigstore`` (``oci://``, ``dir://``) or the directory
  ``DIR/<tag>.sigstore/`` (``files://``).

Signing a set that does not verify is refused: a signature is a promise about the bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ninfer_release.atomic import within
from ninfer_release.errors import InputError, IntegrityError, Problem
from ninfer_release.progress import SILENT, Progress
from ninfer_release.releases._contract import AssetNames, stem_from_names
from ninfer_release.releases._records import ComponentManifest
from ninfer_release.releases._signing import SigningKey, sign_set, signatures_dir_for, write_bundles
from ninfer_release.releases._verify import verify_set

if TYPE_CHECKING:
    from ninfer_release.registry import RegistryOptions
    from ninfer_release.releases._publish import PublishResult


def _verified_names(set_dir: Path) -> AssetNames:
    report = verify_set(set_dir)
    if not report.ok or report.stem is None:
        raise IntegrityError(
            problems=[Problem(file=str(set_dir), message=f"does not verify: {f}") for f in report.failures]
            or [Problem(file=str(set_dir), message="not an asset set")]
        )
    stem = stem_from_names(sorted(p.name for p in set_dir.iterdir()))
    assert stem is not None  # verify_set found it
    return AssetNames(stem=stem)


def sign_local(set_dir: Path, key: SigningKey, *, out: Path | None = None) -> list[Path]:
    """Verify the set in ``set_dir`` and write the bundles of its provenance and ``SHA256SUMS``.

    ``out`` defaults to the sibling ``<set dir>.sigstore/``. Returns the bundle paths.

    Raises:
        IntegrityError: the set does not verify (exit 5).
        InputError: a bundle with other bytes is already there, or ``out`` is ``set_dir`` or
            inside it (exit 4).
    """
    if out is not None and within(out, set_dir):
        message = f"is inside the set {set_dir}; signatures are written beside a set, never into it"
        raise InputError(problems=[Problem(file=str(out), field="--out", message=message)])
    names = _verified_names(set_dir)
    return write_bundles(out or signatures_dir_for(set_dir), sign_set(set_dir, names, key))


def sign_published(
    set_dir: Path,
    target: str,
    key: SigningKey,
    *,
    draft: bool = False,
    registry: RegistryOptions | None = None,
    transfer: Progress = SILENT,
) -> PublishResult:
    """Sign the set in ``set_dir`` and attach the bundles beside its tag (``<tag>.draft`` when
    ``draft``) in the store ``target``, where :func:`~._flows.publish_set` published it.

    Raises:
        IntegrityError: the set does not verify (exit 5).
        PublishError: nothing is published at the tag, or other signatures are attached (exit 7).
    """
    from ninfer_release.releases._publish import (
        DRAFT_SUFFIX,
        open_publisher,
        parse_target,
        refuse_store_in_set,
    )

    parsed = parse_target(target)
    refuse_store_in_set(parsed, set_dir, target)
    names = _verified_names(set_dir)
    manifest = ComponentManifest.parse((set_dir / names.manifest).read_bytes(), source=names.manifest)
    tag = manifest.component_tag + (DRAFT_SUFFIX if draft else "")
    publisher = open_publisher(parsed, options=registry, progress=transfer)
    bundles = sign_set(set_dir, names, key)
    return publisher.attach_signatures(tag, bundles, epoch=manifest.source_date_epoch)
