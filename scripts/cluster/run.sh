#!/bin/bash
# SPDX-License-Identifier: MIT
# The 2-node cluster rig (lighter variant): two QEMU/TCG machines booting
# Debian's generic kernel, joined by a UDP netdev (MTU 9000), each with
# Soft-RoCE (rxe0 on eth0), the plain-host vrdmad (-a its address, run dir
# /run/vrdma) and guest processes linking libvrdma.  Node b serves, node a
# connects.
#
# Entry point:
#   make B=BUILD_DIR check-cluster-host | demo-cluster-host | bench-cluster-host | smoke-cluster
#     | bench-prio-cluster
#     (builds what it needs, fetches the kernel once into the Xen rig's
#      cache, builds the images into BUILD_DIR/cluster, boots, prints)
#   scripts/cluster/run.sh SUITE IMAGE_DIR     boot once with built images
#   SUITE: smoke (rxe up, native perftest pair, vrdmad on both nodes; what
#          works before the verbs path), check, demo, bench, prio (issue
#          5's benchmark: weights, classes; kernel args prio.win=S
#          prio.lat=N prio.bw=N via NODE_EXTRA)
#   (tests/cluster/suite-SUITE.sh, run by both nodes' /init).
# Env knobs: TIMEOUT (s per boot, default 300), CPU (default qemu64),
#   MEM (per node, default 512; rig.sh gives check 6144), PORT (UDP ports PORT and PORT+1, default
#   45700), MTU (default 9000), RMEM (host net.core.rmem_default during the
#   boot, restored after; unset = leave the host alone; rig.sh sets 4 MiB
#   for demo and bench: with the 208 KiB default, QEMU's UDP socket drops
#   rxe bursts and 1 MiB writes crawl on RC retransmit timeouts; prio
#   too, with TIMEOUT 900),
#   NODE_EXTRA (more kernel args, e.g. vrdma.diag: always print the
#   diagnostics), LOGDIR (default IMAGE_DIR/logs), LOCK_WAIT (s to wait for
#   another project QEMU boot to end, default 900).
# Boots are serialised with every other QEMU boot of the project (flock
# /tmp/vrdma-qemu.lock).  Results are the "VRDMA-TEST <name> PASS|FAIL|SKIP"
# lines of both serial consoles; each node ends with "VRDMA-CLUSTER-DONE".
# Exit 0 iff both nodes finished, nothing failed and something passed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
SUITE=${1:?usage: run.sh SUITE IMAGE_DIR}
OUT=$(cd "${2:?usage: run.sh SUITE IMAGE_DIR}" && pwd)
TIMEOUT=${TIMEOUT:-300}
CPU=${CPU:-qemu64}
PORT=${PORT:-45700}
MTU=${MTU:-9000}
LOGDIR=${LOGDIR:-$OUT/logs}
for f in vmlinuz node.cpio.gz; do
	[ -s "$OUT/$f" ] || cl_die "$OUT/$f missing: run scripts/cluster/build.sh"
done
mkdir -p "$LOGDIR"
LA=$LOGDIR/$SUITE-a.log
LB=$LOGDIR/$SUITE-b.log

node() { # name ip peer lport rport
	local nd="dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=$4"
	nd="$nd,remote.type=inet,remote.host=127.0.0.1,remote.port=$5"
	timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -accel tcg -machine pc \
		-cpu "$CPU" -smp 1 -m "${MEM:-512}" \
		-display none -serial stdio -monitor none -no-reboot -nodefaults \
		-kernel "$OUT/vmlinuz" -initrd "$OUT/node.cpio.gz" \
		-append "console=ttyS0 quiet loglevel=4 panic=-1 vrdma.suite=$SUITE vrdma.node=$1 vrdma.ip=$2 vrdma.peer=$3 vrdma.mtu=$MTU ${NODE_EXTRA:-}" \
		-netdev "$nd" -device virtio-net-pci,netdev=n0,mac=52:54:00:76:00:0$6 \
		</dev/null 2>&1 | xr_stamp "$T0"
	return "${PIPESTATUS[0]}"
}

xr_lock "${LOCK_WAIT:-900}" || cl_die "no QEMU lock"
# QEMU's UDP netdev takes the host's default receive buffer; rxe bursts can
# overflow it (drops cost RC retransmit timeouts: speed only, never
# correctness).  Raise it only when asked, and put it back.
OLD_RMEM=
if [ -n "${RMEM:-}" ] && [ -w /proc/sys/net/core/rmem_default ]; then
	OLD_RMEM=$(cat /proc/sys/net/core/rmem_default)
	trap 'echo "$OLD_RMEM" >/proc/sys/net/core/rmem_default' EXIT
	trap 'exit 130' INT TERM HUP
	echo "$RMEM" >/proc/sys/net/core/rmem_default
fi
cl_log "booting suite '$SUITE' on 2 nodes (logs: $LA $LB, limit ${TIMEOUT}s)"
start=$SECONDS
T0=${EPOCHREALTIME/./}
node b 10.0.0.2 10.0.0.1 $((PORT + 1)) $PORT 2 >"$LB" &
PB=$!
node a 10.0.0.1 10.0.0.2 $PORT $((PORT + 1)) 1 >"$LA" &
PA=$!
wait $PA
qa=$?
wait $PB
qb=$?
xr_unlock
secs=$((SECONDS - start))

ok=1
for n in a b; do
	log=$LOGDIR/$SUITE-$n.log
	q=$([ $n = a ] && echo $qa || echo $qb)
	grep -E 'VRDMA-(TEST|CLUSTER-DONE|NODE-UP)' "$log" | sed "s/^/node $n: /"
	if ! grep -q 'VRDMA-CLUSTER-DONE' "$log"; then
		ok=0
		[ "$q" = 124 ] && cl_log "node $n: TIMEOUT, no result within ${TIMEOUT}s" ||
			cl_log "node $n: QEMU ended (status $q) before the suite finished"
		grep -nE 'Kernel panic|BUG:|Oops|segfault' "$log" | head -20
		echo "----- node $n: last 40 console lines"
		tail -n 40 "$log"
	fi
done
npass=$(cat "$LA" "$LB" | grep -c 'VRDMA-TEST .* PASS')
nfail=$(cat "$LA" "$LB" | grep -c 'VRDMA-TEST .* FAIL')
[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ] || ok=0
if [ $ok = 0 ]; then
	# What the failing checks printed, and each node's diagnostics.
	for n in a b; do
		log=$LOGDIR/$SUITE-$n.log
		grep -q 'VRDMA-TEST .* FAIL' "$log" || continue
		echo "----- node $n: console around the failures"
		grep -B 8 'VRDMA-TEST .* FAIL' "$log" | grep -v 'VRDMA-TEST .* PASS' | tail -n 60
		sed -n '/VRDMA-DIAG-BEGIN/,/VRDMA-DIAG-END/p' "$log"
	done
	# Again at the end: CI shows only the tail of what a run prints.
	xr_fail_tail "$LA" "$LB"
fi
cl_log "suite '$SUITE': $npass passed, $nfail failed, ${secs}s in QEMU ($([ $ok = 1 ] && echo PASS || echo FAIL)); logs: $LA $LB"
[ $ok = 1 ]
