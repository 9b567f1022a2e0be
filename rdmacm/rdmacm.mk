# SPDX-License-Identifier: MIT
# rdmacm/: vrdma's librdmacm.so.1 for the private libdir (see
# verbs/verbs.mk): rdma_cm over a TCP handshake between the guests and
# QPs bound the verbs way through our libibverbs (docs/rdmacm.md).
# Compiled against the installed <rdma/rdma_cma.h> (librdmacm-dev), so
# layouts are the distribution's; exports Debian's RDMACM_1.0 ... 1.3.
RDMACM_SRCS := $(wildcard rdmacm/*.c)
RDMACM_SO   := $(B)/lib/vrdma/librdmacm.so.1
RDMACM_TEST := $(B)/tests/rdmacm_test $(B)/tests/rdmacm_sync_test

all: $(RDMACM_SO)

# Links our libibverbs.so.1 by path (soname libibverbs.so.1), found beside
# it at run time ($ORIGIN) and first on vrdma-run's LD_LIBRARY_PATH.
$(RDMACM_SO): $(call obj,$(RDMACM_SRCS)) rdmacm/librdmacm.map $(VERBS_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,librdmacm.so.1 -Wl,-z,defs \
		-Wl,--version-script=rdmacm/librdmacm.map $(ALLLDFLAGS) -o $@ \
		$(filter %.o,$^) $(VERBS_SO) -Wl,-rpath,'$$ORIGIN' -pthread

# Malformed uses through the library (tests/rdmacm_test.c), synchronous
# and UD ids (tests/rdmacm_sync_test.c).
$(RDMACM_TEST): $(B)/tests/%: $(B)/obj/tests/%.o $(RDMACM_SO) $(VERBS_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $< $(RDMACM_SO) $(VERBS_SO) \
		-Wl,-rpath,'$$ORIGIN/../lib/vrdma' -pthread

# Debian's rping, ucmatose, udaddy, rdma_server / rdma_client and perftest
# -R through vrdma-run (tests/rdmacm.sh).
.PHONY: check-rdmacm
check-rdmacm: all $(RDMACM_TEST)
	$(Q)tests/rdmacm.sh $(B)
check-unit: check-rdmacm
