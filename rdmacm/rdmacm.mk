# SPDX-License-Identifier: MIT
# rdmacm/: vrdma's librdmacm.so.1 for the private libdir (see
# verbs/verbs.mk).  For now every call fails EOPNOTSUPP; it exists so
# programs linking librdmacm (perftest, rping, ucmatose) load at all.
RDMACM_SRCS := $(wildcard rdmacm/*.c)
RDMACM_SO   := $(B)/lib/vrdma/librdmacm.so.1

all: $(RDMACM_SO)

$(RDMACM_SO): $(call obj,$(RDMACM_SRCS)) rdmacm/librdmacm.map
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,librdmacm.so.1 -Wl,-z,defs \
		-Wl,--version-script=rdmacm/librdmacm.map $(ALLLDFLAGS) -o $@ $(filter %.o,$^)
