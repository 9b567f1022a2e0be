#!/bin/bash
# SPDX-License-Identifier: MIT
# Run a cluster suite's node scripts on this host, without QEMU: both
# "nodes" are shells here, sharing one plain-host vrdmad, guests reach each
# other as node "dry" (its name), and the native perftest steps are skipped.  It
# checks the suites' own logic (meeting points, limits, markers) in
# seconds.  Uses TCP ports 7071/7072 on 127.0.0.1: one dry run at a time.
# Usage: tests/cluster/dryrun.sh SUITE BUILD_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SUITE=${1:?usage: dryrun.sh SUITE BUILD_DIR}
B=$(cd "${2:?usage: dryrun.sh SUITE BUILD_DIR}" && pwd)
W=$(mktemp -d /tmp/vrdma-cldry.XXXXXX)
export VRDMA_RUN_DIR=$W/run PATH=$B/sbin:$B/bin:$B/tests:$PATH
mkdir -p "$VRDMA_RUN_DIR" "$W/a" "$W/b"
DPID=
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
# as cl-lib.sh's vd_start: suite check's MR of 4 GiB + 8 KiB
VRDMA_MAX_GUEST_PAGES=1100000 vrdmad -f -S "$VRDMA_RUN_DIR" -n dry >"$W/vrdmad.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do
	vrdmactl -S "$VRDMA_RUN_DIR" ping >/dev/null 2>&1 && break
	sleep 0.05
done
FDS0=$(vrdmactl -S "$VRDMA_RUN_DIR" -j census | sed -n 's/.*"fds": *\([0-9]*\).*/\1/p')

# The node scripts' stdin: a FIFO nobody writes, held open here.  busybox
# nc (cl_tell, cl_await) gives up a connection once its stdin ends, as
# /dev/null does at once for a background job: meeting points got lost.
mkfifo "$W/stdin"
exec 3<>"$W/stdin"

node() { # name
	NODE=$1 IP=127.0.0.1 PEER=127.0.0.1 VRNODE=dry CL_TMP=$W/$1 CL_REMOTE=1 CL_DIR=$HERE \
	CL_NATIVE=0 FDS0=$FDS0 SUITE=$SUITE timeout 600 sh -c '
		. '"$HERE"'/cl-lib.sh
		. '"$HERE"'/suite-$SUITE.sh
		echo "VRDMA-CLUSTER-DONE node=$NODE suite=$SUITE pass=$VT_PASS fail=$VT_FAIL"' \
		<"$W/stdin" >"$W/$1.log" 2>&1
}
start=$SECONDS
node b &
PB=$!
node a &
PA=$!
wait $PA
wait $PB
for n in a b; do
	grep -E 'VRDMA-(TEST|CLUSTER-DONE)' "$W/$n.log" | sed "s/^/node $n: /"
done
ok=1
for n in a b; do
	grep -q 'VRDMA-CLUSTER-DONE' "$W/$n.log" || ok=0
done
grep -q 'VRDMA-TEST .* FAIL' "$W/a.log" "$W/b.log" && ok=0
if [ $ok = 0 ]; then
	for n in a b; do
		echo "----- node $n"
		tail -n 40 "$W/$n.log"
	done
	echo "----- vrdmad"
	tail -n 20 "$W/vrdmad.log"
fi
sed -n '/VRDMA-SHOW-BEGIN/,/VRDMA-SHOW-END/{/VRDMA-SHOW-/d;p}' "$W/a.log"
echo "cluster dry run '$SUITE': $((SECONDS - start)) s, $([ $ok = 1 ] && echo PASS || echo FAIL)"
[ $ok = 1 ]
