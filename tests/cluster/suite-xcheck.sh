# SPDX-License-Identifier: MIT
# Suite "xcheck" (make check-cluster-xen, part of make check-cluster; sourced by the Xen rig's dom0
# /init on each node after its domUs are up; D1 D2 are the domUs' ids, ctl
# talks to vrdmad, VPID is its pid).  Node b serves, node a connects; the
# guests are PV domUs, commands run in them through xenstore (du_run).
#   0. guest network across the nodes (netfront -> xenbr0 -> the second
#      NIC -> the other node's xenbr0 -> netfront): domu1 on a pings domu1
#      on b and makes a TCP round trip to an echo server there; b pings back
#   a. itest_guest: server in domu1 on b, client in domu1 on a naming b's
#      address: every opcode, data verified, bad rkey / out of bounds
#      refused (ITEST lines as markers)
#   b. the client domU (domu2) on node a destroyed (xl destroy) during a
#      long 1 MiB vrdma-bw: the survivor in domu2 on node b gets error
#      completions and ends, no hang; then the same with node b's server
#      (domu1) destroyed, which needs every device MR of the dead domain
#      gone before dom0 unmaps its pages (no "Bad page map", no ENOMEM)
#   c. vrdmactl census clean on both nodes: nothing of the dead domains,
#      vrdmad still answers
#   v. (between a and b) Debian's unmodified ibv_rc_pingpong, rping,
#      ucmatose, ibv_srq_pingpong -q 4 and perftest (ib_{write,read,send,atomic}_bw, ib_{write,
#      send}_lat, ib_write_bw -R, ib_send_lat -R: verbs-lib.sh's
#      vt_perftests, 100 iterations) through vrdma-run, server in domu1 on
#      b, client in domu1 on a: QP numbers over the guest network, the QPs
#      bound across rxe by the two vrdmads.  The domUs' clock is the tsc
#      clocksource for perftest's calibration; a pair that still failed
#      only because perftest could not calibrate runs again, a third time
#      is a SKIP; then nothing of them is left (verbs-clean)
#   m. Debian's Open MPI over UCX (tests/xen/mpi-lib.sh): mpirun in domu1
#      on a, rank 1 in domu1 on b, tests/mpi_check.c checking every byte;
#      the two vrdmads together moved at least what crossed; then (m2)
#      MPI's collectives of tests/mpi_coll_check.c through libvrdma-mpi.so,
#      the same ranks: offloaded to the two vrdmads together, in the
#      guests, MPI's own, the same bits (mpi_coll); then ucx_perftest
#      tag_bw with UCX's default transport list (netfront's tcp beside
#      vrdma0): the two vrdmads moved what a's domU sent
# Every wait has a limit.
# shellcheck disable=SC2154  # _d is set by eval
. /vrdma/cl-lib.sh

# On Xen a census "guest" is an attached device (it lives as long as its
# domain); what a guest process held must all be gone.
is_clean() { # census guests
	[ "$(field guests "$1")" = "$2" ] || return 1
	for f in maps chans qps mrs cqs pds bufs listeners credits dev_bytes; do
		[ "$(field $f "$1")" = 0 ] || return 1
	done
	[ "$(field fds "$1")" = "$FDS0" ]
}

# xleak_free GUESTS: bounded wait until vrdmad holds nothing but GUESTS
# attached devices and the fds it started with.
xleak_free() {
	for _ in $(seq 40); do
		c=$(ctl -j census)
		is_clean "$c" "$1" && return 0
		sleep 0.5
	done
	echo "leak (want $1 guests, $FDS0 fds): $c"
	return 1
}

no_gntdev_maps() {
	! grep /dev/xen/gntdev /proc/$VPID/maps
}

# No guest MR left pinned by the device (the tests' buffers are >= 1 MiB;
# key tables and scratch of attached domUs are a few hundred kB).
# What a killed transfer pinned (its guests' MRs, 16 MiB a side) must go:
# PIN_PRE is VmPin before it started.  What stays is vrdmad's own (its
# datagram pool, verbs_ud.c) and a key table of 288 kB per domU whose
# device lives on (the survivor's), hence 512 kB of slack.  A guest's
# device MRs are deregistered by vrdmad's reaper lane after the guest
# left: wait (bounded) for them to go.
vm_pin() { awk '/^VmPin/ { print $2 }' /proc/$VPID/status; }
unpinned() {
	i=0
	while [ "$(vm_pin)" -gt $((PIN_PRE + 512)) ]; do
		i=$((i + 1))
		[ $i -gt 100 ] && { echo "VmPin $(vm_pin) kB, $PIN_PRE kB before"; return 1; }
		sleep 0.1
	done
}

no_backend_dir() {
	! xenstore-exists /local/domain/0/backend/vrdma/$1
}

# itest_guest's ITEST lines as markers: itest-<side>-<check>.
itest_markers() { # side text
	echo "$2" | sed -n 's/^ITEST \([^ ]*\) \(PASS\|FAIL\).*/\1 \2/p' |
		while read -r name res; do
			echo "VRDMA-TEST itest-$1-$name $res"
		done >$T/itest.res
	cat $T/itest.res
	VT_PASS=$((VT_PASS + $(grep -c ' PASS$' $T/itest.res)))
	VT_FAIL=$((VT_FAIL + $(grep -c ' FAIL$' $T/itest.res)))
}

# qps_up N: bounded wait until this node's vrdmad holds N device QPs.
qps_up() {
	for _ in $(seq 100); do
		[ "$(field qps "$(ctl -j census)")" -ge "$1" ] 2>/dev/null && return 0
		sleep 0.3
	done
	return 1
}

# tx_of DOMID: bytes the guest of that domain sent (vrdmactl stats -j).
tx_of() {
	ctl stats -j | tr '{' '\n' | awk -v d="\"domid\":$1," '
		f { if (match($0, /"tx_bytes":[0-9]+/)) print substr($0, RSTART + 11, RLENGTH - 11); exit }
		index($0, d) { f = 1 }'
}

# moving DOMID BYTES: bounded wait until that guest sent BYTES.
moving() {
	for _ in $(seq 200); do
		[ "$(tx_of $1)" -ge "$2" ] 2>/dev/null && return 0
		sleep 0.3
	done
	return 1
}

# xkill VICTIM-NODE DOMU-ON-B DOMU-ON-A: a vrdma-bw pair of 1 MiB writes
# between those domUs (b serves); once the client moved 8 MiB the victim node
# destroys its domU; the other node's program must end with an error
# completion.
xkill() {
	_v=$1
	[ "$NODE" = b ] && _du=$2 || _du=$3
	eval _d=\$D$_du		# D1 / D2 from dom0's /init
	_cmd="vrdma-bw -p kill$_v -s 1048576 -n 10000000 --timeout 60"
	if [ "$NODE" = b ]; then
		_n=$(du_run $_d "$_cmd" "listening on service")
		if ! du_ready $_d $_n 60; then
			cl_tell kill$_v-failed 60
			vt_fail kill$_v-server-ready-$NODE "$(du_out $_d $_n | tail -n 5)"
			return 1
		fi
		cl_tell kill$_v-listening 60 || return 1
	else
		cl_await kill$_v-listening 120 || { vt_fail kill$_v-peer-listening-$NODE; return 1; }
		_n=$(du_run $_d "$_cmd $PEER")
	fi
	qps_up 1 || echo "no device QP on node $NODE after 30 s"
	# Mid-transfer: the client (node a) has moved 8 MiB, both know it.
	if [ "$NODE" = a ]; then
		moving $_d 8388608 || echo "kill$_v: no data moving after 60 s"
		cl_tell kill$_v-moving 60
	else
		cl_await kill$_v-moving 120
	fi
	if [ "$NODE" = "$_v" ]; then
		echo "census before destroy on $NODE: $(ctl census), vrdmad $(pinned)"
		vt_check kill$_v-xl-destroy-$NODE timeout 60 xl destroy domu$_du
		return 0
	fi
	if du_wait $_d $_n 90; then
		du_out $_d $_n | tail -n 5
		echo
		vt_check kill$_v-survivor-exits-$NODE [ "$DU_RC" != 0 ]
		vt_check kill$_v-survivor-error-completion-$NODE \
			sh -c "echo \"\$1\" | grep -qE 'completion failed|QP.*error|error state'" - \
			"$(du_out $_d $_n)"
	else
		vt_fail kill$_v-survivor-exits-$NODE "still running 90 s later: a hang"
	fi
}

# xc_vpair NAME PORT SRV_CMD CLI_CMD: SRV_CMD in domu1 on b, CLI_CMD in
# domu1 on a once b's listens on PORT (@P@ the port, @A@ b's domu1
# address); each node checks its own program's exit.  A run that failed
# because perftest could not calibrate its clock runs again
# (verbs-lib.sh's vt_tries, both nodes alike).
xc_vpair() {
	vt_tries "$1" "$2" xc_vonce "$3" "$4"
	if [ "$XV_RC" = 0 ]; then
		vt_pass verbs-$1-$NODE
		vt_row "$XV_OUT"
	elif [ "$VP_VERDICT" = skip ]; then
		vt_skip verbs-$1-$NODE "$VT_CALIB_SKIP"
	else
		echo "$XV_OUT" | tail -n 12
		echo
		vt_fail verbs-$1-$NODE "exit $XV_RC"
	fi
	# Retransmissions (completer_retry_err, duplicate_request) tell a
	# lossy wire from our own doing.
	[ "$VP_OK" = 1 ] || [ "$VP_VERDICT" = skip ] ||
		echo "verbs-$1 on $NODE: rxe0 counters:" \
			"$(cd /sys/class/infiniband/rxe0/ports/1/hw_counters 2>/dev/null &&
				grep -v -e '^0$' * | grep -v '^lifespan:' | tr '\n' ' ')"
}

# xc_vonce NAME PORT SRV_CMD CLI_CMD: one run of the pair for vt_tries;
# XV_RC and XV_OUT this node's program's exit and output.  a hands its
# client's exit and vt_said to b, b stops a server whose client failed
# (vt_reap), judges the pair (VP_OK, VP_SAID) and hands that back, so both
# nodes run it again or go on together.
xc_vonce() {
	# (own names: du_sh and friends use _n, _s, n)
	_xvn=$1-$2
	if [ "$NODE" = b ]; then
		_xvs=$(du_run $D1 "$(vt_wrap "$3" $2 s)")
		du_sh $D1 70 "$(vt_listen_cmd $2)" || echo "verbs-$1: no listener on $2"
		cl_tell v-$_xvn-ready 60
		_xvp="lost lost"
		cl_await v-$_xvn-done $((VT_T + 40)) && _xvp=${CL_MSG#* }
		vt_reap "${_xvp%% *}" $D1 $_xvs "$3"
		XV_RC=$DU_RC
		XV_OUT=$VT_SRV_OUT
		VP_OK=0
		[ "$XV_RC" = 0 ] && [ "${_xvp%% *}" = 0 ] && VP_OK=1
		VP_SAID="$(vt_said "$XV_OUT") ${_xvp#* }"
		cl_tell "v-$_xvn-judged $VP_OK $VP_SAID" 60
		return
	fi
	if [ -n "$PB" ] && cl_await v-$_xvn-ready 150; then
		_xvs=$(du_run $D1 "$(vt_wrap "$(echo "$4" | sed "s/@A@/$PB/g")" $2 c)")
		du_wait $D1 $_xvs $((VT_T + 10))
		XV_RC=$DU_RC
		XV_OUT=$(du_out $D1 $_xvs)
	else
		XV_RC=no-peer
		XV_OUT="no peer (PB '$PB')"
	fi
	cl_tell "v-$_xvn-done $XV_RC $(vt_said "$XV_OUT")" 60
	VP_OK=0
	VP_SAID=lost
	cl_await v-$_xvn-judged $((VT_T + 60)) || return
	_xvp=${CL_MSG#* }
	VP_OK=${_xvp%% *}
	VP_SAID=${_xvp#* }
}

# xc_pt NAME PORT PROG ARGS...: a perftest pair (the client adds b's
# address), for vt_perftests.
xc_pt() {
	_xpn=$1
	_xpp=$2
	shift 2
	xc_vpair $_xpn $_xpp "$* -p @P@" "$* -p @P@ @A@"
}

# Pages the device holds pinned for vrdmad (ib_umem: the zero-copy path).
pinned() { grep VmPin /proc/$VPID/status | tr -s ' \t' ' '; }

FDS0=$(field fds "$(ctl -j census)")
echo "vrdmad pid $VPID, $FDS0 fds and VmPin $(vm_pin) kB at start, census $(ctl census)"

# ---- 0. guest network: domu1 on a <-> domu1 on b ----
GA=$(gn_addr $D1)
echo "guest network on $NODE: domu1 $GA, xenbr0 ports: $(ls /sys/class/net/xenbr0/brif | tr '\n' ' ')"
if [ "$NODE" = b ]; then
	ne=$(du_run $D1 "timeout 90 nc -l -p 7100 -e cat")
	cl_tell "net-ready $GA" 60
	if cl_await net-done 150; then
		du_wait $D1 $ne 10
		vt_check net-tcp-server-$NODE [ "$DU_RC" = 0 ]
		PA=${CL_MSG#net-done}
		PA=${PA# }
		if [ -n "$PA" ]; then
			vt_check net-ping-b-a gn_sh $D1 30 "ping -c 3 -W 2 $PA"
		else
			vt_fail net-ping-b-a "node a's domu1 has no address"
		fi
	else
		vt_fail net-peer-done-$NODE
	fi
else
	if cl_await net-ready 120; then
		PB=${CL_MSG#net-ready}
		PB=${PB# }
		if [ -n "$PB" ] && [ -n "$GA" ]; then
			vt_check net-ping-a-b gn_sh $D1 30 "ping -c 3 -W 2 $PB"
			vt_check net-tcp-a-b gn_sh $D1 70 ". /vrdma/rig-lib.sh; gn_echo $PB 7100"
		else
			vt_fail net-addresses "domu1 on a '$GA', on b '$PB': no guest network"
		fi
	else
		vt_fail net-peer-ready-$NODE
	fi
	cl_tell "net-done $GA" 60
fi

if need_remote xcheck-remote-path-$NODE; then
	# ---- a. every opcode, bad rkey, out of bounds ----
	if [ "$NODE" = b ]; then
		ns=$(du_run $D1 "timeout 150 itest_guest server itest" server-ready)
		if du_ready $D1 $ns 60; then
			cl_tell itest-ready 60
			du_wait $D1 $ns 200
			vt_check itest-server-exit-$NODE [ "$DU_RC" = 0 ]
		else
			cl_tell itest-failed 60
			vt_fail itest-server-ready "$(du_out $D1 $ns | tail -n 5)"
		fi
		itest_markers server "$(du_out $D1 $ns)"
		grep -q ' FAIL$' $T/itest.res && du_out $D1 $ns | tail -n 20
		cl_await itest-done 200
	else
		if cl_await itest-ready 120; then
			nc=$(du_run $D1 "timeout 150 itest_guest client itest $PEER")
			du_wait $D1 $nc 170
			vt_check itest-client-exit-$NODE [ "$DU_RC" = 0 ]
			itest_markers client "$(du_out $D1 $nc)"
			grep -q ' FAIL$' $T/itest.res && du_out $D1 $nc | tail -n 20
		else
			vt_fail itest-client-start "server not ready"
		fi
		cl_tell itest-done 60
	fi
	vt_check itest-clean-$NODE xleak_free 2
	echo "rdma lines of vrdmad's log on $NODE, vrdmad $(pinned):"
	grep 'rdma:' $VLOG | head -n 10

	# ---- v. unmodified verbs programs, domu1 on a -> domu1 on b ----
	. /vrdma/verbs-lib.sh
	# perftest calibrates rdtsc against gettimeofday: on the domU's xen
	# clocksource under TCG the two part by tens of ms now and then (r^2
	# < 0.9 in about one report in four), on its tsc clocksource they do
	# not.  xen unbound, or the kernel's watchdog, which sees the same
	# steps, puts xen back a minute or two later.
	_cs=/sys/devices/system/clocksource/clocksource0
	du_sh $D1 10 "echo tsc >$_cs/current_clocksource && echo xen >$_cs/unbind_clocksource" ||
		echo "domu1 on $NODE: tsc clocksource not set (perftest may not calibrate)"
	vt_check verbs-devinfo-$NODE gn_sh $D1 60 \
		"vrdma-run ibv_devinfo -v | grep -E 'hca_id|GID'; vrdma-run ibv_devinfo | grep -q vrdma0"
	xc_vpair rc_pingpong 19701 "ibv_rc_pingpong -g 0 -n 50 -p @P@" \
		"ibv_rc_pingpong -g 0 -n 50 -p @P@ @A@"
	xc_vpair rping 19702 "rping -s -v -p @P@ -C 10" "rping -c -a @A@ -v -V -p @P@ -C 10"
	xc_vpair ucmatose 19703 "ucmatose -p @P@" "ucmatose -s @A@ -p @P@"
	# 4 QPs on one SRQ each side: the SRQs' device twins (verbs_srq.c)
	xc_vpair srq_pingpong 19704 "ibv_srq_pingpong -g 0 -n 50 -q 4 -p @P@" \
		"ibv_srq_pingpong -g 0 -n 50 -q 4 -p @P@ @A@"
	# datagrams between the nodes' domUs: each dom0's vrdmad UD QP on
	# rxe0 (verbs_ud.c); -g 0: the other node's GID in the address
	# handle; 512 bytes fit any RoCE MTU less vrdmad's 32-byte header
	xc_vpair ud_pingpong 19705 "ibv_ud_pingpong -g 0 -n 50 -s 512 -p @P@" \
		"ibv_ud_pingpong -g 0 -n 50 -s 512 -p @P@ @A@"
	VT_PT_N=100	# (one lat iteration is a 30 ms round trip here)
	vt_perftests xc_pt 19710
	vt_check verbs-clean-$NODE xleak_free 2

	# ---- m. Open MPI over UCX, rank 0 in domu1 on a, rank 1 in domu1 on b ----
	# mpirun in a's domu1 starts b's orted over the guest network
	# (vrdma-rig-rsh); the ranks' bytes cross rxe between the vrdmads.
	# Each vrdmad counts what it moved; b hands its count to a, and the two
	# together must be at least what mpi_check says crossed.
	# Both nodes take every step whatever fails (b: ready, done, counted;
	# a: ready, done, counted), so the sections after stay in step.
	. /vrdma/mpi-lib.sh
	m0=$(mpi_moved)
	if [ "$NODE" = b ]; then
		cl_tell mpi-ready 60
		mb=none
		if cl_await mpi-done 400; then
			mb=$(($(mpi_moved) - m0))
		else
			vt_fail mpi-ucx-2-peer-$NODE "node a never said its job ended"
		fi
		cl_tell "mpi-counted $mb" 60
	else
		if cl_await mpi-ready 120 && [ -n "$PB" ]; then
			mpi_job $D1 150 "$GA,$PB" 2 && vt_pass mpi-ucx-2-$NODE || vt_fail mpi-ucx-2-$NODE
		else
			MPI_BYTES=
			vt_fail mpi-ucx-2-$NODE "no peer (PB '$PB')"
		fi
		cl_tell mpi-done 60
		mb=none
		cl_await mpi-counted 60 && mb=${CL_MSG#mpi-counted }
		if [ -n "$MPI_BYTES" ]; then
			md=$(($(mpi_moved) - m0))
			echo "mpi-ucx-2: vrdmad on a moved $md bytes, on b $mb; $MPI_BYTES crossed between the ranks"
			case $mb in
			none) vt_fail mpi-ucx-2-through-vrdma "node b's count never came" ;;
			*) vt_check mpi-ucx-2-through-vrdma [ $((md + mb)) -ge "$MPI_BYTES" ] ;;
			esac
		fi
	fi
	vt_check mpi-clean-$NODE xleak_free 2

	# ---- m2. MPI's collectives across the nodes (libvrdma-mpi.so) ----
	# The same two ranks through vrdma-run --coll (mpi_coll): the team
	# spans the nodes, so with VRDMA_COLL=on the two vrdmads run it
	# together (the chain over rxe0); b says what its vrdmad saw in each
	# run, and a's checks add it (mpi-lib.sh's mc_peer_* hooks).
	if [ "$NODE" = b ]; then
		cl_tell mcoll-ready 60
		for _m in on guest off; do
			cl_await "mcoll-run $_m" 600 || break
			_b0=$(mpi_moved) _o0=$(mpi_coll_ops)
			cl_tell "mcoll-started $_m" 60
			cl_await "mcoll-end $_m" 600 || break
			cl_tell "mcoll-counted $(($(mpi_moved) - _b0)) $(($(mpi_coll_ops) - _o0))" 60
		done
	else
		mc_peer_before() {
			cl_tell "mcoll-run $1" 60 && cl_await "mcoll-started $1" 60
		}
		mc_peer_after() {
			MC_PEER_MOVED=0 MC_PEER_OPS=0
			cl_tell "mcoll-end $1" 60 && cl_await mcoll-counted 60 &&
				MC_PEER_MOVED=$(echo "$CL_MSG" | cut -d' ' -f2) &&
				MC_PEER_OPS=$(echo "$CL_MSG" | cut -d' ' -f3)
		}
		MC_NODES=2
		# MPI's own (the off run) crosses two emulated networks here: with
		# 512 KiB vectors it took 88 s quiet, 160 s beside a busy loop, of
		# its 240 s; 256 KiB still take the chain's chunks twice.
		MC_MAX=262144
		if cl_await mcoll-ready 120 && [ -n "$PB" ]; then
			mpi_coll $D1 "$GA,$PB"
		else
			vt_fail mpi-coll-on "no peer (PB '$PB')"
		fi
	fi
	vt_check mpi-coll-clean-$NODE xleak_free 2
	# UCX's default transport list between the nodes' domUs: tcp over
	# netfront is there beside rc_verbs and ud_verbs on vrdma0, and UCX
	# must take vrdma0.  a's domU sends 100 x 64 KiB by rendezvous: b's
	# domU READs them, so b's vrdmad counts most of it; b hands its count
	# to a, which wants the two together.
	m0=$(mpi_moved)
	# (UCX_LOG_LEVEL=info: its ep_cfg line names the transport it took)
	xc_vpair ucx_dflt_tag_bw 19706 "ucx_perftest -t tag_bw -s 65536 -n 100 -w 10 -p @P@" \
		"env UCX_LOG_LEVEL=info ucx_perftest -t tag_bw -s 65536 -n 100 -w 10 -p @P@ @A@"
	echo "$XV_OUT" | grep -a 'ep_cfg\|UCX  WARN\|UCX  ERROR'
	# and every lane of the endpoint on vrdma0 (no tcp rail beside it)
	[ "$NODE" = a ] && vt_check ucx-dflt-lanes-vrdma0 sh -c \
		'echo "$1" | grep -q "ep_cfg.*vrdma0" && ! echo "$1" | grep "ep_cfg" | grep -q tcp' - "$XV_OUT"
	if [ "$NODE" = b ]; then
		cl_tell "ucx-counted $(($(mpi_moved) - m0))" 60
	elif cl_await ucx-counted 60; then
		md=$(($(mpi_moved) - m0))
		mb=${CL_MSG#ucx-counted }
		echo "ucx_perftest, UCX's default transports: vrdmad on a moved $md bytes, on b $mb; 6553600 sent"
		vt_check ucx-dflt-through-vrdma [ $((md + mb)) -ge 6553600 ]
	else
		vt_fail ucx-dflt-through-vrdma "node b's count never came"
	fi

	# ---- b. a domU destroyed mid-transfer: node a's client (domu2) ----
	# (both meet once the survivor is done, then check what is left)
	PIN_PRE=$(vm_pin)
	xkill a 2 2
	if [ "$NODE" = a ]; then cl_await killa-done 180; else cl_tell killa-done 120; fi
	[ "$NODE" = a ] && left=1 || left=2
	vt_check killa-nothing-left-$NODE xleak_free $left
	vt_check killa-nothing-pinned-$NODE unpinned
	if [ "$NODE" = a ]; then
		vt_check killa-no-gntdev-maps-$NODE no_gntdev_maps
		vt_check killa-no-backend-dir-$NODE no_backend_dir $D2
		cl_tell killa-clean 120
	else
		cl_await killa-clean 180
	fi
	# Node b's server (domu1) destroyed next: the same from the other side.
	PIN_PRE=$(vm_pin)
	xkill b 1 1
	if [ "$NODE" = a ]; then cl_tell killb-done 120; else cl_await killb-done 180; fi
	vt_check killb-nothing-left-$NODE xleak_free 1
	vt_check killb-nothing-pinned-$NODE unpinned
	if [ "$NODE" = b ]; then
		vt_check killb-no-gntdev-maps-$NODE no_gntdev_maps
		vt_check killb-no-backend-dir-$NODE no_backend_dir $D1
	fi
fi

# ---- c. nothing left on either node ----
vt_check daemon-alive-$NODE ctl ping
# gntdev pages the device still pinned when dom0 unmapped them show as
# "Bad page map" (vbe_vx_unpin exists for that; docs/rdma.md).
vt_check no-bad-page-map-$NODE sh -c '! dmesg | grep -m 3 "Bad page map"'
echo "census on $NODE: $(ctl census), vrdmad $(pinned)"
echo "rdma lines and warnings of vrdmad's log on $NODE:"
grep -E 'rdma:|warn|err' $VLOG | tail -n 15
xl list
