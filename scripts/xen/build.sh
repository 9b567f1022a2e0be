#!/bin/bash
# SPDX-License-Identifier: MIT
# Build the rig's boot images from the fetched cache (fetch.sh) and a vrdma
# build dir:
#   OUT/xen        the hypervisor, gunzipped (QEMU's -kernel hangs on the .gz)
#   OUT/vmlinuz    dom0's kernel
#   OUT/dom0.cpio  dom0 initramfs: busybox, the Xen tools, vrdmad, vrdmactl,
#                  the suite drivers (tests/xen), the guest network (netback,
#                  bridge and their modules, the vif hotplug script
#                  tests/xen/vif-bridge.sh), and in /guest the domU
#                  kernel (raw ELF vmlinux: libxc would xz-unpack a bzImage
#                  inside TCG, ~10 s per domU) and the domU initramfs:
#                  busybox, libvrdma, vrdma-bw/-lat, itest_guest/_hostile,
#                  vrdma-xen-rawcopy, each with the libraries ldd names;
#                  netfront; vrdma's libibverbs/librdmacm (/usr/lib/vrdma),
#                  vrdma-run and Debian's unmodified verbs programs
#                  (perftest, ibverbs-utils, rdmacm-utils) they run;
#                  Open MPI and UCX with tests/mpi_check.c and mpirun's
#                  launcher between domUs (tests/xen/mpi-rsh.sh);
#                  libvrdma-mpi.so (the Open MPI build, vrdma-run --coll)
#                  and tests/mpi_coll_check.c.
# The images reuse the host's glibc: build on Debian 12.
# Usage: build.sh BUILD_DIR [OUT]      (OUT defaults to BUILD_DIR/xen)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"

B=$(cd "${1:?usage: build.sh BUILD_DIR [OUT]}" && pwd)
OUT=${2:-$B/xen}
KVER=$(xr_kver)
R=$XEN_ROOT
L=$R/usr/lib/x86_64-linux-gnu
XB=$R/usr/lib/xen-$XEN_VER/bin
MOD=$R/lib/modules/$KVER/kernel/drivers/xen

# rawcopy in dom0 too: the raw event-channel ping against a domU (bench-cluster)
DOM0_BINS="sbin/vrdmad sbin/vrdmactl bin/vrdma-xen-rawcopy"
DOMU_BINS="bin/vrdma-bw bin/vrdma-lat bin/vrdma-xen-rawcopy tests/itest_guest tests/itest_hostile"
# Debian's own verbs programs, unmodified, run through vrdma-run (issue 10).
DOMU_VERBS="/usr/bin/ib_write_bw /usr/bin/ib_read_bw /usr/bin/ib_send_bw
	/usr/bin/ib_atomic_bw /usr/bin/ib_write_lat /usr/bin/ib_send_lat
	/usr/bin/ibv_devinfo /usr/bin/ibv_rc_pingpong /usr/bin/ibv_srq_pingpong
	/usr/bin/ibv_ud_pingpong /usr/bin/rping /usr/bin/ucmatose"
for f in $DOM0_BINS $DOMU_BINS lib/vrdma/libibverbs.so.1 lib/vrdma/librdmacm.so.1 bin/vrdma-run \
	lib/vrdma/libvrdma-mpi.so; do
	[ -e "$B/$f" ] || xr_die "$B/$f missing (make B=$B all first)"
done
for f in $DOMU_VERBS; do
	[ -x "$f" ] || xr_die "$f missing (apt-get install perftest ibverbs-utils rdmacm-utils)"
done
# Open MPI 4.1 over UCX between domUs: what mpirun, orted and the ranks load.
MPI_TREES="/usr/lib/x86_64-linux-gnu/openmpi/lib /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
	/usr/lib/x86_64-linux-gnu/pmix2/share /usr/lib/x86_64-linux-gnu/ucx /usr/share/openmpi
	/etc/openmpi"
for f in /usr/bin/orterun /usr/bin/orted /usr/bin/mpicc /usr/bin/ucx_perftest $MPI_TREES; do
	[ -e "$f" ] || xr_die "$f missing (apt-get install openmpi-bin libopenmpi-dev ucx-utils)"
done
mkdir -p "$OUT"

# Kernel and hypervisor do not change between builds: unpack once into the cache.
# (tmp + mv: another build may be reading the cache meanwhile)
if [ ! -s "$XEN_CACHE/xen" ]; then
	zcat "$R/boot/xen-$XEN_VER-amd64.gz" >"$XEN_CACHE/xen.$$"
	mv "$XEN_CACHE/xen.$$" "$XEN_CACHE/xen"
fi
if [ ! -s "$XEN_CACHE/vmlinux-$KVER" ]; then
	off=$(grep -abo $'\xfd7zXZ' "$R/boot/vmlinuz-$KVER" | head -1 | cut -d: -f1) || true
	[ -n "$off" ] || xr_die "no xz payload in vmlinuz-$KVER"
	tail -c +$((off + 1)) "$R/boot/vmlinuz-$KVER" | xz -dc 2>/dev/null \
		>"$XEN_CACHE/vmlinux.$$" || true	# trailing data after the stream
	case $(file "$XEN_CACHE/vmlinux.$$") in
	*ELF*) mv "$XEN_CACHE/vmlinux.$$" "$XEN_CACHE/vmlinux-$KVER" ;;
	*) rm -f "$XEN_CACHE/vmlinux.$$"; xr_die "vmlinux extraction failed" ;;
	esac
fi
cp "$XEN_CACHE/xen" "$OUT/xen"
cp "$R/boot/vmlinuz-$KVER" "$OUT/vmlinuz"

# Copy an executable and the shared libraries it needs (the fetched Xen
# libraries and the build's libvrdma first, then the host's).
addbin() { # rootfs src dst
	local rf=$1 src=$2 dst=$3
	mkdir -p "$rf/$(dirname "$dst")"
	cp -L "$src" "$rf/$dst"
	addlibs "$rf" "$src"
}
addlibs() { # rootfs elf
	local rf=$1 src=$2 lib d
	LD_LIBRARY_PATH=$B/lib:$L ldd "$src" |
		awk '/=> \//{ print $3 } /^\t\/lib64/{ print $1 }' |
		while read -r lib; do
			case $lib in
			"$R"/*) d=${lib#"$R"} ;;
			"$B"/lib/*) d=/usr/lib/x86_64-linux-gnu/${lib##*/} ;;
			*) d=$lib ;;
			esac
			[ -e "$rf$d" ] && continue
			mkdir -p "$rf$(dirname "$d")"
			cp -L "$lib" "$rf$d"
		done
}

base_rootfs() { # rootfs
	local rf=$1 m t
	rm -rf "$rf"
	mkdir -p "$rf"/{bin,sbin,etc,proc,sys,dev,tmp,run,var/log,var/run,lib/modules,usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,lib64}
	xr_busybox "$rf"
	for m in xen-evtchn.ko xen-gntdev.ko xen-gntalloc.ko xen-privcmd.ko xenfs/xenfs.ko; do
		cp "$MOD/$m" "$rf/lib/modules/"
	done
	addbin "$rf" "$R/usr/bin/xenstore" /usr/bin/xenstore
	for t in read write ls list rm exists chmod watch; do
		ln -sf xenstore "$rf/usr/bin/xenstore-$t"
	done
	# glibc's pthread_cancel dlopen()s libgcc_s (xl's error paths, timeouts)
	cp -L /lib/x86_64-linux-gnu/libgcc_s.so.1 "$rf/usr/lib/x86_64-linux-gnu/"
	echo 'root:x:0:0:root:/:/bin/sh' >"$rf/etc/passwd"
	mkdir -p "$rf/vrdma"
	cp "$TOP/tests/xen/rig-lib.sh" "$TOP/tests/xen/verbs-lib.sh" "$TOP/tests/xen/mpi-lib.sh" "$rf/vrdma/"
}
# Network modules and their dependencies (xr_modules), listed in insmod
# order in ROOTFS/vrdma/net-modules.list.
netmods() { # rootfs module...
	local rf=$1
	shift
	xr_modules "$R/lib/modules/$KVER" "$rf/lib/modules" "$rf/vrdma/net-modules.list" "$@"
}
mkcpio() { (cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc --quiet); }

W=$OUT/rootfs
# ---- domU ----
DU=$W/domu
base_rootfs "$DU"
for f in $DOMU_BINS; do
	addbin "$DU" "$B/$f" "/usr/bin/${f##*/}"
done
# vrdma's private libdir (what vrdma-run puts first), then the programs;
# the distribution's libibverbs their ldd names comes along, unused.
mkdir -p "$DU/usr/lib/vrdma"
for f in "$B"/lib/vrdma/*.so.1 "$B/lib/vrdma/libvrdma-mpi.so"; do
	addbin "$DU" "$f" "/usr/lib/vrdma/${f##*/}"
done
cp "$B/bin/vrdma-run" "$DU/usr/bin/vrdma-run"
for f in $DOMU_VERBS; do
	addbin "$DU" "$f" "$f"
done
# Open MPI over UCX as Debian installs them (openmpi-bin, libopenmpi3,
# libucx0: components, help texts, MCA defaults), mpirun's launcher
# between domUs (tests/xen/mpi-rsh.sh), tests/mpi_check.c and
# tests/mpi_coll_check.c (its collectives through libvrdma-mpi.so above).
for d in $MPI_TREES; do
	mkdir -p "$DU$(dirname "$d")"
	cp -a "$d" "$DU$d"
done
find $MPI_TREES -name '*.so*' -type f | while read -r f; do addlibs "$DU" "$f"; done
addbin "$DU" /usr/bin/orterun /usr/bin/orterun
addbin "$DU" /usr/bin/orted /usr/bin/orted
addbin "$DU" /usr/bin/ucx_perftest /usr/bin/ucx_perftest
ln -sf orterun "$DU/usr/bin/mpirun"
mpicc -O2 -Wall -o "$W/mpi_check" "$TOP/tests/mpi_check.c" || xr_die "mpicc of tests/mpi_check.c failed"
addbin "$DU" "$W/mpi_check" /usr/bin/mpi_check
mpicc -O2 -Wall -o "$W/mpi_coll_check" "$TOP/tests/mpi_coll_check.c" ||
	xr_die "mpicc of tests/mpi_coll_check.c failed"
addbin "$DU" "$W/mpi_coll_check" /usr/bin/mpi_coll_check
install -m 755 "$TOP/tests/xen/mpi-rsh.sh" "$DU/usr/bin/vrdma-rig-rsh"
netmods "$DU" xen-netfront
cp "$TOP/tests/xen/domu-init.sh" "$DU/init"
chmod +x "$DU/init"

# ---- dom0 ----
D0=$W/dom0
base_rootfs "$D0"
for b in xl xenstored xenconsoled xen-init-dom0 xenstore-control lsevtchn; do
	addbin "$D0" "$XB/$b" "/usr/sbin/$b"
done
for f in $DOM0_BINS; do
	addbin "$D0" "$B/$f" "/usr/sbin/${f##*/}"
done
mkdir -p "$D0"/{etc/xen,var/lib/xen,var/lib/xenstored,var/log/xen/console,guest}
cp "$R/etc/xen/xl.conf" "$D0/etc/xen/"
# Guest network: netback and a bridge (xenbr0) in dom0.  libxl runs
# /etc/xen/scripts/vif-bridge for every vif; Debian's is bash over five
# helper scripts (iptables, locking, logging): the rig's own does the same
# job in busybox sh (tests/xen/vif-bridge.sh).
netmods "$D0" xen-netback bridge
mkdir -p "$D0/etc/xen/scripts"
cp "$TOP/tests/xen/vif-bridge.sh" "$D0/etc/xen/scripts/vif-bridge"
chmod +x "$D0/etc/xen/scripts/vif-bridge"
cp "$TOP"/tests/xen/suite-*.sh "$D0/vrdma/"
cp "$TOP/tests/xen/dom0-init.sh" "$D0/init"
chmod +x "$D0/init"
mkcpio "$DU" | gzip -1 >"$D0/guest/domu.cpio.gz"
cp "$XEN_CACHE/vmlinux-$KVER" "$D0/guest/vmlinux"
# Tell dom0 whether this build has the Xen platform (else: smoke suite only).
xenplat=0
case $(ldd "$B/sbin/vrdmad") in *libxenstore*) xenplat=1 ;; esac
echo $xenplat >"$D0/vrdma/xen-platform"
mkcpio "$D0" >"$OUT/dom0.cpio"
rm -rf "$W"
xr_log "images in $OUT: $(du -h "$OUT/dom0.cpio" | cut -f1) dom0.cpio, xen platform in build: $xenplat"
