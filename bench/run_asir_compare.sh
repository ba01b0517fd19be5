#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# RFC-102 reduce "+" and bcast of a big integer (default 10^6 digits) over
# N servers on this host, in one invocation: oxr-servers over oxr links,
# oxr-servers over plain OpenXM links (what an asir master gives), and Risa/
# Asir's ox_asir engines (through bench/ox_asir_wrapper.sh), each group
# driven by the same C master (bench_rfc100 --rfc102 --digits D), which
# checks every group's first reduce exactly against GMP.  The kinds take
# turns, round after round, so that a busy machine slows them alike; the
# medians are over every sample of every round.  By hand only: CI cannot
# build asir.
#
#   bench/run_asir_compare.sh [-n SERVERS] [--digits D] [--iters I] [-r ROUNDS]
#                             [-B BUILD_DIR] [--asir-libdir DIR] [--asir-master]
#
# --asir-master: also the same shape with Risa/Asir itself as the master
# (bench/asir_master.rr: asir's ox_launch_nox starts both kinds, asir's
# ox_*_102 link them over TCP, asir's time() clocks them), a group of
# oxr-servers and a group of ox_asir taking turns; its medians include
# asir's own work as the master (reading the result into an asir integer,
# writing the bcast's).
#
# Goal (issue 18, item 5): oxr's reduce <= 0.5 x ox_asir's, and oxr's
# reduce no slower than its bcast of the same integer.  Exits 0 whether or
# not the goal is met; non-zero only when a program fails.
set -euo pipefail
cd "$(dirname "$0")/.."

n=4 digits=1000000 iters=20 rounds=3 build=build asir_master=0
libdir=${ASIR_LIBDIR:-/work/asirw/asirlib}
while [ $# -gt 0 ]; do
	case $1 in
	-n) n=$2; shift ;;
	--digits) digits=$2; shift ;;
	--iters) iters=$2; shift ;;
	-r) rounds=$2; shift ;;
	-B) build=$2; shift ;;
	--asir-libdir) libdir=$2; shift ;;
	--asir-master) asir_master=1 ;;
	*) echo "usage: $0 [-n N] [--digits D] [--iters I] [-r ROUNDS] [-B BUILD_DIR]" \
		"[--asir-libdir DIR] [--asir-master]" >&2; exit 2 ;;
	esac
	shift
done
bench=$build/bin/bench_rfc100
[ -x "$bench" ] || { echo "$0: $bench is not built" >&2; exit 1; }
[ -x "$libdir/ox_asir" ] || { echo "$0: no $libdir/ox_asir (--asir-libdir)" >&2; exit 1; }
export ASIR_LIBDIR=$libdir
samples=$(mktemp)
trap 'rm -f "$samples"' EXIT
export OXR_BENCH_SAMPLES=$samples

common=(-n "$n" --sizes "" --iters "$iters" --digits "$digits" --rfc102)
for r in $(seq 1 "$rounds"); do
	echo "== round $r of $rounds"
	"$bench" "${common[@]}" --tag oxr
	"$bench" "${common[@]}" --plain --tag plain
	"$bench" "${common[@]}" --plain --server "$PWD/bench/ox_asir_wrapper.sh" --tag asir
done

echo
echo "== $n servers, a $digits-digit ZZ, $rounds rounds of $iters samples each: medians (us)"
awk -v n="$n" '
function med(k,   m, i, j, t, a) {
	m = cnt[k]
	for (i = 1; i <= m; i++) a[i] = v[k, i]
	for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
{
	match($0, /"bench":"[^"]*"/); b = substr($0, RSTART + 9, RLENGTH - 10)
	match($0, /"impl":"[^"]*"/); im = substr($0, RSTART + 8, RLENGTH - 9)
	match($0, /"samples":\[[^]]*\]/); s = substr($0, RSTART + 11, RLENGTH - 12)
	k = b SUBSEP im; m = split(s, xs, ",")
	for (i = 1; i <= m; i++) v[k, ++cnt[k]] = xs[i]
}
END {
	split("oxr plain asir", kinds, " ")
	printf "%-14s %12s %12s %14s\n", "servers", "reduce", "bcast_zz", "reduce/bcast"
	for (i = 1; i <= 3; i++) {
		im = "rfc102-" kinds[i]
		r[i] = med("reduce" SUBSEP im); c[i] = med("bcast_zz" SUBSEP im)
		printf "%-14s %12.1f %12.1f %14.2f\n", kinds[i] (i < 3 ? "-server" : " (ox_asir)"), r[i], c[i], r[i] / c[i]
	}
	printf "\noxr / ox_asir          reduce    bcast_zz\n"
	printf "oxr links            %8.2f    %8.2f\n", r[1] / r[3], c[1] / c[3]
	printf "plain links          %8.2f    %8.2f\n", r[2] / r[3], c[2] / c[3]
	printf "\ngoal: reduce <= 0.5 x ox_asir (oxr links %s, plain %s); reduce <= bcast (oxr links %s, plain %s)\n",
	       r[1] <= 0.5 * r[3] ? "met" : "NOT met", r[2] <= 0.5 * r[3] ? "met" : "NOT met",
	       r[1] <= c[1] ? "met" : "NOT met", r[2] <= c[2] ? "met" : "NOT met"
}' "$samples"

[ "$asir_master" = 1 ] || exit 0
echo
echo "== the same with Risa/Asir as the master (bench/asir_master.rr)"
rr=$(mktemp)
trap 'rm -f "$samples" "$rr"' EXIT
(cd "$libdir" && OXR_SERVER=$OLDPWD/$build/bin/oxr-server RR_N=$n RR_DIGITS=$digits \
	RR_ITERS=$iters RR_ROUNDS=$rounds ./asir -quiet -f "$OLDPWD/bench/asir_master.rr") |
	tr -d '[]' | awk -F, '$1 == "S"' > "$rr"
awk -F, -v n="$n" '
function med(k,   m, i, j, t, a) {
	m = cnt[k]
	for (i = 1; i <= m; i++) a[i] = v[k, i]
	for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
{ k = $2 SUBSEP $3; v[k, ++cnt[k]] = $4 }
END {
	if (!cnt["reduce" SUBSEP "ox_asir"]) { print "asir_master.rr gave no samples"; exit 1 }
	printf "%-14s %12s %12s %14s\n", "servers", "reduce", "bcast_zz", "reduce/bcast"
	split("oxr-server ox_asir", kinds, " ")
	for (i = 1; i <= 2; i++) {
		r[i] = med("reduce" SUBSEP kinds[i]); c[i] = med("bcast_zz" SUBSEP kinds[i])
		printf "%-14s %12.1f %12.1f %14.2f\n", kinds[i], r[i], c[i], r[i] / c[i]
	}
	printf "\noxr / ox_asir: reduce %.2f, bcast_zz %.2f (%d samples each)\n", r[1] / r[2], c[1] / c[2],
	       cnt["reduce" SUBSEP "ox_asir"]
}' "$rr"
