# SPDX-License-Identifier: MIT
# The Xen-in-QEMU rig (scripts/xen, tests/xen): Xen 4.17 from Debian under
# QEMU TCG, vrdmad in a PV dom0, guests in two PV domUs.
#   make check-xen    the check suite (part of make check)
#   make demo-xen     vrdma-bw between the two domUs (make demo)
#   make bench-xen    vrdma-bw beside the raw limit of a grant-shared ring
#   make bench-prio-xen  issue 5's benchmark (shares, high class) in 8 domUs
XENRIG_LIBS := $(shell pkg-config --libs xenstore xengnttab xenevtchn 2>/dev/null || \
		echo -lxenstore -lxengnttab -lxenevtchn)
XEN_RAWCOPY := $(B)/bin/vrdma-xen-rawcopy
XEN_RIG_DEPS := all $(XEN_RAWCOPY) $(B)/tests/itest_guest $(B)/tests/itest_hostile

$(XEN_RAWCOPY): $(call obj,bench/xen_rawcopy.c)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(XENRIG_LIBS) $(LIBS)

.PHONY: check-xen demo-xen bench-xen bench-prio-xen
check-xen: $(XEN_RIG_DEPS)
	$(Q)scripts/xen/rig.sh check $(B)

demo-xen: $(XEN_RIG_DEPS)
	$(Q)scripts/xen/rig.sh demo $(B)

bench-xen: $(XEN_RIG_DEPS)
	$(Q)scripts/xen/rig.sh bench $(B)

bench-prio-xen: $(XEN_RIG_DEPS)
	$(Q)scripts/xen/rig.sh prio $(B)
	$(Q)scripts/prio-plot.sh $(B)/xen/bench-prio-shares.dat $(B)/xen/bench-prio-shares.png "Xen rig"
