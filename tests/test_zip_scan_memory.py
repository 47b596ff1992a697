"""scan_zip holds a bounded number of member streams, whatever the member count (issue 13).

Each member stream holds an inflater (~40 KiB of zlib state) and hash objects; one kept per
member until the end of the scan cost ~40 KiB per member (400 MiB at 10k members). A completed
stream is finished a few members later, and the digests are the same as ever.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ninfer_release.packaging import _zipread, iter_member_digests, scan_zip
from zip_support import ours


def test_streams_are_finished_as_members_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {f"licenses/f{i:03d}.txt": (b"%d " % i) * (50 + i) for i in range(200)}
    path = ours(tmp_path, files)
    expected = list(iter_member_digests(path, sha1=False))
    live = {"now": 0, "most": 0}

    class Counted(_zipread._MemberStream):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            live["now"] += 1
            live["most"] = max(live["most"], live["now"])

        def finish(self) -> _zipread.MemberDigest:
            live["now"] -= 1
            return super().finish()

    monkeypatch.setattr(_zipread, "_MemberStream", Counted)
    scan = scan_zip(path, sha1=False)
    assert list(scan.members) == expected
    assert live["now"] == 0
    assert live["most"] <= _zipread._LAG + 1
