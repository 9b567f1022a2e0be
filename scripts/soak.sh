#!/bin/bash
# SPDX-License-Identifier: MIT
# make check-soak: each rig suite N times back to back with a CPU load
# beside it, then the failures per check.  A check that fails once in N is
# a flake, and a flake refuses a whole CI run: this is how one is found
# before CI finds it, and how a fix is shown to hold.
#
# The load is LOAD busy loops at the rigs' own priority, so QEMU's vCPUs
# get less of the machine than `make check` alone gives them, as on a CI
# machine that other work shares (2 cores: one loop takes a third to a
# half of what the rig had).
#
# Usage: soak.sh BUILD_DIR [RIG...]
#   RIG: xen (make check-xen), cluster-host (check-cluster-host),
#        cluster-xen (check-cluster-xen); default all three, in that order
# env: SOAK_N runs of each (default 10), SOAK_LOAD busy loops (default 1,
#      0 for none), SOAK_DIR logs and summary (default BUILD_DIR/soak),
#      TIMEOUT each boot's limit (default 1800 s: a loaded machine runs
#      the rigs at half speed; the limit guards against a hang, the
#      checks' own waits are what a soak tries)
# Output: one line per run, then per rig every check that failed with its
#      count of N; SOAK_DIR/summary.csv (rig,run,rc,pass,fail,seconds,
#      failed checks).  Exit status 1 if any run failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:?usage: soak.sh BUILD_DIR [RIG...]}" && pwd) || exit 2
shift
RIGS=${*:-xen cluster-host cluster-xen}
N=${SOAK_N:-10}
LOAD=${SOAK_LOAD:-1}
DIR=${SOAK_DIR:-$B/soak}
case $N in '' | *[!0-9]*) echo "soak: SOAK_N must be a number, not '$N'" >&2; exit 2 ;; esac
case $LOAD in '' | *[!0-9]*) echo "soak: SOAK_LOAD must be a number, not '$LOAD'" >&2; exit 2 ;; esac
for r in $RIGS; do
	case $r in xen | cluster-host | cluster-xen) ;;
	*) echo "soak: unknown rig '$r' (xen, cluster-host, cluster-xen)" >&2; exit 2 ;;
	esac
done
mkdir -p "$DIR" || exit 1
export TIMEOUT=${TIMEOUT:-1800}

hogs=
stop_load() {
	# shellcheck disable=SC2086 # a list of pids
	[ -n "$hogs" ] && kill $hogs 2>/dev/null && wait $hogs 2>/dev/null
	hogs=
}
trap stop_load EXIT
trap 'exit 130' INT TERM HUP
for _ in $(seq 1 "$LOAD"); do
	sh -c 'while :; do :; done' &
	hogs="$hogs $!"
done

# run RIG I: one boot, its logs under DIR; prints "rc pass fail checks..."
run() {
	local rig=$1 i=$2 rc=0 logs
	case $rig in
	xen)
		logs=$DIR/xen-$i.log
		LOG=$logs "$HERE/xen/rig.sh" check "$B" >"$DIR/xen-$i.out" 2>&1 || rc=$?
		;;
	cluster-host)
		mkdir -p "$DIR/cluster-host-$i"
		LOGDIR=$DIR/cluster-host-$i "$HERE/cluster/rig.sh" check "$B" \
			>"$DIR/cluster-host-$i.out" 2>&1 || rc=$?
		logs="$DIR/cluster-host-$i/check-a.log $DIR/cluster-host-$i/check-b.log"
		;;
	cluster-xen)
		mkdir -p "$DIR/cluster-xen-$i"
		LOGDIR=$DIR/cluster-xen-$i "$HERE/cluster/rig.sh" xcheck "$B" \
			>"$DIR/cluster-xen-$i.out" 2>&1 || rc=$?
		logs="$DIR/cluster-xen-$i/xcheck-a.log $DIR/cluster-xen-$i/xcheck-b.log"
		;;
	esac
	local have='' miss=0 l
	for l in $logs; do
		if [ -s "$l" ]; then have="$have $l"; else miss=$((miss + 1)); fi
	done
	# shellcheck disable=SC2086 # several logs
	awk -v rc=$rc -v miss=$miss '
		{ sub(/\r$/, "") }
		FNR == 1 { node = FILENAME ~ /-b\.log$/ ? "b:" : (FILENAME ~ /-a\.log$/ ? "a:" : "") }
		/VRDMA-TEST [^ ]+ PASS/ { pass++ }
		/VRDMA-TEST [^ ]+ FAIL/ { for (f = 1; f < NF; f++) if ($f == "VRDMA-TEST") break
					  fail++; names = names " " node $(f + 1) }
		/VRDMA-(RIG|CLUSTER)-DONE/ { done[FILENAME] = 1 }
		END {
			for (f in ARGV) if (f > 0 && ARGV[f] != "/dev/null" && !(ARGV[f] in done)) { fail++; names = names " (unfinished)" }
			if (miss) { fail += miss; names = names " (no-log)" }
			if (rc != 0 && fail == 0) { fail++; names = names " (rig-exit-" rc ")" }
			printf "%d %d %d%s\n", rc, pass + 0, fail + 0, names
		}' $have /dev/null
}

echo "rig,run,rc,pass,fail,seconds,failed" >"$DIR/summary.csv"
echo "soak: $N run(s) of: $RIGS; $LOAD busy loop(s) beside; logs in $DIR"
bad=0
for rig in $RIGS; do
	for i in $(seq 1 "$N"); do
		t=$SECONDS
		# shellcheck disable=SC2046 # the fields of one line
		set -- $(run "$rig" "$i")
		rc=$1 pass=$2 fail=$3
		shift 3
		secs=$((SECONDS - t))
		echo "soak: $rig run $i/$N: $pass passed, $fail failed, ${secs}s${*:+: $*}"
		echo "$rig,$i,$rc,$pass,$fail,$secs,$*" >>"$DIR/summary.csv"
		[ "$fail" = 0 ] || bad=1
	done
done
stop_load
echo
echo "soak: failures per check ($N runs of each, $LOAD busy loop(s) beside)"
awk -F, 'NR > 1 { runs[$1]++; if ($5 == 0) green[$1]++
		   n = split($7, c, " "); for (k = 1; k <= n; k++) f[$1 " " c[k]]++ }
	 END { for (r in runs) {
		printf "  %-13s %d of %d runs green\n", r, green[r] + 0, runs[r]
		for (k in f) { split(k, p, " "); if (p[1] == r) printf "    %-40s %d\n", p[2], f[k] }
	 } }' "$DIR/summary.csv"
exit $bad
