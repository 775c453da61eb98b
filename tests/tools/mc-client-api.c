/*
 * mc-client-api: the public API's promises against a running cluster
 * ($MC_MASTER). Prints TAP; exits 1 on any failure.
 *
 *   mc-client-api bytes NAME      keys are bytes: NUL and high bytes in keys
 *   mc-client-api opts NAME       option structs by size (MC_*_INIT, older sizes)
 *   mc-client-api threads N NAME  one client called from N threads at once
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/client.h"
#include "mc/err.h"
#include "mc/proto.h"

#include "../unit/tap.h"

static struct mc_client *
client(void)
{
	struct mc_err err = { 0 };
	struct mc_client *c = mc_client_new(NULL, &err);

	if (c == NULL) {
		fprintf(stderr, "mc-client-api: %s\n", err.msg);
		exit(69);
	}
	return c;
}

/* ---- bytes ---- */

struct seen {
	const char *want;
	size_t want_len;
	int found, total;
};

static int
see_key(const void *key, size_t key_len, uint64_t size, uint64_t version, const char *type,
	void *arg)
{
	struct seen *s = arg;

	(void)size;
	(void)version;
	(void)type;
	s->total++;
	s->found += key_len == s->want_len && memcmp(key, s->want, key_len) == 0;
	return 0;
}

static int
run_bytes(const char *name)
{
	struct mc_client *c = client();
	struct mc_put_opts po = MC_PUT_OPTS_INIT;
	struct mc_object_info *info;
	struct mc_err err = { 0 };
	char a[64], b[64], parent[64];
	size_t alen, blen, plen = 0, got = 0;
	struct seen seen = { 0 };
	char buf[16];
	int ok;

	/* two keys that differ only after a NUL byte, one with high bytes */
	alen = (size_t)snprintf(a, sizeof(a), "%s/k", name) + 1;
	memcpy(a + alen, "\xff\x01#1", 4);
	alen += 4;
	memcpy(b, a, alen);
	blen = alen;
	b[alen - 4] = '\xfe';

	ok = mc_put(c, a, alen, "first", 5, &po, &err) == 0 &&
	     mc_put(c, b, blen, "second", 6, &po, &err) == 0;
	TAP_OK(ok, "bytes: two keys differing after a NUL byte are both stored (%s)", err.msg);
	ok = mc_get(c, a, alen, buf, sizeof(buf), &got, &err) == 0 && got == 5 &&
	     memcmp(buf, "first", 5) == 0;
	ok = ok && mc_get(c, b, blen, buf, sizeof(buf), &got, &err) == 0 && got == 6 &&
	     memcmp(buf, "second", 6) == 0;
	TAP_OK(ok, "bytes: each reads back its own value");
	TAP_OK(mc_exist(c, a, alen, &err) == 1 && mc_exist(c, a, strlen(a), &err) == 0,
	       "bytes: the key up to its NUL is another, absent key");

	info = mc_stat(c, a, alen, &err);
	ok = info != NULL && info->key.len == alen && memcmp(info->key.data, a, alen) == 0 &&
	     info->size == 5 && info->nreplicas == 1 && info->replicas[0].complete &&
	     strcmp(info->type, "general") == 0 && info->created != 0;
	TAP_OK(ok, "bytes: stat names the whole key, its size and its replica");
	mc_object_info_free(info);

	seen.want = b;
	seen.want_len = blen;
	ok = mc_list(c, a, strlen(a) + 1, see_key, &seen, &err) == 0 && seen.total == 2 &&
	     seen.found == 1;
	TAP_OK(ok, "bytes: a prefix with a NUL byte lists both keys, bytes intact (%d)",
	       seen.total);

	/* the chain parent of a byte key, computed and given as bytes */
	ok = mc_key_chain_parent(a, alen, parent, sizeof(parent), &plen) == 1 && plen == alen &&
	     memcmp(parent, a, alen - 1) == 0 && parent[alen - 1] == '0';
	TAP_OK(ok, "bytes: the chain parent of NAME#1 keeps every byte of NAME");
	po.parent = (struct mc_key){ parent, plen };
	TAP_OK(mc_put(c, parent, plen, "p", 1, NULL, &err) == 0 &&
		       mc_put(c, a, alen, "child", 5,
			      &(struct mc_put_opts){
				      .size = sizeof(po), .upsert = true, .parent = po.parent },
			      &err) == 0,
	       "bytes: a put names a byte parent (%s)", err.msg);

	TAP_OK(mc_remove(c, a, alen, true, &err) == 0 && mc_exist(c, a, alen, &err) == 0 &&
		       mc_exist(c, b, blen, &err) == 1,
	       "bytes: removing one leaves the other");
	TAP_OK(mc_remove_prefix(c, name, strlen(name), true, NULL, &err) == 0 &&
		       mc_exist(c, b, blen, &err) == 0,
	       "bytes: remove by prefix takes the rest");
	TAP_OK(mc_put(c, "", 0, "x", 1, NULL, &err) < 0 && err.code == MC_ERR_INVALID,
	       "bytes: an empty key is invalid");
	mc_client_free(c);
	return tap_done();
}

/* ---- opts ---- */

static int
run_opts(const char *name)
{
	struct mc_client *c = client();
	struct mc_put_opts po = { 0 }, old = MC_PUT_OPTS_INIT;
	struct mc_client_stats st = MC_CLIENT_STATS_INIT, none = { 0 };
	struct mc_client_opts co = { 0 };
	struct mc_object_info *info;
	struct mc_err err = { 0 };
	char key[64];

	snprintf(key, sizeof(key), "%s/o", name);
	po.type = "kv";
	TAP_OK(mc_put(c, key, strlen(key), "x", 1, &po, &err) < 0 && err.code == MC_ERR_INVALID &&
		       strstr(err.msg, "MC_PUT_OPTS_INIT") != NULL,
	       "opts: put options without their size are refused, naming the macro");
	TAP_OK(mc_client_new(&co, &err) == NULL && err.code == MC_ERR_INVALID,
	       "opts: client options without their size are refused");

	/* a caller built against a header that ended before soft_pin */
	old.size = offsetof(struct mc_put_opts, soft_pin);
	old.type = "kv";
	old.soft_pin = MC_SOFT_PIN_ENABLE; /* beyond its size: not read */
	old.parent = (struct mc_key){ "nowhere", 7 };
	TAP_OK(mc_put(c, key, strlen(key), "x", 1, &old, &err) == 0,
	       "opts: an older size is read (%s)", err.msg);
	info = mc_stat(c, key, strlen(key), &err);
	TAP_OK(info != NULL && strcmp(info->type, "kv") == 0,
	       "opts: the fields its size covers are used");
	mc_object_info_free(info);

	mc_client_stats(c, &st);
	TAP_OK(st.size == sizeof(st) && st.put_retries == 0, "opts: stats fill what size covers");
	none.put_retries = 77;
	mc_client_stats(c, &none);
	TAP_OK(none.put_retries == 77, "opts: stats of size 0 write nothing");
	mc_remove_prefix(c, name, strlen(name), true, NULL, &err);
	mc_client_free(c);
	return tap_done();
}

/* ---- threads ---- */

#define PER_THREAD 200

struct worker {
	struct mc_client *c;
	const char *name;
	int id;
	int bad;
	char why[MC_ERR_MSG_MAX + 80];
};

/* Each thread writes its own keys, reads them back, and reads its neighbour's. */
static void *
work(void *arg)
{
	struct worker *w = arg;
	struct mc_err err = { 0 };
	char key[64], want[64], buf[64];
	size_t got;

	for (int i = 0; i < PER_THREAD && w->bad == 0; i++) {
		int klen = snprintf(key, sizeof(key), "%s/t%d/%d", w->name, w->id, i);
		int vlen = snprintf(want, sizeof(want), "value of %d/%d", w->id, i);

		if (mc_put(w->c, key, (size_t)klen, want, (size_t)vlen, NULL, &err) < 0 ||
		    mc_exist(w->c, key, (size_t)klen, &err) != 1 ||
		    mc_get(w->c, key, (size_t)klen, buf, sizeof(buf), &got, &err) < 0 ||
		    got != (size_t)vlen || memcmp(buf, want, got) != 0) {
			w->bad++;
			snprintf(w->why, sizeof(w->why), "%.60s: %s", key,
				 err.msg[0] ? err.msg : "wrong bytes");
		}
	}
	return NULL;
}

static int
run_threads(int n, const char *name)
{
	struct mc_client *c = client();
	struct worker *w = calloc((size_t)n, sizeof(*w));
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	struct mc_err err = { 0 };
	struct mc_key *keys;
	int *present, bad = 0, all = 1;

	if (w == NULL || t == NULL)
		return 70;
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){ .c = c, .name = name, .id = i };
		if (pthread_create(&t[i], NULL, work, &w[i]) != 0)
			return 70;
	}
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		if (w[i].bad && bad++ == 0)
			printf("# thread %d: %s\n", i, w[i].why);
	}
	TAP_OK(bad == 0, "threads: %d threads on one client each put, find and get %d keys", n,
	       PER_THREAD);

	/* and the main thread sees every one of them */
	keys = calloc((size_t)n * PER_THREAD, sizeof(*keys));
	present = calloc((size_t)n * PER_THREAD, sizeof(*present));
	if (keys == NULL || present == NULL)
		return 70;
	for (int i = 0; i < n * PER_THREAD; i++) {
		char *k = malloc(64);

		if (k == NULL)
			return 70;
		keys[i].len =
			(size_t)snprintf(k, 64, "%s/t%d/%d", name, i / PER_THREAD, i % PER_THREAD);
		keys[i].data = k;
	}
	TAP_OK(mc_batch_exist(c, (size_t)n * PER_THREAD, keys, present, &err) == 0,
	       "threads: a batch lookup of all of them works (%s)", err.msg);
	for (int i = 0; i < n * PER_THREAD; i++)
		all &= present[i] == 1;
	TAP_OK(all, "threads: every key any thread wrote is there");
	for (int i = 0; i < n * PER_THREAD; i++)
		free((void *)keys[i].data);
	free(keys);
	free(present);
	mc_remove_prefix(c, name, strlen(name), true, NULL, &err);
	mc_client_free(c);
	free(w);
	free(t);
	return tap_done();
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "bytes") == 0)
		return run_bytes(argv[2]);
	if (argc == 3 && strcmp(argv[1], "opts") == 0)
		return run_opts(argv[2]);
	if (argc == 4 && strcmp(argv[1], "threads") == 0)
		return run_threads(atoi(argv[2]), argv[3]);
	fprintf(stderr, "usage: mc-client-api bytes|opts NAME | threads N NAME\n");
	return 64;
}
