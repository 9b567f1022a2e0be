# SPDX-License-Identifier: MIT
# Suite "xcluster" (make demo-cluster, the README's main job; sourced by the
# Xen rig's dom0 /init on each node of the Xen variant after its domUs are
# up): native ib_write_bw between the two dom0s for reference, then
# suite-demo.sh's vrdma-bw --verify size sweep from domu1 on node a to
# domu1 on node b, through each dom0's vrdmad and rxe0; node a prints the
# table in perftest's columns.
# shellcheck disable=SC2034  # the settings are read by suite-demo.sh
. /vrdma/cl-lib.sh
. /vrdma/xen-pair.sh

DEMO_SPECS="4096:300 65536:300 1048576:40"
DEMO_WHAT="PV domU on node a -> dom0 vrdmad -> rxe0 ... rxe0 -> dom0 vrdmad -> PV domU on node b"
DEMO_NATIVE=
if pt_pair write_bw -s 65536 -n 300; then
	vt_pass xc-ib_write_bw-$NODE
	[ "$NODE" = a ] && DEMO_NATIVE="(native ib_write_bw between the dom0s, same boot: 65536 bytes $(pt_row | awk '{ print $4 }') MB/sec average)"
else
	vt_fail xc-ib_write_bw-$NODE
fi
. /vrdma/suite-demo.sh
echo "census on $NODE: $(ctl census)"
vt_check xc-daemon-alive-$NODE ctl ping
