# SPDX-License-Identifier: MIT
# The reduction kernels of the collectives (common/coll/vcoll_reduce.c),
# shared by dom0's offload and the guest's fallback; nothing else links
# them yet, so this suite builds them itself.
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_coll_reduce
$(B)/tests/test_coll_reduce: $(call obj,tests/test_coll_reduce.c common/coll/vcoll_reduce.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS) -lm

# Teams and their collectives in the guests (libvrdma/coll/) through a
# live vrdmad, members as threads (tests/tcoll.c).  The team code is built
# again with its connects routed through the harness's tct_connect(), so
# that one host can play several nodes; everything else is the real
# library.
TCT_SRCS := $(wildcard libvrdma/coll/*.c)
TCT_OBJS := $(patsubst libvrdma/coll/%.c,$(B)/obj/tests/tct/%.o,$(TCT_SRCS))
$(B)/obj/tests/tct/%.o: libvrdma/coll/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (tct)")
	$(Q)$(CC) $(ALLCFLAGS) -Dvrdma_connect=tct_connect -c -o $@ $<
CHECK_BINS += $(B)/tests/test_coll_team
$(B)/tests/test_coll_team: $(call obj,tests/test_coll_team.c tests/tcoll.c tests/tlive.c \
		common/coll/vcoll_reduce.c) \
		$(TCT_OBJS) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS) -lm -lpthread

# Teams that go wrong: a member missing, dying (a child process), late,
# disagreeing; a stranger with a wrong key.  Same harness and seam.
CHECK_BINS += $(B)/tests/test_coll_fault
$(B)/tests/test_coll_fault: $(call obj,tests/test_coll_fault.c tests/tcoll.c tests/tlive.c \
		common/coll/vcoll_reduce.c) \
		$(TCT_OBJS) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS) -lm -lpthread

# vrdma/coll.h misused: every bad argument's error, 64 pending, 1 GiB.
CHECK_BINS += $(B)/tests/test_coll_misuse
$(B)/tests/test_coll_misuse: $(call obj,tests/test_coll_misuse.c tests/tcoll.c tests/tlive.c \
		common/coll/vcoll_reduce.c) \
		$(TCT_OBJS) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS) -lm -lpthread
