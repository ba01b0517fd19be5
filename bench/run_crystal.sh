#!/usr/bin/env bash
# The crystal router (oxr, TCP) against a dense pairwise exchange over oxr and
# against Open MPI's MPI_Alltoallv on its tcp BTL, in the same invocation, at
# n = 4, 8, 16 ranks oversubscribed on this machine's cores, for patterns
# where each rank sends one record to 1, 2 and n-1 neighbours.  oxr runs
# twice: with its default OXR_SPIN_US and with OXR_SPIN_US=0 (a wait that
# sleeps at once, which is what an oversubscribed rank wants; Open MPI yields
# by itself when it sees oversubscription).  Goal of issue 5: at 16 ranks,
# dests <= 2, MPI_Alltoallv / crystal >= 2.
# It exits 0 whether the goal is met or not, non-zero only when a program fails.
#
#   bench/run_crystal.sh [-B BUILD_DIR] [--bytes B] [--quick] [-r N] [-o OUT_DIR]
#     -r N  N rounds of everything, oxr and MPI alternating; the table takes each
#           figure's best round for all alike (default 1)
set -euo pipefail
# oxr over TCP unless told: its peer here is Open MPI's tcp BTL (auto would
# take shared memory between these ranks; run_pingpong.sh --shm compares that)
export OXR_TRANSPORT=${OXR_TRANSPORT:-tcp}
cd "$(dirname "$0")/.."

build=build bytes=64 out='' args=() runs=1
while [ $# -gt 0 ]; do
	case $1 in
	-B) build=$2; shift ;;
	--bytes) bytes=$2; shift ;;
	--quick) args=(--reps 5 --iters 10) ;;
	-o) out=$2; shift ;;
	-r) runs=$2; shift ;;
	*) echo "usage: $0 [-B BUILD_DIR] [--bytes B] [--quick] [-r N] [-o OUT_DIR]" >&2; exit 2 ;;
	esac
	shift
done
if [ -z "$out" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
bin=$build/bin
[ -x "$bin/oxr-run" ] && [ -x "$bin/bench_crystal" ] ||
	{ echo "$0: $bin/oxr-run or $bin/bench_crystal is not built" >&2; exit 1; }
have_mpi=0
if [ -x "$bin/mpi_alltoallv" ] && command -v mpirun >/dev/null; then
	have_mpi=1
fi
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# The brief's flags, plus what bench/run_pingpong.sh pins: the ob1 PML (not
# ucx or an MTL, which would not be the tcp BTL) and loopback.
mpi_flags() {
	echo --oversubscribe --bind-to none --mca pml ob1 --mca btl self,tcp \
		--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo
}

all=$out/results.txt
: >"$all"
for ((round = 1; round <= runs; round++)); do
	for n in 4 8 16; do
		common=(--dests 1,2,max --bytes "$bytes" "${args[@]}")
		echo "=== round $round of $runs"
		echo "=== n=$n: oxr-run -n $n $bin/bench_crystal ${common[*]}"
		"$bin/oxr-run" -n "$n" "$bin/bench_crystal" "${common[@]}" | tee -a "$all"
		echo "=== n=$n: OXR_SPIN_US=0 oxr-run -n $n $bin/bench_crystal ${common[*]}"
		OXR_SPIN_US=0 "$bin/oxr-run" -n "$n" "$bin/bench_crystal" "${common[@]}" |
			sed 's/impl=oxr-/impl=spin0-oxr-/' | tee -a "$all"
		if [ $have_mpi = 1 ]; then
			echo "=== n=$n: mpirun -np $n $(mpi_flags) $bin/mpi_alltoallv ${common[*]}"
			# shellcheck disable=SC2046
			mpirun -np "$n" $(mpi_flags) --mca btl_base_verbose 30 "$bin/mpi_alltoallv" \
				"${common[@]}" >"$out/mpi.$n.out" 2>"$out/mpi.$n.err" ||
				{ cat "$out/mpi.$n.out" "$out/mpi.$n.err"; exit 1; }
			grep -v '^\[' "$out/mpi.$n.out" | tee -a "$all"
			if ! grep -q 'Using tcp btl' "$out/mpi.$n.out" "$out/mpi.$n.err"; then
				echo "$0: Open MPI did not say it used the tcp BTL; see $out/mpi.$n.err" >&2
				exit 1
			fi
		fi
	done
done

# get IMPL N D FIELD: one figure of the results, the lowest over the rounds.
get() {
	awk -v impl="impl=$1" -v n="n=$2" -v d="dests=$3" -v f="$4=" '
		$1 == "RESULT" && $2 == impl && $3 == n && $4 == d {
			for (i = 5; i <= NF; i++) if (index($i, f) == 1) print substr($i, length(f) + 1)
		}' "$all" | sort -g | head -1
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else print "-" }'; }

echo
echo "median us per exchange (slowest rank, median of blocks; best of $runs round(s));" \
	"$bytes-byte records; same run"
printf '%-3s %-5s %9s %9s %9s %9s %9s %9s %9s %8s %6s %7s\n' n dests crystal crys-s0 pairwise \
	pair-s0 alltoallv a2a+v "MPI/crys" "/crys-s0" msgs "sent B"
for n in 4 8 16; do
	for d in 1 2 $((n - 1)); do
		c=$(get oxr-crystal $n $d median_us) cs=$(get spin0-oxr-crystal $n $d median_us)
		p=$(get oxr-pairwise $n $d median_us) ps=$(get spin0-oxr-pairwise $n $d median_us)
		m=$(get mpi-alltoallv $n $d median_us) mv=$(get mpi-alltoall+v $n $d median_us)
		msg="$(get oxr-crystal $n $d msgs | cut -d. -f1)/$(get oxr-pairwise $n $d msgs | cut -d. -f1)"
		sent="$(get oxr-crystal $n $d sent)/$(get oxr-pairwise $n $d sent)"
		printf '%-3s %-5s %9s %9s %9s %9s %9s %9s %9s %8s %6s %7s\n' $n $d "$c" "$cs" "$p" "$ps" \
			"${m:--}" "${mv:--}" "$(ratio "$m" "$c")" "$(ratio "$m" "$cs")" "$msg" "$sent"
	done
done
cat <<'EOF'

crystal / pairwise: oxr's crystal router and a dense exchange (a message to and
from every rank) with the default OXR_SPIN_US; -s0: with OXR_SPIN_US=0.
alltoallv: Open MPI's MPI_Alltoallv with counts known in advance; a2a+v: an
MPI_Alltoall of the counts first (the crystal router needs no counts).
MPI/crys: MPI_Alltoallv time over the crystal router's, higher is better.
msgs: rank 0's puts+messages per exchange, crystal/pairwise (ceil(log2 n) or
one fewer, against n-1); sent B: its bytes per exchange, crystal (headers and
records forwarded for others included) / pairwise (payload).
EOF
if [ $have_mpi = 1 ]; then
	goal() { awk -v r="$1" 'BEGIN { exit !(r != "-" && r >= 2.0) }' && echo "GOAL MET" ||
		echo "GOAL MISSED"; }
	echo
	for d in 1 2; do
		r=$(ratio "$(get mpi-alltoallv 16 $d median_us)" "$(get oxr-crystal 16 $d median_us)")
		r0=$(ratio "$(get mpi-alltoallv 16 $d median_us)" \
			"$(get spin0-oxr-crystal 16 $d median_us)")
		printf 'goal: 16 ranks, %d dest(s): MPI_Alltoallv/crystal >= 2: default spin %s %s; ' \
			"$d" "$r" "$(goal "$r")"
		printf 'OXR_SPIN_US=0 %s %s\n' "$r0" "$(goal "$r0")"
	done
else
	echo "Open MPI: not measured (no $bin/mpi_alltoallv or no mpirun; Debian: libopenmpi-dev)"
fi
exit 0
