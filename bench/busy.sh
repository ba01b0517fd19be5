# shellcheck shell=bash
# busy: processes running besides the caller just before a run, the least
# of 5 looks 0.1 s apart (the load average would still count the previous
# run's ranks): another program's ranks move the times these scripts
# measure more than anything measured.  Sourced by run_startup.sh and
# run_control_plane.sh.
busy() {
	local r m=999999
	for _ in 1 2 3 4 5; do
		r=$(cut -d' ' -f4 /proc/loadavg)
		r=$((${r%/*} - 1))
		[ $r -lt $m ] && m=$r
		sleep 0.1
	done
	echo $m
}
