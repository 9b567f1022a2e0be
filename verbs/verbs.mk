# SPDX-License-Identifier: MIT
# verbs/: a drop-in libibverbs.so.1 over libvrdma, so unmodified verbs
# programs (perftest, ibverbs-utils) run on vrdma.  It goes to a private
# libdir, $(B)/lib/vrdma (installed: $(LIBDIR)/vrdma), which vrdma-run
# puts first in LD_LIBRARY_PATH; beside it stand-ins for the provider
# libraries perftest links (libmlx5, libefa: verbs/dv/) and librdmacm
# (rdmacm/rdmacm.mk).  Compiled against the installed
# <infiniband/verbs.h> (libibverbs-dev), so layouts are the distribution's.
VERBS_DIR    := $(B)/lib/vrdma
VERBS_SRCS   := $(wildcard verbs/*.c)
VERBS_SO     := $(VERBS_DIR)/libibverbs.so.1
VERBS_DV_SOS := $(VERBS_DIR)/libmlx5.so.1 $(VERBS_DIR)/libefa.so.1
VRDMA_RUN    := $(B)/bin/vrdma-run
# libvrdma is one directory up, in the build tree and installed alike.
VERBS_RPATH  := -Wl,-rpath,'$$ORIGIN/..'

all: $(VERBS_SO) $(VERBS_DV_SOS) $(VRDMA_RUN)

$(VERBS_SO): $(call obj,$(VERBS_SRCS)) verbs/libibverbs.map $(LIBSO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libibverbs.so.1 -Wl,-z,defs \
		-Wl,--version-script=verbs/libibverbs.map $(ALLLDFLAGS) -o $@ \
		$(filter %.o,$^) -L$(B)/lib -lvrdma $(VERBS_RPATH) -pthread

# Stand-in provider libraries: no code of their own to link against.
VERBS_DV_OBJS := $(call obj,verbs/dv/mlx5.c verbs/dv/efa.c)
.SECONDARY: $(VERBS_DV_OBJS)
$(VERBS_DIR)/lib%.so.1: $(B)/obj/verbs/dv/%.o verbs/dv/lib%.map
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,lib$*.so.1 -Wl,-z,defs \
		-Wl,--version-script=verbs/dv/lib$*.map $(ALLLDFLAGS) -o $@ $(filter %.o,$^)

$(VRDMA_RUN): verbs/vrdma-run.in $(B)/install-vars verbs/verbs.mk
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)sed -e 's|@VRDMA_LIBDIR@|$(LIBDIR)/vrdma|' -e 's|@VERSION@|$(VERSION)|' $< > $@
	$(Q)chmod 755 $@

# The unmodified Debian programs through vrdma-run (tests/verbs.sh).
.PHONY: check-verbs install-verbs uninstall-verbs
check-verbs: all
	$(Q)tests/verbs.sh $(B)
check-unit: check-verbs

# (its man pages go with the others': Makefile's install)
install: install-verbs
install-verbs: all
	install -d $(DESTDIR)$(LIBDIR)/vrdma $(DESTDIR)$(BINDIR)
	install -m 755 $(VERBS_SO) $(VERBS_DV_SOS) $(RDMACM_SO) $(DESTDIR)$(LIBDIR)/vrdma/
	install -m 755 $(VRDMA_RUN) $(DESTDIR)$(BINDIR)/

uninstall: uninstall-verbs
uninstall-verbs:
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/vrdma/,$(notdir $(VERBS_SO) $(VERBS_DV_SOS) $(RDMACM_SO)))
	-rmdir $(DESTDIR)$(LIBDIR)/vrdma
	rm -f $(DESTDIR)$(BINDIR)/$(notdir $(VRDMA_RUN))
