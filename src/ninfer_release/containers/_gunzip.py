"""Reading a staged ``.tar.gz`` fast: the gzip members inflated with zlib-ng (RFC 1952; issue 13).

An image build unpacks the staged runtime archive into a layer. Python's ``tarfile`` inflates a
``r|gz`` stream with the interpreter's zlib (about 220 MiB/s of output here); zlib-ng inflates the
same stream at about 790 MiB/s. Inflating is exact with any engine (the output is the stream's
content, fixed by the format), so the bytes of the image do not depend on it — unlike deflating,
whose output is engine-specific: our layers are still *deflated* with the interpreter's zlib
(:mod:`._layers`). Without zlib-ng the interpreter's zlib inflates (same bytes, slower).

:class:`GunzipStream` is the read side ``tarfile.open(fileobj=..., mode="r|")`` takes: the
uncompressed bytes of every gzip member of ``raw`` in turn. Each member's CRC-32 and ISIZE are
checked by the inflater (``wbits`` 31); a damaged or truncated stream raises :class:`GzipError`.
Inflated output is bounded per call (``max_length``), so a small stream that inflates to a lot
never sits in memory at once.
"""

from __future__ import annotations

import io
import zlib as _stdlib_zlib
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import zlib as _engine
else:
    try:
        from zlib_ng import zlib_ng as _engine
    except ImportError:  # pragma: no cover - zlib-ng is a declared dependency
        _engine = _stdlib_zlib

#: The two bytes every gzip member starts with (RFC 1952 §2.3.1 ID1, ID2).
GZIP_MAGIC = b"\x1f\x8b"
#: ``wbits`` for a gzip-wrapped deflate stream with the header and trailer checked.
_GZIP_WBITS = 16 + 15
#: Compressed bytes read at a time: small, because what one call does not inflate (the input
#: left over once :data:`_OUTPUT_PIECE` bytes came out) is copied again for the next call.
_INPUT_PIECE = 64 * 1024
#: Compressed bytes read from the file at a time (then fed in :data:`_INPUT_PIECE` slices).
_READ = 1 << 20
#: At most this many inflated bytes per call of the inflater.
_OUTPUT_PIECE = 1 << 20
#: What a damaged gzip stream raises inside the inflater, with either engine.
_ENGINE_ERRORS: tuple[type[Exception], ...] = (_stdlib_zlib.error, _engine.error)


#: CRC-32 (RFC 1952 §8) with the faster engine: exact with either (a checksum, not a format choice).
crc32 = _engine.crc32


class GzipError(ValueError):
    """The gzip stream is damaged or truncated (a message for the user, no traceback)."""


def is_gzip(head: bytes) -> bool:
    """True when ``head`` (the first bytes of a file) starts a gzip member."""
    return head[:2] == GZIP_MAGIC


class GunzipStream:
    """A read-only stream of the inflated bytes of the gzip members in ``raw``.

    ``raw`` is read in :data:`_READ`-byte pieces and only as far as needed: after the last member
    what follows stays unread unless it starts another member (the caller may read the rest,
    e.g. to hash the whole file). Trailing bytes that are not a gzip member end the stream,
    as ``tarfile``'s own reader ignores them.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._offset = 0  # inflated bytes returned so far (tell)
        self._raw = raw
        self._raw_buf = b""
        self._raw_pos = 0
        self._inflater = _engine.decompressobj(_GZIP_WBITS)
        self._started = False
        self._ended = False
        self._buf = b""
        self._pos = 0

    def _raw_piece(self) -> bytes | memoryview:
        """The next at most :data:`_INPUT_PIECE` compressed bytes (``raw`` is read
        :data:`_READ` bytes at a time); empty at the end of ``raw``."""
        if self._raw_pos >= len(self._raw_buf):
            self._raw_buf, self._raw_pos = self._raw.read(_READ), 0
        piece = memoryview(self._raw_buf)[self._raw_pos : self._raw_pos + _INPUT_PIECE]
        self._raw_pos += len(piece)
        return piece

    def _next_member(self) -> bytes | None:
        """After a member: the start of the next one (a new inflater), or ``None`` at the end."""
        rest = bytes(self._inflater.unused_data or self._raw_piece())
        if len(rest) < len(GZIP_MAGIC):
            rest += bytes(self._raw_piece())  # the magic may straddle two pieces
        if not is_gzip(rest):
            return None
        self._inflater = _engine.decompressobj(_GZIP_WBITS)
        return rest

    def _more_input(self) -> bytes | memoryview | None:
        """The next compressed bytes to inflate, or ``None`` when the stream has ended."""
        z = self._inflater
        if z.unconsumed_tail:
            return z.unconsumed_tail
        if z.eof:
            return self._next_member()
        data = self._raw_piece()
        if not data:
            raise GzipError("the gzip stream is truncated" if self._started else "empty gzip stream")
        self._started = True
        return data

    def _fill(self) -> bool:
        """Inflate the next piece into the buffer; False once the stream has ended."""
        data = self._more_input()
        if data is None:
            self._ended = True
            return False
        try:
            self._buf = self._inflater.decompress(data, _OUTPUT_PIECE)
        except _ENGINE_ERRORS as exc:
            raise GzipError(f"damaged gzip stream ({exc})") from None
        self._pos = 0
        return True

    def read(self, n: int = -1) -> bytes:
        """``n`` inflated bytes, fewer only at the end (all that is left for ``n < 0``); ``b""``
        at the end. Each byte is copied once, from the inflater's output into the result (a
        whole piece asked for as it came out is not copied at all)."""
        pieces: list[bytes | memoryview] = []
        have = 0
        while (n < 0 or have < n) and not self._ended:
            if self._pos >= len(self._buf):
                self._fill()
                continue
            take = len(self._buf) - self._pos if n < 0 else min(n - have, len(self._buf) - self._pos)
            whole = self._pos == 0 and take == len(self._buf)
            pieces.append(self._buf if whole else memoryview(self._buf)[self._pos : self._pos + take])
            self._pos += take
            have += take
        self._offset += have
        if len(pieces) == 1 and isinstance(pieces[0], bytes):
            return pieces[0]
        return b"".join(pieces)

    def tell(self) -> int:
        """The number of inflated bytes read so far."""
        return self._offset

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move to inflated byte ``offset`` (``whence`` must be ``SEEK_SET``) by reading forward;
        returns the new position (short of ``offset`` only at the end of the stream). What
        ``tarfile``'s seekable mode (``r:``) does between members.

        Raises:
            io.UnsupportedOperation: a position behind the current one, or another ``whence``.
        """
        if whence != io.SEEK_SET or offset < self._offset:
            raise io.UnsupportedOperation("a gunzip stream is read forward only")
        while self._offset < offset and self.read(min(offset - self._offset, _OUTPUT_PIECE)):
            pass
        return self._offset
