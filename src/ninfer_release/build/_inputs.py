"""Where a lane's staged inputs are: the one rule for ``build lane``, ``build release`` and
``image build`` (docs/staged-inputs.md, docs/containers.md).

``--inputs DIR`` is either the directory holding one staged tree per lane (``DIR/<lane>/``, the
layout ``samples fetch`` writes and ``build release`` requires) or one lane's tree itself (it
holds ``build-info.json``). When both could apply, ``DIR/<lane>/`` wins: it is the documented
layout of every command, so a parent directory that also holds a stray ``build-info.json`` still
builds each lane from its own tree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ninfer_release.errors import InputError, Problem

#: Supplier / tool vendor the SBOMs name (native sets and images alike). Here, beside the rule
#: every lane kind shares, so ``image build`` need not import the native lane's executor.
SBOM_SUPPLIER = "OMP NInfer"

#: The file that marks a directory as one lane's staged tree (docs/staged-inputs.md).
BUILD_INFO = "build-info.json"


def require_inputs_directory(inputs: Path) -> None:
    """``--inputs`` that exists must be a directory (issue 36: a file given as ``--inputs`` was
    reported as a missing lane tree under it). A missing one is left to the caller's own message,
    which names the lane tree expected.

    Raises:
        InputError: ``inputs`` exists and is not a directory (exit 4).
    """
    if os.path.lexists(inputs) and not inputs.is_dir():
        raise InputError(problems=[Problem(file=str(inputs), field="--inputs", message="not a directory")])


def lane_staged_dir(inputs: Path, lane_id: str) -> Path:
    """The staged tree of lane ``lane_id`` under ``--inputs``: ``inputs/<lane>/`` when it is a
    directory, else ``inputs`` itself when it holds ``build-info.json``.

    Raises:
        InputError: ``inputs`` is not a directory, or holds neither (exit 4), naming the
            directory expected.
    """
    require_inputs_directory(inputs)
    if (inputs / lane_id).is_dir():
        return inputs / lane_id
    if (inputs / BUILD_INFO).is_file():
        return inputs
    raise InputError(
        problems=[
            Problem(
                file=str(inputs),
                field=lane_id,
                message=f"no staged tree for lane {lane_id!r} (expected {inputs / lane_id}/)",
            )
        ]
    )


def check_release_inputs(inputs: Path, modes: Mapping[str, str]) -> None:
    """``build release`` reads ``inputs/<lane>/`` per lane: refuse one lane's tree given instead.

    ``modes`` maps each lane id of the definition to its mode (``carry`` lanes read no inputs).
    Without this check the first other lane would load that tree and fail on a field of it (e.g.
    its ``cuda_arch``), which says nothing about the real mistake.

    Raises:
        InputError: ``inputs`` holds ``build-info.json`` and lacks a built lane's directory (exit 4).
    """
    require_inputs_directory(inputs)
    if not (inputs / BUILD_INFO).is_file():
        return
    built = [lane_id for lane_id, mode in modes.items() if mode != "carry"]
    if any(not (inputs / lane_id).is_dir() for lane_id in built):
        raise InputError(
            problems=[
                Problem(
                    file=str(inputs),
                    message=f"is one lane's staged tree (it holds build-info.json); build release needs "
                    f"DIR/<lane>/ for each lane ({', '.join(built)}): give the directory holding them, or "
                    f"use 'build lane LANE --inputs {inputs}'",
                )
            ]
        )
