#!/bin/bash
# SPDX-License-Identifier: MIT
# Fetch (never install) Xen 4.17, its tools and libraries and Debian's generic
# amd64 kernel with apt-get download, and extract them with dpkg -x into the
# cache ($VRDMA_XEN_CACHE, default ~/.cache/vrdma-xen).  A filled cache is
# reused: nothing is downloaded again.  Host tools the rig needs to build and
# boot the images (qemu, busybox, cpio, xz, libxen-dev) are installed with
# apt-get only when missing.
# Usage: fetch.sh [-f]     (-f: fetch again even if the cache is complete)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

HOST_PKGS="qemu-system-x86 busybox-static cpio xz-utils libxen-dev file"
XEN_PKGS="xen-hypervisor-$XEN_VER-amd64 xen-utils-$XEN_VER xen-utils-common xenstore-utils
	libxencall1 libxendevicemodel1 libxenevtchn1 libxenforeignmemory1 libxengnttab1
	libxenhypfs1 libxenmisc$XEN_VER libxenstore4 libxentoolcore1 libxentoollog1 libyajl2"

offline() {
	xr_die "$1 failed: the rig needs Debian's package mirror once (then the cache in $XEN_CACHE is reused); are we offline?"
}

# shellcheck disable=SC2086
"$(dirname "$0")/../install-deps.sh" $HOST_PKGS >&2 ||
	xr_die "installing the host tools ($HOST_PKGS) failed (no package mirror? no sudo? see above)"

if [ "${1:-}" != -f ] && [ -s "$XEN_STAMP" ] && [ -d "$XEN_ROOT/boot" ]; then
	xr_log "cache complete: $XEN_CACHE (kernel $(cat "$XEN_STAMP"))"
	exit 0
fi

# The kernel linux-image-amd64 points at today (it moves with point releases).
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	sed -n 's/^ *Depends: \(linux-image-[0-9.]*-[0-9]*-amd64\)$/\1/p' | head -1)
if [ -z "$kpkg" ]; then
	xr_as_root apt-get update -qq || offline "apt-get update"
	kpkg=$(apt-cache depends linux-image-amd64 |
		sed -n 's/^ *Depends: \(linux-image-[0-9.]*-[0-9]*-amd64\)$/\1/p' | head -1)
fi
[ -n "$kpkg" ] || xr_die "cannot resolve the kernel behind linux-image-amd64 (apt-cache depends)"
kver=${kpkg#linux-image-}
# The -unsigned package holds the same kernel without the signed-shim dependencies.
apt-cache show "$kpkg-unsigned" >/dev/null 2>&1 && kpkg=$kpkg-unsigned

rm -rf "$XEN_DEBS" "$XEN_ROOT" "$XEN_STAMP"
mkdir -p "$XEN_DEBS" "$XEN_ROOT"
xr_log "downloading Xen $XEN_VER and $kpkg into $XEN_DEBS"
# shellcheck disable=SC2086
(cd "$XEN_DEBS" && apt-get download -q $XEN_PKGS "$kpkg") || offline "apt-get download"
for d in "$XEN_DEBS"/*.deb; do
	dpkg -x "$d" "$XEN_ROOT"
done
[ -e "$XEN_ROOT/boot/xen-$XEN_VER-amd64.gz" ] || xr_die "xen-$XEN_VER-amd64.gz missing after extraction"
[ -e "$XEN_ROOT/boot/vmlinuz-$kver" ] || xr_die "vmlinuz-$kver missing after extraction"
# The .debs are only needed to extract; keep the cache small.
rm -f "$XEN_DEBS"/*.deb
echo "$kver" >"$XEN_STAMP"
xr_log "cache ready: $XEN_CACHE (Xen $XEN_VER, kernel $kver)"
