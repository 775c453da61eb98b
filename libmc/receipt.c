/*
 * Commit receipts and their key file (mc/receipt.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "mc/io.h"
#include "mc/receipt.h"

_Static_assert(MC_RECEIPT_BYTES >= crypto_generichash_BYTES_MIN &&
		       MC_RECEIPT_BYTES <= crypto_generichash_BYTES_MAX,
	       "a receipt is a BLAKE2b digest");
_Static_assert(MC_RECEIPT_KEY_BYTES >= crypto_generichash_KEYBYTES_MIN &&
		       MC_RECEIPT_KEY_BYTES <= crypto_generichash_KEYBYTES_MAX,
	       "a receipt key is a BLAKE2b key");

/* Tells a receipt from any other digest made under the same key. */
static const char receipt_tag[] = "mc-receipt-1";

static void
put_u64(crypto_generichash_state *st, uint64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	crypto_generichash_update(st, b, sizeof(b));
}

static void
put_bytes(crypto_generichash_state *st, const char *p, size_t len)
{
	/* the length first: ("ab", "c") and ("a", "bc") are not one input */
	put_u64(st, len);
	if (len > 0)
		crypto_generichash_update(st, (const unsigned char *)p, len);
}

void
mc_receipt_make(const unsigned char key[MC_RECEIPT_KEY_BYTES], const struct mc_receipt_of *what,
		unsigned char out[MC_RECEIPT_BYTES])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, key, MC_RECEIPT_KEY_BYTES, MC_RECEIPT_BYTES);
	put_bytes(&st, receipt_tag, sizeof(receipt_tag) - 1);
	put_bytes(&st, what->tenant, what->tenant_len);
	put_bytes(&st, what->key, what->key_len);
	put_u64(&st, what->version);
	put_u64(&st, what->size);
	put_u64(&st, what->checksum);
	crypto_generichash_final(&st, out, MC_RECEIPT_BYTES);
	sodium_memzero(&st, sizeof(st));
}

bool
mc_receipt_verify(const unsigned char key[MC_RECEIPT_KEY_BYTES], const struct mc_receipt_of *what,
		  const unsigned char *r)
{
	unsigned char want[MC_RECEIPT_BYTES];
	bool ok;

	mc_receipt_make(key, what, want);
	ok = sodium_memcmp(want, r, MC_RECEIPT_BYTES) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}

/* Read exactly n bytes of fd into buf; 1 more in the file is an error too. */
static int
read_exact(int fd, unsigned char *buf, size_t n, const char *path, struct mc_err *err)
{
	size_t got = 0;
	unsigned char extra;

	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mc_err_set(err, MC_ERR_SYSTEM, "cannot read %s: %s", path,
					  mc_strerror(errno));
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got < n || read(fd, &extra, 1) != 0)
		return mc_err_set(err, MC_ERR_INVALID,
				  "%s is not a receipt key: it must hold exactly %zu bytes", path,
				  n);
	return 0;
}

/* A new random key at path; 0 (also when someone else made one meanwhile), or -1. */
static int
key_create(const char *path, struct mc_err *err)
{
	unsigned char key[MC_RECEIPT_KEY_BYTES];
	char tmp[4096];
	int fd, rc = -1;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return mc_err_set(err, MC_ERR_INVALID, "path too long: %s", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot write %s: %s", tmp,
				  mc_strerror(errno));
	randombytes_buf(key, sizeof(key));
	if (mc_write_all(fd, key, sizeof(key)) != 0 || fsync(fd) != 0) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot write %s: %s", tmp, mc_strerror(errno));
		goto out;
	}
	/*
	 * Linked, not renamed: a key another master made meanwhile is never
	 * replaced, so both end up with the same one.
	 */
	if (link(tmp, path) != 0 && errno != EEXIST) {
		mc_err_set(err, MC_ERR_SYSTEM, "cannot create %s: %s", path, mc_strerror(errno));
		goto out;
	}
	rc = 0;
out:
	sodium_memzero(key, sizeof(key));
	close(fd);
	unlink(tmp);
	return rc;
}

int
mc_receipt_key_load(const char *path, unsigned char key[MC_RECEIPT_KEY_BYTES], bool *created,
		    struct mc_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc;

	*created = false;
	if (fd < 0 && errno == ENOENT) {
		if (key_create(path, err) != 0)
			return -1;
		*created = true;
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return mc_err_set(err, MC_ERR_SYSTEM, "cannot read %s: %s", path,
				  mc_strerror(errno));
	rc = mc_check_private(fd, path,
			      "whoever may write it could make forged copies pass as committed",
			      "whoever may read it could forge commit receipts", err);
	if (rc == 0)
		rc = read_exact(fd, key, MC_RECEIPT_KEY_BYTES, path, err);
	close(fd);
	if (rc != 0)
		sodium_memzero(key, MC_RECEIPT_KEY_BYTES);
	return rc;
}
