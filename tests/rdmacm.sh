#!/bin/bash
# SPDX-License-Identifier: MIT
# Debian's own, unmodified rdma_cm programs (rdmacm-utils' rping and
# ucmatose, perftest with -R) on vrdma's librdmacm through
# build/bin/vrdma-run, against a private vrdmad; then the malformed uses
# (tests/rdmacm_test.c) and a leak check.  One case per run:
# VRDMA-TEST rdmacm-<name> PASS|FAIL, then "N passed, N failed".
# Ports 19401+ (tests/verbs.sh has 19101+).
# Usage: tests/rdmacm.sh BUILD_DIR [CASE...]
set -u
. "$(dirname "$0")/vprog-lib.sh"
vp_init rdmacm "${1:-build}" librdmacm.so.1 rping ucmatose ib_write_bw
shift || true
ONLY="$*"
T=60					# seconds any one program may take
pass=0 fail=0

report() {
	local name=$1 ok=$2 out=$3
	if [ "$ok" = 1 ]; then
		echo "VRDMA-TEST rdmacm-$name PASS"
		pass=$((pass + 1))
		return
	fi
	echo "---- $name output:"; grep "^== " "$out"; tail -n 30 "$out"
	echo "VRDMA-TEST rdmacm-$name FAIL"
	fail=$((fail + 1))
}

PORT=19400
# pair NAME PATTERN "SERVER ARGS" "CLIENT ARGS": the server (given the
# port by its own option in SERVER ARGS' @P@), then the client; both must
# exit 0 and the client's output match PATTERN.
pair() { vp_pair "$@"; }

# own NAME: a case of tests/rdmacm_test.c on its own port.
own() {
	local name=$1 out=$RUN/$1.own ok=0
	want "$name" || return 0
	PORT=$((PORT + 1))
	timeout $T "$B/tests/rdmacm_test" "$name" $PORT >"$out" 2>&1 && ok=1
	report "$name" $ok "$out"
}

start_daemon || exit 1
echo "vrdmad up, pid $DPID"

BW='^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
LAT='^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+'
PT="-R -x 0 -n 1000 -s 4096 -p @P@"

# rping -V compares every echo with what it sent; -q: the program moves
# its own QP (rdma_init_qp_attr, rdma_establish).
pair rping "ping data: rdma-ping-9:" "rping -s -v -p @P@" "rping -c -a 127.0.0.1 -v -V -C 10 -p @P@"
pair rping_q "ping data: rdma-ping-9:" "rping -s -q -p @P@" "rping -c -q -a 127.0.0.1 -v -V -C 10 -p @P@"
pair rping_v6 "ping data: rdma-ping-9:" "rping -s -a ::1 -p @P@" "rping -c -a ::1 -v -V -C 10 -p @P@"
pair ucmatose "return status 0" "ucmatose -p @P@" "ucmatose -s 127.0.0.1 -p @P@"
pair ucmatose_c4 "return status 0" "ucmatose -c 4 -C 20 -p @P@" "ucmatose -c 4 -C 20 -s 127.0.0.1 -p @P@"
pair ucmatose_migrate "return status 0" "ucmatose -m -p @P@" "ucmatose -m -s 127.0.0.1 -p @P@"
pair write_bw "$BW" "ib_write_bw $PT" "ib_write_bw $PT 127.0.0.1"
pair read_bw "$BW" "ib_read_bw $PT" "ib_read_bw $PT 127.0.0.1"
pair send_bw "$BW" "ib_send_bw $PT" "ib_send_bw $PT 127.0.0.1"
pair send_lat "$LAT" "ib_send_lat $PT" "ib_send_lat $PT 127.0.0.1"
pair write_lat "$LAT" "ib_write_lat $PT" "ib_write_lat $PT 127.0.0.1"
pair read_lat "$LAT" "ib_read_lat $PT" "ib_read_lat $PT 127.0.0.1"
AT="-R -x 0 -n 1000 -p @P@"
pair atomic_bw "$BW" "ib_atomic_bw $AT" "ib_atomic_bw $AT 127.0.0.1"
pair atomic_lat "$LAT" "ib_atomic_lat $AT" "ib_atomic_lat $AT 127.0.0.1"

# malformed and corner uses
own refused
own limits
own pdata
own nonblock
own cleanup
own vanish

# every guest gone from vrdmad once the programs exited
vp_leaks

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
