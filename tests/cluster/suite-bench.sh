# SPDX-License-Identifier: MIT
# Suite "bench" (make bench-cluster-host; suite-xbench.sh runs it between
# domUs for make bench-cluster): in one boot, Debian's ib_write_bw,
# ib_read_bw and ib_send_lat, and ucx_perftest's tag_lat and tag_bw,
# natively between the nodes' rxe0, then the same binaries with the same
# flags through vrdma (vrdma-run) between guests on the two nodes, and
# vrdma-bw beside them.  Node a prints the
# table with the ratio per size.  Under TCG the absolute numbers mean
# little; the ratios within one boot do.

res=$T/bench.res
# vd_ticks: vrdmad's user + system CPU so far, in clock ticks.
vd_ticks() {
	_p=$(pidof vrdmad | cut -d' ' -f1)
	[ -n "$_p" ] && awk '{ print $14 + $15 }' /proc/$_p/stat 2>/dev/null
}
: >$res
# SIZE:ITERS; suite-xbench.sh (Xen nodes, slower) sets its own.
BW_SPECS=${BW_SPECS:-"8:2000 4096:2000 65536:1000 1048576:100"}
LAT_SPEC=${LAT_SPEC:-8:1000}

# bench_one KIND TEST SIZE ITERS PAIR: one perftest run, its figure in $res
# (bw: column 4, BW average; lat: column 5, t_typical).  perftest prints
# zeros when it could not calibrate its cycle counter (r^2 < 0.9, which a
# 1-vCPU TCG node does now and then): node a then asks b for the same pair
# again, twice at most, and a figure it never got is "-", not 0.
bench_one() {
	_v=-
	for _try in 1 2 3; do
		if $5 $2 -s $3 -n $4; then
			_ok=1
			[ "$NODE" = a ] && _v=$(pt_row | awk -v c=$([ "$2" = send_lat ] && echo 5 || echo 4) '{ print $c }')
		else
			_ok=0
		fi
		_again=0
		if [ "$NODE" = a ]; then
			echo "$PT_OUT" | grep -q 'Correlation coefficient' && [ $_try -lt 3 ] && _again=1
			cl_tell "bench-$1-$2-$3-$_try again $_again" 60
		else
			cl_await bench-$1-$2-$3-$_try 120 && [ "${CL_MSG##* }" = 1 ] && _again=1
		fi
		[ $_again = 1 ] || break
		echo "bench $1 $2 $3: perftest could not calibrate its clock (try $_try), again"
		_v=-
	done
	if [ $_ok = 1 ]; then
		vt_pass bench-$1-$2-$3-$NODE
	else
		echo "----- vrdmad on $NODE (last 12 lines)"
		tail -n 12 $VLOG
		vt_fail bench-$1-$2-$3-$NODE
	fi
	echo "$PT_OUT" | grep -q 'Correlation coefficient' && _v=-
	echo "$2 $3 $1 ${_v:--}" >>$res
}

# (suite xbench runs perftest itself, in each CPU layout and mode:
# bench-matrix.sh, and sets BENCH_PERFTEST=0)
for kind in native vrdma; do
	[ "${BENCH_PERFTEST:-1}" = 1 ] || break
	[ $kind = vrdma ] && ! need_remote bench-remote-path-$NODE && break
	[ $kind = native ] && pair=pt_pair || pair=pv_pair
	for spec in $BW_SPECS; do
		bench_one $kind write_bw ${spec%:*} ${spec#*:} $pair
		bench_one $kind read_bw ${spec%:*} ${spec#*:} $pair
	done
	bench_one $kind send_lat ${LAT_SPEC%:*} ${LAT_SPEC#*:} $pair
done

# Debian's ucx_perftest the same way (UCP tag_lat: its overall one-way
# latency; tag_bw: its overall MB/s), when the image has it.  The
# "average" columns are of the last report interval, which a run of few
# iterations can leave empty ("inf"); "overall" is the whole run's.
UCX_SPECS=${UCX_SPECS:-"8:1000 4096:1000 65536:200 1048576:10"}
ucx_one() { # KIND TEST SIZE ITERS PAIR
	_v=-
	if $5 $2 -s $3 -n $4 -w $(($4 / 10 + 1)); then
		vt_pass bench-$1-ucx_$2-$3-$NODE
		[ "$NODE" = a ] && _v=$(echo "$PT_OUT" | awk -v c=$([ $2 = tag_lat ] && echo 5 || echo 7) \
			'$1 == "Final:" && $c ~ /^[0-9.]+$/ { print $c }')
	else
		vt_fail bench-$1-ucx_$2-$3-$NODE
	fi
	echo "ucx_$2 $3 $1 ${_v:--}" >>$res
}
if [ -x /usr/bin/ucx_perftest ]; then
	for kind in native vrdma; do
		[ $kind = vrdma ] && ! need_remote bench-remote-path-$NODE && break
		[ $kind = native ] && pair=ut_pair || pair=uv_pair
		for spec in $UCX_SPECS; do
			ucx_one $kind tag_lat ${spec%:*} ${spec#*:} $pair
			ucx_one $kind tag_bw ${spec%:*} ${spec#*:} $pair
		done
	done
fi

# vrdma-bw / vrdma-lat (libvrdma directly) beside them
if need_remote bench-remote-path-$NODE; then
	for spec in $BW_SPECS; do
		size=${spec%:*}
		v=-
		if vr_pair vrdma-bw bench-$size -s $size -n ${spec#*:} --timeout 60 --csv; then
			vt_pass bench-vrdma-bw-$size-$NODE
			[ "$NODE" = a ] && v=$(echo "$VR_OUT" | grep '^bw,' | tail -n 1 | cut -d, -f6)
		else
			vt_fail bench-vrdma-bw-$size-$NODE
		fi
		echo "write_bw $size vrdmabw ${v:--}" >>$res
	done
	size=${LAT_SPEC%:*}
	v=-
	# vrdmad's share of this node's CPU during the latency run: a daemon
	# that spins takes a 1-vCPU node from the guest it waits for.
	_t0=$(vd_ticks) _w0=$(cut -d' ' -f1 /proc/uptime)
	if vr_pair vrdma-lat bench-lat --mode send -s $size -n ${LAT_SPEC#*:} --timeout 60 --csv; then
		vt_pass bench-vrdma-lat-$size-$NODE
		[ "$NODE" = a ] && v=$(echo "$VR_OUT" | grep '^lat,' | tail -n 1 | cut -d, -f7)
	else
		vt_fail bench-vrdma-lat-$size-$NODE
	fi
	echo "send_lat $size vrdmabw ${v:--}" >>$res
	awk -v t0="$_t0" -v t1="$(vd_ticks)" -v w0="$_w0" -v w1="$(cut -d' ' -f1 /proc/uptime)" \
	    -v hz=100 -v node="$NODE" 'BEGIN {	# USER_HZ on x86
		if (t0 == "" || t1 == "" || w1 <= w0) exit
		printf "vrdmad on %s during vrdma-lat: %.2f s CPU in %.2f s (%.0f%%)\n",
		       node, (t1 - t0) / hz, w1 - w0, 100 * (t1 - t0) / hz / (w1 - w0) }'
fi

if [ "$NODE" = a ]; then
	echo "VRDMA-SHOW-BEGIN"
	echo "== node a -> node b over Soft-RoCE (rxe0), QEMU TCG: compare within this boot, not absolutes"
	echo "== native: ${BENCH_NATIVE:-node processes}; vrdma: ${BENCH_GUESTS:-guest processes -> vrdmad -> rxe0}"
	echo "== the same Debian perftest / ucx_perftest binary and flags on both sides (vrdma: through vrdma-run)"
	echo "== ucx_*: UCP over rc_verbs + ud_verbs; ucx_perftest's overall figures (tag_lat one way)"
	[ -n "${BENCH_LAYOUT:-}" ] && echo "== CPU layout: $BENCH_LAYOUT"
	echo " test         #bytes    native            vrdma             vrdma/native      vrdma-bw/-lat"
	awk '
	{ v[$1 " " $2 " " $3] = $4; if (!seen[$1 " " $2]++) order[n++] = $1 " " $2 }
	END {
		for (i = 0; i < n; i++) {
			split(order[i], k, " ")
			nat = v[order[i] " native"]; vr = v[order[i] " vrdma"]; vb = v[order[i] " vrdmabw"]
			if (nat == "") nat = "-"; if (vr == "") vr = "-"; if (vb == "") vb = "-"
			lat = k[1] ~ /_lat$/
			r = "-"
			if (nat != "-" && vr != "-" && nat + 0 > 0)
				r = lat ? sprintf("%+.1f us (x%.2f)", vr - nat, vr / nat) : sprintf("%.2f", vr / nat)
			u = lat ? "us" : "MB/s"
			printf " %-11s  %-8s  %10s %-4s  %10s %-4s  %-16s  %s\n", k[1], k[2], nat, u, vr, u, r, vb
		}
	}' $res
	echo "VRDMA-SHOW-END"
fi
