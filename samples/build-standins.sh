#!/usr/bin/env bash
# Rebuild the sample stand-in binaries reproducibly with mingw-w64 (Debian gcc-mingw-w64-x86-64,
# binutils-mingw-w64-x86-64). Output: samples/standins/ (default) or the directory given as $1.
#
#   ninfer-server-sm_89.exe   engine stand-in for the RTX 4090 lane (-DNINFER_CUDA_ARCH=sm_89)
#   ninfer-server-sm_86.exe   engine stand-in for the RTX 3090 lane (-DNINFER_CUDA_ARCH=sm_86)
#   dstorage.dll              STAND-IN for Microsoft DirectStorage (sample only)
#   dstoragecore.dll          STAND-IN for Microsoft DirectStorage (sample only)
#
# Import tables name the real DLLs through import libraries generated from samples/src/imports/*.def
# (real export names of cudart64_13.dll, msvcp140.dll, vcruntime140.dll, vcruntime140_1.dll), so
# no wheel is needed at build time. Byte-identical on every run and in every checkout location:
# no PE timestamp (--no-insert-timestamp), no compiler ident, stripped, fixed flags, no paths.
# tests/test_samples_standins.py rebuilds into a temp dir and compares with the committed files.
set -euo pipefail
export LC_ALL=C TZ=UTC
umask 022

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/standins}
cc=${MINGW_CC:-x86_64-w64-mingw32-gcc}
windres=${MINGW_WINDRES:-x86_64-w64-mingw32-windres}
dlltool=${MINGW_DLLTOOL:-x86_64-w64-mingw32-dlltool}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cd "$here/src"

cflags=(-std=c11 -Os -s -Wall -Wextra -Werror -ffreestanding -fno-builtin -fno-ident
        -fno-asynchronous-unwind-tables -fno-stack-protector -ffile-prefix-map="$here"=.
        -nostdlib -Wl,--no-insert-timestamp -Wl,--build-id=none)

for def in imports/*.def; do
  name=$(basename "$def" .def)
  "$dlltool" --temp-prefix "$work/t-$name" -d "$def" -l "$work/lib$name.a"
done
"$dlltool" --temp-prefix "$work/t-dstoragecore" -d dstoragecore.def -l "$work/libdstoragecore-import.a"

# The DirectStorage stand-ins (dstoragecore first: dstorage.dll imports from it).
for dll in dstoragecore dstorage; do
  "$windres" -O coff -i "$dll.rc" -o "$work/$dll.res.o"
  extra=()
  if [ "$dll" = dstorage ]; then extra=("$work/libdstoragecore-import.a"); fi
  # A fixed image base: the automatic one hashes the output path, which differs per checkout.
  "$cc" "${cflags[@]}" -shared -Wl,--disable-auto-image-base -Wl,-e,ninfer_dll_entry -o "$work/$dll.dll" \
    "$dll.c" "$dll.def" "$work/$dll.res.o" "${extra[@]}" -lkernel32
done

# The engine stand-in, once per CUDA arch.
for arch in sm_89 sm_86; do
  "$windres" -O coff -DNINFER_CUDA_ARCH="$arch" -i ninfer-server.rc -o "$work/ninfer-server-$arch.res.o"
  "$cc" "${cflags[@]}" -DNINFER_CUDA_ARCH="$arch" -mconsole -Wl,-e,ninfer_start \
    -o "$work/ninfer-server-$arch.exe" ninfer-server.c "$work/ninfer-server-$arch.res.o" \
    "$work/libcudart64_13.a" "$work/libmsvcp140.a" "$work/libvcruntime140.a" \
    "$work/libvcruntime140_1.a" "$work/libdstorage.a" -lkernel32
done

for f in ninfer-server-sm_89.exe ninfer-server-sm_86.exe dstorage.dll dstoragecore.dll; do
  install -m 0644 "$work/$f" "$out/$f"
done
echo "built: $out/{ninfer-server-sm_89.exe,ninfer-server-sm_86.exe,dstorage.dll,dstoragecore.dll}"
