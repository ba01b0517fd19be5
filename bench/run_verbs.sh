#!/usr/bin/env bash
# oxr on an RDMA device beside perftest, in the same boot:
#   put latency (bench_put --polled: oxr_put_quiet, the target polls its
#     memory, as ib_write_lat does)  vs ib_write_lat   goal <= 1.05 at 8 B
#   put with its note (bench_put: oxr_put, the target takes the note with
#     oxr_win_wait)                  vs ib_write_lat   (shown, no goal)
#   message ping-pong (bench_pingpong) vs ib_send_lat   goal <= 1.2 at 8 B
#   streaming bandwidth (bench_pingpong) vs ib_write_bw goal >= 0.95 at 1 MiB
# Latencies are medians of half round trips (perftest: t_typical); bandwidth
# is MB/s (10^6).  It measures and prints the ratios; it exits non-zero only
# when a program fails.  Run it where a device is, e.g. in the soft-RoCE guest:
#   ci/rxe-guest -- bench/run_verbs.sh [-B BUILD_DIR] [-r RUNS] [--quick]
# -r: each program runs RUNS times (default 3), oxr and perftest in turn, and
# each side keeps its best figure (the guest's timing is noisy, both alike).
#   OXR_DEVICE (default rxe0), OXR_GID_INDEX (default 1), RDMA_HOST (default
#   127.0.0.2: the address perftest's client connects to), OXR_SPIN_US (default
#   here 100000: oxr polls all the time, as perftest does; oxr's own default of
#   50 us then sleeps, which under qemu's TCG costs ~100 us a wake-up)
set -euo pipefail
cd "$(dirname "$0")/.."

build=build quick=() runs=3
while [ $# -gt 0 ]; do
	case $1 in
	-B) build=$2; shift ;;
	-r) runs=$2; shift ;;
	--quick) quick=(--quick) ;;
	*) echo "usage: $0 [-B BUILD_DIR] [-r RUNS] [--quick]" >&2; exit 2 ;;
	esac
	shift
done
dev=${OXR_DEVICE:-rxe0}
gid=${OXR_GID_INDEX:-1}
host=${RDMA_HOST:-127.0.0.2}
iters=2000
[ ${#quick[@]} -gt 0 ] && iters=300
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# perftest TOOL ARGS...: server in the background, then the client; the client's table
perftest() {
	local tool=$1
	shift
	"$tool" -d "$dev" -x "$gid" "$@" >"$out/server.log" 2>&1 &
	local spid=$!
	sleep 1
	"$tool" -d "$dev" -x "$gid" "$@" "$host" >"$out/$tool.log" 2>&1 || {
		cat "$out/$tool.log" "$out/server.log"
		kill "$spid" 2>/dev/null
		return 1
	}
	wait "$spid" || true
	cat "$out/$tool.log" | grep -E '^ *[0-9]+ +[0-9]+' | head -1
}

# a row of an oxr table: which (latency|bandwidth) bytes column(1-based, after the label)
oxr_figure() {
	awk -v want="$2" -v bytes="$3" -v col="$4" '
		/^latency/ { sec = "latency"; next }
		/^bandwidth/ { sec = "bandwidth"; next }
		sec == want && $3 == bytes { print $(col + 2); exit }' "$1"
}

# best A B lat|bw: the better of two figures (empty A: B)
best() {
	awk -v a="$1" -v b="$2" -v k="$3" 'BEGIN {
		if (a == "") print b; else if (k == "lat") print (b + 0 < a + 0 ? b : a);
		else print (b + 0 > a + 0 ? b : a) }'
}

export OXR_DEVICE="$dev" OXR_GID_INDEX="$gid" OXR_SPIN_US=${OXR_SPIN_US:-100000}
wl_us='' sl_us='' wb_mbs='' put_us='' nput_us='' msg_us='' bw_mbs='' putbw_mbs=''
for r in $(seq "$runs"); do
	echo "=== run $r of $runs: perftest on $dev (GID index $gid, to $host)"
	wl=$(perftest ib_write_lat -s 8 -n "$iters") || exit 1
	sl=$(perftest ib_send_lat -s 8 -n "$iters") || exit 1
	wb=$(perftest ib_write_bw -s 1048576 -n 200) || exit 1
	echo "ib_write_lat 8 B: $wl"
	echo "ib_send_lat  8 B: $sl"
	echo "ib_write_bw  1 MiB: $wb"
	# t_typical is column 5 of the latency tables; BW average[MB/sec] column 4
	wl_us=$(best "$wl_us" "$(echo "$wl" | awk '{print $5}')" lat)
	sl_us=$(best "$sl_us" "$(echo "$sl" | awk '{print $5}')" lat)
	wb_mbs=$(best "$wb_mbs" "$(echo "$wb" | awk '{print $4}')" bw)

	echo "=== run $r of $runs: oxr on $dev (OXR_TRANSPORT=verbs, OXR_SPIN_US=$OXR_SPIN_US)"
	OXR_TRANSPORT=verbs "$build/bin/oxr-run" -n 2 "$build/bin/bench_put" --polled "${quick[@]}" \
		--sizes 8,4096,65536,1048576 | tee "$out/put.txt"
	OXR_TRANSPORT=verbs "$build/bin/oxr-run" -n 2 "$build/bin/bench_put" "${quick[@]}" \
		--sizes 8,4096,65536,1048576 | tee "$out/nput.txt"
	OXR_TRANSPORT=verbs "$build/bin/oxr-run" -n 2 "$build/bin/bench_pingpong" "${quick[@]}" \
		--sizes 8,4096,65536,1048576 | tee "$out/msg.txt"
	put_us=$(best "$put_us" "$(oxr_figure "$out/put.txt" latency 8 5)" lat)
	nput_us=$(best "$nput_us" "$(oxr_figure "$out/nput.txt" latency 8 5)" lat)
	msg_us=$(best "$msg_us" "$(oxr_figure "$out/msg.txt" latency 8 5)" lat)
	bw_mbs=$(best "$bw_mbs" "$(oxr_figure "$out/msg.txt" bandwidth 1048576 4)" bw)
	putbw_mbs=$(best "$putbw_mbs" "$(oxr_figure "$out/put.txt" bandwidth 1048576 4)" bw)
done

echo
echo "=== oxr / perftest on $dev, same boot, best of $runs runs each"
printf '%-34s %12s %12s %8s %8s\n' "figure" "oxr" "perftest" "ratio" "goal"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
printf '%-34s %10s us %9s us %8s %8s\n' "put 8 B vs ib_write_lat" "$put_us" "$wl_us" \
	"$(ratio "$put_us" "$wl_us")" "<= 1.05"
printf '%-34s %10s us %9s us %8s %8s\n' "put 8 B + note vs ib_write_lat" "$nput_us" "$wl_us" \
	"$(ratio "$nput_us" "$wl_us")" "-"
printf '%-34s %10s us %9s us %8s %8s\n' "message 8 B vs ib_send_lat" "$msg_us" "$sl_us" \
	"$(ratio "$msg_us" "$sl_us")" "<= 1.2"
printf '%-34s %8s MB/s %7s MB/s %8s %8s\n' "stream 1 MiB vs ib_write_bw" "$bw_mbs" "$wb_mbs" \
	"$(ratio "$bw_mbs" "$wb_mbs")" ">= 0.95"
printf '%-34s %8s MB/s %7s MB/s %8s %8s\n' "puts 1 MiB vs ib_write_bw" "$putbw_mbs" "$wb_mbs" \
	"$(ratio "$putbw_mbs" "$wb_mbs")" "-"
