# SPDX-License-Identifier: MIT
# Unmodified verbs programs between two domUs (sourced by the suites in
# dom0 after rig-lib.sh), each through vrdma-run:
#   vpair NAME PORT SRV_DOM CLI_DOM ADDR PROG ARGS   (perftest style: the
#       server runs PROG -p PORT ARGS, the client the same plus ADDR)
#   vcmds NAME PORT SRV_DOM CLI_DOM SRV_CMD CLI_CMD  (any pair; @P@ in the
#       commands is the port)
#   vt_perftests PAIR PORT EXTRA...  (issue 10's perftest set, each run
#       by PAIR; the Xen cluster's xcheck shares it, with vt_tries,
#       vt_reap and vt_said, for pairs across its two nodes)
# PASS iff both exit 0.  The client starts once the server listens on the
# port (read from /proc/net/tcp, not by connecting: perftest would take a
# probe for its client; rdma_cm on vrdma listens on the same TCP port).
VT_T=${VT_T:-90}
# The rig waits this long for a server to listen before it starts the
# client (du_sh with vt_listen_cmd).
VT_LISTEN_T=70

# The command that waits (bounded) until a domU listens on TCP port $1.
vt_listen_cmd() {
	printf 'i=0; while ! grep -qi ":%04X [0-9A-F:]* 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; do i=$((i+1)); [ $i -gt 300 ] && exit 1; sleep 0.2; done' "$1"
}

# perftest calibrates its cycle counter against gettimeofday and refuses
# to report when the two do not correlate (r^2 < 0.9), which a TCG guest
# on a busy host does now and then: a run that failed only that way runs
# again (at most twice more), and says so.  A third such failure with no
# other error is a SKIP, named as such: the transfers completed, only the
# report is missing.
# vt_tries NAME PORT ONCE ARGS...: ONCE NAME PORT ARGS... runs the pair
# once and sets VP_OK (1 iff both ends exited 0) and VP_SAID (vt_said of
# both ends' output); the next try takes PORT + 100.  VP_VERDICT: pass,
# skip or fail.
VT_CALIB_SKIP="perftest could not calibrate its clock 3 times; transfers completed"
vt_tries() {
	local name=$1 port=$2 once=$3 try
	shift 3
	for try in 1 2 3; do
		"$once" "$name" $port "$@"
		VP_VERDICT=pass
		[ "$VP_OK" = 1 ] && return
		VP_VERDICT=fail
		case $VP_SAID in *cal*) ;; *) return ;; esac
		[ $try = 3 ] && break
		echo "verbs-$name: perftest could not calibrate its clock (try $try), again"
		port=$((port + 100))
		sleep 2	# the device comes free for the next process
	done
	case $VP_SAID in *err*) ;; *) VP_VERDICT=skip ;; esac
}

# vt_said TEXT: "cal" if perftest said it could not calibrate its clock,
# "err" if anything else said it went wrong.  (A perftest whose peer
# exited at its report loses the out-of-band exchange that follows the
# transfers: not an error of its own.)
vt_said() {
	echo "$1" | grep -q 'Correlation coefficient' && printf 'cal '
	echo "$1" | grep -vE "Can't produce a report|ethernet_read_keys|read to socket|exchange data between" |
		grep -qiE "couldn't|failed|error|unable|terminated|timeout" && printf 'err'
	:
}

# vt_row TEXT: perftest's figures (bytes, iterations, ...).
vt_row() {
	echo "$1" | grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' | tail -n 2
}

vcmds() { # name port srv_dom cli_dom srv_cmd cli_cmd
	local name=$1 port=$2
	shift 2
	vt_tries "$name" $port vcmds_once "$@"
	case $VP_VERDICT in
	pass) return 0 ;;
	skip) vt_skip "verbs-$name" "$VT_CALIB_SKIP"; return 0 ;;
	esac
	vt_fail "verbs-$name"
	return 1
}

vpair() { # name port srv_dom cli_dom addr prog args...
	local name=$1 port=$2 sd=$3 cd=$4 addr=$5 prog=$6
	shift 6
	vcmds "$name" $port $sd $cd "$prog -p @P@ $*" "$prog -p @P@ $* $addr"
}

# One run; stderr last: perftest's long banner would push its error out
# of the 3000 bytes du_out keeps.  A client has VT_T; a server (tag s)
# lives through its client's whole run, which starts up to VT_LISTEN_T
# after it: VT_T is the client's limit, the server's is both.  Their
# handshakes get 30 s, as itest_guest's (a loaded rig took over 13 s).
vt_wrap() { # cmd port tag
	local t=$VT_T
	[ "$3" = s ] && t=$((VT_T + VT_LISTEN_T))
	echo "timeout $t env VRDMA_OPEN_TIMEOUT_MS=30000 vrdma-run $(echo "$1" | sed "s/@P@/$2/g") 2>/tmp/vp.err.$3; r=\$?; cat /tmp/vp.err.$3; exit \$r"
}

vcmds_once() { # name port srv_dom cli_dom srv_cmd cli_cmd
	local name=$1 port=$2 sd=$3 cd=$4 ns nc src crc
	VP_OK=0
	VP_SAID=
	ns=$(du_run $sd "$(vt_wrap "$5" $port s)")
	if ! du_sh $sd $VT_LISTEN_T "$(vt_listen_cmd $port)"; then
		# No client comes: stop it as after a failed client.  What it
		# said reaches dom0 only when it has ended.
		vt_reap nolisten $sd $ns "$5"
		echo "-- verbs-$name: the server never listened (rc $DU_RC):"
		echo "$VT_SRV_OUT" | tail -n 8
		return 1
	fi
	nc=$(du_run $cd "$(vt_wrap "$6" $port c)")
	du_wait $cd $nc $((VT_T + 10))
	crc=$DU_RC
	vt_reap $crc $sd $ns "$5"
	src=$DU_RC
	VP_SAID=$(vt_said "$(echo "$VT_SRV_OUT"; du_out $cd $nc)")
	if [ "$crc" = 0 ] && [ "$src" = 0 ]; then
		VP_OK=1
		vt_pass "verbs-$name"
		vt_row "$(du_out $cd $nc)"
		return 0
	fi
	echo "-- verbs-$name server (rc $src):"; echo "$VT_SRV_OUT" | tail -n 12; echo
	echo "-- verbs-$name client (rc $crc):"; du_out $cd $nc | tail -n 12; echo
	return 1
}

# vt_reap CLIENT_RC SRV_DOM N SRV_CMD: once the client ended, wait for the
# server (command N in SRV_DOM); DU_RC its exit, VT_SRV_OUT its output.
# A client that failed can leave its server waiting for a peer that is
# gone (perftest -R waits on its QP): stop it, do not wait VT_T (and drop
# the stop's 'Terminated').
vt_reap() {
	local stopped=
	if [ "$1" != 0 ] && ! du_wait $2 $3 10; then
		du_sh $2 10 "pkill ${4%% *}"
		stopped=1
	fi
	du_wait $2 $3 $((VT_T + 10))
	VT_SRV_OUT=$(du_out $2 $3 | { [ -n "$stopped" ] && grep -v '^Terminated$' || cat; })
}

# The issue-10 set, between SRV_DOM (address ADDR) and CLI_DOM.
verbs_suite() { # srv_dom cli_dom addr
	local s=$1 c=$2 a=$3 p=19300
	vt_check verbs-devinfo gn_sh $c 60 "vrdma-run ibv_devinfo -v | grep -E 'hca_id|GID'; vrdma-run ibv_devinfo | grep -q vrdma0"
	vpair rc_pingpong $((p + 1)) $s $c $a ibv_rc_pingpong -g 0 -n 100
	vpair srq_pingpong $((p + 2)) $s $c $a ibv_srq_pingpong -g 0 -n 50 -q 4
	# Datagrams: dom0 delivers between the two domUs of its node.
	vpair ud_pingpong $((p + 22)) $s $c $a ibv_ud_pingpong -g 0 -n 100
	vpair write_bw_old $((p + 3)) $s $c $a ib_write_bw -x 0 -n 200 -s 4096 --use_old_post_send
	vt_perftests vpair $((p + 3)) $s $c $a
	vcmds rping $((p + 20)) $s $c "rping -s -v -p @P@ -C 10" "rping -c -a $a -v -V -p @P@ -C 10"
	vcmds ucmatose $((p + 21)) $s $c "ucmatose -p @P@" "ucmatose -s $a -p @P@"
}

# Debian's perftest programs of issue 10, each as "PAIR NAME PORT EXTRA...
# PROG ARGS..." (ports PORT+1 to PORT+12, VT_PT_N iterations); the Xen
# cluster's xcheck runs them too.
vt_perftests() { # pair port extra...
	local pair=$1 p=$2 iters=${VT_PT_N:-200}
	shift 2
	"$pair" write_bw $((p + 1)) "$@" ib_write_bw -x 0 -n $iters -s 65536
	"$pair" read_bw $((p + 2)) "$@" ib_read_bw -x 0 -n $iters -s 65536
	"$pair" send_bw $((p + 3)) "$@" ib_send_bw -x 0 -n $iters -s 65536
	"$pair" atomic_bw $((p + 4)) "$@" ib_atomic_bw -x 0 -n $iters
	"$pair" write_lat $((p + 5)) "$@" ib_write_lat -x 0 -n $iters -s 8
	"$pair" send_lat $((p + 6)) "$@" ib_send_lat -x 0 -n $iters -s 8
	# rdma_cm: the connection over the guest network, QPs bound by dom0
	"$pair" write_bw_cm $((p + 7)) "$@" ib_write_bw -R -x 0 -n $iters -s 65536
	"$pair" send_lat_cm $((p + 8)) "$@" ib_send_lat -R -x 0 -n $iters -s 8
	"$pair" read_bw_cm $((p + 9)) "$@" ib_read_bw -R -x 0 -n $iters -s 65536
	"$pair" send_bw_cm $((p + 10)) "$@" ib_send_bw -R -x 0 -n $iters -s 65536
	"$pair" atomic_bw_cm $((p + 11)) "$@" ib_atomic_bw -R -x 0 -n $iters
	"$pair" write_lat_cm $((p + 12)) "$@" ib_write_lat -R -x 0 -n $iters -s 8
}
