# Issue 5: the scheduler across guests (backend/sched/sched_round.c, prio.c)
# against the stub platform, and a plain-host check of vrdmactl set/get/stats.
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_backend_prio
$(B)/tests/test_backend_prio: $(call obj,tests/test_backend_prio.c tests/backend_tg.c tests/stub_plat.c $(BACKEND_SRCS) common/log.c common/vlt.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

# The issue-5 benchmark (plain host; not a test): shares, high class, plot.
.PHONY: bench-prio
bench-prio: all
	$(Q)scripts/bench-prio.sh $(B)
