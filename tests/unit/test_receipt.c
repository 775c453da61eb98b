/* Unit tests for commit receipts (libmc/receipt.c): the MAC and the key file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "mc/receipt.h"
#include "tap.h"

static struct mc_receipt_of
of(const char *tenant, const char *key, uint64_t version, uint64_t size, uint64_t checksum)
{
	return (struct mc_receipt_of){ .tenant = tenant,
				       .tenant_len = strlen(tenant),
				       .key = key,
				       .key_len = strlen(key),
				       .version = version,
				       .size = size,
				       .checksum = checksum };
}

static void
test_fields(void)
{
	unsigned char k[MC_RECEIPT_KEY_BYTES], k2[MC_RECEIPT_KEY_BYTES], r[MC_RECEIPT_BYTES];
	struct mc_receipt_of w = of("ten-a", "obj", 3, 100, 0x1234), o;

	randombytes_buf(k, sizeof(k));
	memcpy(k2, k, sizeof(k2));
	k2[0] ^= 1;
	mc_receipt_make(k, &w, r);
	TAP_OK(mc_receipt_verify(k, &w, r), "verify: a receipt verifies what it was made for");
	o = w, o.tenant = "ten-b";
	TAP_OK(!mc_receipt_verify(k, &o, r), "verify: another tenant fails");
	o = w, o.key = "obk";
	TAP_OK(!mc_receipt_verify(k, &o, r), "verify: another key fails");
	o = w, o.version = 4;
	TAP_OK(!mc_receipt_verify(k, &o, r), "verify: another version fails");
	o = w, o.size = 101;
	TAP_OK(!mc_receipt_verify(k, &o, r), "verify: another size fails");
	o = w, o.checksum = 0x1235;
	TAP_OK(!mc_receipt_verify(k, &o, r), "verify: another checksum fails");
	TAP_OK(!mc_receipt_verify(k2, &w, r), "verify: another key file's receipt fails");
	r[MC_RECEIPT_BYTES - 1] ^= 0x80;
	TAP_OK(!mc_receipt_verify(k, &w, r), "verify: a receipt with one bit changed fails");
	/* near 2^64 the integers still count, every bit of them */
	w = of("t", "k", UINT64_MAX - 2, UINT64_MAX, UINT64_MAX);
	mc_receipt_make(k, &w, r);
	o = w, o.version = (UINT64_MAX - 2) ^ (1ull << 63);
	TAP_OK(!mc_receipt_verify(k, &o, r), "verify: the top bit of a version counts");
}

static void
test_boundaries(void)
{
	unsigned char k[MC_RECEIPT_KEY_BYTES], r[MC_RECEIPT_BYTES];
	struct mc_receipt_of a = of("ab", "c", 1, 1, 1), b = of("a", "bc", 1, 1, 1);

	randombytes_buf(k, sizeof(k));
	mc_receipt_make(k, &a, r);
	TAP_OK(!mc_receipt_verify(k, &b, r),
	       "boundary: (\"ab\",\"c\") and (\"a\",\"bc\") make different receipts");
	/* a name's bytes never pass for the integers after it */
	a = of("t", "k\x01", 0, 0, 0);
	b = of("t", "k", 1, 0, 0);
	mc_receipt_make(k, &a, r);
	TAP_OK(!mc_receipt_verify(k, &b, r), "boundary: a key's bytes are not a version");
	a = of("", "k", 1, 1, 1);
	mc_receipt_make(k, &a, r);
	TAP_OK(mc_receipt_verify(k, &a, r), "boundary: an empty name is a name like any");
}

static void
test_key_file(void)
{
	char dir[] = "/tmp/mc-receipt-XXXXXX", path[256], tmp[300];
	unsigned char k1[MC_RECEIPT_KEY_BYTES], k2[MC_RECEIPT_KEY_BYTES];
	struct mc_err err;
	struct stat st;
	bool created;
	FILE *f;

	if (mkdtemp(dir) == NULL) {
		TAP_OK(0, "key file: a temporary directory");
		return;
	}
	snprintf(path, sizeof(path), "%s/key", dir);
	TAP_OK(mc_receipt_key_load(path, k1, &created, &err) == 0 && created,
	       "key file: a missing one is made");
	TAP_OK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600 &&
		       st.st_size == MC_RECEIPT_KEY_BYTES,
	       "key file: made 0600, %d bytes", MC_RECEIPT_KEY_BYTES);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	TAP_OK(access(tmp, F_OK) != 0, "key file: no temporary left behind");
	TAP_OK(mc_receipt_key_load(path, k2, &created, &err) == 0 && !created &&
		       memcmp(k1, k2, sizeof(k1)) == 0,
	       "key file: loaded again, the same key");
	chmod(path, 0620);
	TAP_OK(mc_receipt_key_load(path, k2, &created, &err) == -1 &&
		       strstr(err.msg, "writable by group or others") != NULL,
	       "key file: one the group may write is refused (%s)", err.msg);
	chmod(path, 0602);
	TAP_OK(mc_receipt_key_load(path, k2, &created, &err) == -1,
	       "key file: one others may write is refused");
	chmod(path, 0600);
	f = fopen(path, "a");
	if (f != NULL) {
		fputc('x', f);
		fclose(f);
	}
	TAP_OK(mc_receipt_key_load(path, k2, &created, &err) == -1 &&
		       strstr(err.msg, "exactly") != NULL,
	       "key file: one of the wrong length is refused (%s)", err.msg);
	truncate(path, 5);
	TAP_OK(mc_receipt_key_load(path, k2, &created, &err) == -1,
	       "key file: a short one is refused");
	unlink(path);
	snprintf(path, sizeof(path), "%s/no/such/dir/key", dir);
	TAP_OK(mc_receipt_key_load(path, k2, &created, &err) == -1,
	       "key file: one that cannot be made is an error (%s)", err.msg);
	rmdir(dir);
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	test_fields();
	test_boundaries();
	test_key_file();
	return tap_done();
}
