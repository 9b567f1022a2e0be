# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Helpers of the cluster rig's node scripts (sourced by /init): results,
# vrdmad, and the two nodes keeping in step.  The nodes run the same suite
# script; node b serves, node a connects, and they meet at named points:
# one node cl_tell NAME, the other cl_await NAME (a line over TCP,
# CL_PORT).  Every wait here has a time limit.

# Each node listens on its own port (so dryrun.sh can run both on one host).
CL_PORT_a=7071
CL_PORT_b=7072
[ "$NODE" = a ] && CL_ME=$CL_PORT_a CL_HIM=$CL_PORT_b || CL_ME=$CL_PORT_b CL_HIM=$CL_PORT_a
T=${CL_TMP:-/tmp}
VLOG=${VLOG:-$T/vrdmad.log}
RUN_DIR=${VRDMA_RUN_DIR:-/run/vrdma}
export VRDMA_PLATFORM=host VRDMA_RUN_DIR=$RUN_DIR
REMOTE=${CL_REMOTE:-$(cat /vrdma/remote)}
# The node name guests pass to reach the other node's guests.
VRNODE=${VRNODE:-$PEER}
# CL_NATIVE=0: no rxe0 here (dryrun.sh): the perftest steps are skipped.
CL_NATIVE=${CL_NATIVE:-1}

# ---- results ----
VT_PASS=${VT_PASS:-0}
VT_FAIL=${VT_FAIL:-0}
vt_pass() { echo "VRDMA-TEST $1 PASS"; VT_PASS=$((VT_PASS + 1)); }
vt_fail() { echo "VRDMA-TEST $1 FAIL${2:+ ($2)}"; VT_FAIL=$((VT_FAIL + 1)); }
vt_skip() { echo "VRDMA-TEST $1 SKIP${2:+ ($2)}"; }
vt_check() {
	_name=$1
	shift
	if "$@"; then vt_pass "$_name"; else vt_fail "$_name"; fi
}

# Seconds on a clock that never jumps (deadlines; the wall clock may).
now() { cut -d. -f1 /proc/uptime; }

# ---- meeting points ----
# cl_tell NAME [SECONDS]: hand NAME to the peer (retried until it listens).
cl_tell() {
	_end=$(($(now) + ${2:-120}))
	while [ "$(now)" -le $_end ]; do
		echo "$1" | busybox nc -w 3 "$PEER" $CL_HIM 2>/dev/null && return 0
		sleep 0.3
	done
	echo "cl_tell $1: the peer never listened"
	return 1
}

# cl_await NAME [SECONDS]: wait for the peer's NAME; CL_MSG holds the whole
# line (NAME and any words after it).
cl_await() {
	_end=$(($(now) + ${2:-120}))
	CL_MSG=
	# nc gives up at once when the last connection's port is not free
	# yet: listen again (the teller keeps retrying meanwhile).
	while [ -z "$CL_MSG" ] && [ "$(now)" -le $_end ]; do
		CL_MSG=$(timeout $((_end - $(now) + 1)) busybox nc -l -p $CL_ME 2>/dev/null |
			head -n 1)
		# a teller whose nc failed after delivering sends again: drop it
		[ "$CL_MSG" = "${CL_LAST:-}" ] && CL_MSG=
		[ -n "$CL_MSG" ] || sleep 0.2
	done
	case "$CL_MSG" in
	"$1"|"$1 "*) CL_LAST=$CL_MSG; return 0 ;;
	esac
	echo "cl_await $1: got '$CL_MSG'"
	return 1
}

# ---- vrdmad ----
ctl() { timeout 10 vrdmactl -S $RUN_DIR "$@"; }
field() { echo "$2" | sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p"; }

# A guest may share up to 1100000 pages (4.2 GiB; the plain host's
# default is 1 GiB): suite check's MR of 4 GiB + 8 KiB (itest_bigmr).
CL_GUEST_PAGES=1100000
vd_start() {
	_a=
	[ "$REMOTE" = 1 ] && _a="-a $IP"
	# shellcheck disable=SC2086
	VRDMA_MAX_GUEST_PAGES=$CL_GUEST_PAGES vrdmad -f -S $RUN_DIR -n "$IP" $_a >$VLOG 2>&1 &
	for _ in $(seq 100); do
		ctl ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# leak_free: bounded wait until vrdmad holds no guest and no more fds than
# it started with.
leak_free() {
	for _ in $(seq 40); do
		c=$(ctl -j census)
		if [ "$(field guests "$c")" = 0 ] && [ "$(field fds "$c")" = "$FDS0" ]; then
			_ok=1
			for f in maps chans qps mrs cqs pds bufs listeners credits dev_bytes; do
				[ "$(field $f "$c")" = 0 ] || _ok=0
			done
			[ $_ok = 1 ] && return 0
		fi
		sleep 0.5
	done
	echo "leak (want 0 guests, $FDS0 fds): $c"
	return 1
}

# bg CMD OUT: run CMD in the background, output to OUT; BG_PID its pid.
bg() {
	sh -c "exec $1" >"$2" 2>&1 &
	BG_PID=$!
}

# wait_text FILE PATTERN PID SECONDS: until FILE holds PATTERN (1 if PID
# ended first or the time ran out).
wait_text() {
	_end=$(($(now) + $4))
	while [ "$(now)" -le $_end ]; do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || { grep -q -- "$2" "$1" 2>/dev/null; return; }
		sleep 0.2
	done
	return 1
}

# wait_exit PID SECONDS: its exit status, 124 if still running (then killed).
wait_exit() {
	_end=$(($(now) + $2))
	while kill -0 "$1" 2>/dev/null && [ "$(now)" -le $_end ]; do
		sleep 0.2
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -9 "$1"
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1"
}

# ---- perftest between the nodes (b serves, a connects) ----
# pt_run TAG "RUNNER AND FLAGS" TEST ARGS...: one perftest run, b serving
# "RUNNER ib_TEST FLAGS ARGS", a connecting to b; PT_OUT is a's output.
# 0 iff both ends exit 0.
PT_SERVE_T=90
pt_run() {
	_tag=$1-$3
	_cmd="$2"
	_t=$3
	shift 3
	_c=$(echo "$_cmd" | sed "s|@T@|ib_$_t|")
	if [ "$NODE" = b ]; then
		# shellcheck disable=SC2086
		bg "timeout $PT_SERVE_T $_c $*" $T/pt.out
		_pid=$BG_PID
		cl_tell $_tag-listening 60 || { kill -9 $_pid; return 1; }
		wait_exit $_pid $PT_SERVE_T
		_rc=$?
		cl_tell "$_tag-served $_rc" 60
		[ $_rc = 0 ] || tail -n 5 $T/pt.out
		return $_rc
	fi
	cl_await $_tag-listening 120 || return 1
	_n=0
	# perftest's own TCP rendezvous: retry until the server listens
	# shellcheck disable=SC2086
	until PT_OUT=$(timeout 60 $_c "$@" "$PEER" 2>&1); do
		_n=$((_n + 1))
		[ $_n -ge 10 ] && break
		sleep 1
	done
	echo "$PT_OUT" | tail -n 4
	cl_await $_tag-served 120 || return 1
	[ "${CL_MSG#* }" = 0 ] && [ $_n -lt 10 ]
}

# pt_pair TEST ARGS...: native perftest between the nodes' rxe0.
# PT_PIN (e.g. "taskset -c 1 ") goes before the program (ut_pair's too).
pt_pair() {
	[ "$CL_NATIVE" = 1 ] || { PT_OUT=; return 0; }
	pt_run pt "${PT_PIN:-}@T@ -d rxe0 -x $GIDX -F" "$@"
}

# pv_pair TEST ARGS...: the same Debian perftest binary through vrdma,
# between guest processes of the two nodes.  suite xbench overrides it
# for domUs (xen-pair.sh).
pv_pair() {
	pt_run pv "vrdma-run @T@ -x 0 -F" "$@"
}

# ut_pair TEST ARGS... / uv_pair TEST ARGS...: Debian's ucx_perftest
# (UCP tag matching: rc_verbs for the data, wired up through ud_verbs)
# natively between the nodes' rxe0, and the same binary and flags through
# vrdma between guest processes (suite xbench overrides uv_pair for
# domUs).  TEST is ucx_perftest's -t.  PT_OUT is a's output.
UCX_PORT=${UCX_PORT:-19850}
# UCX's ud_verbs drops every datagram rxe hands it natively (RoCE v2 over
# IPv4: its check of the destination GID in the GRH never matches, and
# UD wire-up never completes, "UD endpoint ... unhandled timeout"), so
# the check is off on both sides: same flags, and vrdma's GRHs pass it
# either way.
UCX_ENV="UCX_TLS=rc_verbs,ud_verbs,self UCX_UD_VERBS_ETH_DGID_CHECK=n UCX_WARN_UNUSED_ENV_VARS=n"
ut_pair() {
	[ "$CL_NATIVE" = 1 ] || { PT_OUT=; return 0; }
	_ut=$1
	shift
	UCX_PORT=$((UCX_PORT + 1))
	pt_run ut "${PT_PIN:-}env $UCX_ENV UCX_NET_DEVICES=rxe0:1 UCX_IB_GID_INDEX=$GIDX ucx_perftest -p $UCX_PORT" \
		$_ut -t $_ut "$@"
}
uv_pair() {
	_ut=$1
	shift
	UCX_PORT=$((UCX_PORT + 1))
	pt_run uv "env $UCX_ENV UCX_NET_DEVICES=vrdma0:1 vrdma-run ucx_perftest -p $UCX_PORT" \
		$_ut -t $_ut "$@"
}

# pt_row: the numbers row of PT_OUT (bytes iters ... first numeric line).
pt_row() {
	echo "$PT_OUT" | grep -E '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+' | tail -n 1
}

# ---- vrdma guest programs between the nodes ----
# vr_pair PROG SERVICE ARGS...: b runs "PROG -p SERVICE ARGS", a runs it
# with b's address as the node; VR_OUT is a's output, VR_SOUT b's.
vr_pair() {
	_prog=$1
	_svc=$2
	shift 2
	if [ "$NODE" = b ]; then
		bg "timeout 150 $_prog -p $_svc $*" $T/vr.out
		_pid=$BG_PID
		if ! wait_text $T/vr.out "listening on service" $_pid 60; then
			cl_tell "vr-$_svc-listening-failed" 60
			tail -n 5 $T/vr.out
			wait_exit $_pid 10
			return 1
		fi
		cl_tell vr-$_svc-listening 60 || { kill -9 $_pid; return 1; }
		wait_exit $_pid 160
		_rc=$?
		VR_SOUT=$(cat $T/vr.out)
		cl_tell "vr-$_svc-served $_rc" 60
		[ $_rc = 0 ] || echo "$VR_SOUT" | tail -n 5
		return $_rc
	fi
	cl_await vr-$_svc-listening 120 || return 1
	VR_OUT=$(timeout 150 $_prog -p $_svc "$@" "$VRNODE" 2>&1)
	_rc=$?
	cl_await vr-$_svc-served 170 || return 1
	[ $_rc = 0 ] || echo "$VR_OUT" | tail -n 5
	[ $_rc = 0 ] && [ "${CL_MSG#* }" = 0 ]
}

# need_remote NAME: the vrdma suites need vrdmad's verbs path (-a).
need_remote() {
	[ "$REMOTE" = 1 ] && return 0
	vt_fail "$1" "this vrdmad has no -a ADDR: the backend's RDMA-device path is not built yet"
	return 1
}
