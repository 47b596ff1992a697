"""What the image SBOM finds in a base image by reading its layers (containers.read_base_packages)."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from ninfer_release.containers import read_base_packages
from ninfer_release.errors import InputError

GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
STATUS = b"""Package: libc6
Status: install ok installed
Maintainer: GNU Libc Maintainers <debian-glibc@lists.debian.org>
Architecture: amd64
Version: 2.36-9+deb12u4

Package: removed-one
Status: deinstall ok config-files
Version: 1.0
"""
DEP5 = b"""Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: glibc

Files: *
Copyright: 1991-2023 Free Software Foundation, Inc.
License: LGPL-2.1+

Files: debian/*
Copyright: 1999-2023 Debian glibc maintainers
License: GPL-2+
"""


def _layer(layout: Path, files: dict[str, bytes]) -> str:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    blob = gzip.compress(raw.getvalue(), mtime=0)
    digest = hashlib.sha256(blob).hexdigest()
    (layout / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    (layout / "blobs" / "sha256" / digest).write_bytes(blob)
    return f"sha256:{digest}"


def test_dpkg_packages_with_their_dep5_licence_and_copyright(tmp_path: Path) -> None:
    digest = _layer(tmp_path, {"var/lib/dpkg/status": STATUS, "usr/share/doc/libc6/copyright": DEP5})
    (libc,) = read_base_packages(tmp_path, [(digest, GZIP)])
    assert (libc.name, libc.version, libc.purl_type, libc.arch) == ("libc6", "2.36-9+deb12u4", "deb", "amd64")
    assert libc.supplier.startswith("GNU Libc Maintainers")
    assert libc.license == "GPL-2+ AND LGPL-2.1+"
    assert libc.copyright == "1991-2023 Free Software Foundation, Inc.\n1999-2023 Debian glibc maintainers"


def test_busybox_banner_and_a_later_whiteout(tmp_path: Path) -> None:
    binary = b"\x7fELF...BusyBox v1.36.1 (Debian 1:1.36.1-9)\x00...BusyBox is copyrighted by many authors\x00"
    first = _layer(tmp_path, {"bin/busybox": binary})
    (busybox,) = read_base_packages(tmp_path, [(first, GZIP)])
    assert (busybox.version, busybox.build, busybox.supplier, busybox.license) == (
        "1.36.1",
        "1:1.36.1-9",
        "Debian",
        "GPL-2.0-only",
    )
    assert busybox.copyright == "BusyBox is copyrighted by many authors"
    gone = _layer(tmp_path, {"bin/.wh.busybox": b""})
    assert read_base_packages(tmp_path, [(first, GZIP), (gone, GZIP)]) == ()


def test_a_missing_or_broken_layer_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="layer blob missing"):
        read_base_packages(tmp_path, [("sha256:" + "0" * 64, GZIP)])
    (tmp_path / "blobs" / "sha256").mkdir(parents=True)
    (tmp_path / "blobs" / "sha256" / ("1" * 64)).write_bytes(gzip.compress(b"not a tar", mtime=0))
    with pytest.raises(InputError, match="not a readable layer tar"):
        read_base_packages(tmp_path, [("sha256:" + "1" * 64, GZIP)])


BUSYBOX_STATUS = b"""Package: busybox-static
Status: install ok installed
Maintainer: Debian Install System Team <debian-boot@lists.debian.org>
Architecture: amd64
Version: 1:1.35.0-4+deb12u1+b1
"""
OS_RELEASE = b'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n'
BANNER = b"\x00BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1)\x00BusyBox is copyrighted by many authors\x00"


def test_busybox_listed_by_its_dpkg_package_is_that_package_with_the_distro(tmp_path: Path) -> None:
    """Issue 35 item 5: the Debian identity from dpkg metadata, not a generic purl."""
    files = {
        "bin/busybox": BANNER,
        "etc/os-release": OS_RELEASE,
        "var/lib/dpkg/status": BUSYBOX_STATUS,
        "var/lib/dpkg/info/busybox-static.list": b"/bin/busybox\n",
    }
    (busybox,) = read_base_packages(tmp_path, [(_layer(tmp_path, files), GZIP)])
    assert (busybox.name, busybox.version, busybox.purl_type, busybox.purl_namespace) == (
        "busybox-static", "1:1.35.0-4+deb12u1+b1", "deb", "debian",
    )  # fmt: skip
    assert (busybox.arch, busybox.distro, busybox.path) == ("amd64", "debian-12", "bin/busybox")
    assert busybox.sha256 == hashlib.sha256(BANNER).hexdigest()  # the binary, not the status file
    assert busybox.license == "GPL-2.0-only"  # BusyBox's, as the binary says
    assert busybox.copyright == "BusyBox is copyrighted by many authors"
    from ninfer_release.sbom._image import _base_package_purl

    assert _base_package_purl(busybox) == (
        "pkg:deb/debian/busybox-static@1:1.35.0-4%2Bdeb12u1%2Bb1?arch=amd64&distro=debian-12"
    )


def test_busybox_no_dpkg_list_names_stays_what_its_banner_says(tmp_path: Path) -> None:
    files = {"bin/busybox": BANNER, "var/lib/dpkg/status": BUSYBOX_STATUS}
    found = read_base_packages(tmp_path, [(_layer(tmp_path, files), GZIP)])
    assert [(p.name, p.purl_type, p.distro) for p in found] == [
        ("busybox", "generic", None),
        ("busybox-static", "deb", None),  # no os-release: no distro qualifier
    ]


def test_sample_base_takes_the_dpkg_metadata_of_the_package_that_installed_busybox(tmp_path: Path) -> None:
    from ninfer_release.containers._samples import _dpkg_evidence

    root = tmp_path / "host"
    (root / "bin").mkdir(parents=True)
    (root / "var/lib/dpkg/info").mkdir(parents=True)
    (root / "etc").mkdir()
    busybox = root / "bin" / "busybox"
    busybox.write_bytes(BANNER)
    other = b"Package: libc6\nStatus: install ok installed\nArchitecture: amd64\nVersion: 2.36\n"
    (root / "var/lib/dpkg/status").write_bytes(other + b"\n" + BUSYBOX_STATUS)
    (root / "var/lib/dpkg/info/libc6.list").write_bytes(b"/lib\n")
    (root / "var/lib/dpkg/info/busybox-static.list").write_bytes(b"/.\n/bin\n/bin/busybox\n/usr/share/doc\n")
    (root / "etc/os-release").write_bytes(OS_RELEASE)
    entries = {e.path: e.data for e in _dpkg_evidence(busybox, root)}
    assert entries == {
        "etc/os-release": OS_RELEASE,
        "var/lib/dpkg/status": BUSYBOX_STATUS,
        "var/lib/dpkg/info/busybox-static.list": b"/bin/busybox\n",
    }
    # Another binary that no package lists gets no dpkg claim.
    (root / "bin" / "other").write_bytes(BANNER)
    assert _dpkg_evidence(root / "bin" / "other", root) == []
