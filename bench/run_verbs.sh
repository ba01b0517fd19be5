#!/usr/bin/env bash
# oxr on an RDMA device beside perftest, in the same boot:
#   put latency (bench_put --polled: oxr_put_quiet, the target polls its
#     memory, as ib_write_lat does)  vs ib_write_lat   goal <= 1.05 at 8 B
#   message ping-pong (bench_pingpong) vs ib_send_lat   goal <= 1.2 at 8 B
#   streaming bandwidth (bench_pingpong) vs ib_write_bw goal >= 0.95 at 1 MiB
#   put with its note (bench_put: oxr_put, the target takes the note with
#     oxr_win_wait) vs ib_write_lat, puts' bandwidth: shown, no goal
# Latencies are medians of half round trips (perftest: t_typical); bandwidth
# is MB/s (10^6).  It measures and prints the ratios; it exits non-zero only
# when a program fails.  Run it where a device is, e.g. in the soft-RoCE guest:
#   ci/rxe-guest -- bench/run_verbs.sh [-B BUILD_DIR] [-r ROUNDS] [--quick]
# The guest's timing moves by a third from one minute to the next (where the
# scheduler puts the two processes and the kernel's soft-RoCE work), so one
# figure of each side would compare two moods of the machine.  The 8 B
# latencies are measured in ROUNDS rounds (default 5), each perftest and then
# oxr, back to back; a round's ratio compares the two of one moment, and the
# headline is the median of the rounds' ratios.  The size sweeps and the
# bandwidths run in 2 rounds (a third of the time each); their ratio is that
# of the better round of each side.
#   OXR_DEVICE (default rxe0), OXR_GID_INDEX (default 1), RDMA_HOST (default
#   127.0.0.2: the address perftest's client connects to), OXR_SPIN_US (default
#   here 100000: oxr polls all the time, as perftest does; oxr's own default of
#   50 us then sleeps, which under qemu's TCG costs ~100 us a wake-up)
set -euo pipefail
cd "$(dirname "$0")/.."

build=build quick=() runs=5
while [ $# -gt 0 ]; do
	case $1 in
	-B) build=$2; shift ;;
	-r) runs=$2; shift ;;
	--quick) quick=(--quick) ;;
	*) echo "usage: $0 [-B BUILD_DIR] [-r ROUNDS] [--quick]" >&2; exit 2 ;;
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
oxr() { OXR_TRANSPORT=verbs "$build/bin/oxr-run" -n 2 "$build/bin/$@"; }
# t_typical is column 5 of perftest's latency tables; BW average[MB/sec] column 4
col() { echo "$1" | awk -v c="$2" '{print $c}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# median of the numbers given
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
	if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2];
	else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

wl_all=() put_all=() put_r=() sl_all=() msg_all=() msg_r=()
for r in $(seq "$runs"); do
	echo "=== 8 B latency, round $r of $runs: perftest, then oxr (OXR_SPIN_US=$OXR_SPIN_US)"
	wl=$(col "$(perftest ib_write_lat -s 8 -n "$iters")" 5) || exit 1
	put=$(oxr bench_put --polled "${quick[@]}" --sizes 8 | tee "$out/p.txt" >/dev/null;
	      oxr_figure "$out/p.txt" latency 8 5)
	sl=$(col "$(perftest ib_send_lat -s 8 -n "$iters")" 5) || exit 1
	msg=$(oxr bench_pingpong "${quick[@]}" --sizes 8 | tee "$out/m.txt" >/dev/null;
	      oxr_figure "$out/m.txt" latency 8 5)
	[ -n "$wl" ] && [ -n "$put" ] && [ -n "$sl" ] && [ -n "$msg" ] || {
		echo "run_verbs: round $r gave no figure (perftest or oxr failed)" >&2
		exit 1
	}
	wl_all+=("$wl") put_all+=("$put") sl_all+=("$sl") msg_all+=("$msg")
	put_r+=("$(ratio "$put" "$wl")") msg_r+=("$(ratio "$msg" "$sl")")
	echo "ib_write_lat $wl us, oxr put $put us: ${put_r[-1]};  ib_send_lat $sl us, oxr message $msg us: ${msg_r[-1]}"
done

wb_mbs='' nput_us='' bw_mbs='' putbw_mbs=''
for r in 1 2; do
	echo "=== sizes and bandwidth, round $r of 2"
	wb=$(perftest ib_write_bw -s 1048576 -n 200) || exit 1
	echo "ib_write_bw  1 MiB: $wb"
	wb_mbs=$(best "$wb_mbs" "$(col "$wb" 4)" bw)
	oxr bench_put --polled "${quick[@]}" --sizes 8,4096,65536,1048576 | tee "$out/put.txt"
	oxr bench_put "${quick[@]}" --sizes 8,4096,65536,1048576 | tee "$out/nput.txt"
	oxr bench_pingpong "${quick[@]}" --sizes 8,4096,65536,1048576 | tee "$out/msg.txt"
	nput_us=$(best "$nput_us" "$(oxr_figure "$out/nput.txt" latency 8 5)" lat)
	bw_mbs=$(best "$bw_mbs" "$(oxr_figure "$out/msg.txt" bandwidth 1048576 4)" bw)
	putbw_mbs=$(best "$putbw_mbs" "$(oxr_figure "$out/put.txt" bandwidth 1048576 4)" bw)
done

echo
echo "=== oxr / perftest on $dev, same boot"
echo "8 B rounds (oxr / perftest of each round): put ${put_r[*]}; message ${msg_r[*]}"
printf '%-34s %12s %12s %8s %8s\n' "figure" "oxr" "perftest" "ratio" "goal"
printf '%-34s %10s us %9s us %8s %8s\n' "put 8 B vs ib_write_lat" "$(median "${put_all[@]}")" \
	"$(median "${wl_all[@]}")" "$(median "${put_r[@]}")" "<= 1.05"
printf '%-34s %10s us %9s us %8s %8s\n' "message 8 B vs ib_send_lat" "$(median "${msg_all[@]}")" \
	"$(median "${sl_all[@]}")" "$(median "${msg_r[@]}")" "<= 1.2"
printf '%-34s %8s MB/s %7s MB/s %8s %8s\n' "stream 1 MiB vs ib_write_bw" "$bw_mbs" "$wb_mbs" \
	"$(ratio "$bw_mbs" "$wb_mbs")" ">= 0.95"
printf '%-34s %10s us %9s us %8s %8s\n' "put 8 B + note vs ib_write_lat" "$nput_us" \
	"$(median "${wl_all[@]}")" "$(ratio "$nput_us" "$(median "${wl_all[@]}")")" "-"
printf '%-34s %8s MB/s %7s MB/s %8s %8s\n' "puts 1 MiB vs ib_write_bw" "$putbw_mbs" "$wb_mbs" \
	"$(ratio "$putbw_mbs" "$wb_mbs")" "-"
echo "latencies: medians over the rounds, ratio: the median of the rounds' ratios;"
echo "  bandwidths: the better of 2 rounds each"
