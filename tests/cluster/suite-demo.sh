# SPDX-License-Identifier: MIT
# Suite "demo" (make demo-cluster-host): vrdma-bw RDMA WRITE with --verify
# from a guest process on node a to one on node b, each through its node's
# vrdmad and rxe0 between them; node a prints the perftest table.
# suite-xcluster.sh (make demo-cluster) runs it between domUs, with its
# own DEMO_SPECS (SIZE:ITERS), DEMO_WHAT and a native perftest row.

rows=$T/demo-rows.csv
: >$rows
if need_remote demo-remote-path-$NODE; then
	for spec in ${DEMO_SPECS:-4096:400 65536:300 1048576:40 4194304:10}; do
		size=${spec%:*}
		if vr_pair vrdma-bw demo-$size -s $size -n ${spec#*:} --timeout 60 --csv --verify; then
			vt_pass demo-bw-$size-$NODE
			[ "$NODE" = a ] && echo "$VR_OUT" | grep '^bw,' | tail -n 1 >>$rows
		else
			vt_fail demo-bw-$size-$NODE
		fi
	done
fi
if [ "$NODE" = a ]; then
	echo "VRDMA-SHOW-BEGIN"
	echo "== vrdma-bw write, ${DEMO_WHAT:-guest on node a -> guest on node b, vrdmad + Soft-RoCE on each node} (QEMU TCG)"
	echo "---------------------------------------------------------------------------------------"
	echo " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
	awk -F, '{ printf " %-7s    %-10s       %-7.2f            %-7.2f\t\t   %-7.6f\n", $3, $4, $5, $6, $7 }' $rows
	echo "---------------------------------------------------------------------------------------"
	[ -n "${DEMO_NATIVE:-}" ] && echo "$DEMO_NATIVE"
	[ $VT_FAIL = 0 ] && [ -s $rows ] && echo "verify: OK (every size, every byte checked by the server)"
	echo "VRDMA-SHOW-END"
fi
