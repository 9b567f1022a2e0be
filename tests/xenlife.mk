# Backend lifecycle (guest death, disable, restart) on the stub platform.
CHECK_BINS += $(B)/tests/test_xenlife
$(B)/tests/test_xenlife: $(call obj,tests/test_xenlife.c tests/backend_tg.c tests/stub_plat.c $(BACKEND_SRCS) common/log.c common/vlt.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
