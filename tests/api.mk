# libvrdma public API misuse (tests/test_api.c), against the built library.
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_api
$(B)/tests/test_api: $(call obj,tests/test_api.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS)
