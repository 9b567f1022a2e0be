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
	# shellcheck disable=SC2086
	"$(dirname "${BASH_SOURCE[0]}")/../install-deps.sh" $CL_HOST_PKGS >&2 ||
		cl_die "installing the host tools ($CL_HOST_PKGS) failed (no package mirror? no sudo?)"
}
