#!/usr/bin/env bash
# bcast (8 B, 1 MiB, 64 MiB) and reduce (one INT32, one double) latency at
# n = 2, 4, 8, 16 ranks, oversubscribed on this machine's cores: oxr over
# TCP (bench_bcast under oxr-run) and Open MPI's tcp BTL over loopback
# (mpi_bcast under mpirun), one after the other in the same invocation,
# then side by side with the ratios, oxr's messages per rank, and the goal:
#   8 B bcast at 8 ranks   oxr/MPI <= 0.5   (median)
# It exits 0 whether the goal is met or not (it measures; it does not judge
# the build), non-zero only when a program fails.
#
#   bench/run_bcast.sh [--quick] [--sweep] [-n "2 4 8 16"] [-B BUILD_DIR]
#     --quick   fewer samples (a few seconds a group size)
#     --sweep   also oxr's binomial-against-chain sweep at 4 and 8 ranks
#               (the figures behind OXR_BCAST_PIPELINE_DEFAULT)
#     -n LIST   the group sizes (default "2 4 8 16")
#     -B DIR    the build with bin/oxr-run, bin/bench_bcast, bin/mpi_bcast
#               (default: build)
set -euo pipefail
# oxr over TCP unless told: its peer here is Open MPI's tcp BTL (auto would
# take shared memory between these ranks; run_pingpong.sh --shm compares that)
export OXR_TRANSPORT=${OXR_TRANSPORT:-tcp}
cd "$(dirname "$0")/.."

build=build quick=() sweep=0 sizes="2 4 8 16"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=(--quick) ;;
	--sweep) sweep=1 ;;
	-n) sizes=$2; shift ;;
	-B) build=$2; shift ;;
	*) echo "usage: $0 [--quick] [--sweep] [-n \"2 4 8 16\"] [-B BUILD_DIR]" >&2; exit 2 ;;
	esac
	shift
done
bin=$build/bin
for f in oxr-run bench_bcast; do
	[ -x "$bin/$f" ] || { echo "$0: $bin/$f is not built" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Open MPI with nothing but its TCP BTL (and self): no shared memory, as
# bench/run_pingpong.sh runs it; --bind-to none since oxr-run does not pin
# either; --oversubscribe: more ranks than cores.
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
have_mpi=0
if [ -x "$bin/mpi_bcast" ] && command -v mpirun >/dev/null; then
	have_mpi=1
fi

say() { printf '\n=== %s\n' "$*"; }

for n in $sizes; do
	say "oxr, $n ranks: $bin/oxr-run -n $n $bin/bench_bcast ${quick[*]}"
	"$bin/oxr-run" -n "$n" "$bin/bench_bcast" "${quick[@]}" | tee "$out/oxr.$n" | grep -v '^RESULT'
	if [ $have_mpi = 1 ]; then
		say "Open MPI, $n ranks: mpirun -np $n --oversubscribe --bind-to none" \
			"--mca btl self,tcp $bin/mpi_bcast ${quick[*]}"
		mpirun -np "$n" --oversubscribe --bind-to none --mca btl self,tcp \
			"$bin/mpi_bcast" "${quick[@]}" >"$out/mpi.$n" 2>"$out/mpi.$n.err" ||
			{ cat "$out/mpi.$n" "$out/mpi.$n.err"; exit 1; }
		grep -v '^RESULT' "$out/mpi.$n"
	fi
done

# field FILE OP BYTES KEY: one number of a RESULT line.
field() {
	awk -v op="op=$2" -v b="bytes=$3" -v key="$4=" '
		$1 == "RESULT" {
			hit = 0
			for (i = 2; i <= NF; i++) if ($i == op) hit++; else if ($i == b) hit++
			if (hit == 2)
				for (i = 2; i <= NF; i++)
					if (index($i, key) == 1) print substr($i, length(key) + 1)
		}' "$1"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

say "side by side: oxr (TCP) against Open MPI (tcp BTL), same run, median us"
printf '%-4s %-13s %12s %12s %8s   %s\n' n operation oxr MPI oxr/MPI \
	"oxr messages: root sent/received, most on one rank sent/received"
ops=("bcast 8 8 B" "bcast 1048576 1 MiB" "bcast 67108864 64 MiB" "red_i32 4 INT32" "red_f64 8 double")
for n in $sizes; do
	for o in "${ops[@]}"; do
		read -r op bytes name <<<"$o"
		name=${o#* * }
		om=$(field "$out/oxr.$n" "$op" "$bytes" median_us)
		mm=0
		[ $have_mpi = 1 ] && mm=$(field "$out/mpi.$n" "$op" "$bytes" median_us)
		msgs="$(field "$out/oxr.$n" "$op" "$bytes" root_sent)/$(field "$out/oxr.$n" "$op" "$bytes" root_recv)"
		msgs="$msgs, $(field "$out/oxr.$n" "$op" "$bytes" max_sent)/$(field "$out/oxr.$n" "$op" "$bytes" max_recv)"
		printf '%-4s %-13s %12.1f %12.1f %8s   %s\n' "$n" "${op%%_*} $name" "$om" "${mm:-0}" \
			"$(ratio "$om" "${mm:-0}")" "$msgs"
	done
done
cat <<'EOF'

us: from the root's call to the last rank done (bcast), from the last rank's
  call to the root's result (reduce); median over samples, lower is better.
  Ranks are oversubscribed on this machine's cores; figures move by ~1.5x
  with load, so compare the ratios of one run.  Messages: OX messages of one
  operation (bcast 64 MiB: the chain's marker, header and chunks).
EOF
if [ $have_mpi = 1 ] && [[ " $sizes " == *" 8 "* ]]; then
	r=$(ratio "$(field "$out/oxr.8" bcast 8 median_us)" "$(field "$out/mpi.8" bcast 8 median_us)")
	if awk -v r="$r" 'BEGIN { exit !(r <= 0.5) }'; then verdict="GOAL MET"; else verdict="GOAL MISSED"; fi
	echo
	printf '%-40s %-6s %s\n' "goal: 8 B bcast at 8 ranks oxr/MPI <= 0.50" "$r" "$verdict"
fi

if [ $sweep = 1 ]; then
	for n in 4 8; do
		say "oxr binomial against chain, $n ranks: $bin/oxr-run -n $n $bin/bench_bcast --algo-sweep ${quick[*]}"
		"$bin/oxr-run" -n "$n" "$bin/bench_bcast" --algo-sweep "${quick[@]}" | grep -v '^SWEEP'
	done
fi
exit 0
