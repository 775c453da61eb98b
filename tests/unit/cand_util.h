/*
 * Helpers the unit tests of the eviction streams share: building
 * candidate views by hand.
 */
#ifndef TEST_CAND_UTIL_H
#define TEST_CAND_UTIL_H

#include <stdbool.h>
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

/* Whether record i of a and record j of b name the same copy: tenant, key, peer, tier. */
static inline bool
same_copy(const struct mc_cand_view *a, uint32_t i, const struct mc_cand_view *b, uint32_t j)
{
	const struct mc_cand *x = &a->c[i], *y = &b->c[j];

	return x->key_len == y->key_len &&
	       memcmp(mc_cand_key(a, x), mc_cand_key(b, y), x->key_len) == 0 &&
	       strcmp(mc_cand_name_str(a, x->tenant), mc_cand_name_str(b, y->tenant)) == 0 &&
	       strcmp(mc_cand_name_str(a, x->peer), mc_cand_name_str(b, y->peer)) == 0 &&
	       strcmp(mc_cand_name_str(a, x->tier), mc_cand_name_str(b, y->tier)) == 0;
}

#endif
