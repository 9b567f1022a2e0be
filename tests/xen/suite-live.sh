# SPDX-License-Identifier: MIT
# Suite "live" (sourced by dom0's /init, and last by suite-check.sh: it
# ends vrdmad): issue 12's liveness the other way round.  A domU program
# that only polls a CQ (itest_guest poll-dom0) while vrdmad is killed
# (kill -9) must get EIO soon -- gntdev's unmap-notify clears dom0_live
# and kicks its channel (docs/wire.md) -- not "no completion" until its
# own time limit.
# The delay is taken on dom0's clock alone (the domUs' drifts from it by
# 100 ms and more under TCG): from the kill until the poller's agent wrote
# its exit status, so it is an upper bound (EIO, vrdma_close, the exit,
# the agent's xenstore write).  ms_now: busybox date has no %N, its
# adjtimex prints the time in us; empty if that fails: no figure.
ms_now() {
	_a=$(busybox adjtimex 2>/dev/null) || return 0
	_s=$(echo "$_a" | sed -n 's/.*time\.tv_sec: *\([0-9]*\).*/\1/p')
	_u=$(echo "$_a" | sed -n 's/.*time\.tv_usec: *\([0-9]*\).*/\1/p')
	[ -n "$_s" ] && [ -n "$_u" ] && echo $((_s * 1000 + _u / 1000))
	return 0
}
np=$(du_run $D1 "timeout 150 itest_guest poll-dom0 120" poll-ready)
if du_ready $D1 $np 60; then
	sleep 1
	t0=$(ms_now)
	kill -9 $VPID
	end=$(($(date +%s) + 130))
	while ! xenstore-read /local/domain/$D1/$RA_DATA/rc/$np >/dev/null 2>&1 &&
	      [ "$(date +%s)" -le $end ]; do
		:
	done
	t1=$(ms_now)
	if du_wait $D1 $np 1; then
		echo "$(du_out $D1 $np | tail -n 3)"
		vt_check dom0-killed-poller-eio [ "$DU_RC" = 0 ]
		if [ -n "$t0" ] && [ -n "$t1" ]; then
			echo "a domU that only polls ended on EIO at most $((t1 - t0)) ms after vrdmad's kill -9"
			# What tells the liveness path from the poller's own limit
			# (120 s) is the order of magnitude, not a figure: a loaded
			# 2-core host took 5.5 s for kill, EIO, exit and the agent's
			# write (soak), so half the poller's limit is the bound.
			vt_check dom0-killed-poller-soon [ $((t1 - t0)) -lt 60000 ]
		fi
	else
		vt_fail dom0-killed-poller-eio "still polling 130 s after vrdmad's kill -9"
	fi
else
	vt_fail dom0-killed-poller-ready "$(du_out $D1 $np | tail -n 5)"
fi
