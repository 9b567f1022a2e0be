# Integration test programs (run by tests/integration.sh, not Check suites).
ITEST_BINS += $(B)/tests/itest_guest
$(B)/tests/itest_guest: $(call obj,tests/itest_guest.c tests/itest_lib.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma -Wl,-rpath,$(abspath $(B))/lib $(LIBS)

# An MR past 4 GiB reached from another node (cluster rig, suite check).
ITEST_BINS += $(B)/tests/itest_bigmr
$(B)/tests/itest_bigmr: $(call obj,tests/itest_bigmr.c tests/itest_lib.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma -Wl,-rpath,$(abspath $(B))/lib $(LIBS)

# A member of a team across the cluster rig's nodes (suite check).
ITEST_BINS += $(B)/tests/itest_team
$(B)/tests/itest_team: $(call obj,tests/itest_team.c tests/itest_lib.c common/coll/vcoll_reduce.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma -Wl,-rpath,$(abspath $(B))/lib $(LIBS)

# The hostile guest links the frontend directly to write raw ring entries.
ITEST_BINS += $(B)/tests/itest_hostile
$(B)/obj/tests/itest_hostile.o: EXTRA_CFLAGS_tests += -Ifrontend
$(B)/tests/itest_hostile: $(call obj,tests/itest_hostile.c $(COMMON_SRCS) $(PLAT_GUEST_SRCS) $(FRONTEND_SRCS))
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(LIBS)
