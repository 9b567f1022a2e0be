# Backend lifecycle (guest death, disable, restart) on the stub platform,
# and frontend/front.c's handshake against it.
CHECK_BINS += $(B)/tests/test_xenlife
$(B)/tests/test_xenlife: $(call obj,tests/test_xenlife.c tests/backend_tg.c tests/stub_plat.c $(BACKEND_SRCS) $(wildcard frontend/*.c) common/log.c common/vlt.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS) -pthread
