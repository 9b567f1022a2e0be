# SPDX-License-Identifier: MIT
# Suite "xbench" (make bench-cluster; sourced by the Xen rig's dom0
# /init on each node after its domUs are up): suite-bench.sh's table in one
# boot, native perftest between the two dom0s' rxe0, then vrdma-bw /
# vrdma-lat between domu1 on node a and domu1 on node b (PV domUs, through
# each dom0's vrdmad and rxe0).  Fewer iterations than the plain variant:
# Xen PV under TCG with one vCPU moves a few MiB/s.
# shellcheck disable=SC2034  # the settings are read by suite-bench.sh
. /vrdma/cl-lib.sh

BW_SPECS="65536:300 1048576:40"
LAT_SPEC="8:200"
BENCH_NATIVE="perftest in the dom0s"
BENCH_GUESTS="PV domU -> dom0 vrdmad -> rxe0"

. /vrdma/xen-pair.sh
. /vrdma/suite-bench.sh
echo "rdma lines of vrdmad's log on $NODE:"
grep 'rdma:' $VLOG | head -n 10
