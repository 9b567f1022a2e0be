#!/bin/bash
# SPDX-License-Identifier: MIT
# make check-cluster* / demo-cluster* / bench-cluster* / smoke-cluster: fetch
# the kernel (the Xen rig's cache, reused), build the images from
# BUILD_DIR, boot the two nodes once running SUITE, and show what node a
# framed for showing (demo: the bw table; bench: native beside vrdma;
# prio: shares beside targets, high class solo vs loaded).
# Usage: rig.sh SUITE BUILD_DIR
# (SUITE xen|xcheck|xbench|xlat: the full Xen variant, suites xcluster,
# xcheck, xbench, xlat in tests/cluster)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
SUITE=${1:?usage: rig.sh SUITE BUILD_DIR}
B=$(cd "${2:?usage: rig.sh SUITE BUILD_DIR}" && pwd)

"$HERE/../xen/fetch.sh"
cl_host_pkgs
case $SUITE in
xen|xcheck|xbench|xlat)
	# The full variant: Xen machines, guests in PV domUs (xen: suite
	# xcluster).
	[ "$SUITE" = xen ] && SUITE=xcluster
	# xbench: perftest in two CPU layouts and two modes, twice, then
	# ucx_perftest and vrdma-bw, both ways, on nodes of two CPUs each
	# (bench-matrix.sh): ~25 min; xcheck: 5 min on a quiet 2-core
	# machine, twice that beside other work
	[ "$SUITE" = xbench ] && export TIMEOUT=${TIMEOUT:-2700} SMP=${SMP:-2}
	# xlat: one traced ib_send_lat and two native ones, ~6 min
	[ "$SUITE" = xlat ] && export TIMEOUT=${TIMEOUT:-1200} SMP=${SMP:-2}
	[ "$SUITE" = xcheck ] && export TIMEOUT=${TIMEOUT:-900}
	# Speed and loss: the host UDP receive buffer is the wire (as below).
	export RMEM=${RMEM-4194304}
	"$HERE/xen-build.sh" "$B" "$B/xcluster"
	rc=0
	LOGDIR=${LOGDIR:-$B/xcluster/logs} "$HERE/xen-run.sh" "$B/xcluster" "$SUITE" || rc=$?
	sed -n '/VRDMA-SHOW-BEGIN/,/VRDMA-SHOW-END/{/VRDMA-SHOW-/d;s/^\[ *[0-9.]*s\] //;p}' \
		"${LOGDIR:-$B/xcluster/logs}/$SUITE-a.log"
	exit $rc
	;;
esac
"$HERE/build.sh" "$B" "$B/cluster"
# Speed (not correctness) needs a bigger host UDP receive buffer; run.sh
# puts the old value back.  RMEM= (empty) leaves the host alone.
case $SUITE in
# check: node b pins a guest's MR of 4 GiB + 8 KiB (itest_bigmr): 6 GiB a
# node (QEMU takes host memory only for the pages a node touches: ~4.5
# GiB on b, little on a); making, pinning and freeing 4 GiB under TCG
# take minutes: a boot's limit of 25 min
check) export MEM=${MEM:-6144} TIMEOUT=${TIMEOUT:-1500} ;;
demo) export RMEM=${RMEM-4194304} ;;
# bench: perftest and ucx_perftest both ways, then vrdma-bw
bench) export RMEM=${RMEM-4194304} TIMEOUT=${TIMEOUT:-600} ;;
# prio (make bench-prio-cluster): flooders for two windows, then two
# measured pairs solo and loaded: longer than one default boot limit
prio) export RMEM=${RMEM-4194304} TIMEOUT=${TIMEOUT:-900} MEM=${MEM:-1024} ;;
esac
rc=0
LOGDIR=${LOGDIR:-$B/cluster/logs} "$HERE/run.sh" "$SUITE" "$B/cluster" || rc=$?
sed -n '/VRDMA-SHOW-BEGIN/,/VRDMA-SHOW-END/{/VRDMA-SHOW-/d;s/^\[ *[0-9.]*s\] //;p}' \
	"${LOGDIR:-$B/cluster/logs}/$SUITE-a.log"
exit $rc
