# libvrdma public API misuse (tests/test_api.c), against the built library.
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_api
$(B)/tests/test_api: $(call obj,tests/test_api.c tests/tlive.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS)

# verbs-style QP connection: vrdma_modify_qp / query_qp / query_gid (tests/test_modify.c).
CHECK_BINS += $(B)/tests/test_modify
$(B)/tests/test_modify: $(call obj,tests/test_modify.c tests/tlive.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS)

# asynchronous events: CQ overrun, LAST_WQE_REACHED, DEVICE_FATAL (tests/test_async.c).
CHECK_BINS += $(B)/tests/test_async
$(B)/tests/test_async: $(call obj,tests/test_async.c tests/tlive.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS)

# WRs of up to 16 SGEs, their SGE entries in the ring (tests/test_sge.c).
CHECK_BINS += $(B)/tests/test_sge
$(B)/tests/test_sge: $(call obj,tests/test_sge.c tests/tlive.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS)

# UD QPs, address handles, datagrams between two guests (tests/test_ud.c).
CHECK_BINS += $(B)/tests/test_ud
$(B)/tests/test_ud: $(call obj,tests/test_ud.c tests/tlive.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS)

# Page moves for reg_mr under an mremap hook that loses the new address, and
# moves the kernel misplaces (tests/test_remap.c).  Its mremap is exported
# so that a library calling mremap() gets it, as it would libucm's.
CHECK_BINS += $(B)/tests/test_remap
$(B)/tests/test_remap: $(call obj,tests/test_remap.c tests/tlive.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -Wl,--export-dynamic-symbol=mremap -o $@ $(filter %.o,$^) \
		-L$(B)/lib -lvrdma -Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS) -ldl

# The VRDMA_1.0 versions programs built against 1.0.0 bind (tests/test_abi.c).
CHECK_BINS += $(B)/tests/test_abi
$(B)/tests/test_abi: $(call obj,tests/test_abi.c tests/tlive.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS) -ldl

# One MR of more than 4 GiB, indirect list pages (tests/test_bigmr.c).
CHECK_BINS += $(B)/tests/test_bigmr
$(B)/tests/test_bigmr: $(call obj,tests/test_bigmr.c tests/tlive.c) $(LIBSO)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma \
		-Wl,-rpath,$(abspath $(B))/lib $(CHECK_LIBS) $(LIBS)
