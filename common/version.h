// SPDX-License-Identifier: MIT
/*
 * The release, named in one place: every program prints it (--version),
 * the Makefile reads it for vrdma.pc and vrdma-run, and debian/changelog
 * must carry the same upstream version (tests/pkg.sh checks).
 */
#ifndef VRDMA_VERSION_H
#define VRDMA_VERSION_H

#define VRDMA_VERSION	"1.2.0"

#endif
