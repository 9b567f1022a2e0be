# SPDX-License-Identifier: MIT
# ibv_post_send / ibv_poll_cq through vrdma's libibverbs against a live
# vrdmad (tests/test_vvb_post.c): built against the installed
# <infiniband/verbs.h> as a verbs program is, linked to build/lib/vrdma's
# libibverbs.so.1 (and found there by its RUNPATH, as vrdma-run would).
CHECK_BINS += $(B)/tests/test_vvb_post
$(B)/tests/test_vvb_post: $(call obj,tests/test_vvb_post.c tests/tlive.c tests/tverbs.c) \
		$(B)/lib/vrdma/libibverbs.so.1 $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) $(B)/lib/vrdma/libibverbs.so.1 \
		-L$(B)/lib -lvrdma -Wl,-rpath,$(abspath $(B))/lib/vrdma:$(abspath $(B))/lib \
		$(CHECK_LIBS) -pthread

# Completion channels through the same library (tests/test_vvb_chan.c):
# event order, arm semantics, no event lost.
CHECK_BINS += $(B)/tests/test_vvb_chan
$(B)/tests/test_vvb_chan: $(call obj,tests/test_vvb_chan.c tests/tlive.c tests/tverbs.c) \
		$(B)/lib/vrdma/libibverbs.so.1 $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) $(B)/lib/vrdma/libibverbs.so.1 \
		-L$(B)/lib -lvrdma -Wl,-rpath,$(abspath $(B))/lib/vrdma:$(abspath $(B))/lib \
		$(CHECK_LIBS) -pthread
