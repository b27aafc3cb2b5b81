#!/usr/bin/env bash
# Installs what the build and the tests need on a fresh Debian 12 machine.
# Each area lists its Debian packages in scripts/deps/apt-*.txt and its PyPI
# packages in scripts/deps/pip-*.txt (one per line, '#' comments allowed).
# Idempotent: packages already present are not fetched again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
want_apt=$(cat "$here"/deps/apt-*.txt 2>/dev/null | sed 's/#.*//' | tr -s ' \n' '\n' | sort -u)
missing=()
for p in $want_apt; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: apt: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
want_pip=$(cat "$here"/deps/pip-*.txt 2>/dev/null | sed 's/#.*//' | tr -s ' \n' '\n' | sort -u)
if [ -n "$want_pip" ]; then
	# shellcheck disable=SC2086
	python3 -m pip install -q --disable-pip-version-check $want_pip
fi
