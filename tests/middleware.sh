#!/bin/bash
# SPDX-License-Identifier: MIT
# How middleware finds vrdma0 (docs/verbs.md): the sysfs view vrdma's
# libibverbs writes (checked against ibv_devinfo -v of the same device,
# made private, removed at exit, dead processes' trees swept), the
# /dev/infiniband node as the vrdma-guest package makes it
# (verbs/tmpfiles.conf through systemd-tmpfiles; as root), then Debian's
# unmodified UCX, libfabric and Open MPI through build/bin/vrdma-run
# against a private vrdmad: ucx_perftest's UCT and UCP tests between two
# guests, Open MPI jobs of 2 and 4 ranks (tests/mpi_check.c) over pml ucx
# and over pml cm with mtl ofi (libfabric's verbs;ofi_rxm), and Open MPI
# and MPICH jobs whose collectives libvrdma-mpi.so serves (vrdma-run
# --coll, tests/mpi_coll_check.c), each case that moves data proving it
# went through vrdma (vrdmactl stats' totals rise by at least the bytes
# moved).  One case per check: VRDMA-TEST mw-<name>
# PASS|FAIL|SKIP, then "N passed, N failed".  Cases in PENDING wait for a
# change named beside them: XFAIL instead of FAIL, XPASS once they work.
# Ports 19601+.  Usage: tests/middleware.sh BUILD_DIR [CASE...]
set -u
. "$(dirname "$0")/vprog-lib.sh"
vp_init middleware "${1:-build}" libibverbs.so.1 ibv_devinfo
shift || true
ONLY="$*"
TOP=$(cd "$(dirname "$0")/.." && pwd)
T=60					# seconds any one program may take
pass=0 fail=0 xfail=0 skip=0

# The trees go to a directory of this run: what a killed program leaves
# goes with it, and the sweep case sees only its own.
export TMPDIR=$RUN/tmp
unset XDG_RUNTIME_DIR
mkdir -m 700 "$TMPDIR"

# Environment a developer may have set would choose for the programs.
unset "${!UCX_@}" "${!OMPI_MCA_@}"

declare -A PENDING=(
	[ompi_openib]="Debian's openib has one CPC, udcm, and udcm_component_query skips a port whose link layer is Ethernet; vrdma's is (GIDs name peers), InfiniBand's would need LID addressing (AVs without GRH)"
)
declare -A MIN_BYTES=()		# case -> bytes it must move through vrdma
declare -A RESULT=()		# case -> 1 passed, 0 not
BASE=0				# moved() when the counted case started
DROPS=0				# stats' ud_rx_drop then

# The bytes vrdma moved so far: every guest's tx_bytes, those that left
# included (stats' totals; a READ counts as its initiator's).
moved() { total tx_bytes; }
# total KEY: stats' totals' KEY
total() {
	local m
	m=$(LD_PRELOAD= ctl -j stats | sed -n "s/.*\"totals\":{[^}]*\"$1\": *\([0-9]*\).*/\1/p")
	echo "${m:-0}"
}
# counted NAME BYTES: NAME's bytes count from here; report wants BYTES
counted() { MIN_BYTES[$1]=$2; BASE=$(moved); DROPS=$(total ud_rx_drop); }

report() {
	local name=$1 ok=$2 out=$3 d
	if [ -n "${MIN_BYTES[$name]:-}" ]; then
		d=$(($(moved) - BASE))
		echo "== through vrdma: $d bytes; the case wants ${MIN_BYTES[$name]} or more" >>"$out"
		[ "$d" -ge "${MIN_BYTES[$name]}" ] || ok=0
		# Datagrams dropped for want of a receive: UCX's UD endpoints
		# resend them, and a late copy is what UCX 1.13 trips on.
		[ "$ok" = 1 ] && echo "mw-$name: $d bytes through vrdma (${MIN_BYTES[$name]} wanted)," \
			"$(($(total ud_rx_drop) - DROPS)) datagrams dropped" \
			"$(grep -m 1 '^Final:' "$out" | tr -s ' ')"
	fi
	RESULT[$name]=$ok
	if [ "$ok" = 1 ]; then
		echo "VRDMA-TEST mw-$name PASS${PENDING[$name]:+ (XPASS)}"
		pass=$((pass + 1))
		return
	fi
	echo "---- $name output:"; grep "^== " "$out"; tail -n 25 "$out"
	if [ -n "${PENDING[$name]:-}" ]; then
		echo "VRDMA-TEST mw-$name XFAIL (pending: ${PENDING[$name]})"
		xfail=$((xfail + 1))
	else
		echo "VRDMA-TEST mw-$name FAIL"
		fail=$((fail + 1))
	fi
}

skipped() {
	echo "VRDMA-TEST mw-$1 SKIP ($2)"
	skip=$((skip + 1))
}

start_daemon || exit 1
echo "vrdmad up, pid $DPID"

# The program that shows the view: the root ibv_get_sysfs_path() gives
# before any list (as Open MPI asks), the listed device's names and
# paths, then every file of the tree as "file PATH=VALUE".
cat >"$RUN/sysfs_dump.c" <<'EOF_C'
#define _GNU_SOURCE
#include <ftw.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char *ibv_get_sysfs_path(void);
static size_t rootlen;

static int one(const char *p, const struct stat *st, int type, struct FTW *f)
{
	char buf[256];
	size_t n;
	FILE *fp;

	(void)st; (void)f;
	if (type != FTW_F)
		return 0;
	fp = fopen(p, "r");
	n = fp ? fread(buf, 1, sizeof(buf) - 1, fp) : 0;
	if (fp)
		fclose(fp);
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	printf("file %s=%s\n", p + rootlen + 1, buf);
	return 0;
}

int main(void)
{
	const char *root = ibv_get_sysfs_path();
	struct ibv_device **l;
	struct stat st;
	int n;

	if (stat(root, &st))
		return 1;
	printf("root %s\nmode %o uid %u\n", root, st.st_mode & 07777, st.st_uid);
	l = ibv_get_device_list(&n);
	if (!l || n != 1)
		return 1;
	printf("name %s\ndev_name %s\nibdev_path %s\ndev_path %s\n", l[0]->name,
	       l[0]->dev_name, l[0]->ibdev_path, l[0]->dev_path);
	rootlen = strlen(root);
	nftw(root, one, 8, FTW_PHYS);
	printf("root again %s\n", ibv_get_sysfs_path());
	ibv_free_device_list(l);
	return 0;
}
EOF_C
LD_PRELOAD= ${CC:-cc} -o "$RUN/sysfs_dump" "$RUN/sysfs_dump.c" -libverbs >"$RUN/cc.out" 2>&1 ||
	{ report build 0 "$RUN/cc.out"; exit 1; }
DUMP=$RUN/dump.out
timeout $T "$VR" "$RUN/sysfs_dump" >"$DUMP" 2>&1
DUMP_RC=$?
timeout $T "$VR" ibv_devinfo -v >"$RUN/devinfo.out" 2>&1
DEV_NAME=$(sed -n 's/^dev_name //p' "$DUMP")

d() { sed -n "s/^$1 //p" "$DUMP" | head -n 1; }
f() { sed -n "s|^file $1=||p" "$DUMP" | head -n 1; }
dv() { sed -n "s/^[[:space:]]*$1:[[:space:]]*//p" "$RUN/devinfo.out" | head -n 1; }
# expand an IPv6 address ibv_devinfo printed (fe80::1) as sysfs writes it
gid_full() {
	awk -v a="$1" 'BEGIN {
		n = split(a, h, "::"); nl = (h[1] == "") ? 0 : split(h[1], l, ":")
		nr = (n < 2 || h[2] == "") ? 0 : split(h[2], r, ":")
		for (i = 1; i <= nl; i++) g[++k] = l[i]
		for (i = 0; i < 8 - nl - nr; i++) g[++k] = "0"
		for (i = 1; i <= nr; i++) g[++k] = r[i]
		for (i = 1; i <= 8; i++) printf "%s%04s", (i > 1 ? ":" : ""), g[i]
	}' | tr ' ' 0
}

# same WHAT SYSFS_VALUE IBV_DEVINFO_VALUE: a mismatch is printed and counted
mism=0
same() {
	[ "$2" = "$3" ] && [ -n "$2" ] && return 0
	echo "sysfs view $1 '$2', ibv_devinfo -v '$3'"
	mism=$((mism + 1))
}

if want sysfs_tree; then
	out=$RUN/sysfs_tree.out ok=0
	{
		root=$(d root) ib=class/infiniband/$(d name)
		echo "== sysfs_dump exit $DUMP_RC"; cat "$DUMP"; echo "== ibv_devinfo -v"
		cat "$RUN/devinfo.out"; echo "== checks"
		same "root's place" "$(dirname "$root")" "$TMPDIR"
		same "root's mode and owner" "$(d mode)" "700 uid $(id -u)"
		same "root asked again" "$(d 'root again')" "$root"
		same ibdev_path "$(d ibdev_path)" "$root/$ib"
		same dev_path "$(d dev_path)" "$root/class/infiniband_verbs/$DEV_NAME"
		same "$ib" "$(d name)" "$(dv hca_id)"
		for k in node_guid sys_image_guid fw_ver board_id; do
			same "$k" "$(f "$ib/$k")" "$(dv "$k")"
		done
		same node_type "$(f "$ib/node_type")" "1: CA"
		same node_desc "$(f "$ib/node_desc")" "$VP_NODE $(d name)"
		same device/numa_node "$(f "$ib/device/numa_node")" -1
		same device/vendor "$(($(f "$ib/device/vendor")))" "$(($(dv vendor_id)))"
		same device/device "$(($(f "$ib/device/device")))" "$(dv vendor_part_id)"
		p=$ib/ports/1 s=$(f "$p/state") ps=$(f "$p/phys_state")
		same state "PORT_${s#*: } (${s%%:*})" "$(dv state)"
		same phys_state "${ps%%:*}" "$(dv phys_state | sed 's/.*(\(.*\))/\1/')"
		same link_layer "$(f "$p/link_layer")" "$(dv link_layer)"
		same lid "$(($(f "$p/lid")))" "$(dv port_lid)"
		same sm_lid "$(($(f "$p/sm_lid")))" "$(dv sm_lid)"
		same lmc "$(f "$p/lmc")" "$(($(dv port_lmc)))"
		same sm_sl "$(f "$p/sm_sl")" "$(dv sm_sl)"
		same cap_mask "$(($(f "$p/cap_mask")))" "$(($(dv port_cap_flags)))"
		w=$(dv active_width | sed 's/X.*//') sp=$(dv active_speed | sed 's/ Gbps.*//')
		same rate "$(f "$p/rate" | sed 's/ (\([0-9]*\)X.*/ \1X/')" \
			"$(awk -v w="$w" -v s="$sp" 'BEGIN { printf "%g Gb/sec %dX", w * s, w }')"
		g=$(dv 'GID\[ *0\]')
		same gids/0 "$(f "$p/gids/0")" "$(gid_full "${g%%,*}")"
		same gid_attrs/types/0 "$(f "$p/gid_attrs/types/0")" "${g#*, }"
		same pkeys/0 "$(f "$p/pkeys/0")" 0xffff
		same "uverbs abi_version" "$(f class/infiniband_verbs/abi_version)" 6
		same "$DEV_NAME/ibdev" "$(f "class/infiniband_verbs/$DEV_NAME/ibdev")" "$(d name)"
		same "tree at exit" "$([ -e "$root" ] && echo left || echo removed)" removed
		echo "$mism mismatches"
	} >"$out" 2>&1
	[ "$DUMP_RC" = 0 ] && [ "$mism" = 0 ] && ok=1
	report sysfs_tree $ok "$out"
fi

# A dead process's tree goes at the next process's start, once a minute
# old and unlocked; a locked one (a live process's), a fresh one, another
# user's, and a symlink (with what it points to) stay.
if want sysfs_sweep; then
	out=$RUN/sysfs_sweep.out ok=1 lock='' stay="held fresh link"
	old=$(date -d '-2 min' '+%Y%m%d%H%M.%S')
	[ "$(id -u)" = 0 ] && stay="$stay other"	# (only root can plant one)
	for n in dead $stay; do
		[ "$n" = link ] || mkdir -p "$TMPDIR/vrdma-sysfs.$n/class"
	done
	mkdir "$RUN/victim" && touch "$RUN/victim/keep"
	ln -s "$RUN/victim" "$TMPDIR/vrdma-sysfs.link"
	[ "$(id -u)" = 0 ] && chown -R nobody "$TMPDIR/vrdma-sysfs.other"
	for n in dead $stay; do
		[ "$n" = fresh ] || touch -h -t "$old" "$TMPDIR/vrdma-sysfs.$n"
	done
	flock -s "$TMPDIR/vrdma-sysfs.held" sleep $T & lock=$!
	for _ in $(seq 50); do
		flock -n -x "$TMPDIR/vrdma-sysfs.held" true || break
		sleep 0.1
	done
	timeout $T "$VR" "$RUN/sysfs_dump" >"$out" 2>&1 || ok=0
	kill "$lock" 2>/dev/null; wait "$lock" 2>/dev/null
	{
		echo "== left in TMPDIR:"; ls -la "$TMPDIR"
		[ ! -e "$TMPDIR/vrdma-sysfs.dead" ] || { echo "the dead tree stayed"; ok=0; }
		for n in $stay; do
			[ -e "$TMPDIR/vrdma-sysfs.$n" ] || { echo "$n was removed"; ok=0; }
		done
		[ -e "$RUN/victim/keep" ] || { echo "a symlink's target was emptied"; ok=0; }
		n=$(find "$TMPDIR" -maxdepth 1 -name 'vrdma-sysfs.*' | wc -l)
		[ "$n" = "$(wc -w <<<"$stay")" ] || { echo "$n trees: the run's own stayed"; ok=0; }
	} >>"$out" 2>&1
	report sysfs_sweep $ok "$out"
fi

# The /dev node, made as the package makes it; root only (mknod).
NODE=/dev/infiniband/$DEV_NAME
if want devnode; then
	out=$RUN/devnode.out ok=0
	if [ "$(id -u)" = 0 ] && command -v systemd-tmpfiles >/dev/null; then
		systemd-tmpfiles --create "$TOP/verbs/tmpfiles.conf" >"$out" 2>&1
	fi
	if [ -e "$NODE" ] || [ -L "$NODE" ]; then
		st=$(stat -c '%F %t:%T %a %U' "$NODE")
		echo "$NODE: $st" >>"$out"
		[ "$st" = "character special file 1:3 666 root" ] && ok=1
		report devnode $ok "$out"
	else
		skipped devnode "no $NODE: run as root, or install the vrdma-guest package"
	fi
fi

# UCX 1.13: vrdma0 listed with rc_verbs and ud_verbs (through the /dev
# node), then ucx_perftest's server and client, two guests of this
# vrdmad.  Each case's bytes are counted through vrdma; a case wants its
# measured rounds' bytes (-n x -s, both ways for a latency test; the 100
# warm-up rounds, -w, and UCX's own traffic come on top).
PORT=19600
ucx() {
	local name=$1; shift
	want "$name" || return 0
	if ! command -v ucx_perftest >/dev/null; then skipped "$name" "ucx-utils missing"
	elif [ ! -e "$NODE" ]; then skipped "$name" "no $NODE"
	else "$@"; fi
}
ucx_devices() {
	local out=$RUN/ucx_devices.out ok=0 tl
	if timeout $T "$VR" ucx_info -d >"$out" 2>&1; then
		ok=1
		for tl in rc_verbs ud_verbs; do
			grep -A 3 "Transport: $tl" "$out" | grep -q 'Device: vrdma0:1' || ok=0
		done
	fi
	report ucx_devices $ok "$out"
}
# ucx_perf NAME BYTES SERVER_PREFIX PERFTEST_ARGS...
ucx_perf() {
	local name=$1 min=$2 pre=$3; shift 3
	counted "$name" "$min"
	vp_pair "$name" "^Final: +1000 " "$pre ucx_perftest $* -n 1000 -w 100 -p @P@" \
		"ucx_perftest $* -n 1000 -w 100 -p @P@ 127.0.0.1"
}
KB64=$((1000 * 65536))
ucx ucx_devices ucx_devices
# UCT: one transport, named
ucx ucx_put_bw ucx_perf ucx_put_bw $KB64 "" -t put_bw -D zcopy -x rc_verbs -d vrdma0:1 -s 65536
# UCP on vrdma's transports: rc_verbs for the data, wired up through
# ud_verbs (self: a process's messages to itself)
export UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=vrdma0:1
ucx ucx_tag_lat ucx_perf ucx_tag_lat $((2 * 1000 * 8)) "" -t tag_lat -s 8
ucx ucx_tag_bw ucx_perf ucx_tag_bw $KB64 "" -t tag_bw -s 65536
ucx ucx_ucp_put_bw ucx_perf ucx_ucp_put_bw $KB64 "" -t ucp_put_bw -s 65536
ucx ucx_ucp_get ucx_perf ucx_ucp_get $KB64 "" -t ucp_get -s 65536
unset UCX_TLS

# UCP with UCX's default transport list (no UCX_TLS).  Between two
# processes of one host UCX takes its shared memory (posix, sysv, cma)
# before any network, and between VMs there is none to take: the server
# gets an IPC namespace of its own (unshare -i), where UCX's shared
# memory does not reach, as between guests of different domUs.
# UCX_NET_DEVICES=vrdma0:1 leaves TCP out: what these prove is that the
# default list, with nothing but vrdma0 to reach the peer by, runs every
# test over it (rc_verbs and ud_verbs, picked by UCX), all bytes
# counted.  What one host cannot show: that between guests of different
# nodes, with a NIC beside vrdma0 and no UCX_NET_DEVICES, the default
# list picks vrdma0 and not TCP; a rig of two nodes must.  (Here, without
# UCX_NET_DEVICES, UCX 1.13 took rc_verbs over TCP on lo and eth0, but
# how it weighs them depends on the NIC's speed: no case of this file.)
# UCX_ALLOC_PRIO is left to vrdma-run: UCX's own default hands
# ucx_perftest's buffers SysV shared memory, which vrdma cannot register,
# so vrdma-run asks for private memory unless the user chose.
NS=
if [ "$(id -u)" = 0 ] && unshare -i true 2>/dev/null; then NS="unshare -i"
elif unshare -r -i true 2>/dev/null; then NS="unshare -r -i"; fi
dflt() {
	if [ -z "$NS" ]; then skipped "$1" "no IPC namespace: unshare -i needs root or user namespaces"
	else ucx "$@"; fi
}
unset UCX_ALLOC_PRIO
dflt ucx_dflt_tag_lat ucx_perf ucx_dflt_tag_lat $((2 * 1000 * 8)) "$NS" -t tag_lat -s 8
dflt ucx_dflt_tag_bw ucx_perf ucx_dflt_tag_bw $KB64 "$NS" -t tag_bw -s 65536
dflt ucx_dflt_ucp_put_bw ucx_perf ucx_dflt_ucp_put_bw $KB64 "$NS" -t ucp_put_bw -s 65536
dflt ucx_dflt_ucp_get ucx_perf ucx_dflt_ucp_get $KB64 "$NS" -t ucp_get -s 65536
unset UCX_NET_DEVICES

# libfabric's verbs provider (no sysfs: rdma_cm and verbs calls).
if want fi_info; then
	if command -v fi_info >/dev/null; then
		out=$RUN/fi_info.out ok=0
		timeout $T "$VR" fi_info -p verbs >"$out" 2>&1 && grep -q 'domain: vrdma0$' "$out" && ok=1
		report fi_info $ok "$out"
	else
		skipped fi_info "libfabric-bin missing"
	fi
fi

# Open MPI 4.1: tests/mpi_check.c, plain MPI that checks every byte it
# receives and says how many had to cross between ranks; each rank a
# guest through vrdma-run.
# pml ucx: Debian's openmpi-mca-params.conf has "pml = ^ucx", so it is
# asked for by name, and by name it is taken whatever its priority (its
# device check reads /sys/class/infiniband/<dev>/device/driver, a fixed
# path, and finds vrdma0 "transports only": priority 19, below ob1's 20;
# where it must win on priority, --mca pml_ucx_devices any: docs/verbs.md).
# pml cm with mtl ofi: Debian's file has "mtl = ^ofi" too, so it is asked
# for by name, and its provider with it: verbs;ofi_rxm, ofi_rxm's RDM
# endpoints over libfabric's verbs provider (RC QPs connected through
# vrdma's librdmacm; unnamed, the MTL took the same one here, its default
# exclusions being shm, sockets, tcp, udp, rstream and usnic).  Its device
# check is fi_getinfo: no sysfs, no /dev node.  The MTL sets no FI_UNIVERSE_SIZE, so each
# rank's ofi_rxm CQ is the default 262144 CQEs (tests/fabric.sh).
# ob1 with openib,self,vader: openib takes vrdma0 once the sysfs view is
# there (ompi_device: it names vrdma0, used or refused); ompi_openib
# wants the job's bytes through vrdma, not vader's shared memory.
# UCX_UD_ABA=1: this UCX (ucx_info -v) is older than 1.20 (see ompi_run)
UCX_UD_ABA=$(LD_PRELOAD= ucx_info -v 2>/dev/null |
	awk '/^# Version /{ split($3, v, "."); print (v[1] < 1 || (v[1] == 1 && v[2] < 20)) ? 1 : 0 }')
MPIRUN=(--oversubscribe --mca orte_base_help_aggregate 0 -x VRDMA_RUN_DIR)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
# ompi_run NAME RANKS MPIRUN_ARGS...: mpi_check's job, counted through vrdma
ompi_run() {
	local name=$1 np=$2 out=$RUN/$1.out ok=0 rc min try asan=(); shift 2
	# An ASan build's runtime goes to the ranks only: mpirun's own
	# show_help forwarding reads a freed buffer (orte_rml_send_callback)
	[ -n "${LD_PRELOAD:-}" ] && asan=(-x LD_PRELOAD="$LD_PRELOAD")
	for try in 1 2; do
		BASE=$(moved) DROPS=$(total ud_rx_drop)
		LD_PRELOAD= timeout $T mpirun "${MPIRUN[@]}" "${asan[@]}" -np "$np" "$@" "$VR" \
			"$RUN/mpi_check" >"$out.$try" 2>&1
		rc=$?
		cat "$out.$try" >>"$out"
		echo "== mpirun -np $np $* (exit $rc)" >>"$out"
		# UCX before 1.20 reuses a UD endpoint id while its peer may
		# still ACK the old one (openucx/ucx#8743; fixed by #11092 and
		# #11800, endpoint ids with a generation): a late ACK or
		# wireup message aborts a rank in uct_ud_ep_process_rx.  A
		# loaded host delays the peer's process, not the datagram
		# (vrdma delivers or drops it when the sender's ring is read,
		# and these jobs drop none: the report counts them).  Such a
		# job runs once more, and says so; a fixed UCX gets no rerun.
		[ "$rc" != 0 ] && [ $try = 1 ] && [ "$UCX_UD_ABA" = 1 ] &&
			grep -q 'uct_ud_ep_process_rx' "$out.$try" || break
		echo "mw-$name: a rank died in UCX's UD receive path" \
			"($(grep -m 1 -o 'Assertion.*' "$out.$try")); once more"
	done
	min=$(sed -n 's/^mpi_check: .*, all correct, \([0-9]*\) bytes between ranks$/\1/p' \
		"$out.$try")
	[ "$rc" = 0 ] && [ -n "$min" ] && ok=1
	MIN_BYTES[$name]=${min:-1}
	report "$name" $ok "$out"
}
if want ompi_ucx_2 || want ompi_ucx_4 || want ompi_ofi_2 || want ompi_ofi_4 ||
	want ompi_openib || want ompi_device; then
	if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
		skipped ompi "mpicc or mpirun missing (libopenmpi-dev, openmpi-bin)"
	elif ! LD_PRELOAD= mpicc -O2 -Wall -o "$RUN/mpi_check" "$TOP/tests/mpi_check.c" \
		>"$RUN/mpicc.out" 2>&1; then
		report mpicc 0 "$RUN/mpicc.out"
	else
		for np in 2 4; do
			want ompi_ucx_$np || continue
			if [ -e "$NODE" ]; then
				ompi_run ompi_ucx_$np $np --mca pml ucx -x UCX_TLS=rc_verbs,ud_verbs,self \
					-x UCX_NET_DEVICES=vrdma0:1
			else
				skipped ompi_ucx_$np "no $NODE"
			fi
		done
		for np in 2 4; do
			want ompi_ofi_$np || continue
			ompi_run ompi_ofi_$np $np --mca pml cm --mca mtl ofi \
				--mca mtl_ofi_provider_include "verbs;ofi_rxm"
		done
		if want ompi_openib || want ompi_device; then
			ompi_run ompi_openib 2 --mca pml ob1 --mca btl openib,self,vader \
				--mca btl_openib_warn_no_device_params_found 0
			ok=${RESULT[ompi_openib]}
			grep -Eq 'Local device: +vrdma0' "$RUN/ompi_openib.out" && ok=1
			want ompi_device && report ompi_device $ok "$RUN/ompi_openib.out"
		fi
	fi
fi

# libvrdma-mpi.so through vrdma-run --coll: tests/mpi_coll_check.c, plain
# MPI that checks every result, 4 ranks (each a guest), three times:
# "on" (vrdma as vrdmad decides: offload where it can), "guest" (the team
# in the guests, VRDMA_COLL=guest) and "off" (MPI's own collectives).
# MPI's own traffic keeps off vrdma (Open MPI: ob1 over self,vader; MPICH:
# UCX's shared memory), so what vrdmad counts is the wrapper's: a run in
# the guests wants the program's lower bound of bytes between ranks, the
# off run none at all.  The digest of the exact results must be the same
# in all three; that of the random floats in the two vrdma runs (one
# reduction order, docs/collectives.md), while MPI adds in an order of its
# own: its float digest is shown, not compared.
# coll_run NAME MODE LAUNCHER...: one run, output in $RUN/NAME.MODE
coll_run() {
	local name=$1 mode=$2 o=$RUN/$1.$2 base rc; shift 2
	base=$(moved)
	VRDMA_COLL=$mode VRDMA_COLL_VERBOSE=1 LD_PRELOAD= timeout $T "$@" >"$o" 2>&1
	rc=$?
	echo "== $mode: exit $rc, $(($(moved) - base)) bytes through vrdma: $*" >>"$o"
}
coll_field() { sed -n "s/^mpi_coll_check: $2/\1/p" "$RUN/$1" | head -n 1; }
# coll_case NAME LAUNCHER...: the three runs and their checks
coll_case() {
	local name=$1 out=$RUN/$1.out ok=1 m d e f t min how; shift
	for m in on guest off; do coll_run "$name" $m "$@"; done
	{
		for m in on guest off; do
			cat "$RUN/$name.$m"
			d=$(sed -n 's/^== .*, \([0-9]*\) bytes through vrdma.*/\1/p' "$RUN/$name.$m")
			e=$(coll_field "$name.$m" 'digest exact \(.*\)')
			f=$(coll_field "$name.$m" 'digest float \(.*\)')
			min=$(coll_field "$name.$m" '.*, all correct, \([0-9]*\) bytes between ranks$')
			t=$(grep -m 1 '^vrdma-mpi: MPI_COMM_WORLD: team of 4 ranks' "$RUN/$name.$m")
			echo "== $m: exact $e, float $f, $d bytes, wanted ${min:-?}; ${t:-no team}"
			[ -n "$min" ] && [ -n "$e" ] || { echo "== $m: not all correct"; ok=0; }
			[ "$e" = "$(coll_field "$name.off" 'digest exact \(.*\)')" ] ||
				{ echo "== $m: exact digest differs from MPI's own"; ok=0; }
			case $m in
			off)	[ "${d:-1}" = 0 ] && [ -z "$t" ] ||
					{ echo "== off: vrdma was used"; ok=0; } ;;
			*)	[ -n "$t" ] || { echo "== $m: no team on MPI_COMM_WORLD"; ok=0; }
				[ $m = on ] && how=offloaded &&
					[[ $t == *"in the guests"* ]] && how="in the guests"
				# in the guests every byte crosses a vrdma QP; an
				# offload's stay in dom0, its team line counts them
				if [ "$m" = guest ] || [[ $t == *"in the guests"* ]]; then
					[ "${d:-0}" -ge "${min:-1}" ] ||
						{ echo "== $m: too few bytes"; ok=0; }
				else
					[[ $t =~ [1-9][0-9]*\ operations ]] ||
						{ echo "== $m: no operation offloaded"; ok=0; }
				fi ;;
			esac
		done
		[[ $(grep -m 1 '^vrdma-mpi: MPI_COMM_WORLD' "$RUN/$name.guest") == *"in the guests"* ]] ||
			{ echo "== guest: the team was not in the guests"; ok=0; }
		f=$(coll_field "$name.on" 'digest float \(.*\)')
		[ -n "$f" ] && [ "$f" = "$(coll_field "$name.guest" 'digest float \(.*\)')" ] ||
			{ echo "== float digests differ between on and guest"; ok=0; }
	} >"$out" 2>&1
	[ "$ok" = 1 ] && echo "mw-$name: bytes through vrdma" "$(sed -n \
		's/^== \([a-z]*\): exact .*, \([0-9]*\) bytes, wanted.*/\1 \2/p' "$out" |
		paste -sd , | sed 's/,/, /g'); digest exact $e (3 runs), float $f (on, guest)," \
		"$(coll_field "$name.off" 'digest float \(.*\)') (off); on ran $how"
	report "$name" $ok "$out"
}
CC_OUT=$RUN/mpi_coll_check.cc
if want ompi_coll_4; then
	asan=()
	[ -n "${LD_PRELOAD:-}" ] && asan=(-x LD_PRELOAD="$LD_PRELOAD")
	if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
		skipped ompi_coll_4 "mpicc or mpirun missing (libopenmpi-dev, openmpi-bin)"
	elif [ ! -e "$B/lib/vrdma/libvrdma-mpi.so" ]; then
		skipped ompi_coll_4 "no $B/lib/vrdma/libvrdma-mpi.so"
	elif ! LD_PRELOAD= mpicc -O2 -Wall -o "$RUN/mpi_coll_check" \
		"$TOP/tests/mpi_coll_check.c" >"$CC_OUT" 2>&1; then
		report ompi_coll_4 0 "$CC_OUT"
	else
		coll_case ompi_coll_4 mpirun "${MPIRUN[@]}" "${asan[@]}" -x VRDMA_COLL \
			-x VRDMA_COLL_VERBOSE -np 4 --mca pml ob1 --mca btl self,vader \
			"$VR" --coll "$RUN/mpi_coll_check"
	fi
fi
# MPICH 4.0.2's own MPI_Reduce with MPI_IN_PLACE at a root other than 0
# reads from MPI_IN_PLACE in its device collectives (a crash): MPICH's
# portable ones (MPIR_CVAR_DEVICE_COLLECTIVES=none) serve the off run.
if want mpich_coll_4; then
	if ! command -v mpicc.mpich >/dev/null || ! command -v mpirun.mpich >/dev/null; then
		skipped mpich_coll_4 "mpicc.mpich or mpirun.mpich missing (mpich, libmpich-dev)"
	elif [ ! -e "$B/lib/vrdma/mpich/libvrdma-mpi.so" ]; then
		skipped mpich_coll_4 "no $B/lib/vrdma/mpich/libvrdma-mpi.so"
	elif ! LD_PRELOAD= mpicc.mpich -O2 -Wall -o "$RUN/mpich_coll_check" \
		"$TOP/tests/mpi_coll_check.c" >"$CC_OUT" 2>&1; then
		report mpich_coll_4 0 "$CC_OUT"
	else
		coll_case mpich_coll_4 mpirun.mpich -np 4 env LD_PRELOAD="${LD_PRELOAD:-}" \
			UCX_TLS=self,sm MPIR_CVAR_DEVICE_COLLECTIVES=none \
			"$VR" --coll "$RUN/mpich_coll_check"
	fi
fi

vp_leaks

echo "$pass passed, $fail failed${xfail:+, $xfail pending (XFAIL)}, $skip skipped"
[ "$fail" -eq 0 ]
