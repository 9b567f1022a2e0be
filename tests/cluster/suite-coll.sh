# SPDX-License-Identifier: MIT
# Suite "coll" (sourced by /init on both nodes, and by suite check): a
# team across the two nodes, two members on each (tests/itest_team.c:
# ranks 0 and 1 on a, 2 and 3 on b; the node list is the vrdmads' names,
# their addresses).  Run first by the two vrdmads together (offload: the
# chain between them over rxe, backend/coll/chain*.c), then by its
# members (VRDMA_COLL_OFFLOAD=0, the fallback over vrdma QPs).  Every
# result is checked against the reference of the one order; the digests
# of both runs and of both nodes must be the same bits; each vrdmad
# counts the offloaded team's operations.  Every wait has a limit.

# coll_ops: the operations this vrdmad's teams ran so far
coll_ops() {
	_co=$(ctl -j teams | sed -n 's/^[^[]*"ops": *\([0-9]*\).*/\1/p')
	echo "${_co:-0}"
}

# coll_team TAG MODE ENV: this node's two members of team TAG with ENV;
# checks coll-MODE-exit-NODE and coll-MODE-mode-NODE; COLL_DIG their
# digest (empty unless both agree).
coll_team() {
	_tag=$1 _mode=$2 _env=$3
	_list="$COLL_A,$COLL_A,$COLL_B,$COLL_B"
	if [ "$NODE" = a ]; then
		_r0=0
		cl_tell coll-$_tag-go 60
	else
		_r0=2
		cl_await coll-$_tag-go 120
	fi
	for _i in 0 1; do
		bg "env $_env timeout 150 itest_team $_tag $((_r0 + _i)) $_list" \
			$T/team-$_tag-$_i.out
		eval "_tp$_i=\$BG_PID"
	done
	wait_exit "$_tp0" 160
	_rc0=$?
	wait_exit "$_tp1" 160
	_rc1=$?
	grep -h '^itest_team:' $T/team-$_tag-0.out $T/team-$_tag-1.out
	if [ $_rc0 = 0 ] && [ $_rc1 = 0 ]; then
		vt_pass coll-$_mode-exit-$NODE
	else
		vt_fail coll-$_mode-exit-$NODE "exit $_rc0 and $_rc1"
		grep -h 'FAIL' $T/team-$_tag-0.out $T/team-$_tag-1.out | head -n 5
		echo "----- vrdmad on $NODE: its teams"
		grep -i 'team' $VLOG | tail -n 10
	fi
	_m=0
	for _i in 0 1; do
		grep -q "^itest_team: .*, $_mode[,:]" $T/team-$_tag-$_i.out && _m=$((_m + 1))
	done
	vt_check coll-$_mode-mode-$NODE [ $_m = 2 ]
	_d0=$(sed -n 's/^itest_team: .*digest \([0-9a-f]*\)$/\1/p' $T/team-$_tag-0.out)
	_d1=$(sed -n 's/^itest_team: .*digest \([0-9a-f]*\)$/\1/p' $T/team-$_tag-1.out)
	COLL_DIG=
	[ -n "$_d0" ] && [ "$_d0" = "$_d1" ] && COLL_DIG=$_d0
	# meet: the next run starts once both nodes' members are done
	if [ "$NODE" = a ]; then cl_await coll-$_tag-done 200; else cl_tell coll-$_tag-done 60; fi
}

if need_remote coll-remote-path-$NODE; then
	# the node list names each vrdmad as it calls itself (vrdmactl teams)
	_me=$(ctl -j teams | sed -n 's/.*"node":"\([^"]*\)".*/\1/p')
	if [ "$NODE" = a ]; then
		cl_tell "coll-name $_me" 60
		cl_await coll-name-b 120 && COLL_B=${CL_MSG#coll-name-b }
		COLL_A=$_me
	else
		cl_await coll-name 120 && COLL_A=${CL_MSG#coll-name }
		cl_tell "coll-name-b $_me" 60
		COLL_B=$_me
	fi
	echo "coll: node a's vrdmad is '${COLL_A:-?}', b's '${COLL_B:-?}'"
	_ops0=$(coll_ops)
	coll_team span1 offload VRDMA_COLL_VERBOSE=1
	_dig_off=$COLL_DIG
	_ops=$(($(coll_ops) - _ops0))
	echo "coll: vrdmad on $NODE ran $_ops team operations"
	vt_check coll-offload-ops-$NODE [ "$_ops" -gt 0 ]
	coll_team span2 fallback VRDMA_COLL_OFFLOAD=0
	_dig_fb=$COLL_DIG
	echo "coll: digest offload ${_dig_off:-?}, fallback ${_dig_fb:-?} on $NODE"
	_ok=0
	[ -n "$_dig_off" ] && [ "$_dig_off" = "$_dig_fb" ] && _ok=1
	vt_check coll-same-bits-$NODE [ $_ok = 1 ]
	# both nodes' members got the same bits
	if [ "$NODE" = a ]; then
		cl_tell "coll-dig ${_dig_off:-none}" 60
		cl_await coll-dig-b 120 && _other=${CL_MSG#coll-dig-b }
	else
		cl_await coll-dig 120 && _other=${CL_MSG#coll-dig }
		cl_tell "coll-dig-b ${_dig_off:-none}" 60
	fi
	_ok=0
	[ -n "$_dig_off" ] && [ "${_other:-}" = "$_dig_off" ] && _ok=1
	vt_check coll-nodes-agree-$NODE [ $_ok = 1 ]
	vt_check coll-clean-$NODE leak_free
fi
