# SPDX-License-Identifier: MIT
# Suite "prio" (make bench-prio-xen): issue 5's benchmark (docs/prio.md,
# scripts/bench-prio.sh) on Xen.  A domain has one vrdma device, so each
# guest below is its own domain: domu1..4 run the servers, domu5..8 the
# senders whose bytes are counted (D1..D8).  Settings go through xenstore
# (vrdmactl set writes the backend dir keys) and stay while the device is
# attached, so classes are set before the guest processes start.
#   1. domu5..8 flood (vrdma-bw WRITE 1 MiB), equal weights, then 1:2:3:4
#      live: shares beside targets; the shares over time as a data block
#      (VRDMA-DATA) the host plots.
#   2. domu5 class high (vrdma-lat 8 B p99, vrdma-bw 64 KiB) solo and
#      against domu6..8 flooding in class low.
# A benchmark: nothing passes or fails on a figure; the VRDMA-TEST lines
# say whether each program ran.  Flooders run until killed (by pid) at the
# end of their phase; every wait has a limit.
# Kernel command line: vrdma.win=S (window, default 5), vrdma.lat=N
# (latency iterations, default 2000), vrdma.bw=N (64 KiB writes, 20000).

kopt() { v=$(sed -n "s/.*vrdma\.$1=\([0-9]*\).*/\1/p" /proc/cmdline); echo "${v:-$2}"; }
WIN=$(kopt win 5)
LAT_ITERS=$(kopt lat 2000)
BW_ITERS=$(kopt bw 20000)
SRV="$D1 $D2 $D3 $D4"
SND="$D5 $D6 $D7 $D8"

# "domid tx_bytes qdelay_n qdelay_sum_us qdelay_max_us" per guest
tx_all() {
	ctl stats -j | awk '{
		n = split($0, p, "\"domid\":")
		for (i = 2; i <= n; i++) {
			d = p[i]; sub(/[^0-9].*/, "", d)
			printf "%s", d
			split("tx_bytes qdelay_n qdelay_sum_us qdelay_max_us", f, " ")
			for (j = 1; j <= 4; j++) {
				v = p[i]; sub(".*\"" f[j] "\":", "", v); sub(/[^0-9].*/, "", v)
				printf " %s", v
			}
			printf "\n"
		} }'
}
# tx DOMID [FILE]: its tx_bytes (from FILE, a saved tx_all)
tx_of() { awk -v d=$1 '$1 == d { print $2 }' ${2:-/tmp/prio.now}; }
now() { cut -d' ' -f1 /proc/uptime; }

# flood SERVER SENDER SERVICE: a 1 MiB WRITE flooder that runs until
# killed; /tmp/fl.DOMID = the command number in each domU.  -T is long:
# the server waits for the client's DONE as one wait.  (-n: 1 TiB,
# hours under TCG; vrdma-bw keeps a sample per iteration, so not more.)
flood() {
	_s=$(du_run $1 "timeout 900 vrdma-bw -p $3 --timeout 850" "listening on service")
	echo $_s >/tmp/fl.$1
	du_ready $1 $_s 60 || return 1
	du_run $2 "timeout 900 vrdma-bw -p $3 -s 1M -n 1000000 --timeout 850 local & echo \$! >/tmp/flood.pid; wait \$!" >/tmp/fl.$2
}

# flowing DOMIDS...: bounded wait until each sender moved bytes; a
# flooder that ended already is shown and fails it at once
flowing() {
	for _ in $(seq 60); do
		tx_all >/tmp/prio.now
		ok=1
		for d in "$@"; do
			[ "$(tx_of $d)" -gt 0 ] 2>/dev/null || ok=0
			if xenstore-read /local/domain/$d/data/rc/$(cat /tmp/fl.$d) >/dev/null 2>&1; then
				echo "flooder in dom$d ended:"
				du_out $d $(cat /tmp/fl.$d) | tail -n 5
				return 1
			fi
		done
		[ $ok = 1 ] && return 0
		sleep 0.5
	done
	return 1
}

# unflood SENDERS...: kill the flooders (by pid), wait for both ends; a
# flooder that ended by itself before makes the figures worthless: FAIL
unflood() {
	for d in "$@"; do
		if xenstore-read /local/domain/$d/data/rc/$(cat /tmp/fl.$d) >/dev/null 2>&1; then
			vt_fail prio-flooder-dom$d-ran "ended before the end of its phase"
			du_out $d $(cat /tmp/fl.$d) | tail -n 5
		fi
	done
	for d in "$@"; do du_sh $d 30 'kill $(cat /tmp/flood.pid)'; done
	for d in $SRV $SND; do
		[ -e /tmp/fl.$d ] && du_wait $d $(cat /tmp/fl.$d) 90
		rm -f /tmp/fl.$d
	done
}

# ---- 1. shares ----
i=0
for s in $SRV; do
	i=$((i + 1))
	eval c=\$D$((i + 4))
	ctl set $c weight=1 class=normal >/dev/null
	flood $s $c fl$i || vt_fail prio-flooder-$i "server did not listen"
done
if flowing $SND; then
	vt_pass prio-flooders-flowing
else
	vt_fail prio-flooders-flowing "$(cat /tmp/prio.now | tr '\n' ' ')"
	unflood $SND
	return 0	# nothing to measure (dom0's /init goes on to finish)
fi
dat=/tmp/bench-prio-shares.dat
sleep 1
tx_all >/tmp/prio.prev
t0=$(now)
# sample: one line "t share5..share8" over the last interval (one awk:
# every process costs under TCG)
sample() {
	tx_all >/tmp/prio.now
	awk -v a="$t0" -v b="$(now)" -v snd="$SND" 'FNR == NR { p[$1] = $2; next }
		{ c[$1] = $2 }
		END {
			n = split(snd, s, " ")
			for (i = 1; i <= n; i++) { d[i] = c[s[i]] - p[s[i]]; tot += d[i] }
			line = sprintf("%.2f", b - a)
			for (i = 1; i <= n; i++) line = line sprintf(" %.4f", tot ? d[i] / tot : 0)
			print line
		}' /tmp/prio.prev /tmp/prio.now >>$dat
	cp /tmp/prio.now /tmp/prio.prev
}
: >$dat
for _ in $(seq $((WIN * 2))); do sleep 0.5; sample; done
tchg=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
i=0
for d in $SND; do
	i=$((i + 1))
	if ctl set $d weight=$i >/dev/null &&
	   [ "$(xenstore-read /local/domain/0/backend/vrdma/$d/0/weight)" = $i ]; then
		vt_pass prio-set-weight-$i
	else
		vt_fail prio-set-weight-$i
	fi
done
sleep 0.5
sample
cp /tmp/prio.now /tmp/prio.w0
ta=$(now)
for _ in $(seq $((WIN * 2))); do sleep 0.5; sample; done
tb=$(now)
cp /tmp/prio.now /tmp/prio.w1
unflood $SND
for d in $SND; do ctl set $d weight=1 >/dev/null; done

# ---- 2. a high-class guest against three low-class flooders ----
ctl set $D5 class=high >/dev/null
for d in $D6 $D7 $D8; do ctl set $d class=low >/dev/null; done
vt_check prio-class-in-xenstore [ "$(xenstore-read /local/domain/0/backend/vrdma/$D5/0/class)" = high ]

# pair TAG PROG ARGS: server in domu1, client in domu5 (class high); the
# client's CSV data row in /tmp/prio-TAG.csv, its queue-delay counters'
# change in /tmp/prio-TAG.qd ("n sum_us")
pair() {
	tag=$1 prog=$2
	shift 2
	tx_all >/tmp/prio.q0
	ns=$(du_run $D1 "timeout 300 $prog -p $tag --timeout 60 --csv" "listening on service")
	if ! du_ready $D1 $ns 60; then
		vt_fail prio-$tag "server did not listen"
		return 1
	fi
	nc=$(du_run $D5 "timeout 300 $prog -p $tag --timeout 60 --csv $* local")
	du_wait $D5 $nc 320
	crc=$DU_RC
	du_wait $D1 $ns 60
	du_out $D5 $nc | grep -E '^(lat|bw),' | tail -n 1 >/tmp/prio-$tag.csv
	tx_all >/tmp/prio.q1
	awk -v d=$D5 'FNR == 1 { f++ } $1 == d && f == 1 { n = $3; s = $4 }
		$1 == d && f == 2 { print $3 - n, $4 - s }' /tmp/prio.q0 /tmp/prio.q1 >/tmp/prio-$tag.qd
	vt_check prio-$tag [ "$crc" = 0 ] && [ -s /tmp/prio-$tag.csv ]
}
measure() {
	pair lat$1 vrdma-lat -s 8 -n $LAT_ITERS
	pair bw$1 vrdma-bw -s 64K -n $BW_ITERS
}
measure solo
i=1
for d in $D6 $D7 $D8; do
	i=$((i + 1))
	eval s=\$D$i
	flood $s $d low$i || vt_fail prio-low-$i "server did not listen"
done
flowing $D6 $D7 $D8 && vt_pass prio-low-flowing || vt_fail prio-low-flowing
sleep 1
measure loaded
unflood $D6 $D7 $D8

# ---- results ----
fld() { cut -d, -f$2 /tmp/prio-$1.csv; }
qd() { awk '{ print $1 ? $2 / $1 : 0 }' /tmp/prio-$1.qd; }
echo "VRDMA-DATA-BEGIN bench-prio-shares.dat"
echo "# t_s share_dom$D5 share_dom$D6 share_dom$D7 share_dom$D8 (weights equal, 1:2:3:4 from t=$tchg s)"
echo "# change_at $tchg"
cat $dat
echo "VRDMA-DATA-END"
echo "VRDMA-SHOW-BEGIN"
echo "== 1. four flooders (vrdma-bw WRITE 1 MiB), one domU each, weights 1:2:3:4, ${WIN} s window"
printf "%-8s %6s %10s %8s %8s\n" guest weight MiB/s share target
tot=0
for d in $SND; do tot=$((tot + $(tx_of $d /tmp/prio.w1) - $(tx_of $d /tmp/prio.w0))); done
i=0
for d in $SND; do
	i=$((i + 1))
	awk -v g="dom$d" -v w=$i -v b=$(($(tx_of $d /tmp/prio.w1) - $(tx_of $d /tmp/prio.w0))) \
		-v t=$tot -v s="$ta" -v e="$tb" 'BEGIN {
		printf "%-8s %6d %10.0f %7.1f%% %7.1f%%\n", g, w, b / (e - s) / 1048576,
			t ? 100 * b / t : 0, 100 * w / 10 }'
done
awk -v t=$tot -v s="$ta" -v e="$tb" 'BEGIN { printf "total    %6s %10.0f\n", "", t / (e - s) / 1048576 }'
echo
echo "== 2. high-class guest (dom$D5) vs 3 low-class flooders (dom$D6 dom$D7 dom$D8, vrdma-bw WRITE 1 MiB)"
printf "%-30s %10s %14s %8s\n" metric solo "vs flooders" ratio
awk -v s="$(fld latsolo 10)" -v l="$(fld latloaded 10)" 'BEGIN {
	printf "%-30s %10.1f %14.1f %7.2fx\n", "vrdma-lat 8 B p99 (us)", s, l, s ? l / s : 0 }'
awk -v s="$(fld latsolo 7)" -v l="$(fld latloaded 7)" 'BEGIN {
	printf "%-30s %10.1f %14.1f %7.2fx\n", "vrdma-lat 8 B typical (us)", s, l, s ? l / s : 0 }'
awk -v s="$(fld bwsolo 6)" -v l="$(fld bwloaded 6)" 'BEGIN {
	printf "%-30s %10.0f %14.0f %7.1f%%\n", "vrdma-bw 64 KiB (MiB/s)", s, l, s ? 100 * l / s : 0 }'
awk -v s="$(qd bwsolo)" -v l="$(qd bwloaded)" 'BEGIN {
	printf "%-30s %10.0f %14.0f\n", "  its queue delay avg (us)", s, l }'
echo "(Xen 4.17 PV under QEMU TCG, one vCPU per domU, 2 for dom0, on $(grep -c ^processor /proc/cpuinfo) dom0 CPUs: compare ratios, not absolutes)"
echo "VRDMA-SHOW-END"
