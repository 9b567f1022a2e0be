#!/bin/bash
# SPDX-License-Identifier: MIT
# make bench-scale: N pairs of guests on one node (plain host), all at
# once, 64 KiB RDMA WRITE with vrdma-bw; for N in 1 8 64 128 (256 guests,
# the node's limit): aggregate bandwidth and its ratio to one pair, guests
# that failed to connect or run, vrdmad's CPU over the run, and vrdmad's
# memory and fds per guest (anonymous memory only: the guests' mapped
# buffers are theirs).  Not a test: nothing is asserted.
# Usage: bench-scale.sh BUILD_DIR [N...]   (env VRDMAD_ARGS, e.g. --rt-prio 1)
set -u
b=${1:?usage: bench-scale.sh BUILD_DIR [N...]}
shift
COUNTS=${*:-1 8 64 128}
BYTES=${SCALE_BYTES:-1073741824}	# per pair per run (1 pair: ~50 ms at 256 MiB)
T=${BENCH_TIMEOUT:-600}
for f in sbin/vrdmad sbin/vrdmactl bin/vrdma-bw bin/vrdma-refbench; do
	[ -x "$b/$f" ] || { echo "bench-scale: $b/$f missing (make first)" >&2; exit 1; }
done
run=$(mktemp -d "${TMPDIR:-/tmp}/vrdma-scale.XXXXXX") || exit 1
dpid=
cleanup() {
	jobs -p | xargs -r kill 2>/dev/null
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export VRDMA_RUN_DIR="$run"
ulimit -n 65536 2>/dev/null || true

# shellcheck disable=SC2086  # VRDMAD_ARGS: extra vrdmad options, split
"$b/sbin/vrdmad" -f -S "$run" ${VRDMAD_ARGS:-} >"$run/vrdmad.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do
	timeout 5 "$b/sbin/vrdmactl" -S "$run" ping 2>/dev/null | grep -q pong && break
	sleep 0.1
done

kill -0 "$dpid" 2>/dev/null && timeout 5 "$b/sbin/vrdmactl" -S "$run" ping 2>/dev/null | grep -q pong ||
	{ echo "bench-scale: vrdmad did not start:" >&2; tail -n 5 "$run/vrdmad.log" >&2; exit 1; }
# Every guest here is this uid, one tenant: let it have the whole node
# (a tenant's default share is a quarter: docs/tenants.md).
timeout 5 "$b/sbin/vrdmactl" -S "$run" set tenant:default guests=256 listeners=256 conns=256 >/dev/null ||
	{ echo "bench-scale: vrdmactl set tenant:default failed" >&2; exit 1; }

ticks() { awk '{ print $14 + $15 }' "/proc/$dpid/stat"; }
anon_kb() { awk '/^RssAnon:/ { print $2 }' "/proc/$dpid/status"; }
nfds() { ls "/proc/$dpid/fd" | wc -l; }
hz=$(getconf CLK_TCK)
base_anon=$(anon_kb) base_fds=$(nfds)
iters=$((BYTES / 65536))

printf '%6s %8s %12s %10s %12s %8s %10s %12s %10s %12s %9s\n' pairs guests "sum MiB/s" "vs 1 pair" "wall MiB/s" failed \
	"vrdmad CPU" "anon KiB/g" "fds/guest" "copy ceil" "sum/ceil"
one=
for n in $COUNTS; do
	rm -f "$run"/s.* "$run"/c.*
	for i in $(seq "$n"); do
		timeout "$T" "$b/bin/vrdma-bw" -p "sc$i" --timeout 120 >"$run/s.$i" 2>&1 &
	done
	for _ in $(seq 600); do
		[ "$(grep -l "listening on service" "$run"/s.* 2>/dev/null | wc -l)" -ge "$n" ] && break
		sleep 0.1
	done
	t0=$(date +%s%N) k0=$(ticks) peak_anon=0 peak_fds=0
	for i in $(seq "$n"); do
		timeout "$T" "$b/bin/vrdma-bw" -p "sc$i" --timeout 120 -s 65536 -n "$iters" --csv local \
			>"$run/c.$i" 2>&1 &
	done
	# sample vrdmad while the clients run
	while [ "$(jobs -rp | wc -l)" -gt 1 ]; do
		a=$(anon_kb) f=$(nfds)
		[ "$a" -gt "$peak_anon" ] && peak_anon=$a
		[ "$f" -gt "$peak_fds" ] && peak_fds=$f
		sleep 0.2
	done
	wait_pids=$(jobs -p | grep -vx "$dpid")
	[ -n "$wait_pids" ] && wait $wait_pids 2>/dev/null
	t1=$(date +%s%N) k1=$(ticks)
	ok=$(grep -l '^bw,' "$run"/c.* 2>/dev/null | wc -l)
	failed=$((n - ok))
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
	agg=$(awk -v n="$ok" -v by="$BYTES" -v s="$secs" 'BEGIN { printf "%.0f", n * by / 1048576 / s }')
	# each client's own clock (perftest's): their sum is the aggregate
	# while they run together, without the processes' start-up
	sum=$(cat "$run"/c.* 2>/dev/null | awk -F, '$1 == "bw" { s += $6 } END { printf "%.0f", s }')
	[ -z "$one" ] && one=$sum
	# The copy's own ceiling for this many pairs: one memcpy thread over
	# their footprint (each vrdma-bw side cycles 64 slots of 64 KiB: 4 MiB;
	# past 256 MiB it is DRAM either way).  One copy per byte is the design.
	win=$((n * 4)); [ $win -gt 256 ] && win=256
	ceil=$(timeout 60 "$b/bin/vrdma-refbench" memcpy -s 65536 -w ${win}M --csv 2>/dev/null |
		awk -F, '$1 == "memcpy" { printf "%.0f", $5 }')
	cpu=$(awk -v d=$((k1 - k0)) -v hz="$hz" -v s="$secs" 'BEGIN { printf "%.0f%%", 100 * d / hz / s }')
	printf '%6s %8s %12s %10s %12s %8s %10s %12s %10s %12s %9s\n' "$n" $((2 * n)) "$sum" \
		"$(awk -v a="$sum" -v o="$one" 'BEGIN { printf "%.2f", o ? a / o : 0 }')" "$agg" "$failed" "$cpu" \
		"$(( (peak_anon - base_anon) / (2 * n) ))" \
		"$(awk -v f=$((peak_fds - base_fds)) -v g=$((2 * n)) 'BEGIN { printf "%.1f", f / g }')" \
		"${ceil:--}" "$(awk -v a="$sum" -v c="${ceil:-0}" 'BEGIN { if (c > 0) printf "%.2f", a / c; else print "-" }')"
	[ "$failed" -gt 0 ] && grep -h -m1 -i "error\|fail\|refus" "$run"/c.* "$run"/s.* 2>/dev/null | sort | uniq -c | head -3
done
echo "(sum: of each client's average, its clock from its first measured post; wall: all clients'"
echo " bytes over the wall time from the first start to the last end, start-up included;"
echo " vrdmad CPU: its user+system time over that time; anon KiB and fds: vrdmad's peak during the run"
echo " over its idle state, per guest; copy ceil: memcpy 64 KiB over the pairs' footprint,"
echo " N x 4 MiB (at most 256 MiB), the bound of one copy per byte;"
echo " disconnects in vrdmad's log: $(grep -c 'disconnecting' "$run/vrdmad.log"))"
