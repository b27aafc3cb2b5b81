#!/bin/sh
# Prints, sorted, every function that NVIDIA's nvml.h declares, the
# unversioned names of older NVML versions included (the header declares them
# under NVML_NO_UNVERSIONED_FUNC_DEFS): the export list of libnvidia-ml.so.1
# as the header gives it. nvml.symbols was made with it; the tests/nvml suite
# runs it again and compares.
#   symbols_from_header.sh NVML_INCLUDE_DIR
set -eu
[ $# -eq 1 ] || { echo "usage: $0 NVML_INCLUDE_DIR" >&2; exit 2; }
[ -f "$1/nvml.h" ] || { echo "$0: no nvml.h in $1" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo '#include <nvml.h>' >"$tmp/h.c"
# gcc writes a prototype line per declared function (-aux-info):
#   /* nvml.h:3731:NC */ extern nvmlReturn_t nvmlInit_v2 (void);
${CC:-gcc} -DNVML_NO_UNVERSIONED_FUNC_DEFS -I"$1" -aux-info "$tmp/aux" -fsyntax-only "$tmp/h.c"
grep 'nvml\.h:' "$tmp/aux" | sed -E 's|^/\*[^*]*\*/ *||; s| *\(.*||; s|.*[ *]||' | LC_ALL=C sort -u
