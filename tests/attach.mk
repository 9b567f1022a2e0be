# SPDX-License-Identifier: MIT
# vrdmad's attach policy (dom0-daemon/attach.c) against the stub platform.
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_attach
$(B)/tests/test_attach: $(call obj,tests/test_attach.c tests/stub_plat.c dom0-daemon/attach.c backend/vout.c common/log.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
