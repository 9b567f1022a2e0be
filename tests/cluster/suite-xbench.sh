# SPDX-License-Identifier: MIT
# Suite "xbench" (make bench-cluster; sourced by the Xen rig's dom0
# /init on each node after its domUs are up), in one boot: Debian's
# perftest natively between the two dom0s' rxe0 and the same binaries
# through vrdma-run between domu1 on node a and domu1 on node b, in two
# CPU layouts and in polling and event mode (bench-matrix.sh); then, in
# the split layout, ucx_perftest both ways and vrdma-bw / vrdma-lat
# (suite-bench.sh's table); where the time of one message goes, hop by
# hop, is make bench-lat-budget's (suite-xlat.sh).  Fewer iterations than
# the plain variant: Xen PV under TCG moves a few MiB/s.
# shellcheck disable=SC2034  # the settings are read by suite-bench.sh
. /vrdma/cl-lib.sh

BW_SPECS="8:200 4096:200 65536:200 1048576:20"
LAT_SPEC="8:200"
UCX_SPECS="8:100 4096:100 65536:20 1048576:5"
BENCH_NATIVE="perftest in the dom0s"
BENCH_GUESTS="PV domU -> dom0 vrdmad -> rxe0"

. /vrdma/xen-pair.sh

. /vrdma/bench-matrix.sh
BENCH_PERFTEST=0
BENCH_LAYOUT="split: dom0 on CPU 0; domu1, or the native program, on CPU 1 (2-CPU nodes)"
. /vrdma/suite-bench.sh

echo "rdma lines of vrdmad's log on $NODE:"
grep 'rdma:' $VLOG | head -n 10
