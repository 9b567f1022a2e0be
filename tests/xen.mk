# SPDX-License-Identifier: MIT
# The Xen platform's smoke program (tests/xen_smoke.c): one side in a domU,
# the other in dom0 (see its header).  Not a Check suite: it needs Xen, so
# the rig runs it, never check-unit.  Built only with libxen-dev.
XEN_SMOKE := $(if $(XEN_LIBS),$(B)/tests/xen_smoke)
XEN_SMOKE_SRCS := tests/xen_smoke.c $(sort $(COMMON_SRCS) $(PLAT_GUEST_SRCS) $(PLAT_DOM0_SRCS))

.PHONY: xen-smoke
xen-smoke: $(XEN_SMOKE)

$(B)/tests/xen_smoke: $(call obj,$(XEN_SMOKE_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(LIBS)
