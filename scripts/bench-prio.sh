#!/bin/bash
# SPDX-License-Identifier: MIT
# make bench-prio: issue 5's benchmark on the plain host (a benchmark, not
# a test: nothing here passes or fails on a figure).
#   1. 4 guests flood (vrdma-bw WRITE, 1 MiB) with equal weights, then the
#      weights change live to 1:2:3:4: each guest's share beside its
#      target, and a PNG of the shares over time across the change.
#   2. a high-class guest: vrdma-lat p99 (8 B) and vrdma-bw bandwidth
#      (64 KiB), solo and against 3 low-class flooders.
# Usage: bench-prio.sh BUILD_DIR [OUT_DIR]   (OUT_DIR default BUILD_DIR/bench-prio)
# Env: PRIO_WINDOW (s, default 5), BENCH_LAT_ITERS (default 20000),
#      BENCH_BW_ITERS (64 KiB writes, default 1000000: a few seconds, long
#      enough to sample CPU and counters while it runs).
set -u
b=${1:?usage: bench-prio.sh BUILD_DIR [OUT_DIR]}
b=$(cd "$b" && pwd)
out=${2:-$b/bench-prio}
WIN=${PRIO_WINDOW:-5}
LAT_ITERS=${BENCH_LAT_ITERS:-20000}
BW_ITERS=${BENCH_BW_ITERS:-1000000}
. "$(dirname "$0")/../bench/bench-lib.sh"

for f in sbin/vrdmad sbin/vrdmactl bin/vrdma-bw bin/vrdma-lat; do
	[ -x "$b/$f" ] || vr_die "$b/$f missing (make first)"
done
command -v python3 >/dev/null || vr_die "python3 needed to read stats -j"
mkdir -p "$out" || vr_die "cannot create $out"
vr_start_daemon "$b"
PIDS=
trap 'kill $PIDS 2>/dev/null; vr_cleanup' EXIT

ctl() { timeout 10 "$b/sbin/vrdmactl" -S "$VR_RUN" "$@"; }

# "domid tx_bytes" per guest
tx_all() {
	ctl stats -j | python3 -c 'import json, sys
for g in json.load(sys.stdin)["guests"]:
    print(g["domid"], g["counters"]["tx_bytes"])'
}
domids() { tx_all | awk '{ print $1 }' | sort -n; }

# new_domid BEFORE: the domid that appears beside the list BEFORE (bounded)
new_domid() {
	for _ in $(seq 200); do
		d=$(domids | grep -vxF -f <(echo "$1" | tr ' ' '\n' | grep .) | head -1)
		[ -n "$d" ] && { echo "$d"; return 0; }
		sleep 0.02
	done
	return 1
}

# start PROG SVC ARGS...: a server and a client in the background; DOM =
# the client's domid (the guest that sends).  Not in $(): PIDS must stick.
start() {
	prog=$1 svc=$2; shift 2
	"$b/bin/$prog" -p "$svc" --timeout 60 "$@" >"$VR_RUN/$svc.srv" 2>&1 &
	PIDS="$PIDS $!"
	SRV=$!
	for _ in $(seq 100); do grep -qs "listening on service" "$VR_RUN/$svc.srv" && break; sleep 0.05; done
	before=$(domids | tr '\n' ' ')
	"$b/bin/$prog" -p "$svc" --timeout 60 "$@" local >"$VR_RUN/$svc.cli" 2>&1 &
	PIDS="$PIDS $!"
	LAST=$!
	DOM=$(new_domid "$before")
}

stop_all() {
	kill $PIDS 2>/dev/null
	wait $PIDS 2>/dev/null
	PIDS=
	for _ in $(seq 50); do [ -z "$(domids)" ] && break; sleep 0.1; done
}

# ---- 1. shares ----
FLOOD="-s 1M -n 100000000"
for i in 1 2 3 4; do
	start vrdma-bw fl$i $FLOOD || vr_die "flooder $i did not connect"
	G[$i]=$DOM
done
dat="$out/bench-prio-shares.dat"
{
	echo "# t_s share1 share2 share3 share4 (weights equal until t=${WIN}, then 1:2:3:4)"
	echo "# change_at ${WIN}.25"
} >"$dat"
declare -A last
snap() { local d v; while read -r d v; do last[$d]=$v; done < <(tx_all); }
sample() {	# appends one line: shares over the last interval; sets SUM
	local -A prev; local d i tot=0 line
	for d in "${!last[@]}"; do prev[$d]=${last[$d]}; done
	snap
	for i in 1 2 3 4; do D[$i]=$(( ${last[${G[$i]}]:-0} - ${prev[${G[$i]}]:-0} )); tot=$((tot + D[$i])); done
	line=$1
	for i in 1 2 3 4; do line="$line $(awk -v a="${D[$i]}" -v t=$tot 'BEGIN { printf "%.4f", t ? a / t : 0 }')"; done
	echo "$line" >>"$dat"
}
sleep 1
snap
t=0
for _ in $(seq $((WIN * 2))); do sleep 0.5; t=$((t + 5)); sample "$(awk -v t=$t 'BEGIN{print t/10}')"; done
for i in 1 2 3 4; do ctl set "${G[$i]}" weight=$i >/dev/null || vr_die "set failed"; done
sleep 0.5
t=$((t + 5)); sample "$(awk -v t=$t 'BEGIN{print t/10}')"
declare -A w0
for d in "${!last[@]}"; do w0[$d]=${last[$d]}; done
t_start=$(date +%s.%N)
for _ in $(seq $((WIN * 2))); do sleep 0.5; t=$((t + 5)); sample "$(awk -v t=$t 'BEGIN{print t/10}')"; done
t_end=$(date +%s.%N)
tot=0
for i in 1 2 3 4; do W[$i]=$(( ${last[${G[$i]}]} - ${w0[${G[$i]}]} )); tot=$((tot + W[$i])); done
echo
echo "== 1. four flooders (vrdma-bw WRITE 1 MiB), weights 1:2:3:4, ${WIN} s window"
printf "%-8s %6s %10s %8s %8s\n" guest weight MiB/s share target
for i in 1 2 3 4; do
	awk -v g="dom${G[$i]}" -v w=$i -v b="${W[$i]}" -v t=$tot -v s="$t_start" -v e="$t_end" 'BEGIN {
		printf "%-8s %6d %10.0f %7.1f%% %7.1f%%\n", g, w, b / (e - s) / 1048576,
			t ? 100 * b / t : 0, 100 * w / 10 }'
done
awk -v t=$tot -v s="$t_start" -v e="$t_end" 'BEGIN { printf "total    %6s %10.0f\n", "", t / (e - s) / 1048576 }'
stop_all

"$(dirname "$0")/prio-plot.sh" "$dat" "$out/bench-prio-shares.png" "plain host"

# ---- 2. a high-class guest against three low-class flooders ----
# field NAME of the CSV row of FILE
csv() { awk -F, -v f="$2" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { print $c[f] }' "$1"; }

# ticks PID...: their CPU time so far (utime + stime, clock ticks)
ticks() {
	local p t=0 f
	for p in "$@"; do
		f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		f=${f##*) }
		set -- $f
		t=$((t + ${12} + ${13}))
	done
	echo $t
}
# busy ticks of the machine (all CPUs) and its total
machine() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat; }

# qd_tx DOM: "qdelay_n qdelay_sum_us" of DOM and the tx_bytes of LOWDOMS
qd_tx() {
	ctl stats -j | awk -v d="$1" -v low=" $LOWDOMS " '{
		n = split($0, p, "\"domid\":")
		for (i = 2; i <= n; i++) {
			id = p[i]; sub(/[^0-9].*/, "", id)
			split("qdelay_n qdelay_sum_us tx_bytes", f, " ")
			for (j = 1; j <= 3; j++) { v[j] = p[i]; sub(".*\"" f[j] "\":", "", v[j]); sub(/[^0-9].*/, "", v[j]) }
			if (id == d) { qn = v[1]; qs = v[2] }
			if (index(low, " " id " ")) lt += v[3]
		}
		print qn + 0, qs + 0, lt + 0 }'
}

# watch_run TAG: until the client $LAST ends, sample every 0.2 s what
# happens meanwhile; writes "$out/run-TAG.txt": seconds, vrdmad / high
# pair / flooders' CPU (ticks), machine busy / total ticks, the high
# guest's queue-delay counts and the low guests' bytes over the interval
watch_run() {
	local t0 t1 a0 a1 m0 m1 q0 q1 v
	t0=$(date +%s.%N)
	a0="$(ticks $VR_DPID) $(ticks $SRV $LAST) $(ticks $FLPIDS)"
	m0=$(machine)
	q0=$(qd_tx "$DOM")
	a1=$a0 m1=$m0 q1=$q0 t1=$t0
	while kill -0 "$LAST" 2>/dev/null; do
		sleep 0.2
		v=$(qd_tx "$DOM")
		kill -0 "$LAST" 2>/dev/null || break
		q1=$v
		a1="$(ticks $VR_DPID) $(ticks $SRV $LAST) $(ticks $FLPIDS)"
		m1=$(machine)
		t1=$(date +%s.%N)
	done
	echo "$t0 $t1 $a0 $a1 $m0 $m1 $q0 $q1" | awk '{
		dt = $2 - $1
		printf "%.3f %d %d %d %d %d %d %d %d\n", dt, $6 - $3, $7 - $4, $8 - $5,
			$11 - $9, $12 - $10, $16 - $13, $17 - $14, $18 - $15 }' >"$out/run-$1.txt"
}

# measure TAG: vrdma-lat p99 and vrdma-bw average, class high set as soon
# as each guest appears (guests start in class normal, already above low)
measure() {
	start vrdma-lat lat$1 -s 8 -n "$LAT_ITERS" --csv && ctl set "$DOM" class=high >/dev/null 2>&1
	wait $LAST
	cp "$VR_RUN/lat$1.cli" "$out/lat-$1.csv"
	start vrdma-bw bw$1 -s 64K -n "$BW_ITERS" --csv && ctl set "$DOM" class=high >/dev/null 2>&1
	watch_run bw$1
	wait $LAST
	cp "$VR_RUN/bw$1.cli" "$out/bw-$1.csv"
}
FLPIDS= LOWDOMS=
measure solo
stop_all
for i in 1 2 3; do
	start vrdma-bw low$i $FLOOD || vr_die "flooder $i did not connect"
	ctl set "$DOM" class=low >/dev/null
	FLPIDS="$FLPIDS $SRV $LAST" LOWDOMS="$LOWDOMS $DOM"
done
sleep 1
measure loaded
stop_all
p99s=$(csv "$out/lat-solo.csv" p99_us); p99l=$(csv "$out/lat-loaded.csv" p99_us)
bws=$(csv "$out/bw-solo.csv" bw_avg_mib); bwl=$(csv "$out/bw-loaded.csv" bw_avg_mib)
echo
echo "== 2. high-class guest vs 3 low-class flooders (vrdma-bw WRITE 1 MiB)"
printf "%-28s %10s %14s %8s\n" metric solo "vs flooders" ratio
awk -v s="$p99s" -v l="$p99l" 'BEGIN { printf "%-28s %10.1f %14.1f %7.2fx\n", "vrdma-lat 8 B p99 (us)", s, l, s ? l / s : 0 }'
awk -v s="$bws" -v l="$bwl" 'BEGIN { printf "%-28s %10.0f %14.0f %7.1f%%\n", "vrdma-bw 64 KiB (MiB/s)", s, l, s ? 100 * l / s : 0 }'
# what happened during the two 64 KiB runs (watch_run)
awk -v hz="$(getconf CLK_TCK)" -v ncpu="$(nproc)" '
	FNR == 1 { k++; dt[k] = $1; d[k] = $2; h[k] = $3; f[k] = $4; mb[k] = $5; mt[k] = $6
		   qd[k] = $7 ? $8 / $7 : 0; lb[k] = $9 }
	END {
		r("  its queue delay avg (us)", qd[1], qd[2], "%10.1f %14.1f\n")
		r("  low class moved (MiB/s)", 0, lb[2] / dt[2] / 1048576, "%10s %14.0f\n")
		r("  CPU: vrdmad (% of a CPU)", 100 * d[1] / hz / dt[1], 100 * d[2] / hz / dt[2], "%10.0f %14.0f\n")
		r("  CPU: high pair (%)", 100 * h[1] / hz / dt[1], 100 * h[2] / hz / dt[2], "%10.0f %14.0f\n")
		r("  CPU: flooders (%)", 0, 100 * f[2] / hz / dt[2], "%10s %14.0f\n")
		r("  CPU: whole machine (%)", ncpu * 100 * mb[1] / mt[1], ncpu * 100 * mb[2] / mt[2], "%10.0f %14.0f\n")
	}
	function r(name, a, b, fmt) { printf "%-28s " fmt, name, (a == 0 && fmt ~ /%10s/) ? "-" : a, b }
' "$out/run-bwsolo.txt" "$out/run-bwloaded.txt"
echo "(plain host, $(nproc) CPUs: guests, flooders and vrdmad share them; CPU figures"
echo " are of one CPU, the machine's out of $(nproc)00 %, including anything else running)"
