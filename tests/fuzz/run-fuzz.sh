#!/bin/sh
# run-fuzz.sh TARGET SECONDS: runs build/fuzz_TARGET (exec, fatbin, link_msg,
# link_handshake, link_records, remote_records, vm_slot) for SECONDS on a fresh copy of its
# seed corpus; non-zero exit when it finds a crash, a leak, a sanitizer report
# or a timeout (crash inputs land in build/artifacts/).
set -e
cd "$(dirname "$0")"
name=$1
secs=${2:-25}
[ -x build/fuzz_$name ] || { echo "build/fuzz_$name missing: run make -C tests/fuzz" >&2; exit 1; }
rm -rf build/corpus-$name
mkdir -p build/corpus-$name build/artifacts
export FUZZ_FATBIN="$PWD/../unit/build/kernels.fatbin"
# crash inputs of bugs fixed since (regress/, replay.sh) seed the corpus too
regress=
[ -d regress/$name ] && regress=regress/$name
exec build/fuzz_$name -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
	-print_final_stats=1 -artifact_prefix=build/artifacts/$name- build/corpus-$name build/seeds-$name $regress
