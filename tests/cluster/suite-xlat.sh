# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Suite "xlat" (make bench-lat-budget; sourced by the Xen rig's dom0 /init
# on each node after its domUs are up): where an 8-byte round trip
# through vrdma spends its time, hop by hop, beside native's round trip
# on the same boot.  In the split layout (bench-layout.sh), Debian's
# ib_send_lat -s 8 natively between the dom0s, then the same binary and
# flags through vrdma between domu1 of each node with the latency trace
# on: the guest's stamps (VRDMA_LAT_TRACE, libvrdma(7)) and vrdmad's
# (vrdmactl trace lat), on the TSC the domU shares with its dom0.  Each
# node's stamps are compared only with each other; b hands its files to
# a, and scripts/lat-trace.sh takes the remote turnaround out of a's
# round trip, which leaves the wire (and both rxe0s) both ways.
# shellcheck disable=SC2154  # NODE, D1, PEER, GNET, T come from the /init
. /vrdma/cl-lib.sh
. /vrdma/xen-pair.sh
mx_res=$T/xlat.res
: >$mx_res
. /vrdma/bench-layout.sh

XLAT_N=${XLAT_N:-200}
XLAT_PORT=19990
mx_layout split

# The raw floor of the guest <-> dom0 hop: event-channel round trips
# over one grant-shared page (rig-lib.sh).
raw_ping_dom0 xlatping && vt_pass xlat-rawping-$NODE || vt_fail xlat-rawping-$NODE
RAWPING=$RAW_RTT

for rep in 1 2; do
	mx_one native send_lat 8 $XLAT_N split poll $rep
done
# Armed for the run and a little slack: a stamp per hop per message.
ctl trace lat $((XLAT_N * 40)) >/dev/null || vt_fail xlat-trace-arm-$NODE
PV_ENV="VRDMA_LAT_TRACE=$((XLAT_N * 20)) VRDMA_LAT_TRACE_FILE=/tmp/xlat.%p.guest"
mx_one vrdma send_lat 8 $XLAT_N split poll 1
PV_ENV=
ctl trace dump >$T/xlat.dom0 || vt_fail xlat-trace-dump-$NODE
ctl trace off >/dev/null

# The guest's file, over the guest network to this dom0 (xenbr0's .254).
# recv FILE: a listener on XLAT_PORT that writes what one sender sends
# into FILE and ends when it closes (busybox nc's -e program reads the
# connection; a plain nc -l ends the transfer at its own stdin's EOF).
recv() {
	printf '#!/bin/sh\ncat >%s\n' "$1" >$T/xlat-recv.sh
	chmod +x $T/xlat-recv.sh
	busybox nc -l -p $XLAT_PORT -e $T/xlat-recv.sh </dev/null 2>/dev/null &
	xl_pid=$!
}
recv $T/xlat.guest
# (a refused connect sent nothing: the sender tries again until the
# listener is up, 20 times at most)
xl_n=$(du_run $D1 "wc -l /tmp/xlat.*.guest; i=0; until cat /tmp/xlat.*.guest | nc -w 10 ${GNET%/*}.254 $XLAT_PORT; do i=\$((i + 1)); [ \$i -lt 20 ] || exit 1; sleep 0.5; done")
du_wait $D1 $xl_n 60
echo "xlat: the guest's trace files (rc $DU_RC): $(du_out $D1 $xl_n | tr '\n' ' ')"
wait_exit $xl_pid 30 >/dev/null
echo "xlat on $NODE: $(grep -c '^vlt guest' $T/xlat.guest) guest stamps, $(grep -c '^vlt dom0' $T/xlat.dom0) dom0 stamps"
if grep -q '^vlt guest' $T/xlat.guest && grep -q '^vlt dom0' $T/xlat.dom0; then
	vt_pass xlat-traced-$NODE
else
	vt_fail xlat-traced-$NODE
fi

# b's two files to a, over the fabric network between the dom0s.
if [ "$NODE" = a ]; then
	recv $T/xlat.remote
	cl_tell xlat-send 60
	wait_exit $xl_pid 60 >/dev/null
	cl_await xlat-sent 60
else
	i=0
	cl_await xlat-send 60 &&
		until cat $T/xlat.guest $T/xlat.dom0 | busybox nc -w 5 "$PEER" $XLAT_PORT; do
			i=$((i + 1))
			[ $i -lt 20 ] || break
			sleep 0.5
		done
	cl_tell xlat-sent 60
	return 0
fi

echo "VRDMA-SHOW-BEGIN"
echo "== 8-byte round trip through vrdma, hop by hop (us, medians of $XLAT_N), this boot"
echo "== domu1 of node a -> vrdmad a -> rxe0 ~ rxe0 -> vrdmad b -> domu1 of node b, and back;"
echo "== split layout: dom0 on CPU 0, domu1 (or the native perftest) on CPU 1"
mx_conditions
awk '$5 == "native" && $7 != "-" { s += $7; n++ }
     $5 == "vrdma" && $7 != "-" { v = $7 }
     END {
	printf "native ib_send_lat between the dom0s, one way (t_typical): %s us (%d runs)\n", n ? sprintf("%.1f", s / n) : "-", n
	printf "vrdma ib_send_lat between the domUs, one way (t_typical):  %s us\n", v == "" ? "-" : v
     }' $mx_res
echo "raw event-channel round trip domu1 <-> dom0 on a: ${RAWPING:--} us"
if /vrdma/lat-trace.sh $T/xlat.guest $T/xlat.dom0 -- $T/xlat.remote; then
	vt_pass xlat-budget
else
	vt_fail xlat-budget
fi
echo "VRDMA-SHOW-END"
