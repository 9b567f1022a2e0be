# SPDX-License-Identifier: MIT
# Teams dom0 runs (libvrdma/coll/offload.c, libvrdma/team_dev.c) through a
# live vrdmad, against the built library: the guest's checks of what dom0
# says about teams, and with feature-coll the one-node teams' results
# (tests/test_coll_offload.c, members as threads as in tcoll.c).
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_coll_offload
$(B)/tests/test_coll_offload: $(call obj,tests/test_coll_offload.c tests/tcoll.c tests/tlive.c \
		common/coll/vcoll_reduce.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS) -lm -lpthread
