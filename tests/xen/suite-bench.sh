# SPDX-License-Identifier: MIT
# Suite "bench" (make bench-xen): in one boot, vrdma-bw (domu2 -> domu1
# through vrdmad's single copy in dom0) beside the raw limit of a
# grant-shared ring between the same two domains (vrdma-xen-rawcopy: two
# copies, no dom0 on the path).  Under TCG absolute numbers mean little;
# the ratio does.

res=/tmp/bench.res
: >$res
for spec in 65536:3000 1048576:200; do
	size=${spec%:*}
	n=${spec#*:}
	bw=-
	raw=-
	if bw_pair bench-$size $size $n; then
		bw=$(echo "$BW_ROW" | cut -d, -f6)
		vt_pass bench-bw-$size
	else
		vt_fail bench-bw-$size
		echo "$BW_OUT" | tail -n 5
	fi
	if raw_pair $size $n; then
		raw=$RAW_MIB
		vt_pass bench-rawcopy-$size
	else
		vt_fail bench-rawcopy-$size
	fi
	echo "$size $n $bw $raw" >>$res
done
echo "VRDMA-SHOW-BEGIN"
echo "== domu2 -> domu1, MiB/s (Xen 4.17 PV under QEMU TCG: compare ratios, not absolutes)"
echo " #bytes     #iters   vrdma-bw (dom0 copy)   raw grant ring (2 copies)   vrdma/raw"
awk '{ r = ($3 != "-" && $4 != "-" && $4 > 0) ? sprintf("%.2f", $3 / $4) : "-";
       printf " %-9s  %-7s  %-21s  %-26s  %s\n", $1, $2, $3, $4, r }' $res
echo "VRDMA-SHOW-END"
