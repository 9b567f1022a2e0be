# SPDX-License-Identifier: MIT
# libFuzzer harnesses (tests/fuzz/, issue 12): one per parser of bytes a
# guest or a remote node controls.  clang with ASan + UBSan, objects of
# their own in build-fuzz/.  `make fuzz` (scripts/fuzz.sh) builds them
# and runs each for FUZZ_TIME seconds.
FUZZ_CC   ?= clang
FUZZ_TIME ?= 60
FUZZ_MERGE ?= 0
FZ        := build-fuzz
FUZZ_SAN  := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	     -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=gnu11 -D_GNU_SOURCE $(WARN) $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
	      -O1 -g -Iinclude -Icommon -Iplatform -Ibackend -Itests -MMD -MP
fzobj = $(patsubst %.c,$(FZ)/obj/%.o,$(1))

FUZZ_NAMES := ring xsvalue hostmsg hello udhdr
FUZZ_BINS  := $(addprefix $(FZ)/fuzz_,$(FUZZ_NAMES))

$(FZ)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $<")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FZ)/fuzz_%:
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $^ $(LIBS)

$(FZ)/fuzz_ring: $(call fzobj,tests/fuzz/fuzz_ring.c tests/stub_plat.c $(BACKEND_SRCS) common/log.c common/vlt.c)
$(FZ)/fuzz_xsvalue: $(call fzobj,tests/fuzz/fuzz_xsvalue.c tests/stub_plat.c $(BACKEND_SRCS) common/log.c common/vlt.c)
$(FZ)/fuzz_hostmsg: $(call fzobj,tests/fuzz/fuzz_hostmsg.c platform/vplat.c \
		$(wildcard platform/host_*dom0.c) platform/host_chan_common.c \
		platform/keystore_dom0.c common/log.c)
$(FZ)/fuzz_hello: $(call fzobj,tests/fuzz/fuzz_hello.c backend/device/verbs_map.c)
$(FZ)/fuzz_udhdr: $(call fzobj,tests/fuzz/fuzz_udhdr.c backend/device/verbs_udhdr.c)

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)

# Skips (exit 0) without clang's libFuzzer; non-zero on any crash.
fuzz:
	$(Q)MAKE="$(MAKE)" FUZZ_CC="$(FUZZ_CC)" FUZZ_TIME="$(FUZZ_TIME)" \
		FUZZ_MERGE="$(FUZZ_MERGE)" scripts/fuzz.sh $(FZ) $(FUZZ_NAMES)

-include $(shell find $(FZ)/obj -name '*.d' 2>/dev/null)
