# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Sourced by suite-xbench.sh (make bench-cluster) on both nodes, after
# xen-pair.sh: Debian's ib_send_bw and ib_send_lat natively between the
# two dom0s and the same binary and flags through vrdma between domu1 of
# each node, in two CPU layouts, in polling and in event mode (-e; the
# SEND verb, since perftest has no event mode for WRITE), MX_REPS times each,
# native and vrdma runs taking turns so both see the same moment of the
# rig.  Around every run each node reads its domains' CPU seconds from
# Xen (xl list: the hypervisor's per-domain counters, 0.1 s steps); b
# hands its own to a, and a prints the table (VRDMA-SHOW).
#
# The layouts: bench-layout.sh.
# shellcheck disable=SC2154  # NODE, D1, VPID come from the dom0 /init

MX_REPS=${MX_REPS:-2}
MX_BW=${MX_BW:-"8:200 4096:200 65536:200 1048576:20"}
MX_LAT=${MX_LAT:-"8:200"}
MX_LAYOUTS=${MX_LAYOUTS:-"shared split"}
MX_MODES=${MX_MODES:-"poll event"}
mx_res=$T/matrix.res
: >$mx_res
. /vrdma/bench-layout.sh

for mx_l in $MX_LAYOUTS; do
	mx_layout $mx_l
	for mx_m in $MX_MODES; do
		for mx_r in $(seq 1 "$MX_REPS"); do
			for mx_spec in $MX_BW; do
				for mx_side in native vrdma; do
					mx_one $mx_side send_bw ${mx_spec%:*} ${mx_spec#*:} $mx_l $mx_m $mx_r
				done
			done
			for mx_spec in $MX_LAT; do
				for mx_side in native vrdma; do
					mx_one $mx_side send_lat ${mx_spec%:*} ${mx_spec#*:} $mx_l $mx_m $mx_r
				done
			done
		done
	done
done
# Whatever runs next (ucx_perftest, vrdma-bw) runs in the split layout.
mx_layout split >/dev/null

[ "$NODE" = a ] || return 0
echo "VRDMA-SHOW-BEGIN"
echo "== perftest, node a -> node b, same Debian binary and flags both ways, $MX_REPS runs of each"
echo "== (native: between the dom0s' rxe0; vrdma: domu1 -> vrdmad -> rxe0 -> vrdmad -> domu1)"
mx_conditions
echo "== layouts: shared: dom0 and domu1 on CPU 0; split: dom0 on CPU 0, domu1 (or the native perftest) on CPU 1"
echo "== value: mean of the runs (spread: (max - min) / mean); bw MB/s, lat us typical one way"
echo "== CPU s/GiB: Xen's CPU seconds per GiB moved, both nodes summed, dom0 | domU, from 64 KiB up;"
echo "==   a run's CPU less its 8-byte run's (same layout, mode, side and rep: start, connect, calibrate)"
awk -v BWSPEC="$MX_BW" '
{
	k = $1 " " $2 " " $3 " " $4
	if (!(k in seen)) { seen[k] = 1; order[n++] = k }
	s = k " " $5
	if ($7 != "-") { sum[s] += $7; cnt[s]++
		if (!(s in mn) || $7 < mn[s]) mn[s] = $7
		if (!(s in mx) || $7 > mx[s]) mx[s] = $7 }
	# each run: its own CPU (both nodes) and its 8-byte run key
	r++; rs[r] = s; rsz[r] = $2; rt[r] = $1
	rk[r] = $3 " " $4 " " $5 " " $6
	rd0[r] = $8 + ($10 == "-" ? 0 : $10); rdu[r] = $9 + ($11 == "-" ? 0 : $11)
	if ($1 == "send_bw" && $2 == 8) { f0[rk[r]] = rd0[r]; fu[rk[r]] = rdu[r] }
}
function mean(s) { return cnt[s] ? sum[s] / cnt[s] : -1 }
function fig(s,    m) {
	m = mean(s)
	if (m < 0) return sprintf("%-17s", "-")
	return sprintf("%9.2f (%3.0f%%)  ", m, m > 0 ? 100 * (mx[s] - mn[s]) / m : 0)
}
function cpu(s,    g) {
	g = bytes[s] / 1073741824
	if (g <= 0) return "-"
	return sprintf("%.0f | %.0f", d0[s] / g, du[s] / g)
}
BEGIN {
	nb = split(BWSPEC, b, " ")
	for (i = 1; i <= nb; i++) { split(b[i], p, ":"); ITERS[p[1]] = p[2] }
	printf " %-7s %-6s %-9s %-8s %-17s %-17s %-16s %-14s %s\n", "layout", "mode", "test",
	       "#bytes", "native (spread)", "vrdma (spread)", "vrdma/native", "CPU nat d0|dU", "CPU vrdma d0|dU"
}
END {
	for (j = 1; j <= r; j++) {
		if (rt[j] != "send_bw" || rsz[j] < 65536 || !(rk[j] in f0)) continue
		d0[rs[j]] += rd0[j] - f0[rk[j]]; du[rs[j]] += rdu[j] - fu[rk[j]]
		bytes[rs[j]] += rsz[j] * ITERS[rsz[j]]
	}
	for (i = 0; i < n; i++) {
		split(order[i], q, " ")
		nat = order[i] " native"; vr = order[i] " vrdma"
		x = "-"
		if (mean(nat) > 0 && mean(vr) > 0 && q[1] ~ /_lat$/)
			x = sprintf("%+.1f us (x%.2f)", mean(vr) - mean(nat), mean(vr) / mean(nat))
		else if (mean(nat) > 0 && mean(vr) > 0)
			x = sprintf("%.2f", mean(vr) / mean(nat))
		printf " %-7s %-6s %-9s %-8s %s %s %-16s %-14s %s\n", q[4], q[3], q[1], q[2],
		       fig(nat), fig(vr), x, cpu(nat), cpu(vr)
	}
}' $mx_res
echo "VRDMA-SHOW-END"
