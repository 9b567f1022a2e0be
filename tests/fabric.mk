# SPDX-License-Identifier: MIT
# Debian's libfabric on vrdma through vrdma-run (tests/fabric.sh): the
# verbs provider's MSG and DGRAM endpoints and ofi_rxm's RDM ones over
# them, fi_info and fi_pingpong between two guests.
.PHONY: check-fabric
check-fabric: all
	$(Q)tests/fabric.sh $(B)
check-unit: check-fabric
