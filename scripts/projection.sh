#!/bin/sh
# SPDX-License-Identifier: MIT
# make bench-projection: what one dom0 core would feed a real NIC, from
# what vrdma costs on this host (docs/performance.md says why each input
# is what it is and what is left out).
# Inputs, measured PROJ_RUNS times (default 2) on the plain host: guests
# are processes, vrdmad is dom0's daemon, the per-WR code is the one that
# runs on Xen.
#   - instructions per WR: bench-cost.sh --csv (callgrind), every row.
#   - CPU time per WR of vrdmad and of the vrdma-bw client, RDMA WRITE
#     between two local guests at 8 B, 4 KiB, 64 KiB, 1 MiB: two runs of
#     N1 and N2 WRs each, (cpu(N2) - cpu(N1)) / (N2 - N1), so connection
#     setup and teardown cancel out.  vrdmad's from the kernel's runtime of
#     its threads (/proc/PID/task/*/schedstat: what utime + stime are
#     scaled to, in ns), the client's from getrusage (bash's time, ms).
#     With hardware counters (perf stat -e cycles,instructions) the 8 B
#     runs give cycles and IPC as well; without them (a VM or container)
#     that is said and CPU time alone is used.
#   - vrdma-bw's bandwidth at each size, and memcpy (vrdma-refbench) at
#     each size over vrdma-bw's footprint: wall-clock MiB/s, and bytes per
#     CPU second (N1/N2 as above).
# Then the projection: dom0 seconds per WR (the worst run) -> WRs per second
# one polling dom0 core sustains -> MiB/s at 4 KiB, 64 KiB, 1 MiB on 10, 25
# and 100 GbE, zero copy (the device path) and with a per-byte copy (a
# path that copies: the dearer of vrdmad's measured copy and memcpy); the
# dom0 share and the sending guest's (its CPU per WR at that size) at that
# rate; and the same with PROJ_DEV_ALT ns per WR added for the device
# path's post + completion, which the local path measured here leaves out.
# Usage: projection.sh BUILD_DIR
#   PROJ_RUNS       runs (default 2)
#   PROJ_CLOCK_MHZ  the target dom0 core's clock (default: this machine's);
#                   per-WR time scales with it, the copy's per byte does not
#   PROJ_DEV_NS     ns per WR added for the NIC provider's post + poll on
#                   the dom0 core (default 0: the NIC's, as rxe's here)
#   PROJ_DEV_ALT    further such figures to project with, assumed, not
#                   measured (default "100 300")
set -u
b=${1:?usage: projection.sh BUILD_DIR}
RUNS=${PROJ_RUNS:-2}
T=${BENCH_TIMEOUT:-300}
DEV_NS=${PROJ_DEV_NS:-0}
DEV_ALT=${PROJ_DEV_ALT-100 300}
here=$(dirname "$0")
. "$here/../bench/bench-lib.sh"

case $RUNS in ''|*[!0-9]*|0) vr_die "PROJ_RUNS must be a positive number" ;; esac
case $DEV_NS in ''|*[!0-9.]*) vr_die "PROJ_DEV_NS must be a number of ns" ;; esac
for d in $DEV_ALT; do
	case $d in *[!0-9.]*) vr_die "PROJ_DEV_ALT must be numbers of ns" ;; esac
done
command -v bash >/dev/null || vr_die "bash is needed (its time gives the client's CPU time)"
for f in sbin/vrdmad sbin/vrdmactl bin/vrdma-bw bin/vrdma-refbench; do
	[ -x "$b/$f" ] || vr_die "$b/$f missing (make first)"
done
host_mhz=$(awk -F: '/^cpu MHz/ { printf "%.0f", $2; exit }' /proc/cpuinfo)
[ -n "$host_mhz" ] || vr_die "no 'cpu MHz' in /proc/cpuinfo"
MHZ=${PROJ_CLOCK_MHZ:-$host_mhz}
case $MHZ in ''|*[!0-9.]*) vr_die "PROJ_CLOCK_MHZ must be a number" ;; esac
vr_start_daemon "$b"
W=$VR_RUN/proj
mkdir -p "$W" || vr_die "mkdir $W failed"

# Hardware counters, or why not.
hw=0
if ! command -v perf >/dev/null; then
	hw_why="perf is not installed"
elif ! perf stat -x, -e cycles,instructions -o "$W/probe" true 2>/dev/null; then
	hw_why="perf stat failed (perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null))"
elif ! awk -F, '$3 ~ /^(cycles|instructions)/ && $1 ~ /^[0-9]/ { n++ } END { exit n != 2 }' "$W/probe"; then
	hw_why="perf has no hardware counters here (cycles, instructions: <not supported>)"
else
	hw=1 hw_why=
fi

# Nanoseconds vrdmad's threads have run.
dom0_ns() {
	cat /proc/"$VR_DPID"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}

# perf stat output (-x,) FILE: "cycles instructions" or "- -".
perf_ci() {
	awk -F, '$3 ~ /^cycles/ && $1 ~ /^[0-9]/ { c = $1 }
		$3 ~ /^instructions/ && $1 ~ /^[0-9]/ { i = $1 }
		END { print (c == "" ? "-" : c), (i == "" ? "-" : i) }' "$1"
}

# timed OUT CMD...: CMD with its stdout in OUT, its CPU seconds (user +
# system, getrusage through bash's time) in OUT.cpu; CMD's status.
timed() {
	bash -c 'o=$1; shift; TIMEFORMAT="%3U %3S"
		{ time "$@" >"$o" 2>"$o.err"; } 2>"$o.time"; rc=$?
		awk "{ print \$1 + \$2 }" "$o.time" >"$o.cpu"; exit $rc' bash "$@"
}

# pair SIZE N TAG: one vrdma-bw WRITE run of N WRs between two guests;
# W/TAG (client CSV), TAG.cpu (client CPU s), TAG.dom0 (vrdmad ns)
# and, with counters, TAG.perf (client) and TAG.dperf (vrdmad).
svc=0
pair() {
	psz=$1 pn=$2 tag=$3
	svc=$((svc + 1))
	vr_server "$W/$tag.srv" timeout "$T" "$b/bin/vrdma-bw" -p "proj-$svc" --timeout 60 ||
		return 1
	pp=
	if [ $hw -eq 1 ]; then
		perf stat -x, -e cycles,instructions -p "$VR_DPID" -o "$W/$tag.dperf" &
		pp=$!
		sleep 0.3
	fi
	d0=$(dom0_ns)
	set -- timeout "$T" "$b/bin/vrdma-bw" -p "proj-$svc" --timeout 60 -s "$psz" -n "$pn" \
		--csv local
	[ $hw -eq 1 ] && set -- perf stat -x, -e cycles,instructions -o "$W/$tag.perf" -- "$@"
	timed "$W/$tag" "$@"
	crc=$?
	d1=$(dom0_ns)
	if [ -n "$pp" ]; then
		kill -INT "$pp" 2>/dev/null
		wait "$pp"
	fi
	vr_server_wait || crc=1
	echo $((d1 - d0)) >"$W/$tag.dom0"
	if [ $crc -ne 0 ]; then
		echo "projection: vrdma-bw -s $psz -n $pn failed:" >&2
		cat "$W/$tag.err" "$W/$tag.srv" >&2
	fi
	return $crc
}

# emit KEY LABEL UNIT VALUE: one input of this run.
emit() { printf '%s|%s|%s|%s\n' "$1" "$2" "$3" "$4" >>"$W/in.$r"; }
# per A B N: (B - A) / N, or "-".
per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { if (a == "-" || b == "-" || n <= 0) print "-"; else printf "%.10g", (b - a) / n }'; }
# csv FILE FIELD: the field of the first data row of a CSV file (or "-").
csv() { awk -F, -v f="$2" 'NR == 2 { print $f; d = 1 } END { if (!d) print "-" }' "$1"; }

# What else used this machine's CPUs over one second (top's second frame).
busy() {
	command -v top >/dev/null || return 0
	top -b -n 2 -d 1 -w 200 2>/dev/null |
		awk -v w="$1" '/^top -/ { f++ }
			f == 2 && $1 ~ /^[0-9]+$/ && $9 + 0 >= 5 { printf "   %s: %s%% %s\n", w, $9, $12 }' |
		head -n 6
}

# N1/N2 per size: about a second of the N2 run on an idle 2-core host.
counts() {
	case $1 in
	8) echo 500000 4000000 ;;
	4096) echo 150000 1200000 ;;
	65536) echo 8000 64000 ;;
	*) echo 400 3200 ;;
	esac
}

# not rc: vr_server_wait (bench-lib.sh) sets that one
failed=0
r=0
while [ $r -lt "$RUNS" ]; do
	r=$((r + 1))
	: >"$W/in.$r"
	dns8=-
	echo "== run $r of $RUNS: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	busy "busy before" >&2
	echo "   instructions per WR (bench-cost.sh --csv, callgrind)" >&2
	"$here/bench-cost.sh" "$b" --csv >"$W/cost.$r" 2>"$W/cost.$r.err" || {
		echo "projection: bench-cost.sh failed:" >&2
		tail -n 5 "$W/cost.$r.err" >&2
		failed=1
	}
	awk -F, '$1 == "cost" && $2 != "where" { print $2, $3 }' "$W/cost.$r" |
		while read -r where v; do
			emit "cg_$where" "callgrind: $where" "instr/WR" "$v"
		done
	[ "$r" -gt 1 ] && { vr_restart_daemon "$b" || vr_die "vrdmad did not come back"; }
	for size in 8 4096 65536 1048576; do
		set -- $(counts $size)
		n1=$1 n2=$2
		echo "   vrdma-bw write $size B: $n1 and $n2 WRs" >&2
		pair $size "$n1" "a$size" && pair $size "$n2" "b$size" || { failed=1; continue; }
		dns=$(per "$(cat "$W/a$size.dom0")" "$(cat "$W/b$size.dom0")" $((n2 - n1)))
		[ $size -eq 8 ] && dns8=$dns
		emit "dom0_ns_$size" "vrdmad CPU per WR, $size B" "ns" "$dns"
		# what vrdmad spends per byte above the 8 B WR: its copy
		[ $size -gt 8 ] && emit "copy_$size" "vrdmad copy, (ns/WR - 8 B ns/WR) per KiB, $size B" "ns/KiB" \
			"$(awk -v a="$dns8" -v b="$dns" -v s=$size 'BEGIN { print ((a == "-" || b == "-") ? "-" : (b - a) * 1024 / s) }')"
		emit "guest_ns_$size" "client CPU per WR, $size B" "ns" \
			"$(per "$(cat "$W/a$size.cpu")" "$(cat "$W/b$size.cpu")" $((n2 - n1)) | awk '{ print (($1 == "-") ? "-" : $1 * 1e9) }')"
		emit "bw_$size" "vrdma-bw bandwidth, $size B" "MiB/s" "$(csv "$W/b$size" 6)"
		emit "rate_$size" "vrdma-bw message rate, $size B" "Mpps" "$(csv "$W/b$size" 7)"
		if [ $size -eq 8 ] && [ $hw -eq 1 ]; then
			set -- $(perf_ci "$W/a$size.dperf") $(perf_ci "$W/b$size.dperf")
			emit dom0_cyc "vrdmad cycles per WR, 8 B (perf)" "cycles" "$(per "$1" "$3" $((n2 - n1)))"
			emit dom0_ins "vrdmad instructions per WR, 8 B (perf)" "instr" "$(per "$2" "$4" $((n2 - n1)))"
			set -- $(perf_ci "$W/a$size.perf") $(perf_ci "$W/b$size.perf")
			emit guest_cyc "client cycles per WR, 8 B (perf)" "cycles" "$(per "$1" "$3" $((n2 - n1)))"
			emit guest_ins "client instructions per WR, 8 B (perf)" "instr" "$(per "$2" "$4" $((n2 - n1)))"
		fi
	done
	for size in 4096 65536 1048576; do
		# the footprint vrdma-bw copies over: 64 slots, at most 16 MiB
		win=$((size * 64)); [ $win -gt 16777216 ] && win=16777216
		set -- $(counts $size)
		n1=$1 n2=$2
		echo "   memcpy $size B over $win B" >&2
		timed "$W/ma$size" timeout "$T" "$b/bin/vrdma-refbench" memcpy -s $size -w $win -n "$n1" --csv &&
		timed "$W/mb$size" timeout "$T" "$b/bin/vrdma-refbench" memcpy -s $size -w $win -n "$n2" --csv ||
			{ failed=1; continue; }
		emit "mc_$size" "memcpy wall-clock, $size B" "MiB/s" "$(csv "$W/mb$size" 5)"
		emit "mccpu_$size" "memcpy per CPU second, $size B" "MiB/s" \
			"$(awk -v a="$(cat "$W/ma$size.cpu")" -v c="$(cat "$W/mb$size.cpu")" -v n=$((n2 - n1)) -v s=$size \
				'BEGIN { print ((c > a) ? sprintf("%.0f", n * s / (c - a) / 1048576) : "-") }')"
	done
	echo "   run $r done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	busy "busy after" >&2
done

echo ""
echo "Machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), ${host_mhz} MHz;" \
	"$(systemd-detect-virt 2>/dev/null || echo "virtualisation unknown")"
if [ $hw -eq 1 ]; then
	echo "Counters: perf stat -e cycles,instructions (hardware) on vrdmad and the client, 8 B runs"
else
	echo "Counters: none: $hw_why; CPU time per WR is used (vrdmad: its threads'"
	echo "  runtime from /proc/PID/task/*/schedstat; client: getrusage).  No IPC measured."
fi
cat "$W"/in.* | awk -F'|' -v runs="$RUNS" -v hmhz="$host_mhz" -v mhz="$MHZ" -v dev="$DEV_NS" -v devalt="$DEV_ALT" '
function num(x) { return x != "" && x != "-" && x ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ }
{
	if (!($1 in lab)) { key[++nk] = $1; lab[$1] = $2; unit[$1] = $3 }
	if (num($4)) {
		v = $4 + 0; n[$1]++; s[$1] += v
		if (!($1 in mn) || v < mn[$1]) mn[$1] = v
		if (!($1 in mx) || v > mx[$1]) mx[$1] = v
	}
}
function mean(k) { return n[k] ? s[k] / n[k] : -1 }
function fmt(x) { return x < 0 ? "-" : x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : x >= 1 ? sprintf("%.2f", x) : sprintf("%.3g", x) }
function sizename(z) { return z >= 1048576 ? z / 1048576 " MiB" : z >= 1024 ? z / 1024 " KiB" : z " B" }
END {
	printf "\nInputs (%d runs: mean, min, max, spread = (max - min) / mean)\n", runs
	printf " %-48s %-9s %10s %10s %10s %7s\n", "input", "unit", "mean", "min", "max", "spread"
	for (i = 1; i <= nk; i++) {
		k = key[i]
		if (!n[k]) { printf " %-48s %-9s %10s\n", lab[k], unit[k], "-"; continue }
		sp = mean(k) ? 100 * (mx[k] - mn[k]) / mean(k) : 0
		printf " %-48s %-9s %10s %10s %10s %6.1f%%\n", lab[k], unit[k], fmt(mean(k)), fmt(mn[k]), fmt(mx[k]), sp
	}
	# Derived from the means: IPC, vrdmad copy rate beside memcpy.
	printf "\nDerived (from the means)\n"
	if (n["dom0_cyc"] && n["dom0_ins"])
		printf " %-58s %10.2f\n", "vrdmad IPC, 8 B (perf)", mean("dom0_ins") / mean("dom0_cyc")
	if (n["guest_cyc"] && n["guest_ins"])
		printf " %-58s %10.2f\n", "client IPC, 8 B (perf)", mean("guest_ins") / mean("guest_cyc")
	if (n["cg_backend_forwarded_8B_write"] && n["dom0_ns_8"])
		printf " %-58s %10.2f\n", "vrdmad apparent IPC: callgrind instr / (CPU ns x MHz), 8 B", \
			mean("cg_backend_forwarded_8B_write") / (mean("dom0_ns_8") * hmhz / 1000)
	nz = split("4096 65536 1048576", sz, " ")
	for (j = 1; j <= nz; j++) {
		z = sz[j]
		if (!n["copy_" z])
			continue
		printf " %-58s %10s\n", "vrdmad copy rate, " sizename(z) ", MiB per CPU second", \
			(mean("copy_" z) > 0 ? sprintf("%.0f", 1e9 / (mean("copy_" z) * 1024)) : "-")
		printf " %-58s %10s\n", "   memcpy, same size and footprint, MiB per CPU second", fmt(mean("mccpu_" z))
		if (n["rate_" z] && n["dom0_ns_" z])
			printf " %-58s %9.0f%%\n", "   vrdmad busy at the vrdma-bw rate, " sizename(z), \
				100 * mean("dom0_ns_" z) * mean("rate_" z) / 1000
	}
	if (!n["dom0_ns_8"]) { print "\nno 8 B vrdmad figure: no projection"; exit 1 }
	# The projection: the worst run of each cost, scaled to the target clock.
	scale = hmhz / mhz
	t = mx["dom0_ns_8"] * scale + dev
	printf "\nProjection: one polling dom0 core at %s MHz (measured at %s MHz), RDMA WRITE, the worst run\n", mhz, hmhz
	printf " dom0 per WR: %.0f ns (vrdmad, 8 B, x %.3f clock) + %s ns (NIC provider) = %.0f ns -> %.2f M WR/s\n", \
		mx["dom0_ns_8"], scale, dev, t, 1000 / t
	# the sending guest: its CPU per WR at each size, which grows with
	# the size (waits, wake-ups), so the 8 B figure would understate it
	gl = ""
	for (j = 1; j <= nz; j++) {
		z = sz[j]
		g[z] = n["guest_ns_" z] ? mx["guest_ns_" z] * scale : -1
		gl = gl sprintf("%s%s %s ns", (j > 1 ? ", " : ""), sizename(z), (g[z] < 0 ? "-" : sprintf("%.0f", g[z])))
	}
	printf " guest per WR (vrdma-bw client, x %.3f clock): %s\n", scale, gl
	printf " link = raw bit rate (no Ethernet/RoCE headers); copy path: + ns per byte of that size, the\n"
	printf " dearer of vrdmad copy and memcpy per CPU second\n"
	printf "%8s %7s %9s | %11s %6s | %11s %6s | %9s %9s %9s\n", "size", "link", "link MiB/s", "zero copy", "bound", \
		"copy path", "bound", "k WR/s", "dom0 CPU", "guest CPU"
	nl = split("10 25 100", ln, " ")
	for (j = 1; j <= nz; j++) {
		z = sz[j]
		for (l = 1; l <= nl; l++) {
			link = ln[l] * 1e9 / 8 / 1048576
			core = z / t * 1e9 / 1048576
			zc = core < link ? core : link
			c = "-"; cb = ""
			if (n["copy_" z]) {
				# ns per byte: the dearer of vrdmad and memcpy
				cpw = mx["copy_" z] > 0 ? mx["copy_" z] / 1024 : 0
				if (n["mccpu_" z] && 1e9 / (mn["mccpu_" z] * 1048576) > cpw)
					cpw = 1e9 / (mn["mccpu_" z] * 1048576)
				cc = z / (t + cpw * z) * 1e9 / 1048576
				c = sprintf("%.0f", cc < link ? cc : link); cb = cc < link ? "dom0" : "link"
			}
			wr = zc * 1048576 / z
			printf "%8s %4s GbE %9.0f | %11.0f %6s | %11s %6s | %9.1f %8.1f%% %8s\n", sizename(z), ln[l], link, zc, \
				(core < link ? "dom0" : "link"), c, cb, wr / 1000, 100 * t * wr / 1e9, \
				(g[z] < 0 ? "-" : sprintf("%.1f%%", 100 * g[z] * wr / 1e9))
		}
	}
	printf " dom0 CPU, guest CPU: share of one core at the zero-copy rate (guest: the sender, its CPU per WR\n"
	printf " at that size, over 100%% if one guest core could not post that fast; a WRITE costs the receiving\n"
	printf " guest nothing).  Comparison: Euro-Par 2011 prototype 681 MiB/s, 34%% guest CPU (10 GbE); Xen2MX\n"
	printf " 1159 of 1192 MB/s (10 GbE).  Assumptions: docs/performance.md.\n"
	# The local path measured here has no ibv_post_send and no device
	# CQE per WR; the device path has both.  Project with guesses for them.
	nd = split(dev " " devalt, dv, " ")
	if (nd < 2)
		exit 0
	printf "\nZero copy with NIC ns per WR added for the device path: ibv_post_send + device CQE (assumed,\n"
	printf " not measured: PROJ_DEV_NS, PROJ_DEV_ALT).  link bound from: the size below which one dom0 core\n"
	printf " is the limit (link rate x dom0 ns per WR)\n"
	printf "%7s %8s %7s | %-24s | %-22s | %s\n", "NIC ns", "dom0 ns", "M WR/s", "link bound from (B)", \
		"4 KiB, 10 GbE", "4 KiB, 100 GbE"
	printf "%7s %8s %7s | %7s %7s %8s | %6s %6s %8s | %6s %6s %8s\n", "", "per WR", "", "10 GbE", "25 GbE", \
		"100 GbE", "MiB/s", "bound", "dom0 CPU", "MiB/s", "bound", "dom0 CPU"
	for (d = 1; d <= nd; d++) {
		if (d > 1 && dv[d] == dev)
			continue
		td = mx["dom0_ns_8"] * scale + dv[d]
		printf "%7s %8.0f %7.2f |", dv[d], td, 1000 / td
		# link rate (Gbit/s / 8 = bytes per ns) x ns per WR
		for (l = 1; l <= nl; l++)
			printf (l < nl ? " %7.0f" : " %8.0f"), ln[l] / 8 * td
		split("1 3", li, " ")
		for (q = 1; q <= 2; q++) {
			link = ln[li[q]] * 1e9 / 8 / 1048576
			core = 4096 / td * 1e9 / 1048576
			zc = core < link ? core : link
			printf " | %6.0f %6s %7.1f%%", zc, (core < link ? "dom0" : "link"), 100 * td * (zc * 1048576 / 4096) / 1e9
		}
		printf "\n"
	}
}' || failed=1
[ $failed -eq 0 ] || echo "projection: some steps failed (see above)" >&2
exit $failed
