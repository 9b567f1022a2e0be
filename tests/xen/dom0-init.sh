#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of the rig's dom0 initramfs: Xen daemons, vrdmad, two PV domUs
# (domu1, domu2) running the command agent, then the suite the kernel
# command line names (vrdma.suite=check|demo|bench|smoke|prio,
# /vrdma/suite-*.sh; a third domU for check, eight smaller ones for prio).
# Results are "VRDMA-TEST <name> PASS|FAIL|SKIP" lines on the console and a
# final "VRDMA-RIG-DONE suite=S pass=P fail=F"; scripts/xen/run.sh reads them.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
up() { cut -d' ' -f1 /proc/uptime; }
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts		# xenconsoled needs ptys
mount -t tmpfs shm /dev/shm
mkdir -p /var/run/xen /var/run/xenstored /var/lib/xen /var/lib/xenstored /var/log/xen/console /run/vrdma
echo "VRDMA-DOM0-UP (uptime $(up)s)"

. /vrdma/rig-lib.sh
SUITE=$(sed -n 's/.*vrdma\.suite=\([a-z]*\).*/\1/p' /proc/cmdline)
SUITE=${SUITE:-check}
XENPLAT=$(cat /vrdma/xen-platform)
VLOG=/var/log/vrdmad.log
CONS=/var/log/xen/console

finish() {
	# Pass or fail: a callback that held vrdmad's loop a second or more
	# is what a timed-out vrdmactl or guest connect waited behind.
	echo "vrdmad loop stalls: $(grep -c 'held the loop\|ctl: .* took' $VLOG)"
	grep -B2 'held the loop\|ctl: .* took' $VLOG | tail -n 30
	if [ $VT_FAIL -ne 0 ] || grep -q 'vrdma.diag' /proc/cmdline; then
		echo "VRDMA-DIAG-BEGIN"
		xl list
		echo "----- vrdmad log (last 60 lines)"
		tail -n 60 $VLOG
		for c in $CONS/guest-*.log; do
			[ -e "$c" ] || continue
			echo "----- ${c##*/guest-} (last 60 lines)"
			tail -n 60 "$c"
		done
		echo "----- xl dmesg (last 20 lines)"
		xl dmesg | tail -n 20
		echo "VRDMA-DIAG-END"
	fi
	echo "VRDMA-RIG-DONE suite=$SUITE pass=$VT_PASS fail=$VT_FAIL (uptime $(up)s)"
	sync
	poweroff -f
	sleep 100
}

for m in xen-evtchn xen-gntdev xen-privcmd xenfs; do
	insmod /lib/modules/$m.ko || echo "insmod $m failed"
done
insmod /lib/modules/xen-gntalloc.ko limit=65536
mount -t xenfs xenfs /proc/xen
xenstored --pid-file=/var/run/xenstored.pid
i=0
while [ ! -S /var/run/xenstored/socket ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
xen-init-dom0 >/dev/null
xenconsoled --pid-file=/var/run/xenconsoled.pid --log=guest --log-dir=$CONS
echo "VRDMA-XEN-UP (uptime $(up)s) suite=$SUITE xen-platform-in-build=$XENPLAT"

# ---- vrdmad ----
export VRDMA_RUN_DIR=/run/vrdma
[ "$XENPLAT" = 1 ] && export VRDMA_PLATFORM=xen || export VRDMA_PLATFORM=host
# Hook for the cluster rig (scripts/cluster): brings up the NIC and rxe0,
# sets VRDMA_NODE and VRDMAD_ARGS (-a ADDR).
[ -r /vrdma/pre-vrdmad.sh ] && . /vrdma/pre-vrdmad.sh
# --attach all: every domU gets device 0 when xl creates it (docs/xen.md,
# "The xl workflow"); only second devices are attached by hand.
ATTACH=
[ "$XENPLAT" = 1 ] && ATTACH="--attach all"
# shellcheck disable=SC2086
vrdmad -f -S $VRDMA_RUN_DIR -n ${VRDMA_NODE:-xen-node} $ATTACH ${VRDMAD_ARGS:-} >$VLOG 2>&1 &
VPID=$!
ctl() { timeout 10 vrdmactl -S $VRDMA_RUN_DIR "$@"; }
i=0
until ctl ping 2>/dev/null | grep -q pong; do
	i=$((i + 1))
	if [ $i -ge 100 ] || ! kill -0 $VPID 2>/dev/null; then
		vt_fail vrdmad-up "platform $VRDMA_PLATFORM"
		finish
	fi
	sleep 0.2
done
vt_pass vrdmad-up

# ---- guest network (docs/xen.md, "Guest network") ----
# netback + bridge xenbr0; every domU gets a vif on it (the rig's
# /etc/xen/scripts/vif-bridge adds it) and configures PREFIX.<domid>/LEN
# on its eth0 (vrdma.net= on its command line); dom0 is PREFIX.254.  The
# cluster hook sets VRDMA_GNET (10.78.<node>/16) and VRDMA_GNET_UPLINK
# (the node's second NIC, bridged too: domUs of both nodes on one LAN).
GNET=${VRDMA_GNET:-10.77.0/24}
for m in $(cat /vrdma/net-modules.list); do
	insmod /lib/modules/$m || echo "insmod $m failed"
done
# 00:16:3e (Xen's OUI):<2nd octet>:<3rd octet>:<fe for the bridge, domU #>
GMAC=$(echo "${GNET%/*}" | awk -F. '{ printf "00:16:3e:%02x:%02x", $2, $3 }')
if brctl addbr xenbr0; then
	echo 0 >/sys/class/net/xenbr0/bridge/forward_delay
	ip link set xenbr0 address $GMAC:fe
	if [ -n "${VRDMA_GNET_UPLINK:-}" ]; then
		ip link set "$VRDMA_GNET_UPLINK" up
		brctl addif xenbr0 "$VRDMA_GNET_UPLINK"
	fi
	ip addr add "${GNET%/*}.254/${GNET#*/}" dev xenbr0
	ip link set xenbr0 up
	GBR=xenbr0
else
	vt_fail gnet-bridge "no xenbr0: the domUs get no network"
	GBR=
fi

# ---- the domUs (check: a third one plays the hostile guest) ----
DOMUS="1 2"
DOMU_MEM=256
[ "$SUITE" = check ] && [ "$XENPLAT" = 1 ] && DOMUS="1 2 3"
# prio: every weighted guest is a domain of its own (one device each)
[ "$SUITE" = prio ] && [ "$XENPLAT" = 1 ] && DOMUS="1 2 3 4 5 6 7 8" DOMU_MEM=160
# tsc_mode native: perftest calibrates rdtsc against gettimeofday (its
# r^2 >= 0.9 check); Xen's emulated rdtsc under TCG fails that check and
# perftest refuses to print a bandwidth report.  The domU kernel's clock is
# the tsc clocksource too: the xen one parts from rdtsc by tens of ms now
# and then under TCG (7 of 30 calibrations failed, on tsc 0 of 190), and
# tsc=reliable keeps the watchdog from switching back.  For the same reason the
# domUs of check and verbs share CPU 1 and leave CPU 0 to dom0, so a
# calibrating domU is not preempted by dom0's work (vrdmad, the suite).
DOMU_CPUS=
case $SUITE in
check|verbs)
	DOMU_CPUS='cpus = "1"'
	xl vcpu-pin Domain-0 all 0 >/dev/null 2>&1 || echo "dom0 not pinned to CPU 0"
	;;
esac
for n in $DOMUS; do
	vif=
	[ -n "$GBR" ] && vif="vif = [ 'bridge=$GBR,mac=$GMAC:$(printf %02x $n)' ]"
	cat >/etc/xen/domu$n.cfg <<CFG
name = "domu$n"
type = "pv"
kernel = "/guest/vmlinux"
ramdisk = "/guest/domu.cpio.gz"
extra = "console=hvc0 loglevel=4 clocksource=tsc tsc=reliable vrdma.net=$GNET"
$vif
memory = $DOMU_MEM
vcpus = 1
$DOMU_CPUS
tsc_mode = "native"
on_poweroff = "destroy"
on_crash = "destroy"
CFG
	if ! timeout 120 xl create -p /etc/xen/domu$n.cfg; then
		vt_fail domu$n-create
		finish
	fi
done
# auto_attached DOMID: device 0's backend dir there within 10 s, and
# vrdmad says it attached it (not a leftover).
auto_attached() {
	_i=0
	until xenstore-exists /local/domain/0/backend/vrdma/$1/0; do
		_i=$((_i + 1))
		[ $_i -ge 50 ] && { echo "dom$1: no device 0 after 10 s"; return 1; }
		sleep 0.2
	done
	ctl attach-policy | grep -q "^domain $1 name=.* attached$" ||
		{ ctl attach-policy; return 1; }
}
DIDS=
for n in $DOMUS; do
	d=$(xl domid domu$n)
	eval D$n=$d
	DIDS="$DIDS $d"
	echo "domu$n=dom$d"
	# No vrdmactl attach: vrdmad (--attach all) saw xenstore introduce the
	# domain and made device 0's nodes; paused, the guest has not looked yet.
	[ "$XENPLAT" = 1 ] && vt_check autoattach-domu$n auto_attached $d
	xl unpause domu$n
done
for d in $DIDS; do
	i=0
	until xenstore-read /local/domain/$d/data/agent >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -ge 300 ]; then
			vt_fail domu-up-dom$d "no agent within 60 s"
			finish
		fi
		sleep 0.2
	done
done
echo "VRDMA-DOMUS-UP (uptime $(up)s)"

if [ "$XENPLAT" != 1 ] && [ "$SUITE" != smoke ]; then
	# a build without libxen-dev cannot pass the Xen suites: say so, loudly
	vt_fail "$SUITE" "this build has no Xen platform (platform/xen_*.c; install libxen-dev)"
	SUITE=smoke
fi
. /vrdma/suite-$SUITE.sh
finish
