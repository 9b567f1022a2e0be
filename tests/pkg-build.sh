#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the Debian packages as tests/pkg.sh and tests/systemd.sh check
# them: dpkg-buildpackage -us -uc -b from a copy of this tree (its own
# build/ is never touched).  The copy is OUT/src/vrdma, the .debs land in
# OUT/src, the build's output in OUT/build.log.
# Usage: pkg-build.sh [-r] OUT
#   -r  reuse: when OUT holds the four .debs of a build of the same tree
#       (tracked and new files, contents and modes: the very tar the build
#       is unpacked from) with the same tools (the installed versions of
#       the Build-Depends, debhelper, dpkg-dev, the compiler), build
#       nothing.  Needs git; without it the packages are always built.
# Exit 0 with the packages there, 1 (the log's tail printed) otherwise.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
reuse=0
[ "${1:-}" = -r ] && { reuse=1; shift; }
out=${1:?usage: pkg-build.sh [-r] OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)

git_tree=0
git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1 && git_tree=1
# Tracked and new files as they are now, nothing ignored (build/).
tree_tar() {	# tar of the tree on stdout; extra tar options in "$@"
	if [ $git_tree = 1 ]; then
		(cd "$top" && git ls-files -z -co --exclude-standard |
			tar --null --ignore-failed-read -T - "$@" -cf -)
	else
		(cd "$top" && tar --exclude=./build --exclude=./build-san \
			--exclude=./build-fuzz "$@" -cf - .)
	fi
}
# The versions of what builds them: debian/control's Build-Depends (from
# the tar, as the build sees it; alternatives and qualifiers dropped), the
# tools dpkg-buildpackage brings, and the compiler as it names itself.
build_deps() { # tar
	{ tar -xOf "$1" debian/control 2>/dev/null || tar -xOf "$1" ./debian/control; } |
		awk '/^Build-Depends(-Arch|-Indep)?:/ { on = 1; sub(/^[^:]*:/, ""); print; next }
		     on && /^[ \t]/ { print; next }
		     { on = 0 }' |
		tr ',|' '\n\n' | sed -E 's/\[[^]]*\]//g; s/\([^)]*\)//g; s/<[^>]*>//g; s/:[a-z0-9]+//; s/[[:space:]]//g' |
		{ grep . || true; } | LC_ALL=C sort -u >"$out/build-deps.names"
	# shellcheck disable=SC2046
	dpkg-query -W -f='${binary:Package} ${Version}\n' \
		$(cat "$out/build-deps.names") debhelper dpkg-dev build-essential make 2>/dev/null |
		LC_ALL=C sort -u
	cc --version 2>/dev/null | head -n 1
	rm -f "$out/build-deps.names"
}
have_debs() {
	for p in libvrdma1 libvrdma-dev vrdma-daemon vrdma-guest; do
		set -- "$out"/src/"$p"_*.deb
		[ -e "$1" ] || return 1
	done
}

# What the packages are built from, once: contents and modes, not times
# or owners; hashed, and unpacked for the build.
tar=$out/tree.tar
tree_tar --mtime=@0 --owner=0 --group=0 --numeric-owner >"$tar"
sum=
if [ $git_tree = 1 ]; then
	sum=$({ sha256sum <"$tar"; build_deps "$tar"; } | sha256sum | cut -d' ' -f1)
	if [ $reuse = 1 ] && [ "$(cat "$out/tree.sum" 2>/dev/null)" = "$sum" ] && have_debs; then
		rm -f "$tar"
		echo "pkg-build: packages of this tree and these tools already in $out/src"
		exit 0
	fi
fi
if ! rm -rf "$out/src" "$out/tree.sum"; then
	echo "pkg-build: cannot remove $out/src: files of another user (root's, from an" \
		"older make check-systemd?); sudo rm -rf $out/src" >&2
	exit 1
fi
mkdir -p "$out/src/vrdma"
# (-m: the files dated now, not the tar's 0)
tar -xmf "$tar" -C "$out/src/vrdma"
rm -f "$tar"
if ! (cd "$out/src/vrdma" && nice dpkg-buildpackage -us -uc -b -j2) >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log"
	echo "pkg-build: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
fi
if ! have_debs; then
	echo "pkg-build: dpkg-buildpackage made no vrdma .debs in $out/src" >&2
	exit 1
fi
# Written last: a build that stopped half-way is never reused.
[ -z "$sum" ] || echo "$sum" >"$out/tree.sum"
