#!/bin/sh
# SPDX-License-Identifier: MIT
# make demo-host: two guests on this host move data through vrdmad.
# Starts a private vrdmad, runs vrdma-bw (RDMA WRITE, --verify, a size
# sweep to 4 MiB) between a server and a client guest, prints the perftest
# table, stops the daemon.  Exit status: the client's.
# Usage: demo-host.sh BUILD_DIR [ITERS]
set -u
b=${1:?usage: demo-host.sh BUILD_DIR [ITERS]}
iters=${2:-200}
T=${DEMO_TIMEOUT:-60}
. "$(dirname "$0")/../bench/bench-lib.sh"

for f in sbin/vrdmad sbin/vrdmactl bin/vrdma-bw; do
	[ -x "$b/$f" ] || vr_die "$b/$f missing (make first)"
done
vr_start_daemon "$b"
echo "== vrdmad on $VR_RUN; vrdma-bw write, $iters iterations per size"
rc=0
for size in 4096 65536 262144 1048576 4194304; do
	svc=demo-$size
	vr_server "$VR_RUN/server.log" timeout "$T" "$b/bin/vrdma-bw" -p "$svc" --timeout 20 ||
		vr_die "vrdma-bw server did not start"
	timeout "$T" "$b/bin/vrdma-bw" -p "$svc" --timeout 20 -s "$size" -n "$iters" \
		--verify --csv local >"$VR_RUN/client.csv" 2>"$VR_RUN/client.err"
	crc=$?
	vr_server_wait
	src=$?
	if [ $crc -ne 0 ]; then
		echo "client failed at $size bytes (exit $crc):" >&2
		cat "$VR_RUN/client.err" "$VR_RUN/server.log" >&2
		rc=$crc
		break
	fi
	[ $src -eq 0 ] || echo "server at $size bytes exited $src" >&2
	grep '^bw,' "$VR_RUN/client.csv" >>"$VR_RUN/rows.csv"
	grep -q 'verify: OK' "$VR_RUN/client.csv" || rc=1
done
echo "---------------------------------------------------------------------------------------"
echo " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
[ -f "$VR_RUN/rows.csv" ] && awk -F, '{ printf " %-7s    %-10s       %-7.2f            %-7.2f\t\t   %-7.6f\n", $3, $4, $5, $6, $7 }' "$VR_RUN/rows.csv"
echo "---------------------------------------------------------------------------------------"
[ $rc -eq 0 ] && echo "verify: OK (every size, every byte checked by the server)"
echo "== demo-host: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
