# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What tests/verbs.sh and tests/rdmacm.sh share: Debian's unmodified
# programs through build/bin/vrdma-run against a private vrdmad.
#   vp_init TAG BUILD_DIR LIB PROGRAM...   run dir, cleanup trap, the
#       programs present (CI: else a failure, elsewhere a skip), the ASan
#       runtime preloaded when LIB (under lib/vrdma) is an ASan build
#   start_daemon, ctl, listening PORT, want CASE
#   vp_pair NAME PATTERN SRV_CMD CLI_CMD   a server and its client (@P@ is
#       the next port), both exit 0 and the client's output matches
#   vp_leaks                                no guest left in vrdmad
# Each script defines report NAME OK OUTPUT_FILE.
set -u

vp_init() {
	local tag=$1 lib=$3 p
	B=$(cd "$2" && pwd)
	RUN=$(mktemp -d "/tmp/vrdma-$tag.XXXXXX")
	export VRDMA_RUN_DIR=$RUN
	LOG=$RUN/vrdmad.log
	VR=$B/bin/vrdma-run
	VP_NODE=$tag-node
	DPID=
	trap vp_cleanup EXIT
	shift 3
	for p in "$@"; do
		if ! command -v "$p" >/dev/null; then
			# CI installs them (scripts/install-deps.sh): missing there is a failure
			echo "$tag: $p missing (apt-get install ibverbs-utils rdmacm-utils perftest); skipped"
			[ "${CI:-}" = true ] && exit 1
			exit 0
		fi
	done
	# An ASan build of the libraries in uninstrumented programs: the
	# runtime must come first.
	if objdump -p "$B/lib/vrdma/$lib" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
		LD_PRELOAD="$(${CC:-cc} -print-file-name=libasan.so) $(${CC:-cc} -print-file-name=libubsan.so)"
		export LD_PRELOAD
		export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
	fi
}

vp_cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	jobs -p | xargs -r kill -9 2>/dev/null
	rm -rf "$RUN"
}

ctl() { timeout 10 "$B/sbin/vrdmactl" -S "$RUN" "$@"; }

start_daemon() {
	LD_PRELOAD= "$B/sbin/vrdmad" -f -S "$RUN" -n "$VP_NODE" >"$LOG" 2>&1 &
	DPID=$!
	for _ in $(seq 100); do
		LD_PRELOAD= ctl ping >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "vrdmad did not start:"; cat "$LOG"
	return 1
}

# Is something listening on TCP port $1?  Read from /proc: connecting to
# find out would be taken for the client by perftest's server (and
# rdma_listen is a TCP listener here).
listening() {
	local hex; hex=$(printf ':%04X ' "$1")
	grep -q "$hex.* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }

vp_pair() {
	local name=$1 pat=$2 sargs=$3 cargs=$4
	want "$name" || return 0
	local out=$RUN/$name.out sp src crc ok=0
	PORT=$((PORT + 1))
	sargs=${sargs//@P@/$PORT}
	cargs=${cargs//@P@/$PORT}
	# shellcheck disable=SC2086
	timeout $T "$VR" $sargs >"$RUN/$name.srv" 2>&1 &
	sp=$!
	for _ in $(seq 200); do
		listening $PORT && break
		kill -0 $sp 2>/dev/null || break
		sleep 0.05
	done
	# shellcheck disable=SC2086
	timeout $T "$VR" $cargs >"$RUN/$name.cli" 2>&1
	crc=$?
	wait $sp
	src=$?
	{ echo "== server (exit $src): $sargs"; cat "$RUN/$name.srv";
	  echo "== client (exit $crc): $cargs"; cat "$RUN/$name.cli"; } >"$out"
	[ $src -eq 0 ] && [ $crc -eq 0 ] && grep -Eq "$pat" "$RUN/$name.cli" && ok=1
	report "$name" $ok "$out"
}

vp_leaks() {
	local ok=0
	want leaks || return 0
	for _ in $(seq 50); do
		LD_PRELOAD= ctl -j census | grep -q '"guests": *0[,}]' && { ok=1; break; }
		sleep 0.1
	done
	LD_PRELOAD= ctl census >"$RUN/leaks.out" 2>&1
	report leaks $ok "$RUN/leaks.out"
}
