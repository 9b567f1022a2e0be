# SPDX-License-Identifier: MIT
# verbs/: a drop-in libibverbs.so.1 over libvrdma, so unmodified verbs
# programs (perftest, ibverbs-utils) run on vrdma.  It goes to a private
# libdir, $(B)/lib/vrdma (installed: $(LIBDIR)/vrdma), which vrdma-run
# puts first in LD_LIBRARY_PATH; beside it stand-ins for the provider
# libraries with a public dv API that Debian's perftest, UCX, libfabric
# and Open MPI link (libmlx5, libefa: verbs/dv/) and librdmacm
# (rdmacm/rdmacm.mk).  Compiled against the installed
# <infiniband/verbs.h> (libibverbs-dev), so layouts are the distribution's.
VERBS_DIR    := $(B)/lib/vrdma
VERBS_SRCS   := $(wildcard verbs/*.c)
VERBS_SO     := $(VERBS_DIR)/libibverbs.so.1
# the providers with a dv API those programs link (libmlx4, libmana: none)
VERBS_DV     := mlx5 efa
VERBS_DV_SOS := $(VERBS_DV:%=$(VERBS_DIR)/lib%.so.1)
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

# Stand-in provider libraries, generated from the installed ones
# (ibverbs-providers) and their headers (<infiniband/mlx5dv.h>, efadv.h:
# libibverbs-dev) by verbs/dv/gen-standin.sh: every version node and
# call of Debian's, each refusing as for a device of another provider.
# A new ibverbs-providers remakes them.
VERBS_DV_GEN  := $(B)/gen/verbs/dv
VERBS_DV_FROM := $(wildcard $(foreach l,$(VERBS_DV),$(shell $(CC) -print-file-name=lib$(l).so.1)))
.SECONDARY: $(VERBS_DV:%=$(VERBS_DV_GEN)/%.c) $(VERBS_DV:%=$(VERBS_DV_GEN)/lib%.map) \
	$(VERBS_DV:%=$(B)/obj/gen/verbs/dv/%.o)
$(VERBS_DV_GEN)/%.c $(VERBS_DV_GEN)/lib%.map: verbs/dv/gen-standin.sh $(VERBS_DV_FROM)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $(VERBS_DV_GEN)/$*.c")
	$(Q)CC="$(CC)" CPPFLAGS="$(CPPFLAGS)" verbs/dv/gen-standin.sh lib$*.so.1 \
		infiniband/$*dv.h $(VERBS_DV_GEN)/$*.c $(VERBS_DV_GEN)/lib$*.map

$(B)/obj/gen/verbs/dv/%.o: $(VERBS_DV_GEN)/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALLCFLAGS) -c -o $@ $<

$(VERBS_DV_SOS): $(VERBS_DIR)/lib%.so.1: $(B)/obj/gen/verbs/dv/%.o $(VERBS_DV_GEN)/lib%.map
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,lib$*.so.1 -Wl,-z,defs \
		-Wl,--version-script=$(VERBS_DV_GEN)/lib$*.map $(ALLLDFLAGS) -o $@ $(filter %.o,$^)

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

# Every symbol Debian's perftest, ibverbs-utils, rdmacm-utils, UCX,
# libfabric and Open MPI bind to is in the private libdir, and the
# stand-ins have all of Debian's (tests/verbs-abi.sh).
.PHONY: check-verbs-abi
check-verbs-abi: all
	$(Q)CC="$(CC)" tests/verbs-abi.sh $(B)
check-unit: check-verbs-abi

# (its man pages go with the others': Makefile's install)
# tmpfiles.d/vrdma-verbs.conf: the /dev/infiniband node UCX looks for
# (docs/verbs.md); systemd-tmpfiles makes it at boot, the package at install.
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
install: install-verbs
install-verbs: all
	install -d $(DESTDIR)$(LIBDIR)/vrdma $(DESTDIR)$(BINDIR) $(DESTDIR)$(TMPFILESDIR)
	install -m 755 $(VERBS_SO) $(VERBS_DV_SOS) $(RDMACM_SO) $(DESTDIR)$(LIBDIR)/vrdma/
	install -m 755 $(VRDMA_RUN) $(DESTDIR)$(BINDIR)/
	install -m 644 verbs/tmpfiles.conf $(DESTDIR)$(TMPFILESDIR)/vrdma-verbs.conf

uninstall: uninstall-verbs
uninstall-verbs:
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/vrdma/,$(notdir $(VERBS_SO) $(VERBS_DV_SOS) $(RDMACM_SO)))
	-rmdir $(DESTDIR)$(LIBDIR)/vrdma
	rm -f $(DESTDIR)$(BINDIR)/$(notdir $(VRDMA_RUN))
	rm -f $(DESTDIR)$(TMPFILESDIR)/vrdma-verbs.conf
