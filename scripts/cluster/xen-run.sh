#!/bin/bash
# SPDX-License-Identifier: MIT
# Full variant: two Xen machines (Xen 4.17 + PV dom0 owning two virtio NICs
# + PV domUs, the Xen rig's images with the cluster overlay from
# xen-build.sh) joined by two UDP netdevs (RDMA fabric, guest network).  Each dom0 runs the Xen rig's /init
# with vrdma.suite=SUITE (default xcluster: tests/cluster/suite-xcluster.sh).
# Serialised with every project QEMU boot; hard limit TIMEOUT (default
# 600); results from "VRDMA-TEST" and "VRDMA-RIG-DONE" on both consoles.
# Usage: xen-run.sh IMAGE_DIR [SUITE]
# env: TIMEOUT, SMP (per machine, default 1), MEM (default 2048), PORT
#      (default 45710; the guest network uses PORT+2 and PORT+3), MTU, RMEM (as run.sh), LOGDIR, LOCK_WAIT, XARGS
#      (more dom0 kernel arguments, e.g. vrdma.killb for suite xcheck)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
OUT=$(cd "${1:?usage: xen-run.sh IMAGE_DIR [SUITE]}" && pwd)
SUITE=${2:-xcluster}
TIMEOUT=${TIMEOUT:-600}
SMP=${SMP:-1}
PORT=${PORT:-45710}
LOGDIR=${LOGDIR:-$OUT/logs}
for f in xen vmlinuz dom0-cluster.cpio; do
	[ -s "$OUT/$f" ] || cl_die "$OUT/$f missing: run scripts/cluster/xen-build.sh"
done
mkdir -p "$LOGDIR"

# Two NICs per machine, each a UDP pair between the two QEMUs: n0 (MAC
# 52:54:00:76:01:0N, ports PORT/PORT+1) carries the RDMA fabric (dom0's
# eth0, rxe0); n1 (52:54:00:76:02:0N, PORT+2/PORT+3) the guest network
# (bridged in dom0 with the domUs' vifs; tests/cluster/xen-pre-vrdmad.sh).
machine() { # name ip peer lport rport mac-suffix
	local nd="dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=$4"
	nd="$nd,remote.type=inet,remote.host=127.0.0.1,remote.port=$5"
	local gd="dgram,id=n1,local.type=inet,local.host=127.0.0.1,local.port=$(($4 + 2))"
	gd="$gd,remote.type=inet,remote.host=127.0.0.1,remote.port=$(($5 + 2))"
	local xc="console=com1 com1=115200,8n1 dom0_mem=1024M,max:1024M dom0_max_vcpus=$SMP loglvl=all guest_loglvl=all bootscrub=0"
	local dc="console=hvc0 earlyprintk=xen loglevel=4 vrdma.suite=$SUITE vrdma.node=$1 vrdma.ip=$2 vrdma.peer=$3 vrdma.mtu=${MTU:-9000} vrdma.hostcpus=$(nproc) vrdma.hostload=$(cut -d' ' -f1 /proc/loadavg) ${XARGS:-}"
	timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -accel tcg -machine pc \
		-cpu qemu64 -m "${MEM:-2048}" -smp "$SMP" \
		-display none -serial stdio -monitor none -no-reboot -nodefaults \
		-kernel "$OUT/xen" -append "$xc" \
		-initrd "$OUT/vmlinuz $dc,$OUT/dom0-cluster.cpio" \
		-netdev "$nd" -device "virtio-net-pci,netdev=n0,mac=52:54:00:76:01:0$6" \
		-netdev "$gd" -device "virtio-net-pci,netdev=n1,mac=52:54:00:76:02:0$6" \
		</dev/null 2>&1 | xr_stamp "$T0"
	return "${PIPESTATUS[0]}"
}

xr_lock "${LOCK_WAIT:-900}" || cl_die "no QEMU lock"
if [ -n "${RMEM:-}" ] && [ -w /proc/sys/net/core/rmem_default ]; then
	OLD_RMEM=$(cat /proc/sys/net/core/rmem_default)
	trap 'echo "$OLD_RMEM" >/proc/sys/net/core/rmem_default' EXIT
	trap 'exit 130' INT TERM HUP
	echo "$RMEM" >/proc/sys/net/core/rmem_default
fi
cl_log "booting 2 Xen machines, suite '$SUITE' (logs in $LOGDIR, limit ${TIMEOUT}s)"
start=$SECONDS
T0=${EPOCHREALTIME/./}
machine b 10.0.0.2 10.0.0.1 $((PORT + 1)) $PORT 2 >"$LOGDIR/$SUITE-b.log" &
PB=$!
machine a 10.0.0.1 10.0.0.2 $PORT $((PORT + 1)) 1 >"$LOGDIR/$SUITE-a.log" &
PA=$!
wait $PA
wait $PB
xr_unlock
ok=1
for n in a b; do
	log=$LOGDIR/$SUITE-$n.log
	grep -E 'VRDMA-(TEST|RIG-DONE|NODE-UP|DOMUS-UP)' "$log" | sed "s/^/node $n: /"
	if ! grep -q 'VRDMA-RIG-DONE' "$log"; then
		ok=0
		cl_log "node $n did not finish; last 30 console lines:"
		tail -n 30 "$log"
	fi
done
npass=$(cat "$LOGDIR/$SUITE-a.log" "$LOGDIR/$SUITE-b.log" | grep -c 'VRDMA-TEST .* PASS')
nfail=$(cat "$LOGDIR/$SUITE-a.log" "$LOGDIR/$SUITE-b.log" | grep -c 'VRDMA-TEST .* FAIL')
[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ] || ok=0
if [ $ok = 0 ]; then
	for n in a b; do
		sed -n '/VRDMA-DIAG-BEGIN/,/VRDMA-DIAG-END/p' "$LOGDIR/$SUITE-$n.log" | tail -n 60
	done
	# Again at the end: CI shows only the tail of what a run prints.
	xr_fail_tail "$LOGDIR/$SUITE-a.log" "$LOGDIR/$SUITE-b.log"
fi
cl_log "Xen cluster suite '$SUITE': $npass passed, $nfail failed, $((SECONDS - start))s in QEMU ($([ $ok = 1 ] && echo PASS || echo FAIL))"
[ $ok = 1 ]
