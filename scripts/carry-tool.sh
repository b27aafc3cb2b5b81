#!/usr/bin/env bash
# Copies a dynamically linked tool and the shared libraries it needs into a
# folder of build/tools, which travels with build/ to the GPU machine (whose
# image may lack the tool): the yardstick iperf3 and iproute2's tc for
# scripts/gpu-remote.sh. Left out, to keep build/ small: glibc's own
# libraries and those mearasd itself needs (build/bin/mearasd's ldd), which
# the GPU machine has since it runs mearasd. Run it there as
#   LD_LIBRARY_PATH=DEST/lib DEST/NAME ...
#
#   carry-tool.sh BINARY DEST     e.g. carry-tool.sh /usr/bin/iperf3 build/tools/iperf3
# Exit status: 0 copied (or already current), 1 not possible (one line says why).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { echo "usage: carry-tool.sh BINARY DEST" >&2; exit 2; }
bin=$1 dest=$2
name=$(basename "$bin")
[ -x "$bin" ] || { echo "carry-tool: $bin missing: no $dest/$name" >&2; exit 1; }
# "libfoo.so.1 => /path/libfoo.so.1 (0x...)": name and path of each resolved library
libs_of() { ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'; }
if ! ldd "$bin" >/dev/null 2>&1; then
	echo "carry-tool: $bin is not dynamically linked: copied alone" >&2
fi
if ldd "$bin" 2>/dev/null | grep -q 'not found'; then
	echo "carry-tool: $bin lacks libraries here: $(ldd "$bin" | grep 'not found' | tr -s ' \t\n' ' ')" >&2
	exit 1
fi
skip=" libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 "
if [ -x "$top/build/bin/mearasd" ]; then
	skip+="$(libs_of "$top/build/bin/mearasd" | awk '{ printf "%s ", $1 }')"
fi
mkdir -p "$dest/lib" || exit 1
cmp -s "$bin" "$dest/$name" || cp "$bin" "$dest/$name" || exit 1
carried=()
while read -r soname path; do
	case "$skip" in *" $soname "*) continue ;; esac
	cmp -s "$path" "$dest/lib/$soname" || cp -L "$path" "$dest/lib/$soname" || exit 1
	carried+=("$soname")
done < <(libs_of "$bin")
echo "carry-tool: $bin -> $dest/$name (libraries: ${carried[*]:-none})"
