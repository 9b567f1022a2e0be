# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared settings of the Xen-in-QEMU rig (sourced by fetch.sh, build.sh, run.sh, rig.sh).
#   VRDMA_XEN_CACHE  downloaded .debs and their extraction (reused across runs)
#   VRDMA_XEN_WORK   images, logs of this build dir's runs
XEN_VER=4.17
XEN_CACHE=${VRDMA_XEN_CACHE:-${HOME:-/tmp}/.cache/vrdma-xen}
XEN_DEBS=$XEN_CACHE/debs
XEN_ROOT=$XEN_CACHE/root		# every .deb extracted here (dpkg -x)
XEN_STAMP=$XEN_CACHE/fetched		# written last by fetch.sh: the kernel version

xr_die() { echo "xen-rig: $*" >&2; exit 1; }
xr_log() { echo "xen-rig: $*"; }

# The kernel version fetch.sh extracted (e.g. 6.1.0-56-amd64).
xr_kver() {
	[ -s "$XEN_STAMP" ] || xr_die "no Xen cache in $XEN_CACHE: run scripts/xen/fetch.sh"
	cat "$XEN_STAMP"
}

# Stamp each line of a serial console with the seconds since T0 (an
# EPOCHREALTIME without its dot; default: now); a plain loop so nothing
# buffers the markers.
xr_stamp() { # [t0]
	local t0=${1:-${EPOCHREALTIME/./}} line now d
	while IFS= read -r line; do
		now=${EPOCHREALTIME/./}
		d=$(((now - t0) / 100000))
		printf '[%4d.%ds] %s\n' $((d / 10)) $((d % 10)) "${line%$'\r'}"
	done
}

# Every QEMU boot of the project holds this lock (two TCG guests on two
# cores only slow each other down).  Users and root share it: it is made
# once, mode 0666, and only ever opened read-only after that (flock needs
# no write access, and an O_CREAT open of another user's file in sticky
# /tmp is refused even to root when fs.protected_regular=1).
XR_LOCK=/tmp/vrdma-qemu.lock

# Take XR_LOCK on fd 9, waiting at most SECONDS; 1 if it could not be
# opened or was held all that time (the reason on stderr).
xr_lock() { # seconds
	# O_EXCL: never opens one that exists (someone may make it meanwhile)
	[ -e "$XR_LOCK" ] || (umask 0 && set -C && : >"$XR_LOCK") 2>/dev/null || true
	# (one made before, 0644, by its owner: 0666 for the rigs that still
	# open it for writing)
	[ ! -O "$XR_LOCK" ] || chmod 0666 "$XR_LOCK" 2>/dev/null || true
	if ! exec 9<"$XR_LOCK"; then
		echo "cannot open $XR_LOCK: remove it (it is made again, mode 0666)" >&2
		return 1
	fi
	if ! flock -w "$1" 9; then
		echo "another QEMU boot held $XR_LOCK for $1 s" >&2
		exec 9<&-
		return 1
	fi
}
xr_unlock() { exec 9<&-; }

# xr_fail_tail LOG...: last in a failed run's output, as CI shows only its
# tail: the console lines around the first failed check (what the program
# said: a pair prints its output before its FAIL line, itest its details
# after), then every FAIL line.
xr_fail_tail() {
	local log
	for log in "$@"; do
		grep -q 'VRDMA-TEST .* FAIL' "$log" || continue
		echo "----- ${log##*/}: around its first failed check"
		grep -m 1 -B 10 -A 6 'VRDMA-TEST .* FAIL' "$log" | grep -v 'VRDMA-TEST '
		break
	done
	cat "$@" | grep 'VRDMA-TEST .* FAIL' || true
}

xr_as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# busybox and a link for each of its applets in ROOTFS/bin.
xr_busybox() { # rootfs
	local a
	mkdir -p "$1/bin"
	cp /usr/bin/busybox "$1/bin/busybox"
	for a in $(/usr/bin/busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$1/bin/$a"
	done
}

# Kernel modules and their dependencies, read from each module's .modinfo
# (the host needs no kmod): copied from KMOD (a lib/modules/VERSION) into
# DIR and appended to the file LIST in insmod order, dependencies first.
# A module built into the kernel is skipped; one that is neither is an error.
xr_modules() { # kmod dir list module...
	local kmod=$1 dir=$2 list=$3 m f d
	shift 3
	if [ "${XR_KO_DIR:-}" != "$kmod" ]; then
		XR_KO_ALL=$(find "$kmod/kernel" -name '*.ko')
		XR_KO_DIR=$kmod
	fi
	mkdir -p "$dir"
	touch "$list"
	for m in "$@"; do
		# (.modinfo names dependencies with _, files may have -)
		if ! f=$(grep -m1 "/${m//[-_]/[-_]}\.ko$" <<<"$XR_KO_ALL"); then
			grep -q "/${m//[-_]/[-_]}\.ko$" "$kmod/modules.builtin" 2>/dev/null ||
				xr_die "module $m is not in $kmod"
			continue
		fi
		m=$(basename "$f" .ko)
		grep -qx "$m.ko" "$list" && continue
		for d in $(tr '\0' '\n' <"$f" | sed -n 's/^depends=//p' | tr , ' '); do
			xr_modules "$kmod" "$dir" "$list" "$d"
		done
		cp "$f" "$dir/"
		echo "$m.ko" >>"$list"
	done
}
