#!/bin/bash
# SPDX-License-Identifier: MIT
# The per-hop latency trace on the plain host: Debian's ib_send_lat
# (8 bytes, 200 iterations) between two guests through vrdma-run, both
# traced (VRDMA_LAT_TRACE), vrdmad's trace armed (vrdmactl trace lat);
# scripts/lat-trace.sh must find every iteration and give every hop of
# the local path a positive median (stamps in the order the data moves;
# no timing is asserted).  Also: a bad VRDMA_LAT_TRACE is said and
# harms nothing, and vrdmactl trace's answers.
# One case per check: VRDMA-TEST lattrace-<name> PASS|FAIL.
# Usage: tests/lattrace.sh BUILD_DIR
set -u
. "$(dirname "$0")/vprog-lib.sh"
vp_init lattrace "${1:-build}" libibverbs.so.1 ib_send_lat ibv_devinfo
# shellcheck disable=SC2034	# vprog-lib.sh's: every case, its timeout
ONLY=
T=60
N=200
SCRIPTS=$(cd "$(dirname "$0")/../scripts" && pwd)
pass=0 fail=0

report() {
	if [ "$2" = 1 ]; then
		echo "VRDMA-TEST lattrace-$1 PASS"
		pass=$((pass + 1))
		return
	fi
	echo "---- $1 output:"; tail -n 40 "$3"
	echo "VRDMA-TEST lattrace-$1 FAIL"
	fail=$((fail + 1))
}

start_daemon || exit 1

# A value that is no number: said on stderr, the program runs as ever.
out=$RUN/bad_env.out ok=0
VRDMA_LAT_TRACE=lots timeout $T "$VR" ibv_devinfo >"$out" 2>&1 &&
	grep -q "hca_id:[[:space:]]*vrdma0" "$out" &&
	grep -q "VRDMA_LAT_TRACE=lots is not a number of stamps" "$out" &&
	! grep -q "^vlt " "$out" && ok=1
report bad_env $ok "$out"

# vrdmactl trace: off, refusals, armed.
out=$RUN/ctl.out ok=0
{
	LD_PRELOAD='' ctl trace && LD_PRELOAD='' ctl trace dump
	echo "dump when off: exit $?"
	LD_PRELOAD='' ctl trace lat 0
	echo "lat 0: exit $?"
	LD_PRELOAD='' ctl trace lat 100000 && LD_PRELOAD='' ctl trace
} >"$out" 2>&1
grep -q "^latency trace off$" "$out" && grep -q "^dump when off: exit 1$" "$out" &&
	grep -q "^lat 0: exit 1$" "$out" &&
	grep -q "^latency trace armed: 0 of 100000 stamps$" "$out" && ok=1
report ctl $ok "$out"

# The ping-pong, both guests traced into files of their own (%p).
export VRDMA_LAT_TRACE=100000 VRDMA_LAT_TRACE_FILE=$RUN/guest.%p.vlt
LAT='^ *8 +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+'
# shellcheck disable=SC2034	# vp_pair's ports from here
PORT=19300
vp_pair send_lat "$LAT" "ib_send_lat -p @P@ -n $N -s 8" "ib_send_lat -p @P@ -n $N -s 8 127.0.0.1"
unset VRDMA_LAT_TRACE VRDMA_LAT_TRACE_FILE

out=$RUN/dump.out ok=0
LD_PRELOAD='' ctl trace dump >"$RUN/dom0.vlt" 2>"$out" && LD_PRELOAD='' ctl trace off >>"$out" 2>&1
{ head -n 3 "$RUN/dom0.vlt"; ls -l "$RUN"/guest.*.vlt; head -n 2 "$RUN"/guest.*.vlt; } >>"$out" 2>&1
set -- "$RUN"/guest.*.vlt
[ $# = 2 ] && grep -q "^vlt dom0 hz [1-9][0-9]* .* node=$VP_NODE stamps=[1-9]" "$RUN/dom0.vlt" &&
	grep -q "^vlt dom0 copy " "$RUN/dom0.vlt" &&
	grep -q "^latency trace off$" "$out" &&
	[ "$(grep -c "^vlt guest hz [1-9][0-9]* .* prog=ib_send_lat " "$@" | grep -c ':1$')" = 2 ] &&
	[ "$(cat "$@" | grep -c "^vlt guest post ")" = $((2 * N)) ] && ok=1
report dump $ok "$out"

# Every hop of the local path: a line, a sample per iteration, median > 0.
out=$RUN/hops.out ok=0
hops=("post_send: entry -> doorbell" "doorbell -> dom0 pull" "dom0 pull -> copy into"
      "copy -> CQE in" "CQE -> published to" "published -> QP [0-9]+ polled it"
      "polled -> QP [0-9]+ post_send" "round trip:")
if "$SCRIPTS/lat-trace.sh" "$RUN"/guest.*.vlt "$RUN/dom0.vlt" >"$out" 2>&1; then
	ok=1
	grep -q "^lat-trace: local path, QP " "$out" || ok=0
	grep -q "^lat-trace: $N iterations, $N complete$" "$out" || ok=0
	for h in "${hops[@]}"; do
		n=$(grep -Ec "$h" "$out")
		# each way but the program's turn and the round trip
		case $h in polled*|round*) want=1 ;; *) want=2 ;; esac
		[ "$n" = $want ] || { echo "hop '$h': $n lines, not $want"; ok=0; }
	done
	# every hop line but the optional kicks': n = N; a median > 0 but
	# for the hops that end at a side stamp (the doorbell and the
	# publication are stamped just after the fact: the other side may
	# act first, lat-trace.sh's header), which may be below 0
	bad=$(awk -v n=$N '/ -> / && !/kick/ {
		side = /doorbell -> dom0 pull/ || /published -> QP/
		if ($(NF) != n || (!side && !($(NF - 1) > 0))) print }' "$out")
	[ -z "$bad" ] || { echo "hops without $N samples or a positive median:"; echo "$bad"; ok=0; }
	# kicks, when there were any: positive too
	bad=$(awk '/kick/ && $(NF) > 0 && !($(NF - 1) > 0)' "$out")
	[ -z "$bad" ] || { echo "kick hops not positive:"; echo "$bad"; ok=0; }
fi >>"$out.why"
cat "$out.why" >>"$out"
cat "$out"
report hops $ok "$out"

vp_leaks
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
