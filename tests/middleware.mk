# SPDX-License-Identifier: MIT
# How middleware finds vrdma0 through vrdma-run (tests/middleware.sh):
# the sysfs view of vrdma's libibverbs against ibv_devinfo -v, its sweep,
# the /dev/infiniband node as the package makes it (as root), and
# Debian's UCX, libfabric and Open MPI on it.
.PHONY: check-middleware
check-middleware: all
	$(Q)tests/middleware.sh $(B)
check-unit: check-middleware
