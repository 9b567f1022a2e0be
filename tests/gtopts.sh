#!/bin/bash
# SPDX-License-Identifier: MIT
# Plain-host check of vrdma-bw / vrdma-lat's command line (issue 13):
#   perftest's letters mean what they mean in perftest; what vrdma cannot
#   honour is refused by name; a bad value names the option and itself;
#   all of these exit 2 without the usage text.  Then real pairs against a
#   private vrdmad: -D, --report_gbits, --output, -Q, -e, -d, -F -R -c RC,
#   -q and -b with --verify, -q at its largest, runs longer than --timeout,
#   a -q mismatch that fails at once, a client that hangs after its first
#   QP, a second client while the server is busy.
# Functional only: no figure is asserted; every wait is bounded.
# Usage: tests/gtopts.sh BUILD_DIR
set -u
B=${1:-build}
B=$(cd "$B" && pwd)
RUN=$(mktemp -d /tmp/vrdma-gtopts.XXXXXX)
export VRDMA_RUN_DIR=$RUN
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

# refused PROG PATTERN ARGS...: exit 2, PATTERN on stderr, no usage text
refused() {
	local prog=$1 pat=$2 rc; shift 2
	timeout 10 "$B/bin/$prog" "$@" >"$RUN/r.out" 2>"$RUN/r.err"
	rc=$?
	if [ $rc -eq 2 ] && grep -qF -- "$pat" "$RUN/r.err" && ! grep -q Usage "$RUN/r.err" &&
	   [ ! -s "$RUN/r.out" ]; then
		ok "$prog $*: $(head -1 "$RUN/r.err")"
	else
		bad "$prog $*: exit $rc, want 2 and '$pat'"
		cat "$RUN/r.err"
	fi
}

# accepted PROG ARGS...: parses (checked with --help: exit 0)
accepted() {
	local prog=$1; shift
	if timeout 10 "$B/bin/$prog" "$@" --help >"$RUN/a.out" 2>&1 && grep -q Usage "$RUN/a.out"; then
		ok "$prog $* accepted"
	else
		bad "$prog $* not accepted"; cat "$RUN/a.out"
	fi
}

for p in vrdma-bw vrdma-lat; do
	refused $p "bad value 'abc' for -s/--size: not a number" -s abc
	refused $p "bad value '12x' for -s/--size: not a number" -s 12x
	refused $p "bad value '16M' for -s/--size: 16777216 is out of range 1..8388608" -s 16M
	refused $p "bad value '0' for -s/--size: 0 is out of range" -s 0
	refused $p "bad value '-5' for -n/--iters: not a number" -n -5
	refused $p "bad value '0x10' for -n/--iters: not a number" -n 0x10
	refused $p "bad value '99999999999999999999' for -n/--iters: out of range" -n 99999999999999999999
	refused $p "bad value ' 5' for -n/--iters: not a number" -n ' 5'
	refused $p "bad value 'host' for -D/--duration: not a number" -D host
	refused $p "the device is -d/--ib-dev" -D host
	refused $p "bad value '0' for -D/--duration: 0 is out of range 1..86400" -D 0
	refused $p "-D/--duration and -n/--iters exclude each other" -D 2 -n 10
	refused $p "-D/--duration runs one size" -D 2 -a
	refused $p "bad value '' for -p/--port: empty" -p ''
	refused $p "bad value 'send' for -m/--mtu: not a number" -m send
	refused $p "the mode is --mode send" -m send
	refused $p "bad value '1500' for -m/--mtu: not one of 256" -m 1500
	refused $p "-m/--mtu is not supported: vrdma sets no path MTU" -m 4096
	refused $p "-T/--tos is not supported" -T 60
	refused $p "bad value 'x' for -T/--tos: not a number" -T x
	refused $p "bad value '0' for -q/--qp: 0 is out of range 1..1024" -q 0
	refused $p "-c/--connection is not supported: vrdma has reliable connected (RC)" -c UD
	refused $p "bad value 'rc2' for -c/--connection: not one of RC" -c rc2
	refused $p "-i/--ib-port is not supported: a vrdma device has one port" -i 2
	refused $p "bad value '256' for -i/--ib-port: 256 is out of range 1..255" -i 256
	refused $p "-x/--gid-index is not supported: a vrdma device has one GID" -x 3
	refused $p "-r/--rx-depth is not supported" -r 64
	refused $p "-S/--sl is not supported" -S 1
	refused $p "-u/--qp-timeout is not supported" -u 14
	refused $p "bad value '0' for --timeout: 0 is out of range 1..3600" --timeout 0
	refused $p "bad value 'x' for --warmup: not a number" --warmup x
	refused $p "bad value 'foo' for --mode: not one of write" --mode foo
	refused $p "bad value 'json' for --output: not one of bandwidth, message_rate, latency" --output json
	refused $p "-s/--size needs a value" -s
	refused $p "unknown option '-z'" -z
	refused $p "unknown option '--bogus'" --bogus
	refused $p "one NODE at most, not also 'b'" a b
	accepted $p -F -R -c RC -i 1 -x 0 -q 1 -d host -p svc -s 4K -n 5
done
refused vrdma-bw "bad value '1025' for -q/--qp: 1025 is out of range 1..1024" -q 1025
# The client refuses what cannot run on either side, before opening anything.
refused vrdma-bw "-q 187 needs 16456 completion entries on this side (88 per QP" -q 187 local
refused vrdma-bw "(at most -q 186 with these options)" -q 187 local
refused vrdma-bw "-q 118 needs 16402 completion entries on this side (139 per QP" -q 118 -b --mode send -s 8 local
refused vrdma-bw "-q 1024 needs 90112 completion entries" -q 1024 local
refused vrdma-bw "-q 16 with 8388608-byte messages (-s) needs a 384 MiB buffer on the server (data region 0 MiB, receives 384 MiB: 3 per QP of 8388608 bytes), vrdma_alloc_buf() takes at most 64 MiB: lower -q, -s or -t" -q 16 -s 8M --mode send local
refused vrdma-bw "(at most -q 2 with these options)" -q 16 -s 8M --mode send local
refused vrdma-bw "needs a 320 MiB buffer on this side (data region 320 MiB" -q 40 -s 8M --verify local
refused vrdma-bw "bad value '4x' for -q/--qp: not a number" -q 4x
refused vrdma-bw "-n/--iters is per QP (as perftest): -n x -q is more than 100000000" -q 100 -n 2000000
refused vrdma-lat "-q/--qp is an option of vrdma-bw" -q 2
refused vrdma-bw "-l/--post_list is not supported" -l 4
refused vrdma-bw "-w/--limit_bw is not supported" -w 0
refused vrdma-bw "the warm-up count is --warmup N" -w 0
refused vrdma-bw "bad value '0' for -t/--tx-depth: 0 is out of range 1..1024" -t 0
refused vrdma-bw "bad value '2000' for -Q/--cq-mod: 2000 is out of range 1..1024" -Q 2000
refused vrdma-bw "bad value 'latency' for --output: vrdma-bw prints bandwidth or message_rate" --output=latency
refused vrdma-bw "--output prints one number: not with --csv or --json" --output=bandwidth --csv
refused vrdma-lat "-b/--bidirectional is an option of vrdma-bw" -b
refused vrdma-lat "-t/--tx-depth is an option of vrdma-bw" -t 8
refused vrdma-lat "--report_gbits is an option of vrdma-bw" --report_gbits
refused vrdma-lat "bad value 'read' for --mode: not one of write, send" --mode read
refused vrdma-lat "bad value 'bandwidth' for --output: vrdma-lat prints latency only" --output=bandwidth
refused vrdma-lat "-e/--events: RDMA WRITE latency polls memory" -e
refused vrdma-lat "-C/--report-cycles is not supported" -C
accepted vrdma-bw -Q 8 -t 16 -e --report_gbits --output=message_rate --mode read
accepted vrdma-bw -q 4 -b --mode send
accepted vrdma-bw --qp=186 --bidirectional -D 5
accepted vrdma-lat --mode send -e --output=latency --warmup 0

# ---- real pairs on a private vrdmad ----
"$B/sbin/vrdmad" -f -S "$RUN" -n gtopts-node >"$RUN/vrdmad.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do timeout 10 "$B/sbin/vrdmactl" -S "$RUN" ping >/dev/null 2>&1 && break; sleep 0.05; done

# run NAME PROG ARGS...: server and client with the same ARGS; both exit 0;
# the client's stdout in $RUN/NAME.c, the server's output in $RUN/NAME.s
run() {
	local name=$1 prog=$2 sp crc; shift 2
	timeout 60 "$B/bin/$prog" -p "$name" --timeout 30 "$@" >"$RUN/$name.s" 2>&1 &
	sp=$!
	for _ in $(seq 200); do grep -qs "listening on service" "$RUN/$name.s" && break; sleep 0.05; done
	timeout 60 "$B/bin/$prog" -p "$name" --timeout 30 "$@" local >"$RUN/$name.c" 2>"$RUN/$name.e"
	crc=$?
	wait $sp || return 1
	[ $crc -eq 0 ] || { cat "$RUN/$name.e"; return 1; }
}
NUM='^[0-9]+\.[0-9]+$'

t0=$(date +%s%N)
if run bwdur vrdma-bw -s 65536 -D 1 --verify -d host -F -R -c RC -i 1 -x 0 -q 1 &&
   [ $(( $(date +%s%N) - t0 )) -ge 1000000000 ] &&
   grep -qE '^ 65536 +[1-9][0-9]* +[0-9.]+ +[0-9.]+' "$RUN/bwdur.c" &&
   grep -q 'BW average\[MiB/sec\]' "$RUN/bwdur.c" && grep -q 'verify: OK' "$RUN/bwdur.c"; then
	ok "vrdma-bw -D 1 --verify: a row after at least 1 s, verify OK"
else
	bad "vrdma-bw -D 1 --verify"; cat "$RUN/bwdur.c" "$RUN/bwdur.s"
fi
if run bwgb vrdma-bw -s 4096 -n 2000 --report_gbits -Q 4 -e &&
   grep -q 'BW peak\[Gb/sec\] *BW average\[Gb/sec\]' "$RUN/bwgb.c" &&
   grep -qE '^ 4096 +2000 ' "$RUN/bwgb.c"; then
	ok "vrdma-bw --report_gbits -Q 4 -e: Gb/sec columns"
else
	bad "vrdma-bw --report_gbits"; cat "$RUN/bwgb.c" "$RUN/bwgb.s"
fi
if run bwout vrdma-bw -s 4096 -n 1000 --mode send --verify --output=bandwidth &&
   [ "$(wc -l <"$RUN/bwout.c")" -eq 1 ] && grep -qE "$NUM" "$RUN/bwout.c"; then
	ok "vrdma-bw --output=bandwidth: one number ($(cat "$RUN/bwout.c"))"
else
	bad "vrdma-bw --output=bandwidth"; cat "$RUN/bwout.c" "$RUN/bwout.s"
fi
if run bwmr vrdma-bw -s 8 -a --output=message_rate --warmup 0 -n 50 &&
   [ "$(grep -cE "$NUM" "$RUN/bwmr.c")" -eq 23 ] && [ "$(wc -l <"$RUN/bwmr.c")" -eq 23 ]; then
	ok "vrdma-bw -a --output=message_rate: 23 numbers, one per size"
else
	bad "vrdma-bw -a --output=message_rate"; cat "$RUN/bwmr.c" "$RUN/bwmr.s"
fi
# -q: N QPs, -n per QP, the row counts all; -b: both stream, the row is the sum
if run bwq4 vrdma-bw -q 4 -s 65536 -n 500 --verify &&
   grep -qE '^ 65536 +2000 +[0-9.]+ +[0-9.]+' "$RUN/bwq4.c" && grep -q 'verify: OK' "$RUN/bwq4.c" &&
   grep -q '4 QP(s), 1 size(s) served, verify: OK' "$RUN/bwq4.s"; then
	ok "vrdma-bw -q 4 --verify: 4 x 500 iterations, verify OK"
else
	bad "vrdma-bw -q 4 --verify"; cat "$RUN/bwq4.c" "$RUN/bwq4.e" "$RUN/bwq4.s"
fi
# The largest -q the client allows runs (write; -b send with 8-byte messages).
if run bwqmax vrdma-bw -q 186 -s 4096 -n 20 &&
   grep -qE '^ 4096 +3720 ' "$RUN/bwqmax.c" && grep -q '186 QP(s)' "$RUN/bwqmax.s"; then
	ok "vrdma-bw -q 186: the largest -q at the default -t runs"
else
	bad "vrdma-bw -q 186"; cat "$RUN/bwqmax.c" "$RUN/bwqmax.e" "$RUN/bwqmax.s"
fi
if run bwqmaxb vrdma-bw -q 117 -b --mode send -s 8 -n 20 --verify &&
   grep -qE '^ 8 +2340 ' "$RUN/bwqmaxb.c" && grep -q 'verify: OK' "$RUN/bwqmaxb.c"; then
	ok "vrdma-bw -q 117 -b --mode send -s 8: the largest -q there runs"
else
	bad "vrdma-bw -q 117 -b --mode send"; cat "$RUN/bwqmaxb.c" "$RUN/bwqmaxb.e" "$RUN/bwqmaxb.s"
fi
for m in write send read; do
	if run bwb$m vrdma-bw -b -s 4096 -n 1000 --mode $m --verify &&
	   grep -qE '^ 4096 +1000 +[0-9.]+ +[0-9.]+' "$RUN/bwb$m.c" && grep -q 'verify: OK' "$RUN/bwb$m.c" &&
	   grep -q "$m mode, bidirectional, 1 QP(s), 1 size(s) served, verify: OK" "$RUN/bwb$m.s"; then
		ok "vrdma-bw -b --mode $m --verify: both ways, verify OK"
	else
		bad "vrdma-bw -b --mode $m --verify"; cat "$RUN/bwb$m.c" "$RUN/bwb$m.e" "$RUN/bwb$m.s"
	fi
done
if run bwqbd vrdma-bw -q 3 -b -D 1 -s 8192 --mode send --verify --csv &&
   grep -qx 'test,mode,bytes,iterations,bw_peak_mib,bw_avg_mib,msg_rate_mpps,qps,bidirectional' "$RUN/bwqbd.c" &&
   grep -qE '^bw,send,8192,[1-9][0-9]*,[0-9.]+,[0-9.]+,[0-9.]+,3,1$' "$RUN/bwqbd.c" &&
   grep -q '# verify: OK' "$RUN/bwqbd.c"; then
	ok "vrdma-bw -q 3 -b -D 1 --mode send --csv: qps and bidirectional columns"
else
	bad "vrdma-bw -q 3 -b -D 1 --csv"; cat "$RUN/bwqbd.c" "$RUN/bwqbd.e" "$RUN/bwqbd.s"
fi
# Waits for DONE / RESULT are --timeout plus -D, and idle limits without -D:
# a run longer than --timeout must still succeed (the last option wins).
t0=$(date +%s%N)
if run bwto vrdma-bw --timeout 2 -D 4 -s 65536 &&
   [ $(( $(date +%s%N) - t0 )) -ge 4000000000 ] && grep -qE '^ 65536 +[1-9]' "$RUN/bwto.c"; then
	ok "vrdma-bw --timeout 2 -D 4: the server's wait for DONE outlives --timeout"
else
	bad "vrdma-bw --timeout 2 -D 4"; cat "$RUN/bwto.c" "$RUN/bwto.e" "$RUN/bwto.s"
fi
t0=$(date +%s%N)
if run bwidle vrdma-bw --timeout 1 -b -s 1M -n 4000 --verify &&
   grep -q 'verify: OK' "$RUN/bwidle.c"; then
	ok "vrdma-bw --timeout 1 -b -n 4000 -s 1M: idle limits, $(( ($(date +%s%N) - t0) / 1000000 )) ms"
else
	bad "vrdma-bw --timeout 1 -b, idle limit"; cat "$RUN/bwidle.c" "$RUN/bwidle.e" "$RUN/bwidle.s"
fi
# A server given -q takes only the same -q: both sides fail at once, saying why.
timeout 60 "$B/bin/vrdma-bw" -p bwmis --timeout 30 -q 2 >"$RUN/bwmis.s" 2>&1 &
sp=$!
for _ in $(seq 200); do grep -qs "listening on service" "$RUN/bwmis.s" && break; sleep 0.05; done
t0=$(date +%s)
timeout 60 "$B/bin/vrdma-bw" -p bwmis --timeout 30 -q 4 -n 10 local >"$RUN/bwmis.c" 2>&1
crc=$?
wait $sp
src=$?
if [ $crc -eq 1 ] && [ $src -eq 1 ] && [ $(( $(date +%s) - t0 )) -lt 10 ] &&
   grep -q 'the server refused: it was started with another -q or -b' "$RUN/bwmis.c" &&
   grep -q 'the client asks for -q 4, this server was started with -q 2: refused' "$RUN/bwmis.s"; then
	ok "vrdma-bw -q 4 against a server's -q 2: refused at once on both sides"
else
	bad "vrdma-bw -q mismatch: client $crc, server $src"; cat "$RUN/bwmis.c" "$RUN/bwmis.s"
fi
# -q without -b in the modes where the client reads and the server receives.
for m in read send; do
	if run bwq3$m vrdma-bw -q 3 -s 8192 -n 50 --mode $m --verify &&
	   grep -qE '^ 8192 +150 ' "$RUN/bwq3$m.c" && grep -q 'verify: OK' "$RUN/bwq3$m.c" &&
	   grep -q "$m mode, 3 QP(s), 1 size(s) served, verify: OK" "$RUN/bwq3$m.s"; then
		ok "vrdma-bw -q 3 --mode $m --verify"
	else
		bad "vrdma-bw -q 3 --mode $m --verify"; cat "$RUN/bwq3$m.c" "$RUN/bwq3$m.e" "$RUN/bwq3$m.s"
	fi
done
# Hostile paths: a client that hangs after its first QP (test hook) makes
# the server give up after its --timeout, saying so; a second client that
# comes meanwhile is told the server is busy, at once; one that comes while
# a run goes on is told nobody listens (a server serves one client).
timeout 30 "$B/bin/vrdma-bw" -p bwhang --timeout 2 -q 3 >"$RUN/bwhang.s" 2>&1 &
sp=$!
for _ in $(seq 200); do grep -qs "listening on service" "$RUN/bwhang.s" && break; sleep 0.05; done
VRDMA_GT_TEST_STOP_QPS=1 timeout 30 "$B/bin/vrdma-bw" -p bwhang --timeout 4 -q 3 -n 10 local \
	>"$RUN/bwhang.c" 2>&1 &
cp=$!
for _ in $(seq 200); do grep -qs "silent after QP 1 of 3" "$RUN/bwhang.c" && break; sleep 0.05; done
t0=$(date +%s)
timeout 30 "$B/bin/vrdma-bw" -p bwhang --timeout 10 -q 3 -n 10 local >"$RUN/bwbusy.c" 2>&1
brc=$?
bt=$(( $(date +%s) - t0 ))
wait $sp
src=$?
wait $cp
if [ $src -eq 1 ] && [ $brc -eq 1 ] && [ $bt -lt 5 ] &&
   grep -q 'timed out waiting for QP 2 of 3 from the client (--timeout 2 s): giving up' "$RUN/bwhang.s" &&
   grep -q 'refusing a request that is not the client' "$RUN/bwhang.s" &&
   grep -q 'the server refused: it is busy with another client' "$RUN/bwbusy.c"; then
	ok "vrdma-bw -q 3: a client hung after QP 1 times the server out; another is told busy"
else
	bad "vrdma-bw -q 3 hung client: server $src, second client $brc after ${bt}s"
	cat "$RUN/bwhang.s" "$RUN/bwhang.c" "$RUN/bwbusy.c"
fi
timeout 60 "$B/bin/vrdma-bw" -p bwone -D 3 >"$RUN/bwone.s" 2>&1 &
sp=$!
for _ in $(seq 200); do grep -qs "listening on service" "$RUN/bwone.s" && break; sleep 0.05; done
timeout 60 "$B/bin/vrdma-bw" -p bwone -D 3 local >"$RUN/bwone.c" 2>&1 &
cp=$!
sleep 1
timeout 30 "$B/bin/vrdma-bw" -p bwone --timeout 10 local >"$RUN/bwtwo.c" 2>&1
brc=$?
wait $sp
src=$?
wait $cp
crc=$?
if [ $brc -eq 1 ] && [ $src -eq 0 ] && [ $crc -eq 0 ] &&
   grep -q 'nobody listens on service bwone' "$RUN/bwtwo.c"; then
	ok "vrdma-bw: a client during another's run is told nobody listens"
else
	bad "vrdma-bw second client during a run: $brc (run: server $src, client $crc)"
	cat "$RUN/bwtwo.c" "$RUN/bwone.c" "$RUN/bwone.s"
fi

t0=$(date +%s%N)
if run latdur vrdma-lat -s 8 -D 1 --verify &&
   [ $(( $(date +%s%N) - t0 )) -ge 1000000000 ] &&
   grep -q 't_avg\[usec\] *tps average' "$RUN/latdur.c" &&
   grep -qE '^ 8 +[1-9][0-9]* +[0-9.]+ +[0-9.]+' "$RUN/latdur.c" &&
   grep -q 'verify: OK' "$RUN/latdur.c" && grep -q '1 size(s) served' "$RUN/latdur.s"; then
	ok "vrdma-lat -D 1 --verify: perftest's duration row after at least 1 s"
else
	bad "vrdma-lat -D 1 --verify"; cat "$RUN/latdur.c" "$RUN/latdur.s"
fi
if run latout vrdma-lat -s 64 -n 200 --mode send -e --output=latency &&
   [ "$(wc -l <"$RUN/latout.c")" -eq 1 ] && grep -qE "$NUM" "$RUN/latout.c"; then
	ok "vrdma-lat --mode send -e --output=latency: one number ($(cat "$RUN/latout.c"))"
else
	bad "vrdma-lat --output=latency"; cat "$RUN/latout.c" "$RUN/latout.s"
fi
if run latcsv vrdma-lat -s 8 -D 1 --mode send --csv &&
   grep -qx 'test,mode,bytes,iterations,t_avg_us,tps' "$RUN/latcsv.c" &&
   grep -qE '^lat,send,8,[1-9][0-9]*,[0-9.]+,[0-9.]+$' "$RUN/latcsv.c"; then
	ok "vrdma-lat -D 1 --csv: duration columns"
else
	bad "vrdma-lat -D 1 --csv"; cat "$RUN/latcsv.c" "$RUN/latcsv.s"
fi

echo "gtopts: $pass passed, $fail failed"
[ $fail -eq 0 ]
