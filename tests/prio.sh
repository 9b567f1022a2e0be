#!/bin/bash
# SPDX-License-Identifier: MIT
# Plain-host check of issue 5's controls against the real vrdmad:
#   vrdmactl set/get round trip on a live guest, bad values refused with a
#   message saying what is allowed, stats counters moving, top without a tty,
#   a VM's settings back when it reconnects as the same VRDMA_VM.
# Functional only: no timing is asserted; every wait is bounded.
# Usage: tests/prio.sh BUILD_DIR
set -u
B=${1:-build}
B=$(cd "$B" && pwd)
RUN=$(mktemp -d /tmp/vrdma-prio.XXXXXX)
export VRDMA_RUN_DIR=$RUN
LOG=$RUN/vrdmad.log
pass=0
fail=0
DPID=

cleanup() {
	jobs -p | xargs -r kill 2>/dev/null
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$RUN"
}
trap cleanup EXIT

ok()  { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; return 1; fi; }
ctl() { timeout 10 "$B/sbin/vrdmactl" -S "$RUN" "$@"; }

# refused NAME PATTERN ARGS...: exit 1 and PATTERN in the message
refused() {
	local pat=$1; shift
	ctl "$@" >"$RUN/r.out" 2>&1 && return 1
	grep -q -- "$pat" "$RUN/r.out" || { cat "$RUN/r.out"; return 1; }
}

# tx_bytes of guest $1 from stats -j
tx_of() {
	ctl stats -j | tr '{' '\n' | grep -A1 "\"domid\":$1," | \
		sed -n 's/.*"tx_bytes":\([0-9]*\).*/\1/p' | head -1
}

"$B/sbin/vrdmad" -f -S "$RUN" -n prio-node >"$LOG" 2>&1 &
DPID=$!
for _ in $(seq 100); do ctl ping >/dev/null 2>&1 && break; sleep 0.05; done
check "vrdmad up" ctl ping

timeout 60 "$B/bin/vrdma-bw" -p prio -s 65536 -n 100000000 --timeout 30 >"$RUN/bs.out" 2>&1 &
BS=$!
# the client connects once the server listens (slow under ASan), so it is
# the newer guest of the two
for _ in $(seq 200); do grep -qs "listening on service" "$RUN/bs.out" && break; sleep 0.05; done
timeout 60 "$B/bin/vrdma-bw" -p prio -s 65536 -n 100000000 --timeout 30 local >"$RUN/bc.out" 2>&1 &
BC=$!
vm=
for _ in $(seq 100); do
	# The client, which sends, said HELLO last: the higher domain id.
	# One snapshot for both questions (two calls raced the client).
	ids=$(ctl stats -j | tr '{' '\n' | sed -n 's/.*"domid":\([0-9]*\),.*/\1/p' | sort -n)
	vm=$(echo "$ids" | tail -n 1)
	[ -n "$vm" ] && [ "$(echo "$ids" | wc -l)" -ge 2 ] && break
	sleep 0.1
done
check "two guests running" [ -n "$vm" ]

# ---- set / get ----
check "set accepted" ctl set "$vm" weight=3 class=high rate=512M/s,4M qps=64 mem=512M
ctl get "$vm" >"$RUN/get.out" 2>&1
for kv in weight=3 class=high rate=536870912,4194304 qps=64 mem=536870912; do
	check "get shows $kv" grep -q "$kv" "$RUN/get.out"
done
check "set by name" ctl set "dom$vm/0" weight=2 rate=unlimited class=normal
check "get by name" bash -c "timeout 10 '$B/sbin/vrdmactl' -S '$RUN' get dom$vm/0 | grep -q 'weight=2 class=normal rate=0'"

# ---- refused ----
check "weight=0 refused" refused "allowed: an integer 1..1000" set "$vm" weight=0
check "class refused" refused "high, normal or low" set "$vm" class=urgent
check "rate refused" refused "BYTES\[/s\]" set "$vm" rate=fast
check "qps refused" refused "1..1024" set "$vm" qps=5000
check "unknown key refused" refused "unknown key" set "$vm" colour=red
check "unknown guest refused" refused "no guest" get 4242
check "nothing stored by a refused set" bash -c "timeout 10 '$B/sbin/vrdmactl' -S '$RUN' get $vm | grep -q 'weight=2 '"

# ---- counters ----
t0=$(tx_of "$vm"); t1=$t0
for _ in $(seq 50); do
	sleep 0.1
	t1=$(tx_of "$vm")
	[ "${t1:-0}" -gt "${t0:-0}" ] && break
done
check "stats: tx_bytes moving ($t0 -> $t1)" [ "${t1:-0}" -gt "${t0:-0}" ] ||
	{ ctl stats; tail -5 "$RUN/bs.out" "$RUN/bc.out"; }
check "stats text has the table" bash -c "timeout 10 '$B/sbin/vrdmactl' -S '$RUN' stats | grep -q '^VM .*QDLY'"
ctl top -n 2 </dev/null | cat >"$RUN/top.out"
check "top -n 2 without a tty: two tables" [ "$(grep -c '^VM ' "$RUN/top.out")" = 2 ]

kill $BC $BS 2>/dev/null
wait $BC $BS 2>/dev/null

# ---- a VM's settings outlive its process (VRDMA_VM names the VM) ----
# vm_up NAME: a vrdma-bw server connected as VM NAME (in VS); bounded wait
vm_up() {
	VRDMA_VM=$1 timeout 60 "$B/bin/vrdma-bw" -p "keep$2" --timeout 30 >"$RUN/vm$2.out" 2>&1 &
	VS=$!
	for _ in $(seq 100); do
		grep -qs "listening on service" "$RUN/vm$2.out" && return 0
		sleep 0.05
	done
	return 1
}
vm_down() { kill "$VS" 2>/dev/null; wait "$VS" 2>/dev/null; }
check "VM keep-me up" vm_up keep-me 1
check "set by VM name" ctl set keep-me weight=5 class=low
check "bad VRDMA_VM refused" bash -c "VRDMA_VM='a b' timeout 20 '$B/bin/vrdma-bw' -p other --timeout 5 2>&1 | grep -q 'bad VRDMA_VM'"
VS1=$VS
check "a second guest of keep-me" vm_up keep-me 3
check "VM name of two guests refused" refused "has 2 guests now" get keep-me
vm_down
VS=$VS1
vm_down
# the guest is gone once 'get' shows what is stored for the VM (bounded)
for _ in $(seq 50); do ctl get keep-me 2>/dev/null | grep -q stored=yes && break; sleep 0.1; done
check "keep-me gone: get shows its stored settings" bash -c \
	"timeout 10 '$B/sbin/vrdmactl' -S '$RUN' get keep-me | grep -q 'vm=keep-me devid=0 stored=yes weight=5 class=low'"
check "a VM never seen: no guest" refused "no guest" get never-seen
check "VM keep-me back (new process)" vm_up keep-me 2
check "its settings came back" bash -c "timeout 10 '$B/sbin/vrdmactl' -S '$RUN' get keep-me | grep -q 'vm=keep-me weight=5 class=low'"
vm_down
check "daemon alive" ctl ping
[ $fail -ne 0 ] && tail -20 "$LOG"
echo "prio: $pass passed, $fail failed"
[ $fail -eq 0 ]
