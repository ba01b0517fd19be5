#!/usr/bin/env bash
# Ping-pong latency and streaming bandwidth between 2 ranks: oxr over TCP
# (bench_pingpong under oxr-run) and Open MPI's tcp BTL over loopback
# (mpi_pingpong under mpirun), run one after the other in the same
# invocation, then side by side with the ratios and the two goals:
#   8 B latency   oxr/MPI <= 1.0   (median half round trip)
#   1 MiB bandwidth oxr/MPI >= 1.0 (MB/s over all windows)
# It exits 0 whether the goals are met or not (it measures; it does not
# judge the build), non-zero only when a program fails.
#
# With --shm: oxr over shared memory (OXR_TRANSPORT=shm) against Open MPI
# as installed, its default transports (vader/sm shared memory, CMA).
#
#   bench/run_pingpong.sh [--quick] [--shm] [-r N] [--spin-sweep] [-B BUILD_DIR] [-o OUT_DIR]
#     --quick       short runs (a few seconds each), for ci/demo
#     --shm         shared memory on both sides (see above)
#     -r N          N runs of each, alternating oxr and MPI; the table takes
#                   each figure's best run for both alike (default 1)
#     --spin-sweep  also run oxr (quick) with OXR_SPIN_US = 0 50 200 1000
#     -B DIR        the build with bin/oxr-run, bin/bench_pingpong, bin/mpi_pingpong
#                   (default: build)
#     -o DIR        where the JSON of each run goes (default: a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."

build=build out='' quick=() sweep=0 runs=1 shm=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=(--quick) ;;
	--spin-sweep) sweep=1 ;;
	--shm) shm=1 ;;
	-B) build=$2; shift ;;
	-r) runs=$2; shift ;;
	-o) out=$2; shift ;;
	*) echo "usage: $0 [--quick] [--shm] [-r N] [--spin-sweep] [-B BUILD_DIR] [-o OUT_DIR]" >&2
	   exit 2 ;;
	esac
	shift
done
if [ -z "$out" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
bin=$build/bin
for f in oxr-run bench_pingpong; do
	[ -x "$bin/$f" ] || { echo "$0: $bin/$f is not built" >&2; exit 1; }
done

# Open MPI on loopback with nothing but its TCP BTL (and self for a rank's
# own messages): no vader/sm shared memory, the ob1 PML (not a cm/MTL
# path), its out-of-band wire on lo too, since lo is all this machine may
# have.  --bind-to none: oxr-run does not pin its ranks, so neither does
# this; --oversubscribe: the machine may have fewer cores than ranks.
MPI_FLAGS=(-np 2 --oversubscribe --bind-to none --mca pml ob1 --mca btl 'tcp,self'
	--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
mpi_btl=tcp oxr_name=TCP mpi_name="tcp BTL"
export OXR_TRANSPORT=tcp
if [ $shm = 1 ]; then
	# as installed: whatever Open MPI picks between two ranks of one host
	MPI_FLAGS=(-np 2 --oversubscribe --bind-to none --mca oob_tcp_if_include lo)
	mpi_btl='(vader|sm)' oxr_name=shm mpi_name="default: shared memory"
	export OXR_TRANSPORT=shm
fi
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

say() { printf '\n=== %s\n' "$*"; }

have_mpi=0
if [ -x "$bin/mpi_pingpong" ] && command -v mpirun >/dev/null; then
	have_mpi=1
fi

run_oxr() {
	say "oxr, run $1 of $runs:" \
		"$bin/oxr-run -n 2 $bin/bench_pingpong ${quick[*]} --json $out/oxr.$1.json"
	"$bin/oxr-run" -n 2 "$bin/bench_pingpong" "${quick[@]}" --json "$out/oxr.$1.json"
}

run_mpi() {
	local o=$out/mpi.$1
	say "Open MPI, run $1 of $runs:" \
		"mpirun ${MPI_FLAGS[*]} $bin/mpi_pingpong ${quick[*]} --json $o.json"
	# btl_base_verbose says which BTL carries rank 0 <-> rank 1; the check
	# below refuses figures that came from another one.
	mpirun "${MPI_FLAGS[@]}" --mca btl_base_verbose 30 "$bin/mpi_pingpong" "${quick[@]}" \
		--json "$o.json" >"$o.out" 2>"$o.err" || { cat "$o.out" "$o.err"; exit 1; }
	grep -v '^\[[^]]*\] ' "$o.out" || true
	btls=$(cat "$o.out" "$o.err" |
	       sed -n 's/.*mca: bml: Using \([a-z0-9]*\) btl for send to .*/\1/p' |
	       sort | uniq -c | tr -s ' \n' ' ')
	echo "BTLs in use (count of peer paths): ${btls:-none reported}"
	if ! grep -Eq "Using $mpi_btl btl for send to \[\[[0-9]+,[0-9]+\],1\]" "$o.out" "$o.err" ||
	   { [ $shm = 0 ] && grep -Eq 'Using (vader|sm|smcuda|openib|uct) btl' "$o.out" "$o.err"; }; then
		echo "$0: Open MPI did not use the $mpi_btl BTL between the ranks; see $o.err" >&2
		exit 1
	fi
}

for ((k = 1; k <= runs; k++)); do
	run_oxr $k
	if [ $have_mpi = 1 ]; then
		run_mpi $k
	elif [ $k = 1 ]; then
		say "Open MPI: not measured" \
			"(no $bin/mpi_pingpong or no mpirun; Debian: libopenmpi-dev)"
	fi
done

# field FILE SECTION KEY BYTES (bench/json_field.sh)
# shellcheck source=bench/json_field.sh
. "$(dirname "$0")/json_field.sh"

# best IMPL SECTION KEY BYTES min|max: the best of that figure over the runs.
best() {
	local k v all=()
	for ((k = 1; k <= runs; k++)); do
		v=$(field "$out/$1.$k.json" "$2" "$3" "$4")
		all+=("${v:-0}")
	done
	printf '%s\n' "${all[@]}" | sort -g | if [ "$5" = min ]; then head -1; else tail -1; fi
}

# every IMPL SECTION KEY BYTES: the figure of each run, in run order.
every() {
	local k out_=()
	for ((k = 1; k <= runs; k++)); do
		out_+=("$(field "$out/$1.$k.json" "$2" "$3" "$4")")
	done
	echo "${out_[*]}"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

size_name() {
	if [ "$1" -ge 1048576 ]; then echo "$(($1 >> 20)) MiB"
	elif [ "$1" -ge 1024 ]; then echo "$(($1 >> 10)) KiB"
	else echo "$1 B"; fi
}

say "side by side: oxr ($oxr_name) against Open MPI ($mpi_name), same run"
lat_sizes=(8 64 512 4096 32768 262144 1048576 4194304)
bw_sizes=(4096 65536 1048576 4194304)
printf '%-8s %21s %21s %9s\n' latency "oxr med (min) us" "MPI med (min) us" "oxr/MPI"
for n in "${lat_sizes[@]}"; do
	om=$(best oxr latency median_us "$n" min)
	on=$(best oxr latency min_us "$n" min)
	if [ $have_mpi = 1 ]; then
		mm=$(best mpi latency median_us "$n" min)
		mn=$(best mpi latency min_us "$n" min)
	else
		mm=0 mn=0
	fi
	printf '%-8s %21s %21s %9s\n' "$(size_name "$n")" "$(printf '%.2f (%.2f)' "$om" "$on")" \
		"$(printf '%.2f (%.2f)' "$mm" "$mn")" "$(ratio "$om" "$mm")"
done
echo
printf '%-8s %21s %21s %9s\n' bandwidth "oxr MB/s (best)" "MPI MB/s (best)" "oxr/MPI"
for n in "${bw_sizes[@]}"; do
	ob=$(best oxr bandwidth mb_s "$n" max)
	obb=$(best oxr bandwidth best_mb_s "$n" max)
	if [ $have_mpi = 1 ]; then
		mb=$(best mpi bandwidth mb_s "$n" max)
		mbb=$(best mpi bandwidth best_mb_s "$n" max)
	else
		mb=0 mbb=0
	fi
	printf '%-8s %21s %21s %9s\n' "$(size_name "$n")" "$(printf '%.0f (%.0f)' "$ob" "$obb")" \
		"$(printf '%.0f (%.0f)' "$mb" "$mbb")" "$(ratio "$ob" "$mb")"
done
[ "$runs" -gt 1 ] && echo "(best of $runs runs of each, figure by figure)"
cat <<'EOF'

latency: median half round trip, the fastest sample in brackets; ratio of the
  medians, lower is better.  bandwidth: MB/s (10^6 payload bytes) over all
  windows, the fastest window in brackets; ratio higher is better.  oxr's
  messages carry 16 bytes of OX/CMO framing more than the payload.  Both
  programs ran one after the other on this machine: other work on its cores
  moves the figures, the gap between min and median says how much.
EOF

if [ $have_mpi = 1 ]; then
	lr=$(ratio "$(best oxr latency median_us 8 min)" "$(best mpi latency median_us 8 min)")
	br=$(ratio "$(best oxr bandwidth mb_s 1048576 max)" \
		"$(best mpi bandwidth mb_s 1048576 max)")
	goal() { awk -v r="$1" -v g="$2" -v op="$3" \
		'BEGIN { ok = op == "<=" ? r <= g : r >= g; exit !ok }' && echo "GOAL MET" ||
		echo "GOAL MISSED"; }
	echo
	printf '%-36s %-6s %s\n' "goal: 8 B latency oxr/MPI <= 1.00" "$lr" "$(goal "$lr" 1.0 "<=")"
	printf '%-36s %-6s %s\n' "goal: 1 MiB bandwidth oxr/MPI >= 1.00" "$br" \
		"$(goal "$br" 1.0 ">=")"
	if [ "$runs" -gt 1 ]; then
		echo "each run's 8 B median us: oxr $(every oxr latency median_us 8);" \
			"MPI $(every mpi latency median_us 8)"
		echo "each run's 1 MiB MB/s:    oxr $(every oxr bandwidth mb_s 1048576);" \
			"MPI $(every mpi bandwidth mb_s 1048576)"
	fi
fi

if [ $sweep = 1 ]; then
	spins=(0 50 200 1000)
	say "OXR_SPIN_US sweep: oxr --quick, ${runs} round(s) over the values, best of them"
	for ((k = 1; k <= runs; k++)); do
		for v in "${spins[@]}"; do
			OXR_SPIN_US=$v "$bin/oxr-run" -n 2 "$bin/bench_pingpong" --quick \
				--json "$out/spin$v.$k.json" >/dev/null
		done
	done
	printf '%-12s %18s %18s %18s %11s\n' OXR_SPIN_US "8 B med (min) us" "4 KiB" "1 MiB" \
		"1 MiB MB/s"
	for v in "${spins[@]}"; do
		row=()
		for n in 8 4096 1048576; do
			row+=("$(printf '%.2f (%.2f)' "$(best "spin$v" latency median_us $n min)" \
				"$(best "spin$v" latency min_us $n min)")")
		done
		printf '%-12s %18s %18s %18s %11.0f\n' "$v" "${row[@]}" \
			"$(best "spin$v" bandwidth mb_s 1048576 max)"
	done
	echo "(spin: a blocking wait polls that long before it sleeps in epoll_wait)"
fi
exit 0
