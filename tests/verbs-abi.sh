#!/bin/sh
# SPDX-License-Identifier: MIT
# make check-verbs-abi (part of check-unit): does every Debian program
# and library that vrdma-run is meant to carry find, in vrdma's private
# libdir, every symbol it binds to?  vrdma-run puts that dir first, so
# its libibverbs.so.1, librdmacm.so.1, libmlx5.so.1 and libefa.so.1
# replace rdma-core's, and the loader refuses a program (or dlopen an
# Open MPI / UCX / libfabric plug-in) whose version node or symbol is
# missing there.  For each ELF file of the packages below that links one
# of those libraries:
#   - each undefined sym@VERSION it takes from one of them (readelf's
#     version needs name the file) must be defined, same version, by
#     ours, and each of those version nodes must exist;
#   - each unversioned one that rdma-core's library of that soname
#     defines must be defined by ours.
# Weak references are left out: the loader lets them be absent.
# And the generated stand-ins (verbs/dv/gen-standin.sh) must define every
# sym@VERSION of Debian's own library.
# Each gap: "FILE: SYMBOL@VERSION missing from LIB" (a version node
# alone: "@VERSION"), exit 1.  A package that is not installed is a SKIP
# line (CI installs them: scripts/install-deps.sh).
# Usage: tests/verbs-abi.sh [BUILD_DIR]
set -eu

B=${1:-build}
D=$B/lib/vrdma
CC=${CC:-cc}
REPLACED="libibverbs.so.1 librdmacm.so.1 libmlx5.so.1 libefa.so.1"
STANDINS="libmlx5.so.1 libefa.so.1"
PKGS="perftest ibverbs-utils rdmacm-utils ucx-utils libucx0 libfabric-bin
	libfabric1 openmpi-bin libopenmpi3"

say() { echo "verbs-abi: $*"; }

command -v readelf >/dev/null 2>&1 || { say "SKIP: readelf missing (binutils)"; exit 0; }
command -v dpkg-query >/dev/null 2>&1 || { say "SKIP: not a Debian system (dpkg-query)"; exit 0; }
for l in $REPLACED; do
	[ -f "$D/$l" ] || { say "FAIL: $D/$l missing (make first)"; exit 1; }
done

tmp=$(mktemp -d /tmp/vrdma-abi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# defined VERSIONED LIB FILE: "LIB sym@VER" (and "LIB sym" for each
# version, so an unversioned reference finds it), "LIB @VER" per node;
# with VERSIONED=0 "LIB sym" only.
defined() {
	{ readelf -W --dyn-syms "$3"; readelf -W -V "$3"; } | awk -v l="$2" -v v="$1" '
		/^Version definition/ { d = 1; next }
		/^Version / { d = 0; next }
		d && / Name: / && !/Flags: BASE/ && v { print l " @" $NF; next }
		$1 ~ /^[0-9]+:$/ && NF >= 8 && $7 != "UND" && $5 != "LOCAL" {
			s = $8; sub(/@@/, "@", s)
			n = s; sub(/@.*/, "", n)
			if (v && s != n) print l " " s
			print l " " n
		}'
}

: >"$tmp/ours"
: >"$tmp/theirs"
for l in $REPLACED; do
	defined 1 "$l" "$D/$l" >>"$tmp/ours"
	deb=$($CC -print-file-name="$l")
	[ -f "$deb" ] || { say "SKIP: rdma-core's $l is not installed"; continue; }
	deb=$(readlink -f "$deb")
	defined 0 "$l" "$deb" >>"$tmp/theirs"
	case " $STANDINS " in *" $l "*) ;; *) continue ;; esac
	# the stand-in against the library it stands in for
	defined 1 "$l" "$deb" | awk -v f="$deb" '$2 ~ /@/ { print f, $1, $2 }' >>"$tmp/needs"
done

# needs: "FILE LIB SYM@VER" or "FILE LIB @VER" (a version node), or
# "FILE - SYM" (unversioned: which library it means is decided below)
# with "FILE LIB" lines naming what FILE links.
nfiles=0
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		say "SKIP $p: not installed (scripts/install-deps.sh installs it)"
		continue
	fi
	for f in $(dpkg -L "$p"); do
		if [ ! -f "$f" ] || [ -L "$f" ]; then continue; fi
		readelf -W -d "$f" >"$tmp/dyn" 2>/dev/null || continue	# not ELF
		grep -Eq 'NEEDED.*\[(libibverbs|librdmacm|libmlx5|libefa)\.so\.1\]' "$tmp/dyn" ||
			continue
		nfiles=$((nfiles + 1))
		{ cat "$tmp/dyn"; readelf -W -V "$f"; readelf -W --dyn-syms "$f"; } |
		awk -v f="$f" -v replaced=" $REPLACED " '
		/\(NEEDED\)/ {
			l = $NF; gsub(/[][]/, "", l)
			if (index(replaced, " " l " ")) print f, l
			next
		}
		/^Version needs/ { vn = 1; next }
		/^Version / || /^Symbol table/ { vn = 0 }
		vn && / File: / {
			for (i = 1; i < NF; i++) if ($i == "File:") file = $(i + 1)
			next
		}
		vn && / Name: / {
			for (i = 1; i < NF; i++) if ($i == "Name:") ver = $(i + 1)
			want["(" $NF ")"] = file	# by version index
			if (index(replaced, " " file " ")) print f, file, "@" ver
			next
		}
		$1 ~ /^[0-9]+:$/ && $7 == "UND" && NF >= 8 && $5 != "WEAK" {
			s = $8
			if ((k = index(s, "@")) == 0) { print f, "-", s; next }
			file = want[$9]
			if (index(replaced, " " file " ")) print f, file, s
		}'
	done
done >>"$tmp/needs"

awk -v replaced="$REPLACED" '
FILENAME ~ /ours$/ { ours[$0] = 1; next }
FILENAME ~ /theirs$/ { theirs[$0] = 1; next }
NF == 2 { links[$1 " " $2] = 1; next }
{
	f = $1; l = $2; s = $3
	if (l == "-") {			# unversioned: ours if rdma-core defines it
		n = split(replaced, ls, " ")
		for (i = 1; i <= n; i++)
			if (links[f " " ls[i]] && theirs[ls[i] " " s] && !ours[ls[i] " " s])
				gap(f, s, ls[i])
		next
	}
	if (!ours[l " " s])
		gap(f, s, l)
}
function gap(f, s, l) {
	printf "%s: %s missing from %s\n", f, s, l
	fails++
}
END { exit fails > 0 }' "$tmp/ours" "$tmp/theirs" "$tmp/needs" || {
	say "FAIL: symbols missing from $D (above)"
	exit 1
}
say "ok: $nfiles files of Debian's verbs users, and Debian's $STANDINS, find every symbol in $D"
