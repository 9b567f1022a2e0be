# SPDX-License-Identifier: MIT
# The RDMA-device path's pure parts (backend/device/verbs_map.c): status and
# access mapping, rdma_cm private data, remote-key table entries and the
# requester's cache of them (against a model of the peer).  No device
# needed; the device path itself runs on the cluster rig.
EXTRA_CFLAGS_tests := $(CHECK_CFLAGS)
CHECK_BINS += $(B)/tests/test_verbs
$(B)/tests/test_verbs: $(call obj,tests/test_verbs.c backend/device/verbs_map.c common/log.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

# The device windows of 64 GiB: key-table entries past 4 GiB, where a
# translation lands, two keys of one key slot (backend/device/verbs.h).
CHECK_BINS += $(B)/tests/test_verbs_win
$(B)/tests/test_verbs_win: $(call obj,tests/test_verbs_win.c backend/device/verbs_map.c common/log.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

# The teardown threads (backend/device/verbs_reap.c), device calls stubbed.
CHECK_BINS += $(B)/tests/test_reap
$(B)/tests/test_reap: $(call obj,tests/test_reap.c backend/device/verbs_reap.c common/log.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) -lpthread

# The header of datagrams between nodes (backend/device/verbs_udhdr.c).
CHECK_BINS += $(B)/tests/test_verbs_ud
$(B)/tests/test_verbs_ud: $(call obj,tests/test_verbs_ud.c backend/device/verbs_udhdr.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)

# The port MTU of vrdma's libibverbs against the device's max_ud_msg (verbs/vvb.h).
CHECK_BINS += $(B)/tests/test_vvb_mtu
$(B)/tests/test_vvb_mtu: $(call obj,tests/test_vvb_mtu.c)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LIBS)
