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
echo "VRDMA-DOMU-UP $(xenstore-read name) dom$(xenstore-read domid) ${gip:-no-net} (net from ${t}s, uptime $(cut -d' ' -f1 /proc/uptime)s)"
ra_agent
