#!/usr/bin/env bash
# Start-up at scale on this machine: the time from launch to a group that
# has done one barrier and a ring exchange, and what each rank holds then
# (RSS, PSS, descriptors, links), for oxr (bench_startup under oxr-run) over
# tcp and over shared memory, links eager and on demand (OXR_LINKS), beside
# Open MPI's MPI_Init + MPI_Barrier + a ring + MPI_Finalize (mpi_startup
# under mpirun, its transports as installed: shared memory inside the node,
# as bench/run_shm.sh runs it), one after the other in the same invocation.
# bench_startup.c and startup_proc.h say what each figure is.
#
#   bench/run_startup.sh [-B BUILD_DIR] [-n "16 64 256 1024"] [-r RUNS] [-t SECONDS]
#                        [-w "tcp:eager tcp:ondemand shm:eager shm:ondemand"] [--mpi-tcp]
#     -B DIR     the build with bin/oxr-run, bin/bench_startup, bin/mpi_startup
#                (default: build)
#     -n SIZES   group sizes (default 16 64 256 1024); Open MPI runs up to 256
#                unless OXR_BENCH_MPI_1024=1 (above that it takes minutes here)
#     -r RUNS    runs of each; the table takes each one's fastest (default 1)
#     -t S       seconds one run may take before it is killed (default 300)
#     -w LIST    the oxr cases, TRANSPORT:LINKS (OXR_TRANSPORT, OXR_LINKS)
#     --mpi-tcp  also Open MPI over its tcp BTL alone (what oxr-bench compares
#                oxr's tcp with)
#
# ready: launch to the slowest rank's end of the ring (the group is ready);
# done: the launcher's whole run (what a user waits for, the teardown in it);
# oxr/mpi: the ratio against Open MPI as installed at the same size.  A run
# that fails or passes -t is reported as such, with the end of its output,
# and the others go on; the script exits 1 when one failed, 0 otherwise
# (it measures: no figure is a goal here).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

build=build sizes="16 64 256 1024" runs=1 limit=300 mpi_tcp=0
cases="tcp:eager tcp:ondemand shm:eager shm:ondemand"
while [ $# -gt 0 ]; do
	case $1 in
	-B) build=$2; shift ;;
	-n) sizes=$2; shift ;;
	-r) runs=$2; shift ;;
	-t) limit=$2; shift ;;
	-w) cases=$2; shift ;;
	--mpi-tcp) mpi_tcp=1 ;;
	*) echo "usage: $0 [-B BUILD_DIR] [-n SIZES] [-r RUNS] [-t SECONDS] [-w CASES]" \
		"[--mpi-tcp]" >&2
	   exit 2 ;;
	esac
	shift
done
bin=$build/bin
for f in oxr-run bench_startup; do
	[ -x "$bin/$f" ] || { echo "$0: $bin/$f is not built" >&2; exit 1; }
done
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
have_mpi=0
if [ -x "$bin/mpi_startup" ] && command -v mpirun >/dev/null; then
	have_mpi=1
fi
# the joining and the boot's waits may take as long as the run may
export OXR_BOOT_TIMEOUT=${OXR_BOOT_TIMEOUT:-$limit}
MPI_SHM=(--oversubscribe --bind-to none --mca oob_tcp_if_include lo -x OXR_BENCH_T0_NS)
MPI_TCP=(--oversubscribe --bind-to none --mca pml ob1 --mca btl 'self,tcp'
	--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo -x OXR_BENCH_T0_NS)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0

# key=value out of a result line
val() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && a != "-" && b > 0) printf "%.2f", a / b; else print "-" }'; }

# shellcheck source=bench/busy.sh
. bench/busy.sh

# one NAME P CMD...: runs CMD under the limit, its own process group (timeout
# kills the launcher's ranks with it); appends "RESULT ... done_s=S" to
# $out/NAME.P, or reports the failure
one() {
	local name=$1 n=$2 t0 t1 rc line load
	shift 2
	load=$(busy)
	t0=$(date +%s%N)
	OXR_BENCH_T0_NS=$t0 timeout -k 10 "$limit" "$@" >"$out/run.out" 2>"$out/run.err"
	rc=$?
	t1=$(date +%s%N)
	line=$(grep '^RESULT ' "$out/run.out" | tail -1)
	if [ $rc -ne 0 ] || [ -z "$line" ]; then
		failed=1
		if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
			echo "!!! $name n=$n: killed after ${limit} s (-t); load=$load at its start"
			echo "FAIL timeout" >>"$out/$name.$n.fail"
		else
			echo "!!! $name n=$n: failed (exit $rc$([ -z "$line" ] && echo ', no RESULT line'))" \
				"after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s;" \
				"load=$load at its start"
			echo "FAIL exit $rc" >>"$out/$name.$n.fail"
		fi
		# the first distinct messages, then the last lines: 1,024 ranks
		# saying one thing each is one thing
		echo "    $(grep -c . "$out/run.err") lines on stderr; distinct (first 8, ranks' numbers masked):"
		sed 's/[0-9][0-9]*/N/g' "$out/run.err" | sort | uniq -c | sort -rn | head -8 | sed 's/^/    | /'
		echo "    first lines (what went wrong first, most likely):"
		head -3 "$out/run.err" | cut -c1-300 | sed 's/^/    | /'
		echo "    last lines:"
		tail -4 "$out/run.err" | cut -c1-300 | sed 's/^/    | /'
		return 1
	fi
	line="$line done_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }') load=$load"
	echo "$line" | tee -a "$out/$name.$n"
}

# the run of NAME at P with the least done_s
best() {
	[ -s "$out/$1.$2" ] || return 0
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^done_s=/) { split($i, a, "="); print a[2], $0 } }' \
		"$out/$1.$2" | sort -g | head -1 | cut -d' ' -f2-
}

mpi_ok() { [ $have_mpi = 1 ] && { [ "$1" -le 256 ] || [ "${OXR_BENCH_MPI_1024:-0}" = 1 ]; }; }

echo "$(date -u +%F), $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null ||
	echo '+changes'), $(nproc) cores, $(
	[ $have_mpi = 1 ] && mpirun --version 2>&1 | head -1 || echo 'no Open MPI')"
for ((k = 1; k <= runs; k++)); do
	for n in $sizes; do
		for c in $cases; do
			echo "=== run $k: OXR_TRANSPORT=${c%%:*} OXR_LINKS=${c#*:} oxr-run -n $n bench_startup"
			OXR_TRANSPORT=${c%%:*} OXR_LINKS=${c#*:} one "oxr-${c/:/-}" "$n" \
				"$bin/oxr-run" -n "$n" "$bin/bench_startup"
		done
		if mpi_ok "$n"; then
			echo "=== run $k: mpirun -np $n ${MPI_SHM[*]} mpi_startup"
			one mpi "$n" mpirun -np "$n" "${MPI_SHM[@]}" "$bin/mpi_startup"
			if [ $mpi_tcp = 1 ]; then
				echo "=== run $k: mpirun -np $n ${MPI_TCP[*]} mpi_startup"
				one mpi-tcp "$n" mpirun -np "$n" "${MPI_TCP[@]}" "$bin/mpi_startup"
			fi
		fi
	done
done

names=()
for c in $cases; do names+=("oxr-${c/:/-}"); done
[ $have_mpi = 1 ] && names+=(mpi) && [ $mpi_tcp = 1 ] && names+=(mpi-tcp)
echo
echo "start-up, fastest of $runs run(s): s; KiB (mean / max over the ranks); fds and links"
echo "per rank (mean / max); oxr/mpi: ready, done and RSS mean against Open MPI as installed"
printf '%-5s %-17s %8s %8s %16s %9s %13s %13s %17s\n' P what "ready s" "done s" \
	"RSS KiB" "PSS KiB" fds links "oxr/mpi r d rss"
for n in $sizes; do
	m=$(best mpi "$n")
	for w in "${names[@]}"; do
		l=$(best "$w" "$n")
		if [ -z "$l" ]; then
			if [ -s "$out/$w.$n.fail" ]; then
				printf '%-5s %-17s %s\n' "$n" "$w" "$(tail -1 "$out/$w.$n.fail")"
			elif [ "$w" = mpi ] || [ "$w" = mpi-tcp ]; then
				printf '%-5s %-17s %s\n' "$n" "$w" "not run (above 256: OXR_BENCH_MPI_1024=1)"
			fi
			continue
		fi
		rr=-
		if [ -n "$m" ] && [ "${w#mpi}" = "$w" ]; then
			rr="$(ratio "$(val "$l" ready_ms_max)" "$(val "$m" ready_ms_max)") $(
				ratio "$(val "$l" done_s)" "$(val "$m" done_s)") $(
				ratio "$(val "$l" rss_kib_mean)" "$(val "$m" rss_kib_mean)")"
		fi
		printf '%-5s %-17s %8s %8s %16s %9s %13s %13s %17s\n' "$n" "$w" \
			"$(awk -v v="$(val "$l" ready_ms_max)" 'BEGIN { printf "%.2f", v / 1000 }')" \
			"$(val "$l" done_s)" \
			"$(val "$l" rss_kib_mean) / $(val "$l" rss_kib_max)" "$(val "$l" pss_kib_mean)" \
			"$(val "$l" fds_mean) / $(val "$l" fds_max)" \
			"$(val "$l" links_mean) / $(val "$l" links_max)" "$rr"
	done
done
[ $have_mpi = 1 ] || echo "Open MPI: not measured (no $bin/mpi_startup or no mpirun)"
most=$(cat "$out"/*.[0-9]* 2>/dev/null | sed -n 's/.* load=\([0-9]*\).*/\1/p' | sort -g | tail -1)
if [ "${most:-0}" -gt 0 ]; then
	echo "note: up to $most other processes were running when a run started (load= in its line," \
		"$(nproc) cores here): its times are not comparable with a quiet machine's"
fi
exit $failed
