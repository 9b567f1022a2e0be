/* SPDX-License-Identifier: MIT */
/* A Check suite's main: run it, free the runner, exit 1 if any failed. */
#ifndef VRDMA_TESTS_CK_RUN_H
#define VRDMA_TESTS_CK_RUN_H

#include <check.h>
#include <stdlib.h>

static inline int ck_run(SRunner *sr)
{
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* VRDMA_TESTS_CK_RUN_H */
