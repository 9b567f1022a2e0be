# SPDX-License-Identifier: MIT
# Suite "xbench" (make bench-xen-cluster; sourced by the Xen rig's dom0
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

# vr_pair PROG SERVICE ARGS... as cl-lib.sh's, the programs in domu1 ($D1):
# b runs "PROG -p SERVICE ARGS", a runs it with b's address as the node;
# VR_OUT is a's output (its last 3000 bytes).
vr_pair() {
	_prog=$1
	_svc=$2
	shift 2
	if [ "$NODE" = b ]; then
		_n=$(du_run $D1 "timeout 150 $_prog -p $_svc $*" "listening on service")
		if ! du_ready $D1 $_n 60; then
			cl_tell "vr-$_svc-listening-failed" 60
			du_out $D1 $_n | tail -n 5
			return 1
		fi
		cl_tell vr-$_svc-listening 60 || return 1
		du_wait $D1 $_n 160
		_rc=$DU_RC
		cl_tell "vr-$_svc-served $_rc" 60
		[ "$_rc" = 0 ] || du_out $D1 $_n | tail -n 5
		[ "$_rc" = 0 ]
		return
	fi
	cl_await vr-$_svc-listening 120 || return 1
	_n=$(du_run $D1 "timeout 150 $_prog -p $_svc $* $PEER")
	du_wait $D1 $_n 170
	_rc=$DU_RC
	VR_OUT=$(du_out $D1 $_n)
	cl_await vr-$_svc-served 170 || return 1
	[ "$_rc" = 0 ] || echo "$VR_OUT" | tail -n 5
	[ "$_rc" = 0 ] && [ "${CL_MSG#* }" = 0 ]
}

. /vrdma/suite-bench.sh
echo "rdma lines of vrdmad's log on $NODE:"
grep 'rdma:' $VLOG | head -n 10
