# dom0 backend (backend/*.c backend/*/*.c) against an in-process stub of the platform seam.
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_backend
$(B)/tests/test_backend: $(call obj,tests/test_backend.c tests/test_backend_bad.c tests/test_backend_fair.c tests/test_backend_keys.c tests/test_backend_policy.c tests/test_backend_share.c tests/test_backend_sge.c tests/test_backend_buf.c tests/test_backend_ud.c tests/test_backend_udnode.c tests/test_backend_udahead.c tests/test_backend_coll.c tests/test_backend_collsw.c tests/test_backend_collbad.c tests/test_backend_chain.c tests/test_backend_chainbad.c tests/chain_peer.c tests/backend_tg.c tests/stub_plat.c $(BACKEND_SRCS) common/log.c common/vlt.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
