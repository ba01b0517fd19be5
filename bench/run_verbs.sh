#!/usr/bin/env bash
# oxr on an RDMA device beside perftest, in the same boot:
#   put latency (bench_put --polled: oxr_put_nonotify, the target polls its
#     memory, as ib_write_lat does)  vs ib_write_lat   goal <= 1.05 at 8 B
#   message ping-pong (bench_pingpong) vs ib_send_lat   goal <= 1.2 at 8 B
#   streaming bandwidth (bench_pingpong) vs ib_write_bw goal >= 0.95 at 1 MiB
#   put with its note (bench_put: oxr_put, the target takes the note with
#     oxr_win_wait) vs ib_write_lat                 goal <= 1.15 at 8 B
#   puts' bandwidth: shown, no goal
# Latencies are medians of half round trips (perftest: t_typical); bandwidth
# is MB/s (10^6).  It measures and prints the ratios; it exits non-zero only
# when a program fails.  Run it where a device is, e.g. in the soft-RoCE guest:
#   ci/rxe-guest -- bench/run_verbs.sh [-B BUILD_DIR] [-A OLD_BUILD] [-r ROUNDS] [--quick]
# -A: an older build measured in the same rounds, right after the new one
# (A/B: a change must not step back); its ratios print beside the new ones.
# The guest's timing moves by a third from one minute to the next (where the
# scheduler puts the two processes and the kernel's soft-RoCE work), so one
# figure of each side would compare two moods of the machine.  The three
# goals are measured in ROUNDS rounds (default 5), each perftest and then
# oxr, back to back; a round's ratio compares the two of one moment, and the
# headline is the median of the rounds' ratios.  One more round sweeps the
# sizes (8 B .. 1 MiB) for the tables and the figures without a goal.
#   OXR_DEVICE (default rxe0), OXR_GID_INDEX (default 1), RDMA_HOST (default
#   127.0.0.2: the address perftest's client connects to), OXR_SPIN_US (default
#   here 100000: oxr polls all the time, as perftest does; oxr's own default of
#   50 us then sleeps, which under qemu's TCG costs ~100 us a wake-up)
set -euo pipefail
cd "$(dirname "$0")/.."

build=build old='' quick=() runs=5
while [ $# -gt 0 ]; do
	case $1 in
	-B) build=$2; shift ;;
	-A) old=$2; shift ;;
	-r) runs=$2; shift ;;
	--quick) quick=(--quick) ;;
	*) echo "usage: $0 [-B BUILD_DIR] [-A OLD_BUILD] [-r ROUNDS] [--quick]" >&2; exit 2 ;;
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
		cat "$out/$tool.log" "$out/server.log" >&2
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

export OXR_DEVICE="$dev" OXR_GID_INDEX="$gid" OXR_SPIN_US=${OXR_SPIN_US:-100000}
oxr() { OXR_TRANSPORT=verbs "$build/bin/oxr-run" -n 2 "$build/bin/$@"; }
# oxr_figures BUILD: the four oxr figures of a round, on one line
# (put polled 8 B us, put with note 8 B us, message 8 B us, stream 1 MiB MB/s)
oxr_figures() {
	local b=$1 p n m w
	run() { OXR_TRANSPORT=verbs "$b/bin/oxr-run" -n 2 "$b/bin/$@"; }
	p=$(run bench_put --polled "${quick[@]}" --sizes 8 >"$out/p.txt" && oxr_figure "$out/p.txt" latency 8 5)
	n=$(run bench_put "${quick[@]}" --sizes 8 >"$out/n.txt" && oxr_figure "$out/n.txt" latency 8 5)
	m=$(run bench_pingpong "${quick[@]}" --sizes 8 >"$out/m.txt" && oxr_figure "$out/m.txt" latency 8 5)
	w=$(run bench_pingpong "${quick[@]}" --sizes 1048576 >"$out/b.txt" &&
	    oxr_figure "$out/b.txt" bandwidth 1048576 4)
	echo "$p $n $m $w"
}
# t_typical is column 5 of perftest's latency tables; BW average[MB/sec] column 4
col() { echo "$1" | awk -v c="$2" '{print $c}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# median of the numbers given
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
	if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2];
	else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

wl_all=() sl_all=() wb_all=()
put_all=() nput_all=() msg_all=() bw_all=() put_r=() nput_r=() msg_r=() bw_r=()
oput_r=() onput_r=() omsg_r=() obw_r=()
for r in $(seq "$runs"); do
	echo "=== round $r of $runs: perftest, then oxr${old:+, then the old build} (OXR_SPIN_US=$OXR_SPIN_US)"
	wl=$(col "$(perftest ib_write_lat -s 8 -n "$iters")" 5)
	sl=$(col "$(perftest ib_send_lat -s 8 -n "$iters")" 5)
	wb=$(col "$(perftest ib_write_bw -s 1048576 -n 200)" 4)
	read -r put nput msg bw <<<"$(oxr_figures "$build")"
	for f in "$wl" "$sl" "$wb" "$put" "$nput" "$msg" "$bw"; do
		[ -n "$f" ] || { echo "run_verbs: round $r gave no figure (perftest or oxr failed)" >&2; exit 1; }
	done
	wl_all+=("$wl") sl_all+=("$sl") wb_all+=("$wb")
	put_all+=("$put") nput_all+=("$nput") msg_all+=("$msg") bw_all+=("$bw")
	put_r+=("$(ratio "$put" "$wl")") nput_r+=("$(ratio "$nput" "$wl")")
	msg_r+=("$(ratio "$msg" "$sl")") bw_r+=("$(ratio "$bw" "$wb")")
	echo "put 8 B $put us / ib_write_lat $wl us = ${put_r[-1]};" \
		"put 8 B + note $nput us = ${nput_r[-1]};" \
		"message 8 B $msg us / ib_send_lat $sl us = ${msg_r[-1]};" \
		"stream 1 MiB $bw / ib_write_bw $wb MB/s = ${bw_r[-1]}"
	if [ -n "$old" ]; then
		read -r oput onput omsg obw <<<"$(oxr_figures "$old")"
		[ -n "$obw" ] || { echo "run_verbs: round $r: the old build gave no figure" >&2; exit 1; }
		oput_r+=("$(ratio "$oput" "$wl")") onput_r+=("$(ratio "$onput" "$wl")")
		omsg_r+=("$(ratio "$omsg" "$sl")") obw_r+=("$(ratio "$obw" "$wb")")
		echo "  old build: put $oput us = ${oput_r[-1]}; put + note $onput us =" \
			"${onput_r[-1]}; message $omsg us = ${omsg_r[-1]}; stream $obw MB/s = ${obw_r[-1]}"
	fi
done

echo "=== the sizes, one round"
oxr bench_put --polled "${quick[@]}" --sizes 8,4096,65536,1048576 | tee "$out/put.txt"
oxr bench_put "${quick[@]}" --sizes 8,4096,65536,1048576 | tee "$out/nput.txt"
oxr bench_pingpong "${quick[@]}" --sizes 8,4096,65536,1048576 | tee "$out/msg.txt"
putbw_mbs=$(oxr_figure "$out/put.txt" bandwidth 1048576 4)
wl_med=$(median "${wl_all[@]}") wb_med=$(median "${wb_all[@]}")

echo
echo "=== oxr / perftest on $dev, same boot"
echo "rounds (oxr / perftest of each): put ${put_r[*]}; put + note ${nput_r[*]};" \
	"message ${msg_r[*]}; stream ${bw_r[*]}"
printf '%-34s %12s %12s %8s %8s %8s\n' "figure" "oxr" "perftest" "ratio" "goal" "old"
row() { # label oxr-median unit perftest-median ratio goal old-ratio
	printf '%-34s %10s %-2s %9s %-2s %8s %8s %8s\n' "$1" "$2" "$3" "$4" "$3" "$5" "$6" "${7:--}"
}
row "put 8 B vs ib_write_lat" "$(median "${put_all[@]}")" us "$wl_med" \
	"$(median "${put_r[@]}")" "<= 1.05" "$(median "${oput_r[@]}")"
row "put 8 B + note vs ib_write_lat" "$(median "${nput_all[@]}")" us "$wl_med" \
	"$(median "${nput_r[@]}")" "<= 1.15" "$(median "${onput_r[@]}")"
row "message 8 B vs ib_send_lat" "$(median "${msg_all[@]}")" us "$(median "${sl_all[@]}")" \
	"$(median "${msg_r[@]}")" "<= 1.2" "$(median "${omsg_r[@]}")"
row "stream 1 MiB vs ib_write_bw" "$(median "${bw_all[@]}")" MB/s "$wb_med" \
	"$(median "${bw_r[@]}")" ">= 0.95" "$(median "${obw_r[@]}")"
row "puts 1 MiB vs ib_write_bw" "$putbw_mbs" MB/s "$wb_med" "$(ratio "$putbw_mbs" "$wb_med")" "-"
echo "oxr, perftest: medians over the rounds; ratio: the median of the rounds' ratios"
echo "  (puts 1 MiB: of the sizes round, against perftest's median)"
[ -n "$old" ] && echo "old: the same ratio of $old, measured in the same rounds"
exit 0
