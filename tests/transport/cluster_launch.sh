#!/usr/bin/env bash
# oxr groups started the way clusters start them: a one-node Slurm cluster
# on localhost (munged, slurmctld, slurmd, all this script's own, in a
# temporary directory, stopped by pid) running oxr programs with
# `srun --mpi=pmix`, and the same programs under Open MPI's mpirun (PMIx):
# the group test (every pair, every object checked), a collective (bcast and
# reduce for every root, checked against a sequential reference), oxr-master
# with its oxr-servers started by the launcher, and the smallest ping-pong
# benchmark run.  Facts: shared/docs/cluster-launch.md.
#   cluster_launch.sh BIN_DIR [slurm|mpirun|both]
# Needs root, slurm-wlm, munge, openmpi-bin; any missing is a failure that
# says so, never a skip.
set -uo pipefail
bin=${1:?usage: cluster_launch.sh BIN_DIR [slurm|mpirun|both]}
what=${2:-both}
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect NAME COUNT PATTERN CMD...: CMD's stdout must hold PATTERN COUNT times
expect() {
	local name=$1 count=$2 pattern=$3 out got
	shift 3
	out=$(timeout 300 "$@" 2>&1)
	local rc=$?
	got=$(grep -c -- "$pattern" <<<"$out")
	if [ $rc -ne 0 ] || [ "$got" -ne "$count" ]; then
		fail "$name: exit $rc, '$pattern' $got times, not $count"
		tail -30 <<<"$out" | sed 's/^/    /'
	else
		echo "ok: $name ($got x '$pattern')"
	fi
}

# The programs, under a launcher given as the words before them.
programs() {
	local via=$1
	shift
	expect "$via: group test (4 ranks, every pair)" 4 'pairs ok' "$@" -n 4 "$bin/group_child" pairs 3
	expect "$via: bcast and reduce, every root (4 ranks)" 4 'all ok' "$@" -n 4 "$bin/bcast_child" all
	# oxr-master starting its oxr-servers through the launcher; they connect
	# back to 127.0.0.1, as this machine's name need not resolve
	expect "$via: oxr-master demo, 4 oxr-servers started by it" 1 \
		"check: the reduce's sum equals" env OXR_MASTER_HOST=127.0.0.1 \
		"$bin/oxr-master" -n 4 --launcher "$* -n 4" demo --digits 100000
	if [ -x "$bin/bench_pingpong" ]; then
		# the banner names the bootstrap: PMIx, not a fallback
		expect "$via: bench_pingpong --quick (2 ranks, bootstrap pmix)" 2 \
			'^8 B \|2 ranks from pmix' "$@" -n 2 "$bin/bench_pingpong" --quick
	else
		fail "$via: $bin/bench_pingpong is not built (OXR_BUILD_BENCH=OFF?)"
	fi
}

need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || { fail "$c is not installed (apt-get install slurm-wlm munge openmpi-bin)"; return 1; }
	done
}

# ---- Slurm --------------------------------------------------------------

# Daemons of the current try, by pid, and their directory.
slurm_pids=()
slurm_dir=

slurm_stop() {
	local p i alive
	for p in "${slurm_pids[@]}"; do kill "$p" 2>/dev/null; done
	for i in 1 2 3 4 5 6 7 8 9 10; do
		alive=0
		for p in "${slurm_pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.3
	done
	for p in "${slurm_pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	slurm_pids=()
	[ -z "$slurm_dir" ] || [ -n "${OXR_KEEP_SLURM_DIR:-}" ] || rm -rf "$slurm_dir"
	slurm_dir=
}

# What the daemons said, for a failure: their logs go to files, not stdout.
slurm_logs() {
	local f
	for f in "$slurm_dir"/munge/munged.log "$slurm_dir"/slurmctld.log "$slurm_dir"/slurmd.log \
		"$slurm_dir"/*.out; do
		[ -s "$f" ] || continue
		echo "    --- ${f##*/} (last 15 lines)"
		tail -15 "$f" | sed 's/^/    /'
	done
}

# slurm_up HOST: starts munged, slurmctld and slurmd on two fresh ports and
# waits, bounded, for the node to be idle.  Every wait has a limit, so a dead
# controller costs seconds, not the minutes of sinfo's own retries (a CI run
# lost 9 minutes that way).  Returns 1 with the daemons still to be stopped.
slurm_up() {
	local host=$1 dir port1 port2 i state=
	dir=$(mktemp -d /var/tmp/oxr-slurm.XXXXXX) || return 1
	slurm_dir=$dir
	chmod 755 "$dir"
	# munge, as user munge, with a key and a socket of our own
	mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
	mungekey -c -k "$dir/munge/munge.key" -b 1024 >/dev/null 2>&1 || { echo "    mungekey failed"; return 1; }
	chown -R munge: "$dir/munge"
	chmod 711 "$dir/munge" # the socket needs x for all
	chmod 400 "$dir/munge/munge.key"
	runuser -u munge -- munged -F --key-file="$dir/munge/munge.key" \
		--socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
		--log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" \
		>"$dir/munged.out" 2>&1 &
	slurm_pids+=($!)
	for i in $(seq 50); do [ -S "$dir/munge/munge.socket" ] && break; sleep 0.1; done
	[ -S "$dir/munge/munge.socket" ] || { echo "    munged did not start"; return 1; }
	# two free ports below the ephemeral range (32768 and up), near a random
	# spot, so neither a leftover cluster nor a client's socket holds them
	port1=$((20000 + RANDOM % 12000))
	while ss -tan | grep -q ":$port1 \|:$((port1 + 1)) "; do port1=$((port1 + 2)); done
	port2=$((port1 + 1))
	# addresses given, not looked up: the host's name need not resolve
	cat >"$dir/slurm.conf" <<EOF
ClusterName=oxrtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port1
SlurmdPort=$port2
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SchedulerType=sched/builtin
SelectType=select/cons_tres
MpiDefault=none
ReturnToService=2
MessageTimeout=5
$(slurmd -C | head -1) NodeAddr=127.0.0.1
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
	printf 'CgroupPlugin=autodetect\nIgnoreSystemd=yes\n' >"$dir/cgroup.conf"
	export SLURM_CONF=$dir/slurm.conf
	# -i: ignore any state a controller left (there is none; a start must not depend on it)
	slurmctld -D -i -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
	slurm_pids+=($!)
	# the controller must answer before slurmd registers with it
	for i in $(seq 40); do
		timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && break
		kill -0 "${slurm_pids[1]}" 2>/dev/null || { echo "    slurmctld exited"; return 1; }
		sleep 0.5
	done
	timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' ||
		{ echo "    slurmctld on port $port1 does not answer after 20 s"; return 1; }
	slurmd -D -f "$SLURM_CONF" >"$dir/slurmd.out" 2>&1 &
	slurm_pids+=($!)
	for i in $(seq 60); do
		state=$(timeout 5 sinfo -h -N -o %T 2>/dev/null | head -1)
		case $state in
		idle*|mix*|alloc*) break ;;
		down*|unk*|drain*) timeout 5 scontrol update nodename="$host" state=resume 2>/dev/null ;;
		esac
		kill -0 "${slurm_pids[2]}" 2>/dev/null || { echo "    slurmd exited"; return 1; }
		sleep 0.5
	done
	[[ $state == idle* ]] || { echo "    node state '$state' after 30 s"; return 1; }
	echo "ok: one-node Slurm cluster up ($host, ports $port1/$port2, node $state)"
}

slurm() {
	local host try up=0
	need munged mungekey slurmctld slurmd srun sinfo scontrol || return
	[ "$(id -u)" = 0 ] || { fail "the Slurm cluster needs root (slurmd runs jobs as any user)"; return; }
	host=$(hostname -s)
	# a loaded machine can lose a start: three tries, each on fresh ports in a fresh directory
	for try in 1 2 3; do
		if slurm_up "$host"; then
			up=1
			break
		fi
		echo "Slurm start $try of 3 failed; what the daemons said:"
		slurm_logs
		slurm_stop
	done
	if [ $up = 0 ]; then
		fail "the one-node Slurm cluster did not come up in 3 tries (the daemons' logs are above)"
		unset SLURM_CONF
		return
	fi
	# --overcommit: more tasks than the node's 2 CPUs, as the tests want
	programs "srun --mpi=pmix" srun --overcommit --oversubscribe --mpi=pmix
	unset SLURM_CONF
	slurm_stop
	echo "ok: Slurm daemons stopped"
}

# ---- Open MPI's mpirun --------------------------------------------------

mpirun_() {
	need mpirun || return
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		programs "mpirun (PMIx)" mpirun --oversubscribe --mca btl self,tcp --mca pml ob1
}

case $what in
slurm) slurm ;;
mpirun) mpirun_ ;;
both) slurm; mpirun_ ;;
*) echo "usage: cluster_launch.sh BIN_DIR [slurm|mpirun|both]"; exit 2 ;;
esac
if [ $fails -ne 0 ]; then
	echo "cluster launch: $fails failed"
	exit 1
fi
echo "cluster launch: all passed"
