# SPDX-License-Identifier: MIT
# Suite "bench" (make bench-cluster-host): in one boot, native perftest between
# the nodes' rxe0 (ib_write_bw 64 KiB and 1 MiB, ib_send_lat 8 B), then
# vrdma-bw / vrdma-lat between guest processes on the two nodes through
# vrdmad, same sizes.  Node a prints both and the ratios.  Under TCG the
# absolute numbers mean little; the ratios within one boot do.

res=$T/bench.res
: >$res
# SIZE:ITERS; suite-xbench.sh (Xen nodes, slower) sets its own.
BW_SPECS=${BW_SPECS:-"65536:2000 1048576:100"}
LAT_SPEC=${LAT_SPEC:-8:1000}

# native
for spec in $BW_SPECS; do
	size=${spec%:*}
	v=-
	if pt_pair write_bw -s $size -n ${spec#*:}; then
		vt_pass bench-ib_write_bw-$size-$NODE
		[ "$NODE" = a ] && v=$(pt_row | awk '{ print $4 }')
	else
		vt_fail bench-ib_write_bw-$size-$NODE
	fi
	echo "bw $size native $v" >>$res
done
size=${LAT_SPEC%:*}
v=-
if pt_pair send_lat -s $size -n ${LAT_SPEC#*:}; then
	vt_pass bench-ib_send_lat-$size-$NODE
	[ "$NODE" = a ] && v=$(pt_row | awk '{ print $5 }')
else
	vt_fail bench-ib_send_lat-$size-$NODE
fi
echo "lat $size native $v" >>$res

# vrdma, guests on the two nodes
if need_remote bench-remote-path-$NODE; then
	for spec in $BW_SPECS; do
		size=${spec%:*}
		v=-
		if vr_pair vrdma-bw bench-$size -s $size -n ${spec#*:} -T 60 --csv; then
			vt_pass bench-vrdma-bw-$size-$NODE
			[ "$NODE" = a ] && v=$(echo "$VR_OUT" | grep '^bw,' | tail -n 1 | cut -d, -f6)
		else
			vt_fail bench-vrdma-bw-$size-$NODE
		fi
		echo "bw $size vrdma $v" >>$res
	done
	size=${LAT_SPEC%:*}
	v=-
	if vr_pair vrdma-lat bench-lat -m send -s $size -n ${LAT_SPEC#*:} -T 60 --csv; then
		vt_pass bench-vrdma-lat-$size-$NODE
		[ "$NODE" = a ] && v=$(echo "$VR_OUT" | grep '^lat,' | tail -n 1 | cut -d, -f7)
	else
		vt_fail bench-vrdma-lat-$size-$NODE
	fi
	echo "lat $size vrdma $v" >>$res
fi

if [ "$NODE" = a ]; then
	echo "VRDMA-SHOW-BEGIN"
	echo "== node a -> node b over Soft-RoCE (rxe0), QEMU TCG: compare within this boot, not absolutes"
	echo "== native: ${BENCH_NATIVE:-node processes}; vrdma: ${BENCH_GUESTS:-guest processes -> vrdmad -> rxe0}"
	echo " test        #bytes    native (perftest)    vrdma (guest->vrdmad->rxe)    vrdma vs native"
	awk '
	{ v[$1 " " $2 " " $3] = $4; if (!seen[$1 " " $2]++) order[n++] = $1 " " $2 }
	END {
		for (i = 0; i < n; i++) {
			split(order[i], k, " ")
			nat = v[order[i] " native"]; vr = v[order[i] " vrdma"]
			if (nat == "") nat = "-"; if (vr == "") vr = "-"
			if (k[1] == "bw") {
				r = (nat != "-" && vr != "-" && nat + 0 > 0) ? sprintf("ratio %.2f", vr / nat) : "-"
				printf " write_bw    %-8s  %-10s MiB/s     %-10s MiB/s              %s\n", k[2], nat, vr, r
			} else {
				r = "-"
				if (nat != "-" && vr != "-" && nat + 0 > 0)
					r = sprintf("%+.2f us (x%.2f)", vr - nat, vr / nat)
				printf " send_lat    %-8s  %-10s us typ    %-10s us typ                %s\n", k[2], nat, vr, r
			}
		}
	}' $res
	echo "VRDMA-SHOW-END"
fi
