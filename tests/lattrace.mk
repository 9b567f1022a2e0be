# SPDX-License-Identifier: MIT
# The per-hop latency trace: its array, the guest's environment and
# dom0's `trace` command (tests/test_lattrace.c), then ib_send_lat
# between two guests of the plain host with both sides traced and
# scripts/lat-trace.sh's hops (tests/lattrace.sh).
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_lattrace
$(B)/tests/test_lattrace: $(call obj,tests/test_lattrace.c common/vlt.c common/log.c \
		libvrdma/trace.c backend/trace/lat.c backend/vout.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

.PHONY: check-lat-trace
check-lat-trace: all
	$(Q)tests/lattrace.sh $(B)
check-unit: check-lat-trace
