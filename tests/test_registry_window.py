"""A ``PATCH`` chunk is streamed from the file, never held in memory (issue 11: large chunks).

The chunked upload sends each chunk as a :class:`_Window` over the blob's file: at most its
length, in pieces of at most 4 MiB, from its start again for each attempt.
"""

from __future__ import annotations

import io

from ninfer_release.registry._client import _UPLOAD_PIECE, _Counting, _Window


def test_a_window_reads_its_bytes_only_and_rewinds_for_a_retry() -> None:
    data = bytes(range(256)) * 40_000  # 10,240,000 bytes
    stream = io.BytesIO(data)
    window = _Window(stream, 1_000_003, 5_000_000)
    assert len(window) == 5_000_000
    first = b"".join(window.rewound())
    assert first == data[1_000_003:6_000_003]
    assert window.take() == b""  # exhausted: never reads past its end
    again = window.rewound().take(7)
    assert again == data[1_000_003:1_000_010]  # a retry sends the same bytes from the start


def test_a_window_streams_in_bounded_pieces() -> None:
    stream = io.BytesIO(b"x" * (3 * _UPLOAD_PIECE + 5))
    pieces = [len(p) for p in _Window(stream, 0, 3 * _UPLOAD_PIECE + 5).rewound()]
    assert max(pieces) <= _UPLOAD_PIECE
    assert sum(pieces) == 3 * _UPLOAD_PIECE + 5


def test_a_short_file_gives_fewer_bytes_than_the_window_not_others() -> None:
    window = _Window(io.BytesIO(b"abc"), 1, 10)
    assert window.rewound().take() == b"bc"  # the registry refuses a body short of its length


def test_upload_bodies_are_iterables_not_file_likes() -> None:
    """urllib3 reads a body with ``read`` 16 KiB at a time; ours go in 4 MiB pieces."""
    assert not hasattr(_Window(io.BytesIO(b""), 0, 0), "read")
    assert not hasattr(_Counting(io.BytesIO(b""), 0, lambda n: None), "read")
    seen: list[int] = []
    body = _Counting(io.BytesIO(b"y" * (_UPLOAD_PIECE + 1)), _UPLOAD_PIECE + 1, seen.append)
    assert [len(p) for p in body] == [_UPLOAD_PIECE, 1] and seen == [_UPLOAD_PIECE, 1]
