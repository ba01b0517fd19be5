#!/usr/bin/env bash
# PNG plots of one oxr-bench run from its --dat folder, oxr and its peers on
# the same axes:
#   PREFIX-size.png   latency (and put) against message size, log-log
#   PREFIX-ranks.png  each collective's median against the group size
#   bench/plot.sh DAT_DIR PREFIX "TITLE"
# Needs gnuplot (Debian: gnuplot-nox).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 DAT_DIR PREFIX TITLE" >&2; exit 2; }
dat=$1 prefix=$2 title=$3
command -v gnuplot >/dev/null || { echo "$0: no gnuplot (Debian: gnuplot-nox)" >&2; exit 1; }

# "file" title "name", ... for every data file matching a glob; empty if none
series() {
	local f sep='' out=''
	for f in "$dat"/$1; do
		[ -e "$f" ] || continue
		local name=${f##*/}
		name=${name%.dat}
		out+="$sep'$f' using 1:2 with linespoints title '${name/./ }'"
		sep=', '
	done
	echo "$out"
}

lat=$(series 'latency.*.dat') put=$(series 'put.*.dat')
if [ -n "$lat$put" ]; then
	gnuplot <<EOF_GP
set terminal png size 1000,650
set output '$prefix-size.png'
set title "$title: half round trip (median) against message size"
set logscale xy
set xlabel 'bytes'
set ylabel 'us'
set key left top
set grid
plot ${lat}${lat:+${put:+, }}${put}
EOF_GP
fi

plots=''
for b in barrier-0 bcast-8 reduce-4 crystal-64 revoke-0 reset-0; do
	s=$(series "$b.*.dat")
	[ -n "$s" ] || continue
	plots+="set title '${b%-*} (${b##*-} B)'
plot $s
"
done
if [ -n "$plots" ]; then
	gnuplot <<EOF_GP
set terminal png size 1400,900
set output '$prefix-ranks.png'
set multiplot layout 2,3 title "$title: median us against ranks"
set logscale x 2
set logscale y
set xlabel 'ranks'
set ylabel 'us'
set key left top
set grid
$plots
unset multiplot
EOF_GP
fi
