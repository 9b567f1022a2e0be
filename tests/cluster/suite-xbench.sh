# SPDX-License-Identifier: MIT
# Suite "xbench" (make bench-cluster; sourced by the Xen rig's dom0
# /init on each node after its domUs are up): suite-bench.sh's table in one
# boot, Debian's perftest natively between the two dom0s' rxe0, then the
# same binaries through vrdma-run between domu1 on node a and domu1 on
# node b (PV domUs, through each dom0's vrdmad and rxe0), and vrdma-bw /
# vrdma-lat beside them.  Fewer iterations than the plain variant: Xen PV
# under TCG with one vCPU moves a few MiB/s.
# shellcheck disable=SC2034  # the settings are read by suite-bench.sh
. /vrdma/cl-lib.sh

BW_SPECS="8:200 4096:200 65536:200 1048576:20"
LAT_SPEC="8:200"
BENCH_NATIVE="perftest in the dom0s"
BENCH_GUESTS="PV domU -> dom0 vrdmad -> rxe0"

. /vrdma/xen-pair.sh
. /vrdma/suite-bench.sh
echo "rdma lines of vrdmad's log on $NODE:"
grep 'rdma:' $VLOG | head -n 10
