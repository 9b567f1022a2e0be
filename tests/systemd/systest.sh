#!/bin/bash
# SPDX-License-Identifier: MIT
# Inside the Debian 12 that make check-systemd boots (tests/systemd.sh):
# vrdmad as the packages install it and systemd runs it, with the shipped
# unit, /etc/default/vrdmad and vrdmad.conf untouched.  Run once by
# vrdma-systest.service after the boot; every step has a time limit.
# Prints "VRDMA-TEST <name> PASS|FAIL" per check, the diagnostics after a
# failure, then "VRDMA-SYSTEMD-DONE pass=P fail=F"; the unit powers the
# machine off.  The result lines go to the console (ttyS0, with the
# kernel's messages) and, alone, to the second serial port (ttyS1): the
# host judges by that one.  Every check is a line "check NAME FUNCTION"
# at the start of a line of this file: the host counts them.
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
STEP=20		# s for one command
RUN=/run/vrdma
VM=systest-vm
npass=0
nfail=0
W=$(mktemp -d)

say() { echo "VRDMA-SYSTEST $*"; }
# The results' own port; without it the host sees no results at all.
if exec 3>/dev/ttyS1; then
	stty -F /dev/ttyS1 raw -echo 2>/dev/null || true
else
	say "cannot open /dev/ttyS1: no results for the host"
	exec 3>/dev/null
fi
out() { echo "$*"; echo "$*" >&3; }
result() { # name PASS|FAIL
	out "VRDMA-TEST $1 $2"
	if [ "$2" = PASS ]; then npass=$((npass + 1)); else nfail=$((nfail + 1)); fi
}
# check NAME FUNCTION: PASS iff the function returns 0 within its own
# limits; on a failure what it printed goes to the console.
check() {
	if "$2" >"$W/out" 2>&1; then
		result "$1" PASS
	else
		sed 's/^/    /' "$W/out"
		result "$1" FAIL
	fi
}
t() { timeout -k 2 "$STEP" "$@"; }
prop() { t systemctl show -p "$1" --value vrdmad; }
# until SECONDS COMMAND...: poll every 0.1 s until the command succeeds,
# for SECONDS at most (by the clock: a try may take a while under TCG)
until_ok() {
	local end=$((SECONDS + $1))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}
pong() { [ "$(t vrdmactl ping 2>&1)" = pong ]; }

say "up: $(cut -d' ' -f1 /proc/uptime) s after the kernel started"
VER=$(dpkg-query -W -f='${Version}' vrdma-daemon)

# ---- started at boot: enabled by the operator, ready (Type=notify) ----
active() {
	local e a ty
	e=$(t systemctl is-enabled vrdmad)
	a=$(t systemctl is-active vrdmad)
	ty=$(prop Type)
	echo "is-enabled=$e is-active=$a Type=$ty NRestarts=$(prop NRestarts)"
	[ "$e" = enabled ] && [ "$a" = active ] && [ "$ty" = notify ] &&
		[ "$(prop NRestarts)" = 0 ]
}
check boot-active active

ping_() {
	pong || { t vrdmactl ping; return 1; }
	# the socket is where vrdmactl looks by default, the pid file vrdmad's
	[ -S $RUN/vrdmad.ctl ] && [ "$(cat $RUN/vrdmad.pid)" = "$(prop MainPID)" ]
}
check ping ping_

# A guest pair on the packaged libvrdma, served by the sandboxed vrdmad.
guests() {
	local spid i=0
	t vrdma-bw -n 200 -s 4096 >"$W/srv" 2>&1 &
	spid=$!
	# the client connects once the server listens
	while ! grep -q 'listening on service' "$W/srv" && [ $i -lt 150 ]; do
		kill -0 $spid 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	if ! t vrdma-bw -n 200 -s 4096 --verify local || ! wait $spid; then
		cat "$W/srv"
		return 1
	fi
}
check guests-bw-verify guests

# ---- a per-VM setting survives systemctl restart (StateDirectory) ----
keep() {
	local pid0 pid1 out
	pid0=$(prop MainPID)
	t vrdmactl set $VM weight=5 || return 1
	t systemctl restart vrdmad || return 1
	pid1=$(prop MainPID)
	out=$(t vrdmactl get $VM)
	echo "pid $pid0 -> $pid1; get $VM: $out"
	[ "$pid1" != "$pid0" ] && [ "$(t systemctl is-active vrdmad)" = active ] &&
		case "$out " in *"vm=$VM "*" stored=yes weight=5 "*) true ;; *) false ;; esac &&
		grep -qx "vm $VM 0 weight=5" /var/lib/vrdma/settings
}
check set-restart-get keep

# ---- systemctl reload: SIGHUP re-reads the policy file, same process ----
# The file is changed behind vrdmad's back, as an operator edits it
# (docs/tenants.md): vrdmad goes on with what it holds until the reload,
# then vrdmactl shows the file's policy.
POL=/var/lib/vrdma/policy
grouped() { # the policy vrdmad holds puts systest-a and systest-b together
	t vrdmactl policy | grep -qx 'group systest-job systest-a systest-b' &&
		t vrdmactl policy check systest-a systest-b | grep -q '^allow: .*same group'
}
reload() {
	local pid0 pid1
	pid0=$(prop MainPID)
	t vrdmactl policy default tenant || return 1
	grep -qx 'default tenant' $POL || return 1
	# (in place: the file keeps vrdmad's owner and mode 0600)
	printf '# edited by hand\ndefault tenant\ngroup systest-job systest-a systest-b\n' >$POL ||
		return 1
	sleep 1
	echo "before the reload:"
	t vrdmactl policy
	t vrdmactl policy check systest-a systest-b
	! grouped || { echo "vrdmad took the file before any reload"; return 1; }
	t systemctl reload vrdmad || return 1
	pid1=$(prop MainPID)
	echo "pid $pid0 -> $pid1; after the reload:"
	t vrdmactl policy
	t vrdmactl policy check systest-a systest-b
	[ "$pid1" = "$pid0" ] && [ "$(t systemctl is-active vrdmad)" = active ] && pong &&
		until_ok 10 grouped &&
		until_ok 10 sh -c "journalctl -q -u vrdmad _PID=$pid0 -o cat | grep -q \
			'policy: reloaded $POL: default tenant, 2 grouped tenants, 0 rules'" &&
		t vrdmactl policy clear
}
check reload-same-pid reload

# ---- the journal: vrdmad's lines, each at its own priority ----
journal() {
	local info warn raw
	info=$(t journalctl -q -u vrdmad -p info -o cat)
	warn=$(t journalctl -q -u vrdmad -p warning -o cat)
	raw=$(t journalctl -q -u vrdmad -o cat | grep -c '^<[0-7]>')
	echo "$info" | head -n 12
	echo "-- at warning or above:"
	echo "$warn"
	# "<N>" parsed by journald (no line keeps it), "started" at info
	# (shown by -p info, not by -p warning), its version
	[ "$raw" = 0 ] &&
		echo "$info" | grep -q "vrdmad $VER started .*platform=host" &&
		! echo "$warn" | grep -q "vrdmad $VER started" &&
		echo "$info" | grep -q 'signal 1, reloading'
}
check journal-priorities journal

# ---- systemctl stop: a clean exit, nothing left in the run dir ----
stop() {
	local pid
	pid=$(prop MainPID)
	t systemctl stop vrdmad || return 1
	echo "ActiveState=$(prop ActiveState) Result=$(prop Result)" \
		"ExecMainCode=$(prop ExecMainCode) ExecMainStatus=$(prop ExecMainStatus)"
	ls -la $RUN 2>&1
	# exited (CLD_EXITED = 1) with status 0 after SIGTERM, its own last line
	[ "$(prop ActiveState)" = inactive ] && [ "$(prop Result)" = success ] &&
		[ "$(prop ExecMainCode)" = 1 ] && [ "$(prop ExecMainStatus)" = 0 ] &&
		[ ! -e $RUN/vrdmad.ctl ] && [ ! -e $RUN/vrdmad.pid ] &&
		[ ! -e $RUN/guest.sock ] &&
		journalctl -q -u vrdmad _PID="$pid" -o cat | grep -q 'vrdmad stopped'
}
check stop-clean stop

# vrdmactl with no vrdmad: exit 3, and it says so
gone() {
	local st=0
	t vrdmactl ping || st=$?
	[ $st = 3 ]
}
check ctl-unreachable gone

exposure=$(t systemd-analyze security vrdmad 2>/dev/null |
	sed -n 's/.*Overall exposure level for [^:]*: //p')
say "systemd-analyze security vrdmad: ${exposure:-unknown}"
if [ $nfail -gt 0 ]; then
	echo "VRDMA-DIAG-BEGIN"
	t systemctl --no-pager status vrdmad
	t systemctl --no-pager --failed
	t journalctl --no-pager -q -u vrdmad -o short-monotonic
	echo "VRDMA-DIAG-END"
fi
out "VRDMA-SYSTEMD-DONE pass=$npass fail=$nfail"
exec 3>&-	# (a tty's close waits for its output to drain)
rm -rf "$W"
[ $nfail = 0 ]
