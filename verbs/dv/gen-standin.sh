#!/bin/sh
# SPDX-License-Identifier: MIT
# gen-standin.sh SONAME HEADER OUT.c OUT.map
#
# Writes the C source and the version script of a stand-in for one of
# rdma-core's provider libraries (libmlx5.so.1, libefa.so.1, ...) in
# vrdma's private libdir.  Debian's own cannot load beside vrdma's
# libibverbs (they bind to rdma-core's private IBVERBS_PRIVATE_* ABI),
# and a program linked to them (perftest, UCX, libfabric, Open MPI) does
# not start without a library of that soname defining every version node
# and symbol it binds to.  So the stand-in copies the installed library's
# ABI whole, read from the library itself:
#   - every version node with its parents (readelf -V), so the version
#     script matches node for node;
#   - every exported function in its node; one with several versions
#     (mlx5dv_init_obj@MLX5_1.0, @@MLX5_1.2) as rdma-core builds it: one
#     definition per version, bound by .symver;
#   - each one's prototype from HEADER (gcc -aux-info prints every
#     declaration on one line), so the definition is checked against it.
# Each call answers as rdma-core's does for a device of another provider
# (vrdma0 is neither mlx5 nor EFA): a pointer is NULL with errno
# EOPNOTSUPP, an int is EOPNOTSUPP (positive, rdma-core's dv convention)
# with errno set too, a ssize_t is -1 with errno, a bool is false, a
# void call does nothing.  Anything else (a data export, a return type
# not listed here) stops the build: someone has to decide its answer.
# Environment: CC (also finds the library: -print-file-name), CPPFLAGS,
# READELF.
set -eu

if [ $# -ne 4 ]; then
	echo "usage: gen-standin.sh SONAME HEADER OUT.c OUT.map" >&2
	exit 2
fi
soname=$1 header=$2 out_c=$3 out_map=$4
CC=${CC:-cc}
READELF=${READELF:-readelf}
me=verbs/dv/gen-standin.sh

fail() {
	echo "$me: $soname: $*" >&2
	exit 1
}

# Calls whose int is a file descriptor, not a status: -1 as a failed
# open answers.  (mlx5dv_vfio_get_events_fd is unreachable here anyway:
# its context comes from mlx5dv_get_vfio_device_list, which is NULL.)
FD_CALLS="mlx5dv_vfio_get_events_fd"

# shellcheck disable=SC2086	# CC may be "ccache gcc"
lib=$($CC -print-file-name="$soname")
[ -f "$lib" ] ||
	fail "not installed: the stand-in is generated from Debian's own (apt-get install ibverbs-providers)"
lib=$(readlink -f "$lib")
command -v "$READELF" >/dev/null 2>&1 || fail "$READELF is missing (apt-get install binutils)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gen-standin.XXXXXX")
trap 'rm -rf "$tmp" "$out_c.tmp" "$out_map.tmp"' EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2086
if ! printf '#include <%s>\n' "$header" |
	$CC ${CPPFLAGS:-} -std=gnu11 -D_GNU_SOURCE -fsyntax-only \
		-aux-info "$tmp/aux" -x c - 2>"$tmp/err"; then
	cat "$tmp/err" >&2
	fail "<$header> does not compile (apt-get install libibverbs-dev)"
fi
"$READELF" -W -V "$lib" >"$tmp/ver" || fail "readelf -V $lib failed"
"$READELF" -W --dyn-syms "$lib" >"$tmp/syms" || fail "readelf --dyn-syms $lib failed"
# by name: the output reads as a list, whatever order the linker chose
LC_ALL=C sort -k8,8 "$tmp/syms" >"$tmp/sym"

awk -v me="$me" -v soname="$soname" -v lib="$lib" -v header="$header" \
    -v fdcalls=" $FD_CALLS " -v out_c="$out_c.tmp" -v out_map="$out_map.tmp" '
function die(msg) {
	printf "%s: %s: %s\n", me, soname, msg > "/dev/stderr"
	failed = 1
	exit 1
}
function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}
# The parameter list of a prototype with names a1, a2... added (aux-info
# prints none); uses gets "(void)a1; ..." for the body.
function named(params,    n, i, c, depth, cur, parts, out, p, k) {
	uses = ""
	if (trim(params) == "void")
		return "void"
	n = 0; depth = 0; cur = ""
	for (i = 1; i <= length(params); i++) {
		c = substr(params, i, 1)
		if (c == "(") depth++
		if (c == ")") depth--
		if (c == "," && depth == 0) { parts[++n] = cur; cur = ""; continue }
		cur = cur c
	}
	parts[++n] = cur
	out = ""
	for (i = 1; i <= n; i++) {
		p = trim(parts[i])
		if (p != "...") {
			if ((k = index(p, "(*")) > 0)		# a function pointer
				p = substr(p, 1, k + 1) "a" i substr(p, k + 2)
			else if ((k = index(p, "[")) > 0)	# an array
				p = substr(p, 1, k - 1) "a" i substr(p, k)
			else
				p = p (p ~ /\*$/ ? "" : " ") "a" i
			uses = uses "(void)a" i "; "
		}
		out = out (i > 1 ? ", " : "") p
	}
	return out
}
# One function: its declaration (when it needs one of its own), body.
function emit(fname, sym, proto,    ret, par, body, sep) {
	ret = pret[sym]
	par = named(ppar[sym])
	if (ret ~ /\*$/)
		body = "errno = EOPNOTSUPP;\n\treturn NULL;"
	else if (ret == "void")
		body = ""
	else if (ret == "_Bool" || ret == "bool")
		body = "return false;"
	else if (ret == "ssize_t")
		body = "errno = EOPNOTSUPP;\n\treturn -1;"
	else if (ret == "int" && index(fdcalls, " " sym " "))
		body = "errno = EOPNOTSUPP;\n\treturn -1;"
	else if (ret == "int")
		body = "errno = EOPNOTSUPP;\n\treturn EOPNOTSUPP;"
	else
		die(sym " returns " ret ": " me " does not know how it refuses")
	sep = (ret ~ /\*$/) ? "" : " "
	printf "\n" > out_c
	if (proto)
		printf "__typeof__(%s) %s;\n", sym, fname > out_c
	printf "%s%s%s(%s)\n{\n", ret, sep, fname, par > out_c
	if (uses != "")
		printf "\t%s\n", trim(uses) > out_c
	if (body != "")
		printf "\t%s\n", body > out_c
	printf "}\n" > out_c
}

FILENAME ~ /aux$/ {
	# /* FILE:LINE:NC */ extern RET NAME (PARAMS);  -- declarations only
	if ($0 !~ /^\/\* [^*]*:[NO]C \*\/ /)
		next
	s = $0
	sub(/^\/\* [^*]*\*\/ /, "", s)
	sub(/^extern /, "", s)
	sub(/;$/, "", s)
	if ((k = index(s, " (")) == 0)
		next
	head = substr(s, 1, k - 1)
	par = substr(s, k + 2)
	sub(/\)$/, "", par)
	name = head
	sub(/.*[ *]/, "", name)
	pret[name] = trim(substr(head, 1, length(head) - length(name)))
	ppar[name] = par
	next
}
FILENAME ~ /ver$/ {
	if ($0 ~ /^Version definition/) { indef = 1; next }
	if ($0 ~ /^Version /) { indef = 0; next }
	if (!indef)
		next
	if ($0 ~ /Parent [0-9]+:/) {
		if (cur != "")
			parent[cur] = parent[cur] " " $NF
		next
	}
	cur = ""
	if ($0 ~ /Flags: BASE/)			# the soname itself
		next
	for (i = 1; i < NF; i++)
		if ($i == "Name:")
			cur = $(i + 1)
	if (cur != "") {
		node[++nnodes] = cur
		isnode[cur] = 1
	}
	next
}
# Num: Value Size Type Bind Vis Ndx Name
$1 ~ /^[0-9]+:$/ && NF >= 8 && $7 != "UND" && $5 != "LOCAL" {
	type = $4; ndx = $7; s = $8
	if (ndx == "ABS" && isnode[s])		# a version node own symbol
		next
	if (type != "FUNC")
		die("exports " s " (" type "): a stand-in cannot copy data")
	if ((k = index(s, "@@")) > 0) {
		sname = substr(s, 1, k - 1); sver = substr(s, k + 2); hidden = 0
	} else if ((k = index(s, "@")) > 0) {
		sname = substr(s, 1, k - 1); sver = substr(s, k + 1); hidden = 1
	} else
		die("exports " s " without a version")
	if (!isnode[sver])
		die(s ": no version node " sver)
	if (!(sname in pret))
		die(sname " is exported but <" header "> does not declare it")
	nsyms++
	nver[sname]++
	symname[nsyms] = sname; symver[nsyms] = sver; symhid[nsyms] = hidden
}
END {
	if (failed)
		exit 1
	if (nnodes == 0)
		die(lib " has no version nodes")
	if (nsyms == 0)
		die(lib " exports no functions")
	printf "// SPDX-License-Identifier: MIT\n" > out_c
	printf "/*\n * Generated by %s from %s\n", me, lib > out_c
	printf " * (its version nodes and exports) and <%s> (their\n", header > out_c
	printf " * prototypes): do not edit.  Every call answers as rdma-core\n" > out_c
	printf " * does for a device of another provider.\n */\n" > out_c
	printf "#include <errno.h>\n#include <stdbool.h>\n#include <stddef.h>\n\n" > out_c
	printf "#include <%s>\n", header > out_c

	printf "/* SPDX-License-Identifier: MIT */\n" > out_map
	printf "/* Generated by %s from %s: do not edit. */\n", me, lib > out_map
	for (n = 1; n <= nnodes; n++) {
		v = node[n]
		printf "\n%s {\n", v > out_map
		first = 1
		for (i = 1; i <= nsyms; i++) {
			if (symver[i] != v)
				continue
			if (first) {
				printf "\n/* ---- %s ---- */\n", v > out_c
				printf "\tglobal:\n" > out_map
			}
			printf "\t\t%s;\n", symname[i] > out_map
			if (nver[symname[i]] == 1) {
				emit(symname[i], symname[i], 0)
			} else {
				# one of several versions of a call: a name of its
				# own, of the type the header gives, bound to sym@VER
				# (older) or sym@@VER (the default); the map lists
				# the name in each node (rdma-core does the same)
				f = "vdv_" symname[i] "_" v
				gsub(/[^A-Za-z0-9_]/, "_", f)
				emit(f, symname[i], 1)
				printf "__asm__(\".symver %s, %s%s%s\");\n", f, symname[i],
					symhid[i] ? "@" : "@@", v > out_c
			}
			first = 0
		}
		if (n == 1)
			printf "\tlocal: *;\n" > out_map
		printf "}%s;\n", parent[v] > out_map
	}
}' "$tmp/aux" "$tmp/ver" "$tmp/sym"

# Whole or nothing: make sees either file only once it is complete.
mv "$out_c.tmp" "$out_c"
mv "$out_map.tmp" "$out_map"
