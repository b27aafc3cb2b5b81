#!/bin/sh
# Prints mearas's version, for the packages and the DKMS tree: the VERSION
# file at the top when there is one, else `git describe` of the nearest tag
# vX.Y[.Z] (a leading "v" dropped, "-N-gHASH" after it written "+N.gHASH" so
# that it stays a valid Debian version), else 0.0.0.
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -s "$top/VERSION" ]; then
	v=$(sed -n '1{s/[[:space:]]//g;p;q}' "$top/VERSION")
else
	v=$(git -C "$top" describe --tags --match 'v[0-9]*' 2>/dev/null | sed -e 's/^v//' -e 's/-\([0-9][0-9]*\)-g/+\1.g/')
fi
case $v in
[0-9]*) echo "$v" ;;
*) echo 0.0.0 ;;
esac
