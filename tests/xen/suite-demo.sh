# SPDX-License-Identifier: MIT
# Suite "demo" (make demo): the main job on Xen.  vrdma-bw RDMA WRITE with
# --verify from a client in domu2 to a server in domu1 through vrdmad in
# dom0, a few sizes up to 4 MiB; prints the perftest table.

rows=/tmp/demo-rows.csv
: >$rows
for spec in 4096:400 65536:300 262144:100 1048576:40 4194304:10; do
	size=${spec%:*}
	if bw_pair demo-$size $size ${spec#*:} --verify &&
	   echo "$BW_OUT" | grep -q 'verify: OK'; then
		vt_pass demo-bw-$size
		echo "$BW_ROW" >>$rows
	else
		vt_fail demo-bw-$size
		echo "$BW_OUT" | tail -n 5
	fi
done
echo "VRDMA-SHOW-BEGIN"
echo "== vrdma-bw write, domu2 -> domu1 through vrdmad in dom0 (Xen 4.17 PV, QEMU TCG)"
echo "---------------------------------------------------------------------------------------"
echo " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
awk -F, '{ printf " %-7s    %-10s       %-7.2f            %-7.2f\t\t   %-7.6f\n", $3, $4, $5, $6, $7 }' $rows
echo "---------------------------------------------------------------------------------------"
[ $VT_FAIL = 0 ] && echo "verify: OK (every size, every byte checked by the server)"
echo "VRDMA-SHOW-END"
