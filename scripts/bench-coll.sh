#!/bin/bash
# SPDX-License-Identifier: MIT
# make bench-coll: MPI's collectives three ways on this host, side by side.
# bench/coll_mpi_bench.c (plain MPI: MPI_Allreduce of doubles, sum, and
# MPI_Bcast, 8 B, 1 MiB, 16 MiB, in osu_allreduce's and osu_bcast's
# columns) run by Open MPI with N ranks, each rank a vrdma guest through
# `vrdma-run --coll` against one vrdmad, with
#   VRDMA_COLL=on     dom0 runs the team (offload: backend/coll/),
#   VRDMA_COLL=guest  the ranks run it over vrdma QPs (fallback:
#                     libvrdma/coll/),
#   VRDMA_COLL=off    Open MPI's own collectives;
# MPI's own point-to-point stays off vrdma in all three (pml ob1, btl
# self,vader, as tests/middleware.sh ompi_coll_4), so what vrdmad counts is
# the teams'.  For each repetition and N the three modes run back to back,
# so a change of load touches all three alike.  One table: the mean of
# the repetitions and their spread ((max - min) / mean), the ratios of
# offload to the other two; then what vrdmad moved in each run.  Not a
# test: nothing is asserted about speed, but a wrong result (the program
# checks one call of each size), a mode that did not run as asked, or a
# failed run is reported and makes the exit status 1.
# Usage: bench-coll.sh BUILD_DIR [--csv]
#   env COLL_NP ("2 4 8"), COLL_REPS (3), COLL_ITERS (1000: iterations at
#   8 B; 1 MiB a tenth, 16 MiB a fortieth; about 90 s in all on 2 CPUs),
#   VRDMAD_ARGS (e.g. --spin-us 0), BENCH_TIMEOUT (seconds per run, 300).
set -u
b=${1:?usage: bench-coll.sh BUILD_DIR [--csv]}
fmt=${2:-text}
NPS=${COLL_NP:-2 4 8}
REPS=${COLL_REPS:-3}
ITERS=${COLL_ITERS:-1000}
T=${BENCH_TIMEOUT:-300}
MODES="on guest off"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../bench/bench-lib.sh"

case $fmt in text|--csv) ;; *) vr_die "unknown format $fmt (--csv)" ;; esac
for f in sbin/vrdmad sbin/vrdmactl bin/vrdma-run lib/vrdma/libvrdma-mpi.so; do
	[ -x "$b/$f" ] || [ -e "$b/$f" ] || vr_die "$b/$f missing (make first; libvrdma-mpi.so needs libopenmpi-dev)"
done
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
	vr_die "mpicc or mpirun missing (apt-get install libopenmpi-dev openmpi-bin)"
mpirun --version 2>/dev/null | grep -q 'Open MPI' || vr_die "mpirun is not Open MPI's"
[ "$REPS" -ge 1 ] 2>/dev/null && [ "$ITERS" -ge 1 ] 2>/dev/null || vr_die "bad COLL_REPS or COLL_ITERS"
for n in $NPS; do [ "$n" -ge 2 ] 2>/dev/null || vr_die "bad COLL_NP '$NPS' (ranks, 2 or more)"; done

# The conditions, before anything of ours runs.
load0=$(cut -d' ' -f1-3 /proc/loadavg)
ncpu=$(grep -c '^processor' /proc/cpuinfo)
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
commit=$(git -C "$here/.." describe --always --dirty 2>/dev/null || echo unknown)
# What else holds a CPU: top's second sample (one second), 5 % or more
# (the processes top sees; the load average is the whole machine's).
busy=$(top -b -n 2 -d 1 -w 200 2>/dev/null | awk '/^top -/ { n++ }
	n == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 >= 5 { l = l (l == "" ? "" : ", ") $12 " " $9 "%" }
	END { print l == "" ? "none" : l }')

vr_start_daemon "$b"
if [ -n "${VRDMAD_ARGS:-}" ]; then
	# shellcheck disable=SC2086  # VRDMAD_ARGS: extra vrdmad options, split
	vr_restart_daemon "$b" $VRDMAD_ARGS || vr_die "vrdmad $VRDMAD_ARGS did not start"
fi
ctl() { timeout 10 "$b/sbin/vrdmactl" -S "$VR_RUN" "$@"; }
spin=$(sed -n 's/.* started .*spin_us=\([0-9]*\).*/\1/p' "$VR_RUN/vrdmad.log" | tail -n 1)
node=$(sed -n 's/.* started node=\([^ ]*\).*/\1/p' "$VR_RUN/vrdmad.log" | tail -n 1)
rt=$(sed -n 's/.* started .*\(rt_prio=[0-9]*\).*/\1/p' "$VR_RUN/vrdmad.log" | tail -n 1)
if grep -q 'no device for remote nodes' "$VR_RUN/vrdmad.log"; then
	rdma="no RDMA device (vrdmad: \"no device for remote nodes\")"
else
	rdma="an RDMA device for other nodes, unused here: every team is on this node"
fi
wait_pol=${VRDMA_WAIT:-auto}
[ "$wait_pol" = auto ] && { [ "$ncpu" -ge 4 ] && wait_pol="auto (latency: 4 CPUs or more)" ||
	wait_pol="auto (throughput on $ncpu CPUs: a waiting rank sleeps)"; }

mpi_root=()
[ "$(id -u)" -eq 0 ] && mpi_root=(--allow-run-as-root)
# shellcheck disable=SC2054  # self,vader is one argument
MPIRUN=(mpirun "${mpi_root[@]}" --oversubscribe --bind-to none --mca orte_base_help_aggregate 0
	--mca pml ob1 --mca btl self,vader -x VRDMA_RUN_DIR -x VRDMA_COLL -x VRDMA_COLL_VERBOSE)
prog=$VR_RUN/coll_mpi_bench
mpicc -O2 -Wall -o "$prog" "$here/../bench/coll_mpi_bench.c" 2>"$VR_RUN/mpicc.err" ||
	vr_die "mpicc failed: $(head -n 5 "$VR_RUN/mpicc.err")"

# What Open MPI picks in the off runs, from its own selection logs: one
# short run of 2 ranks, VRDMA_COLL=off, the same command line.
VRDMA_COLL=off VRDMA_COLL_VERBOSE='' timeout "$T" "${MPIRUN[@]}" -np 2 --mca pml_base_verbose 10 \
	--mca btl_base_verbose 10 --mca coll_base_verbose 10 "$b/bin/vrdma-run" --coll "$prog" \
	-s 8 -i 2 >"$VR_RUN/probe" 2>&1 || vr_die "Open MPI probe failed: $(tail -n 5 "$VR_RUN/probe")"
pml=$(sed -n 's/.*select: component \([a-z0-9]*\) selected.*/\1/p' "$VR_RUN/probe" | sort -u | paste -sd /)
btl=$(sed -n 's/.*bml: Using \([a-z0-9]*\) btl for send.*/\1/p' "$VR_RUN/probe" | sort -u | paste -sd /)
# coll: the enabled module of highest priority on MPI_COMM_WORLD
coll=$(awk '/comm_select: new communicator/ { w[$1] = /MPI_COMM_WORLD/ }
	w[$1] && /comm_select: selecting .*Enabled/ { gsub(/,/, ""); print $6, $4 }' "$VR_RUN/probe" |
	sort -u | sort -rn | awk '{ l = l (NR > 1 ? ", " : "") $2 " " $1 }
	END { if (l != "") printf "by priority: %s", l }')
cma=$(ompi_info --param btl vader --level 9 2>/dev/null |
	sed -n 's/.*"btl_vader_single_copy_mechanism" (current value: "\([^"]*\)".*/\1/p')
mpi_ver=$(sed -n 's/^# coll_mpi_bench: \(.*\); [0-9]* ranks$/\1/p' "$VR_RUN/probe" | head -n 1)

# Counters: stats' totals KEY; the teams' node totals "ops bytes".
total() {
	local v
	v=$(ctl -j stats | sed -n "s/.*\"totals\":{[^}]*\"$1\": *\([0-9]*\).*/\1/p")
	echo "${v:-0}"
}
teams() {
	local v
	v=$(ctl -j teams | sed -n 's/^{[^[]*"ops":\([0-9]*\),"bytes":\([0-9]*\).*/\1 \2/p')
	echo "${v:-0 0}"
}
ticks() { awk '{ print $14 + $15 }' "/proc/$VR_DPID/stat"; }
hz=$(getconf CLK_TCK)

# run_one REP N MODE: one job; its table rows to $VR_RUN/rows, its
# counters to $VR_RUN/runs.
rc=0
: >"$VR_RUN/rows"
: >"$VR_RUN/runs"
run_one() {
	local rep=$1 n=$2 mode=$3 o=$VR_RUN/out.$1.$2.$3 q0 q1 t0 t1 k0 k1 w0 w1 r team ok=1
	local o0 o1 b0 b1
	q0=$(total tx_bytes) t0=$(teams) k0=$(ticks) w0=$(date +%s%N)
	VRDMA_COLL=$mode VRDMA_COLL_VERBOSE=1 timeout "$T" "${MPIRUN[@]}" -np "$n" \
		"$b/bin/vrdma-run" --coll "$prog" -i "$ITERS" >"$o" 2>"$o.err"
	r=$?
	w1=$(date +%s%N) q1=$(total tx_bytes) t1=$(teams) k1=$(ticks)
	team=$(sed -n 's/^vrdma-mpi: MPI_COMM_WORLD: team of [0-9]* ranks on [0-9]* nodes*, \([a-z ]*\).*/\1/p' \
		"$o.err" | head -n 1)
	# how the team ran, one word: offload, guests, or MPI (no team)
	case $team in offload) ;; "in the guests") team=guests ;; "") team=MPI ;; *) team=other ;; esac
	case $mode:$team in
	on:offload|guest:guests|off:MPI) ;;
	*)	echo "bench-coll: N=$n VRDMA_COLL=$mode ran as $team:" \
			"$(grep -m 1 '^vrdma-mpi' "$o.err")" >&2
		ok=0 ;;
	esac
	if [ $r -ne 0 ]; then
		echo "bench-coll: N=$n VRDMA_COLL=$mode: exit $r:" >&2
		tail -n 5 "$o.err" >&2
		ok=0
	fi
	[ $ok = 1 ] || rc=1
	# "-" for a run that failed or ran another way: no figure
	[ $ok = 1 ] && awk -v rep="$rep" -v n="$n" -v m="$mode" '
		/^# coll_mpi_bench: MPI_Allreduce/ { op = "allreduce"; next }
		/^# coll_mpi_bench: MPI_Bcast/ { op = "bcast"; next }
		/Bandwidth/ { op = "" }
		/^#/ || op == "" || NF != 5 { next }
		{ print rep, n, m, op, $1, $2, $3, $4, $5 }' "$o" >>"$VR_RUN/rows"
	read -r o0 b0 <<<"$t0"
	read -r o1 b1 <<<"$t1"
	echo "$rep $n $mode $team $r $((q1 - q0)) $((o1 - o0)) $((b1 - b0))" \
		"$(awk -v d=$((k1 - k0)) -v hz="$hz" 'BEGIN { printf "%.2f", d / hz }')" \
		"$(awk -v a="$w0" -v z="$w1" 'BEGIN { printf "%.2f", (z - a) / 1e9 }')" >>"$VR_RUN/runs"
	echo "== rep $rep, N=$n, VRDMA_COLL=$mode: exit $r, team: $team," \
		"$(tail -n 1 "$VR_RUN/runs" | awk '{ printf "%s QP bytes, %s dom0 ops, %s s", $6, $7, $10 }')" >&2
}
for rep in $(seq "$REPS"); do
	for n in $NPS; do
		for mode in $MODES; do
			run_one "$rep" "$n" "$mode"
		done
	done
done

cond() { printf '%s\t%s\n' "$1" "$2"; }
{
	cond date "$start, commit $commit"
	cond host "$ncpu CPUs ($cpu_model), nproc $(nproc), kernel $(uname -r)"
	cond load "load average at start $load0, at end $(cut -d' ' -f1-3 /proc/loadavg); this container's processes over 5 % of a CPU at start (top, 1 s): ${busy:-?}"
	cond vrdmad "one vrdmad, node $node, spin_us=${spin:-?}${rt:+, $rt}${VRDMAD_ARGS:+ ($VRDMAD_ARGS)}; $rdma"
	cond guests "each rank a vrdma guest through vrdma-run --coll; VRDMA_WAIT=$wait_pol"
	cond mpi "${mpi_ver:-Open MPI}: mpirun --oversubscribe --bind-to none -np N --mca pml ob1 --mca btl self,vader"
	cond mpi_picks "pml ${pml:-?}, btl ${btl:-?} (self to itself; vader single copy: ${cma:-?}), coll ${coll:-?} for MPI's own"
	cond program "bench/coll_mpi_bench -i $ITERS: $ITERS iterations at 8 B, $((ITERS / 10 < 2 ? 2 : ITERS / 10)) at 1 MiB, $((ITERS / 40 < 2 ? 2 : ITERS / 40)) at 16 MiB, a tenth more before as warm-up"
	cond runs "N in $NPS; $REPS repetition(s); in each the three modes back to back"
} >"$VR_RUN/cond"

# The summary: per N, op, size and mode the repetitions' mean, min, max.
# 8 B: Avg Latency (us); 1 MiB and up: bytes / Avg Latency (MB/s).
awk -v fmt="$fmt" -v reps="$REPS" '
FILENAME ~ /cond$/ { split($0, kv, "\t"); ck[++nc] = kv[1]; cv[nc] = kv[2]; next }
FILENAME ~ /runs$/ { run[++nr] = $0; next }
{
	k = $2 SUBSEP $4 SUBSEP $5
	if (!(k in seen)) { seen[k] = 1; key[++nk] = k }
	v = $5 >= 1048576 ? $5 / $6 : $6
	i = k SUBSEP $3
	cnt[i]++; sum[i] += v
	if (!(i in lo) || v < lo[i]) lo[i] = v
	if (!(i in hi) || v > hi[i]) hi[i] = v
	raw[++nraw] = $0
}
function mean(i) { return (i in cnt) ? sum[i] / cnt[i] : "" }
function spread(i) { return (i in cnt) && sum[i] > 0 ? 100 * (hi[i] - lo[i]) / (sum[i] / cnt[i]) : "" }
function f(x, d) { return x == "" ? "-" : sprintf("%." d "f", x) }
# the other mode'"'"'s time over offload'"'"'s: above 1, offload is faster
function ratio(k, m, bw) {
	a = mean(k SUBSEP "on"); o = mean(k SUBSEP m)
	if (a == "" || o == "" || a == 0 || o == 0) return ""
	return bw ? a / o : o / a
}
END {
	if (fmt == "--csv") {
		print "condition,value"
		for (i = 1; i <= nc; i++) { gsub(/"/, "\"\"", cv[i]); print ck[i] ",\"" cv[i] "\"" }
		print "n,op,size,metric,offload,offload_spread_pct,fallback,fallback_spread_pct,mpi,mpi_spread_pct,offload_over_mpi,offload_over_fallback"
		for (j = 1; j <= nk; j++) {
			split(key[j], p, SUBSEP); bw = p[3] >= 1048576
			printf "%s,%s,%s,%s", p[1], p[2], p[3], bw ? "bw_mb_s" : "avg_latency_us"
			split("on guest off", ms, " ")
			for (q = 1; q <= 3; q++)
				printf ",%s,%s", f(mean(key[j] SUBSEP ms[q]), 2), f(spread(key[j] SUBSEP ms[q]), 1)
			printf ",%s,%s\n", f(ratio(key[j], "off", bw), 3), f(ratio(key[j], "guest", bw), 3)
		}
		print "rep,n,mode,op,size,avg_latency_us,min_latency_us,max_latency_us,iterations"
		for (i = 1; i <= nraw; i++) { gsub(/ /, ",", raw[i]); print raw[i] }
		print "rep,n,mode,team,exit,qp_tx_bytes,dom0_ops,dom0_bytes_reduced,vrdmad_cpu_s,wall_s"
		for (i = 1; i <= nr; i++) { gsub(/ /, ",", run[i]); print run[i] }
		exit
	}
	print "make bench-coll: MPI_Allreduce (double sum) and MPI_Bcast (root 0), each rank a vrdma guest"
	print "on this host; offload = VRDMA_COLL=on (dom0 runs the team), fallback = VRDMA_COLL=guest"
	print "(the ranks over vrdma QPs), MPI = VRDMA_COLL=off (Open MPI'"'"'s own collectives)."
	print "Conditions:"
	for (i = 1; i <= nc; i++) printf " %-10s %s\n", ck[i] ":", cv[i]
	print ""
	printf "8 B: Avg Latency (us, OSU: the mean over the ranks); 1 MiB, 16 MiB: bytes / Avg Latency\n"
	printf "(MB/s = 10^6 B/s).  Each: the mean of %d runs, spread = (max - min) / mean.\n", reps
	printf "off:MPI, off:fb = the other'"'"'s time / offload'"'"'s time: above 1, offload is faster.\n"
	printf "%3s %-9s %8s %-4s | %9s %6s | %9s %6s | %9s %6s | %7s %7s\n", "N", "op", "size", "unit",
		"offload", "spread", "fallback", "spread", "MPI", "spread", "off:MPI", "off:fb"
	split("on guest off", ms, " ")
	for (j = 1; j <= nk; j++) {
		split(key[j], p, SUBSEP); bw = p[3] >= 1048576
		printf "%3s %-9s %8s %-4s", p[1], p[2], p[3], bw ? "MB/s" : "us"
		for (q = 1; q <= 3; q++) {
			i = key[j] SUBSEP ms[q]
			printf " | %9s %5s%%", f(mean(i), bw ? 0 : 1), f(spread(i), 0)
		}
		printf " | %7s %7s\n", f(ratio(key[j], "off", bw), 2), f(ratio(key[j], "guest", bw), 2)
	}
	print ""
	print "What vrdmad moved, per run.  QP bytes: vrdmactl stats, totals tx_bytes (bytes through vrdma"
	print "QPs: each a memcpy inside vrdmad between two guests'"'"' buffers; on one host none crosses an"
	print "RDMA device).  dom0 ops, dom0 bytes: vrdmactl teams, the node'"'"'s ops and bytes reduced (the"
	print "OP_COLL pieces dom0 ran, at most 256 KiB each, and their vector bytes; dom0 reads every"
	print "member'"'"'s and writes every member'"'"'s receive range for each).  vrdmad CPU: its user + system"
	print "seconds over the run (mpirun start-up and the program'"'"'s checks included, as in wall)."
	printf "%3s %3s %-6s %-8s %4s %14s %9s %14s %8s %7s\n", "rep", "N", "mode", "team", "exit",
		"QP bytes", "dom0 ops", "dom0 bytes", "CPU s", "wall s"
	for (i = 1; i <= nr; i++) {
		split(run[i], r, " ")
		printf "%3s %3s %-6s %-8s %4s %14s %9s %14s %8s %7s\n", r[1], r[2], r[3], r[4],
			r[5], r[6], r[7], r[8], r[9], r[10]
	}
}' "$VR_RUN/cond" "$VR_RUN/runs" "$VR_RUN/rows"
[ $rc -eq 0 ] || echo "bench-coll: some runs failed or ran another way (see above)" >&2
exit $rc
