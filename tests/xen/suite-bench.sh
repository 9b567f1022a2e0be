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

# Latency (issue 11): vrdma-lat 8 B SEND domu2 <-> domu1 through vrdmad,
# beside raw event-channel round trips over one grant-shared page between
# domu1 and dom0 (the hop vrdma takes twice per message) and between the
# two domUs (no dom0 on the path).  Typical figures, microseconds.
lat=- rawd0=- rawdu=-
_ns=$(du_run $D1 "timeout 150 vrdma-lat -p bench-lat --mode send -s 8 -n 200 --timeout 60 --csv" \
	"listening on service")
if du_ready $D1 $_ns 60; then
	_nc=$(du_run $D2 "timeout 150 vrdma-lat -p bench-lat --mode send -s 8 -n 200 --timeout 60 --csv local")
	du_wait $D2 $_nc 170
	_crc=$DU_RC
	du_wait $D1 $_ns 60
	_o=$(du_out $D2 $_nc)
	lat=$(echo "$_o" | grep '^lat,' | tail -n 1 | cut -d, -f7)
	[ "$_crc" = 0 ] && [ "$DU_RC" = 0 ] && [ -n "$lat" ] || { lat=-; echo "$_o" | tail -n 5; }
fi
[ "$lat" != - ] && vt_pass bench-lat-8 || vt_fail bench-lat-8
raw_ping_dom0 rawping && vt_pass bench-rawping-dom0 || vt_fail bench-rawping-dom0
rawd0=$RAW_RTT
_ns=$(du_run $D1 "vrdma-xen-rawcopy -T 60 -P -n 200 -k rawping2 server $D2" sharing)
if du_ready $D1 $_ns 60; then
	_nc=$(du_run $D2 "vrdma-xen-rawcopy -T 60 -k rawping2 client $D1")
	du_wait $D2 $_nc 90
	rawdu=$(du_out $D2 $_nc | sed -n 's/^rawping,[0-9]*,\([0-9.]*\),.*/\1/p')
	du_wait $D1 $_ns 60
fi
[ -n "$rawdu" ] && [ "$rawdu" != - ] && vt_pass bench-rawping-domu || { rawdu=-; vt_fail bench-rawping-domu; }

echo "VRDMA-SHOW-BEGIN"
echo "== 8-byte SEND one-way latency, domu2 -> dom0 vrdmad -> domu1 (us, typical; TCG)"
awk -v l="$lat" -v d0="$rawd0" -v du="$rawdu" 'BEGIN {
	printf " %-60s %10s\n", "vrdma-lat --mode send -s 8", l
	printf " %-60s %10s\n", "raw event-channel round trip domu1 <-> dom0 (one way: half)", d0
	printf " %-60s %10s\n", "raw event-channel round trip domu1 <-> domu2 (one way: half)", du
	if (l != "-" && d0 != "-")
		printf " %-60s %10.1f\n", "vrdma one way minus two raw guest<->dom0 hops (vrdmad, libvrdma)", l - d0
}'
echo "== domu2 -> domu1, MiB/s (Xen 4.17 PV under QEMU TCG: compare ratios, not absolutes)"
echo " #bytes     #iters   vrdma-bw (dom0 copy)   raw grant ring (2 copies)   vrdma/raw"
awk '{ r = ($3 != "-" && $4 != "-" && $4 > 0) ? sprintf("%.2f", $3 / $4) : "-";
       printf " %-9s  %-7s  %-21s  %-26s  %s\n", $1, $2, $3, $4, r }' $res
echo "VRDMA-SHOW-END"
