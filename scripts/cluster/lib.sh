# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared settings of the 2-node cluster rig (sourced by build.sh, run.sh,
# rig.sh).  The kernel and its modules come from the Xen rig's cache
# (scripts/xen/fetch.sh fetches Debian's generic amd64 kernel, which has
# rdma_rxe; the -cloud flavour has not).
. "$(dirname "${BASH_SOURCE[0]}")/../xen/lib.sh"

# Host tools beyond the Xen rig's: perftest for the native comparison, the
# rxe provider and its driver file, iproute2's rdma.
CL_HOST_PKGS="perftest ibverbs-providers ibverbs-utils rdma-core iproute2"

cl_die() { echo "cluster-rig: $*" >&2; exit 1; }
cl_log() { echo "cluster-rig: $*"; }

# Install the host packages the images copy from, only when missing.
cl_host_pkgs() {
	local p missing=""
	for p in $CL_HOST_PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	cl_log "installing host tools:$missing"
	export DEBIAN_FRONTEND=noninteractive
	xr_as_root apt-get update -qq || cl_die "apt-get update failed (offline?)"
	# shellcheck disable=SC2086
	xr_as_root apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 \
		$missing || cl_die "apt-get install$missing failed"
}
