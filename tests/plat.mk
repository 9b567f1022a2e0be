# SPDX-License-Identifier: MIT
# Check suite for the platform seam (plain host: guest and dom0 in one binary).
CHECK_BINS += $(B)/tests/test_plat
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)

$(B)/tests/test_plat: $(call obj,tests/test_plat.c platform/vplat.c $(wildcard platform/host_*.c) \
		platform/keystore_dom0.c common/log.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

# The frontend's handshake keys against a backend the test plays
# (tests/test_front_keys.c: max-ud-msg absent, in range, out of it).
CHECK_BINS += $(B)/tests/test_front_keys
$(B)/tests/test_front_keys: $(call obj,tests/test_front_keys.c $(wildcard frontend/*.c) \
		platform/vplat.c $(wildcard platform/host_*.c) platform/keystore_dom0.c \
		common/log.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS) -pthread
