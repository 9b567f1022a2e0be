#!/bin/bash
# SPDX-License-Identifier: MIT
# Build the cluster rig's boot images from the Xen rig's cache and a vrdma
# build dir.  Both nodes boot the same pair; the kernel command line says
# which node a machine is.
#   OUT/vmlinuz    Debian's generic amd64 kernel (has rdma_rxe)
#   OUT/node.cpio  busybox, the modules in insmod order (virtio-net, crc32,
#                  rxe, rdma_ucm), vrdmad, vrdmactl, libvrdma, vrdma-bw/-lat,
#                  itest_guest, itest_bigmr, itest_team, perftest, ibv_devinfo, rdma, the rxe provider,
#                  vrdma's libibverbs/librdmacm (/usr/lib/vrdma) and vrdma-run
#                  for unmodified verbs programs in guests,
#                  each with the libraries ldd names; /init and the suites
#                  from tests/cluster.
# Usage: build.sh BUILD_DIR [OUT]      (OUT defaults to BUILD_DIR/cluster)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"

B=$(cd "${1:?usage: build.sh BUILD_DIR [OUT]}" && pwd)
OUT=${2:-$B/cluster}
KVER=$(xr_kver)
KMOD=$XEN_ROOT/lib/modules/$KVER
ML=/usr/lib/x86_64-linux-gnu

VRDMA_BINS="sbin/vrdmad sbin/vrdmactl bin/vrdma-bw bin/vrdma-lat tests/itest_guest
	tests/itest_bigmr tests/itest_team"
HOST_BINS="/usr/bin/ib_write_bw /usr/bin/ib_send_lat /usr/bin/ib_write_lat
	/usr/bin/ib_read_bw /usr/bin/ib_send_bw /usr/bin/ibv_rc_pingpong /usr/bin/rping
	/usr/bin/ibv_srq_pingpong /usr/bin/ibv_ud_pingpong
	/usr/bin/ibv_devinfo /usr/bin/rdma"
for f in $VRDMA_BINS; do
	[ -x "$B/$f" ] || cl_die "$B/$f missing (make B=$B all $B/tests/itest_guest $B/tests/itest_bigmr $B/tests/itest_team first)"
done
for f in $HOST_BINS; do
	[ -x "$f" ] || cl_die "$f missing (apt-get install perftest ibverbs-utils iproute2)"
done
mkdir -p "$OUT"
cp "$XEN_ROOT/boot/vmlinuz-$KVER" "$OUT/vmlinuz"

R=$OUT/rootfs
rm -rf "$R"
mkdir -p "$R"/{bin,sbin,etc/libibverbs.d,proc,sys,dev,tmp,run,root,lib/modules,usr/bin,usr/sbin,$ML/libibverbs,lib64,vrdma}

# Copy a file and the shared libraries ldd names (the build's libvrdma
# lands in the system library dir: the rpath does not exist in the image).
addbin() { # src dst
	local src=$1 dst=$2 lib d
	mkdir -p "$R/$(dirname "$dst")"
	cp -L "$src" "$R/$dst"
	LD_LIBRARY_PATH=$B/lib ldd "$src" |
		awk '/=> \//{ print $3 } /^\t\/lib64/{ print $1 }' |
		while read -r lib; do
			case $lib in
			"$B"/lib/*) d=$ML/${lib##*/} ;;
			*) d=$lib ;;
			esac
			[ -e "$R$d" ] && continue
			mkdir -p "$R$(dirname "$d")"
			cp -L "$lib" "$R$d"
		done
}

xr_busybox "$R"
for f in $VRDMA_BINS; do
	case $f in
	sbin/*) addbin "$B/$f" "/usr/sbin/${f##*/}" ;;
	*) addbin "$B/$f" "/usr/bin/${f##*/}" ;;
	esac
done
for f in $HOST_BINS; do
	addbin "$f" "$f"
done
# vrdma's libibverbs / librdmacm for the guests (vrdma-run puts this
# private libdir first; vrdmad keeps using the system's, with rxe).
for f in "$B"/lib/vrdma/*.so.1; do
	addbin "$f" "/usr/lib/vrdma/${f##*/}"
done
cp "$B/bin/vrdma-run" "$R/usr/bin/vrdma-run"
# The rxe provider is dlopen()ed by libibverbs: ldd never names it.
for f in "$ML"/libibverbs/librxe-rdmav*.so; do
	addbin "$f" "$f"
done
cp /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/"
# UCX (ucx-utils), when the host has it: ucx_perftest between the nodes;
# its transports are dlopen()ed modules, which ldd never names either.
if [ -x /usr/bin/ucx_perftest ]; then
	addbin /usr/bin/ucx_perftest /usr/bin/ucx_perftest
	for f in "$ML"/ucx/*.so.0; do
		addbin "$f" "$f"
	done
fi
# glibc's pthread_cancel dlopen()s libgcc_s
cp -L "$ML/libgcc_s.so.1" "$R/$ML/"

# Modules in insmod order, dependencies first (xr_modules).  crc32_generic:
# rxe asks the crypto API for "crc32" and nothing can autoload it in the
# guest.
xr_modules "$KMOD" "$R/lib/modules" "$R/modules.list" \
	virtio_pci virtio_net crc32_generic rdma_rxe rdma_ucm

echo 'root:x:0:0:root:/root:/bin/sh' >"$R/etc/passwd"
echo 'root:x:0:' >"$R/etc/group"
printf '127.0.0.1 localhost\n' >"$R/etc/hosts"
cp "$TOP"/tests/cluster/*.sh "$R/vrdma/"
mv "$R/vrdma/node-init.sh" "$R/init"
chmod +x "$R/init"
# Does this vrdmad speak to an RDMA device (-a ADDR)?  The suites that
# need the verbs path say so instead of timing out.
remote=0
"$B/sbin/vrdmad" -h 2>&1 | grep -qE '(^|[[:space:]])-a[, ]' && remote=1
echo $remote >"$R/vrdma/remote"
(cd "$R" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$OUT/node.cpio.gz"
rm -rf "$R"
cl_log "images in $OUT: $(du -h "$OUT/node.cpio.gz" | cut -f1) node.cpio.gz, kernel $KVER, vrdmad remote path: $remote"
