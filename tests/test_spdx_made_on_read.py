"""The SBOM writers' made-on-read sequences (``jsonbytes.MadeOnRead``): a list's reads, fresh dicts."""

from __future__ import annotations

import pytest

from ninfer_release.jsonbytes import MadeOnRead
from ninfer_release.sbom._spdx import _contains


def _made(n: int) -> MadeOnRead[int]:
    return MadeOnRead(range(n), lambda i: _contains("SPDXRef-Package", f"SPDXRef-File-{i}"))


@pytest.mark.parametrize("n", [0, 1, 5])
def test_reads_equal_a_list_of_the_same_items(n: int) -> None:
    made, listed = _made(n), [_contains("SPDXRef-Package", f"SPDXRef-File-{i}") for i in range(n)]
    assert len(made) == n
    assert list(made) == listed
    for index in range(-n, n):
        assert made[index] == listed[index]
    for window in (slice(None), slice(1, None), slice(None, -1), slice(None, None, 2), slice(3, 1)):
        assert made[window] == listed[window]
    with pytest.raises(IndexError):
        made[n]
    with pytest.raises(IndexError):
        made[-n - 1]


def test_each_read_makes_a_new_dict() -> None:
    made = _made(2)
    first = made[0]
    first["relationshipType"] = "DESCRIBES"
    assert made[0]["relationshipType"] == "CONTAINS"
    assert made[0] is not made[0]
