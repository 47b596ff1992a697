"""Windows PE reading (pefile): version resource, CUDA version, import tables; lock cross-check.

Only the import, delay-import and resource directories are parsed (``fast_load``): a full parse
of a 500 MB cuBLAS DLL takes about a minute, this takes milliseconds (toolchain-facts.md).

What "version" means per redistributable group (checked by :func:`check_pe_against_lock`),
decided from the real DLLs of the wheels the lock names:

* ``cuda`` — the CUDA version is in the version *strings*: ``cudart64_13.dll`` from wheel
  ``nvidia-cuda-runtime`` 13.3.29 says ``FileDescription = "NVIDIA CUDA Runtime, Version 13.3.29"``
  and ``ProductName = "NVIDIA CUDA 13.3.29 Runtime"``, while its FileVersion is NVIDIA's fixed
  ``6,14,11,13030`` (fixed block 6.14.11.13030, ProductVersion block 10.0.10011.16384). The lock
  version (the wheel version) must agree with the version from the strings (one may name fewer
  components). For ``cudart`` this is the CUDA runtime version (what the route block needs); for
  other NVIDIA libraries it is the version their strings name: ``cublas64_13.dll`` of wheel
  ``nvidia-cublas`` 13.3.0.5 says ``"NVIDIA CUDA BLAS Library, Version 13.3.0"`` (a prefix of the
  wheel version, accepted; a different version never is).
* ``crt`` — the MSVC runtime DLLs of wheel ``msvc-runtime`` 14.44.35112 carry FileVersion
  ``14.44.35211.0``: the wheel names the toolset, the DLLs the redistributable build. Only the
  VC++ line ``major.minor`` (14.44) is shared, so that is what must agree.
* ``directstorage`` / ``other`` — the numeric FileVersion must equal the lock version (trailing
  ``.0`` components ignored: ``1.2.2`` == ``1.2.2.0``).

A redistributable DLL without a version resource cannot be cross-checked and is refused, except a
stand-in (``stand_in: true``), which is allowed to carry none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ninfer_release.errors import InputError, Problem
from ninfer_release.sbom._records import PeInfo

_MACHINES = {0x8664: "x86_64", 0x14C: "x86", 0xAA64: "arm64", 0x1C4: "arm"}
_VERSION_IN_TEXT = re.compile(r"(?<![\d.])(\d{1,4}(?:\.\d{1,6}){1,3})(?![\d.])")
#: Version-string keys searched for the CUDA version, most specific first.
_CUDA_KEYS = ("FileDescription", "ProductName")
_NUMERIC = re.compile(r"^\d+(?:\.\d+)*$")
#: How the samples' placeholders label themselves ("STAND-IN for Microsoft DirectStorage",
#: "NInfer engine stand-in (sample; not the real engine)"): any version string saying so.
_STAND_IN_WORDING = re.compile(r"\bstand[- ]?in\b", re.IGNORECASE)


def _decode(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _dotted(ms: int, ls: int) -> str:
    return f"{ms >> 16}.{ms & 0xFFFF}.{ls >> 16}.{ls & 0xFFFF}"


def _strings(pe: Any) -> dict[str, str]:
    tables: list[tuple[str, dict[str, str]]] = []
    for file_info in getattr(pe, "FileInfo", None) or []:
        for entry in file_info:
            for table in getattr(entry, "StringTable", None) or []:
                lang = _decode(getattr(table, "LangID", b""))
                values = {_decode(k): _decode(v).strip() for k, v in table.entries.items()}
                tables.append((lang, values))
    if not tables:
        return {}
    # Prefer US English (0409) when several languages are present; otherwise the first table.
    for lang, values in tables:
        if lang.lower().startswith("0409"):
            return dict(sorted(values.items()))
    return dict(sorted(tables[0][1].items()))


def cuda_version_from_strings(strings: dict[str, str], *, where: str = "pe") -> str | None:
    """The CUDA version named in NVIDIA version strings, or ``None`` when none names CUDA.

    Reads ``FileDescription`` and ``ProductName`` (``NVIDIA CUDA Runtime, Version 13.3.29`` and
    ``NVIDIA CUDA 13.3.29 Runtime`` → ``13.3.29``); NVIDIA's comma-separated FileVersion
    ``6,14,11,N`` never matches.

    Raises:
        InputError: two strings name different CUDA versions.
    """
    found: dict[str, str] = {}
    for key in _CUDA_KEYS:
        value = strings.get(key, "")
        if "cuda" not in value.lower():
            continue
        match = _VERSION_IN_TEXT.search(value)
        if match:
            found[key] = match.group(1)
    if len(set(found.values())) > 1:
        detail = ", ".join(f"{k}={v}" for k, v in sorted(found.items()))
        raise InputError(
            problems=[Problem(file=where, field="version strings", message=f"disagree: {detail}")]
        )
    return next(iter(found.values()), None)


def _import_names(entries: Iterable[Any]) -> tuple[str, ...]:
    return tuple(sorted({_decode(e.dll).lower() for e in entries if getattr(e, "dll", None)}))


def read_pe_bytes(data: bytes, *, name: str) -> PeInfo:
    """:func:`read_pe` for an in-memory image (e.g. a zip member); ``name`` labels errors.

    Raises:
        InputError: ``data`` is not a PE image.
    """
    return _read(name=name, data=data)


def read_pe(path: Path) -> PeInfo:
    """Machine, versions, version strings, CUDA version and imports of the PE image at ``path``.

    Uses ``pefile.PE(path, fast_load=True)`` and parses only the import, delay-import and
    resource directories (milliseconds even for a 500 MB DLL).

    Raises:
        InputError: the file cannot be read or is not a PE image (names the file).
    """
    return _read(name=str(path), path=path)


def _read(*, name: str, path: Path | None = None, data: bytes | None = None) -> PeInfo:
    import pefile

    try:
        pe = (
            pefile.PE(str(path), fast_load=True) if path is not None else pefile.PE(data=data, fast_load=True)
        )
    except (pefile.PEFormatError, OSError) as exc:
        raise InputError(problems=[Problem(file=name, message=f"not a readable PE image: {exc}")]) from None
    try:
        pe.parse_data_directories(
            directories=[
                pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
                pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"],
                pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_RESOURCE"],
            ]
        )
        signer = _authenticode_signer(pe, pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_SECURITY"])
        machine_id = int(pe.FILE_HEADER.Machine)
        file_version = product_version = None
        fixed = getattr(pe, "VS_FIXEDFILEINFO", None)
        if fixed:
            vs = fixed[0]
            file_version = _dotted(vs.FileVersionMS, vs.FileVersionLS)
            product_version = _dotted(vs.ProductVersionMS, vs.ProductVersionLS)
        strings = _strings(pe)
        return PeInfo(
            machine=_MACHINES.get(machine_id, f"0x{machine_id:04x}"),
            file_version=file_version,
            product_version=product_version,
            version_strings=MappingProxyType(strings),
            cuda_version=cuda_version_from_strings(strings, where=name),
            imports=_import_names(getattr(pe, "DIRECTORY_ENTRY_IMPORT", None) or []),
            delay_imports=_import_names(getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", None) or []),
            signer=signer,
        )
    finally:
        _close(pe)


#: Upper bound on the Authenticode blob read, in bytes (real ones are 10-30 KiB).
_MAX_SIGNATURE = 1 << 20


def _authenticode_signer(pe: Any, index: int) -> str | None:
    """The signing certificate's subject CN of the security directory (``WIN_CERTIFICATE``:
    8-byte header, then PKCS#7 DER), or ``None``: unsigned, oversized, unparsable, or not exactly
    one certificate that issued no other in the bag. The directory's address is a file offset."""
    import warnings

    from cryptography.hazmat.primitives.serialization import pkcs7
    from cryptography.x509.oid import NameOID

    directories = pe.OPTIONAL_HEADER.DATA_DIRECTORY
    if index >= len(directories):
        return None
    offset, size = int(directories[index].VirtualAddress), int(directories[index].Size)
    data = pe.__data__
    if size <= 8 or size > _MAX_SIGNATURE or offset + size > len(data):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cryptography's "parsed as BER" note on real signatures
            certs = pkcs7.load_der_pkcs7_certificates(bytes(data[offset + 8 : offset + size]))
    except ValueError:
        return None
    issuers = {c.issuer for c in certs}
    leaves = [c for c in certs if c.subject not in issuers]
    names = [a.value for a in leaves[0].subject.get_attributes_for_oid(NameOID.COMMON_NAME)] if leaves else []
    return str(names[0]) if len(leaves) == 1 and len(names) == 1 else None


def _close(pe: Any) -> None:
    """What ``pefile.PE.close`` does, without its ``gc.collect()``: the file's mmap is closed.

    pefile 2024.8.26 runs a full garbage collection on every close, whose cost grows with the
    whole heap (the build reads a lane's DLLs after its file list is in memory: ~30 ms per DLL at
    10k staged files, issue 13); nothing of ours needs it (no reference cycles hold the mmap).
    """
    import mmap

    data = getattr(pe, "__data__", None)
    if isinstance(data, mmap.mmap):
        data.close()


def _numeric(version: str) -> tuple[int, ...] | None:
    text = version.strip().replace(",", ".").replace(" ", "")
    if not _NUMERIC.match(text):
        return None
    parts = [int(p) for p in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def versions_equal(a: str, b: str) -> bool:
    """Whether two numeric versions are equal, trailing ``.0`` ignored (``1.2.2`` == ``1.2.2.0``)."""
    return _numeric(a) is not None and _numeric(a) == _numeric(b)


def _same_release(have: tuple[int, ...] | None, want: tuple[int, ...]) -> bool:
    """Equal, or one names fewer components and is a prefix of the other (at least major.minor).

    NVIDIA strings may name fewer components than the wheel version (``13.3`` vs ``13.3.29``) or
    more (a four-part library version); neither may contradict the other.
    """
    if have is None:
        return False
    if have == want:
        return True
    shorter, longer = sorted((have, want), key=len)
    return len(shorter) >= 2 and longer[: len(shorter)] == shorter


def pe_component_version(pe: PeInfo, *, group: str | None) -> str | None:
    """The version a CycloneDX component of this PE file carries.

    ``cuda``: the CUDA version from the version strings; otherwise the numeric FileVersion
    (``14.44.35211.0``). ``None`` when the image has no usable version.
    """
    if group == "cuda":
        return pe.cuda_version
    return pe.file_version


def pe_version_summary(pe: PeInfo) -> str:
    """One line naming a PE image's version resource as read, or saying it has none.

    ``PE version resource: FileVersion 14.44.35211.0, ProductVersion 14.44.35211.0`` followed by
    the raw version strings (``FileDescription='…'``), sorted; without a resource
    ``PE version resource: none (version NOASSERTION)`` — no version is ever invented for it.
    """
    if pe.file_version is None and not pe.version_strings:
        return "PE version resource: none (version NOASSERTION)."
    fixed = (
        f"FileVersion {pe.file_version}, ProductVersion {pe.product_version}"
        if pe.file_version
        else "no fixed block"
    )
    strings = "; ".join(f"{k}={v!r}" for k, v in sorted(pe.version_strings.items()))
    return f"PE version resource: {fixed}" + (f"; strings: {strings}." if strings else ".")


def stand_in_marker(pe: PeInfo) -> tuple[str, str] | None:
    """The first version string (key, value) saying the image is a stand-in, or ``None``.

    A file whose own version resource says "stand-in" must be declared as one by the input that
    ships it (``build-info.json`` ``engine_files[].stand_in``, lock ``redistributables[].stand_in``;
    issue 8 item 5): a placeholder is never presented as the real thing.
    """
    for key, value in sorted(pe.version_strings.items()):
        if _STAND_IN_WORDING.search(value):
            return key, value
    return None


def check_pe_against_lock(
    *, path: str, group: str | None, lock_version: str, pe: PeInfo, stand_in: bool = False
) -> list[Problem]:
    """Problems where the PE version of the shipped file ``path`` disagrees with the lock.

    Policy per group (module docstring; decided from the real wheels' DLLs): ``cuda`` compares
    the CUDA version from the version strings with the lock version (one may name fewer
    components than the other, e.g. ``13.3`` vs ``13.3.29``, but never a different one); ``crt`` compares
    ``major.minor``; others compare the whole numeric FileVersion (trailing zeros ignored). A
    missing version resource is a problem unless ``stand_in``. Each problem names the file and
    both versions. Returns an empty list when they agree.
    """

    def problem(message: str) -> list[Problem]:
        return [Problem(file=path, field="version", message=message)]

    want = _numeric(lock_version)
    if want is None:
        return problem(f"lock version {lock_version!r} is not numeric; cannot compare with the PE version")
    if group == "cuda":
        if pe.cuda_version is None:
            if stand_in:
                return []
            return problem(f"version strings name no CUDA version; lock says {lock_version}")
        if not _same_release(_numeric(pe.cuda_version), want):
            return problem(f"PE version strings say CUDA {pe.cuda_version}, lock says {lock_version}")
        return []
    if pe.file_version is None:
        if stand_in:
            return []
        return problem(f"has no version resource; lock says {lock_version}")
    have = _numeric(pe.file_version)
    assert have is not None  # built from integers by _dotted
    if group == "crt":
        if (*have, 0, 0)[:2] != (*want, 0, 0)[:2]:
            return problem(
                f"PE FileVersion {pe.file_version} is not of the VC++ line of lock version {lock_version} "
                "(major.minor must agree)"
            )
        return []
    if have != want:
        return problem(f"PE FileVersion {pe.file_version} differs from lock version {lock_version}")
    return []
