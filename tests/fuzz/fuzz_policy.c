/*
 * libFuzzer target for the policy parser: whatever the text, it parses
 * or is refused with a message naming a line, and a refused policy
 * leaves nothing behind. Build and run: make fuzz (needs clang).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mc/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mc_policy p;
	struct mc_err err;

	if (mc_policy_parse((const char *)data, size, "fuzz", &p, &err) != 0) {
		/* every refusal of a text within the size cap names its line */
		if (size <= MC_POLICY_MAX_BYTES && strncmp(err.msg, "line ", 5) != 0)
			abort();
	}
	mc_policy_free(&p);
	return 0;
}
