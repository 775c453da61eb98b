/* Unit tests for the chain key convention (mc_key_chain_parent, mc/client.h). */
#include <string.h>

#include "mc/client.h"
#include "tap.h"

static const char *
parent_of(const char *key, int *rc)
{
	static char out[64];
	size_t n = 0;

	*rc = mc_key_chain_parent(key, strlen(key), out, sizeof(out) - 1, &n);
	out[*rc == 1 ? n : 0] = '\0';
	return out;
}

int
main(void)
{
	char tiny[4], out[16];
	size_t n;
	int rc;

	TAP_OK(strcmp(parent_of("conv7#3", &rc), "conv7#2") == 0 && rc == 1,
	       "chain: NAME#3 follows NAME#2");
	TAP_OK(strcmp(parent_of("a#b#10", &rc), "a#b#9") == 0 && rc == 1,
	       "chain: the last # counts, and 10 follows 9");
	parent_of("conv7#0", &rc);
	TAP_OK(rc == 0, "chain: NAME#0 is a head");
	parent_of("plain-key", &rc);
	TAP_OK(rc == 0, "chain: a key without # is outside the convention");
	parent_of("x#01", &rc);
	TAP_OK(rc == 0, "chain: leading zeros are outside the convention");
	parent_of("x#1a", &rc);
	TAP_OK(rc == 0, "chain: a suffix that is not a number is outside it");
	parent_of("x#", &rc);
	TAP_OK(rc == 0, "chain: an empty number is outside it");
	parent_of("x#99999999999999999999999", &rc);
	TAP_OK(rc == 0, "chain: a number past 64 bits is outside it");
	TAP_OK(mc_key_chain_parent("longname#5", 10, tiny, sizeof(tiny), &n) == -1,
	       "chain: a buffer too small is an error, not a cut key");
	TAP_OK(mc_key_chain_parent("a\0b#10", 6, out, sizeof(out), &n) == 1 && n == 5 &&
		       memcmp(out, "a\0b#9", 5) == 0,
	       "chain: a key is bytes: a NUL in NAME stays, and the length is told");
	TAP_OK(mc_key_chain_parent("k#12345", 4, out, sizeof(out), &n) == 1 && n == 4 &&
		       memcmp(out, "k#11", 4) == 0,
	       "chain: only key_len bytes are read");
	return tap_done();
}
