# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Sourced by the Xen rig's dom0 /init (tests/xen/dom0-init.sh) before it
# starts vrdmad, when dom0 is a cluster node: dom0 owns the NIC; bring up
# eth0 and rxe0 and have vrdmad serve the fabric (-a this node's address).
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
echo "VRDMA-NODE-UP node=$NODE ip=$IP peer=$PEER rxe0 gid $GIDX (uptime $(up)s)"
# shellcheck disable=SC2034  # read by dom0-init.sh
VRDMA_NODE=$IP VRDMAD_ARGS="-a $IP"
