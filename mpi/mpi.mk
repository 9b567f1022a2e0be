# SPDX-License-Identifier: MIT
# mpi/: libvrdma-mpi.so, MPI's collectives on vrdma teams for unmodified
# MPI programs: a PMPI wrapper that `vrdma-run --coll` preloads
# (docs/man/libvrdma-mpi.7).  One build per MPI whose compiler is here,
# as optional as the Xen platform: Open MPI's (libmpi.so.40) in the
# private libdir, MPICH's (libmpich.so.12) in its mpich/ folder.  Each
# compiler wrapper runs our $(CC) (OMPI_CC, MPICH_CC) with our flags.
MPI_SRCS      := $(wildcard mpi/*.c)
# Open MPI's wrapper by its own name; plain mpicc only if it is Open MPI's.
MPI_OMPI_CC   := $(shell command -v mpicc.openmpi 2>/dev/null || \
		   { mpicc --showme:version >/dev/null 2>&1 && command -v mpicc; })
MPI_MPICH_CC  := $(shell command -v mpicc.mpich 2>/dev/null)
MPI_OMPI_SO   := $(VERBS_DIR)/libvrdma-mpi.so
MPI_MPICH_SO  := $(VERBS_DIR)/mpich/libvrdma-mpi.so
MPI_SOS       := $(if $(MPI_OMPI_CC),$(MPI_OMPI_SO)) $(if $(MPI_MPICH_CC),$(MPI_MPICH_SO))
MPI_CC_ompi   := OMPI_CC="$(CC)" $(MPI_OMPI_CC)
MPI_CC_mpich  := MPICH_CC="$(CC)" $(MPI_MPICH_CC)
mpi_objs       = $(patsubst mpi/%.c,$(B)/obj/mpi/$(1)/%.o,$(MPI_SRCS))

all: $(MPI_SOS)

$(B)/obj/mpi/ompi/%.o: mpi/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MPICC   $@")
	$(Q)$(MPI_CC_ompi) $(ALLCFLAGS) -c -o $@ $<

$(B)/obj/mpi/mpich/%.o: mpi/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MPICC   $@")
	$(Q)$(MPI_CC_mpich) $(ALLCFLAGS) -c -o $@ $<

# libvrdma is one directory up in the build tree and installed alike
# ($(LIBDIR)/vrdma/..), two from mpich/.
MPI_LINK = -shared -Wl,-soname,libvrdma-mpi.so -Wl,-z,defs \
	-Wl,--version-script=mpi/libvrdma-mpi.map $(ALLLDFLAGS) -o $@ $(filter %.o,$^) \
	-L$(B)/lib -lvrdma -pthread
$(MPI_OMPI_SO): $(call mpi_objs,ompi) mpi/libvrdma-mpi.map $(LIBSO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(MPI_CC_ompi) $(MPI_LINK) -Wl,-rpath,'$$ORIGIN/..'

$(MPI_MPICH_SO): $(call mpi_objs,mpich) mpi/libvrdma-mpi.map $(LIBSO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(MPI_CC_mpich) $(MPI_LINK) -Wl,-rpath,'$$ORIGIN/../..'

# tests/mpi_coll_check.c through vrdma-run --coll, offloaded, in the
# guests and off (tests/middleware.sh; part of check-middleware).
.PHONY: check-mpi-coll install-mpi uninstall-mpi
check-mpi-coll: all
	$(Q)tests/middleware.sh $(B) ompi_coll_4 mpich_coll_4

install: install-mpi
install-mpi: all
	$(if $(MPI_OMPI_CC),install -d $(DESTDIR)$(LIBDIR)/vrdma)
	$(if $(MPI_OMPI_CC),install -m 755 $(MPI_OMPI_SO) $(DESTDIR)$(LIBDIR)/vrdma/)
	$(if $(MPI_MPICH_CC),install -d $(DESTDIR)$(LIBDIR)/vrdma/mpich)
	$(if $(MPI_MPICH_CC),install -m 755 $(MPI_MPICH_SO) $(DESTDIR)$(LIBDIR)/vrdma/mpich/)

# (before uninstall-verbs, which removes the directory when it is empty)
uninstall: uninstall-mpi
uninstall-verbs: uninstall-mpi
uninstall-mpi:
	rm -f $(DESTDIR)$(LIBDIR)/vrdma/libvrdma-mpi.so $(DESTDIR)$(LIBDIR)/vrdma/mpich/libvrdma-mpi.so
	-rmdir $(DESTDIR)$(LIBDIR)/vrdma/mpich $(DESTDIR)$(LIBDIR)/vrdma 2>/dev/null
