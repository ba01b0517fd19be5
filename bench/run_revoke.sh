#!/usr/bin/env bash
# Revoke propagation and reset time for groups of 2..16 ranks on this
# machine (oxr-run), on the transport oxr picks (tcp on the host; in the
# soft-RoCE guest: ci/rxe-guest -- bench/run_revoke.sh, verbs).
#   bench/run_revoke.sh [-B BUILD_DIR] [-i ROUNDS]
set -euo pipefail
# oxr over TCP unless told: its peer here is Open MPI's tcp BTL (auto would
# take shared memory between these ranks; run_pingpong.sh --shm compares that)
export OXR_TRANSPORT=${OXR_TRANSPORT:-tcp}
cd "$(dirname "$0")/.."
build=build rounds=50
while [ $# -gt 0 ]; do
	case $1 in
	-B) build=$2; shift ;;
	-i) rounds=$2; shift ;;
	*) echo "usage: $0 [-B BUILD_DIR] [-i ROUNDS]" >&2; exit 2 ;;
	esac
	shift
done
for n in 2 4 8 16; do
	"$build/bin/oxr-run" -n "$n" -- "$build/bin/bench_revoke" "$rounds"
done
echo "propagation: from rank 0's oxr_group_revoke until the last rank's wait ended with"
echo "  OXR_ERR_REVOKED; reset: from the first rank entering oxr_group_reset until the last"
echo "  one left it (one machine, one clock).  OXR_SPIN_US decides how fast a sleeping"
echo "  waiter wakes up: ${OXR_SPIN_US:-50} us of spinning, then epoll."
