#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what vrdma needs to build and test, from Debian 12 packages.
# Runs apt-get as root (through sudo when not root).  Idempotent.
# With arguments: those packages instead (a bench's extra tools, the
# rigs' host tools: scripts/xen/fetch.sh, scripts/cluster/lib.sh,
# tests/systemd.sh).
set -eu

# libxen-dev: the Xen platform (platform/xen_*.c); without it only the
# plain host is built.
# libibverbs-dev librdmacm-dev: the backend's RDMA-device path;
# ibverbs-providers rdma-core: the device drivers (rxe) and tools it
# runs with.
# libjson-c-dev: vrdmad's and vrdmactl's JSON output (-j), and the tests
# that parse it.
# libinih-dev: vrdmad's configuration file (vrdmad.conf).
# perftest ibverbs-utils rdmacm-utils: the unmodified verbs programs the
# tests run on vrdma's libibverbs / librdmacm (make check-verbs, the rigs).
# ucx-utils libucx0 libfabric-bin libfabric1 openmpi-bin libopenmpi3: the
# middleware whose every symbol the private libdir must define (make
# check-verbs-abi), and what make check-middleware runs on vrdma
# (ucx_info, ucx_perftest, fi_info, mpirun); libopenmpi-dev: mpicc for
# its MPI program (tests/mpi_check.c) and make bench's.
# mpich libmpich-dev: the MPICH build of libvrdma-mpi.so (mpicc.mpich) and
# its case in make check-middleware (mpirun.mpich); Open MPI stays the
# default mpicc and mpirun (its alternatives' priority is the higher).
# clang libclang-rt-dev: the libFuzzer harnesses (make fuzz).
# dpkg-dev debhelper lintian: the Debian packages (debian/, make check-pkg);
# systemd for systemd-analyze on the unit.
# mmdebstrap e2fsprogs: make check-systemd's fresh Debian 12 root and its
# disk image (QEMU and the kernel come with scripts/xen/fetch.sh).
# man-db groff-base: tests/docs.sh renders every man page (man --warnings).
PKGS=${*:-"build-essential pkg-config check libsubunit-dev libxen-dev
	libjson-c-dev libinih-dev libibverbs-dev librdmacm-dev ibverbs-providers rdma-core
	perftest ibverbs-utils rdmacm-utils ucx-utils libucx0 libfabric-bin libfabric1
	openmpi-bin libopenmpi3 libopenmpi-dev mpich libmpich-dev clang libclang-rt-dev
	dpkg-dev debhelper lintian systemd mmdebstrap e2fsprogs man-db groff-base"}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	[ $# -gt 0 ] || echo "install-deps: all present"	# (a rig's: quiet)
	exit 0
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# A broken source of the machine's own must not stop us: the lists that
# did come may hold every package (the install below says if not).
as_root apt-get update -qq -o DPkg::Lock::Timeout=300 ||
	echo "install-deps: apt-get update failed; installing from the lists there are" >&2
# shellcheck disable=SC2086
as_root apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 $missing
