#!/usr/bin/env bash
# The control plane at scale (issue 22): real groups on this machine,
# launched with oxr-run, oxr over tcp, for each group size P:
#   revoke   bench_revoke: propagation (rank 0's oxr_group_revoke to the last
#            rank's failed wait), REVOKE frames a rank sent per revoke (mean
#            over the ranks; the most of a rank but 0, which gathers the
#            times and so is linked to all), the reset (first rank in
#            oxr_group_reset to the last one out), and a rank's CPU time over
#            its revoke and reset (mean over the ranks)
#   shrink   bench_shrink under oxr-run --survive: rank P/2 SIGKILLs itself;
#            the kill to the last survivor's return from oxr_group_shrink (and
#            to the last survivor's failed wait), REVOKE frames and handshakes
#            a rank over the round, shrink frames a rank sent, and a rank's
#            CPU time from its wait to its shrink's return (mean)
#   The CPU times are each rank's own work.  Wall time on 2 cores is about
#   P x that / cores: the ranks take turns, so a time's growth is its CPU's
#   growth times P's.
#   barrier  bench_barrier bitmap: the median time of one barrier on rank 0
#            (bitmap is the default barrier above 2 ranks)
# then one table, with each figure's growth from 64 to 1,024 ranks beside
# the issue's bound: growth at most O(log P) x the time-sharing factor P/cores,
# i.e. (log2(1024) x 1024) / (log2(64) x 64) = 26.7x (the cores cancel).
#
#   bench/run_control_plane.sh [-B BUILD_DIR] [-n "16 64 256 1024"] [--quick]
#                              [-l "ondemand eager"] [-t SECONDS]
#                              [-b "revoke shrink barrier"]
#     -B DIR    the build with bin/oxr-run, bench_revoke, bench_shrink and
#               bench_barrier (default: build)
#     -n SIZES  group sizes (default 16 64 256 1024)
#     --quick   16 and 64 only
#     -l LIST   OXR_LINKS values to run, each a set of rows (default ondemand,
#               what the library's default, auto, is above 64 ranks; eager
#               links do not boot 1,024 ranks on a 2-core machine nor reset
#               256, see bench/results/2026-12-07-*.txt)
#     -t S      seconds one run may take before oxr-run stops it (default 300)
#     -b LIST   which of revoke, shrink, barrier to run (default all three)
#
# Rounds shrink as P grows (a 1,024-rank round takes seconds on 2 cores):
# see rounds() below.  A run that fails or passes -t is reported (FAIL in the
# table, its messages below it) and the others go on; the script exits 1 when
# one failed, 0 otherwise (it measures: no figure is a goal here).
set -euo pipefail
# all of it is read before it runs ({ ...; exit; }): an edit of this file
# during a half-hour run does not reach the run
{
export OXR_TRANSPORT=tcp
cd "$(dirname "$0")/.."

build=build sizes="16 64 256 1024" links=ondemand limit=300 benches="revoke shrink barrier"
while [ $# -gt 0 ]; do
	case $1 in
	-B) build=$2; shift ;;
	-n) sizes=$2; shift ;;
	--quick) sizes="16 64" ;;
	-l) links=$2; shift ;;
	-t) limit=$2; shift ;;
	-b) benches=$2; shift ;;
	*) echo "usage: $0 [-B BUILD_DIR] [-n SIZES] [--quick] [-l LINKS] [-t SECONDS]" \
		"[-b BENCHES]" >&2
	   exit 2 ;;
	esac
	shift
done
bin=$build/bin
for f in oxr-run bench_revoke bench_shrink bench_barrier; do
	[ -x "$bin/$f" ] || { echo "$0: $bin/$f is not built" >&2; exit 1; }
done
cores=$(nproc)
# the joining and the boot's waits may take as long as a run may
export OXR_BOOT_TIMEOUT=${OXR_BOOT_TIMEOUT:-$limit}
# a wait, a reset or a shrink inside the programs: well inside -t, so that a
# stuck one says what it waited for rather than being killed from outside
tmo_ms=$(( (limit > 120 ? 60 : limit / 2) * 1000 ))
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0

# revoke rounds and warm-up, barriers and warm-up, kills: for P
rounds() {
	if [ "$1" -le 64 ]; then echo "10 2 200 20 3"
	elif [ "$1" -le 256 ]; then echo "5 1 50 5 1"
	else echo "3 1 20 3 1"; fi
}

# shellcheck source=bench/busy.sh
. bench/busy.sh

# one KEY PATTERN CMD...: runs CMD (an oxr-run) under -t; the line of its
# stdout that starts with PATTERN goes to $out/KEY, or the failure, with
# its messages, to $out/KEY.fail.  bench_shrink's oxr-run exits with the
# victim's SIGKILL by design (128 + 9): there a rank's own failure is an
# "exited with status" line of oxr-run's.
one() {
	local key=$1 pat=$2 t0 t1 rc=0 line load secs
	shift 2
	load=$(busy)
	echo "=== $key (load $load): OXR_LINKS=$OXR_LINKS $*"
	t0=$(date +%s%N)
	timeout -k 10 $((limit + 30)) "$@" >"$out/run.out" 2>"$out/run.err" || rc=$?
	t1=$(date +%s%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	grep -v "^$pat" "$out/run.out" | head -3 || true
	line=$(grep "^$pat" "$out/run.out" | tail -1 || true)
	if [ -n "$line" ] && { [ $rc -eq 0 ] || { [ "$pat" = "shrink " ] &&
		! grep -q 'exited with status' "$out/run.err"; }; }; then
		echo "$line"
		echo "$line" >"$out/$key"
		return 0
	fi
	failed=1
	{
		if grep -q -- '--timeout .* ran out' "$out/run.err" || [ $rc -eq 124 ]; then
			echo "FAIL: stopped after $secs s (-t $limit); load $load at its start"
		else
			echo "FAIL: exit $rc$([ -z "$line" ] && echo ', no result line') after $secs s;" \
				"load $load at its start"
		fi
		# the first distinct messages, then the first lines: 1,024 ranks
		# saying one thing each is one thing.  The programs' and oxr-run's
		# own lines first: a failed shrink at 1,024 ranks leaves some
		# 10^6 lines of oxr's warnings (links that broke or did not open)
		echo "  $(grep -c . "$out/run.err" || true) lines on stderr," \
			"$(grep -c '^oxr\[[0-9]*\] ' "$out/run.err" || true) of them oxr's warnings"
		echo "  the programs' and oxr-run's lines, distinct (first 8, numbers masked):"
		grep -v '^oxr\[[0-9]*\] ' "$out/run.err" | sed 's/[0-9][0-9]*/N/g' | sort | uniq -c |
			sort -rn | head -8 | cut -c1-300 | sed 's/^/  | /' || true
		echo "  oxr's warnings, distinct (first 4, numbers masked):"
		grep '^oxr\[[0-9]*\] ' "$out/run.err" | sed 's/[0-9][0-9]*/N/g' | sort | uniq -c |
			sort -rn | head -4 | cut -c1-300 | sed 's/^/  | /' || true
		echo "  the programs' first lines (what went wrong first, most likely):"
		grep '^bench_' "$out/run.err" | head -3 | cut -c1-300 | sed 's/^/  | /' || true
	} >"$out/$key.fail"
	echo "    $(head -1 "$out/$key.fail") (its messages below the table)"
}

# a number after TEXT in a result line
num() { sed -n "s/.*$2 *\([0-9][0-9.]*\).*/\1/p" <<<"$1" | head -1; }
val() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }
ms() { awk -v u="$1" 'BEGIN { if (u == "") print "-"; else printf "%.2f", u / 1000 }'; }

echo "# $(date +%F), $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $cores cores," \
	"OXR_TRANSPORT=tcp, -t $limit s, waits inside the programs $tmo_ms ms"
for l in $links; do
	export OXR_LINKS=$l
	for n in $sizes; do
		read -r rr rw bi bw kills < <(rounds "$n")
		if [ "$kills" -gt $((n - 2)) ]; then # each kill needs rank 0, the victim, rank n-1
			kills=$((n - 2))
		fi
		if [[ " $benches " == *" revoke "* ]]; then
			one "revoke.$l.$n" "revoke " "$bin/oxr-run" --timeout "$limit" -n "$n" \
				"$bin/bench_revoke" "$rr" "$rw" "$tmo_ms" || true
		fi
		if [[ " $benches " == *" shrink "* ]]; then
			one "shrink.$l.$n" "shrink " "$bin/oxr-run" --survive --timeout "$limit" \
				-n "$n" "$bin/bench_shrink" "$kills" "$tmo_ms" || true
		fi
		if [[ " $benches " == *" barrier "* ]]; then
			one "barrier.$l.$n" "oxr bitmap" "$bin/oxr-run" --timeout "$limit" -n "$n" \
				"$bin/bench_barrier" bitmap "$bi" "$bw" || true
		fi
	done
done

# the figures of one (links, P), in the table's order, "-" where a run failed
figures() {
	local r s b v=()
	r=$(cat "$out/revoke.$1.$2" 2>/dev/null || true)
	s=$(cat "$out/shrink.$1.$2" 2>/dev/null || true)
	b=$(cat "$out/barrier.$1.$2" 2>/dev/null || true)
	v+=("$(ms "$(num "$r" 'propagation median')")" "$(num "$r" 'frames a rank max [0-9.]* mean')")
	v+=("$(num "$r" 'ranks > 0 max')" "$(ms "$(num "$r" 'reset median')")")
	v+=("$(ms "$(num "$s" 'shrink median')")" "$(ms "$(num "$s" 'detect median')")")
	v+=("$(num "$s" 'revoke frames a rank max [0-9]* mean')")
	v+=("$(num "$s" 'handshakes a rank max [0-9]* mean')" "$(ms "$(val "$b" median_us)")")
	v+=("$(num "$s" 'shrink frames a rank max [0-9]* mean')")
	v+=("$(ms "$(num "$r" 'cpu a rank mean')")" "$(ms "$(num "$s" 'cpu a rank max [0-9]* us mean')")")
	for i in "${!v[@]}"; do printf '%s ' "${v[$i]:--}"; done
	echo
}
# log2(P) x P / cores
bound() { awk -v p="$1" -v c="$cores" 'BEGIN { printf "%.0f", log(p) / log(2) * p / c }'; }

# the figures' names, and t (a time: the bound log2(P) x P/cores) or f (a
# rank's own share: frames it sent, CPU time it spent; the bound is
# log2(P), no time-sharing in them)
names=(revoke_ms frames_mean frames_max_gt0 reset_ms shrink_ms detect_ms shr_revokes
	shr_handshakes barrier_ms shr_frames rv_cpu_ms shr_cpu_ms)
kinds=(t f f t t t f f t f f f)
echo
echo "control plane, tcp, $cores cores: medians in ms; frames a rank per revoke (mean over the"
echo "ranks / most of a rank but 0); shrink: the kill to the last survivor's return from"
echo "oxr_group_shrink, detect: to the last survivor's failed wait, then per rank over the kill's"
echo "round REVOKE frames sent, handshakes (links the round opened) and shrink frames sent"
echo "(mean; \"-\" from a build without the counter); cpu: a rank's CPU time (mean), rv over"
echo "a revoke and its reset, shr from its wait to its shrink's return; bound = log2(P) x P/cores"
for l in $links; do
	echo
	echo "OXR_LINKS=$l"
	printf '%-6s %10s %12s %10s %11s %10s %12s %14s %11s %10s %10s %10s %8s\n' P \
		"revoke ms" "frames/rank" "reset ms" "shrink ms" "detect ms" "shr revokes" \
		"shr handshakes" "barrier ms" "shr frames" "rv cpu ms" "shr cpu ms" bound
	for n in $sizes; do
		read -r -a f < <(figures "$l" "$n")
		printf '%-6s %10s %12s %10s %11s %10s %12s %14s %11s %10s %10s %10s %8s\n' "$n" \
			"${f[0]}" "${f[1]} / ${f[2]}" "${f[3]}" "${f[4]}" "${f[5]}" "${f[6]}" "${f[7]}" \
			"${f[8]}" "${f[9]}" "${f[10]}" "${f[11]}" "$(bound "$n")"
		for k in revoke shrink barrier; do
			if [ -f "$out/$k.$l.$n.fail" ]; then
				echo "       $k: $(head -1 "$out/$k.$l.$n.fail")"
			fi
		done
	done
	if [[ " $sizes " == *" 64 "* && " $sizes " == *" 1024 "* ]]; then
		read -r -a a < <(figures "$l" 64)
		read -r -a z < <(figures "$l" 1024)
		lt=$(awk -v a="$(bound 64)" -v b="$(bound 1024)" 'BEGIN { printf "%.1f", b / a }')
		lf=$(awk 'BEGIN { printf "%.1f", 10 / 6 }')
		echo "growth 64 -> 1024 (bound: times ${lt}x, log2(P) x P/cores; a rank's frames and" \
			"CPU ${lf}x, log2(P)):"
		for i in "${!names[@]}"; do
			awk -v n="${names[$i]}" -v a="${a[$i]}" -v b="${z[$i]}" -v k="${kinds[$i]}" \
				-v lt="$lt" -v lf="$lf" 'BEGIN {
				lim = k == "t" ? lt : lf
				if (a == "-" || b == "-" || a <= 0) {
					printf "  %-15s %10s\n", n, "- (a run failed or was not run)"
					exit
				}
				g = b / a
				printf "  %-15s %9.1fx  %s %.1fx\n", n, g,
					g <= lim ? "within" : "OVER", lim
			}'
		done
	fi
done
# every failure in full, after the table
for f in "$out"/*.fail; do
	[ -e "$f" ] || break
	k=$(basename "$f" .fail)
	echo
	echo "$k:"
	sed 's/^/  /' "$f"
done
exit $failed
}
