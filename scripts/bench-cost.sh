#!/bin/sh
# SPDX-License-Identifier: MIT
# make bench-cost (and the last table of make bench): instructions per work
# request, counted by callgrind, so the figure is the same on a busy or an
# idle machine and a change can be judged by it.
#   backend: vrdmad under callgrind while two local guests (native) run
#            vrdma-bw 8-byte RDMA WRITE, N1 and then N2 WRs; the difference
#            of the two over N2 - N1 (connection setup cancels out).  The
#            figure counts the data path only: vd_poll inclusive (every
#            scheduler round: ring pull, checks, copy, CQEs, flush and
#            doorbell).  The whole daemon's total (the method until issue
#            11) is printed too, but it is noisy: key-store watches and
#            per-connection work (hd_process, vbe_node_watch,
#            vbe_prio_load) run a timing-dependent number of times, so it
#            moved by ~50 per WR between runs of one build (643..691 seen;
#            issue 11 reports up to ~250), while the vd_poll figure moved
#            by ~10 (the number of polls the WRs spread over varies).
#            Wake-ups (vd_arm, the guest fd) are outside vd_poll; they are
#            per sleep, not per WR, and small.
#   guest:   the vrdma-bw client under callgrind, only inside
#            vrdma_post_send and vrdma_poll_cq (one post and one poll per
#            WR, as vrdma-bw reaps after every post), N1 and N2 the same way.
#   verbs:   what a verbs program pays: vrdma-verbs-cost (bench/verbs_cost.c,
#            the standard libibverbs API only) through vrdma-run, so
#            through verbs/'s libibverbs.so.1, the same loop as vrdma-bw's
#            (tx-depth 64, a signaled WR in 32, a poll of up to 16 after
#            each post); counted only inside its calls of ibv_post_send and
#            ibv_poll_cq that go with a WR (exactly one of each per WR; the
#            waits for room and the final drain are not counted), N1 and
#            N2 the same way.  The sleeps of ibv_poll_cq's idle rule
#            (vrdma_wait_cq after many empty polls) are left out: they are
#            per sleep, not per WR, and their number depends on timing.
#            libvrdma's part (vrdma_post_send and vrdma_poll_cq inclusive)
#            is taken from the same runs, so the rest is the verbs layer's
#            own cost, whatever the loop.  Not Debian's perftest:
#            ib_write_bw posts until tx-depth WRs are out and then polls
#            once per round, ib_write_lat spins on empty polls until each
#            completion, so the polls a WR pays there depend on timing.
#   coll:    the collectives' reduction kernels (common/coll/vcoll_reduce.c):
#            vrdma-coll-bench cost under callgrind, only inside vcoll_fold,
#            COST_COLL_REPS folds (4) of two 1 MiB sources, sum of int32
#            and of double; instructions per element of the result.  They
#            depend on the build's instruction set (SSE2 unless CFLAGS
#            say more), not on the machine's load.
# Usage: bench-cost.sh BUILD_DIR [--csv]
#   COST_KEEP=DIR keeps the callgrind files there (callgrind_annotate them).
set -u
b=${1:?usage: bench-cost.sh BUILD_DIR [--csv]}
fmt=${2:-text}
N1=${COST_N1:-2000}
N2=${COST_N2:-12000}
COLL_REPS=${COST_COLL_REPS:-4}
T=${BENCH_TIMEOUT:-300}
for t in valgrind callgrind_annotate; do
	command -v $t >/dev/null || { echo "bench-cost: $t not installed: skipped"; exit 0; }
done
for f in sbin/vrdmad sbin/vrdmactl bin/vrdma-bw bin/vrdma-run bin/vrdma-verbs-cost \
	bin/vrdma-coll-bench; do
	[ -x "$b/$f" ] || { echo "bench-cost: $b/$f missing (make first)" >&2; exit 1; }
done
run=$(mktemp -d "${TMPDIR:-/tmp}/vrdma-cost.XXXXXX") || exit 1
dpid= spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	if [ -n "${COST_KEEP:-}" ]; then
		mkdir -p "$COST_KEEP" && cp "$run"/be.* "$run"/fe.* "$run"/vb.* "$run"/co.* "$COST_KEEP"/ 2>/dev/null
	fi
	rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export VRDMA_RUN_DIR="$run"

# Ir total of a callgrind output file.
ir() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }
# ir_incl [-0] FILE FUNCTION...: the sum of the functions' inclusive Ir in
# a callgrind output file; empty if one is not in it (-0: counts 0).  A
# function is listed once per source file its lines come from (inlined
# headers); the first line, the largest, is the whole of it.
ir_incl() {
	z=0
	[ "$1" = -0 ] && { z=1; shift; }
	f=$1; shift
	callgrind_annotate --auto=no --inclusive=yes --threshold=100 "$f" |
		awk -v fns="$*" -v z=$z 'BEGIN { n = split(fns, want, " ") }
			{ for (i = 1; i <= n; i++)
				if (!(i in got) && $0 ~ (":" want[i] "( |$)")) {
					got[i] = 1; gsub(",", "", $1); sum += $1
				} }
			END { if (z || length(got) == n) print sum + 0 }'
}

# daemon [valgrind args...]: vrdmad in the foreground of a background job.
daemon() {
	"$@" "$b/sbin/vrdmad" -f -S "$run" >"$run/vrdmad.log" 2>&1 &
	dpid=$!
	i=0
	until timeout 5 "$b/sbin/vrdmactl" -S "$run" ping 2>/dev/null | grep -q pong; do
		i=$((i + 1))
		[ $i -lt 300 ] && kill -0 "$dpid" 2>/dev/null ||
			{ echo "bench-cost: vrdmad did not start" >&2; cat "$run/vrdmad.log" >&2; exit 1; }
		sleep 0.1
	done
}

daemon_stop() {
	kill "$dpid" 2>/dev/null
	wait "$dpid" 2>/dev/null
	dpid=
}

# pair N [valgrind args for the client...]: one vrdma-bw 8 B WRITE run of
# N WRs, no warm-up, between two guests of this node.
pair() {
	n=$1; shift
	timeout "$T" "$b/bin/vrdma-bw" -p cost --timeout 120 >"$run/srv.log" 2>&1 &
	spid=$!
	i=0
	until grep -q "listening on service" "$run/srv.log" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 300 ] || { cat "$run/srv.log" >&2; return 1; }
		sleep 0.1
	done
	timeout "$T" "$@" "$b/bin/vrdma-bw" -p cost --timeout 120 -s 8 -n "$n" --warmup 0 local \
		>"$run/cli.log" 2>&1 || { cat "$run/cli.log" "$run/srv.log" >&2; return 1; }
	wait "$spid"
	spid=
}

# vpair N [valgrind args for the client...]: one vrdma-verbs-cost run of N
# WRs between two guests of this node, both through vrdma-run.
vpair() {
	n=$1; shift
	rm -f "$run/vb.sock"
	timeout "$T" "$b/bin/vrdma-run" "$b/bin/vrdma-verbs-cost" server "$run/vb.sock" \
		>"$run/srv.log" 2>&1 &
	spid=$!
	i=0
	until grep -q "^listening on" "$run/srv.log" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 300 ] && kill -0 "$spid" 2>/dev/null || { cat "$run/srv.log" >&2; return 1; }
		sleep 0.1
	done
	timeout "$T" "$b/bin/vrdma-run" "$@" "$b/bin/vrdma-verbs-cost" client "$run/vb.sock" "$n" \
		>"$run/cli.log" 2>&1 || { cat "$run/cli.log" "$run/srv.log" >&2; return 1; }
	wait "$spid" || { cat "$run/srv.log" >&2; return 1; }
	spid=
	# vrdma's libibverbs answered, not rdma-core's
	grep -q "^vrdma0: $n RDMA WRITEs" "$run/cli.log" ||
		{ echo "bench-cost: vrdma-verbs-cost did not run on vrdma0:" >&2; cat "$run/cli.log" >&2; return 1; }
}

cg="valgrind --tool=callgrind --callgrind-out-file"
for n in $N1 $N2; do
	daemon $cg="$run/be.$n"
	pair "$n" || exit 1
	daemon_stop
done
daemon
for n in $N1 $N2; do
	pair "$n" $cg="$run/fe.$n" --toggle-collect=vrdma_post_send \
		--toggle-collect=vrdma_poll_cq || exit 1
done
for n in $N1 $N2; do
	vpair "$n" $cg="$run/vb.$n" --toggle-collect=vc_post --toggle-collect=vc_poll || exit 1
done
daemon_stop
for t in int32 double; do
	$cg="$run/co.$t" --toggle-collect=vcoll_fold "$b/bin/vrdma-coll-bench" cost $t $COLL_REPS \
		>"$run/co.$t.log" 2>&1 || { cat "$run/co.$t.log" >&2; exit 1; }
done

per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.0f", (b - a) / n }'; }
p1=$(ir_incl "$run/be.$N1" vd_poll) p2=$(ir_incl "$run/be.$N2" vd_poll)
[ -n "$p1" ] && [ -n "$p2" ] || { echo "bench-cost: no vd_poll in the callgrind files" >&2; exit 1; }
be=$(per "$p1" "$p2" $((N2 - N1)))
be_all=$(per "$(ir "$run/be.$N1")" "$(ir "$run/be.$N2")" $((N2 - N1)))
fe=$(per "$(ir "$run/fe.$N1")" "$(ir "$run/fe.$N2")" $((N2 - N1)))
# less the idle rule's sleeps (vvb_poll_idle): per sleep, not per WR
v1=$(($(ir "$run/vb.$N1") - $(ir_incl -0 "$run/vb.$N1" vrdma_wait_cq)))
v2=$(($(ir "$run/vb.$N2") - $(ir_incl -0 "$run/vb.$N2" vrdma_wait_cq)))
l1=$(ir_incl "$run/vb.$N1" vrdma_post_send vrdma_poll_cq)
l2=$(ir_incl "$run/vb.$N2" vrdma_post_send vrdma_poll_cq)
[ -n "$l1" ] && [ -n "$l2" ] ||
	{ echo "bench-cost: no vrdma_post_send/vrdma_poll_cq under the verbs calls" >&2; exit 1; }
vb=$(per "$v1" "$v2" $((N2 - N1)))
vb_lib=$(per "$l1" "$l2" $((N2 - N1)))
vb_own=$(per $((v1 - l1)) $((v2 - l2)) $((N2 - N1)))
# per element of the result: 1 MiB of int32 is 262144, of double 131072
coll() { awk -v a="$(ir "$run/co.$1")" -v n="$2" 'BEGIN { printf "%.2f", a / n }'; }
co_i32=$(coll int32 $((262144 * COLL_REPS)))
co_f64=$(coll double $((131072 * COLL_REPS)))
if [ "$fmt" = --csv ]; then
	echo "cost,where,instructions_per_wr"
	echo "cost,backend_forwarded_8B_write,$be"
	echo "cost,backend_whole_daemon_noisy,$be_all"
	echo "cost,guest_post_and_poll,$fe"
	echo "cost,guest_verbs_post_and_poll,$vb"
	echo "cost,guest_verbs_libvrdma_part,$vb_lib"
	echo "cost,guest_verbs_layer_own,$vb_own"
	echo "cost,coll_fold_sum_int32_2x1MiB_per_element,$co_i32"
	echo "cost,coll_fold_sum_double_2x1MiB_per_element,$co_f64"
else
	echo "---------------------------------------------------------------------------------------"
	echo " instructions per WR (callgrind; $N2 - $N1 WRs of 8 B RDMA WRITE, tx-depth 64)"
	printf " %-44s %10s\n" "backend, per forwarded WR (vrdmad)" "$be"
	printf " %-44s %10s\n" "  ... whole daemon, control plane too (noisy)" "$be_all"
	printf " %-44s %10s\n" "guest, vrdma_post_send + vrdma_poll_cq" "$fe"
	printf " %-44s %10s\n" "verbs program, ibv_post_send + ibv_poll_cq" "$vb"
	printf " %-44s %10s\n" "  ... of which in libvrdma's two calls" "$vb_lib"
	printf " %-44s %10s\n" "  ... the verbs layer's own (verbs/)" "$vb_own"
	echo " instructions per element (callgrind; vcoll_fold sum, 2 sources of 1 MiB)"
	printf " %-44s %10s\n" "collectives' kernel, int32" "$co_i32"
	printf " %-44s %10s\n" "collectives' kernel, double" "$co_f64"
	echo "---------------------------------------------------------------------------------------"
fi
