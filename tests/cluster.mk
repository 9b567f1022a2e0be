# SPDX-License-Identifier: MIT
# The 2-node cluster rig (scripts/cluster, tests/cluster): two QEMU/TCG
# machines joined by a UDP netdev, Soft-RoCE (rxe) on each, the plain-host
# vrdmad on each node and guest processes on both ends.
#   make check-cluster   itest across nodes, a peer killed mid-transfer, census
#   make demo-cluster    vrdma-bw across the nodes (perftest table)
#   make bench-cluster   native perftest beside vrdma-bw/-lat, with ratios
#   make smoke-cluster   the rig itself: rxe, native perftest, vrdmad up
#   make xen-cluster     the full variant: each node Xen + PV dom0 owning
#                        the NIC + PV domUs; vrdma-bw between domUs of the
#                        two nodes (suite-xcluster.sh)
#   make check-xen-cluster  the same machines: itest across domUs of the two
#                        nodes, xl destroy mid-transfer, census (suite-xcheck.sh)
#   make bench-xen-cluster  native perftest between the dom0s beside
#                        vrdma-bw/-lat between the domUs (suite-xbench.sh)
# make check runs check-cluster (the lighter variant) after check-xen.
CLUSTER_DEPS := all $(B)/tests/itest_guest

.PHONY: check-cluster demo-cluster bench-cluster smoke-cluster xen-cluster \
	check-xen-cluster bench-xen-cluster
check-cluster: $(CLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh check $(B)

demo-cluster: $(CLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh demo $(B)

bench-cluster: $(CLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh bench $(B)

smoke-cluster: $(CLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh smoke $(B)

# (the Xen rig's image builder wants every program it carries)
XCLUSTER_DEPS := $(CLUSTER_DEPS) $(B)/bin/vrdma-xen-rawcopy $(B)/tests/itest_hostile
xen-cluster: $(XCLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh xen $(B)

check-xen-cluster: $(XCLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh xcheck $(B)

bench-xen-cluster: $(XCLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh xbench $(B)
