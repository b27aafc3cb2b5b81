#!/bin/sh
# replay.sh [TARGET...]: runs every input kept under regress/TARGET/ (crash
# inputs of bugs fixed since) through build/fuzz_TARGET once; non-zero exit
# when any of them fails again. Default: every target with such inputs.
set -e
cd "$(dirname "$0")"
[ $# -gt 0 ] || set -- $(ls regress)
export FUZZ_FATBIN="$PWD/../unit/build/kernels.fatbin"
for name in "$@"; do
	[ -x build/fuzz_$name ] || { echo "build/fuzz_$name missing: run make -C tests/fuzz" >&2; exit 1; }
	echo "== $name: $(ls regress/$name | wc -l) input(s)"
	build/fuzz_$name -runs=1 regress/$name/*
done
