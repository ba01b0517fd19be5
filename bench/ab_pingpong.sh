#!/usr/bin/env bash
# A/B: the TCP ping-pong of two builds of oxr in the same run, round by
# round (A, B, A, B ...), so that both see the same moods of the machine:
# the 8 B half round trip (median, us) and the 1 MiB streaming bandwidth
# (median window, MB/s).  Prints each round, then the medians over the
# rounds and B/A.  For a change that must not step back ("within the noise
# or better"), A is the build before it, B the one after.
#   usage: bench/ab_pingpong.sh -A OLD_BUILD -B NEW_BUILD [-r ROUNDS] [--quick]
# Each build needs bin/oxr-run and bin/bench_pingpong (Release, OXR_BENCH=ON).
# The machine should be quiet: another process on its cores moves both.
set -euo pipefail

a='' b='' rounds=7 quick=()
while [ $# -gt 0 ]; do
	case $1 in
	-A) a=$2; shift ;;
	-B) b=$2; shift ;;
	-r) rounds=$2; shift ;;
	--quick) quick=(--quick) ;;
	*) echo "usage: $0 -A OLD_BUILD -B NEW_BUILD [-r ROUNDS] [--quick]" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$a" ] && [ -n "$b" ] || { echo "usage: $0 -A OLD_BUILD -B NEW_BUILD [-r ROUNDS]" >&2; exit 2; }
for d in "$a" "$b"; do
	for f in oxr-run bench_pingpong; do
		[ -x "$d/bin/$f" ] || { echo "$0: $d/bin/$f missing (build with OXR_BENCH=ON)" >&2; exit 2; }
	done
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# field FILE SECTION KEY BYTES: one figure of bench_pingpong's JSON
# shellcheck source=bench/json_field.sh
. "$(dirname "$0")/json_field.sh"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-6s %-2s %12s %14s\n' round ab "8 B us" "1 MiB MB/s"
for ((k = 1; k <= rounds; k++)); do
	for side in A B; do
		dir=$a
		[ $side = B ] && dir=$b
		j=$out/$side.$k.json
		OXR_TRANSPORT=tcp "$dir/bin/oxr-run" -n 2 "$dir/bin/bench_pingpong" "${quick[@]}" \
			--json "$j" >"$out/$side.$k.txt" 2>&1 || { cat "$out/$side.$k.txt" >&2; exit 1; }
		lat=$(field "$j" latency median_us 8)
		bw=$(field "$j" bandwidth median_mb_s 1048576)
		echo "$lat" >>"$out/$side.lat"
		echo "$bw" >>"$out/$side.bw"
		printf '%-6s %-2s %12s %14s\n' "$k" "$side" "$lat" "$bw"
	done
done
la=$(median <"$out/A.lat") lb=$(median <"$out/B.lat")
ba=$(median <"$out/A.bw") bb=$(median <"$out/B.bw")
echo
echo "A: $a"
echo "B: $b"
awk -v la="$la" -v lb="$lb" -v ba="$ba" -v bb="$bb" -v n="$rounds" 'BEGIN {
	printf "medians of %d rounds: 8 B latency A %.2f us, B %.2f us, B/A %.3f (lower is better)\n", n, la, lb, lb / la
	printf "                      1 MiB bandwidth A %.0f MB/s, B %.0f MB/s, B/A %.3f (higher is better)\n", ba, bb, bb / ba
}'
