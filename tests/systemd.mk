# SPDX-License-Identifier: MIT
# make check-systemd (tests/systemd.sh, issue 13): the Debian packages
# installed with dpkg -i on a fresh Debian 12 (mmdebstrap, minbase and
# systemd), booted under QEMU TCG with systemd as PID 1; vrdmad checked as
# its unit runs it (ready, ping, guests, restart keeps settings, reload,
# the journal's priorities, a clean stop).  Part of make check, after
# check-pkg; the root, the packages and their dependencies are kept in
# $(B)/systemd.  Needs root (runs itself through sudo).
.PHONY: check-systemd
check-systemd:
	@mkdir -p $(B)
	$(Q)tests/systemd.sh $(B)
