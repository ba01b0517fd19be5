# shellcheck shell=bash
# Sourced by the bench scripts (no shebang: not run alone).
# field FILE SECTION KEY BYTES: one number of a JSON row (bench_pingpong
# writes one row a line).
field() {
	awk -v sec="\"$2\"" -v key="\"$3\"" -v bytes="$4" '
		index($0, sec ":") { in_sec = 1; next }
		/^  \]/ { in_sec = 0 }
		in_sec && index($0, "{\"bytes\": " bytes ",") {
			i = index($0, key ": ")
			if (i) {
				s = substr($0, i + length(key) + 2)
				sub(/[,}].*/, "", s)
				print s
			}
		}' "$1"
}
