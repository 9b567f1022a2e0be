#!/bin/bash
# SPDX-License-Identifier: MIT
# Debian's own, unmodified verbs programs (ibverbs-utils, perftest) on
# vrdma's libibverbs through build/bin/vrdma-run, against a private vrdmad.
# One case per program run: VRDMA-TEST verbs-<name> PASS|FAIL, then
# "N passed, N failed".  Cases in PENDING wait for a libvrdma/backend
# change (named beside them): they report XFAIL instead of FAIL, and
# XPASS (counted as passed) once they work -- then drop them from PENDING.
# Usage: tests/verbs.sh BUILD_DIR [CASE...]
set -u
B=${1:-build}
B=$(cd "$B" && pwd)
shift || true
ONLY="$*"
RUN=$(mktemp -d /tmp/vrdma-verbs.XXXXXX)
export VRDMA_RUN_DIR=$RUN
LOG=$RUN/vrdmad.log
VR=$B/bin/vrdma-run
T=60					# seconds any one program may take
pass=0 fail=0 xfail=0
DPID=

# case -> what it waits for
declare -A PENDING=(
)

cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	jobs -p | xargs -r kill -9 2>/dev/null
	rm -rf "$RUN"
}
trap cleanup EXIT

for p in ibv_devinfo ibv_rc_pingpong ib_write_bw; do
	if ! command -v $p >/dev/null; then
		echo "verbs: $p missing (apt-get install ibverbs-utils perftest); skipped"
		exit 0
	fi
done

# An ASan build of the library in uninstrumented programs: the runtime
# must come first.
if objdump -p "$B/lib/vrdma/libibverbs.so.1" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
	export LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so) $(${CC:-cc} -print-file-name=libubsan.so)"
	export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
fi

ctl() { timeout 10 "$B/sbin/vrdmactl" -S "$RUN" "$@"; }

start_daemon() {
	LD_PRELOAD= "$B/sbin/vrdmad" -f -S "$RUN" -n verbs-node >"$LOG" 2>&1 &
	DPID=$!
	for _ in $(seq 100); do
		LD_PRELOAD= ctl ping >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "vrdmad did not start:"; cat "$LOG"
	return 1
}

# Is something listening on TCP port $1?  Read from /proc: connecting to
# find out would be taken for the client by perftest's server.
listening() {
	local hex; hex=$(printf ':%04X ' "$1")
	grep -q "$hex.* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }

report() {
	local name=$1 ok=$2 out=$3
	if [ "$ok" = 1 ]; then
		if [ -n "${PENDING[$name]:-}" ]; then
			echo "VRDMA-TEST verbs-$name PASS (XPASS)"
		else
			echo "VRDMA-TEST verbs-$name PASS"
		fi
		pass=$((pass + 1))
		return
	fi
	echo "---- $name output:"; tail -n 25 "$out"
	if [ -n "${PENDING[$name]:-}" ]; then
		echo "VRDMA-TEST verbs-$name XFAIL (pending: ${PENDING[$name]})"
		xfail=$((xfail + 1))
	else
		echo "VRDMA-TEST verbs-$name FAIL"
		fail=$((fail + 1))
	fi
}

# single NAME PATTERN PROGRAM ARGS...: one program, output must match.
single() {
	local name=$1 pat=$2; shift 2
	want "$name" || return 0
	local out=$RUN/$name.out ok=0
	timeout $T "$VR" "$@" >"$out" 2>&1 && grep -Eq "$pat" "$out" && ok=1
	report "$name" $ok "$out"
}

PORT=19100
# pair NAME PATTERN PROGRAM ARGS...: server, then client to 127.0.0.1;
# both must exit 0 and the client's output match PATTERN.
pair() {
	local name=$1 pat=$2; shift 2
	want "$name" || return 0
	local prog=$1; shift
	local out=$RUN/$name.out sp src crc ok=0
	PORT=$((PORT + 1))
	: >"$out"
	timeout $T "$VR" "$prog" -p $PORT "$@" >"$RUN/$name.srv" 2>&1 &
	sp=$!
	for _ in $(seq 200); do
		listening $PORT && break
		kill -0 $sp 2>/dev/null || break
		sleep 0.05
	done
	timeout $T "$VR" "$prog" -p $PORT "$@" 127.0.0.1 >"$RUN/$name.cli" 2>&1
	crc=$?
	wait $sp
	src=$?
	{ echo "== server (exit $src)"; cat "$RUN/$name.srv";
	  echo "== client (exit $crc)"; cat "$RUN/$name.cli"; } >"$out"
	[ $src -eq 0 ] && [ $crc -eq 0 ] && grep -Eq "$pat" "$RUN/$name.cli" && ok=1
	report "$name" $ok "$out"
}

start_daemon || exit 1
echo "vrdmad up, pid $DPID"

BW='^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'
LAT='^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+'
PT="-x 0 -n 1000 -s 4096"

single devinfo "hca_id:[[:space:]]+vrdma0" ibv_devinfo
single devinfo_v "GID\[ *0\]:.*RoCE v2" ibv_devinfo -v
pair rc_pingpong "iters in" ibv_rc_pingpong -g 0 -n 1000
pair rc_pingpong_events "iters in" ibv_rc_pingpong -g 0 -n 1000 -e
pair write_bw "$BW" ib_write_bw $PT
pair write_bw_old "$BW" ib_write_bw $PT --use_old_post_send
pair write_bw_all "$BW" ib_write_bw -x 0 -a -n 200
# perftest posts through ibv_wr_* only on devices it knows: borrow a
# ConnectX-5 part number for the ibv_qp_ex path.
VRDMA_VERBS_PART_ID=4119 pair write_bw_wr "ibv_wr\* API +: ON" ib_write_bw $PT
VRDMA_VERBS_PART_ID=4119 pair send_bw_wr "$BW" ib_send_bw $PT
pair write_bw_inline "$BW" ib_write_bw -x 0 -n 1000 -s 64 -I 64
pair read_bw "$BW" ib_read_bw $PT
pair send_bw "$BW" ib_send_bw $PT
pair send_bw_events "$BW" ib_send_bw $PT -e
pair atomic_bw "$BW" ib_atomic_bw -x 0 -n 1000
pair write_lat "$LAT" ib_write_lat $PT
pair send_lat "$LAT" ib_send_lat $PT

# every guest gone from vrdmad once the programs exited
if want leaks; then
	ok=0
	for _ in $(seq 50); do
		LD_PRELOAD= ctl census | grep -q '"guests": *0[,}]' && { ok=1; break; }
		sleep 0.1
	done
	LD_PRELOAD= ctl census >"$RUN/leaks.out" 2>&1
	report leaks $ok "$RUN/leaks.out"
fi

echo "$pass passed, $fail failed${xfail:+, $xfail pending (XFAIL)}"
[ "$fail" -eq 0 ]
