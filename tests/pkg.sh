#!/bin/sh
# SPDX-License-Identifier: MIT
# make check-pkg (part of make check): the Debian packages as a user gets
# them.  Builds them with dpkg-buildpackage from a copy of this tree in a
# temp dir, unpacks them into a throwaway root (dpkg -x: no root, no
# chroot), checks what they hold (multiarch libdir, no RUNPATH, vrdma.pc,
# versions, symbols, the unit), runs lintian, then starts vrdmad from the
# installed unit's ExecStart line and /etc/default/vrdmad (paths moved
# into the temp root) and drives it with the installed vrdmactl and guest
# tools.  Lines: "pkg: ok ...", "pkg: FAIL ...", a summary; exit 1 on a
# failure.  Usage: pkg.sh [BUILD_DIR]: with BUILD_DIR the packages are
# built into BUILD_DIR/pkg and kept while the tree does not change
# (tests/pkg-build.sh -r; make check-systemd installs the same ones).
# VRDMA_PKG_KEEP=1 keeps the temp dir; VRDMA_PKG_LINTIAN=0 skips lintian
# (the slowest step).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
fails=0
t0=$(date +%s)

say() { echo "pkg: $*"; }
ok() { say "ok   $*"; }
bad() { say "FAIL $*"; fails=$((fails + 1)); }
check() {	# check WHAT COMMAND...: ok or FAIL by the command's status
	what=$1; shift
	if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi
}
elapsed() { echo "$(($(date +%s) - t0)) s"; }
show() { cat "$@" 2>/dev/null || true; }

for c in dpkg-buildpackage dh dpkg-architecture readelf; do
	if ! command -v "$c" >/dev/null 2>&1; then
		say "SKIP: $c is missing (scripts/install-deps.sh installs dpkg-dev," \
			"debhelper, binutils and lintian)"
		exit 0
	fi
done

tmp=$(mktemp -d /tmp/vrdma-pkg.XXXXXX)
pkgdir=$tmp
reuse=
if [ -n "${1:-}" ]; then
	pkgdir=$(mkdir -p "$1/pkg" && cd "$1/pkg" && pwd)
	reuse=-r
fi
pid=
cleanup() {
	[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true
	if [ "${VRDMA_PKG_KEEP:-0}" = 1 ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- build, from a copy: the tree's own build/ is never touched ----
src=$pkgdir/src/vrdma
say "building the packages in $src (log: $pkgdir/build.log)"
# shellcheck disable=SC2086
if ! "$top/tests/pkg-build.sh" $reuse "$pkgdir"; then
	bad "dpkg-buildpackage -us -uc -b"
	VRDMA_PKG_KEEP=1
	exit 1
fi
ok "dpkg-buildpackage -us -uc -b ($(elapsed))"
# Debian's hardening flags (FORTIFY, format-security) beside ours.
if grep -n 'warning:' "$pkgdir/build.log"; then
	bad "compiler warnings in the package build"
else
	ok "no compiler warnings with Debian's build flags"
fi

debs=$pkgdir/src	# where dpkg-buildpackage leaves the .debs
cd "$tmp"
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
# The tree the packages came from, again with debian/rules' variables: a
# second make has nothing to compile or link (issue 13: it relinked), and
# make uninstall takes back all that make install puts in a DESTDIR (a
# fresh one: the build in BUILD_DIR/pkg is kept as it is).
mk="PREFIX=/usr LIBDIR=/usr/lib/$ma SYSCONFDIR=/etc SYSTEMDUNITDIR=/lib/systemd/system"
# shellcheck disable=SC2086
if relink=$(make -C "$src" -n $mk all 2>&1 | grep -E '(^| )-o ') ; then
	echo "$relink" | head -n 5; bad "a second make rebuilds"
else
	ok "a second make has nothing to build"
fi
# shellcheck disable=SC2086
if ! { make -C "$src" -s $mk DESTDIR="$tmp/inst" install &&
	make -C "$src" -s $mk DESTDIR="$tmp/inst" uninstall; } >uninstall.log 2>&1; then
	show uninstall.log; bad "make install, then make uninstall, into a DESTDIR"
elif left=$(cd "$tmp/inst" && find . ! -type d) && [ -z "$left" ]; then
	ok "make uninstall removes what make install put in a DESTDIR"
else
	echo "$left" | head -n 10; bad "make uninstall left files"
fi
lib=usr/lib/$ma
ver=$(sed -n 's/^#define VRDMA_VERSION[^"]*"\(.*\)"/\1/p' "$src/common/version.h")
root=$tmp/root
mkdir -p "$root"
for p in libvrdma1 libvrdma-dev vrdma-daemon vrdma-guest; do
	deb=
	for d in "$debs/${p}"_*.deb; do [ -e "$d" ] && deb=$d; done
	if [ -z "$deb" ]; then
		bad "package $p built"
		exit 1
	fi
	dpkg -x "$deb" "$root"
	dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$p.list"
	dpkg-deb -e "$deb" "ctl-$p"
done

# ---- what each package holds ----
holds() {	# holds PKG PATH...: each PATH is in PKG
	p=$1; shift
	for f in "$@"; do
		grep -qx "$f" "$p.list" || { echo "$p lacks $f"; return 1; }
	done
}
check "libvrdma1: the library in /$lib" \
	holds libvrdma1 "/$lib/libvrdma.so.$ver" "/$lib/libvrdma.so.1"
check "libvrdma-dev: headers, .so link, vrdma.pc, man3, libvrdma(7)" \
	holds libvrdma-dev /usr/include/vrdma/vrdma.h /usr/include/vrdma/wire.h \
	"/$lib/libvrdma.so" "/$lib/pkgconfig/vrdma.pc" \
	/usr/share/man/man3/vrdma_open.3.gz /usr/share/man/man7/libvrdma.7.gz
check "vrdma-daemon: vrdmad, vrdmactl, unit, /etc/default/vrdmad, vrdmad.conf, man5, man8" \
	holds vrdma-daemon /usr/sbin/vrdmad /usr/sbin/vrdmactl \
	/lib/systemd/system/vrdmad.service /etc/default/vrdmad \
	/etc/vrdma/vrdmad.conf /usr/share/man/man5/vrdmad.conf.5.gz \
	/usr/share/man/man8/vrdmad.8.gz /usr/share/man/man8/vrdmactl.8.gz
check "vrdma-guest: vrdma-bw, -lat, -run, private verbs libs, man1" \
	holds vrdma-guest /usr/bin/vrdma-bw /usr/bin/vrdma-lat /usr/bin/vrdma-run \
	"/$lib/vrdma/libibverbs.so.1" "/$lib/vrdma/librdmacm.so.1" \
	"/$lib/vrdma/libmlx5.so.1" "/$lib/vrdma/libefa.so.1" \
	/usr/share/man/man1/vrdma-bw.1.gz /usr/share/man/man1/vrdma-run.1.gz \
	/usr/share/man/man7/vrdma-rdmacm.7.gz /usr/lib/tmpfiles.d/vrdma-verbs.conf
# shellcheck disable=SC2016
check "every package ships the copyright file" sh -c \
	'for p in libvrdma1 libvrdma-dev vrdma-daemon vrdma-guest; do
		grep -qx "/usr/share/doc/$p/copyright" $p.list || exit 1; done'
check "no library outside /$lib" sh -c \
	"! grep -h '\.so' *.list | grep -v '^/$lib/'"
check "/etc/default/vrdmad is a conffile" grep -qx /etc/default/vrdmad ctl-vrdma-daemon/conffiles
check "/etc/vrdma/vrdmad.conf is a conffile" grep -qx /etc/vrdma/vrdmad.conf ctl-vrdma-daemon/conffiles
check "libvrdma1 has a symbols file" grep -q '^libvrdma.so.1 libvrdma1 ' ctl-libvrdma1/symbols
check "vrdma-guest declares no shlibs (its libraries are private)" test ! -e ctl-vrdma-guest/shlibs
check "vrdma-guest's postinst applies tmpfiles.d/vrdma-verbs.conf, its postrm takes the node" sh -c \
	"grep -q 'systemd-tmpfiles .*--create vrdma-verbs.conf' ctl-vrdma-guest/postinst &&
	 grep -q '/dev/infiniband/uverbs-vrdma0' ctl-vrdma-guest/postrm"
# The rule as the postinst applies it, into the temp root (mknod: root).
devnode() {
	systemd-tmpfiles --create --root="$root" "$root/usr/lib/tmpfiles.d/vrdma-verbs.conf" &&
	[ "$(stat -c '%F %t:%T %a' "$root/dev/infiniband/uverbs-vrdma0")" = \
		'character special file 1:3 666' ]
}
if [ "$(id -u)" = 0 ] && command -v systemd-tmpfiles >/dev/null 2>&1; then
	check "tmpfiles.d/vrdma-verbs.conf makes /dev/infiniband/uverbs-vrdma0: char 1:3, 0666" devnode
else
	say "skip tmpfiles.d/vrdma-verbs.conf applied (needs root and systemd-tmpfiles)"
fi
check "vrdma-guest's private libraries bind to themselves, not rdma-core" sh -c \
	"! dpkg-deb -f $debs/vrdma-guest_*.deb Depends | grep -q 'libibverbs1\|librdmacm1'"
check "vrdma-guest does not pull in an MPI (libvrdma-mpi.so uses the program's)" sh -c \
	"! dpkg-deb -f $debs/vrdma-guest_*.deb Depends | grep -q 'libopenmpi\|libmpich'"

# ---- RUNPATH: none in installed programs and libvrdma; in the private
# dir only $ORIGIN-relative ones (they find each other and libvrdma) ----
runpath() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p'; }
rp_bad=
n=0
for f in "$root"/usr/bin/* "$root"/usr/sbin/* "$root/$lib"/libvrdma.so.1; do
	head -c 4 "$f" | grep -q ELF || continue	# vrdma-run is a script
	r=$(runpath "$f")
	n=$((n + 1))
	[ -z "$r" ] || rp_bad="$rp_bad ${f#"$root"}=$r"
done
for f in "$root/$lib"/vrdma/*.so.1; do
	r=$(runpath "$f")
	# shellcheck disable=SC2016
	case $r in '' | '$ORIGIN' | '$ORIGIN/..') ;; *) rp_bad="$rp_bad ${f#"$root"}=$r" ;; esac
done
if [ -z "$rp_bad" ] && [ "$n" -eq 5 ]; then
	ok "no RUNPATH in installed programs and libvrdma (5 files)"
else bad "RUNPATH:$rp_bad"; fi

# ---- vrdma.pc, usable from the temp root ----
pc=$root/$lib/pkgconfig/vrdma.pc
check "vrdma.pc: prefix=/usr" grep -qx 'prefix=/usr' "$pc"
check "vrdma.pc: libdir=/$lib" grep -qx "libdir=/$lib" "$pc"
check "vrdma.pc: Version: $ver" grep -qx "Version: $ver" "$pc"
cat >prog.c <<'EOF'
#include <stdio.h>
#include <vrdma/vrdma.h>
int main(void) { puts(vrdma_wc_status_str(VRDMA_WC_SUCCESS)); return 0; }
EOF
# shellcheck disable=SC2046
if cc -o prog prog.c $(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/$lib/pkgconfig \
	pkg-config --cflags --libs vrdma) >cc.log 2>&1 &&
	LD_LIBRARY_PATH=$root/$lib ./prog >prog.out 2>&1; then
	ok "a program builds with pkg-config vrdma and runs on the packaged library"
else
	show cc.log prog.out; bad "build and run a program against libvrdma-dev"
fi

# ---- versions: one number everywhere ----
check "debian/changelog carries VRDMA_VERSION $ver" \
	test "$(cd "$src" && dpkg-parsechangelog -SVersion)" = "$ver"
vfail=
for p in usr/sbin/vrdmad usr/sbin/vrdmactl usr/bin/vrdma-bw usr/bin/vrdma-lat usr/bin/vrdma-run; do
	out=$(LD_LIBRARY_PATH=$root/$lib "$root/$p" --version 2>&1) || true
	[ "$out" = "$(basename "$p") (vrdma) $ver" ] || vfail="$vfail $p:'$out'"
done
if [ -z "$vfail" ]; then ok "--version of vrdmad, vrdmactl, vrdma-bw, vrdma-lat, vrdma-run: $ver"
else bad "--version:$vfail"; fi
check "vrdma-run looks in /$lib/vrdma" grep -q "\"/$lib/vrdma\"" "$root/usr/bin/vrdma-run"

# ---- the unit ----
unit=$root/lib/systemd/system/vrdmad.service
if command -v systemd-analyze >/dev/null 2>&1; then
	# verified on a copy whose paths point into the temp root
	mkdir -p verify
	sed -e "s|^ExecStart=/|ExecStart=$root/|" -e "s|^EnvironmentFile=-/|EnvironmentFile=-$root/|" \
		"$unit" >verify/vrdmad.service
	if systemd-analyze verify --man=no verify/vrdmad.service >verify.log 2>&1 &&
		! [ -s verify.log ]; then
		ok "systemd-analyze verify vrdmad.service"
	else
		show verify.log; bad "systemd-analyze verify vrdmad.service"
	fi
	score=$(systemd-analyze security --offline=yes verify/vrdmad.service 2>/dev/null |
		sed -n 's/.*Overall exposure level for [^:]*: //p')
	say "info systemd-analyze security: exposure ${score:-unknown}"
else
	say "skip systemd-analyze (not installed)"
fi
check "unit: Type=notify, Restart=on-failure, StateDirectory=vrdma" sh -c \
	"grep -qx Type=notify '$unit' && grep -qx Restart=on-failure '$unit' &&
	 grep -qx StateDirectory=vrdma '$unit' && grep -qx RuntimeDirectory=vrdma '$unit'"

# ---- lintian ----
if [ "${VRDMA_PKG_LINTIAN:-1}" = 0 ]; then
	say "skip lintian (VRDMA_PKG_LINTIAN=0)"
elif command -v lintian >/dev/null 2>&1; then
	nice lintian -I --pedantic --show-overrides "$debs"/vrdma_*.changes >lintian.log 2>&1 || true
	sed 's/^/pkg: lintian: /' lintian.log
	if grep -q '^[EW]: ' lintian.log; then
		bad "lintian: errors or warnings (overrides, each with its reason, are in debian/)"
	else
		ok "lintian: no errors or warnings ($(grep -c '^[IPO]: ' lintian.log) info/pedantic/overridden; $(elapsed))"
	fi
else
	say "skip lintian (not installed)"
fi

# ---- vrdmad as the unit starts it ----
# systemd's part, by hand: RuntimeDirectory and StateDirectory made, the
# EnvironmentFile read, $VRDMAD_OPTS split into words; the unit's fixed
# paths moved into the temp root.  The plain-host platform: no Xen here.
run=$tmp/run
state=$tmp/state
mkdir -p "$run" && mkdir -m 700 "$state"
line=$(sed -n 's/^ExecStart=//p' "$unit")
case $line in
*[\"\'%\\]*) bad "ExecStart has quotes, specifiers or escapes this test does not emulate: $line" ;;
esac
VRDMAD_OPTS=
# shellcheck disable=SC1091
. "$root/etc/default/vrdmad"
set -f		# words as systemd splits them, never globbed
cmd=
for w in $line; do
	# shellcheck disable=SC2016
	case $w in
	'$VRDMAD_OPTS' | '${VRDMAD_OPTS}') cmd="$cmd $VRDMAD_OPTS" ;;
	*) cmd="$cmd $(echo "$w" | sed -e "s|^/usr/|$root/usr/|" -e "s|^/run/vrdma|$run|" \
		-e "s|^/var/lib/vrdma|$state|")" ;;
	esac
done
# The shipped vrdmad.conf (everything commented out but attach = all), which vrdmad reads
# from /etc itself: here from the root, by name.
cmd="$cmd -c $root/etc/vrdma/vrdmad.conf"
say "info ExecStart as run:$cmd"
ctl() { LD_LIBRARY_PATH=$root/$lib timeout 10 "$root/usr/sbin/vrdmactl" -S "$run" "$@"; }
# shellcheck disable=SC2086
VRDMA_PLATFORM=host LD_LIBRARY_PATH=$root/$lib $cmd 2>vrdmad.log &
pid=$!
set +f
i=0
while [ "$(ctl ping 2>/dev/null)" != pong ] && [ $i -lt 100 ]; do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1; i=$((i + 1))
done
if [ "$(ctl ping 2>/dev/null)" = pong ]; then
	ok "vrdmad from the unit's command line answers the installed vrdmactl"
else
	show vrdmad.log; bad "vrdmad from the unit's command line (no pong)"
fi
check "vrdmad logs its version at start" grep -q "vrdmad $ver started" vrdmad.log
check "the shipped vrdmad.conf: attach = all (a no-op on the plain host)" sh -c \
	"LD_LIBRARY_PATH=$root/$lib timeout 10 $root/usr/sbin/vrdmactl -S $run attach-policy |
	 grep -qx 'attach policy: all (no domains on this platform)'"
check "vrdmactl policy writes the state dir's policy file" sh -c \
	"LD_LIBRARY_PATH=$root/$lib timeout 10 $root/usr/sbin/vrdmactl -S $run policy default tenant &&
	 grep -qx 'default tenant' $state/policy"
check "vrdmactl set on a VM with no guest writes the state dir's settings file" sh -c \
	"LD_LIBRARY_PATH=$root/$lib timeout 10 $root/usr/sbin/vrdmactl -S $run set pkgvm weight=3 &&
	 grep -qx 'vm pkgvm 0 weight=3' $state/settings"
# A guest pair on the packaged library, through the daemon.
gt() {
	p=$1; shift
	VRDMA_RUN_DIR=$run LD_LIBRARY_PATH=$root/$lib timeout 30 "$root/usr/bin/$p" "$@"
}
( gt vrdma-bw -n 200 -s 4096 >bw-server.out 2>&1 ) &
spid=$!
i=0	# the client connects once the server listens (bench/bench-lib.sh)
while ! grep -q "listening on service" bw-server.out 2>/dev/null && [ $i -lt 100 ]; do
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.1; i=$((i + 1))
done
if gt vrdma-bw -n 200 -s 4096 --verify local >bw-client.out 2>&1 && wait "$spid"; then
	ok "vrdma-bw --verify between two guests on the packaged libvrdma"
else
	show bw-server.out bw-client.out; bad "vrdma-bw between two guests"
fi
if command -v ibv_devinfo >/dev/null 2>&1; then
	if VRDMA_LIBDIR=$root/$lib/vrdma VRDMA_RUN_DIR=$run timeout 30 \
		"$root/usr/bin/vrdma-run" ibv_devinfo >devinfo.out 2>&1 &&
		grep -q 'hca_id:.*vrdma0' devinfo.out; then
		ok "vrdma-run ibv_devinfo sees vrdma0 through the packaged libibverbs"
	else
		show devinfo.out; bad "vrdma-run ibv_devinfo"
	fi
	# board_id is read from the device's ibdev_path: the sysfs view
	check "ibv_devinfo reads board_id from the packaged libibverbs' sysfs view" \
		grep -q 'board_id:[[:space:]]*vrdma$' devinfo.out
fi
# systemctl reload = SIGHUP: the policy file again, the daemon stays.
kill -HUP "$pid"
i=0
while ! grep -q 'policy: reloaded' vrdmad.log && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1))
done
check "SIGHUP (systemctl reload) reloads, vrdmad keeps serving" sh -c \
	"[ \"\$(LD_LIBRARY_PATH=$root/$lib timeout 10 $root/usr/sbin/vrdmactl -S $run ping)\" = pong ] &&
	 grep -q 'policy: reloaded $state/policy' vrdmad.log"
kill -TERM "$pid"
st=0
wait "$pid" || st=$?
pid=
check "SIGTERM: exit 0, control socket removed" sh -c "[ $st -eq 0 ] && [ ! -e $run/vrdmad.ctl ]"

say "$fails failed ($(elapsed))"
[ "$fails" -eq 0 ]
