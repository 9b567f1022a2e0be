#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of the rig's domU initramfs: bring up the Xen devices libvrdma uses
# and the guest network (netfront eth0, address from vrdma.net= on the
# kernel command line: PREFIX/LEN, the address is PREFIX.<domid>), then
# serve dom0's commands (tests/xen/rig-lib.sh) until dom0 ends us.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm
mount -t tmpfs shm /dev/shm
# gntalloc's default (1024 grants for the whole domain) is far too few for
# 1 MiB buffers on both sides of a bw pair plus the rawcopy ring.
insmod /lib/modules/xen-evtchn.ko
insmod /lib/modules/xen-gntdev.ko
insmod /lib/modules/xen-gntalloc.ko limit=65536
. /vrdma/rig-lib.sh
t=$(cut -d' ' -f1 /proc/uptime)
gip=$(gn_up)
# Middleware lists a verbs device only where /dev/infiniband/<dev_name>
# is a read-write character device (verbs/tmpfiles.conf, as vrdma-guest
# installs it); MPI ranks on several domUs want distinct host names and
# mpirun's launch port (tests/xen/mpi-rsh.sh).
mkdir -p /dev/infiniband
mknod -m 666 /dev/infiniband/uverbs-vrdma0 c 1 3
if [ -n "$gip" ]; then
	hostname "$(xenstore-read name)-$(echo "$gip" | tr . -)"
	printf '127.0.0.1 localhost\n%s %s\n' "$gip" "$(hostname)" >/etc/hosts
	# An open root shell on TCP 2222: the rigs' images are for the
	# private bridge inside QEMU only, never for a domU anyone can reach.
	[ -x /usr/bin/orted ] && nc -ll -p 2222 -e /bin/sh </dev/null >/dev/console 2>&1 &
fi
echo "VRDMA-DOMU-UP $(xenstore-read name) dom$(xenstore-read domid) ${gip:-no-net} (net from ${t}s, uptime $(cut -d' ' -f1 /proc/uptime)s)"
ra_agent
