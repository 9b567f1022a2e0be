#!/bin/bash
# SPDX-License-Identifier: MIT
# Plain-host integration test: the real vrdmad, real guest processes.
#   1. every opcode between two guests, data verified (itest_guest)
#   2. a guest killed mid-transfer leaves nothing behind in vrdmad
#   3. hostile guests writing garbage are disabled; a bw pair running
#      beside them completes with verified data
#   4. a guest that tries to make vrdmad wait on what it holds (issue 12):
#      pings answered and a bw pair completes meanwhile, nothing left after
#   5. vrdmactl set/get/stats/top (tests/prio.sh)
#   6. vrdma-bw / vrdma-lat's perftest options and bad values (tests/gtopts.sh)
# Usage: tests/integration.sh BUILD_DIR
set -u
B=${1:-build}
B=$(cd "$B" && pwd)
RUN=$(mktemp -d /tmp/vrdma-itest.XXXXXX)
export VRDMA_RUN_DIR=$RUN
LOG=$RUN/vrdmad.log
pass=0
fail=0
DPID=

cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	jobs -p | xargs -r kill -9 2>/dev/null
	rm -rf "$RUN"
}
trap cleanup EXIT

ok()  { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

ctl() { timeout 10 "$B/sbin/vrdmactl" -S "$RUN" "$@"; }

# census field value, e.g. field guests
field() { ctl -j census | sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p"; }

# Wait (bounded) until the daemon has forgotten every guest.
wait_clean() {
	for _ in $(seq 50); do
		[ "$(field guests)" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

# Nothing of any guest is left and the daemon holds the fds it started with.
leak_free() {
	wait_clean || { ctl census; return 1; }
	local c; c=$(ctl -j census)
	for f in maps chans qps mrs cqs pds bufs listeners credits dev_bytes; do
		echo "$c" | grep -q "\"$f\": *0[,}]" || { echo "leak: $c"; return 1; }
	done
	# a guest's connection is closed on vrdmad's reaper thread, a moment later
	for _ in $(seq 20); do [ "$(field fds)" = "$FDS0" ] && return 0; sleep 0.1; done
	echo "fds: $(field fds) now, $FDS0 at start"; return 1
}

start_daemon() {
	"$B/sbin/vrdmad" -f -S "$RUN" -n itest-node >"$LOG" 2>&1 &
	DPID=$!
	for _ in $(seq 100); do
		ctl ping >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "vrdmad did not start:"; cat "$LOG"
	return 1
}

start_daemon || exit 1
FDS0=$(field fds)
echo "vrdmad up, pid $DPID, $FDS0 fds"

# ---- 1. every opcode with data verification ----
timeout 60 "$B/tests/itest_guest" server itest >"$RUN/srv.out" 2>&1 &
SP=$!
for _ in $(seq 100); do grep -q server-ready "$RUN/srv.out" && break; sleep 0.05; done
timeout 60 "$B/tests/itest_guest" client itest >"$RUN/cli.out" 2>&1
crc=$?
wait $SP
src=$?
cat "$RUN/cli.out" "$RUN/srv.out" | grep ITEST
check "every opcode, client" [ $crc -eq 0 ]
check "every opcode, server" [ $src -eq 0 ]
check "no ITEST failures" bash -c "! grep -q 'ITEST .* FAIL' $RUN/cli.out $RUN/srv.out"
check "clean after normal exit" leak_free

# ---- 2. a guest killed mid-transfer ----
"$B/bin/vrdma-bw" -p killme -s 1048576 -n 1000000 --timeout 20 >"$RUN/kbs.out" 2>&1 &
KS=$!
sleep 0.5
"$B/bin/vrdma-bw" -p killme -s 1048576 -n 1000000 --timeout 20 local >"$RUN/kbc.out" 2>&1 &
KC=$!
for _ in $(seq 50); do [ "$(field qps)" -ge 2 ] 2>/dev/null && break; sleep 0.1; done
sleep 0.5
kill -9 $KC
wait $KC 2>/dev/null
# the survivor must see errors and exit on its own, not hang
for _ in $(seq 150); do kill -0 $KS 2>/dev/null || break; sleep 0.1; done
if kill -0 $KS 2>/dev/null; then
	bad "killed guest: survivor exits on its own"; kill -9 $KS
else
	wait $KS; ksr=$?
	check "killed guest: survivor sees an error" [ $ksr -ne 0 -a $ksr -ne 124 ]
fi
wait $KS 2>/dev/null
check "killed guest: daemon alive" ctl ping
check "killed guest: nothing left" leak_free

# ---- 3. hostile guests beside a verified transfer ----
timeout 120 "$B/bin/vrdma-bw" -p calm -s 65536 -n 20000 --verify --timeout 60 >"$RUN/cbs.out" 2>&1 &
CS=$!
sleep 0.5
timeout 120 "$B/bin/vrdma-bw" -p calm -s 65536 -n 20000 --verify --timeout 60 local >"$RUN/cbc.out" 2>&1 &
CC=$!
cases=$("$B/tests/itest_hostile" list)
for c in $cases; do
	timeout 20 "$B/tests/itest_hostile" "$c" >"$RUN/h.out" 2>&1
	rc=$?
	check "hostile $c refused" [ $rc -eq 0 ]
	[ $rc -eq 0 ] || cat "$RUN/h.out"
done
wait $CC; ccr=$?
wait $CS; csr=$?
check "transfer beside hostile guests, client" [ $ccr -eq 0 ]
check "transfer beside hostile guests, server" [ $csr -eq 0 ]
[ $ccr -eq 0 ] && [ $csr -eq 0 ] || tail -n 5 "$RUN/cbc.out" "$RUN/cbs.out"
check "hostile guests logged as disabled" grep -q "disabled" "$LOG"
check "daemon alive after hostile guests" ctl ping
check "clean after hostile guests" leak_free

# ---- 4. a guest that tries to make vrdmad wait (issue 12) ----
timeout 120 "$B/bin/vrdma-bw" -p calm2 -s 65536 -n 20000 --verify --timeout 60 >"$RUN/wbs.out" 2>&1 &
WS=$!
sleep 0.5
timeout 120 "$B/bin/vrdma-bw" -p calm2 -s 65536 -n 20000 --verify --timeout 60 local >"$RUN/wbc.out" 2>&1 &
WC=$!
timeout 30 "$B/tests/itest_hostile" wedge >"$RUN/w.out" 2>&1 &
WP=$!
for _ in $(seq 100); do grep -q wedge-ready "$RUN/w.out" && break; sleep 0.05; done
check "wedging guest: set up" grep -q wedge-ready "$RUN/w.out"
sleep 1
check "wedging guest: vrdmad answers a ping" ctl ping
sleep 1
check "wedging guest: vrdmad still answers" ctl ping
wait $WP; wpr=$?
check "wedging guest: it ran its time (not killed by timeout)" [ $wpr -eq 0 ]
grep "wedge:" "$RUN/w.out"
check "wedging guest: dom0 notified into its full queue" grep -q "queue full" "$RUN/w.out"
wait $WC; wcr=$?
wait $WS; wsr=$?
check "transfer beside a wedging guest, client" [ $wcr -eq 0 ]
check "transfer beside a wedging guest, server" [ $wsr -eq 0 ]
[ $wcr -eq 0 ] && [ $wsr -eq 0 ] || tail -n 5 "$RUN/wbc.out" "$RUN/wbs.out"
check "daemon alive after a wedging guest" ctl ping
check "clean after a wedging guest" leak_free

# ---- shutdown ----
kill "$DPID"
wait "$DPID"; drc=$?
DPID=
check "vrdmad exits 0 on SIGTERM" [ $drc -eq 0 ]
check "sockets removed" [ ! -e "$RUN/vrdmad.ctl" ]
# ---- vrdmad's options: bad values are refused with a message, before anything starts ----
rt_bad() { ! "$B/sbin/vrdmad" -S "$RUN/rt" --rt-prio "$1" 2>"$RUN/rt.err" && grep -q "bad --rt-prio" "$RUN/rt.err"; }
check "vrdmad --rt-prio 0 refused" rt_bad 0
check "vrdmad --rt-prio 100 refused" rt_bad 100
check "vrdmad --rt-prio x refused" rt_bad x
rt_spin() { ! "$B/sbin/vrdmad" -S "$RUN/rt" --rt-prio 1 --spin-us 5 2>"$RUN/rt.err" &&
	    grep -q "no spin window" "$RUN/rt.err"; }
check "vrdmad --rt-prio with a spin window refused" rt_spin
# SCHED_RR where permitted: the daemon comes up and says so; where not
# (no CAP_SYS_NICE, no RT runtime in this cgroup) it exits 1 with the reason.
"$B/sbin/vrdmad" -f -S "$RUN/rt" -n rt-node --rt-prio 1 >"$RUN/rt.log" 2>&1 &
RTP=$!
i=0
until grep -q "SCHED_RR priority 1\|cannot use SCHED_RR" "$RUN/rt.log" || [ $i -ge 50 ] ||
      ! kill -0 $RTP 2>/dev/null; do
	sleep 0.1; i=$((i + 1))
done
if grep -q "cannot use SCHED_RR" "$RUN/rt.log"; then
	wait $RTP
	check "vrdmad --rt-prio 1 not permitted here: exits 1 with the reason" [ $? -eq 1 ]
else
	check "vrdmad --rt-prio 1: data path at SCHED_RR" grep -q "SCHED_RR priority 1" "$RUN/rt.log"
	kill $RTP 2>/dev/null; wait $RTP
	check "vrdmad --rt-prio 1 exits 0 on SIGTERM" [ $? -eq 0 ]
fi

# ---- 5. operator controls (issue 5), with a daemon of their own ----
check "prio: set/get/stats/top (tests/prio.sh)" "$(dirname "$0")/prio.sh" "$B"

# ---- 6. vrdma-bw / vrdma-lat command line (issue 13), own daemon too ----
check "vrdma-bw/-lat options (tests/gtopts.sh)" "$(dirname "$0")/gtopts.sh" "$B"

if [ $fail -ne 0 ]; then
	echo "---- vrdmad log (last 40 lines)"
	tail -40 "$LOG"
fi
echo "integration: $pass passed, $fail failed"
[ $fail -eq 0 ]
