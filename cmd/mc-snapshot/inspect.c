/*
 * inspect: read a whole snapshot (it must verify) and count what it
 * holds: records by kind, objects and bytes per tenant and per type,
 * replicas per tier, soft-pin states.
 *
 * The names counted come from the file, so they are capped: each at
 * NAME_CAP bytes and each table at TALLY_CAP names, past which the rest
 * is counted under "(other)". A hostile file cannot make this grow
 * without bound.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/checksum.h"
#include "mc/hash.h"
#include "mc/json.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/progress.h"
#include "mc/snapshot.h"
#include "mc/wire.h"
#include "snap.h"

#define NAME_CAP 256
#define TALLY_CAP 100000

struct tally {
	uint64_t count, bytes;
	size_t len;
	char name[]; /* not NUL-terminated */
};

struct tally_set {
	const char *title; /* text heading */
	const char *json;  /* JSON field */
	const char *what;  /* what count counts */
	struct mc_htab h;
	struct tally **v;
	size_t n, cap;
};

struct key {
	const char *s;
	size_t len;
};

static bool
tally_eq(const void *entry, const void *key)
{
	const struct tally *t = entry;
	const struct key *k = key;

	return t->len == k->len && memcmp(t->name, k->s, k->len) == 0;
}

static void
tally_add(struct tally_set *ts, const char *s, size_t len, uint64_t bytes)
{
	struct key k;
	struct tally *t;
	uint64_t hv;

	if (len > NAME_CAP)
		len = NAME_CAP;
	if (ts->n >= TALLY_CAP) {
		s = "(other)";
		len = strlen(s);
	}
	k.s = s;
	k.len = len;
	hv = mc_hash64(s, len, 0x736e6170);
	t = mc_htab_find(&ts->h, hv, tally_eq, &k);
	if (t == NULL) {
		if (ts->n == ts->cap) {
			size_t ncap = ts->cap ? ts->cap * 2 : 16;
			struct tally **nv = realloc(ts->v, ncap * sizeof(*nv));

			if (nv == NULL)
				mc_die(MC_EXIT_SOFTWARE, "out of memory");
			ts->v = nv;
			ts->cap = ncap;
		}
		t = calloc(1, sizeof(*t) + len);
		if (t == NULL || mc_htab_insert(&ts->h, hv, t) < 0)
			mc_die(MC_EXIT_SOFTWARE, "out of memory");
		memcpy(t->name, s, len);
		t->len = len;
		ts->v[ts->n++] = t;
	}
	t->count++;
	t->bytes += bytes;
}

static int
tally_cmp(const void *a, const void *b)
{
	const struct tally *x = *(struct tally *const *)a, *y = *(struct tally *const *)b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);

	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static void
tally_free(struct tally_set *ts)
{
	size_t i;

	for (i = 0; i < ts->n; i++)
		free(ts->v[i]);
	free(ts->v);
	mc_htab_free(&ts->h);
}

/* A string field, or a placeholder when absent or not a string. */
static struct key
str_field(const msgpack_object *rec, const char *name)
{
	const msgpack_object *o = mc_map_get(rec, name);
	struct key k = { "(none)", 6 };

	if (o != NULL && o->type == MSGPACK_OBJECT_STR) {
		k.s = o->via.str.ptr;
		k.len = o->via.str.size;
	}
	return k;
}

enum { T_KINDS, T_TENANTS, T_TYPES, T_TIERS, T_SOFT, NT };

struct census {
	struct tally_set t[NT];
	uint64_t records, objects, bytes, hard_pins, replicas;
};

static void
count_object(struct census *c, const msgpack_object *rec)
{
	const msgpack_object_array *reps = mc_map_array(rec, "replicas");
	uint64_t size = 0;
	bool pin = false;
	struct key k;
	uint32_t i;

	mc_map_u64(rec, "size", &size, NULL);
	c->objects++;
	c->bytes += size;
	if (mc_map_bool(rec, "hard_pin", &pin, NULL) == 1 && pin)
		c->hard_pins++;
	k = str_field(rec, "tenant");
	tally_add(&c->t[T_TENANTS], k.s, k.len, size);
	k = str_field(rec, "type");
	tally_add(&c->t[T_TYPES], k.s, k.len, size);
	k = str_field(rec, "sp_mode");
	tally_add(&c->t[T_SOFT], k.s, k.len, size);
	for (i = 0; reps != NULL && i < reps->size; i++) {
		k = str_field(&reps->ptr[i], "tier");
		tally_add(&c->t[T_TIERS], k.s, k.len, size);
		c->replicas++;
	}
}

/* Names from the file may hold anything: keep the terminal sane. */
static void
print_name(const char *s, size_t len, int width)
{
	size_t i;

	for (i = 0; i < len; i++)
		putchar((unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i]);
	for (; (int)i < width; i++)
		putchar(' ');
}

static void
print_text(const char *path, const struct mc_snap_header *h, uint64_t size, struct census *c)
{
	char sz[32], when[32];
	size_t i, j;

	printf("file:       %s\n", path);
	printf("size:       %" PRIu64 " (%s)\n", size, mc_fmt_size(size, sz, sizeof(sz)));
	printf("format:     %s version %" PRIu64 "\n", h->format, h->version);
	printf("master_id:  %s\n", h->master_id[0] ? h->master_id : "-");
	printf("created:    %s (%" PRIu64 ")\n", mc_fmt_time_ms(h->created, when, sizeof(when)),
	       h->created);
	printf("header:     %" PRIu64 " objects, %" PRIu64 " peers, %" PRIu64 " tenants, %" PRIu64
	       " bytes\n",
	       h->objects, h->peers, h->tenants, h->bytes);
	printf("records:    %" PRIu64 "\n", c->records);
	for (i = 0; i < c->t[T_KINDS].n; i++) {
		printf("  ");
		print_name(c->t[T_KINDS].v[i]->name, c->t[T_KINDS].v[i]->len, 20);
		printf(" %12" PRIu64 "\n", c->t[T_KINDS].v[i]->count);
	}
	printf("objects:    %" PRIu64 " (%s), %" PRIu64 " hard-pinned, %" PRIu64 " replicas\n",
	       c->objects, mc_fmt_size(c->bytes, sz, sizeof(sz)), c->hard_pins, c->replicas);
	for (j = T_TENANTS; j < NT; j++) {
		struct tally_set *ts = &c->t[j];

		if (ts->n == 0)
			continue;
		printf("%s\n", ts->title);
		for (i = 0; i < ts->n; i++) {
			printf("  ");
			print_name(ts->v[i]->name, ts->v[i]->len, 20);
			printf(" %12" PRIu64 " %-8s %10s\n", ts->v[i]->count, ts->what,
			       mc_fmt_size(ts->v[i]->bytes, sz, sizeof(sz)));
		}
	}
}

static void
json_kv_u64(const char *k, uint64_t v, bool comma)
{
	printf("%s\"%s\":", comma ? "," : "", k);
	mc_json_write_u64(stdout, v);
}

static void
print_json(const char *path, const struct mc_snap_header *h, uint64_t size, struct census *c)
{
	size_t i, j;

	printf("{\"file\":");
	mc_json_write_str(stdout, path, strlen(path));
	json_kv_u64("size", size, true);
	printf(",\"header\":{\"format\":");
	mc_json_write_str(stdout, h->format, strlen(h->format));
	json_kv_u64("version", h->version, true);
	printf(",\"master_id\":");
	mc_json_write_str(stdout, h->master_id, strlen(h->master_id));
	json_kv_u64("created", h->created, true);
	json_kv_u64("objects", h->objects, true);
	json_kv_u64("peers", h->peers, true);
	json_kv_u64("tenants", h->tenants, true);
	json_kv_u64("bytes", h->bytes, true);
	printf("}");
	json_kv_u64("records", c->records, true);
	printf(",\"kinds\":{");
	for (i = 0; i < c->t[T_KINDS].n; i++) {
		const struct tally *t = c->t[T_KINDS].v[i];

		printf("%s", i ? "," : "");
		mc_json_write_str(stdout, t->name, t->len);
		printf(":%" PRIu64, t->count);
	}
	printf("}");
	json_kv_u64("objects", c->objects, true);
	json_kv_u64("bytes", c->bytes, true);
	json_kv_u64("hard_pins", c->hard_pins, true);
	json_kv_u64("replicas", c->replicas, true);
	for (j = T_TENANTS; j < NT; j++) {
		struct tally_set *ts = &c->t[j];

		printf(",\"%s\":{", ts->json);
		for (i = 0; i < ts->n; i++) {
			printf("%s", i ? "," : "");
			mc_json_write_str(stdout, ts->v[i]->name, ts->v[i]->len);
			printf(":{");
			json_kv_u64(ts->what, ts->v[i]->count, false);
			json_kv_u64("bytes", ts->v[i]->bytes, true);
			printf("}");
		}
		printf("}");
	}
	printf("}\n");
}

int
cmd_inspect(int argc, char **argv)
{
	static const struct {
		const char *title, *json, *what;
	} sets[NT] = {
		[T_KINDS] = { "records by kind:", "kinds", "records" },
		[T_TENANTS] = { "tenants:", "tenants", "objects" },
		[T_TYPES] = { "types:", "types", "objects" },
		[T_TIERS] = { "replicas by tier:", "tiers", "replicas" },
		[T_SOFT] = { "soft pins:", "soft_pins", "objects" },
	};
	const char *path = argv[0];
	struct mc_err err = { 0 };
	struct mc_snap_header h;
	struct mc_snap_reader *r;
	const msgpack_object *rec;
	struct mc_progress pg;
	struct census c;
	uint64_t size, read_bytes;
	size_t i;
	int fd, rc;

	(void)argc;
	memset(&c, 0, sizeof(c));
	for (i = 0; i < NT; i++) {
		c.t[i].title = sets[i].title;
		c.t[i].json = sets[i].json;
		c.t[i].what = sets[i].what;
		mc_htab_init(&c.t[i].h);
	}
	fd = snap_open_input(path, &size);
	mc_progress_start(&pg, "inspect", size);
	r = mc_snap_reader_open(fd, &h, &err);
	if (r == NULL) {
		mc_progress_end(&pg);
		snap_read_fail(path, &err);
	}
	while ((rc = mc_snap_reader_next(r, &rec, &err)) > 0) {
		struct key k = str_field(rec, "t");

		c.records++;
		tally_add(&c.t[T_KINDS], k.s, k.len, 0);
		if (k.len == 6 && memcmp(k.s, "object", 6) == 0)
			count_object(&c, rec);
		if (c.records % 4096 == 0)
			mc_progress_update(&pg, mc_snap_reader_offset(r), 0);
	}
	read_bytes = mc_snap_reader_offset(r);
	mc_snap_reader_close(r);
	mc_progress_end(&pg);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc < 0)
		snap_read_fail(path, &err);
	for (i = 0; i < NT; i++)
		if (c.t[i].n > 1)
			qsort(c.t[i].v, c.t[i].n, sizeof(*c.t[i].v), tally_cmp);
	if (sc.json)
		print_json(path, &h, read_bytes, &c);
	else
		print_text(path, &h, read_bytes, &c);
	for (i = 0; i < NT; i++)
		tally_free(&c.t[i]);
	return MC_EXIT_OK;
}
