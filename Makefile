# SPDX-License-Identifier: MIT
# vrdma: one non-recursive Makefile.  Each folder is one job:
#   include/      public headers: the API (vrdma.h) and the wire contract (wire.h)
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
# make [V=1] [WERROR=1] [SANITIZE=1]; make check | check-unit | check-xen | demo | demo-host | bench

PREFIX   ?= /usr/local
DESTDIR  ?=
BINDIR   ?= $(PREFIX)/bin
SBINDIR  ?= $(PREFIX)/sbin
LIBDIR   ?= $(PREFIX)/lib
INCDIR   ?= $(PREFIX)/include
MANDIR   ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig

CC       ?= cc
comma    := ,
SO_MAJOR := 1
SO_VER   := 1.0.0

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
ALLCFLAGS = -std=gnu11 -fPIC -D_GNU_SOURCE $(WARN) $(SANFLAGS) $(CFLAGS) \
	    -Iinclude -Icommon -Iplatform -Ibench -MMD -MP $(JSON_CFLAGS)
LDFLAGS  ?=
ALLLDFLAGS = $(SANFLAGS) $(LDFLAGS)
RPATH    := -Wl,-rpath,'$$ORIGIN/../lib'
# Xen platform (platform/xen_*.c) when libxen-dev is there; xengntshr is
# in libxengnttab.  --as-needed: programs that never reach the seam do not
# depend on the Xen libraries.
XEN_PCS  := xenstore xengnttab xenevtchn
XEN_LIBS := $(shell pkg-config --libs $(XEN_PCS) 2>/dev/null)
# The RDMA-device path (backend/*verbs*, backend/cm/cm_r*.c): rdma-core's
# libibverbs + librdmacm (libibverbs-dev librdmacm-dev); --as-needed keeps
# them out of programs that never touch the backend.
RDMA_PCS := libibverbs librdmacm
RDMA_LIBS := $(shell pkg-config --libs $(RDMA_PCS) 2>/dev/null || echo -libverbs -lrdmacm)
# JSON for vrdmad's and vrdmactl's -j output (libjson-c-dev): built by a
# library, so names are escaped; --as-needed keeps it out of libvrdma.
JSON_PC  := json-c
JSON_CFLAGS := $(shell pkg-config --cflags $(JSON_PC) 2>/dev/null)
JSON_LIBS := $(shell pkg-config --libs $(JSON_PC) 2>/dev/null || echo -ljson-c)
LIBS     := -pthread $(if $(XEN_LIBS),-Wl$(comma)--as-needed $(XEN_LIBS) -Wl$(comma)--no-as-needed) \
	    -Wl$(comma)--as-needed $(RDMA_LIBS) $(JSON_LIBS) -Wl$(comma)--no-as-needed

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
LIBVRDMA_SRCS   := $(wildcard libvrdma/*.c)
BACKEND_SRCS    := $(wildcard backend/*.c backend/*/*.c)
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
BENCH_BINS   := $(B)/bin/vrdma-refbench

# tests/*.mk append to CHECK_BINS (Check suites run by check-unit).
CHECK_BINS   :=
ITEST_BINS   :=

.PHONY: all clean install check check-unit demo demo-host bench bench-cost bench-scale deps
all: $(LIBSO) $(VRDMAD) $(VRDMACTL) $(GT_BINS) $(BENCH_BINS) $(B)/vrdma.pc

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

# -V of the programs.
$(B)/obj/dom0-daemon/vrdmactl.o $(B)/obj/dom0-daemon/vrdmad.o: ALLCFLAGS += -DVRDMA_VERSION='"$(SO_VER)"'

$(VRDMAD): $(VRDMAD_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(LIBS)

$(VRDMACTL): $(VRDMACTL_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(LIBS)

$(B)/bin/vrdma-%: $(B)/obj/guest-tests/%.o $(GT_COMMON_OBJS) $(LIBSO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $(filter %.o,$^) -L$(B)/lib -lvrdma $(RPATH) $(LIBS) -lm

$(B)/bin/vrdma-refbench: $(call obj,$(REFBENCH_SRCS))
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALLLDFLAGS) -o $@ $^ $(LIBS) -lm

$(B)/vrdma.pc: libvrdma/vrdma.pc.in Makefile
	@mkdir -p $(dir $@)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(SO_VER)|' $< > $@

-include $(wildcard tests/*.mk)
include verbs/verbs.mk rdmacm/rdmacm.mk

# ---- tests ----
check-unit: all $(CHECK_BINS) $(ITEST_BINS)
	$(Q)scripts/run-unit-tests.sh $(B) $(CHECK_BINS)

# The Xen rig boots QEMU: after the unit tests, never beside them (make -j).
check: check-unit
	$(Q)$(MAKE) --no-print-directory check-xen
	$(Q)$(MAKE) --no-print-directory check-cluster

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

# 1, 8, 64 and 128 pairs of guests on one node at once (plain host).
bench-scale: all
	$(Q)scripts/bench-scale.sh $(B)

deps:
	$(Q)scripts/install-deps.sh

# ---- install ----
install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(INCDIR)/vrdma $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(MANDIR)/man8
	install -m 755 $(LIBSO) $(DESTDIR)$(LIBDIR)/
	ln -sf libvrdma.so.$(SO_VER) $(DESTDIR)$(LIBDIR)/libvrdma.so.$(SO_MAJOR)
	ln -sf libvrdma.so.$(SO_MAJOR) $(DESTDIR)$(LIBDIR)/libvrdma.so
	install -m 755 $(VRDMAD) $(VRDMACTL) $(DESTDIR)$(SBINDIR)/
	install -m 755 $(GT_BINS) $(DESTDIR)$(BINDIR)/
	install -m 644 include/vrdma/vrdma.h include/vrdma/wire.h $(DESTDIR)$(INCDIR)/vrdma/
	install -m 644 $(B)/vrdma.pc $(DESTDIR)$(PKGCONFIGDIR)/
	install -m 644 $(wildcard docs/man/*.1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(wildcard docs/man/*.3) $(DESTDIR)$(MANDIR)/man3/
	install -m 644 $(wildcard docs/man/*.7) $(DESTDIR)$(MANDIR)/man7/
	install -m 644 $(wildcard docs/man/*.8) $(DESTDIR)$(MANDIR)/man8/

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
