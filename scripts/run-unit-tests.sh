#!/bin/sh
# SPDX-License-Identifier: MIT
# Run every Check suite given, then the plain-host integration test.
# Usage: run-unit-tests.sh BUILD_DIR SUITE...
set -u
b=$1; shift
fail=0; pass=0
for t in "$@"; do
	echo "== $t"
	if CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60} VRDMA_BUILD="$b" "$t"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done
if [ -x tests/integration.sh ]; then
	echo "== tests/integration.sh"
	if tests/integration.sh "$b"; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
fi
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
