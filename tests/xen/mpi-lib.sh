# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Open MPI over UCX between domUs (sourced by the suites in dom0 after
# rig-lib.sh): Debian's unmodified mpirun in one domU starts the ranks on
# the others through vrdma-rig-rsh (tests/xen/mpi-rsh.sh), each rank is
# tests/mpi_check.c through vrdma-run, and UCX's rc_verbs and ud_verbs on
# vrdma0 carry the ranks' bytes (pml ucx, asked for by name: Debian's
# openmpi-mca-params.conf says "pml = ^ucx").  Bytes are proven to have
# gone through vrdma by the caller: vrdmactl stats' totals (mpi_moved)
# before and after, against what mpi_check says crossed between ranks.
# Then MPI's collectives through libvrdma-mpi.so between the same domUs:
# offloaded to dom0, in the guests and MPI's own (mpi_coll, below).

# mpi_moved: the bytes this dom0's vrdmad moved so far (every guest's
# tx_bytes, guests that left included).
mpi_moved() {
	_mm=$(ctl -j stats | sed -n 's/.*"totals":{[^}]*"tx_bytes": *\([0-9]*\).*/\1/p')
	echo "${_mm:-0}"
}

# mpi_job DOM SECONDS HOSTS NP: mpirun in DOM with NP ranks on HOSTS
# (mpirun's --host: guest-network addresses, DOM's own first), at most
# SECONDS a try.  0 iff every rank exited 0 and mpi_check found every byte
# right; MPI_BYTES what it says crossed between ranks, MPI_OUT the tail of
# the output.  UCX before 1.20 (the rig's is the host's Debian 12 UCX
# 1.13) reuses a UD endpoint id while its peer may still ACK the old one
# (openucx/ucx#8743; fixed by #11092 and #11800): a late ACK or wireup
# message aborts a rank in uct_ud_ep_process_rx.  A loaded rig delays the
# peer's process, not the datagram.  Such a job runs once more, and says
# so (tests/middleware.sh does it only for a UCX older than 1.20).
mpi_job() {
	MPI_BYTES=
	for _mt in 1 2; do
		_mn=$(du_run $1 "timeout $2 mpirun --allow-run-as-root --mca plm_rsh_agent vrdma-rig-rsh \
--host $3 -np $4 --mca pml ucx --mca orte_base_help_aggregate 0 \
-x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=vrdma0:1 vrdma-run mpi_check 2>&1")
		du_wait $1 $_mn $(($2 + 10))
		_mrc=$DU_RC
		MPI_OUT=$(du_out $1 $_mn)
		[ "$_mrc" != 0 ] && [ $_mt = 1 ] && echo "$MPI_OUT" | grep -q uct_ud_ep_process_rx ||
			break
		echo "mpirun in dom$1: a rank died in UCX's UD receive path" \
			"($(echo "$MPI_OUT" | grep -m 1 -o 'Assertion.*')); once more"
	done
	MPI_BYTES=$(echo "$MPI_OUT" |
		sed -n 's/^mpi_check: .*, all correct, \([0-9]*\) bytes between ranks$/\1/p')
	echo "mpirun -np $4 --host $3 in dom$1: exit $_mrc; $(echo "$MPI_OUT" | grep '^mpi_check:')"
	[ "$_mrc" = 0 ] && [ -n "$MPI_BYTES" ] && return 0
	echo "$MPI_OUT" | tail -n 25
	return 1
}

# mpi_pair DOM HOSTS: the 2-rank job (checks mpi-ucx-2, and that vrdmad
# moved at least the bytes mpi_check says crossed between the ranks).
mpi_pair() {
	_m0=$(mpi_moved)
	if mpi_job $1 150 "$2" 2; then
		vt_pass mpi-ucx-2
		_md=$(($(mpi_moved) - _m0))
		echo "mpi-ucx-2: $_md bytes through vrdma, $MPI_BYTES between the ranks"
		vt_check mpi-ucx-2-through-vrdma [ "$_md" -ge "$MPI_BYTES" ]
	else
		vt_fail mpi-ucx-2
	fi
}

# ---- MPI's collectives on vrdma teams (libvrdma-mpi.so) ----
# tests/mpi_coll_check.c, plain MPI, through vrdma-run --coll: rank 0 in
# DOM, rank 1 in the other domU (a rank needs a vrdma device of its own,
# and each domU has device 0), three times as tests/middleware.sh runs it:
# VRDMA_COLL=on (one vrdmad serves both domUs, so the team is a one-node
# team and dom0 runs it), guest (the ranks run it over vrdma QPs) and off
# (MPI's own).  MPI's own traffic keeps off vrdma (pml ob1, btl self,tcp
# over the guest network), so what vrdmad counts is the wrapper's.
# VRDMA_COLL_MPI names the wrapper's build: vrdma-run would ask ldd,
# which busybox lacks.  Vectors of at most 512 KiB (MC_MAX): a domU has
# 256 MB and an emulated CPU, and 512 KiB still takes the offload two
# staging pieces.
#
# A run's limit: the wrapper gives up any vrdma wait of its own after
# VRDMA_COLL_TIMEOUT_MS (60 s) and says so; the launch and MPI's own calls
# have no limit of their own.  So the limit tells a run that ends, passing
# or failing by itself, from one that hangs.  With 1 MiB vectors a quiet
# rig took 26 s (on), 28 s (guest) and 39 s (off, MPI's own over TCP);
# beside one busy loop 41-71, 56-100 and 64 s, and once the off run no
# line at all in 251 s.  Half the vectors halve the bytes.  The program's
# progress lines and the TCP segments the domU retransmitted tell the next
# such run's part and whether the guest network collapsed.  A run that
# hangs leaves the later ones nothing to tell (its ranks may still hold
# the devices) and the suite's own limit too little: they are not started.
MC_T=240
MC_MAX=524288
# Ranks on one node (the Xen rig) or on two (the Xen cluster sets
# MC_NODES=2 and the hooks below: the other node's vrdmad counts too).
MC_NODES=${MC_NODES:-1}

# mc_peer_before MODE / mc_peer_after MODE: around each run; after it,
# MC_PEER_MOVED and MC_PEER_OPS are what the other node's vrdmad saw.
command -v mc_peer_before >/dev/null 2>&1 || mc_peer_before() { :; }
command -v mc_peer_after >/dev/null 2>&1 || mc_peer_after() { MC_PEER_MOVED=0 MC_PEER_OPS=0; }

# mc_retrans DOM: TCP segments DOM's kernel retransmitted so far
# (/proc/net/snmp's second Tcp: line, RetransSegs)
mc_retrans() {
	_mr=$(du_run $1 "grep '^Tcp:' /proc/net/snmp | tail -n 1 | cut -d' ' -f13")
	du_wait $1 $_mr 20 && du_out $1 $_mr | grep -x '[0-9][0-9]*' || echo 0
}

# mpi_coll_ops: the collective operations this dom0's teams ran so far
# (vrdmactl teams' node total; "list" holds the live teams' own).
mpi_coll_ops() {
	_mo=$(ctl -j teams | sed -n 's/^[^[]*"ops": *\([0-9]*\).*/\1/p')
	echo "${_mo:-0}"
}

# mc_field SED-RE: \1 of MC_OUT's first line matching ^SED-RE$
mc_field() {
	echo "$MC_OUT" | sed -n "s/^$1\$/\\1/p" | head -n 1
}

# mpi_coll_run DOM HOSTS MODE: one run with VRDMA_COLL=MODE.  MC_RC its
# status; MC_HUNG 1 if it ran into its limit (seen by the clock: busybox's
# timeout ends mpirun with SIGTERM and leaves the status to mpirun); MC_OUT
# the tail of its output, MC_MIN the bytes it says crossed between the
# ranks (empty unless all correct), MC_EXACT and MC_FLOAT its digests,
# MC_TEAM MPI_COMM_WORLD's team line (VRDMA_COLL_VERBOSE); what vrdmad saw
# meanwhile: MC_MOVED bytes through vrdma, MC_OPS operations its teams ran.
mpi_coll_run() {
	_cm0=$(mpi_moved)
	_co0=$(mpi_coll_ops)
	_cr0=$(mc_retrans $1)
	mc_peer_before $3
	_ct0=$(date +%s)
	_cn=$(du_run $1 "VRDMA_COLL=$3 VRDMA_COLL_VERBOSE=1 VRDMA_COLL_MPI=openmpi \
MPI_COLL_CHECK_MAX_BYTES=$MC_MAX timeout $MC_T mpirun --allow-run-as-root \
--mca plm_rsh_agent vrdma-rig-rsh --host $2 -np 2 --mca pml ob1 --mca btl self,tcp \
--mca orte_base_help_aggregate 0 -x VRDMA_COLL -x VRDMA_COLL_VERBOSE -x VRDMA_COLL_MPI \
-x MPI_COLL_CHECK_MAX_BYTES vrdma-run --coll mpi_coll_check 2>&1")
	du_wait $1 $_cn $((MC_T + 10))
	MC_RC=$DU_RC
	_cs=$(($(date +%s) - _ct0))
	MC_HUNG=
	[ "$MC_RC" = timeout ] || [ $_cs -ge $MC_T ] && MC_HUNG=1
	MC_OUT=$(du_out $1 $_cn)
	MC_MOVED=$(($(mpi_moved) - _cm0))
	MC_OPS=$(($(mpi_coll_ops) - _co0))
	_cr=$(($(mc_retrans $1) - _cr0))
	mc_peer_after $3
	MC_MOVED=$((MC_MOVED + MC_PEER_MOVED))
	MC_MIN=$(mc_field 'mpi_coll_check: 2 ranks, [0-9]* checks, all correct, \([0-9]*\) bytes between ranks')
	MC_EXACT=$(mc_field 'mpi_coll_check: digest exact \([0-9a-f]*\)')
	MC_FLOAT=$(mc_field 'mpi_coll_check: digest float \([0-9a-f]*\)')
	MC_TEAM=$(echo "$MC_OUT" | grep -m 1 '^vrdma-mpi: MPI_COMM_WORLD: team ')
	echo "VRDMA_COLL=$3: exit $MC_RC after $_cs s${MC_HUNG:+ (its limit)}, $MC_MOVED bytes" \
		"through vrdma, $MC_OPS operations in dom0's teams (the other node's" \
		"$MC_PEER_OPS), $_cr TCP segments" \
		"retransmitted by dom$1; ${MC_TEAM:-no team}"
	echo "$MC_OUT" | grep '^mpi_coll_check: [0-9]* ranks\|^mpi_coll_check: .* checked after'
}

# mc_why WHY: one more reason the check at hand fails (in _cw)
mc_why() { _cw="${_cw:+$_cw; }$1"; }

# mc_report NAME: PASS if _cw is empty, else FAIL, and the run's tail
mc_report() {
	if [ -z "$_cw" ]; then
		vt_pass $1
	else
		vt_fail $1 "$_cw"
		echo "$MC_OUT" | tail -n 25
	fi
}

# mc_case DOM HOSTS MODE: mpi-coll-MODE, one run and what it must show
mc_case() {
	_cw=
	[ "$MC_NODES" = 1 ] && MC_NODEW=node || MC_NODEW=nodes
	if [ -n "$_chung" ]; then
		MC_EXACT='' MC_FLOAT=''
		vt_fail mpi-coll-$3 "not run: the VRDMA_COLL=$_chung run hung"
		mc_peer_before $3	# the other node keeps in step
		mc_peer_after $3
		return
	fi
	mpi_coll_run $1 "$2" $3
	[ -n "$MC_HUNG" ] && _chung=$3
	[ "$MC_RC" = 0 ] && [ -n "$MC_MIN" ] || mc_why "exit $MC_RC, not all correct"
	case $3 in
	on)	echo "$MC_TEAM" | grep -q "^vrdma-mpi: MPI_COMM_WORLD: team of 2 ranks on \
$MC_NODES $MC_NODEW, offload, [1-9][0-9]* operations" ||
			mc_why "MPI_COMM_WORLD's team not offloaded"
		[ "$MC_OPS" -gt 0 ] || mc_why "dom0's teams ran no operation"
		[ "$MC_NODES" = 1 ] || [ "$MC_PEER_OPS" -gt 0 ] ||
			mc_why "the other dom0's teams ran no operation" ;;
	guest)	echo "$MC_TEAM" | grep -q \
			"^vrdma-mpi: MPI_COMM_WORLD: team of 2 ranks on $MC_NODES $MC_NODEW, in the guests" ||
			mc_why "MPI_COMM_WORLD's team not in the guests"
		# in the guests every byte between the ranks crosses a vrdma QP
		[ -n "$MC_MIN" ] && [ "$MC_MOVED" -ge "$MC_MIN" ] ||
			mc_why "$MC_MOVED bytes through vrdma, wanted ${MC_MIN:-?}" ;;
	off)	[ -z "$MC_TEAM" ] || mc_why "a team: $MC_TEAM"
		[ "$MC_MOVED" = 0 ] || mc_why "$MC_MOVED bytes through vrdma" ;;
	esac
	mc_report mpi-coll-$3
}

# mc_same_bits: the exact digest the same in the three runs, the float
# one (vrdma's reduction order, docs/collectives.md) in on and guest
mc_same_bits() {
	[ -n "$_ce_on" ] && [ "$_ce_on" = "$_ce_guest" ] && [ "$_ce_on" = "$_ce_off" ] &&
		[ -n "$_cf_on" ] && [ "$_cf_on" = "$_cf_guest" ]
}

# mpi_coll DOM HOSTS: the three runs (HOSTS as mpi_job's) and the checks
#   mpi-coll-on         exit 0, all correct, MPI_COMM_WORLD's team line
#                       says offload and counts operations, dom0's teams
#                       ran some (vrdmactl teams)
#   mpi-coll-guest      exit 0, all correct, the team in the guests, and
#                       vrdmad moved at least the bytes the program says
#                       crossed between the ranks
#   mpi-coll-off        exit 0, all correct, no team, no byte through vrdma
#   mpi-coll-same-bits  mc_same_bits
# (2 ranks: the program's sub-communicators are of one rank, no team.)
mpi_coll() {
	_chung=
	mc_case $1 "$2" on
	_ce_on=$MC_EXACT _cf_on=$MC_FLOAT
	mc_case $1 "$2" guest
	_ce_guest=$MC_EXACT _cf_guest=$MC_FLOAT
	mc_case $1 "$2" off
	_ce_off=$MC_EXACT
	echo "mpi-coll: digest exact on ${_ce_on:-?}, guest ${_ce_guest:-?}, off ${_ce_off:-?};" \
		"float on ${_cf_on:-?}, guest ${_cf_guest:-?}, off ${MC_FLOAT:-?} (MPI's order, not compared)"
	vt_check mpi-coll-same-bits mc_same_bits
}
