# SPDX-License-Identifier: MIT
# Sourced by the tools' list checks (exported_symbols.sh, man_pages.sh).
# set_diff A B ONLY_IN_A ONLY_IN_B: A and B are sorted files of one item a
# line; prints the items of each that the other lacks, under the heading
# given, and returns 1 when there are any (uses $tmp for scratch).
set_diff() {
	rc=0
	if comm -23 "$1" "$2" | grep . >"$tmp/only_a"; then
		echo "$3"
		sed 's/^/  /' "$tmp/only_a"
		rc=1
	fi
	if comm -13 "$1" "$2" | grep . >"$tmp/only_b"; then
		echo "$4"
		sed 's/^/  /' "$tmp/only_b"
		rc=1
	fi
	return $rc
}
