# SPDX-License-Identifier: MIT
# The reduction kernels of the collectives (common/coll/vcoll_reduce.c),
# shared by dom0's offload and the guest's fallback; nothing else links
# them yet, so this suite builds them itself.
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_coll_reduce
$(B)/tests/test_coll_reduce: $(call obj,tests/test_coll_reduce.c common/coll/vcoll_reduce.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS) -lm
