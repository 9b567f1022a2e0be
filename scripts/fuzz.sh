#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the libFuzzer harnesses (tests/fuzz.mk) and run each for FUZZ_TIME
# seconds on its committed corpus (tests/fuzz/corpus/<name>).  New inputs
# go to a scratch corpus (DIR/corpus/<name>); FUZZ_MERGE=1 merges the ones
# that add coverage into the committed corpus.  Crashes are saved as
# DIR/artifacts/<name>-*.  Exit 1 if any harness failed; 0, with a note,
# when clang's libFuzzer is not installed.
# Usage: fuzz.sh DIR NAME...   (env FUZZ_CC, FUZZ_TIME, FUZZ_MERGE, MAKE)
set -u
dir=$1; shift
cc=${FUZZ_CC:-clang}
time=${FUZZ_TIME:-60}
merge=${FUZZ_MERGE:-0}

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\n%s\n' \
	'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return !d + !n; }' \
	>"$probe/p.c"
if ! command -v "$cc" >/dev/null 2>&1 ||
   ! "$cc" -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" >/dev/null 2>&1; then
	echo "fuzz: skipped: no $cc with libFuzzer (Debian: clang libclang-rt-dev;" \
	     "scripts/install-deps.sh installs them)"
	exit 0
fi

${MAKE:-make} --no-print-directory fuzz-build || exit 1

fail=0
table=""
for n in "$@"; do
	bin=$dir/fuzz_$n
	seeds=tests/fuzz/corpus/$n
	scratch=$dir/corpus/$n
	log=$dir/log/$n.log
	mkdir -p "$scratch" "$dir/artifacts" "$dir/log" "$seeds"
	echo "== fuzz_$n: ${time}s"
	# The scratch corpus first: libFuzzer writes new inputs there only.
	"$bin" -max_total_time="$time" -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$dir/artifacts/$n-" "$scratch" "$seeds" >"$log" 2>&1
	rc=$?
	done_line=$(grep -a 'DONE' "$log" | tail -n 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(echo "$done_line" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$done_line" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	if [ "$rc" -ne 0 ]; then
		fail=1
		status="FAIL (exit $rc, $log)"
		grep -a -m 3 -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log"
	else
		status=ok
	fi
	table="$table$(printf '%-16s %12s %7s %7s  %s' "fuzz_$n" "${execs:-?}" \
		"${cov:-?}" "${ft:-?}" "$status")
"
	if [ "$merge" = 1 ] && [ "$rc" -eq 0 ]; then
		"$bin" -merge=1 "$seeds" "$scratch" >>"$log" 2>&1 || fail=1
	fi
done
printf '\n%-16s %12s %7s %7s  %s\n' harness execs cov ft result
printf '%s' "$table"
exit "$fail"
