# SPDX-License-Identifier: MIT
# Quotas per tenant (tests/test_tenant.c): the real vrdmad, guests of two uids.
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_tenant
$(B)/tests/test_tenant: $(call obj,tests/test_tenant.c tests/tlive.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS)
