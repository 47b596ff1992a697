"""``releases/_toolchain.py`` reads each distribution's metadata header once, as ``importlib.metadata``
would give it (issue 13: the build's fixed cost): the resolved toolchain equals the one computed
with ``dist.metadata`` / ``dist.version`` / ``dist.requires``, for the installed environment and for
distributions shaped like the edge cases (no requirements, CRLF text, egg-info ``requires.txt``).
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import pytest

from ninfer_release.releases import _toolchain
from ninfer_release.releases._toolchain import resolved_dependencies


def test_the_installed_toolchain_resolves_as_through_importlib_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast = resolved_dependencies()
    assert fast  # the tool is installed (editable) in the test environment
    # The reference: every field through importlib.metadata's own accessors (before issue 13).
    monkeypatch.setattr(
        _toolchain, "_headers", lambda dist: {"Name": dist.metadata["Name"], "Version": dist.version}
    )
    monkeypatch.setattr(_toolchain, "_requires", lambda dist, headers: dist.requires or [])
    assert fast == resolved_dependencies()


def test_every_installed_distribution_has_the_same_header_fields() -> None:
    for dist in metadata.distributions():
        headers = _toolchain._headers(dist)
        assert headers["Name"] == dist.metadata["Name"]
        assert headers["Version"] == dist.version
        assert _toolchain._requires(dist, headers) == list(dist.requires or [])


class _TextDist(metadata.Distribution):
    """A distribution made of in-memory files."""

    def __init__(self, files: dict[str, str]) -> None:
        self._files = files

    def read_text(self, filename: str) -> str | None:
        return self._files.get(filename)

    def locate_file(self, path: str | os.PathLike[str]) -> Path:  # pragma: no cover - unused
        raise NotImplementedError


@pytest.mark.parametrize(
    "files",
    [
        {"METADATA": "Metadata-Version: 2.1\nName: lone\nVersion: 1.0\n\nRequires-Dist: not-a-field\n"},
        {"METADATA": "Name: crlf\r\nVersion: 2.0\r\nRequires-Dist: a\r\n\r\nbody\n\n"},
        {"METADATA": "Name: folded\nVersion: 3.0\nSummary: a\n  b\nRequires-Dist: x ; extra == 'y'\n"},
        {"PKG-INFO": "Name: egg\nVersion: 4.0\n\nlong\n\ntext\n", "requires.txt": "dep\n\n[extra]\nother\n"},
        {"PKG-INFO": "Name: bare-egg\nVersion: 5.0\n"},
    ],
)
def test_edge_shaped_metadata_reads_as_importlib_metadata_reads_it(files: dict[str, str]) -> None:
    dist = _TextDist(files)
    headers = _toolchain._headers(dist)
    assert headers["Name"] == dist.metadata["Name"]
    assert headers["Version"] == dist.version
    assert _toolchain._requires(dist, headers) == list(dist.requires or [])
