#!/bin/bash
# SPDX-License-Identifier: MIT
# make check-xen / demo-xen / bench-xen / bench-prio-xen: fetch (cached),
# build the images from BUILD_DIR, boot once running SUITE, and show what
# the suite is for (demo: the bw table; bench: vrdma-bw beside the raw
# grant ring; prio: shares and the high class, data files in BUILD_DIR/xen).
# Usage: rig.sh SUITE BUILD_DIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
SUITE=${1:?usage: rig.sh SUITE BUILD_DIR}
B=$(cd "${2:?usage: rig.sh SUITE BUILD_DIR}" && pwd)

"$HERE/fetch.sh"
"$HERE/build.sh" "$B" "$B/xen"
# prio boots eight domUs (160 MiB each) and runs two benchmark phases.
if [ "$SUITE" = prio ]; then
	export MEM=${MEM:-3072} TIMEOUT=${TIMEOUT:-1500}	# 8-9 min, once over 15
fi
# check runs Debian's verbs programs too (tests/xen/verbs-lib.sh) and the
# hostile and flood sections: 7-8.5 min on a quiet 2-core machine
case $SUITE in check) export TIMEOUT=${TIMEOUT:-900} ;; verbs) export TIMEOUT=${TIMEOUT:-600} ;; esac
rc=0
"$HERE/run.sh" "$SUITE" "$B/xen" || rc=$?
LOG=${LOG:-$B/xen/boot-$SUITE.log}
# Data a suite hands back: VRDMA-DATA-BEGIN NAME ... VRDMA-DATA-END -> $B/xen/NAME.
for name in $(tr -d '\r' <"$LOG" | sed -n 's/^\[ *[0-9.]*s\] VRDMA-DATA-BEGIN \([A-Za-z0-9._-]*\)$/\1/p'); do
	tr -d '\r' <"$LOG" | sed -n "/VRDMA-DATA-BEGIN $name\$/,/VRDMA-DATA-END/{/VRDMA-DATA-/d;s/^\[ *[0-9.]*s\] //;p}" \
		>"$B/xen/$name"
	xr_log "data: $B/xen/$name"
done
# The suites frame what they want shown with VRDMA-SHOW-BEGIN/END.
sed -n '/VRDMA-SHOW-BEGIN/,/VRDMA-SHOW-END/{/VRDMA-SHOW-/d;s/^\[ *[0-9.]*s\] //;p}' "$LOG"
exit $rc
