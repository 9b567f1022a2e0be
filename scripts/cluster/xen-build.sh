#!/bin/bash
# SPDX-License-Identifier: MIT
# Full variant, first step: the Xen rig's images (scripts/xen/build.sh)
# plus an overlay appended to dom0's initramfs (the kernel unpacks
# concatenated cpio archives in order): virtio-net, crc32_generic, rdma_rxe
# and their dependencies, perftest and the rxe provider, the cluster node
# scripts, and /vrdma/pre-vrdmad.sh, which tests/xen/dom0-init.sh runs
# before starting vrdmad (NIC, rxe0, vrdmad -a ADDR).
# Usage: xen-build.sh BUILD_DIR [OUT]     (OUT defaults to BUILD_DIR/xcluster)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"
B=$(cd "${1:?usage: xen-build.sh BUILD_DIR [OUT]}" && pwd)
OUT=${2:-$B/xcluster}
"$TOP/scripts/xen/build.sh" "$B" "$OUT"
# The plain-host node image has everything the overlay needs: build it,
# then keep what dom0 lacks.
"$HERE/build.sh" "$B" "$OUT/plain" >/dev/null
R=$OUT/overlay
rm -rf "$R"
mkdir -p "$R"
(cd "$R" && zcat "$OUT/plain/node.cpio.gz" | cpio -i -d --quiet)
# dom0 has its own /init, busybox, vrdmad and libraries of the same build.
rm -rf "${R:?}/init" "${R:?}/bin" "$R/usr/sbin/vrdmad" "$R/usr/sbin/vrdmactl"
mv "$R/modules.list" "$R/vrdma/cluster-modules.list"
cp "$TOP/tests/cluster/xen-pre-vrdmad.sh" "$R/vrdma/pre-vrdmad.sh"
cp "$TOP/scripts/lat-trace.sh" "$R/vrdma/lat-trace.sh"	# suite xlat
(cd "$R" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$OUT/overlay.cpio"
cat "$OUT/dom0.cpio" "$OUT/overlay.cpio" >"$OUT/dom0-cluster.cpio"
rm -rf "$R" "$OUT/plain/node.cpio.gz"
cl_log "Xen cluster images in $OUT: dom0-cluster.cpio $(du -h "$OUT/dom0-cluster.cpio" | cut -f1)"
