# vrdmad's configuration file and settings kept across restarts (issue
# 13): the real daemon, vrdmactl and guest processes.
CHECK_BINS += $(B)/tests/test_vrdmad_conf
$(B)/tests/test_vrdmad_conf: $(call obj,tests/test_vrdmad_conf.c tests/vdt.c) | $(VRDMAD) $(VRDMACTL) $(B)/bin/vrdma-bw
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
