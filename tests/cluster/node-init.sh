#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of a cluster rig node (both nodes boot the same image).  Kernel
# command line: vrdma.suite=smoke|check|demo|bench  vrdma.node=a|b
# vrdma.ip=ADDR  vrdma.peer=ADDR  vrdma.mtu=N.  Brings up eth0 and rxe0,
# starts the plain-host vrdmad (-a this node's address when the build has
# the verbs path), then sources /vrdma/suite-SUITE.sh.  Node b runs the
# servers, node a the clients.  Results: "VRDMA-TEST <name> PASS|FAIL|SKIP"
# lines and a final "VRDMA-CLUSTER-DONE node=N suite=S pass=P fail=F";
# scripts/cluster/run.sh reads them from both consoles.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
up() { cut -d' ' -f1 /proc/uptime; }
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /run/vrdma
mount -t devpts devpts /dev/pts
mount -t tmpfs shm /dev/shm
mount -t tmpfs tmp /tmp

arg() { sed -n "s/.*vrdma\\.$1=\\([^ ]*\\).*/\\1/p" /proc/cmdline; }
SUITE=$(arg suite)
NODE=$(arg node)
IP=$(arg ip)
PEER=$(arg peer)
MTU=$(arg mtu)
: "${SUITE:=smoke}" "${NODE:=a}" "${MTU:=9000}"
echo "VRDMA-NODE-UP node=$NODE ip=$IP peer=$PEER suite=$SUITE (uptime $(up)s)"

. /vrdma/cl-lib.sh

finish() {
	if [ "$VT_FAIL" -ne 0 ] || grep -q 'vrdma.diag' /proc/cmdline; then
		echo "VRDMA-DIAG-BEGIN node=$NODE"
		ctl census
		echo "----- vrdmad log (last 40 lines)"
		tail -n 40 $VLOG
		echo "----- kernel warnings"
		dmesg | grep -iE 'rxe|warn|error|bug' | grep -v 'speed is unknown' | tail -n 10
		echo "VRDMA-DIAG-END node=$NODE"
	fi
	echo "VRDMA-CLUSTER-DONE node=$NODE suite=$SUITE pass=$VT_PASS fail=$VT_FAIL (uptime $(up)s)"
	sync
	poweroff -f
	sleep 100
}

for m in $(cat /modules.list); do
	insmod /lib/modules/$m || echo "insmod $m failed"
done
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ip link set lo up
ip addr add "$IP/24" dev eth0
ip link set eth0 mtu "$MTU" up
if ! rdma link add rxe0 type rxe netdev eth0; then
	vt_fail rxe-up-$NODE "rdma link add failed"
	dmesg | tail -n 20
	finish
fi
# Active once eth0 has carrier; the IPv4-mapped GID appears with the address.
i=0
until ibv_devinfo -d rxe0 2>/dev/null | grep -q PORT_ACTIVE || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
GIDX=
i=0
while [ -z "$GIDX" ] && [ $i -lt 50 ]; do
	for g in 0 1 2 3; do
		case $(cat /sys/class/infiniband/rxe0/ports/1/gids/$g 2>/dev/null) in
		0000:0000:0000:0000:0000:ffff:*) GIDX=$g; break ;;
		esac
	done
	[ -n "$GIDX" ] || sleep 0.1
	i=$((i + 1))
done
if ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE && [ -n "$GIDX" ]; then
	vt_pass rxe-up-$NODE
else
	vt_fail rxe-up-$NODE "port not active or no IPv4 GID"
	ibv_devinfo -d rxe0
fi
echo "rxe0 up, IPv4 GID index ${GIDX:=1} (uptime $(up)s)"

if vd_start; then
	vt_pass vrdmad-up-$NODE
else
	vt_fail vrdmad-up-$NODE
	tail -n 20 $VLOG
fi
# shellcheck disable=SC2034  # leak_free (cl-lib.sh) compares with it
FDS0=$(field fds "$(ctl -j census)")

if [ -r /vrdma/suite-$SUITE.sh ]; then
	# shellcheck disable=SC1090
	. /vrdma/suite-$SUITE.sh
else
	vt_fail suite-$SUITE "no such suite"
fi
finish
