/*
 * mc-client-check: drives the public client API (mc/client.h) against a
 * running cluster ($MC_MASTER) and checks every answer, for the batch
 * calls that mc-cli does not expose. Prints TAP; exits 1 on any failure.
 *
 *   mc-client-check NAME     (keys live under NAME/)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/client.h"
#include "mc/err.h"

#include "../unit/tap.h"

#define N 300
#define ABSENT 10
#define KEY_CAP 80

static char keys[N + ABSENT][KEY_CAP];
static struct mc_key keyp[N + ABSENT];
static unsigned char *vals[N];
static size_t lens[N + ABSENT];

/* Sizes cover 0 B, small and a few pages; bytes depend on key and offset. */
static void
make_values(void)
{
	for (int i = 0; i < N; i++) {
		lens[i] = (size_t)(i * 37) % 9000;
		vals[i] = malloc(lens[i] + 1);
		if (vals[i] == NULL)
			exit(70);
		for (size_t j = 0; j < lens[i]; j++)
			vals[i][j] = (unsigned char)(i * 7 + j * 13);
	}
}

static int
count_key(const void *key, size_t key_len, uint64_t size, uint64_t version, const char *type,
	  void *arg)
{
	(void)key;
	(void)key_len;
	(void)size;
	(void)version;
	(void)type;
	(*(int *)arg)++;
	return 0;
}

int
main(int argc, char **argv)
{
	struct mc_err err = { 0 };
	struct mc_put_opts po = MC_PUT_OPTS_INIT;
	struct mc_client *c;
	int results[N + ABSENT], present[N + ABSENT], ok, listed = 0;
	void *bufs[N + ABSENT];
	size_t caps[N + ABSENT], got[N + ABSENT];
	uint64_t removed = 0;
	const char *name = argc > 1 ? argv[1] : "cc";
	char prefix[48];

	c = mc_client_new(NULL, &err);
	if (c == NULL) {
		fprintf(stderr, "mc-client-check: %s\n", err.msg);
		return 69;
	}
	po.replicas = 2;
	po.type = "kv";
	make_values();
	snprintf(prefix, sizeof(prefix), "%.40s/", name);
	for (int i = 0; i < N + ABSENT; i++) {
		snprintf(keys[i], KEY_CAP, "%s%s-%d", prefix, i < N ? "k" : "absent", i);
		keyp[i] = (struct mc_key){ keys[i], strlen(keys[i]) };
	}

	ok = mc_batch_put(c, N, keyp, (const void *const *)vals, lens, &po, results, &err) == 0;
	for (int i = 0; ok && i < N; i++)
		ok = results[i] == MC_OK;
	TAP_OK(ok, "batch put: %d objects of 0 B to 9000 B all land (%s)", N, err.msg);

	ok = mc_batch_exist(c, N + ABSENT, keyp, present, &err) == 0;
	for (int i = 0; ok && i < N + ABSENT; i++)
		ok = present[i] == (i < N);
	TAP_OK(ok, "batch exist: every put key is present and every other key absent");

	for (int i = 0; i < N + ABSENT; i++) {
		caps[i] = 9000;
		bufs[i] = malloc(caps[i]);
		if (bufs[i] == NULL)
			return 70;
	}
	ok = mc_batch_get(c, N + ABSENT, keyp, bufs, caps, got, results, &err) == 0;
	for (int i = 0; ok && i < N; i++)
		ok = results[i] == MC_OK && got[i] == lens[i] &&
		     memcmp(bufs[i], vals[i], lens[i]) == 0;
	TAP_OK(ok, "batch get: every object reads back byte-exact");
	ok = 1;
	for (int i = N; i < N + ABSENT; i++)
		ok = ok && results[i] == MC_ERR_NOT_FOUND;
	TAP_OK(ok, "batch get: absent keys answer not_found without failing the batch");

	/* Object 1 is 37 bytes: a 10-byte buffer must be refused, with the size. */
	caps[1] = 10;
	ok = mc_batch_get(c, 2, keyp, bufs, caps, got, results, &err) == 0 && results[0] == MC_OK &&
	     results[1] == MC_ERR_TOO_LARGE && got[1] == lens[1];
	TAP_OK(ok, "batch get: a buffer smaller than the object is refused and told the size");

	ok = mc_list(c, prefix, strlen(prefix), count_key, &listed, &err) == 0 && listed == N;
	TAP_OK(ok, "list: the prefix holds exactly the %d objects (got %d)", N, listed);

	ok = mc_remove_prefix(c, prefix, strlen(prefix), true, &removed, &err) == 0 &&
	     removed == N && mc_exist(c, keyp[0].data, keyp[0].len, &err) == 0;
	TAP_OK(ok, "remove prefix: removes all %d and they are gone (removed %llu)", N,
	       (unsigned long long)removed);

	for (int i = 0; i < N + ABSENT; i++)
		free(bufs[i]);
	for (int i = 0; i < N; i++)
		free(vals[i]);
	mc_client_free(c);
	return tap_done();
}
