"""The per-asset size budget (issue 12): GitHub rejects release assets of 2 GiB or more.

The release definition's ``asset_budget_bytes`` (default
:data:`~ninfer_release.manifests.DEFAULT_ASSET_BUDGET`, 2 GiB - 1) bounds every published asset.
A package passing :data:`WARN_FRACTION` of it is built with a warning; one above it is refused,
naming its largest members (what to move out of the package). ``publish --to files://`` and the
GitHub workflow step refuse an over-budget asset before writing or uploading anything.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from ninfer_release.errors import InputError, Problem, PublishError

log = logging.getLogger(__name__)

#: A package above this fraction of the budget is built with a warning.
WARN_FRACTION = 0.9
#: How many of the largest members the refusal names.
LARGEST_SHOWN = 5


def _largest(members: Iterable[tuple[str, int]]) -> str:
    top = sorted(members, key=lambda m: (-m[1], m[0]))[:LARGEST_SHOWN]
    return ", ".join(f"{name} ({size:,} bytes)" for name, size in top)


def check_package_budget(
    *, package: str, size: int, budget: int, members: Sequence[tuple[str, int]], definition: str
) -> str | None:
    """Refuse a package over ``budget`` bytes; the warning line when it passes 90 % of it.

    ``members`` are ``(zip path, bytes stored in the zip)``; the refusal names the largest.

    Raises:
        InputError: ``size > budget`` (exit 4; nothing is written: the build's output appears
            only when complete).
    """
    if size > budget:
        raise InputError(
            problems=[
                Problem(
                    file=package,
                    message=f"{size:,} bytes is over the asset budget of {budget:,} bytes "
                    f"(asset_budget_bytes in {definition}; GitHub rejects assets of 2 GiB or more); "
                    f"largest members: {_largest(members)}",
                )
            ]
        )
    if size > budget * WARN_FRACTION:
        warning = (
            f"{package}: {size:,} bytes is {size / budget:.0%} of the asset budget of {budget:,} bytes; "
            f"largest members: {_largest(members)}"
        )
        log.warning("%s", warning)
        return warning
    return None


def refuse_over_budget(set_dir: Path, names: Sequence[str], budget: int, *, target: str) -> None:
    """Refuse to publish ``set_dir`` to ``target`` when any of its files is over ``budget`` bytes.

    Raises:
        PublishError: one problem per over-budget file, before anything is written (exit 7).
    """
    sizes = {name: (set_dir / name).stat().st_size for name in names}
    over = [
        Problem(
            file=str(set_dir / name),
            message=f"{size:,} bytes is over the asset budget of {budget:,} bytes; not sent to {target}",
        )
        for name, size in sizes.items()
        if size > budget
    ]
    if over:
        raise PublishError(problems=over)
