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
