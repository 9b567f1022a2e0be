# SPDX-License-Identifier: MIT
# The 2-node cluster rig (scripts/cluster, tests/cluster): two QEMU/TCG
# machines joined by a UDP netdev, Soft-RoCE (rxe) on each.  Two variants:
# Xen (each node Xen 4.17 + a PV dom0 owning the NIC and running vrdmad,
# guests in PV domUs: what users run) and host (the plain-host vrdmad,
# guests as processes: quick to iterate on).
#   make check-cluster        both variants' tests (part of make check)
#   make check-cluster-xen    itest across domUs of the two nodes, a domU
#                             destroyed mid-transfer on each node, census
#                             (suite-xcheck.sh)
#   make check-cluster-host   the same across guest processes (suite-check.sh)
#   make demo-cluster         vrdma-bw between domUs of the two nodes, MiB/s,
#                             beside native perftest (suite-xcluster.sh)
#   make bench-cluster        native perftest between the dom0s beside the
#                             same through vrdma between the domUs, two CPU
#                             layouts, poll and event mode (suite-xbench.sh)
#   make bench-lat-budget     an 8-byte round trip through vrdma hop by hop,
#                             beside native's (suite-xlat.sh)
#   make demo-cluster-host | bench-cluster-host   the host variant's
#   make smoke-cluster        the rig itself: rxe, native perftest, vrdmad up
#   make bench-prio-cluster   issue 5's benchmark across the nodes (host
#                             variant): 4 flooders on a, weights 1:2:3:4,
#                             shares beside targets; a high-class guest
#                             solo vs 3 low-class flooders (suite-prio.sh)
CLUSTER_DEPS := all $(B)/tests/itest_guest $(B)/tests/itest_bigmr $(B)/tests/itest_team
# (the Xen rig's image builder wants every program it carries)
XCLUSTER_DEPS := $(CLUSTER_DEPS) $(B)/bin/vrdma-xen-rawcopy $(B)/tests/itest_hostile

.PHONY: check-cluster check-cluster-xen check-cluster-host demo-cluster \
	demo-cluster-host bench-cluster bench-cluster-host smoke-cluster \
	bench-prio-cluster bench-lat-budget

# The QEMU runs one after the other, never beside each other (make -j).
check-cluster: $(XCLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh check $(B)
	$(Q)scripts/cluster/rig.sh xcheck $(B)

check-cluster-xen: $(XCLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh xcheck $(B)

check-cluster-host: $(CLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh check $(B)

demo-cluster: $(XCLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh xen $(B)

demo-cluster-host: $(CLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh demo $(B)

bench-cluster: $(XCLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh xbench $(B)

bench-lat-budget: $(XCLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh xlat $(B)

bench-cluster-host: $(CLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh bench $(B)

smoke-cluster: $(CLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh smoke $(B)

bench-prio-cluster: $(CLUSTER_DEPS)
	$(Q)scripts/cluster/rig.sh prio $(B)
