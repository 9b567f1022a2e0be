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


# pv_pair TEST ARGS... as cl-lib.sh's, the programs in domu1 ($D1): b's
# domU serves on a fixed port and hands its guest-network address over;
# a's domU connects to it.  PT_OUT is a's output.
PV_PORT=${PV_PORT:-19800}
pv_pair() {
	_t=$1
	shift
	PV_PORT=$((PV_PORT + 1))
	. /vrdma/verbs-lib.sh
	if [ "$NODE" = b ]; then
		_n=$(du_run $D1 "$(vt_wrap "ib_$_t -x 0 -F -p @P@ $*" $PV_PORT s)")
		du_sh $D1 70 "$(vt_listen_cmd $PV_PORT)" || echo "pv $_t: no listener"
		cl_tell "pv-$_t-listening $(gn_addr $D1)" 60 || return 1
		du_wait $D1 $_n 160
		_rc=$DU_RC
		cl_tell "pv-$_t-served $_rc" 60
		[ "$_rc" = 0 ] || du_out $D1 $_n | tail -n 6
		[ "$_rc" = 0 ]
		return
	fi
	cl_await pv-$_t-listening 120 || return 1
	_a=${CL_MSG#pv-$_t-listening}
	_a=${_a# }
	_n=$(du_run $D1 "$(vt_wrap "ib_$_t -x 0 -F -p @P@ $* $_a" $PV_PORT c)")
	du_wait $D1 $_n 170
	_rc=$DU_RC
	PT_OUT=$(du_out $D1 $_n)
	echo "$PT_OUT" | tail -n 4
	cl_await pv-$_t-served 170 || return 1
	[ "$_rc" = 0 ] && [ "${CL_MSG#* }" = 0 ]
}

# uv_pair TEST ARGS... as cl-lib.sh's, ucx_perftest in domu1 ($D1): b's
# serves on a port of its own and hands its address over.
uv_pair() {
	_t=$1
	shift
	UCX_PORT=$((UCX_PORT + 1))
	. /vrdma/verbs-lib.sh
	_uc="env $UCX_ENV UCX_NET_DEVICES=vrdma0:1 ucx_perftest -t $_t $* -p @P@"
	if [ "$NODE" = b ]; then
		_n=$(du_run $D1 "$(vt_wrap "$_uc" $UCX_PORT s)")
		du_sh $D1 70 "$(vt_listen_cmd $UCX_PORT)" || echo "uv $_t: no listener"
		cl_tell "uv-$_t-listening $(gn_addr $D1)" 60 || return 1
		du_wait $D1 $_n 160
		_rc=$DU_RC
		cl_tell "uv-$_t-served $_rc" 60
		[ "$_rc" = 0 ] || du_out $D1 $_n | tail -n 6
		[ "$_rc" = 0 ]
		return
	fi
	cl_await uv-$_t-listening 120 || return 1
	_a=${CL_MSG#uv-$_t-listening}
	_a=${_a# }
	_n=$(du_run $D1 "$(vt_wrap "$_uc $_a" $UCX_PORT c)")
	du_wait $D1 $_n 170
	_rc=$DU_RC
	PT_OUT=$(du_out $D1 $_n)
	echo "$PT_OUT" | grep '^Final:'
	cl_await uv-$_t-served 170 || return 1
	[ "$_rc" = 0 ] && [ "${CL_MSG#* }" = 0 ]
}
