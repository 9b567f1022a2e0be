# SPDX-License-Identifier: MIT
# vrdma: one non-recursive Makefile.  Each folder is one job:
#   include/      public headers: the API (vrdma.h, coll.h) and the wire contract (wire.h)
#   common/       small helpers shared by both halves (ring indexes, logging)
#   platform/     the seam: Xen or plain host (grants, channels, xenstore keys)
#   frontend/     guest half of the split driver (inside libvrdma)
#   libvrdma/     the guest API library
#   backend/      dom0 half: checks and executes guest requests
#   dom0-daemon/  vrdmad (event loop hosting the backends) and vrdmactl
#   guest-tests/  bw and lat
#   bench/        reference benchmarks (memcpy, TCP, shared memory)
#   tests/        Check suites and integration tests
#   scripts/      demo, bench and dependency scripts
#   docs/         protocol documentation and man pages
#
# make [V=1] [WERROR=1] [SANITIZE=1]; make check | check-unit | check-pkg |
# check-systemd | check-xen | demo | demo-host | bench; make install |
# uninstall [PREFIX=/usr/local] [DESTDIR=]

PREFIX   ?= /usr/local
DESTDIR  ?=
BINDIR   ?= $(PREFIX)/bin
SBINDIR  ?= $(PREFIX)/sbin
# A /usr install goes where the distribution's libraries are: Debian's
# multiarch directory (the packages' layout, docs/install.md).
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
ifeq ($(PREFIX)$(MULTIARCH:%=x),/usrx)
LIBDIR   ?= $(PREFIX)/lib/$(MULTIARCH)
else
LIBDIR   ?= $(PREFIX)/lib
endif
INCDIR   ?= $(PREFIX)/include
MANDIR   ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system

CC       ?= cc
comma    := ,
SO_MAJOR := 1
SO_VER   := 1.2.0
# The release: common/version.h is the one place it is written.
VERSION  := $(shell sed -n 's/^\#define VRDMA_VERSION[^"]*"\(.*\)"/\1/p' common/version.h)

ifeq ($(SANITIZE),1)
B        ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
B        ?= build
SANFLAGS :=
endif

WARN     := -Wall -Wextra -Wmissing-prototypes -Wshadow -Wformat=2 -Wwrite-strings
ifeq ($(WERROR),1)
WARN     += -Werror
endif
CFLAGS   ?= -O2 -g
ALLCFLAGS = -std=gnu11 -fPIC -D_GNU_SOURCE $(WARN) $(SANFLAGS) $(CPPFLAGS) $(CFLAGS) \
	    -Iinclude -Icommon -Iplatform -Ibench -MMD -MP $(JSON_CFLAGS) $(INIH_CFLAGS)
LDFLAGS  ?=
ALLLDFLAGS = $(SANFLAGS) $(LDFLAGS)
RPATH    := -Wl,-rpath,'$$ORIGIN/../lib'
# Xen platform (platform/xen_*.c) when libxen-dev is there; xengntshr is
# in libxengnttab.  --as-needed: programs that never reach the seam do not
# depend on the Xen libraries.
XEN_PCS  := xenstore xengnttab xenevtchn
XEN_LIBS := $(shell pkg-config --libs $(XEN_PCS) 2>/dev/null)
# The RDMA-device path (backend/device/, backend/cm/cm_r*.c): rdma-core's
# libibverbs + librdmacm (libibverbs-dev librdmacm-dev); --as-needed keeps
# them out of programs that never touch the backend.
RDMA_PCS := libibverbs librdmacm
RDMA_LIBS := $(shell pkg-config --libs $(RDMA_PCS) 2>/dev/null || echo -libverbs -lrdmacm)
# JSON for vrdmad's and vrdmactl's -j output (libjson-c-dev): built by a
# library, so names are escaped; --as-needed keeps it out of libvrdma.
JSON_PC  := json-c
JSON_CFLAGS := $(shell pkg-config --cflags $(JSON_PC) 2>/dev/null)
JSON_LIBS := $(shell pkg-config --libs $(JSON_PC) 2>/dev/null || echo -ljson-c)
# vrdmad.conf's parser (libinih-dev, issue 13): a kept INI reader instead
# of our own; --as-needed keeps it to vrdmad.
INIH_PC  := inih
INIH_CFLAGS := $(shell pkg-config --cflags $(INIH_PC) 2>/dev/null)
INIH_LIBS := $(shell pkg-config --libs $(INIH_PC) 2>/dev/null || echo -linih)
LIBS     := -pthread $(if $(XEN_LIBS),-Wl$(comma)--as-needed $(XEN_LIBS) -Wl$(comma)--no-as-needed) \
	    -Wl$(comma)--as-needed $(RDMA_LIBS) $(JSON_LIBS) $(INIH_LIBS) -Wl$(comma)--no-as-needed

ifeq ($(V),1)
Q :=
else
Q := @
endif

CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)

# ---- sources by role ----
COMMON_SRCS     := $(wildcard common/*.c)
# platform/*_common.c serve both roles; no libxen-dev: no xen_*.c.
PLAT_NO_XEN     := $(if $(XEN_LIBS),,platform/xen_%)
PLAT_GUEST_SRCS := platform/vplat.c $(filter-out $(PLAT_NO_XEN),$(wildcard platform/*_common.c platform/*_guest.c))
PLAT_DOM0_SRCS  := platform/vplat.c $(filter-out $(PLAT_NO_XEN),$(wildcard platform/*_common.c platform/*_dom0.c))
FRONTEND_SRCS   := $(wildcard frontend/*.c)
LIBVRDMA_SRCS   := $(wildcard libvrdma/*.c libvrdma/coll/*.c) common/coll/vcoll_reduce.c
BACKEND_SRCS    := $(wildcard backend/*.c backend/*/*.c) common/coll/vcoll_reduce.c
VRDMACTL_SRCS   := $(wildcard dom0-daemon/vrdmactl*.c)
VRDMAD_SRCS     := $(filter-out $(VRDMACTL_SRCS),$(wildcard dom0-daemon/*.c))
GT_MAIN_SRCS    := guest-tests/bw.c guest-tests/lat.c
GT_COMMON_SRCS  := $(filter-out $(GT_MAIN_SRCS),$(wildcard guest-tests/*.c)) bench/perfstat.c
REFBENCH_SRCS   := bench/refbench.c bench/perfstat.c $(wildcard bench/rb_*.c)

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

LIB_OBJS     := $(call obj,$(COMMON_SRCS) $(PLAT_GUEST_SRCS) $(FRONTEND_SRCS) $(LIBVRDMA_SRCS))
VRDMAD_OBJS  := $(call obj,$(COMMON_SRCS) $(PLAT_DOM0_SRCS) $(BACKEND_SRCS) $(VRDMAD_SRCS))
VRDMACTL_OBJS:= $(call obj,$(COMMON_SRCS) $(VRDMACTL_SRCS))
GT_COMMON_OBJS := $(call obj,$(GT_COMMON_SRCS))

LIBSO        := $(B)/lib/libvrdma.so.$(SO_VER)
VRDMAD       := $(B)/sbin/vrdmad
VRDMACTL     := $(B)/sbin/vrdmactl
GT_BINS      := $(B)/bin/vrdma-bw $(B)/bin/vrdma-lat
GT_INST_BINS := $(B)/inst/bin/vrdma-bw $(B)/inst/bin/vrdma-lat
VRDMAD_UNIT  := $(B)/vrdmad.service
MANS         := $(wildcard docs/man/*.[13578])
BENCH_BINS   := $(B)/bin/vrdma-refbench $(B)/bin/vrdma-verbs-cost $(B)/bin/vrdma-coll-bench

# tests/*.mk append to CHECK_BINS (Check suites run by check-unit).
CHECK_BINS   :=
ITEST_BINS   :=

.PHONY: all clean install uninstall check check-unit check-soak demo demo-host bench bench-cost \
	bench-projection bench-scale bench-coll deps FORCE
all: $(LIBSO) $(VRDMAD) $(VRDMACTL) $(GT_BINS) $(GT_INST_BINS) $(BENCH_BINS) \
	$(B)/vrdma.pc $(VRDMAD_UNIT)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALLCFLAGS) $(EXTRA_CFLAGS_$(firstword $(subst /, ,$<))) -c -o $@ $<

$(LIBSO): $(LIB_OBJS) libvrdma/libvrdma.map
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libvrdma.so.$(SO_MAJOR) \
		-Wl,--version-script=libvrdma/libvrdma.map $(ALLLDFLAGS) -o $@ $(LIB_OBJS) $(LIBS)
	$(Q)ln -sf libvrdma.so.$(SO_VER) $(B)/lib/libvrdma.so.$(SO_MAJOR)
	$(Q)ln -sf libvrdma.so.$(SO_MAJOR) $(B)/lib/libvrdma.so

$(VRDMAD): $(VRDMAD_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(LIBS)

$(VRDMACTL): $(VRDMACTL_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(LIBS)

# Reached only through the pattern rules below: without this make deletes
# them as intermediates and relinks at the next `make`.
.SECONDARY: $(call obj,$(GT_MAIN_SRCS)) $(GT_COMMON_OBJS)

# The build tree's copy finds libvrdma through RUNPATH $ORIGIN/../lib, so it
# runs in place and on the rigs' images; the installed copy ($(B)/inst)
# has no RUNPATH: libvrdma is in $(LIBDIR), where the loader looks.
$(B)/bin/vrdma-%: $(B)/obj/guest-tests/%.o $(GT_COMMON_OBJS) $(LIBSO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma $(RPATH) $(LIBS) -lm

$(B)/inst/bin/vrdma-%: $(B)/obj/guest-tests/%.o $(GT_COMMON_OBJS) $(LIBSO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma $(LIBS) -lm

$(B)/bin/vrdma-refbench: $(call obj,$(REFBENCH_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(LIBS) -lm

# A plain verbs program (scripts/bench-cost.sh runs it through vrdma-run):
# built against the installed libibverbs, as any verbs program is.
$(B)/bin/vrdma-verbs-cost: $(B)/obj/bench/verbs_cost.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ -libverbs

# The collectives' reduction kernels beside memcpy (timed), and their
# instructions per element (scripts/bench-cost.sh).
$(B)/bin/vrdma-coll-bench: $(call obj,bench/coll_bench.c common/coll/vcoll_reduce.c)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^

# Files that name install paths are remade when a path changes (`make`,
# then `make install PREFIX=/usr`): the paths are kept in a file that is
# rewritten only when they differ, and those files depend on it.
INSTALL_VARS := $(PREFIX) $(BINDIR) $(SBINDIR) $(LIBDIR) $(INCDIR) $(SYSCONFDIR) $(VERSION)
$(B)/install-vars: FORCE
	@mkdir -p $(dir $@)
	$(Q)echo '$(INSTALL_VARS)' | cmp -s - $@ || echo '$(INSTALL_VARS)' > $@

$(B)/vrdma.pc: libvrdma/vrdma.pc.in $(B)/install-vars
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

# The configuration file's default path follows SYSCONFDIR.  Its objects
# depend on a file rewritten while the Makefile is read, only when the
# path changed (not a FORCE rule as install-vars: a compile is no cheap
# GEN, and `make -n` must not list one that would not run).
VD_CONF_DEF := $(SYSCONFDIR)/vrdma/vrdmad.conf
$(shell mkdir -p $(B) && { echo '$(VD_CONF_DEF)' | cmp -s - $(B)/conf-path || \
	echo '$(VD_CONF_DEF)' > $(B)/conf-path; })
$(B)/obj/dom0-daemon/conf.o $(B)/obj/dom0-daemon/vrdmad.o: $(B)/conf-path
$(B)/obj/dom0-daemon/conf.o $(B)/obj/dom0-daemon/vrdmad.o: \
	CPPFLAGS += -DVD_CONF_DEF='"$(VD_CONF_DEF)"'

$(VRDMAD_UNIT): dom0-daemon/vrdmad.service.in $(B)/install-vars
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< > $@

-include $(wildcard tests/*.mk)
include verbs/verbs.mk rdmacm/rdmacm.mk
include mpi/mpi.mk

# ---- tests ----
check-unit: all $(CHECK_BINS) $(ITEST_BINS)
	$(Q)tests/docs.sh
	$(Q)scripts/run-unit-tests.sh $(B) $(CHECK_BINS)

# The package build and the Xen rig: after the unit tests, never beside
# them (make -j).
check: check-unit
	$(Q)$(MAKE) --no-print-directory check-pkg
	$(Q)$(MAKE) --no-print-directory check-systemd
	$(Q)$(MAKE) --no-print-directory check-xen
	$(Q)$(MAKE) --no-print-directory check-cluster

# Each rig suite SOAK_N times (10) with SOAK_LOAD busy loops (1) beside:
# failures per check (scripts/soak.sh; SOAK_RIGS narrows it).
check-soak: $(XEN_RIG_DEPS) $(XCLUSTER_DEPS) $(CLUSTER_DEPS)
	$(Q)scripts/soak.sh $(B) $(SOAK_RIGS)

# The main job: vrdma-bw between PV domUs of two Xen nodes (tests/cluster.mk).
demo: demo-cluster

demo-host: all
	$(Q)scripts/demo-host.sh $(B)

bench: all
	$(Q)scripts/bench.sh $(B)
	$(Q)scripts/bench-cost.sh $(B)

# Instructions per WR (callgrind): deterministic, for judging a change.
bench-cost: all
	$(Q)scripts/bench-cost.sh $(B)

# One dom0 core's WR rate, hence MiB/s on 10/25/100 GbE, from this host's
# costs per WR, measured twice (docs/performance.md).
bench-projection: all
	$(Q)scripts/projection.sh $(B)

# 1, 8, 64 and 128 pairs of guests on one node at once (plain host).
bench-scale: all
	$(Q)scripts/bench-scale.sh $(B)

# MPI_Allreduce and MPI_Bcast of plain MPI ranks through vrdma-run --coll:
# dom0's offload, the ranks' fallback and Open MPI's own, 2, 4, 8 ranks.
bench-coll: all
	$(Q)scripts/bench-coll.sh $(B)

deps:
	$(Q)scripts/install-deps.sh

# ---- install ----
# The configuration file is installed once: a reinstall keeps an edited one
# (uninstall removes it only when it is still the shipped text).
install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(INCDIR)/vrdma $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/default \
		$(DESTDIR)$(SYSCONFDIR)/vrdma
	install -m 755 $(LIBSO) $(DESTDIR)$(LIBDIR)/
	ln -sf libvrdma.so.$(SO_VER) $(DESTDIR)$(LIBDIR)/libvrdma.so.$(SO_MAJOR)
	ln -sf libvrdma.so.$(SO_MAJOR) $(DESTDIR)$(LIBDIR)/libvrdma.so
	install -m 755 $(VRDMAD) $(VRDMACTL) $(DESTDIR)$(SBINDIR)/
	install -m 755 $(GT_INST_BINS) $(DESTDIR)$(BINDIR)/
	install -m 644 include/vrdma/vrdma.h include/vrdma/coll.h include/vrdma/wire.h $(DESTDIR)$(INCDIR)/vrdma/
	install -m 644 $(B)/vrdma.pc $(DESTDIR)$(PKGCONFIGDIR)/
	install -m 644 $(VRDMAD_UNIT) $(DESTDIR)$(SYSTEMDUNITDIR)/
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/vrdmad ] || \
		install -m 644 dom0-daemon/vrdmad.default $(DESTDIR)$(SYSCONFDIR)/default/vrdmad
	[ -e $(DESTDIR)$(SYSCONFDIR)/vrdma/vrdmad.conf ] || \
		install -m 644 dom0-daemon/vrdmad.conf $(DESTDIR)$(SYSCONFDIR)/vrdma/vrdmad.conf
	install -m 644 $(filter %.1,$(MANS)) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(filter %.3,$(MANS)) $(DESTDIR)$(MANDIR)/man3/
	install -m 644 $(filter %.5,$(MANS)) $(DESTDIR)$(MANDIR)/man5/
	install -m 644 $(filter %.7,$(MANS)) $(DESTDIR)$(MANDIR)/man7/
	install -m 644 $(filter %.8,$(MANS)) $(DESTDIR)$(MANDIR)/man8/

# What install wrote, by the same names; directories only when empty.
uninstall:
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/,libvrdma.so.$(SO_VER) \
		libvrdma.so.$(SO_MAJOR) libvrdma.so)
	rm -f $(addprefix $(DESTDIR)$(SBINDIR)/,$(notdir $(VRDMAD) $(VRDMACTL)))
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(GT_INST_BINS)))
	rm -f $(DESTDIR)$(INCDIR)/vrdma/vrdma.h $(DESTDIR)$(INCDIR)/vrdma/coll.h $(DESTDIR)$(INCDIR)/vrdma/wire.h
	-rmdir $(DESTDIR)$(INCDIR)/vrdma
	rm -f $(DESTDIR)$(PKGCONFIGDIR)/vrdma.pc
	rm -f $(DESTDIR)$(SYSTEMDUNITDIR)/$(notdir $(VRDMAD_UNIT))
	if cmp -s dom0-daemon/vrdmad.default $(DESTDIR)$(SYSCONFDIR)/default/vrdmad; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/default/vrdmad; fi
	if cmp -s dom0-daemon/vrdmad.conf $(DESTDIR)$(SYSCONFDIR)/vrdma/vrdmad.conf; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/vrdma/vrdmad.conf; \
		rmdir $(DESTDIR)$(SYSCONFDIR)/vrdma 2>/dev/null || true; fi
	rm -f $(foreach m,$(MANS),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))

# make check-systemd's root file system (BUILD/systemd) is root's: a user
# removes it through sudo.
clean:
	@for d in build/systemd build-san/systemd build-fuzz/systemd; do \
		[ -d $$d ] && [ "$$(id -u)" != 0 ] || continue; \
		[ -n "$$(find $$d ! -user "$$(id -u)" -print -quit 2>/dev/null)" ] || continue; \
		echo "sudo rm -rf $$d   (make check-systemd's root file system: root's files)"; \
		sudo rm -rf $$d || { echo "make clean: $$d holds root's files: sudo rm -rf $$d" >&2; exit 1; }; \
	done
	rm -rf build build-san build-fuzz

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
