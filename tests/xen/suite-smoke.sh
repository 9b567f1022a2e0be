# SPDX-License-Identifier: MIT
# Suite "smoke" (sourced by dom0's /init): the rig itself, no vrdma data
# path.  vrdmad answers in dom0, both domUs run the image's programs (all
# their libraries are there), and a raw grant-shared ring streams between
# the two domUs (bench/xen_rawcopy.c: gntshr, gnttab, event channels,
# xenstore permissions).  Used while a build has no Xen platform.

vt_check smoke-census ctl census
for d in $D1 $D2; do
	vt_check smoke-programs-dom$d du_sh $d 60 \
		'vrdma-bw --help >/dev/null && vrdma-lat --help >/dev/null &&
		 itest_hostile list && vrdma-xen-rawcopy -h 2>&1 | grep -q Usage &&
		 itest_guest 2>&1 | grep -q usage'
done
n1=$(du_run $D1 "vrdma-xen-rawcopy -T 60 -s 65536 -n 200 -V server $D2" "sharing")
if du_ready $D1 $n1 60; then
	du_sh $D2 90 "vrdma-xen-rawcopy -T 60 -s 65536 -n 200 -V client $D1"
	crc=$?
	du_wait $D1 $n1 90
	vt_check smoke-rawcopy-client [ $crc = 0 ]
	vt_check smoke-rawcopy-server [ "$DU_RC" = 0 ]
else
	vt_fail smoke-rawcopy-server "did not share its ring"
fi
