#!/bin/bash
# SPDX-License-Identifier: MIT
# make check-systemd (part of make check): the Debian packages on a fresh
# Debian 12 under a real systemd (issue 13: "dpkg -i of the built packages
# on a fresh Debian 12 gives a running vrdmad under systemd").
#  1. the packages: tests/pkg-build.sh, as make check-pkg builds them,
#     kept in BUILD_DIR/pkg while the tree does not change (shared with
#     make check-pkg);
#  2. a fresh bookworm: mmdebstrap --variant=minbase plus systemd-sysv,
#     from the Debian mirror this machine's apt uses, kept in
#     BUILD_DIR/systemd/base (made again when its recipe changes);
#  3. a copy of it gets the packages as an operator installs them: dpkg -i,
#     apt-get -f install for the dependencies (their .debs kept in
#     BUILD_DIR/systemd/archives); nothing else: the package enables it;
#  4. an ext4 image of that root (mke2fs -d: no loop mount) boots under
#     QEMU TCG on Debian's kernel (the Xen rig's cache, scripts/xen/fetch.sh)
#     through a busybox initramfs (tests/systemd/init) that hands over to
#     the image's systemd;
#  5. tests/systemd/systest.sh, a oneshot unit, checks vrdmad there and
#     prints "VRDMA-TEST <name> PASS|FAIL" and "VRDMA-SYSTEMD-DONE pass=P
#     fail=F" on the console and, alone, on a second serial port (the
#     file BUILD_DIR/systemd/results.log), then the machine powers off.
# Lines: "systemd: ok|FAIL ...", the guest's results, a summary; exit 0
# only when the results port holds one PASS for each check of systest.sh
# and nothing else but the summary "pass=<that many> fail=0"; 1 on any
# failure or when the guest did not finish within TIMEOUT.
# Needs root (chroot, the image's file owners): runs itself through sudo.
# Only BUILD_DIR/systemd (the root file system, its image) is made as
# root; the packages (BUILD_DIR/pkg) are built, and the Xen rig's cache
# (VRDMA_XEN_CACHE, default ~/.cache/vrdma-xen) filled, as the owner of
# BUILD_DIR, whoever runs this.  make clean removes BUILD_DIR/systemd
# through sudo.
# Usage: systemd.sh BUILD_DIR
# env: TIMEOUT (s for the boot, default the test unit's TimeoutStartSec
#   plus 180: the boot and vrdmad's start come before it), MEM (MiB, default 1024), SMP
#   (default 2), CPU (default qemu64), LOCK_WAIT (s to wait for another
#   QEMU boot of the project, default 900)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
B=$(cd "${1:?usage: systemd.sh BUILD_DIR}" && pwd)
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "systemd: needs root (chroot), and there is no sudo" >&2; exit 1; }
	# sudo keeps neither HOME nor the cache's variable: this user's cache
	export VRDMA_XEN_CACHE=${VRDMA_XEN_CACHE:-${HOME:-/tmp}/.cache/vrdma-xen}
	exec sudo --preserve-env=VRDMA_XEN_CACHE,TIMEOUT,MEM,SMP,CPU,LOCK_WAIT,http_proxy,https_proxy,no_proxy \
		-- "$0" "$B"
fi
# The build dir's owner (sudo make check-systemd as well as make
# check-systemd) builds the packages and owns the Xen cache.
OWNER=$(stat -c %u "$B")
OWNER_GID=$(stat -c %g "$B")
OWNER_HOME=$HOME
if [ "$OWNER" != 0 ]; then
	OWNER_HOME=$(getent passwd "$OWNER" | cut -d: -f6) || OWNER_HOME=
	[ -n "$OWNER_HOME" ] || { echo "systemd: the owner of $B (uid $OWNER) has no passwd entry" >&2; exit 1; }
fi
export VRDMA_XEN_CACHE=${VRDMA_XEN_CACHE:-$OWNER_HOME/.cache/vrdma-xen}
as_owner() {
	if [ "$OWNER" = 0 ]; then
		"$@"
	else
		HOME=$OWNER_HOME USER=$(id -un "$OWNER") LOGNAME=$(id -un "$OWNER") \
			setpriv --reuid="$OWNER" --regid="$OWNER_GID" --init-groups -- "$@"
	fi
}
. "$TOP/scripts/xen/lib.sh"
W=$B/systemd
# The guest's own limit on its checks (the unit's TimeoutStartSec): the
# host's is longer, so a hang in the checks ends as the guest's failure
# (the unit fails, the machine powers off) before the host gives up.
GUEST_LIMIT=$(sed -n 's/^TimeoutStartSec=\([0-9]*\)$/\1/p' "$HERE/systemd/vrdma-systest.service")
[ -n "$GUEST_LIMIT" ] || { echo "systemd: no TimeoutStartSec=<s> in vrdma-systest.service" >&2; exit 1; }
TIMEOUT=${TIMEOUT:-$((GUEST_LIMIT + 180))}
# The fresh system: what a minimal Debian 12 with systemd as init has.
SUITE=bookworm
INCLUDE=systemd-sysv
HOST_PKGS="mmdebstrap e2fsprogs"

fails=0
t0=$SECONDS
say() { echo "systemd: $*"; }
ok() { say "ok   $*"; }
bad() { say "FAIL $*"; fails=$((fails + 1)); }
die() { say "FAIL $*" >&2; exit 1; }
took() { echo "$((SECONDS - $1)) s"; }

# ---- tools: the Xen rig's (QEMU, busybox, cpio, the kernel), mmdebstrap ----
as_owner "$TOP/scripts/xen/fetch.sh" >/dev/null || die "scripts/xen/fetch.sh (QEMU and Debian's kernel)"
# shellcheck disable=SC2086
"$TOP/scripts/install-deps.sh" $HOST_PKGS >&2 || die "installing $HOST_PKGS"
KVER=$(xr_kver)
mkdir -p "$W"

# ---- 1. the packages ----
ts=$SECONDS
# (root's, from a run before the packages were built as the owner: theirs)
[ "$OWNER" = 0 ] || [ ! -d "$B/pkg" ] || chown -R "$OWNER:$OWNER_GID" "$B/pkg"
as_owner "$TOP/tests/pkg-build.sh" -r "$B/pkg" || die "the packages did not build (tests/pkg-build.sh)"
ok "the packages ($(took $ts))"
DEBS=
for p in libvrdma1 libvrdma-dev vrdma-daemon vrdma-guest; do
	DEBS="$DEBS $(ls "$B/pkg/src/${p}"_*.deb)"
done

# ---- 2. a fresh Debian 12, made once ----
# The Debian sources apt uses here (deb822 or not): by the Release files
# apt fetched, Debian's own (Origin Debian: the archive, its updates and
# security) for bookworm, not a third party's repository that names the
# codename (mmdebstrap has no key for it: NO_PUBKEY).
# shellcheck disable=SC2016  # apt-get expands $(...)
sources=$(apt-get indextargets \
	--format '$(ORIGIN)|$(CODENAME)|deb $(REPO_URI) $(RELEASE) $(COMPONENT)' \
	'Identifier: Packages' |
	sed -En "s/^Debian\|${SUITE}(-updates|-security)?\|//p" | LC_ALL=C sort -u) || true
[ -n "$sources" ] || die "no Debian $SUITE sources in apt's configuration" \
	"(/etc/apt/sources.list*; their Release files: apt-get update)"
# The host's apt proxy, if any, for mmdebstrap and the root's apt
aptopts=$(apt-config dump | grep -E '^Acquire::(https?|ftp)::Proxy' || true)
recipe=$(printf '%s\n' "$SUITE minbase $INCLUDE" "$sources" "$aptopts")
ts=$SECONDS
# (an absolute link: resolved in the root, not here)
if [ "$(cat "$W/base.recipe" 2>/dev/null)" != "$recipe" ] || [ ! -L "$W/base/sbin/init" ]; then
	rm -rf "$W/base" "$W/base.new" "$W/base.recipe" "$W/archives"
	echo "$sources" >"$W/sources.list"
	say "making a fresh $SUITE root in $W/base (mmdebstrap, log: $W/mmdebstrap.log)"
	# apt's lists stay: the operator's apt-get resolves the dependencies
	opts=()
	while IFS= read -r o; do
		[ -z "$o" ] || opts+=("--aptopt=$o")
	done <<<"$aptopts"
	if ! timeout 1200 mmdebstrap --variant=minbase --include="$INCLUDE" \
		--skip=cleanup/apt/lists "${opts[@]}" "$SUITE" "$W/base.new" "$W/sources.list" \
		>"$W/mmdebstrap.log" 2>&1; then
		tail -n 30 "$W/mmdebstrap.log"
		die "mmdebstrap $SUITE (needs Debian's mirror once; then $W/base is reused)"
	fi
	mv "$W/base.new" "$W/base"
	echo "$recipe" >"$W/base.recipe"
	ok "a fresh $SUITE root ($(took $ts))"
else
	ok "a fresh $SUITE root (made before: $W/base)"
fi

# ---- 3. the packages installed as an operator does ----
ts=$SECONDS
R=$W/root
rm -rf "$R"
cp -a "$W/base" "$R"
# In the root, /proc and /dev/pts (apt's log) mounted in a private mount
# namespace: they go away with the command, whatever happens.
in_root() {
	unshare --mount --propagation private -- sh -c \
		'r=$1; shift; mount -t proc proc "$r/proc" &&
		 mount -t devpts -o newinstance,ptmxmode=0666 devpts "$r/dev/pts" &&
		 exec chroot "$r" "$@"' sh "$R" \
		env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"
}
mkdir -p "$R/tmp/vrdma-debs" "$W/archives"
# shellcheck disable=SC2086
cp $DEBS "$R/tmp/vrdma-debs/"
cp "$W"/archives/*.deb "$R/var/cache/apt/archives/" 2>/dev/null || true
log=$W/install.log
# The names apt resolves: the host's resolver now (mmdebstrap's copy is
# the one of the day the root was made); the image keeps that copy.
resolv=0
if [ -e /etc/resolv.conf ]; then
	resolv=1
	mv "$R/etc/resolv.conf" "$R/etc/resolv.conf.base" 2>/dev/null || true
	cp -L /etc/resolv.conf "$R/etc/resolv.conf"
fi
# dpkg -i on a fresh system stops at the missing dependencies (rdma-core's,
# Xen's libraries); apt-get -f install brings them and configures ours.
{
	echo "# dpkg -i"
	in_root sh -c 'dpkg -i /tmp/vrdma-debs/*.deb' || true
	echo "# apt-get -f install"
	in_root apt-get -f install -y -q ||
		{ in_root apt-get update -q && in_root apt-get -f install -y -q; }
} >"$log" 2>&1 || true
cp -n "$R"/var/cache/apt/archives/*.deb "$W/archives/" 2>/dev/null || true
in_root apt-get clean >/dev/null 2>&1 || true
if [ $resolv = 1 ]; then
	rm -f "$R/etc/resolv.conf"
	mv "$R/etc/resolv.conf.base" "$R/etc/resolv.conf" 2>/dev/null || true
fi
rm -rf "$R/tmp/vrdma-debs"
st=
for p in libvrdma1 libvrdma-dev vrdma-daemon vrdma-guest; do
	s=$(in_root dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$p" 2>/dev/null) || s=none
	st="$st $p=$s"
	case $s in "ii "*) ;; *) bad "$p not installed: $s" ;; esac
done
if [ $fails = 0 ]; then
	ok "dpkg -i, then apt-get -f install: all installed ($(took $ts));$st"
else
	tail -n 30 "$log"
	die "the packages did not install (log: $log)"
fi
if audit=$(in_root dpkg --audit 2>&1) && [ -z "$audit" ]; then
	ok "dpkg --audit: nothing half-installed"
else
	echo "$audit"; bad "dpkg --audit"
fi
# Enabled by the package, as Debian ships a daemon: dpkg -i alone gives
# a running vrdmad at the next boot.  Nothing runs in this chroot, so
# the maintainer scripts are read for the rest: started at install on a
# running system, restarted after an upgrade, stopped at removal.
e=$(in_root systemctl is-enabled vrdmad 2>&1) || true
info=$R/var/lib/dpkg/info/vrdma-daemon
if [ "$e" = enabled ]; then ok "vrdmad.service enabled by the package"
else bad "vrdmad.service after install: '$e', not enabled"; fi
if grep -qsF 'deb-systemd-invoke $_dh_action '"'vrdmad.service'" "$info.postinst" &&
   grep -qs '_dh_action=start' "$info.postinst" &&
   grep -qs 'deb-systemd-invoke stop.*vrdmad.service' "$info.prerm" &&
   grep -qs 'deb-systemd-helper purge.*vrdmad.service' "$info.postrm"; then
	ok "maintainer scripts: started at install, stopped at removal, purged"
else
	bad "maintainer scripts do not start/stop/purge vrdmad.service"
fi

# The test's own part: its unit, a machine id and name, and no login
# prompts or logind (no dbus in a minimal system) on the console.
install -m 755 "$HERE/systemd/systest.sh" "$R/usr/local/sbin/vrdma-systest"
install -m 644 "$HERE/systemd/vrdma-systest.service" "$R/etc/systemd/system/"
{
	in_root systemctl enable vrdma-systest.service
	in_root systemctl mask getty.target systemd-logind.service
	in_root systemd-machine-id-setup
} >>"$log" 2>&1 || die "setting up the test unit (log: $log)"
echo vrdma-systest >"$R/etc/hostname"

# ---- 4. the disk image and the initramfs ----
ts=$SECONDS
size=$(($(du -sm "$R" | cut -f1) + 256))
rm -f "$W/root.img"
mke2fs -q -t ext4 -L vrdma-root -d "$R" "$W/root.img" "${size}M" >"$W/mke2fs.log" 2>&1 ||
	{ cat "$W/mke2fs.log"; die "mke2fs -d $R"; }
rm -rf "$R"
I=$W/initrd
rm -rf "$I"
mkdir -p "$I"/{proc,sys,dev}
xr_busybox "$I"
xr_modules "$XEN_ROOT/lib/modules/$KVER" "$I/lib/modules" "$I/modules.list" \
	virtio_pci virtio_blk crc32c_generic ext4
install -m 755 "$HERE/systemd/init" "$I/init"
(cd "$I" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$W/initrd.gz"
rm -rf "$I"
ok "image ${size} MiB and initramfs ($(took $ts))"

# ---- 5. boot: systemd, vrdmad, the checks ----
LOG=$W/boot.log
RES=$W/results.log
rm -f "$RES"
xr_lock "${LOCK_WAIT:-900}" || die "no QEMU lock"
say "booting (log: $LOG, results: $RES, limit ${TIMEOUT}s)"
ts=$SECONDS
# -no-reboot: the unit's poweroff (or a panic) ends QEMU.  The second
# serial port (the guest's ttyS1) carries the result lines alone.
set +e
timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -accel tcg -machine pc \
	-cpu "${CPU:-qemu64}" -m "${MEM:-1024}" -smp "${SMP:-2}" \
	-display none -serial stdio -serial "file:$RES" -monitor none -no-reboot -nodefaults \
	-kernel "$XEN_ROOT/boot/vmlinuz-$KVER" -initrd "$W/initrd.gz" \
	-append "console=ttyS0 quiet loglevel=4 panic=-1 systemd.firstboot=off systemd.show_status=error" \
	-drive file="$W/root.img",format=raw,if=virtio,cache=unsafe \
	</dev/null 2>&1 | xr_stamp >"$LOG"
qrc=${PIPESTATUS[0]}
set -e
xr_unlock
boot=$(took $ts)

# The verdict: the results port, every line well formed, one result per
# check of systest.sh ("check NAME ..." lines), all PASS, and the guest's
# own summary saying exactly that.
grep -E 'VRDMA-(SYSTEST|DIAG)' "$LOG" || true
touch "$RES"
res=$(tr -d '\r' <"$RES")
[ -z "$res" ] || echo "$res"
want=$(sed -n 's/^check \([a-z0-9-]*\) .*/\1/p' "$HERE/systemd/systest.sh" | LC_ALL=C sort)
nwant=$(echo "$want" | grep -c .) || true
passed=$(echo "$res" | sed -n 's/^VRDMA-TEST \([a-z0-9-]*\) PASS$/\1/p' | LC_ALL=C sort)
npass=$(echo "$passed" | grep -c .) || true
nfail=$(echo "$res" | grep -cE '^VRDMA-TEST [a-z0-9-]+ FAIL$') || true
ndone=$(echo "$res" | grep -c '^VRDMA-SYSTEMD-DONE') || true
garbled=$(echo "$res" | grep -vE '^(VRDMA-TEST [a-z0-9-]+ (PASS|FAIL)|VRDMA-SYSTEMD-DONE pass=[0-9]+ fail=[0-9]+)?$') || true
if [ "$ndone" = 0 ]; then
	if [ "$qrc" = 124 ]; then bad "TIMEOUT: the guest did not finish within ${TIMEOUT}s"
	else bad "QEMU ended (status $qrc) before the guest's checks finished"; fi
	grep -nE 'Kernel panic|BUG:|Oops|INITRD-FAIL|Failed to start|Timed out|ttyS1' "$LOG" | head -20 || true
	echo "----- last 40 console lines"
	tail -n 40 "$LOG"
else
	if [ "$nfail" != 0 ]; then
		# what each failed check printed (indented on the console), then
		# the guest's diagnostics
		awk '/VRDMA-TEST [a-z0-9-]+ (PASS|FAIL)/ {
			if (/ FAIL/) printf "%s%s\n", buf, $0; buf = ""; next }
		     /^\[ *[0-9]+\.[0-9]s\]     / { buf = buf $0 "\n" }' "$LOG"
		sed -n '/VRDMA-DIAG-BEGIN/,/VRDMA-DIAG-END/p' "$LOG"
	fi
	[ "$ndone" = 1 ] && [ "$(echo "$res" | tail -n 1)" = "$(echo "$res" | grep '^VRDMA-SYSTEMD-DONE')" ] ||
		bad "the guest's summary is not its last line, once"
	[ -z "$garbled" ] || { echo "$garbled" | sed 's/^/    /'; bad "results port: lines that are no result"; }
	[ "$passed" = "$want" ] ||
		bad "checks passed: $(echo $passed); systest.sh has: $(echo $want)"
	[ "$(echo "$res" | grep '^VRDMA-SYSTEMD-DONE')" = "VRDMA-SYSTEMD-DONE pass=$nwant fail=0" ] ||
		bad "the guest's summary is not 'VRDMA-SYSTEMD-DONE pass=$nwant fail=0'"
	# The console, for what it shows whole: a FAIL there is one too.
	if grep -q 'VRDMA-TEST .* FAIL' "$LOG"; then
		bad "a FAIL on the console"
	fi
fi
# again at the end: CI shows only the tail
[ "$nfail" = 0 ] || echo "$res" | grep 'FAIL$'
[ "$nwant" -gt 0 ] || bad "no checks found in systest.sh"
fails=$((fails + nfail))
say "guest: $npass of $nwant checks passed, $nfail failed, boot and checks $boot; log: $LOG"
say "$fails failed ($(took $t0))"
[ $fails = 0 ]
