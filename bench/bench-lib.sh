# SPDX-License-Identifier: MIT
# Shared helpers of scripts/bench.sh and scripts/demo-host.sh (sourced;
# kept in bench/ beside the reference benchmark it drives).
# A private vrdmad on a temp run dir, stopped and removed on exit.

vr_die() { echo "$0: $*" >&2; exit 1; }

# vr_start_daemon BUILD_DIR: sets VR_RUN, VR_DPID; exports VRDMA_RUN_DIR.
vr_start_daemon() {
	VR_RUN=$(mktemp -d "${TMPDIR:-/tmp}/vrdma-run.XXXXXX") || vr_die "mktemp failed"
	VR_DPID=
	trap vr_cleanup EXIT
	trap 'exit 130' INT TERM
	"$1/sbin/vrdmad" -S "$VR_RUN" >"$VR_RUN/vrdmad.log" 2>&1 &
	VR_DPID=$!
	i=0
	until timeout 2 "$1/sbin/vrdmactl" -S "$VR_RUN" ping 2>/dev/null | grep -q pong; do
		i=$((i + 1))
		[ $i -lt 50 ] || vr_die "vrdmad did not answer (log: $VR_RUN/vrdmad.log)"
		kill -0 "$VR_DPID" 2>/dev/null || vr_die "vrdmad exited: $(cat "$VR_RUN/vrdmad.log")"
		sleep 0.1
	done
	export VRDMA_RUN_DIR="$VR_RUN"
}

# vr_restart_daemon BUILD_DIR ARGS...: the same run dir, vrdmad again with
# ARGS; 1 (and no daemon) if it did not come up, e.g. not permitted.
vr_restart_daemon() {
	_b=$1
	shift
	vr_stop_daemon
	"$_b/sbin/vrdmad" -S "$VR_RUN" "$@" >"$VR_RUN/vrdmad.log" 2>&1 &
	VR_DPID=$!
	i=0
	until timeout 2 "$_b/sbin/vrdmactl" -S "$VR_RUN" ping 2>/dev/null | grep -q pong; do
		i=$((i + 1))
		if [ $i -ge 50 ] || ! kill -0 "$VR_DPID" 2>/dev/null; then
			tail -n 2 "$VR_RUN/vrdmad.log" >&2
			vr_stop_daemon
			return 1
		fi
		sleep 0.1
	done
}

vr_stop_daemon() {
	if [ -n "${VR_DPID:-}" ]; then
		kill "$VR_DPID" 2>/dev/null
		# Give it 5 s to leave, then insist.
		i=0
		while kill -0 "$VR_DPID" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$VR_DPID" 2>/dev/null
		wait "$VR_DPID" 2>/dev/null
	fi
	VR_DPID=
}

vr_cleanup() {
	if [ -n "${VR_SPID:-}" ]; then kill "$VR_SPID" 2>/dev/null; fi
	vr_stop_daemon
	if [ -n "${VR_RUN:-}" ]; then rm -rf "$VR_RUN"; fi
}

# vr_server LOG CMD...: start a guest server in the background (VR_SPID)
# and wait until it says it is listening.
vr_server() {
	log=$1; shift
	"$@" >"$log" 2>&1 &
	VR_SPID=$!
	i=0
	until grep -q "listening on service" "$log" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -ge 100 ] || ! kill -0 "$VR_SPID" 2>/dev/null; then
			cat "$log" >&2
			return 1
		fi
		sleep 0.1
	done
}

# vr_server_wait: reap the server; its exit status.
vr_server_wait() {
	wait "$VR_SPID"
	rc=$?
	VR_SPID=
	return $rc
}
