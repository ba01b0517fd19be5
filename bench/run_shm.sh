#!/usr/bin/env bash
# One-sided and collective figures on one host: oxr over shared memory
# (OXR_TRANSPORT=shm) against Open MPI as installed (its default transports:
# vader/sm and CMA, osc as mpirun picks), each case run oxr then MPI, in
# the same invocation, medians.  The ping-pong and streaming figures are
# bench/run_pingpong.sh --shm's.
#   8 B put + note     bench_put (oxr_put into oxr_win_alloc memory, the
#                      target's oxr_win_wait) / mpi_put (MPI_Put, flush, a
#                      flag put and flush)
#   barrier            bench_barrier bitmap / mpi_barrier, at 2, 8 and 16
#                      ranks, and dissemination at 2 (the default there)
#   bcast 8 B, 1 MiB   bench_bcast / mpi_bcast, at 2, 8 and 16 ranks
#   crystal router     bench_crystal, 16 ranks, 2 destinations, 64 B /
#                      mpi_alltoallv (MPI_Alltoallv with counts known, and
#                      MPI_Alltoall of the counts then MPI_Alltoallv)
# More ranks than cores time-share them (this machine has 2).  It measures;
# it exits non-zero only when a program fails.
#   bench/run_shm.sh [-B BUILD_DIR]
set -euo pipefail
build=build
while [ $# -gt 0 ]; do
	case $1 in
	-B) build=$2; shift 2 ;;
	*) echo "usage: $0 [-B BUILD_DIR]" >&2; exit 2 ;;
	esac
done
bin=$build/bin
export OXR_TRANSPORT=shm
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpi=(mpirun --oversubscribe --bind-to none --mca oob_tcp_if_include lo)
oxr() { "$bin/oxr-run" -n "$@"; }
med() { grep -o 'median_us=[0-9.]*' | head -1 | cut -d= -f2; }
row() { printf '%-40s %12s %12s\n' "$1" "$2" "$3"; }

printf '%s, %s\n' "$(date -u +%F)" "$(mpirun --version 2>&1 | head -1)"
row "median us" "oxr shm" "Open MPI"
row "put 8 B + note" \
	"$(oxr 2 "$bin/bench_put" --quick --sizes 8 | awk '$1 == "8" && $2 == "B" { print $7 }')" \
	"$("${mpi[@]}" -np 2 "$bin/mpi_put" --quick --sizes 8 | awk '$1 == "8" && $2 == "B" { print $7 }')"
for n in 2 8 16; do
	m=$("${mpi[@]}" -np $n "$bin/mpi_barrier" 2000 | med)
	[ $n != 2 ] || row "barrier 2 ranks (dissemination, default)" \
		"$(oxr 2 "$bin/bench_barrier" dissemination 2000 | med)" "$m"
	row "barrier $n ranks (bitmap)" "$(oxr $n "$bin/bench_barrier" bitmap 2000 | med)" "$m"
done
for n in 2 8 16; do
	o=$(oxr $n "$bin/bench_bcast" --quick | grep '^RESULT')
	m=$("${mpi[@]}" -np $n "$bin/mpi_bcast" --quick | grep '^RESULT')
	for b in 8 1048576; do
		row "bcast $n ranks, $b B" "$(grep " bytes=$b " <<<"$o" | med)" \
			"$(grep " bytes=$b " <<<"$m" | med)"
	done
done
o=$(oxr 16 "$bin/bench_crystal" --dests 2 --bytes 64 | grep '^RESULT')
m=$("${mpi[@]}" -np 16 "$bin/mpi_alltoallv" --dests 2 --bytes 64 | grep '^RESULT')
row "crystal 16 ranks, 2 dests, 64 B" "$(grep 'impl=oxr-crystal ' <<<"$o" | med)" \
	"$(grep 'impl=mpi-alltoallv ' <<<"$m" | med)"
row "  (MPI: alltoall of counts + alltoallv)" "" "$(grep 'impl=mpi-alltoall+v ' <<<"$m" | med)"
