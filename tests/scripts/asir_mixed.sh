#!/bin/bash
# asir_mixed.sh ASIRLIB_DIR OXR_SERVER_PATH [CASE_REGEX]
#
# Runs RFC-102 groups of real ox_asir and oxr-server engines from Risa/Asir
# (tests/scripts/asir_mixed.rr), by hand: CI cannot build asir.  ASIRLIB_DIR
# holds asir, ox_launch and ox_asir (shared/tools/build-asir.sh makes
# WORKDIR/asirlib).  Kinds are one letter per rank: A = ox_asir,
# O = oxr-server.  Cases, for N = 2, 3, 4 and ports tcp (generate_port())
# and unix (generate_port(1)): all-A (the reference), a single O at every
# rank among As, a single A at every rank among Os, and all-O.
# Each case is its own asir process under `timeout` (ASIR_MIXED_TIMEOUT,
# default 60 s); the engines it started (found by an environment tag they
# inherit) are killed afterwards.  Where `unshare -m` works, each case sees
# a /tmp of its own (a bind-mounted fresh folder): the Unix socket files asir
# leaves there are counted and removed with it (ASIR_MIXED_PRIVATE_TMP=0: the
# real /tmp, and only the RFC-102 paths asir printed are removed).  Cases
# start ASIR_MIXED_GAP (1) s apart: asir's generate_port() is unseeded, so
# two asir processes in the same second draw the same TCP ports, and the
# last case's TIME_WAIT sockets would make the next bind fail.  CASE_REGEX (grep -E) picks cases
# by their label, e.g. 'N=2 .*tcp'.  ASIR_MIXED_PAIR_SYNC=0: the master sends
# all accepts and connects without waiting for each pair (exactly as asir's
# spawn102 does; asir's connector gives up after about 1 s, so an acceptor
# still busy with an earlier pair fails the link on a loaded machine).  Logs: ASIR_MIXED_LOGDIR (default a
# fresh /tmp/asir_mixed.XXXXXX).  Ends with "asir mixed groups: P passed, F
# failed"; exits 1 when a case failed.
set -u

if [ $# -lt 2 ]; then
	echo "usage: $0 ASIRLIB_DIR OXR_SERVER_PATH [CASE_REGEX]" >&2
	exit 2
fi
asirlib=$(cd "$1" && pwd) || exit 2
oxr=$(readlink -f "$2") || exit 2
filter=${3:-}
limit=${ASIR_MIXED_TIMEOUT:-60}
here=$(cd "$(dirname "$0")" && pwd)
rr=$here/asir_mixed.rr
logdir=${ASIR_MIXED_LOGDIR:-$(mktemp -d /tmp/asir_mixed.XXXXXX)}
mkdir -p "$logdir"
gap=${ASIR_MIXED_GAP:-1}
# each case in a mount namespace of its own whose /tmp is a fresh folder:
# asir leaves its Unix socket files there (counted, then removed)
private=0
if [ "${ASIR_MIXED_PRIVATE_TMP:-1}" = 1 ] &&
	unshare -m --propagation private sh -c 'mount --bind "$0" /tmp' "$logdir" 2>/dev/null; then
	private=1
fi

for f in asir ox_launch ox_asir; do
	[ -x "$asirlib/$f" ] || { echo "$0: no $asirlib/$f" >&2; exit 2; }
done
[ -x "$oxr" ] || { echo "$0: $oxr is not executable" >&2; exit 2; }

# the kinds strings of one N: all A, one O among As, one A among Os, all O
kinds_for() {
	local n=$1 i j s
	declare -A seen=()
	local all_a=$(printf 'A%.0s' $(seq "$n")) all_o=$(printf 'O%.0s' $(seq "$n"))
	for s in "$all_a"; do seen[$s]=1; echo "$s"; done
	for c in O A; do
		for ((i = 0; i < n; i++)); do
			s=
			for ((j = 0; j < n; j++)); do
				if [ $j -eq $i ]; then s+=$c; elif [ $c = O ]; then s+=A; else s+=O; fi
			done
			[ -n "${seen[$s]:-}" ] || { seen[$s]=1; echo "$s"; }
		done
	done
	echo "$all_o"
}

# pids of the processes whose environment holds TAG
tagged() {
	grep -lzx "ASIR_MIXED_TAG=$1" /proc/[0-9]*/environ 2>/dev/null | sed 's|^/proc/\([0-9]*\)/environ$|\1|'
}

# what the engines of TAG look like (taken just before a timeout): rank
# (launchers are started in rank order), name, pid, state and TCP/Unix sockets
snapshot() {
	local p l r=0 launchers= all
	all=$(tagged "$1" | sort -n)
	for p in $all; do
		[ "$(cat /proc/$p/comm 2>/dev/null)" = ox_launch ] && launchers+=" $p"
	done
	for l in $launchers; do
		for p in $all; do
			[ "$(awk '{print $4}' /proc/$p/stat 2>/dev/null)" = "$l" ] || continue
			echo "rank $r: $(cat /proc/$p/comm) pid $p state $(awk '{print $3}' /proc/$p/stat)"
			ss -tanpx 2>/dev/null | grep "pid=$p," | awk '{print "    " $1, $2, $5, $6}'
		done
		r=$((r + 1))
	done
}

passed=0 failed=0 k=0
for n in 2 3 4; do
	for kinds in $(kinds_for $n); do
		for ports in tcp unix; do
			label="case N=$n kinds=$kinds ports=$ports"
			if [ -n "$filter" ] && ! grep -Eq -- "$filter" <<<"$label"; then
				continue
			fi
			k=$((k + 1))
			list=$(sed 's/A/0,/g; s/O/1,/g; s/,$//' <<<"$kinds")
			unix=0; [ $ports = unix ] && unix=1
			log=$logdir/$n-$kinds-$ports.log
			src=$logdir/$n-$kinds-$ports.rr
			{
				echo "Kinds = [$list]\$"
				echo "Unix = $unix\$"
				echo "Oxr = \"$oxr\"\$"
				echo "Label = \"$label\"\$"
				echo "Sync = ${ASIR_MIXED_PAIR_SYNC:-1}\$"
				cat "$rr"
			} > "$src"
			tag=$$.$k.$RANDOM
			[ $k -eq 1 ] || sleep "$gap"
			t0=$(date +%s.%N)
			(sleep $((limit > 4 ? limit - 2 : 1)) && snapshot "$tag" > "$log.hang") &
			watchdog=$!
			if [ $private -eq 1 ]; then
				ctmp=$logdir/$n-$kinds-$ports.tmp
				rm -rf "$ctmp"; mkdir -p "$ctmp"; cp "$src" "$ctmp/case.rr"
				(cd "$asirlib" && ASIR_MIXED_TAG=$tag ASIR_LIBDIR=$asirlib \
					timeout -k 5 "$limit" unshare -m --propagation private \
					sh -c 'mount --bind "$0" /tmp && exec stdbuf -oL -eL ./asir -quiet -f /tmp/case.rr' \
					"$ctmp" </dev/null >"$log" 2>&1)
			else
				(cd "$asirlib" && ASIR_MIXED_TAG=$tag ASIR_LIBDIR=$asirlib \
					timeout -k 5 "$limit" stdbuf -oL -eL ./asir -quiet -f "$src" \
					</dev/null >"$log" 2>&1)
			fi
			rc=$?
			t1=$(date +%s.%N)
			if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
				wait $watchdog 2>/dev/null
			else
				kill $watchdog 2>/dev/null; wait $watchdog 2>/dev/null
			fi
			secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
			# the engines and launchers this case started
			left=$(tagged "$tag")
			[ -z "$left" ] || { sleep 1; left=$(tagged "$tag"); }
			nleft=$(wc -w <<<"$left")
			names=
			for p in $left; do names+="${names:+ }$(cat /proc/$p/comm 2>/dev/null)"; done
			if [ -n "$left" ]; then
				kill -TERM $left 2>/dev/null
				sleep 0.5
				left2=$(tagged "$tag")
				[ -z "$left2" ] || kill -KILL $left2 2>/dev/null
			fi
			# socket files left in /tmp: the launcher's (ox_launch_nox) and the
			# RFC-102 links' (asir prints "port: PATH" for those)
			ports102=$(sed -n 's/^port: \(\/tmp\/ox.*\)$/\1/p' "$log")
			n102=0 nlaunch=0
			if [ $private -eq 1 ]; then
				for f in "$ctmp"/ox*; do
					[ -S "$f" ] || continue
					if grep -qx "/tmp/${f##*/}" <<<"$ports102"; then n102=$((n102 + 1))
					else nlaunch=$((nlaunch + 1)); fi
				done
				rm -rf "$ctmp"
			else
				for f in $ports102; do
					[ -e "$f" ] && { n102=$((n102 + 1)); rm -f "$f"; }
				done
			fi
			line=$(grep -E "^$label: (ok|FAIL)" "$log" | head -1)
			if [ -z "$line" ]; then
				last=$(grep '^step: ' "$log" | tail -1 | sed 's/^step: //')
				if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
					why="timeout after ${limit}s in step '$last'"
					[ -s "$log.hang" ] && why+=" [$(grep '^rank' "$log.hang" | sed 's/ pid [0-9]*//' | tr '\n' ';' | sed 's/;$//')]"
				else
					why="asir exited $rc in step '$last': $(grep -v -e '^step: ' -e '^port: ' -e '^0$' "$log" | tail -3 | tr '\n' ' ')"
				fi
				line="$label: FAIL: $why"
			fi
			extra=
			[ "$nleft" -eq 0 ] || extra+=", $nleft processes left, killed: $names"
			[ $n102 -eq 0 ] || extra+=", $n102 rfc102 socket files left"
			[ $nlaunch -eq 0 ] || extra+=", $nlaunch launcher socket files left"
			echo "$line ($secs s$extra)"
			case $line in
			*": ok") passed=$((passed + 1)) ;;
			*) failed=$((failed + 1)) ;;
			esac
		done
	done
done
echo "logs: $logdir"
echo "asir mixed groups: $passed passed, $failed failed"
[ $failed -eq 0 ]
