#!/bin/bash
# SPDX-License-Identifier: MIT
# Plot bench-prio's shares over time (plain host or Xen rig) with gnuplot.
# DAT: "t_s share1..share4" lines; a "# change_at T" line marks the live
# weight change (1:1:1:1 -> 1:2:3:4).  Installs Debian's gnuplot-nox when
# missing (as root, or through sudo); where that fails: says so, exits 0.
# Usage: prio-plot.sh DAT PNG [WHERE]
set -u
dat=${1:?usage: prio-plot.sh DAT PNG [WHERE]}
png=${2:?usage: prio-plot.sh DAT PNG [WHERE]}
where=${3:-plain host}
[ -s "$dat" ] || { echo "prio-plot: no data in $dat" >&2; exit 1; }
command -v gnuplot >/dev/null ||
	"$(dirname "$0")/install-deps.sh" gnuplot-nox >/dev/null 2>&1 </dev/null
if ! command -v gnuplot >/dev/null; then
	echo "gnuplot not installed: data in $dat (apt-get install gnuplot-nox)"
	exit 0
fi
chg=$(sed -n 's/^# change_at \([0-9.]*\).*/\1/p' "$dat" | head -1)
gnuplot <<GP && echo "plot: $png"
set terminal png size 900,500
set output "$png"
set title "vrdma ($where): shares of bytes, weights 1:1:1:1 -> 1:2:3:4 at t=${chg:-?} s"
set xlabel "time (s)"; set ylabel "share"; set yrange [0:0.6]; set key top left
${chg:+set arrow from $chg, graph 0 to $chg, graph 1 nohead dt 2}
plot for [i=1:4] "$dat" using 1:(column(i+1)) with linespoints title sprintf("guest %d (weight %d after)", i, i), \
     for [i=1:4] i/10.0 with lines dt 3 lc i notitle
GP
