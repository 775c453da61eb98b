/*
 * libFuzzer target for the wire pre-pass and decoder: whatever the bytes,
 * mc_wire_check must never read past them or claim more than it was
 * given, and a WHOLE message must decode or be refused without crashing.
 * Build and run: make fuzz (needs clang).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mc/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		size_t len = 0;
		const char *why = NULL;
		int v = mc_wire_check(data + off, size - off, 1 << 20, &len, &why);
		struct mc_msg m;
		struct mc_err err;

		if (v != MC_WIRE_WHOLE)
			break;
		if (len == 0 || len > size - off)
			abort();
		if (mc_msg_decode(&m, data + off, len, &err) == 0)
			mc_msg_release(&m);
		off += len;
	}
	return 0;
}
