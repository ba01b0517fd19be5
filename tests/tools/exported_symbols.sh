#!/bin/sh
# SPDX-License-Identifier: MIT
# liboxr.so exports the public API and nothing else: the defined dynamic
# symbols (nm -D) are exactly the functions include/oxr/*.h declares, and
# every such declaration carries OXR_API (oxr/api.h; the objects are built
# with -fvisibility=hidden).  A declaration here is a line at column 0 that
# names oxr_...( and is not static, a typedef or a preprocessor line.
# usage: exported_symbols.sh liboxr.so include/oxr
set -eu
lib=$1
inc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/set_diff.sh"

nm -D --defined-only "$lib" | awk '{ print $3 }' | sort >"$tmp/exported"
cat "$inc"/*.h | grep -E '^[A-Za-z_]' | grep -Ev '^(static|typedef|extern "C")' |
	grep -E '\boxr_[a-z0-9_]+\(' >"$tmp/decls" || true
sed -E 's/^[^(]*\b(oxr_[a-z0-9_]+)\(.*/\1/' "$tmp/decls" | sort >"$tmp/declared"

fail=0
if grep -v '^OXR_API ' "$tmp/decls" >"$tmp/unmarked"; then
	echo "declared in $inc without OXR_API (so not exported):"
	sed 's/^/  /' "$tmp/unmarked"
	fail=1
fi
set_diff "$tmp/exported" "$tmp/declared" "exported by $lib but declared in no public header:" \
	"declared in $inc but not exported by $lib:" || fail=1
echo "$(wc -l <"$tmp/exported") symbols exported, $(wc -l <"$tmp/declared") functions declared"
exit $fail
