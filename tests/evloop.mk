# vrdmad: event loop (evloop.c), control socket (ctl.c), the daemon itself.
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)

CHECK_BINS += $(B)/tests/test_evloop
$(B)/tests/test_evloop: $(call obj,tests/test_evloop.c dom0-daemon/evloop.c common/log.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

CHECK_BINS += $(B)/tests/test_vdctl
$(B)/tests/test_vdctl: $(call obj,tests/test_vdctl.c dom0-daemon/ctl.c dom0-daemon/evloop.c common/log.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

# The real daemon and control tool, run as processes.
CHECK_BINS += $(B)/tests/test_vrdmad
$(B)/tests/test_vrdmad: $(call obj,tests/test_vrdmad.c tests/vdt.c) | $(VRDMAD) $(VRDMACTL) $(B)/bin/vrdma-bw
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
