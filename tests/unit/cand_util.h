/*
 * Helpers the unit tests of the eviction streams share: building
 * candidate views by hand.
 */
#ifndef TEST_CAND_UTIL_H
#define TEST_CAND_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/candidates.h"

/* Intern s into v, or end the test run: a view that cannot be built is a broken test. */
static inline uint32_t
name(struct mc_cand_view *v, const char *s)
{
	struct mc_err err;
	int64_t id = mc_cand_name(v, s, strlen(s), &err);

	if (id < 0) {
		fprintf(stderr, "cannot intern '%s': %s\n", s, err.msg);
		exit(1);
	}
	return (uint32_t)id;
}

#endif
