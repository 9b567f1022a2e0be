#!/bin/sh
# SPDX-License-Identifier: MIT
# The docs say what the code does (make check-unit): every man page renders
# without a warning (man --warnings), and no page or doc promises what is
# done already or names our internal work items ("not implemented yet",
# "a future vrdmactl ...", "issue 12") -- each such phrase went stale once.
set -u
cd "$(dirname "$0")/.." || exit 2
fail=0
n=0
bad() { echo "docs: FAIL $*"; fail=$((fail + 1)); }

if command -v man >/dev/null 2>&1; then
	for f in docs/man/*.[1-8]; do
		n=$((n + 1))
		# a page that is only a .so link: its target is one of ours
		so=$(sed -n '1s/^\.so man[1-8]\///p' "$f")
		if [ -n "$so" ]; then
			[ -f "docs/man/$so" ] || bad "$f: .so to a missing page $so"
			continue
		fi
		w=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
		[ -z "$w" ] || bad "$f: man --warnings: $w"
	done
else
	echo "docs: man not installed: renderings not checked"
fi
# Every call of the API headers has a page, its own or a .so to one (no
# new API without one, as rdma-core asks).
for f in $(grep -hE '^[a-z].*[ *]vrdma_[a-z0-9_]+\(' include/vrdma/vrdma.h include/vrdma/coll.h |
	   sed -E 's/.*[ *](vrdma_[a-z0-9_]+)\(.*/\1/' | sort -u); do
	n=$((n + 1))
	[ -f "docs/man/$f.3" ] || bad "$f: declared in include/vrdma, no docs/man/$f.3"
done
stale=$(grep -n -i -E 'not (yet )?implemented|implemented yet|a future |in the future|\b(issue|work item) [0-9]+|\bitem [0-9]+ of' \
	docs/*.md docs/man/* README.md 2>/dev/null)
if [ -n "$stale" ]; then
	bad "stale or internal wording:"
	echo "$stale" | sed 's/^/    /'
fi
n=$((n + 1))
echo "docs: $n checks, $fail failed"
[ "$fail" = 0 ]
