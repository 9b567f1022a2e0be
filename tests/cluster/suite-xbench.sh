# SPDX-License-Identifier: MIT
# Suite "xbench" (make bench-cluster; sourced by the Xen rig's dom0
# /init on each node after its domUs are up): suite-bench.sh's table in one
# boot, Debian's perftest natively between the two dom0s' rxe0, then the
# same binaries through vrdma-run between domu1 on node a and domu1 on
# node b (PV domUs, through each dom0's vrdmad and rxe0), and vrdma-bw /
# vrdma-lat beside them, and the latency budget per hop against a raw
# event-channel ping-pong between domu1 and dom0.  Fewer iterations than the plain variant: Xen PV
# under TCG with one vCPU moves a few MiB/s.
# shellcheck disable=SC2034  # the settings are read by suite-bench.sh
. /vrdma/cl-lib.sh

BW_SPECS="8:200 4096:200 65536:200 1048576:20"
LAT_SPEC="8:200"
UCX_SPECS="8:100 4096:100 65536:20 1048576:5"
BENCH_NATIVE="perftest in the dom0s"
BENCH_GUESTS="PV domU -> dom0 vrdmad -> rxe0"

. /vrdma/xen-pair.sh

# The raw floor of the guest <-> dom0 hop (issue 11): event-channel
# round trips between domu1 and this dom0 over one grant-shared page, both
# sides sleeping in poll() as vrdmad and a 1-vCPU guest do.  Each node
# measures its own; b hands its figure to a.
raw_ping_dom0 rawping && vt_pass bench-rawping-$NODE || vt_fail bench-rawping-$NODE
RAWPING=$RAW_RTT
# (each side's ping may take up to 210 s: wait as long)
if [ "$NODE" = b ]; then
	cl_tell "rawping ${RAWPING:--}" 240
else
	cl_await rawping 240 && RAWPING_B=${CL_MSG#rawping } || RAWPING_B=-
fi

. /vrdma/suite-bench.sh

# Where an 8-byte message's one-way time goes (perftest's t_typical is one
# way): the native figure is device + wire + remote device between the
# dom0s; each end adds one guest <-> dom0 hop (half a raw round trip);
# the rest is vrdmad on both nodes and the guest library.
if [ "$NODE" = a ]; then
	echo "VRDMA-SHOW-BEGIN"
	awk -v ea="${RAWPING:--}" -v eb="${RAWPING_B:--}" '
	$1 == "send_lat" && $3 == "native" { nat = $4 }
	$1 == "send_lat" && $3 == "vrdma" { vr = $4 }
	END {
		print "== 8-byte one-way latency budget (us, typical), this boot"
		if (nat == "" || nat == "-" || vr == "" || vr == "-" || ea == "-" || eb == "-") {
			print " (a figure is missing: native " nat ", vrdma " vr ", raw ping a " ea ", b " eb ")"
			exit
		}
		oa = ea / 2; ob = eb / 2; rest = vr - nat - oa - ob
		printf " %-58s %10.1f\n", "vrdma perftest send_lat, domU a -> domU b", vr
		printf " %-58s %10.1f\n", "  native perftest between the dom0s (device, wire, device)", nat
		printf " %-58s %10.1f\n", "  domU a -> dom0 a event channel (raw round trip " ea " / 2)", oa
		printf " %-58s %10.1f\n", "  dom0 b -> domU b event channel (raw round trip " eb " / 2)", ob
		printf " %-58s %10.1f\n", "  the rest: vrdmad on both nodes, libvrdma, verbs shim", rest
	}' $res
	echo "VRDMA-SHOW-END"
fi
echo "rdma lines of vrdmad's log on $NODE:"
grep 'rdma:' $VLOG | head -n 10
