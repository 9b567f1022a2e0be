# SPDX-License-Identifier: MIT
# Suite "xcluster" (sourced by the Xen rig's dom0 /init on each node of the
# full variant, after its domUs are up; D1 is domu1): native perftest
# between the two dom0s, then vrdma-bw --verify from domu1 on node a to
# domu1 on node b, through each dom0's vrdmad and rxe0.
. /vrdma/cl-lib.sh

vt_check xc-ib_write_bw-$NODE pt_pair write_bw -s 65536 -n 500
vt_check xc-ib_send_lat-$NODE pt_pair send_lat -s 8 -n 200
cmd="timeout 150 vrdma-bw -p xc -s 65536 -n 300 -T 60 --verify"
if [ "$NODE" = b ]; then
	ns=$(du_run $D1 "$cmd" "listening on service")
	if du_ready $D1 $ns 60; then
		cl_tell xc-listening 60
		du_wait $D1 $ns 200
		vt_check xc-vrdma-bw-server-$NODE [ "$DU_RC" = 0 ]
		cl_tell "xc-served $DU_RC" 60
	else
		vt_fail xc-vrdma-bw-server-$NODE "$(du_out $D1 $ns | tail -n 5)"
		cl_tell xc-failed 60
	fi
else
	if cl_await xc-listening 200; then
		du_sh $D1 180 "$cmd $PEER"
		rc=$?
		du_out $D1 $(($(cat /tmp/du-seq.$D1) - 1)) | tail -n 8
		echo
		vt_check xc-vrdma-bw-client-$NODE [ $rc = 0 ]
		cl_await xc-served 200
	else
		vt_fail xc-vrdma-bw-client-$NODE "server not listening"
	fi
fi
echo "census on $NODE: $(ctl census)"
vt_check xc-daemon-alive-$NODE ctl ping
