# SPDX-License-Identifier: MIT
# Suite "check" (sourced by /init on both nodes; b serves, a connects):
#   a. every opcode from a guest on a to a guest on b, data verified, and
#      remote accesses outside the given region (bad rkey, out of bounds)
#      refused with REM_ACCESS_ERR (itest_guest)
#   b. a peer guest killed (-9) mid-transfer, client side then server
#      side: the survivor on the other node gets error completions and
#      exits on its own, no hang
#   c. vrdmactl census clean on both nodes afterwards
#   d. Debian's unmodified verbs programs through vrdma-run, server a
#      guest on b, client a guest on a: the QP numbers go over TCP, the two
#      vrdmads bind the QPs over rxe (MODIFY_QP across nodes, rdma_cm)
#   e. the connect policy across the nodes: the listener learns who asks;
#      the listener's node and the connector's node each refuse by theirs
#   f. device QPs are a table of the node's, a quarter a tenant (devqps):
#      with a's tenant held to 2, a client's third QP to b is refused
#      (ENOMEM, logged naming the tenant); back to the default, it runs
#   g. an MR of 4 GiB + 8 KiB of a guest on b (vrdmad pins it all on b's
#      rxe0: rig.sh gives this suite's nodes 6 GiB), a guest on a WRITEs
#      at 4 GiB + 100 and READs it back, and the MR's last bytes; b
#      confirms the bytes landed there (itest_bigmr; the device windows
#      of 64 GiB)
#   h. a team across the nodes, run by the two vrdmads and by its members,
#      the same bits (suite-coll.sh)
# Every wait has a limit.

# itest_guest's ITEST lines as markers: itest-<side>-<check>.
itest_markers() { # side file
	sed -n 's/^ITEST \([^ ]*\) \(PASS\|FAIL\).*/\1 \2/p' "$2" |
		while read -r name res; do
			echo "VRDMA-TEST itest-$1-$name $res"
		done >$T/itest.res
	cat $T/itest.res
	VT_PASS=$((VT_PASS + $(grep -c ' PASS$' $T/itest.res)))
	VT_FAIL=$((VT_FAIL + $(grep -c ' FAIL$' $T/itest.res)))
}

# kill_pair VICTIM: a vrdma-bw pair of 1 MiB writes; VICTIM (a|b) is
# killed -9 once both QPs move data; the other node's program must fail
# with an error completion within the limit.
kill_pair() {
	_v=$1
	_cmd="vrdma-bw -p kill$_v -s 1048576 -n 1000000 --timeout 20"
	if [ "$NODE" = b ]; then
		bg "$_cmd" $T/kill.out
		_pid=$BG_PID
		wait_text $T/kill.out "listening on service" $_pid 60 &&
			cl_tell kill$_v-listening 60 || { kill -9 $_pid; return 1; }
	else
		cl_await kill$_v-listening 120 || return 1
		bg "$_cmd $VRNODE" $T/kill.out
		_pid=$BG_PID
	fi
	# Both ends hold a QP on their own node once connected.
	for _ in $(seq 100); do
		[ "$(field qps "$(ctl -j census)")" -ge 1 ] 2>/dev/null && break
		sleep 0.3
	done
	if [ "$NODE" = a ]; then
		cl_await kill$_v-connected 60
	else
		cl_tell kill$_v-connected 60
	fi
	sleep 2		# mid-transfer
	if [ "$NODE" = "$_v" ]; then
		kill -9 $_pid
		wait $_pid 2>/dev/null
		echo "killed the vrdma-bw on node $NODE"
		return 0
	fi
	wait_exit $_pid 90
	_rc=$?
	tail -n 5 $T/kill.out
	if [ $_rc = 124 ]; then
		vt_fail kill$_v-survivor-exits-$NODE "still running 90 s later: a hang"
	else
		vt_check kill$_v-survivor-exits-$NODE [ $_rc != 0 ]
	fi
	vt_check kill$_v-survivor-error-completion-$NODE \
		grep -qE 'completion failed|QP.*error|error state' $T/kill.out
}

if need_remote check-remote-path-$NODE; then
	# ---- a. every opcode, bad rkey, out of bounds ----
	if [ "$NODE" = b ]; then
		bg "timeout 150 itest_guest server itest" $T/itest.out
		pid=$BG_PID
		if wait_text $T/itest.out server-ready $pid 60; then
			cl_tell itest-ready 60
			wait_exit $pid 170
			vt_check itest-server-exit [ $? = 0 ]
		else
			cl_tell itest-failed 60
			vt_fail itest-server-ready "$(tail -n 5 $T/itest.out)"
		fi
		itest_markers server $T/itest.out
	else
		if cl_await itest-ready 120; then
			timeout 150 itest_guest client itest "$VRNODE" >$T/itest.out 2>&1
			vt_check itest-client-exit [ $? = 0 ]
			itest_markers client $T/itest.out
			grep -q 'ITEST .* FAIL' $T/itest.out && tail -n 20 $T/itest.out
		else
			vt_fail itest-client-start "server not ready"
		fi
	fi
	# meet before checking: both sides done
	if [ "$NODE" = a ]; then cl_tell itest-done 60; else cl_await itest-done 200; fi
	vt_check itest-clean-$NODE leak_free
	if [ "$NODE" = a ]; then cl_await itest-clean 120; else cl_tell itest-clean 60; fi

	# ---- b. a peer killed mid-transfer, each side in turn ----
	# (both meet once the survivor is done, then check what is left)
	kill_pair a
	if [ "$NODE" = a ]; then cl_await killa-done 180; else cl_tell killa-done 120; fi
	vt_check killa-nothing-left-$NODE leak_free
	if [ "$NODE" = a ]; then cl_tell killa-clean 120; else cl_await killa-clean 180; fi
	kill_pair b
	if [ "$NODE" = a ]; then cl_tell killb-done 120; else cl_await killb-done 180; fi
	vt_check killb-nothing-left-$NODE leak_free
fi

# ---- d. unmodified verbs programs across the nodes ----
# cl_vpair NAME PORT SRV_CMD CLI_CMD: b runs SRV_CMD, a CLI_CMD once b
# listens on PORT (TCP; rdma_cm on vrdma listens on the same port); @P@ is
# the port, @A@ node b's address.  PASS on each side iff its program
# exits 0.
cl_vpair() {
	_n=$1
	_c=$(echo "$3" | sed "s/@P@/$2/g; s/@A@/$PEER/g")
	[ "$NODE" = a ] && _c=$(echo "$4" | sed "s/@P@/$2/g; s/@A@/$PEER/g")
	if [ "$NODE" = b ]; then
		bg "timeout 120 vrdma-run $_c" $T/v-$_n.out
		_pid=$BG_PID
		_hex=$(printf ':%04X ' "$2")
		_i=0
		while ! grep -qi "$_hex.* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null &&
		      kill -0 $_pid 2>/dev/null && [ $_i -lt 300 ]; do
			sleep 0.2
			_i=$((_i + 1))
		done
		cl_tell v-$_n-ready 60
		wait_exit $_pid 130
	else
		cl_await v-$_n-ready 150
		timeout 120 vrdma-run $_c >$T/v-$_n.out 2>&1
	fi
	_rc=$?
	if [ $_rc = 0 ]; then
		vt_pass verbs-$_n-$NODE
		grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' $T/v-$_n.out | tail -n 1
	else
		# stderr lands before stdout's buffered header: show its errors
		grep -iE "error|fail|couldn|unable|correlation" $T/v-$_n.out | head -n 5
		tail -n 12 $T/v-$_n.out
		echo "----- vrdmad on $NODE (last 10 lines)"
		tail -n 10 $VLOG
		vt_fail verbs-$_n-$NODE "exit $_rc"
	fi
	# meet: the next pair starts once both are done
	if [ "$NODE" = a ]; then cl_tell v-$_n-done 60; else cl_await v-$_n-done 150; fi
}

if need_remote verbs-remote-path-$NODE; then
	cl_vpair rc_pingpong 19601 "ibv_rc_pingpong -g 0 -n 100 -p @P@" \
		"ibv_rc_pingpong -g 0 -n 100 -p @P@ @A@"
	cl_vpair write_bw 19602 "ib_write_bw -x 0 -n 200 -s 65536 -p @P@" \
		"ib_write_bw -x 0 -n 200 -s 65536 -p @P@ @A@"
	cl_vpair read_bw 19603 "ib_read_bw -x 0 -n 200 -s 65536 -p @P@" \
		"ib_read_bw -x 0 -n 200 -s 65536 -p @P@ @A@"
	cl_vpair send_lat 19604 "ib_send_lat -x 0 -n 200 -s 8 -p @P@" \
		"ib_send_lat -x 0 -n 200 -s 8 -p @P@ @A@"
	cl_vpair rping 19605 "rping -s -v -p @P@ -C 10" "rping -c -a @A@ -v -V -p @P@ -C 10"
	# 4 QPs on one SRQ each side: the SRQs' device twins (verbs_srq.c)
	cl_vpair srq_pingpong 19607 "ibv_srq_pingpong -g 0 -n 100 -q 4 -p @P@" \
		"ibv_srq_pingpong -g 0 -n 100 -q 4 -p @P@ @A@"
	cl_vpair write_bw_cm 19606 "ib_write_bw -R -x 0 -n 200 -s 65536 -p @P@" \
		"ib_write_bw -R -x 0 -n 200 -s 65536 -p @P@ @A@"
	# unreliable datagrams between guests of the two nodes: each node's
	# vrdmad UD QP on the device (verbs_ud.c); -g 0 puts the other node's
	# GID in the address handle; 512 bytes fit any RoCE MTU less vrdmad's
	# 32-byte header (the rig's rxe takes 4064).  Both
	# sides send and receive 100: the totals count them, no drop.
	_u0=$(ctl -j stats)
	cl_vpair ud_pingpong 19608 "ibv_ud_pingpong -g 0 -n 100 -s 512 -p @P@" \
		"ibv_ud_pingpong -g 0 -n 100 -s 512 -p @P@ @A@"
	grep "iters in" $T/v-ud_pingpong.out
	_u1=$(ctl -j stats)
	# The guests are gone by now: only stats' "totals" (guests that
	# left included) still hold their counters.
	if echo "$_u1" | grep -q '"totals"'; then
		for _f in ud_tx ud_rx ud_tx_drop ud_rx_drop; do
			eval "_d_$_f=\$((\$(field $_f "\$_u1") - \$(field $_f "\$_u0")))"
		done
		echo "datagrams on $NODE: ud_tx +$_d_ud_tx ud_rx +$_d_ud_rx" \
		     "ud_tx_drop +$_d_ud_tx_drop ud_rx_drop +$_d_ud_rx_drop"
		_ok=0
		[ "$_d_ud_tx" -ge 100 ] && [ "$_d_ud_rx" -ge 100 ] &&
			[ "$_d_ud_tx_drop" = 0 ] && [ "$_d_ud_rx_drop" = 0 ] && _ok=1
		vt_check verbs-ud-counters-$NODE [ $_ok = 1 ]
	else
		vt_skip verbs-ud-counters-$NODE "this vrdmad's stats have no totals"
	fi
	# UCP over vrdma's transports between the nodes: rc_verbs for the
	# data, wired up through ud_verbs (datagrams between the nodes).
	# UCX lists a device only with its /dev node (docs/verbs.md).
	if [ -x /usr/bin/ucx_perftest ]; then
		mkdir -p /dev/infiniband
		[ -e /dev/infiniband/uverbs-vrdma0 ] ||
			mknod -m 666 /dev/infiniband/uverbs-vrdma0 c 1 3
		export UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=vrdma0:1
		cl_vpair ucx_tag_lat 19609 "ucx_perftest -t tag_lat -n 1000 -w 100 -p @P@" \
			"ucx_perftest -t tag_lat -n 1000 -w 100 -p @P@ @A@"
		grep -E "^Final:" $T/v-ucx_tag_lat.out
		unset UCX_TLS UCX_NET_DEVICES
	fi
	vt_check verbs-clean-$NODE leak_free
fi

# ---- e. the connect policy across the nodes (issue 12 item 3) ----
# b listens, a connects.  Each vrdmad enforces its own policy: b's when
# a's request arrives (by a's group), a's when b's answer arrives (by
# b's group).  Guests run as root: tenant uid0 on both nodes, so a group
# around uid0 on one node makes the two sides different groups.
if need_remote policy-remote-path-$NODE; then
	if [ "$NODE" = b ]; then
		# e1. open: a's request arrives and the listener learns who asks
		bg "timeout 60 itest_guest listen-peer xdb 40" $T/pol1.out
		pid=$BG_PID
		wait_text $T/pol1.out listening-peer $pid 30 && cl_tell pol1-ready 60
		wait_exit $pid 50
		peer=$(grep '^peer ' $T/pol1.out)
		echo "b's listener: $peer"
		case "$peer" in
		"peer node=$PEER domid="[1-9]*" devid=0") vt_pass policy-remote-conn-from ;;
		*) vt_fail policy-remote-conn-from "'$peer'" ;;
		esac
		cl_await pol1-done 60
		# e2. b's policy keeps a's group out
		ctl policy group gb uid0 >/dev/null && ctl policy default tenant >/dev/null
		bg "timeout 60 itest_guest listen-peer xdb 40" $T/pol2.out
		pid=$BG_PID
		wait_text $T/pol2.out listening-peer $pid 30 && cl_tell pol2-ready 60
		cl_await pol2-done 60
		kill $pid 2>/dev/null
		wait $pid 2>/dev/null
		vt_check policy-remote-logged-b grep -q "refused by policy" $VLOG
		ctl policy clear >/dev/null
		# e3. b accepts; a's policy keeps b's group out
		bg "timeout 60 itest_guest listen-peer xdb 40 accept" $T/pol3.out
		pid=$BG_PID
		wait_text $T/pol3.out listening-peer $pid 30 && cl_tell pol3-ready 60
		cl_await pol3-done 60
		wait_exit $pid 30
		tail -n 2 $T/pol3.out
	else
		cl_await pol1-ready 90
		timeout 40 itest_guest connect xdb "$VRNODE"
		vt_check policy-remote-reached [ $? = 111 ]	# the listener rejected
		cl_tell pol1-done 60
		cl_await pol2-ready 90
		timeout 40 itest_guest connect xdb "$VRNODE"
		vt_check policy-remote-refused-by-listener-node [ $? = 13 ]
		cl_tell pol2-done 60
		ctl policy group ga uid0 >/dev/null && ctl policy default tenant >/dev/null
		cl_await pol3-ready 90
		timeout 40 itest_guest connect xdb "$VRNODE"
		vt_check policy-remote-refused-by-connector-node [ $? = 13 ]
		vt_check policy-remote-logged-a grep -q "refused by policy" $VLOG
		# e4. a group named outright: refused here before any packet
		timeout 40 itest_guest connect uid0/xdb "$VRNODE"
		vt_check policy-remote-qualified-refused-first [ $? = 13 ]
		ctl policy clear >/dev/null
		cl_tell pol3-done 60
	fi
	vt_check policy-remote-clean-$NODE leak_free
fi

# ---- f. device QPs: a tenant's share of the node's table ----
# Every guest here runs as root: one tenant, uid0.
if need_remote devqps-share-$NODE; then
	[ "$NODE" = a ] && ctl set tenant:uid0 devqps=2 >/dev/null
	vr_pair vrdma-bw dq1 -q 3 -n 100 --timeout 10
	rc=$?
	if [ "$NODE" = a ]; then
		vt_check devqps-third-refused [ $rc != 0 ]
		vt_check devqps-refusal-logged grep -q "tenant uid0 has 2 devqps, its limit" $VLOG
		ctl set tenant:uid0 devqps=default >/dev/null
	fi
	vr_pair vrdma-bw dq2 -q 3 -n 100 --verify --timeout 30
	vt_check devqps-default-runs-$NODE [ $? = 0 ]
	vt_check devqps-clean-$NODE leak_free
fi

# ---- g. an MR past 4 GiB reached from the other node ----
# b's guest (VM bigmr, mem quota 6 GiB) makes the MR's pages exist once
# connected, registers it (its vrdmad pins the 4 GiB while REG_MR's answer
# waits: longer than libvrdma's 5 s for a command under TCG, so the
# guest waits up to 10 min, VRDMA_CMD_TIMEOUT_MS), then tells a's guest
# where it is.  Minutes under TCG: the limits are generous.
if need_remote bigmr-remote-path-$NODE; then
	if [ "$NODE" = b ]; then
		ctl set bigmr mem=6G >/dev/null
		bg "env VRDMA_VM=bigmr VRDMA_CMD_TIMEOUT_MS=600000 timeout 900 itest_bigmr server bigmr" \
			$T/bigmr.out
		pid=$BG_PID
		if wait_text $T/bigmr.out bigmr-server-ready $pid 60; then
			cl_tell bigmr-ready 60
			wait_exit $pid 920
			vt_check bigmr-server-exit [ $? = 0 ]
		else
			cl_tell bigmr-failed 60
			vt_fail bigmr-server-ready "$(tail -n 5 $T/bigmr.out)"
		fi
		grep '^bigmr:' $T/bigmr.out
		itest_markers server $T/bigmr.out
		grep -q 'ITEST .* FAIL' $T/bigmr.out && tail -n 20 $T/bigmr.out
	else
		if cl_await bigmr-ready 120; then
			timeout 900 itest_bigmr client bigmr "$VRNODE" >$T/bigmr.out 2>&1
			vt_check bigmr-client-exit [ $? = 0 ]
			itest_markers client $T/bigmr.out
			grep -q 'ITEST .* FAIL' $T/bigmr.out && tail -n 20 $T/bigmr.out
		else
			vt_fail bigmr-client-start "server not ready"
		fi
	fi
	if [ "$NODE" = a ]; then cl_tell bigmr-done 300; else cl_await bigmr-done 950; fi
	# b's reaper unpins the 4 GiB: give it up to 2 min more before the census
	_n=0
	until [ $_n -ge 5 ] || leak_free >/dev/null; do _n=$((_n + 1)); done
	vt_check bigmr-clean-$NODE leak_free
fi

# ---- h. a team across the nodes ----
. "${CL_DIR:-/vrdma}"/suite-coll.sh

# ---- c. nothing left on either node ----
vt_check census-clean-$NODE leak_free
vt_check daemon-alive-$NODE ctl ping
echo "census on $NODE: $(ctl census)"
