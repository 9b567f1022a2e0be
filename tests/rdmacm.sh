#!/bin/bash
# SPDX-License-Identifier: MIT
# Debian's own, unmodified rdma_cm programs (rdmacm-utils' rping,
# ucmatose, udaddy on UD ids, rdma_server / rdma_client on synchronous
# ids, perftest with -R) on vrdma's librdmacm through build/bin/vrdma-run,
# against a private vrdmad; then the malformed uses (tests/rdmacm_test.c,
# tests/rdmacm_sync_test.c) and a leak check.  One case per run:
# VRDMA-TEST rdmacm-<name> PASS|FAIL, then "N passed, N failed".
# Ports 19401+ (tests/verbs.sh has 19101+); udaddy has no port option and
# takes rdma_cm's 7174.
# Usage: tests/rdmacm.sh BUILD_DIR [CASE...]
set -u
. "$(dirname "$0")/vprog-lib.sh"
vp_init rdmacm "${1:-build}" librdmacm.so.1 rping ucmatose udaddy rdma_server rdma_client ib_write_bw
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

# own NAME [PROGRAM]: a case of tests/rdmacm_test.c (or PROGRAM's) on its
# own ports (two: ud_mismatch takes the next one too).
own() {
	local name=$1 prog=${2:-rdmacm_test} out=$RUN/$1.own ok=0
	want "$name" || return 0
	PORT=$((PORT + 2))
	timeout $T "$B/tests/$prog" "$name" $PORT >"$out" 2>&1 && ok=1
	report "$name" $ok "$out"
}

# udaddy listens on 7174 whatever it is told: vp_pair's next port is it.
udaddy_pair() {
	local port=$PORT
	PORT=7173
	vp_pair "$@"
	PORT=$port
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
# UD ids (SIDR): ten datagrams each way, then 4 ids with 50 of 4096 bytes
udaddy_pair udaddy "return status 0" "udaddy" "udaddy -s 127.0.0.1"
udaddy_pair udaddy_c4 "return status 0" "udaddy -c 4 -C 50 -S 4096" \
	"udaddy -c 4 -C 50 -S 4096 -s 127.0.0.1"
# synchronous ids: rdma_create_ep, rdma_get_request, rdma_post_send ...
pair rdma_server "rdma_client: end 0" "rdma_server -p @P@" "rdma_client -s 127.0.0.1 -p @P@"
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
own sync rdmacm_sync_test
own sync_pair rdmacm_sync_test
own ud rdmacm_sync_test
own ud_mismatch rdmacm_sync_test

# every guest gone from vrdmad once the programs exited
vp_leaks

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
