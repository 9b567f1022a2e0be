# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared settings of the Xen-in-QEMU rig (sourced by fetch.sh, build.sh, run.sh, rig.sh).
#   VRDMA_XEN_CACHE  downloaded .debs and their extraction (reused across runs)
#   VRDMA_XEN_WORK   images, logs of this build dir's runs
XEN_VER=4.17
XEN_CACHE=${VRDMA_XEN_CACHE:-${HOME:-/tmp}/.cache/vrdma-xen}
XEN_DEBS=$XEN_CACHE/debs
XEN_ROOT=$XEN_CACHE/root		# every .deb extracted here (dpkg -x)
XEN_STAMP=$XEN_CACHE/fetched		# written last by fetch.sh: the kernel version

xr_die() { echo "xen-rig: $*" >&2; exit 1; }
xr_log() { echo "xen-rig: $*"; }

# The kernel version fetch.sh extracted (e.g. 6.1.0-56-amd64).
xr_kver() {
	[ -s "$XEN_STAMP" ] || xr_die "no Xen cache in $XEN_CACHE: run scripts/xen/fetch.sh"
	cat "$XEN_STAMP"
}

xr_as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
