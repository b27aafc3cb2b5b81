#!/bin/bash
# On a GPU machine: the real driver's cuGetProcAddress table and integrity
# check test vectors (tables/README.md). Needs `make tables` first.
#   tables/run-tables.sh OUTDIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
b=$here/../build/tables
out=$(mkdir -p "$1" && cd "$1" && pwd)
real=${PROBE_REAL_LIBCUDA:-$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')}
real=$(readlink -f "${real:-/usr/lib/x86_64-linux-gnu/libcuda.so.1}")
"$b/proctable" "$real" "$b/names.txt" "$b/versions.txt" >"$out/proctable.tsv"
for i in 1 2; do "$b/integrity_vectors" "$real" >"$out/integrity-$i.json"; done
echo "tables: $(grep -vc '^#' "$out/proctable.tsv") answers, integrity vectors in $out"
