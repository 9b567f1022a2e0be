# SPDX-License-Identifier: MIT
# Suite "prio" (make bench-prio-cluster): issue 5's benchmark
# (docs/prio.md, scripts/bench-prio.sh) across the two nodes of the host
# variant.  Node a runs the senders (guest processes named with VRDMA_VM,
# so vrdmactl finds them by name), node b the servers; node a's vrdmad
# decides what goes onto its rxe0 (scheduler, device credits), so the
# settings are made there and its tx_bytes counted.
#   1. four vrdma-bw WRITE 1 MiB flooders fl1..fl4, weights 1:2:3:4: each
#      one's share of the bytes over a window beside its target; then the
#      same with credits=1:2:3:4 added (a guest's WRs on the device).
#   2. a high-class guest "hi" (vrdma-lat 8 B p99, vrdma-bw 64 KiB) solo
#      and against three class-low flooders low1..low3.
# A benchmark: nothing passes or fails on a figure; the VRDMA-TEST lines
# say whether each program ran.  Flooders run until killed (by pid) at
# the end of their phase; every wait has a limit.
# Kernel command line (NODE_EXTRA): prio.win=S (window, default 10),
# prio.lat=N (latency iterations, default 300), prio.bw=N (64 KiB
# writes, default 1000).

kopt() { v=$(sed -n "s/.*prio\.$1=\([0-9]*\).*/\1/p" /proc/cmdline); echo "${v:-$2}"; }
WIN=$(kopt win 10)
LAT_ITERS=$(kopt lat 300)
BW_ITERS=$(kopt bw 1000)
FL_T=600	# flooders' --timeout: the server's last wait is one wait of --timeout
tnow() { cut -d' ' -f1 /proc/uptime; }

# "domid tx_bytes" per guest (node a's vrdmad)
tx_all() {
	ctl stats -j | awk '{
		n = split($0, p, "\"domid\":")
		for (i = 2; i <= n; i++) {
			d = p[i]; sub(/[^0-9].*/, "", d)
			printf "%s", d
			v = p[i]; sub(/.*"tx_bytes":/, "", v); sub(/[^0-9].*/, "", v)
			printf " %s\n", v
		} }'
}
# tx_of DOMID FILE: its tx_bytes in FILE (a saved tx_all)
# (as text: awk would print a big number as 4.2e+11)
tx_of() { awk -v d=$1 '$1 == d && $2 != "" { print $2; f = 1 } END { if (!f) print 0 }' $2; }
# dom_of VM: the domid of the live guest named VM ("" if none)
dom_of() { ctl get "$1" 2>/dev/null | sed -n '1s,^\([0-9]*\)/.*,\1,p'; }
setq() { ctl set "$@" >/dev/null; }

# ---- node b: servers ----
# serve NAME...: a vrdma-bw server per service NAME (pids in SPIDS)
serve() {
	SPIDS=
	for s in "$@"; do
		bg "timeout $((FL_T + 60)) vrdma-bw -p $s --timeout $FL_T" $T/srv.$s
		SPIDS="$SPIDS $BG_PID"
		wait_text $T/srv.$s "listening on service" $BG_PID 60 ||
			vt_fail prio-server-$s "did not listen"
	done
}
# unserve: kill them, bounded wait
unserve() {
	for p in $SPIDS; do kill $p 2>/dev/null; done
	for p in $SPIDS; do wait_exit $p 30; done
	SPIDS=
}

# ---- node a: flooders ----
# flood NAME...: a vrdma-bw WRITE 1 MiB client per NAME (VM NAME, service
# NAME), running until killed; their pids in FPIDS, domids in DOM_NAME
flood() {
	FPIDS=
	for s in "$@"; do
		bg "env VRDMA_VM=$s timeout $((FL_T + 60)) vrdma-bw -p $s -s 1M -n 1000000 --timeout $FL_T $VRNODE" $T/fl.$s
		FPIDS="$FPIDS $BG_PID"
		eval FPID_$s=$BG_PID
	done
	# bounded: every one appears and moves bytes
	for _ in $(seq 120); do
		ok=1
		tx_all >$T/prio.now
		for s in "$@"; do
			eval "d=\${DOM_$s:-}"
			[ -n "$d" ] || { d=$(dom_of $s); eval DOM_$s=$d; }
			[ -n "$d" ] && [ "$(tx_of $d $T/prio.now)" -gt 0 ] || ok=0
		done
		[ $ok = 1 ] && return 0
		sleep 0.5
	done
	return 1
}
# unflood NAME...: each flooder must still run (else FAIL: its figures
# are worthless), then kill them, bounded wait
unflood() {
	for s in "$@"; do
		eval p=\$FPID_$s
		if kill -0 $p 2>/dev/null; then
			vt_pass prio-flooder-$s-ran
		else
			vt_fail prio-flooder-$s-ran "ended before the end of its phase"
			tail -n 5 $T/fl.$s
		fi
	done
	for p in $FPIDS; do kill $p 2>/dev/null; done
	for p in $FPIDS; do wait_exit $p 30; done
	FPIDS=
}

# window TAG: tx_bytes of fl1..fl4 over WIN seconds into $T/prio-TAG.res
# ("name weight bytes seconds" lines)
window() {
	tx_all >$T/prio.w0
	t0=$(tnow)
	sleep $WIN
	tx_all >$T/prio.w1
	t1=$(tnow)
	: >$T/prio-$1.res
	for i in 1 2 3 4; do
		eval d=\$DOM_fl$i
		echo "fl$i/dom$d $i $(($(tx_of $d $T/prio.w1) - $(tx_of $d $T/prio.w0))) $t0 $t1" >>$T/prio-$1.res
	done
}
# table TAG: shares beside targets
table() {
	printf "%-10s %6s %10s %8s %8s\n" guest weight MiB/s share target
	awk '{ n[NR] = $1; w[NR] = $2; b[NR] = $3; t += $3; dt = $5 - $4 }
		END {
			for (i = 1; i <= NR; i++)
				printf "%-10s %6d %10.2f %7.1f%% %7.1f%%\n", n[i], w[i],
					b[i] / dt / 1048576, t ? 100 * b[i] / t : 0, 100 * w[i] / 10
			printf "%-10s %6s %10.2f\n", "total", "", t / dt / 1048576
		}' $T/prio-$1.res
}

# ---- 1. shares ----
if [ "$NODE" = b ]; then
	serve fl1 fl2 fl3 fl4
	cl_tell prio-fl-listening 60
	cl_await prio-fl-done $((WIN * 4 + 300))
	unserve
elif need_remote prio-remote-path-a; then
	cl_await prio-fl-listening 120
	if flood fl1 fl2 fl3 fl4; then
		vt_pass prio-flooders-flowing
		for i in 1 2 3 4; do
			vt_check prio-set-weight-$i setq fl$i weight=$i
		done
		sleep 2
		window weights
		for i in 1 2 3 4; do
			vt_check prio-set-credits-$i setq fl$i credits=$i
		done
		sleep 2
		window credits
	else
		vt_fail prio-flooders-flowing "$(tr '\n' ' ' <$T/prio.now)"
	fi
	unflood fl1 fl2 fl3 fl4
	cl_tell prio-fl-done 60
fi

# ---- 2. a high-class guest against three low-class flooders ----
# The VM "hi" gets class high before its programs start: a guest of that
# name lives for a moment (a server never connected to), the setting is
# made, and the VM's next guests come back with it.
if [ "$NODE" = a ]; then
	bg "env VRDMA_VM=hi vrdma-bw -p hi-init --timeout 30" $T/hi-init
	if wait_text $T/hi-init "listening on service" $BG_PID 30 &&
	   setq hi class=high; then
		vt_pass prio-hi-class-set
	else
		vt_fail prio-hi-class-set
	fi
	kill $BG_PID 2>/dev/null
	wait_exit $BG_PID 30
fi
# pair TAG PROG ARGS: vr_pair with the client as VM "hi"; its CSV row in
# $T/prio-TAG.csv, the low class's bytes meanwhile in $T/prio-TAG.low
# ("bytes t0 t1", uptime seconds)
pair() {
	_tag=$1 _prog=$2
	shift 2
	[ "$NODE" = a ] && export VRDMA_VM=hi
	[ "$NODE" = a ] && tx_all >$T/prio.p0
	t0=$(tnow)
	if vr_pair $_prog $_tag --timeout 120 --csv "$@"; then
		vt_pass prio-$_tag-$NODE
	else
		vt_fail prio-$_tag-$NODE
	fi
	unset VRDMA_VM
	[ "$NODE" = a ] || return 0
	t1=$(tnow)
	tx_all >$T/prio.p1
	echo "$VR_OUT" | grep -E '^(lat|bw),' | tail -n 1 >$T/prio-$_tag.csv
	lb=0
	for s in low1 low2 low3; do
		eval "d=\${DOM_$s:-}"
		[ -n "$d" ] && lb=$((lb + $(tx_of $d $T/prio.p1) - $(tx_of $d $T/prio.p0)))
	done
	echo "$lb $t0 $t1" >$T/prio-$_tag.low
}
measure() {
	pair lat$1 vrdma-lat -s 8 -n $LAT_ITERS
	pair bw$1 vrdma-bw -s 64K -n $BW_ITERS
}
measure solo
if [ "$NODE" = b ]; then
	serve low1 low2 low3
	cl_tell prio-low-listening 60
	cl_await prio-low-ready 120
	measure loaded
	cl_await prio-low-done 300
	unserve
else
	cl_await prio-low-listening 120
	if flood low1 low2 low3; then
		vt_pass prio-low-flowing
	else
		vt_fail prio-low-flowing "$(tr '\n' ' ' <$T/prio.now)"
	fi
	for s in low1 low2 low3; do vt_check prio-set-low-$s setq $s class=low; done
	sleep 1
	cl_tell prio-low-ready 60
	measure loaded
	unflood low1 low2 low3
	cl_tell prio-low-done 60
fi

# ---- results (node a) ----
if [ "$NODE" = a ]; then
	fld() { cut -d, -f$2 $T/prio-$1.csv 2>/dev/null; }
	echo "VRDMA-SHOW-BEGIN"
	echo "== node a -> node b over Soft-RoCE (rxe0), QEMU TCG, one vCPU per node; node a's vrdmad schedules"
	echo "== 1. four flooders (vrdma-bw WRITE 1 MiB, tx-depth 64), weights 1:2:3:4, ${WIN} s window"
	[ -s $T/prio-weights.res ] && table weights
	echo
	echo "== 1b. the same with credits=1:2:3:4 (WRs of a guest on the device), ${WIN} s window"
	[ -s $T/prio-credits.res ] && table credits
	echo
	echo "== 2. high-class guest vs 3 low-class flooders (vrdma-bw WRITE 1 MiB)"
	printf "%-30s %10s %14s %8s\n" metric solo "vs flooders" ratio
	awk -v s="$(fld latsolo 10)" -v l="$(fld latloaded 10)" 'BEGIN {
		printf "%-30s %10.1f %14.1f %7.2fx\n", "vrdma-lat 8 B p99 (us)", s, l, s ? l / s : 0 }'
	awk -v s="$(fld latsolo 7)" -v l="$(fld latloaded 7)" 'BEGIN {
		printf "%-30s %10.1f %14.1f %7.2fx\n", "vrdma-lat 8 B typical (us)", s, l, s ? l / s : 0 }'
	awk -v s="$(fld bwsolo 6)" -v l="$(fld bwloaded 6)" 'BEGIN {
		printf "%-30s %10.2f %14.2f %7.1f%%\n", "vrdma-bw 64 KiB (MiB/s)", s, l, s ? 100 * l / s : 0 }'
	awk '{ printf "%-30s %10s %14.2f\n", "  low class moved (MiB/s)", "-", ($3 > $2) ? $1 / ($3 - $2) / 1048576 : 0 }' \
		$T/prio-bwloaded.low 2>/dev/null
	echo "(absolutes are TCG's and noisy: compare ratios within this boot)"
	c=$(ctl stats -j)
	echo "node a, whole run: WRs that found the device full $(field dev_full "$c"), holds expired $(field dev_hold_expired "$c")"
	echo "VRDMA-SHOW-END"
fi
