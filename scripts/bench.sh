#!/bin/sh
# SPDX-License-Identifier: MIT
# make bench: vrdma beside what this machine does without it.
# For 4 KiB, 64 KiB, 1 MiB, 4 MiB: vrdma-bw RDMA WRITE between two local
# guests, Debian's unmodified ib_write_bw through vrdma-run between two
# local guests (same size and count), vrdma-refbench memcpy and tcp; then
# 8-byte vrdma-lat write beside ib_write_lat, refbench shmlat and shmrelay
# (the split driver's shape: client -> relay -> server).  One table at the
# end, then Open MPI ping-pong and Allreduce between two guests (pml ucx
# over vrdma beside UCX's shm and tcp); then instructions per WR
# (bench-cost.sh).
# Usage: bench.sh BUILD_DIR [--csv|--json]
set -u
b=${1:?usage: bench.sh BUILD_DIR [--csv|--json]}
fmt=${2:-text}
T=${BENCH_TIMEOUT:-120}
LAT_ITERS=${BENCH_LAT_ITERS:-10000}
. "$(dirname "$0")/../bench/bench-lib.sh"

case $fmt in text|--csv|--json) ;; *) vr_die "unknown format $fmt" ;; esac
for f in sbin/vrdmad sbin/vrdmactl bin/vrdma-bw bin/vrdma-lat bin/vrdma-refbench; do
	[ -x "$b/$f" ] || vr_die "$b/$f missing (make first)"
done
vr_start_daemon "$b"
rb="$b/bin/vrdma-refbench"

# field N of the first CSV row starting with TAG in FILE (or "-")
field() { awk -F, -v t="$1" -v n="$3" '$1 == t { print $n; f = 1; exit } END { if (!f) print "-" }' "$2"; }

# Iterations: about 512 MiB per size, at least 200.
iters_for() { n=$((536870912 / $1)); [ $n -lt 200 ] && n=200; [ $n -gt 20000 ] && n=20000; echo $n; }

# vrdma_pair PROG SERVICE OUT ARGS...: server in the background, client here.
vrdma_pair() {
	prog=$1 svc=$2 out=$3; shift 3
	vr_server "$VR_RUN/server.log" timeout "$T" "$b/bin/$prog" -p "$svc" --timeout 30 || return 1
	timeout "$T" "$b/bin/$prog" -p "$svc" --timeout 30 --csv "$@" local >"$out" 2>"$out.err"
	crc=$?
	vr_server_wait || true
	if [ $crc -ne 0 ]; then
		echo "$prog $* failed (exit $crc):" >&2
		cat "$out.err" "$VR_RUN/server.log" >&2
	fi
	return $crc
}

# perftest through vrdma (skipped, "-", when perftest is not installed).
PT_PORT=19950
# pt_run PROG FILE ARGS...: server in the background, client here; the
# client's numbers row in FILE.
pt_run() {
	prog=$1 out=$2; shift 2
	PT_PORT=$((PT_PORT + 1))
	: >"$out"
	command -v "$prog" >/dev/null || return 0
	timeout "$T" "$b/bin/vrdma-run" "$prog" -x 0 -F -p $PT_PORT "$@" >"$out.srv" 2>&1 &
	pts=$!
	hex=$(printf ':%04X ' $PT_PORT)
	i=0
	while ! grep -q "$hex.* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null &&
	      kill -0 $pts 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05; i=$((i + 1))
	done
	timeout "$T" "$b/bin/vrdma-run" "$prog" -x 0 -F -p $PT_PORT "$@" 127.0.0.1 >"$out.cli" 2>&1
	ptc=$?
	wait $pts
	if [ $ptc -ne 0 ]; then
		echo "$prog $* failed (exit $ptc):" >&2
		tail -n 5 "$out.cli" >&2
		return 1
	fi
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$out.cli" | tail -n 1 >"$out"
}
# column N of pt_run's row (or "-")
ptf() { awk -v n="$2" '{ print $n; f = 1 } END { if (!f) print "-" }' "$1"; }

rc=0
: >"$VR_RUN/table"
for size in 4096 65536 1048576 4194304; do
	n=$(iters_for $size)
	echo "== $size bytes: vrdma-bw write, memcpy, tcp" >&2
	vrdma_pair vrdma-bw "bench-$size" "$VR_RUN/bw.$size" -s "$size" -n "$n" || rc=1
	pt_run ib_write_bw "$VR_RUN/pt.$size" -s "$size" -n "$n" || rc=1
	# memcpy over the footprint vrdma-bw uses (64 slots, at most 16 MiB)
	win=$((size * 64)); [ $win -gt 16777216 ] && win=16777216
	timeout "$T" "$rb" memcpy -s $size -w $win --csv >"$VR_RUN/mc.$size" || rc=1
	timeout "$T" "$rb" tcp -s $size --csv >"$VR_RUN/tcp.$size" || rc=1
	# perftest's MB/sec is 2^20 bytes per second, as MiB/s here
	echo "$size $(field bw "$VR_RUN/bw.$size" 6) $(field memcpy "$VR_RUN/mc.$size" 5) $(field tcp "$VR_RUN/tcp.$size" 5) $(ptf "$VR_RUN/pt.$size" 4)" >>"$VR_RUN/table"
done
echo "== 8 bytes: vrdma-lat write, shmlat" >&2
vrdma_pair vrdma-lat bench-lat "$VR_RUN/lat" -s 8 -n "$LAT_ITERS" || rc=1
pt_run ib_write_lat "$VR_RUN/ptlat" -s 8 -n "$LAT_ITERS" || rc=1
# ib_write_lat: t_typical is column 5, t_avg 6, 99% 8 (half round trip)
pt_typ=$(ptf "$VR_RUN/ptlat" 5) pt_avg=$(ptf "$VR_RUN/ptlat" 6) pt_p99=$(ptf "$VR_RUN/ptlat" 8)
# ib_write_lat busy-polls: on a small host it holds the core a normal
# vrdmad waits for; again with vrdmad's data path at SCHED_RR (--rt-prio).
: >"$VR_RUN/ptrt"
if command -v ib_write_lat >/dev/null && vr_restart_daemon "$b" --rt-prio 1; then
	pt_run ib_write_lat "$VR_RUN/ptrt" -s 8 -n "$LAT_ITERS" || rc=1
	vr_restart_daemon "$b" || vr_die "vrdmad did not come back"
else
	command -v ib_write_lat >/dev/null &&
		echo "bench: vrdmad --rt-prio 1 not permitted here: that row is '-'" >&2
	vr_restart_daemon "$b" || vr_die "vrdmad did not come back"
fi
rt_typ=$(ptf "$VR_RUN/ptrt" 5) rt_avg=$(ptf "$VR_RUN/ptrt" 6) rt_p99=$(ptf "$VR_RUN/ptrt" 8)
timeout "$T" "$rb" shmlat --csv >"$VR_RUN/shm" || rc=1
# the floor of the split driver's shape: client -> relay -> server, spinning
timeout "$T" "$rb" shmrelay --csv >"$VR_RUN/relay" || rc=1
lat_typ=$(field lat "$VR_RUN/lat" 7) lat_avg=$(field lat "$VR_RUN/lat" 8)
lat_p99=$(field lat "$VR_RUN/lat" 10)
shm_typ=$(field shmlat "$VR_RUN/shm" 6) shm_avg=$(field shmlat "$VR_RUN/shm" 7)
shm_p99=$(field shmlat "$VR_RUN/shm" 9)
rel_typ=$(field shmrelay "$VR_RUN/relay" 6) rel_avg=$(field shmrelay "$VR_RUN/relay" 7)
rel_p99=$(field shmrelay "$VR_RUN/relay" 9)

# Open MPI between two plain-host guests: tests/mpi_check.c --bench (the
# OSU benchmarks' columns) through vrdma-run with pml ucx on vrdma's
# transports, beside the same program on UCX's own shared memory and
# TCP (no vrdma-run).  Two ranks on this host, mpirun's default binding;
# vrdma's data path is vrdmad, a third process on the same cores.
# pml_ucx_tls and _devices any: pml ucx declines a transport list
# without rc_verbs, ud_verbs or mlx5's (shm, tcp) unless told.
# mpi_run TAG UCX_TLS [vrdma-run]: the program's output in $VR_RUN/mpi.TAG
mpi_run() {
	: >"$VR_RUN/mpi.$1"
	[ -x "$VR_RUN/mpi_check" ] || return 0
	echo "== Open MPI ping-pong, Allreduce: pml ucx, UCX_TLS=$2" >&2
	timeout "$T" mpirun $mpi_root --oversubscribe -np 2 --mca pml ucx \
		--mca pml_ucx_tls any --mca pml_ucx_devices any -x VRDMA_RUN_DIR \
		-x UCX_TLS="$2" ${3:+-x UCX_NET_DEVICES=vrdma0:1} ${3:+"$3"} "$VR_RUN/mpi_check" --bench \
		>"$VR_RUN/mpi.$1" 2>"$VR_RUN/mpi.$1.err" && return 0
	echo "mpirun over $2 failed:" >&2
	tail -n 5 "$VR_RUN/mpi.$1.err" >&2
	: >"$VR_RUN/mpi.$1"
	return 1
}
mpi_root=
[ "$(id -u)" -eq 0 ] && mpi_root=--allow-run-as-root
mpi_note=
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
	mpi_note="mpicc or mpirun missing (libopenmpi-dev, openmpi-bin): no MPI columns"
elif ! mpicc -O2 -o "$VR_RUN/mpi_check" "$(dirname "$0")/../tests/mpi_check.c" 2>"$VR_RUN/mpicc.err"; then
	mpi_note="mpicc failed: $(head -n 3 "$VR_RUN/mpicc.err")"
	rc=1
fi
mpi_moved() {
	m=$("$b/sbin/vrdmactl" -S "$VR_RUN" -j stats | sed -n 's/.*"totals":{[^}]*"tx_bytes": *\([0-9]*\).*/\1/p')
	echo "${m:-0}"
}
if [ -e /dev/infiniband/uverbs-vrdma0 ]; then
	m0=$(mpi_moved)
	mpi_run vrdma rc_verbs,ud_verbs,self "$b/bin/vrdma-run" || rc=1
	mpi_bytes=$(($(mpi_moved) - m0))
else
	: >"$VR_RUN/mpi.vrdma"
	mpi_bytes=-
	[ -n "$mpi_note" ] || mpi_note="no /dev/infiniband/uverbs-vrdma0 (docs/verbs.md): UCX cannot list vrdma0"
fi
mpi_run shm sm,self || rc=1
mpi_run tcp tcp,self || rc=1

awk -v fmt="$fmt" -v lt="$lat_typ" -v la="$lat_avg" -v lp="$lat_p99" \
    -v st="$shm_typ" -v sa="$shm_avg" -v sp="$shm_p99" \
    -v rt="$rel_typ" -v ra="$rel_avg" -v rp="$rel_p99" \
    -v pt="$pt_typ" -v pa="$pt_avg" -v pp="$pt_p99" \
    -v qt="$rt_typ" -v qa="$rt_avg" -v qp="$rt_p99" '
function ratio(a, b) { return (a == "-" || b == "-" || b + 0 == 0) ? "-" : sprintf("%.3f", a / b) }
{ sz[NR] = $1; v[NR] = $2; m[NR] = $3; t[NR] = $4; p[NR] = $5 }
END {
	if (fmt == "--csv") {
		print "size,vrdma_write_mib,perftest_write_mib,memcpy_mib,tcp_mib,vrdma_over_memcpy,vrdma_over_tcp,perftest_over_vrdma_bw"
		for (i = 1; i <= NR; i++)
			printf "%s,%s,%s,%s,%s,%s,%s,%s\n", sz[i], v[i], p[i], m[i], t[i], ratio(v[i], m[i]), ratio(v[i], t[i]), ratio(p[i], v[i])
		print "latency,typical_us,avg_us,p99_us"
		printf "vrdma_write_8B,%s,%s,%s\nperftest_write_8B,%s,%s,%s\nshm_pingpong_8B,%s,%s,%s\n", lt, la, lp, pt, pa, pp, st, sa, sp
		printf "perftest_write_8B_vrdmad_rt,%s,%s,%s\n", qt, qa, qp
		printf "shm_relay_8B,%s,%s,%s\nvrdma_over_relay_typical,%s,,\n", rt, ra, rp, ratio(lt, rt)
	} else if (fmt == "--json") {
		printf "{\"bandwidth\":["
		for (i = 1; i <= NR; i++)
			printf "%s{\"size\":%s,\"vrdma_write_mib\":\"%s\",\"perftest_write_mib\":\"%s\",\"memcpy_mib\":\"%s\",\"tcp_mib\":\"%s\",\"vrdma_over_memcpy\":\"%s\",\"vrdma_over_tcp\":\"%s\",\"perftest_over_vrdma_bw\":\"%s\"}", (i > 1 ? "," : ""), sz[i], v[i], p[i], m[i], t[i], ratio(v[i], m[i]), ratio(v[i], t[i]), ratio(p[i], v[i])
		printf "],\"latency\":{\"vrdma_write_8B\":{\"typical_us\":\"%s\",\"avg_us\":\"%s\",\"p99_us\":\"%s\"},", lt, la, lp
		printf "\"perftest_write_8B\":{\"typical_us\":\"%s\",\"avg_us\":\"%s\",\"p99_us\":\"%s\"},", pt, pa, pp
		printf "\"perftest_write_8B_vrdmad_rt\":{\"typical_us\":\"%s\",\"avg_us\":\"%s\",\"p99_us\":\"%s\"},", qt, qa, qp
		printf "\"shm_pingpong_8B\":{\"typical_us\":\"%s\",\"avg_us\":\"%s\",\"p99_us\":\"%s\"},", st, sa, sp
		printf "\"shm_relay_8B\":{\"typical_us\":\"%s\",\"avg_us\":\"%s\",\"p99_us\":\"%s\"},\"vrdma_over_relay_typical\":\"%s\"}", rt, ra, rp, ratio(lt, rt)
	} else {
		print "Bandwidth (MiB/s, average; MiB = 2^20; memcpy over the same footprint as vrdma-bw;"
		print "perftest: Debian ib_write_bw through vrdma-run, same size and count)"
		printf "%10s | %12s | %12s | %10s | %12s | %12s | %13s | %10s\n", "size", "vrdma-bw", "perftest", "pt/bw", "memcpy", "TCP", "vrdma/memcpy", "vrdma/TCP"
		for (i = 1; i <= NR; i++)
			printf "%10s | %12s | %12s | %10s | %12s | %12s | %13s | %10s\n", sz[i], v[i], p[i], ratio(p[i], v[i]), m[i], t[i], ratio(v[i], m[i]), ratio(v[i], t[i])
		print ""
		print "Latency, 8 bytes, half round trip (usec)"
		printf "%-26s | %10s | %10s | %10s\n", "", "typical", "avg", "99%"
		printf "%-26s | %10s | %10s | %10s\n", "vrdma-lat write", lt, la, lp
		printf "%-26s | %10s | %10s | %10s\n", "ib_write_lat (vrdma-run)", pt, pa, pp
		printf "%-26s | %10s | %10s | %10s\n", "  ... vrdmad --rt-prio 1", qt, qa, qp
		printf "%-26s | %10s | %10s | %10s\n", "shared-page ping-pong", st, sa, sp
		printf "%-26s | %10s | %10s | %10s\n", "shared-page relay (3 proc)", rt, ra, rp
		printf "vrdma-lat / relay floor (typical): %s\n", ratio(lt, rt)
	}
}' "$VR_RUN/table"
# The MPI tables: one row per size, a column per transport ("-": none).
awk -v fmt="$fmt" -v note="$mpi_note" -v moved="$mpi_bytes" '
FNR == 1 { t = (FILENAME ~ /vrdma$/) ? 1 : (FILENAME ~ /shm$/) ? 2 : 3; sec = "" }
/^# ping-pong/ { sec = "pp"; next }
/^# Allreduce/ { sec = "ar"; next }
/^#/ || NF < 2 { next }
sec == "pp" { if (!($1 in pl)) { pp[++npp] = $1; pl[$1] = 1 } lat[$1, t] = $2; bw[$1, t] = $3 }
sec == "ar" { if (!($1 in al)) { ar[++nar] = $1; al[$1] = 1 } arl[$1, t] = $2 }
function v(a, k, t) { return ((k, t) in a) ? a[k, t] : "-" }
END {
	if (fmt == "--csv") {
		print "mpi_size,vrdma_lat_us,shm_lat_us,tcp_lat_us,vrdma_mbs,shm_mbs,tcp_mbs"
		for (i = 1; i <= npp; i++)
			printf "%s,%s,%s,%s,%s,%s,%s\n", pp[i], v(lat, pp[i], 1), v(lat, pp[i], 2), v(lat, pp[i], 3), v(bw, pp[i], 1), v(bw, pp[i], 2), v(bw, pp[i], 3)
		print "mpi_allreduce_size,vrdma_us,shm_us,tcp_us"
		for (i = 1; i <= nar; i++)
			printf "%s,%s,%s,%s\n", ar[i], v(arl, ar[i], 1), v(arl, ar[i], 2), v(arl, ar[i], 3)
	} else if (fmt == "--json") {
		printf ",\"mpi\":{\"vrdma_bytes\":\"%s\",\"pingpong\":[", moved
		for (i = 1; i <= npp; i++)
			printf "%s{\"size\":%s,\"vrdma_lat_us\":\"%s\",\"shm_lat_us\":\"%s\",\"tcp_lat_us\":\"%s\",\"vrdma_mbs\":\"%s\",\"shm_mbs\":\"%s\",\"tcp_mbs\":\"%s\"}", (i > 1 ? "," : ""), pp[i], v(lat, pp[i], 1), v(lat, pp[i], 2), v(lat, pp[i], 3), v(bw, pp[i], 1), v(bw, pp[i], 2), v(bw, pp[i], 3)
		printf "],\"allreduce\":["
		for (i = 1; i <= nar; i++)
			printf "%s{\"size\":%s,\"vrdma_us\":\"%s\",\"shm_us\":\"%s\",\"tcp_us\":\"%s\"}", (i > 1 ? "," : ""), ar[i], v(arl, ar[i], 1), v(arl, ar[i], 2), v(arl, ar[i], 3)
		printf "]}}\n"
	} else {
		print ""
		print "Open MPI 4.1, pml ucx, 2 ranks on this host (tests/mpi_check.c --bench, OSU columns):"
		print "vrdma = vrdma-run, UCX_TLS=rc_verbs,ud_verbs,self on vrdma0:1; shm = UCX_TLS=sm,self;"
		print "tcp = UCX_TLS=tcp,self (loopback).  Latency: half round trip; MB/s: 10^6 bytes/s,"
		printf "windows of 64 sends.  Bytes through vrdma during its run: %s\n", moved
		if (note != "") print "(" note ")"
		printf "%10s | %9s | %9s | %9s | %10s | %10s | %10s\n", "size", "vrdma us", "shm us", "tcp us", "vrdma MB/s", "shm MB/s", "tcp MB/s"
		for (i = 1; i <= npp; i++)
			printf "%10s | %9s | %9s | %9s | %10s | %10s | %10s\n", pp[i], v(lat, pp[i], 1), v(lat, pp[i], 2), v(lat, pp[i], 3), v(bw, pp[i], 1), v(bw, pp[i], 2), v(bw, pp[i], 3)
		print ""
		print "MPI_Allreduce (int64 sum), 2 ranks, average us"
		printf "%10s | %9s | %9s | %9s\n", "size", "vrdma", "shm", "tcp"
		for (i = 1; i <= nar; i++)
			printf "%10s | %9s | %9s | %9s\n", ar[i], v(arl, ar[i], 1), v(arl, ar[i], 2), v(arl, ar[i], 3)
	}
}' "$VR_RUN/mpi.vrdma" "$VR_RUN/mpi.shm" "$VR_RUN/mpi.tcp"
[ $rc -eq 0 ] || echo "bench: some steps failed (see above)" >&2
exit $rc
