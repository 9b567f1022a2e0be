#!/bin/sh
# SPDX-License-Identifier: MIT
# /etc/xen/scripts/vif-bridge of the rig's dom0 (busybox sh; Debian's is
# bash over five helper scripts).  libxl runs it for every vif of a domU:
#   vif-bridge online|offline type_if=vif
# with env vif=vif<domid>.<devid> (netback's interface in dom0) and
# XENBUS_PATH=backend/vif/<domid>/<devid> (its bridge= is there).
# online: the vif joins the bridge (MTU of the bridge) and is up; then
# hotplug-status = connected, which netback waits for before it connects
# the domU's netfront.  offline: leave the bridge (the vif may be gone).
PATH=/bin:/sbin:/usr/bin:/usr/sbin
dev=${vif:-}
xp=${XENBUS_PATH:-}
fail() {
	echo "vif-bridge: $*" >&2
	[ -n "$xp" ] && xenstore-write "$xp/hotplug-error" "vif-bridge: $*" \
		"$xp/hotplug-status" error
	exit 1
}
{ [ -n "$dev" ] && [ -n "$xp" ]; } || fail "no vif or XENBUS_PATH in the environment"
br=$(xenstore-read "$xp/bridge" 2>/dev/null)
br=${br:-xenbr0}
case ${1:-} in
online | add)
	[ -e "/sys/class/net/$br/bridge" ] || fail "no bridge $br for $dev"
	ip link set "$dev" mtu "$(cat "/sys/class/net/$br/mtu")" 2>/dev/null
	brctl addif "$br" "$dev" || fail "brctl addif $br $dev failed"
	ip link set "$dev" up || fail "cannot bring $dev up"
	xenstore-write "$xp/hotplug-status" connected
	;;
offline | remove)
	brctl delif "$br" "$dev" 2>/dev/null
	ip link set "$dev" down 2>/dev/null
	;;
esac
exit 0
