# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What tests/verbs.sh and tests/rdmacm.sh share: Debian's unmodified
# programs through build/bin/vrdma-run against a private vrdmad.
#   vp_init TAG BUILD_DIR LIB PROGRAM...   run dir, cleanup trap, the
#       programs present (CI: else a failure, elsewhere a skip), the ASan
#       runtime preloaded when LIB (under lib/vrdma) is an ASan build
#   start_daemon, ctl, listening PORT, want CASE
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
