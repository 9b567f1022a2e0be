# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# The rig's remote-command protocol over xenstore (sourced by dom0's and the
# domUs' /init).  dom0 writes a shell command to a domU's
#   /local/domain/<id>/data/cmd/<n>         (n = 0, 1, ... per domU)
# (optional, written first: data/want/<n> = a pattern meaning "ready");
# the domU's agent runs it in the background, its output goes live to the
# domU console (xenconsoled logs it in dom0) and when it ends the agent writes
#   data/out/<n>   the last 3000 bytes of its output
#   data/rc/<n>    its exit status
# and data/ready/<n> = 1 once a line of the output matched data/want/<n>.
# Every wait here has a time limit.

RA_DATA=data

# ---- domU side ----

# ra_exec N CMD: run one command; output to the console, prefixed.
ra_exec() {
	n=$1
	name=$(cat /tmp/ra-name)
	echo "[$name#$n] \$ $2"
	want=$(xenstore-read -R $RA_DATA/want/$n 2>/dev/null) || want=
	if [ -n "$want" ]; then
		: >/tmp/ra-out.$n
		(
			# Stop looking when the command ended, whatever it printed.
			while [ ! -e /tmp/ra-rc.$n ]; do
				if grep -q -- "$want" /tmp/ra-out.$n; then
					xenstore-write $RA_DATA/ready/$n 1
					break
				fi
				sleep 0.2
			done
		) &
	fi
	{ sh -c "$2"; echo $? >/tmp/ra-rc.$n; } 2>&1 | tee /tmp/ra-out.$n | sed "s/^/[$name#$n] /"
	rc=$(cat /tmp/ra-rc.$n)
	echo "[$name#$n] exit $rc"
	xenstore-write -R -- $RA_DATA/out/$n "$(tail -c 3000 /tmp/ra-out.$n)"
	xenstore-write $RA_DATA/rc/$n "$rc"
}

# ra_agent: wait for commands forever (dom0 ends the domain).  It sleeps
# in a xenstore watch, not a poll: a domU has one vCPU, and a poll every
# 0.2 s (a fork each, slow under TCG) preempts the command it runs, which
# is enough to spoil perftest's clock calibration.  The watch is bounded
# (3 s) so a command written just before it was set is still seen.
ra_agent() {
	n=0
	xenstore-read name >/tmp/ra-name
	xenstore-write $RA_DATA/agent ready
	while :; do
		if c=$(xenstore-read -R $RA_DATA/cmd/$n 2>/dev/null); then
			ra_exec $n "$c" &
			n=$((n + 1))
		elif ! timeout 3 xenstore-watch -n 2 $RA_DATA/cmd >/dev/null 2>&1; then
			[ $? = 124 ] || sleep 0.2	# no watch support: poll
		fi
	done
}

# ---- guest network (docs/xen.md, "Guest network") ----
# gn_up: netfront's eth0 with the address PREFIX.<domid>/LEN, from
# vrdma.net=PREFIX/LEN on the domU's kernel command line (dom0 puts it in
# the xl config); also written to data/ip for dom0.  Prints the address.
gn_up() {
	_net=$(sed -n 's/.*vrdma\.net=\([0-9.]*\/[0-9]*\).*/\1/p' /proc/cmdline)
	[ -n "$_net" ] || return 0
	for _m in $(cat /vrdma/net-modules.list); do
		insmod /lib/modules/$_m || echo "insmod $_m failed" >&2
	done
	_i=0
	while [ ! -e /sys/class/net/eth0 ] && [ $_i -lt 50 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	_a=${_net%/*}.$(xenstore-read domid)
	ip link set lo up
	if ! ip addr add "$_a/${_net#*/}" dev eth0 || ! ip link set eth0 up; then
		echo "gn_up: no eth0 for $_a" >&2
		return 1
	fi
	xenstore-write $RA_DATA/ip "$_a"
	echo "$_a"
}

# gn_echo ADDR PORT: a TCP round trip to an echo server (busybox nc -l
# -e cat): a line out, the same line back.  Retries while the server is
# not listening yet; at most ~60 s.
gn_echo() {
	_tok=vrdma-net-$(xenstore-read domid)-$(cut -d' ' -f1 /proc/uptime)
	_r=
	_i=0
	while [ $_i -lt 10 ]; do
		_r=$(echo "$_tok" | timeout 5 nc -w 3 "$1" "$2" 2>&1)
		if [ "$_r" = "$_tok" ]; then
			echo "tcp round trip to $1:$2: $_r"
			return 0
		fi
		_i=$((_i + 1))
		sleep 0.5
	done
	echo "no echo from $1:$2 (last answer: '$_r')"
	return 1
}

# ---- dom0 side ----
# du_run DOMID CMD [READY-PATTERN]: start CMD in the domU; prints its number.
du_run() {
	dom=$1
	seqf=/tmp/du-seq.$dom
	n=$(cat $seqf 2>/dev/null || echo 0)
	echo $((n + 1)) >$seqf
	[ -n "${3:-}" ] && xenstore-write -R -- /local/domain/$dom/$RA_DATA/want/$n "$3"
	xenstore-write -R -- /local/domain/$dom/$RA_DATA/cmd/$n "$2"
	echo $n
}

# du_wait DOMID N SECONDS: wait for command N to end; 0 and its status in
# DU_RC, or 1 on timeout (DU_RC=timeout).
du_wait() {
	end=$(($(date +%s) + $3))
	while [ "$(date +%s)" -le $end ]; do
		if DU_RC=$(xenstore-read /local/domain/$1/$RA_DATA/rc/$2 2>/dev/null); then
			return 0
		fi
		sleep 0.3
	done
	DU_RC=timeout
	return 1
}

# du_ready DOMID N SECONDS: wait until command N printed its ready pattern
# (1 if it ended or the time ran out first).
du_ready() {
	end=$(($(date +%s) + $3))
	while [ "$(date +%s)" -le $end ]; do
		xenstore-read /local/domain/$1/$RA_DATA/ready/$2 >/dev/null 2>&1 && return 0
		xenstore-read /local/domain/$1/$RA_DATA/rc/$2 >/dev/null 2>&1 && return 1
		sleep 0.3
	done
	return 1
}

# du_out DOMID N: the tail of command N's output.
du_out() {
	xenstore-read -R /local/domain/$1/$RA_DATA/out/$2 2>/dev/null
}

# du_sh DOMID SECONDS CMD: run CMD and wait for it; its status (124 = no
# answer in time).
du_sh() {
	_n=$(du_run $1 "$3")
	du_wait $1 $_n $2 || return 124
	return $DU_RC
}

# gn_addr DOMID: that domU's guest-network address (it wrote data/ip
# before its agent said ready).
gn_addr() {
	xenstore-read /local/domain/$1/$RA_DATA/ip 2>/dev/null
}

# gn_sh DOMID SECONDS CMD: du_sh, and the last lines of CMD's output.
gn_sh() {
	_gn=$(du_run $1 "$3")
	du_wait $1 $_gn $2
	_grc=$DU_RC
	du_out $1 $_gn | tail -n 4
	echo	# (the stored output has no final newline)
	[ "$_grc" = 0 ]
}

# ---- results ----
VT_PASS=0
VT_FAIL=0
vt_pass() { echo "VRDMA-TEST $1 PASS"; VT_PASS=$((VT_PASS + 1)); }
vt_fail() { echo "VRDMA-TEST $1 FAIL${2:+ ($2)}"; VT_FAIL=$((VT_FAIL + 1)); }
vt_skip() { echo "VRDMA-TEST $1 SKIP${2:+ ($2)}"; }
# vt_check NAME CMD...: PASS iff CMD succeeds.
vt_check() {
	_name=$1
	shift
	if "$@"; then vt_pass "$_name"; else vt_fail "$_name"; fi
}

# ---- dom0: guest program pairs between domUs $D1 (server) and $D2 ----
# bw_pair SERVICE SIZE ITERS [EXTRA-OPTS]: one vrdma-bw run; 0 iff both
# ends exit 0; BW_ROW = the client's "bw,..." CSV row, BW_OUT its output.
bw_pair() {
	_cmd="timeout 150 vrdma-bw -p $1 -s $2 -n $3 --timeout 60 --csv ${4:-}"
	BW_ROW=
	BW_OUT=
	_ns=$(du_run $D1 "$_cmd" "listening on service")
	du_ready $D1 $_ns 60 || { BW_OUT=$(du_out $D1 $_ns); return 1; }
	_nc=$(du_run $D2 "$_cmd local")
	du_wait $D2 $_nc 170
	_crc=$DU_RC
	du_wait $D1 $_ns 60
	_src=$DU_RC
	BW_OUT=$(du_out $D2 $_nc)
	BW_ROW=$(echo "$BW_OUT" | grep '^bw,' | tail -n 1)
	[ "$_crc" = 0 ] && [ "$_src" = 0 ] && [ -n "$BW_ROW" ]
}

# raw_ping_dom0 TAG: event-channel round trips (vrdma-xen-rawcopy -P, 200)
# between domu1 ($D1, sharing the page) and this dom0; RAW_RTT = the
# typical round trip in us, or "-" (then 1).
raw_ping_dom0() {
	RAW_RTT=-
	_rn=$(du_run $D1 "vrdma-xen-rawcopy -T 60 -P -n 200 -k $1 server 0" sharing)
	if du_ready $D1 $_rn 60 && _ro=$(timeout 90 vrdma-xen-rawcopy -T 60 -k $1 client $D1) &&
	   du_wait $D1 $_rn 60 && [ "$DU_RC" = 0 ]; then
		echo "$_ro" | grep '^client'
		RAW_RTT=$(echo "$_ro" | sed -n 's/^rawping,[0-9]*,\([0-9.]*\),.*/\1/p')
	fi
	[ -n "$RAW_RTT" ] && [ "$RAW_RTT" != - ] && return 0
	RAW_RTT=-
	du_out $D1 $_rn | tail -n 3
	return 1
}

# raw_pair SIZE ITERS: one vrdma-xen-rawcopy run; RAW_MIB = server's MiB/s.
raw_pair() {
	RAW_MIB=
	_ns=$(du_run $D1 "vrdma-xen-rawcopy -T 60 -s $1 -n $2 server $D2" sharing)
	du_ready $D1 $_ns 60 || return 1
	du_sh $D2 90 "vrdma-xen-rawcopy -T 60 client $D1"
	_crc=$?
	du_wait $D1 $_ns 60
	RAW_MIB=$(du_out $D1 $_ns | sed -n 's/^rawcopy,[0-9]*,[0-9]*,\([0-9.]*\)$/\1/p')
	[ "$_crc" = 0 ] && [ "$DU_RC" = 0 ] && [ -n "$RAW_MIB" ]
}
