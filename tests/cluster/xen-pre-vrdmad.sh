# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Sourced by the Xen rig's dom0 /init (tests/xen/dom0-init.sh) before it
# starts vrdmad, when dom0 is a cluster node: dom0 owns the NICs; bring up
# eth0 and rxe0 and have vrdmad serve the fabric (-a this node's address);
# name the second NIC (MAC 52:54:00:76:02:*, scripts/cluster/xen-run.sh)
# as the guest network's uplink: dom0-init.sh bridges it with the domUs'
# vifs (xenbr0), domUs of node a are 10.78.1.<domid>/16, of b 10.78.2.*.
arg() { sed -n "s/.*vrdma\\.$1=\\([^ ]*\\).*/\\1/p" /proc/cmdline; }
NODE=$(arg node)
IP=$(arg ip)
PEER=$(arg peer)
MTU=$(arg mtu)
: "${NODE:=a}" "${MTU:=9000}"
for m in $(cat /vrdma/cluster-modules.list); do
	insmod /lib/modules/$m || echo "insmod $m failed"
done
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ip link set lo up
ip addr add "$IP/24" dev eth0
ip link set eth0 mtu "$MTU" up
rdma link add rxe0 type rxe netdev eth0 || echo "rdma link add failed"
i=0
until ibv_devinfo -d rxe0 2>/dev/null | grep -q PORT_ACTIVE || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
GIDX=
for g in 0 1 2 3; do
	case $(cat /sys/class/infiniband/rxe0/ports/1/gids/$g 2>/dev/null) in
	0000:0000:0000:0000:0000:ffff:*) GIDX=$g; break ;;
	esac
done
: "${GIDX:=1}"
# Guest network: the NIC with the second MAC (both come from virtio_net).
# shellcheck disable=SC2034  # VRDMA_GNET* are read by dom0-init.sh
case $NODE in a) VRDMA_GNET=10.78.1/16 ;; b) VRDMA_GNET=10.78.2/16 ;; *) VRDMA_GNET=10.78.3/16 ;; esac
VRDMA_GNET_UPLINK=
i=0
while [ -z "$VRDMA_GNET_UPLINK" ] && [ $i -lt 50 ]; do
	for d in /sys/class/net/*; do
		case $(cat "$d/address") in
		52:54:00:76:02:*) VRDMA_GNET_UPLINK=${d##*/} ;;
		esac
	done
	[ -n "$VRDMA_GNET_UPLINK" ] || sleep 0.1
	i=$((i + 1))
done
case $(cat /sys/class/net/eth0/address) in
52:54:00:76:01:*) ;;
*) echo "warning: eth0 is not the fabric NIC (52:54:00:76:01:*)" ;;
esac
[ -n "$VRDMA_GNET_UPLINK" ] || echo "no guest-network NIC (52:54:00:76:02:*): domUs of this node reach only each other"
echo "VRDMA-NODE-UP node=$NODE ip=$IP peer=$PEER rxe0 gid $GIDX guest-net $VRDMA_GNET uplink ${VRDMA_GNET_UPLINK:-none} (uptime $(up)s)"
# shellcheck disable=SC2034  # read by dom0-init.sh
VRDMA_NODE=$IP VRDMAD_ARGS="-a $IP"
