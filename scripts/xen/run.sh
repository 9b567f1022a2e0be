#!/bin/bash
# SPDX-License-Identifier: MIT
# Boot the rig once: Xen + PV dom0 under QEMU TCG, dom0's /init creates the
# two domUs and runs one suite (tests/xen/suite-SUITE.sh).  Serial output
# goes to a log, each line stamped with seconds since QEMU started.  Boots
# are serialised (flock /tmp/vrdma-qemu.lock: two TCG guests on 2 cores only
# slow each other down) and hard-limited (TIMEOUT).  The result is read from
# the console: "VRDMA-TEST <name> PASS|FAIL|SKIP" and the final
# "VRDMA-RIG-DONE suite=S pass=P fail=F".
# Exit 0 iff the rig finished, nothing failed and something passed.
# Usage: run.sh SUITE IMAGE_DIR       (check | demo | bench | smoke | prio | live)
# env: TIMEOUT (s, default 280), CPU (default qemu64: no SMAP), MEM, SMP,
#      LOG (default IMAGE_DIR/boot-SUITE.log), XEN_EXTRA, DOM0_EXTRA
#      (e.g. vrdma.diag: always print the diagnostics), QEMU_WRAP
set -u
. "$(dirname "$0")/lib.sh"
SUITE=${1:?usage: run.sh SUITE IMAGE_DIR}
OUT=$(cd "${2:?usage: run.sh SUITE IMAGE_DIR}" && pwd)
TIMEOUT=${TIMEOUT:-280}
CPU=${CPU:-qemu64}
LOG=${LOG:-$OUT/boot-$SUITE.log}
for f in xen vmlinuz dom0.cpio; do
	[ -s "$OUT/$f" ] || xr_die "$OUT/$f missing: run scripts/xen/build.sh"
done
XEN_CMDLINE="console=com1 com1=115200,8n1 dom0_mem=1024M,max:1024M dom0_max_vcpus=2 loglvl=all guest_loglvl=all bootscrub=0 ${XEN_EXTRA:-}"
DOM0_CMDLINE="console=hvc0 earlyprintk=xen loglevel=4 vrdma.suite=$SUITE ${DOM0_EXTRA:-}"

xr_lock "$TIMEOUT" || xr_die "no QEMU lock"
xr_log "booting suite '$SUITE' (log: $LOG, limit ${TIMEOUT}s)"
start=$SECONDS
# timeout(1) is the hard limit; -no-reboot turns dom0's poweroff into an exit.
# shellcheck disable=SC2086
${QEMU_WRAP:-} timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -accel tcg -machine pc \
	-cpu "$CPU" -m "${MEM:-2048}" -smp "${SMP:-2}" \
	-display none -serial stdio -monitor none -no-reboot -nodefaults \
	-kernel "$OUT/xen" -append "$XEN_CMDLINE" \
	-initrd "$OUT/vmlinuz $DOM0_CMDLINE,$OUT/dom0.cpio" </dev/null 2>&1 | xr_stamp >"$LOG"
qrc=${PIPESTATUS[0]}
xr_unlock
secs=$((SECONDS - start))

grep -E 'VRDMA-(TEST|RIG-DONE|DOMUS-UP|XEN-UP)' "$LOG"
done_line=$(grep -m1 'VRDMA-RIG-DONE' "$LOG")
npass=$(grep -c 'VRDMA-TEST .* PASS' "$LOG")
nfail=$(grep -c 'VRDMA-TEST .* FAIL' "$LOG")
ok=1
if [ -z "$done_line" ]; then
	ok=0
	[ "$qrc" = 124 ] && xr_log "TIMEOUT: no result within ${TIMEOUT}s" ||
		xr_log "QEMU ended (status $qrc) before the suite finished"
	# Where it stopped: the end of the console, and anything fatal.
	grep -nE 'Panic|FATAL|Kernel panic|BUG:|Oops|Unhandled' "$LOG" | head -20
	echo "----- last 40 console lines"
	tail -n 40 "$LOG"
fi
[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ] || ok=0
if [ $ok = 0 ] && [ -n "$done_line" ]; then
	sed -n '/VRDMA-DIAG-BEGIN/,/VRDMA-DIAG-END/p' "$LOG"
fi
# Again at the end: CI shows only the tail of what a run prints.
[ "$nfail" -eq 0 ] || xr_fail_tail "$LOG"
xr_log "suite '$SUITE': $npass passed, $nfail failed, ${secs}s in QEMU ($([ $ok = 1 ] && echo PASS || echo FAIL)); log: $LOG"
[ $ok = 1 ]
