# SPDX-License-Identifier: MIT
# Suite "smoke" (sourced by /init on both nodes): the rig itself.  rxe0 is
# up on both nodes (checked by /init), native perftest runs between them,
# vrdmad answers on both; with the verbs path built, one verified vrdma-bw
# pair crosses the fabric too.

vt_check smoke-census-$NODE ctl census
vt_check smoke-ib_write_bw-$NODE pt_pair write_bw -s 65536 -n 500
vt_check smoke-ib_send_lat-$NODE pt_pair send_lat -s 8 -n 200
if [ "$REMOTE" = 1 ]; then
	if vr_pair vrdma-bw smoke -s 65536 -n 200 --timeout 60 --verify; then
		vt_pass smoke-vrdma-bw-$NODE
	else
		vt_fail smoke-vrdma-bw-$NODE
	fi
else
	vt_skip smoke-vrdma-bw-$NODE "vrdmad has no -a ADDR yet"
fi
vt_check smoke-clean-$NODE leak_free
