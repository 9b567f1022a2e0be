# SPDX-License-Identifier: MIT
# Sourced by the Xen cluster suites (xbench, xcluster) after cl-lib.sh:
# cl-lib.sh's vr_pair again, with the programs in domu1 ($D1) instead of
# dom0 processes, so suite-bench.sh and suite-demo.sh run between domUs.
# shellcheck disable=SC2154  # D1, NODE, PEER come from the dom0 /init

# vr_pair PROG SERVICE ARGS... as cl-lib.sh's, the programs in domu1 ($D1):
# b runs "PROG -p SERVICE ARGS", a runs it with b's address as the node;
# VR_OUT is a's output (its last 3000 bytes).
vr_pair() {
	_prog=$1
	_svc=$2
	shift 2
	if [ "$NODE" = b ]; then
		_n=$(du_run $D1 "timeout 150 $_prog -p $_svc $*" "listening on service")
		if ! du_ready $D1 $_n 60; then
			cl_tell "vr-$_svc-listening-failed" 60
			du_out $D1 $_n | tail -n 5
			return 1
		fi
		cl_tell vr-$_svc-listening 60 || return 1
		du_wait $D1 $_n 160
		_rc=$DU_RC
		cl_tell "vr-$_svc-served $_rc" 60
		[ "$_rc" = 0 ] || du_out $D1 $_n | tail -n 5
		[ "$_rc" = 0 ]
		return
	fi
	cl_await vr-$_svc-listening 120 || return 1
	_n=$(du_run $D1 "timeout 150 $_prog -p $_svc $* $PEER")
	du_wait $D1 $_n 170
	_rc=$DU_RC
	VR_OUT=$(du_out $D1 $_n)
	cl_await vr-$_svc-served 170 || return 1
	[ "$_rc" = 0 ] || echo "$VR_OUT" | tail -n 5
	[ "$_rc" = 0 ] && [ "${CL_MSG#* }" = 0 ]
}


# du_pair TAG PORT CMD: CMD (@P@ the port) through vrdma-run in domu1
# ($D1) of both nodes: b's serves on PORT and hands its guest-network
# address over, a's runs CMD with that address appended.  PT_OUT is a's
# output; 0 iff both exited 0.
du_pair() {
	PT_OUT=
	. /vrdma/verbs-lib.sh
	if [ "$NODE" = b ]; then
		_n=$(du_run $D1 "$(vt_wrap "$3" $2 s)")
		du_sh $D1 70 "$(vt_listen_cmd $2)" || echo "$1: no listener"
		cl_tell "$1-listening $(gn_addr $D1)" 60 || return 1
		du_wait $D1 $_n 160
		_rc=$DU_RC
		cl_tell "$1-served $_rc" 60
		[ "$_rc" = 0 ] || du_out $D1 $_n | tail -n 6
		[ "$_rc" = 0 ]
		return
	fi
	cl_await $1-listening 120 || return 1
	_a=${CL_MSG#"$1"-listening}
	_a=${_a# }
	_n=$(du_run $D1 "$(vt_wrap "$3 $_a" $2 c)")
	du_wait $D1 $_n 170
	_rc=$DU_RC
	PT_OUT=$(du_out $D1 $_n)
	cl_await $1-served 170 || return 1
	[ "$_rc" = 0 ] && [ "${CL_MSG#* }" = 0 ]
}

# pv_pair TEST ARGS... as cl-lib.sh's, perftest's TEST in domu1 (du_pair);
# PV_ENV (VAR=VALUE ...) goes into the program's environment.
PV_PORT=${PV_PORT:-19800}
pv_pair() {
	_t=$1
	shift
	PV_PORT=$((PV_PORT + 1))
	du_pair pv-$_t $PV_PORT "${PV_ENV:+env $PV_ENV }ib_$_t -x 0 -F -p @P@ $*"
	_rc=$?
	[ "$NODE" = a ] && echo "$PT_OUT" | tail -n 4
	return $_rc
}

# uv_pair TEST ARGS... as cl-lib.sh's, ucx_perftest in domu1 (du_pair).
uv_pair() {
	_t=$1
	shift
	UCX_PORT=$((UCX_PORT + 1))
	du_pair uv-$_t $UCX_PORT "env $UCX_ENV UCX_NET_DEVICES=vrdma0:1 ucx_perftest -t $_t $* -p @P@"
	_rc=$?
	[ "$NODE" = a ] && echo "$PT_OUT" | grep '^Final:'
	return $_rc
}
