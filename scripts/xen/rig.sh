#!/bin/bash
# SPDX-License-Identifier: MIT
# make check-xen / demo-xen / bench-xen: fetch (cached), build the images
# from BUILD_DIR, boot once running SUITE, and show what the suite is for
# (demo: the bw table; bench: vrdma-bw beside the raw grant ring).
# Usage: rig.sh SUITE BUILD_DIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
SUITE=${1:?usage: rig.sh SUITE BUILD_DIR}
B=$(cd "${2:?usage: rig.sh SUITE BUILD_DIR}" && pwd)

"$HERE/fetch.sh"
"$HERE/build.sh" "$B" "$B/xen"
rc=0
"$HERE/run.sh" "$SUITE" "$B/xen" || rc=$?
LOG=${LOG:-$B/xen/boot-$SUITE.log}
# The suites frame what they want shown with VRDMA-SHOW-BEGIN/END.
sed -n '/VRDMA-SHOW-BEGIN/,/VRDMA-SHOW-END/{/VRDMA-SHOW-/d;s/^\[ *[0-9.]*s\] //;p}' "$LOG"
exit $rc
