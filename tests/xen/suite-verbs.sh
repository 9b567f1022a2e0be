# SPDX-License-Identifier: MIT
# Suite "verbs" (sourced by dom0's /init): only the unmodified verbs
# programs between domu1 and domu2 (suite check runs them too); for
# working on them without the rest of check.
A1=$(gn_addr $D1)
A2=$(gn_addr $D2)
if [ -n "$A1" ] && [ -n "$A2" ]; then
	. /vrdma/verbs-lib.sh
	verbs_suite $D2 $D1 $A2
	. /vrdma/mpi-lib.sh
	mpi_pair $D1 "$A1,$A2"
else
	vt_fail verbs-network "domu1 '$A1' domu2 '$A2': no guest network"
fi
