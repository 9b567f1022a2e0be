# SPDX-License-Identifier: MIT
# The Debian packages (tests/pkg.sh, issue 13): built by dpkg-buildpackage
# from a copy of the tree, unpacked into a throwaway root, their contents
# checked, lintian, and vrdmad run from the packaged unit's command line.
# Part of make check, after check-unit and before the QEMU rigs (it
# compiles the whole tree once more: never beside them).  The packages are
# kept in $(B)/pkg while the tree does not change (check-systemd installs
# the same ones).
.PHONY: check-pkg
check-pkg:
	@mkdir -p $(B)
	$(Q)tests/pkg.sh $(B)
