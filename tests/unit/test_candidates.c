/*
 * The candidate view: interning, appending, and both stream forms,
 * including every way a stream can be bad and reading through a pipe.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "mc/candidates.h"
#include "mc/proto.h"
#include "mc/wire.h"
#include "cand_util.h"
#include "tap.h"

static const char *tenants[] = { "alice", "bob", "carol" };
static const char *types[] = { "kv", "hidden", "general" };
static const char *peers[] = { "peer-1", "peer-2", "peer-3", "peer-4" };
static const char *tiers[] = { "dram", "ssd" };
static const char *domains[] = { "rack-a", "rack-b" };

/*
 * Candidate i of a synthetic view. Every 3rd has no group, every 5th no
 * domain, every 7th no cost; some keys are binary or multi-byte UTF-8,
 * so the JSON form has to carry bytes that are not text.
 */
static int
add_synthetic(struct mc_cand_view *v, uint64_t i, struct mc_err *err)
{
	struct mc_cand c;
	char key[64], group[32];
	int klen;

	memset(&c, 0, sizeof(c));
	c.version = i * 3 + 1;
	c.bytes = 4096 + i * 17;
	c.created = 1700000000000ULL + i;
	c.last_access = c.created + 500 + i % 1000;
	c.access_count = i % 97;
	c.lease_expiry = i % 4 == 0 ? 0 : c.last_access + 5000;
	c.soft_pin_deadline = i % 6 == 0 ? c.created + 60000 : 0;
	c.cost = i % 7 == 0 ? -1 : (double)i / 3.0 + 0.125;
	/* the kv ranking's fields, absent (0) on some */
	c.crf = i % 9 == 0 ? 0 : (double)i / 7.0 + 1.0 / 3.0;
	c.depth = (uint32_t)(i % 5);
	c.children = (uint32_t)(i % 4);
	c.flags = (uint32_t)(i % 3 == 0 ? MC_CAND_ORPHAN : 0) |
		  (uint32_t)(i % 8 == 0 ? MC_CAND_PROBATION : 0);
	c.tenant = name(v, tenants[i % 3]);
	c.type = name(v, types[i % 3]);
	c.peer = name(v, peers[i % 4]);
	c.tier = name(v, tiers[i % 2]);
	if (i % 3 != 0) {
		snprintf(group, sizeof(group), "g%" PRIu64, i / 10);
		c.group = name(v, group);
	}
	if (i % 5 != 0)
		c.domain = name(v, domains[i % 2]);
	if (i % 11 == 0) {
		/* bytes that are not UTF-8, NUL and control bytes included */
		klen = snprintf(key, sizeof(key), "bin-%" PRIu64 "-", i);
		key[klen++] = '\0';
		key[klen++] = (char)0xff;
		key[klen++] = (char)0x80;
		key[klen++] = '\n';
		key[klen++] = '"';
	} else if (i % 13 == 0) {
		klen = snprintf(key, sizeof(key), "ключ-%" PRIu64 "-\xe2\x82\xac", i);
	} else {
		klen = snprintf(key, sizeof(key), "tenant/%" PRIu64 "/layer-%" PRIu64, i % 3, i);
	}
	return mc_cand_add(v, &c, key, (size_t)klen, err);
}

static int
build_view(struct mc_cand_view *v, uint64_t n)
{
	struct mc_err err;

	mc_cand_view_init(v);
	v->created = 1700000123456ULL;
	for (uint64_t i = 0; i < n; i++) {
		if (add_synthetic(v, i, &err) < 0) {
			fprintf(stderr, "cannot build view: %s\n", err.msg);
			return -1;
		}
	}
	return 0;
}

static bool
same_name(const struct mc_cand_view *a, uint32_t ia, const struct mc_cand_view *b, uint32_t ib)
{
	return strcmp(mc_cand_name_str(a, ia), mc_cand_name_str(b, ib)) == 0;
}

/* Index of the first record that differs, or -1 when the views agree. */
static long
first_difference(const struct mc_cand_view *a, const struct mc_cand_view *b)
{
	if (a->n != b->n || a->created != b->created || a->seq != b->seq)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct mc_cand *x = &a->c[i], *y = &b->c[i];

		if (x->version != y->version || x->bytes != y->bytes || x->created != y->created ||
		    x->last_access != y->last_access || x->access_count != y->access_count ||
		    x->lease_expiry != y->lease_expiry ||
		    x->soft_pin_deadline != y->soft_pin_deadline ||
		    x->access_seq != y->access_seq || x->created_seq != y->created_seq ||
		    (x->cost < 0) != (y->cost < 0) || (x->cost >= 0 && x->cost != y->cost) ||
		    x->crf != y->crf || x->depth != y->depth || x->children != y->children ||
		    x->flags != y->flags || x->key_len != y->key_len ||
		    memcmp(mc_cand_key(a, x), mc_cand_key(b, y), x->key_len) != 0 ||
		    !same_name(a, x->tenant, b, y->tenant) || !same_name(a, x->type, b, y->type) ||
		    !same_name(a, x->group, b, y->group) || !same_name(a, x->peer, b, y->peer) ||
		    !same_name(a, x->tier, b, y->tier) || !same_name(a, x->domain, b, y->domain))
			return (long)i;
	}
	return -1;
}

/* ---- streams in memory ---- */

struct mem {
	char *buf;
	size_t len;
};

static int
write_mem(const struct mc_cand_view *v, bool json, struct mem *m, struct mc_err *err)
{
	FILE *f = open_memstream(&m->buf, &m->len);
	int rc;

	if (f == NULL)
		return -1;
	rc = mc_cand_write(f, v, json, err);
	fclose(f);
	return rc;
}

/* Read len bytes of buf as a stream into a fresh view (freed here). */
static int
read_bytes(const void *buf, size_t len, bool json, struct mc_err *err, size_t *n)
{
	struct mc_cand_view v;
	FILE *f = tmpfile();
	int rc;

	if (f == NULL || fwrite(buf, 1, len, f) != len) {
		perror("tmpfile");
		exit(1);
	}
	rewind(f);
	mc_cand_view_init(&v);
	mc_err_clear(err);
	rc = mc_cand_read(f, &v, json, err);
	if (n != NULL)
		*n = v.n;
	mc_cand_view_free(&v);
	fclose(f);
	return rc;
}

static int
read_str(const char *s, struct mc_err *err)
{
	return read_bytes(s, strlen(s), true, err, NULL);
}

/* ---- hand-made msgpack streams ---- */

static void
pack_header(msgpack_packer *pk, const char *format, uint64_t version)
{
	msgpack_pack_map(pk, 3);
	mc_pack_kv_str(pk, "format", format);
	mc_pack_kv_u64(pk, "version", version);
	mc_pack_kv_u64(pk, "created", 1);
}

/*
 * A good record, except that the field named bad (if any) holds the
 * string "oops" instead, and the field named drop (if any) is left out.
 */
static void
pack_record(msgpack_packer *pk, const char *bad, const char *drop)
{
	static const char *const nums[] = { "version",		"bytes",	"created",
					    "last_access",	"access_count", "lease_expiry",
					    "soft_pin_deadline" };
	static const char *const strs[][2] = {
		{ "key", "k1" },  { "tenant", "alice" }, { "type", "kv" },
		{ "peer", "p1" }, { "tier", "dram" },	 { "group", "g" },
	};
	size_t n = 7 + 6 + 1;

	if (drop != NULL)
		n--;
	msgpack_pack_map(pk, n);
	for (size_t i = 0; i < 7; i++) {
		if (drop != NULL && strcmp(drop, nums[i]) == 0)
			continue;
		if (bad != NULL && strcmp(bad, nums[i]) == 0)
			mc_pack_kv_str(pk, nums[i], "oops");
		else
			mc_pack_kv_u64(pk, nums[i], 42);
	}
	for (size_t i = 0; i < 6; i++) {
		if (drop != NULL && strcmp(drop, strs[i][0]) == 0)
			continue;
		if (bad != NULL && strcmp(bad, strs[i][0]) == 0)
			mc_pack_kv_u64(pk, strs[i][0], 7);
		else
			mc_pack_kv_str(pk, strs[i][0], strs[i][1]);
	}
	/* a field from some future writer, nested, to be ignored */
	mc_pack_key(pk, "future");
	msgpack_pack_array(pk, 2);
	msgpack_pack_int(pk, -1);
	msgpack_pack_nil(pk);
}

static bool
has(const struct mc_err *err, const char *s)
{
	if (strstr(err->msg, s) != NULL)
		return true;
	printf("#   error was: %s\n", err->msg);
	return false;
}

static void
test_view(void)
{
	struct mc_cand_view v;
	struct mc_cand c;
	struct mc_err err;
	char big[MC_KEY_MAX + 2];
	int64_t a, b, a2;
	bool ok = true;

	mc_cand_view_init(&v);
	TAP_OK(v.n == 0 && v.nnames == 1 && strcmp(mc_cand_name_str(&v, 0), "") == 0,
	       "view: a fresh view is empty and name id 0 is the empty name");
	a = mc_cand_name(&v, "alice", 5, &err);
	b = mc_cand_name(&v, "bob", 3, &err);
	a2 = mc_cand_name(&v, "alice!", 5, &err);
	TAP_OK(a > 0 && b > 0 && a != b && a2 == a && v.nnames == 3,
	       "view: interning the same bytes twice gives the same id, other bytes another");
	TAP_OK(strcmp(mc_cand_name_str(&v, (uint32_t)b), "bob") == 0 && v.name_lens[b] == 3,
	       "view: an id looks up its name, NUL-terminated, with its length");
	TAP_OK(mc_cand_name(&v, "", 0, &err) == MC_CAND_NO_NAME,
	       "view: the empty name interns as id 0");
	memset(big, 'n', sizeof(big));
	TAP_OK(mc_cand_name(&v, big, MC_NAME_MAX, &err) > 0,
	       "view: a name of MC_NAME_MAX bytes is accepted");
	TAP_OK(mc_cand_name(&v, big, MC_NAME_MAX + 1, &err) == -1 && err.code == MC_ERR_INVALID,
	       "view: a name over MC_NAME_MAX bytes is refused");
	TAP_OK(mc_cand_name(&v, "a\0b", 3, &err) == -1,
	       "view: a name with a NUL byte is refused (it could not be printed whole)");

	/* many names force the index and name arrays to grow */
	for (int i = 0; i < 5000 && ok; i++) {
		char s[32];
		int n = snprintf(s, sizeof(s), "name-%d", i);
		int64_t id = mc_cand_name(&v, s, (size_t)n, &err);

		ok = id > 0 && strcmp(mc_cand_name_str(&v, (uint32_t)id), s) == 0;
	}
	for (int i = 0; i < 5000 && ok; i++) {
		char s[32];
		int n = snprintf(s, sizeof(s), "name-%d", i);

		ok = mc_cand_name(&v, s, (size_t)n, &err) == (int64_t)i + 4;
	}
	TAP_OK(ok, "view: 5000 distinct names intern to stable ids across growth");

	memset(&c, 0, sizeof(c));
	c.tenant = (uint32_t)a;
	c.bytes = 10;
	c.key_off = 999; /* ignored: set by mc_cand_add */
	TAP_OK(mc_cand_add(&v, &c, "key-1", 5, &err) == 0 && v.n == 1 && v.c[0].key_len == 5 &&
		       memcmp(mc_cand_key(&v, &v.c[0]), "key-1", 5) == 0 && v.c[0].tenant == a &&
		       v.c[0].bytes == 10,
	       "view: add copies the record and its key into the arena");
	{
		struct mc_cand *before;
		bool same = true;

		TAP_OK(mc_cand_view_reserve(&v, 3000, &err) == 0 && v.cap == 3000 && v.n == 1 &&
			       mc_cand_view_reserve(&v, 10, &err) == 0 && v.cap == 3000,
		       "view: reserve makes room for that many records, never less than it has");
		before = v.c;
		for (int i = 0; i < 2999 && same; i++)
			same = mc_cand_add(&v, &c, "key-r", 5, &err) == 0 && v.c == before;
		TAP_OK(same && v.n == 3000 && memcmp(mc_cand_key(&v, &v.c[0]), "key-1", 5) == 0,
		       "view: records up to the reserve are added in place");
		v.n = 1;
		TAP_OK(mc_cand_view_reserve(&v, SIZE_MAX, &err) == -1 && v.cap == 3000,
		       "view: a reserve beyond what can be had fails and leaves the view");
	}
	TAP_OK(mc_cand_add(&v, &c, "", 0, &err) == -1 && err.code == MC_ERR_INVALID,
	       "view: add refuses an empty key");
	TAP_OK(mc_cand_add(&v, &c, big, MC_KEY_MAX + 1, &err) == -1,
	       "view: add refuses a key over MC_KEY_MAX bytes");
	TAP_OK(mc_cand_add(&v, &c, big, MC_KEY_MAX, &err) == 0,
	       "view: add accepts a key of MC_KEY_MAX bytes");
	c.peer = v.nnames;
	TAP_OK(mc_cand_add(&v, &c, "k", 1, &err) == -1 && v.n == 2,
	       "view: add refuses a name id that was never interned");
	c.peer = 0;
	ok = true;
	for (int i = 0; i < 100000 && ok; i++) {
		char k[32];
		int n = snprintf(k, sizeof(k), "grow-%d", i);

		c.version = (uint64_t)i;
		ok = mc_cand_add(&v, &c, k, (size_t)n, &err) == 0;
	}
	for (size_t i = 2; i < v.n && ok; i++) {
		char k[32];
		int n = snprintf(k, sizeof(k), "grow-%zu", i - 2);

		ok = v.c[i].version == i - 2 && v.c[i].key_len == (uint32_t)n &&
		     memcmp(mc_cand_key(&v, &v.c[i]), k, (size_t)n) == 0;
	}
	TAP_OK(ok && v.n == 100002, "view: 100k adds keep every record and key across growth");
	/* the arrays are full to a power of two here, so the next add moves them */
	ok = true;
	for (size_t i = 0; i < 40000 && ok; i++) {
		const struct mc_cand *src = &v.c[i + 2];
		size_t len = src->key_len;

		ok = mc_cand_add(&v, src, mc_cand_key(&v, src), len, &err) == 0 &&
		     v.c[v.n - 1].version == i && v.c[v.n - 1].key_len == len &&
		     memcmp(mc_cand_key(&v, &v.c[v.n - 1]), mc_cand_key(&v, &v.c[i + 2]), len) == 0;
	}
	TAP_OK(ok, "view: adding a copy of a record and key from the same view survives growth");
	mc_cand_view_free(&v);
	TAP_OK(v.n == 0 && v.nnames == 1 && v.c == NULL, "view: free leaves an empty view");
	mc_cand_view_free(&v);
	TAP_OK(true, "view: freeing twice is harmless");
}

static void
test_round_trip(bool json)
{
	const char *fmt = json ? "json" : "msgpack";
	struct mc_cand_view v, w;
	struct mc_err err;
	struct mem m = { NULL, 0 };
	FILE *f;
	long d;

	if (build_view(&v, 10000) < 0)
		exit(1);
	TAP_OK(write_mem(&v, json, &m, &err) == 0, "%s: writes 10k candidates", fmt);
	mc_cand_view_init(&w);
	f = fmemopen(m.buf, m.len, "r");
	TAP_OK(f != NULL && mc_cand_read(f, &w, json, &err) == 0, "%s: reads its own stream back",
	       fmt);
	if (w.n != v.n)
		printf("#   read %zu of %zu: %s\n", w.n, v.n, err.msg);
	d = first_difference(&v, &w);
	TAP_OK(d == -1, "%s: round trip keeps every field, absent group/domain/cost/chain included",
	       fmt);
	if (d >= 0)
		printf("#   first difference at record %ld\n", d);
	if (f != NULL)
		fclose(f);
	if (json) {
		/* the header line and the first record, for people */
		char *nl = strchr(m.buf, '\n');

		TAP_OK(nl != NULL && strncmp(m.buf, "{\"format\":\"mc-candidates\",\"version\":1,",
					     38) == 0,
		       "json: the first line is the header object");
		TAP_OK(nl != NULL && strchr(nl + 1, '\n') != NULL &&
			       strncmp(nl + 1, "{\"key\":{\"b64\":\"YmluLTAtAP+ACiI=\"},", 33) == 0,
		       "json: a key that is not text is written as its bytes in base64");
	}
	free(m.buf);
	mc_cand_view_free(&v);
	mc_cand_view_free(&w);
}

static void
test_bad_msgpack(void)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct mc_err err;
	struct mem m = { NULL, 0 };
	struct mc_cand_view v;
	size_t n, cut;
	char *buf;

	/* truncated inside record 5 of 10 */
	if (build_view(&v, 10) < 0)
		exit(1);
	write_mem(&v, false, &m, &err);
	/* count records: header + 4 records, then cut 3 bytes into record 5 */
	{
		size_t off = 0, ml, k = 0;
		const char *why;

		while (k < 5 &&
		       mc_wire_check(m.buf + off, m.len - off, m.len, &ml, &why) == MC_WIRE_WHOLE) {
			off += ml;
			k++;
		}
		cut = off + 3;
	}
	TAP_OK(read_bytes(m.buf, cut, false, &err, &n) == -1 && has(&err, "record 5: truncated") &&
		       err.code == MC_ERR_PROTO && n == 4,
	       "msgpack: a stream cut inside record 5 fails naming record 5, after 4 records");
	{
		size_t off = 0, ml, k = 0;
		const char *why;

		while (k < 4 &&
		       mc_wire_check(m.buf + off, m.len - off, m.len, &ml, &why) == MC_WIRE_WHOLE) {
			off += ml;
			k++;
		}
		cut = off;
	}
	TAP_OK(read_bytes(m.buf, cut, false, &err, &n) == -1 &&
		       has(&err, "record 4: missing, the stream ends after 3 of 10 records"),
	       "msgpack: a stream cut between records fails against the header's count");
	TAP_OK(read_bytes(m.buf, 5, false, &err, NULL) == -1 && has(&err, "truncated header"),
	       "msgpack: a stream cut inside the header says so");
	TAP_OK(read_bytes("", 0, false, &err, NULL) == -1 &&
		       has(&err, "not an mc-candidates stream"),
	       "msgpack: empty input is not an mc-candidates stream");
	free(m.buf);
	mc_cand_view_free(&v);

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack_header(&pk, "mc-plan", 1);
	pack_record(&pk, NULL, NULL);
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, NULL) == -1 &&
		       has(&err, "not an mc-candidates stream"),
	       "msgpack: a header of another format is refused");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-candidates", 2);
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, NULL) == -1 &&
		       has(&err, "unsupported mc-candidates version 2"),
	       "msgpack: a header of another version is refused");
	msgpack_sbuffer_clear(&sb);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_int(&pk, 1);
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, NULL) == -1 &&
		       has(&err, "not an mc-candidates stream"),
	       "msgpack: a first object that is not a map is not our stream");

	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-candidates", 1);
	pack_record(&pk, NULL, NULL);
	pack_record(&pk, NULL, NULL);
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, &n) == 0 && n == 2,
	       "msgpack: a header without count and records with unknown fields are read");
	pack_record(&pk, "bytes", NULL);
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, NULL) == -1 &&
		       has(&err, "record 3: field 'bytes': expected an unsigned integer, got a "
				 "string") &&
		       err.code == MC_ERR_PROTO,
	       "msgpack: a number field holding a string fails naming record and field");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-candidates", 1);
	pack_record(&pk, "tenant", NULL);
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, NULL) == -1 &&
		       has(&err, "record 1: field 'tenant': expected a string"),
	       "msgpack: a name field holding a number fails naming record and field");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-candidates", 1);
	pack_record(&pk, NULL, NULL);
	pack_record(&pk, NULL, "tier");
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, NULL) == -1 &&
		       has(&err, "record 2: field 'tier': missing"),
	       "msgpack: a record without a required field fails naming it");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-candidates", 1);
	msgpack_pack_array(&pk, 0);
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, NULL) == -1 &&
		       has(&err, "record 1: not a map"),
	       "msgpack: a record that is not a map fails naming it");

	/* a key of MC_KEY_MAX + 1 bytes, all of them present */
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-candidates", 1);
	pack_record(&pk, NULL, NULL);
	msgpack_pack_map(&pk, 1);
	mc_pack_key(&pk, "key");
	buf = calloc(1, MC_KEY_MAX + 1);
	msgpack_pack_bin(&pk, MC_KEY_MAX + 1);
	msgpack_pack_bin_body(&pk, buf, MC_KEY_MAX + 1);
	free(buf);
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, NULL) == -1 &&
		       has(&err, "record 2: field 'key': 4097 bytes, over the limit of 4096"),
	       "msgpack: a key over MC_KEY_MAX fails naming the record");
	/* a key declaring 2 GiB with a few bytes behind it */
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-candidates", 1);
	msgpack_pack_map(&pk, 1);
	mc_pack_key(&pk, "key");
	msgpack_pack_str(&pk, 0x80000000u);
	msgpack_sbuffer_write(&sb, "abc", 3);
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, NULL) == -1 &&
		       has(&err, "record 1: malformed: declared length exceeds"),
	       "msgpack: a key declaring 2 GiB is refused before any allocation");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-candidates", 1);
	msgpack_pack_map(&pk, 1);
	mc_pack_key(&pk, "key");
	msgpack_pack_str(&pk, 200);
	msgpack_sbuffer_write(&sb, "abc", 3);
	TAP_OK(read_bytes(sb.data, sb.size, false, &err, NULL) == -1 &&
		       has(&err, "record 1: truncated"),
	       "msgpack: a key declaring more bytes than the stream holds is truncation");
	msgpack_sbuffer_destroy(&sb);
}

#define HDR "{\"format\":\"mc-candidates\",\"version\":1,\"created\":5}\n"
#define REC                                                                             \
	"{\"key\":\"k\",\"version\":1,\"tenant\":\"t\",\"type\":\"kv\",\"peer\":\"p\"," \
	"\"tier\":\"dram\",\"bytes\":10,\"created\":1,\"last_access\":2,"               \
	"\"access_count\":3,\"lease_expiry\":0,\"soft_pin_deadline\":0"

static void
test_bad_json(void)
{
	struct mc_err err;
	size_t n;

	TAP_OK(read_str(HDR REC "}\n" REC ",\"group\":null,\"x\":[]}\n", &err) == -1 &&
		       has(&err, "line 3: nested objects and arrays are not supported"),
	       "json: a nested value fails naming the line");
	TAP_OK(read_bytes(HDR REC "}\n\n" REC ",\"group\":null,\"cost\":null,\"x\":true}",
			  strlen(HDR REC "}\n\n" REC ",\"group\":null,\"cost\":null,\"x\":true}"),
			  true, &err, &n) == 0 &&
		       n == 2,
	       "json: null optional fields, unknown fields, blank lines and a last line "
	       "without newline are accepted");
	TAP_OK(read_str(HDR REC "}\n" REC ",\"bytes\":\"ten\"}\n", &err) == -1 &&
		       has(&err,
			   "line 3: field 'bytes': expected an unsigned integer, got a string"),
	       "json: a wrong field type fails naming the line and the field");
	TAP_OK(read_str(HDR REC ",\"bytes\":-4}\n", &err) == -1 &&
		       has(&err, "line 2: field 'bytes': expected an unsigned integer, got a "
				 "negative integer"),
	       "json: a negative size is refused");
	TAP_OK(read_str(HDR REC ",\"bytes\":18446744073709551616}\n", &err) == -1 &&
		       has(&err, "out of range"),
	       "json: an integer over 64 bits is refused, not wrapped");
	TAP_OK(read_str(HDR REC ",\"cost\":-1.5}\n", &err) == -1 && has(&err, "field 'cost'"),
	       "json: a negative cost is refused");
	TAP_OK(read_str(HDR REC "\n", &err) == -1 && has(&err, "line 2: expected ',' or '}'"),
	       "json: a cut-off record fails naming the line");
	TAP_OK(read_str(HDR "{\"key\":\"k\"}\n", &err) == -1 &&
		       has(&err, "line 2: field 'version': missing"),
	       "json: a missing field fails naming the line and the field");
	TAP_OK(read_str(HDR REC ",\"key\":\"\\ud800x\"}\n", &err) == -1 &&
		       has(&err, "line 2: lone high surrogate"),
	       "json: a bad escape fails naming the line");
	TAP_OK(read_str("{\"format\":\"mc-plan\",\"version\":1}\n", &err) == -1 &&
		       has(&err, "not an mc-candidates stream"),
	       "json: a header of another format is refused");
	TAP_OK(read_str("hello\n", &err) == -1 && has(&err, "not an mc-candidates stream"),
	       "json: text that is not JSON is not our stream");
	TAP_OK(read_str("{\"format\":\"mc-candidates\",\"version\":1}\n", &err) == -1 &&
		       has(&err, "line 1: field 'created': missing"),
	       "json: a header without created is refused");
	TAP_OK(read_str("{\"format\":\"mc-candidates\",\"version\":1,\"created\":0,\"count\":2}"
			"\n" REC "}\n",
			&err) == -1 &&
		       has(&err, "record 2: missing, the stream ends after 1 of 2 records"),
	       "json: fewer records than the header's count is truncation");
	TAP_OK(read_str(HDR REC ",\"key\":\"\\u00ff\\u20ac\\ud83d\\ude00\"}\n", &err) == 0,
	       "json: \\u escapes for Latin-1, BMP and astral code points are read");
	TAP_OK(read_str(HDR REC ",\"key\":{\"b64\":\"AP8K\"},\"tenant\":{\"b64\":\"dA==\"}}\n",
			&err) == 0,
	       "json: a key and a name may come as {\"b64\":...} in a flat record (%s)", err.msg);
	TAP_OK(read_str(HDR REC ",\"key\":{\"b64\":\"AP8\"}}\n", &err) == -1 &&
		       has(&err, "line 2: bad base64"),
	       "json: bad base64 fails naming the line: %s", err.msg);
}

static int read_view_str(const char *s, size_t len, bool json, struct mc_cand_view *v,
			 struct mc_err *err);

/*
 * An integer above 2^53 goes out as a decimal string, which jq and
 * JavaScript keep exactly, and reads back as the number; a bare number
 * (what older writers wrote) still reads.
 */
static void
test_big_integers(void)
{
	const uint64_t big = (1ull << 53) + 1;
	struct mc_cand_view v, w;
	struct mc_err err;
	struct mem m = { 0 };
	bool ok;

	struct mc_cand c;

	mc_cand_view_init(&v);
	memset(&c, 0, sizeof(c));
	c.tenant = name(&v, "t");
	c.type = name(&v, "kv");
	c.peer = name(&v, "p");
	c.tier = name(&v, "dram");
	c.group = MC_CAND_NO_NAME;
	c.domain = MC_CAND_NO_NAME;
	c.cost = -1;
	c.bytes = 10;
	c.version = big;
	c.access_count = 1ull << 53;
	ok = mc_cand_add(&v, &c, "k", 1, &err) == 0;
	v.created = UINT64_MAX;
	ok = ok && write_mem(&v, true, &m, &err) == 0;
	TAP_OK(ok && strstr(m.buf, "\"version\":\"9007199254740993\"") != NULL &&
		       strstr(m.buf, "\"created\":\"18446744073709551615\"") != NULL &&
		       strstr(m.buf, "\"access_count\":9007199254740992,") != NULL,
	       "json: integers above 2^53 are written as decimal strings, 2^53 as a number");
	ok = ok && read_view_str(m.buf, m.len, true, &w, &err) == 0;
	TAP_OK(ok && w.n == 1 && w.c[0].version == big && w.created == UINT64_MAX &&
		       w.c[0].access_count == 1ull << 53,
	       "json: the decimal strings read back as the exact numbers (%s)", ok ? "" : err.msg);
	if (ok)
		mc_cand_view_free(&w);
	TAP_OK(read_view_str(HDR REC ",\"version\":9007199254740993}\n",
			     strlen(HDR REC ",\"version\":9007199254740993}\n"), true, &w,
			     &err) == 0 &&
		       w.c[0].version == big,
	       "json: a bare number above 2^53, the old form, still reads exactly");
	mc_cand_view_free(&w);
	TAP_OK(read_str(HDR REC ",\"bytes\":\"012\"}\n", &err) == -1 &&
		       has(&err, "field 'bytes': expected an unsigned integer, got a string"),
	       "json: a string that is not a plain decimal is still refused");
	free(m.buf);
	mc_cand_view_free(&v);
}

/* Read a stream held in a string into v (initialised here); the caller frees v. */
static int
read_view_str(const char *s, size_t len, bool json, struct mc_cand_view *v, struct mc_err *err)
{
	FILE *f = fmemopen((void *)s, len, "r");
	int rc;

	mc_cand_view_init(v);
	if (f == NULL)
		return -1;
	rc = mc_cand_read(f, v, json, err);
	fclose(f);
	return rc;
}

/*
 * The access sequences: carried both ways when the view has one, left
 * out when it has none (so old readers and fixtures see what they always
 * saw), and read as 0 from a stream that lacks them.
 */
static void
test_sequences(bool json)
{
	const char *fmt = json ? "json" : "msgpack";
	struct mc_cand_view v, w;
	struct mc_err err;
	struct mem m = { NULL, 0 };
	bool ok = true;
	long d;

	if (build_view(&v, 3000) < 0)
		exit(1);
	for (size_t i = 0; i < v.n; i++) {
		/* every 10th was never accessed since a restore from an old snapshot */
		v.c[i].created_seq = i % 10 == 0 ? 0 : 2 * i + 1;
		v.c[i].access_seq = i % 10 == 0 ? 0 : v.c[i].created_seq + i % 7;
	}
	v.seq = (uint64_t)1 << 40; /* beyond 32 bits */
	v.c[1].access_seq = v.seq;
	TAP_OK(write_mem(&v, json, &m, &err) == 0 &&
		       read_view_str(m.buf, m.len, json, &w, &err) == 0,
	       "%s: a view with sequences writes and reads back", fmt);
	d = first_difference(&v, &w);
	TAP_OK(d == -1 && w.seq == v.seq && w.c[1].access_seq == v.seq && w.c[3].created_seq == 7,
	       "%s: the header's seq and every record's access_seq and created_seq survive", fmt);
	if (d >= 0)
		printf("#   first difference at record %ld\n", d);
	if (json)
		TAP_OK(strstr(m.buf, ",\"seq\":1099511627776}\n") != NULL &&
			       strstr(m.buf, "\"access_seq\":15,\"created_seq\":15,\"crf\":") !=
				       NULL,
		       "json: the header ends with seq; records carry access_seq and created_seq");
	mc_cand_view_free(&w);
	free(m.buf);
	m.buf = NULL;

	/* the same records in a view without a sequence: none written, none read */
	v.seq = 0;
	TAP_OK(write_mem(&v, json, &m, &err) == 0 && memmem(m.buf, m.len, "seq", 3) == NULL,
	       "%s: a view with seq 0 writes no sequence fields at all", fmt);
	TAP_OK(read_view_str(m.buf, m.len, json, &w, &err) == 0 && w.n == v.n && w.seq == 0,
	       "%s: and reads back as a view without sequences", fmt);
	for (size_t i = 0; i < w.n && ok; i++)
		ok = w.c[i].access_seq == 0 && w.c[i].created_seq == 0;
	TAP_OK(ok, "%s: every record's sequences read as 0 when absent", fmt);
	mc_cand_view_free(&w);
	free(m.buf);
	mc_cand_view_free(&v);
}

static void
test_sequences_hand_made(void)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct mc_cand_view v;
	struct mc_err err;
	const char *s;

	/* an older writer's stream: neither seq nor the record fields */
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack_header(&pk, "mc-candidates", 1);
	pack_record(&pk, NULL, NULL);
	TAP_OK(read_view_str(sb.data, sb.size, false, &v, &err) == 0 && v.n == 1 && v.seq == 0 &&
		       v.c[0].access_seq == 0 && v.c[0].created_seq == 0,
	       "msgpack: a stream without sequences reads, seq and both sequences 0");
	mc_cand_view_free(&v);
	msgpack_sbuffer_clear(&sb);
	msgpack_pack_map(&pk, 4);
	mc_pack_kv_str(&pk, "format", "mc-candidates");
	mc_pack_kv_u64(&pk, "version", 1);
	mc_pack_kv_u64(&pk, "created", 1);
	mc_pack_kv_str(&pk, "seq", "late");
	TAP_OK(read_view_str(sb.data, sb.size, false, &v, &err) == -1 &&
		       has(&err, "field 'seq': expected an unsigned integer, got a string"),
	       "msgpack: a header seq that is not a number is refused, naming it");
	mc_cand_view_free(&v);
	msgpack_sbuffer_destroy(&sb);

	s = HDR REC ",\"access_seq\":null,\"created_seq\":9}\n";
	TAP_OK(read_view_str(s, strlen(s), true, &v, &err) == 0 && v.n == 1 &&
		       v.c[0].access_seq == 0 && v.c[0].created_seq == 9,
	       "json: a null access_seq is absent (0), a created_seq alone is read");
	mc_cand_view_free(&v);
	s = HDR REC ",\"access_seq\":\"x\"}\n";
	TAP_OK(read_view_str(s, strlen(s), true, &v, &err) == -1 &&
		       has(&err, "line 2: field 'access_seq': expected an unsigned integer"),
	       "json: an access_seq that is not a number fails naming the line and field");
	mc_cand_view_free(&v);
	s = HDR REC ",\"created_seq\":-1}\n";
	TAP_OK(read_view_str(s, strlen(s), true, &v, &err) == -1 &&
		       has(&err, "line 2: field 'created_seq': expected an unsigned integer"),
	       "json: a negative created_seq is refused");
	mc_cand_view_free(&v);
	s = "{\"format\":\"mc-candidates\",\"version\":1,\"created\":5,\"seq\":77}\n" REC "}\n";
	TAP_OK(read_view_str(s, strlen(s), true, &v, &err) == 0 && v.seq == 77,
	       "json: the header's seq is read");
	mc_cand_view_free(&v);
}

/* The writer in a child process, the reader on the other end of a pipe. */
static void
test_pipe(bool json)
{
	const char *fmt = json ? "json" : "msgpack";
	struct mc_cand_view v, w;
	struct mc_err err;
	int fds[2], status = 0;
	pid_t pid;
	FILE *f;

	if (build_view(&v, 20000) < 0 || pipe(fds) < 0)
		exit(1);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		f = fdopen(fds[1], "w");
		if (f == NULL)
			_exit(1);
		/* trickle in small pieces so reads see partial records */
		setvbuf(f, NULL, _IOFBF, 1000);
		_exit(mc_cand_write(f, &v, json, &err) == 0 && fclose(f) == 0 ? 0 : 1);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	mc_cand_view_init(&w);
	TAP_OK(f != NULL && mc_cand_read(f, &w, json, &err) == 0,
	       "%s: reads 20k candidates from a pipe", fmt);
	if (f != NULL)
		fclose(f);
	waitpid(pid, &status, 0);
	TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && first_difference(&v, &w) == -1,
	       "%s: what came through the pipe is what was written", fmt);
	mc_cand_view_free(&v);
	mc_cand_view_free(&w);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
test_speed(void)
{
	struct mc_cand_view v, w;
	struct mc_err err;
	struct mem m = { NULL, 0 };
	double t0, t1;
	FILE *f;
	int rc;

	if (build_view(&v, 1000000) < 0)
		exit(1);
	t0 = now_s();
	rc = write_mem(&v, false, &m, &err);
	t1 = now_s();
	printf("# msgpack write: %.0f records/s (%zu bytes)\n", 1e6 / (t1 - t0), m.len);
	f = fmemopen(m.buf, m.len, "r");
	mc_cand_view_init(&w);
	t0 = now_s();
	rc |= mc_cand_read(f, &w, false, &err);
	t1 = now_s();
	printf("# msgpack decode: %.0f records/s\n", 1e6 / (t1 - t0));
	TAP_OK(rc == 0 && w.n == 1000000, "msgpack: 1M candidates decode");
	fclose(f);
	free(m.buf);
	mc_cand_view_free(&v);
	mc_cand_view_free(&w);
}

static void
test_view_bytes(void)
{
	struct mc_cand_view v;
	struct mc_cand c = { 0 };
	struct mc_err err;

	mc_cand_view_init(&v);
	TAP_OK(mc_cand_view_bytes(&v) == 0, "view bytes: an empty view holds none");
	c.bytes = 10;
	mc_cand_add(&v, &c, "a", 1, &err);
	c.bytes = 32;
	mc_cand_add(&v, &c, "b", 1, &err);
	TAP_OK(mc_cand_view_bytes(&v) == 42, "view bytes: the sum of the candidates' bytes");
	c.bytes = UINT64_MAX - 1;
	mc_cand_add(&v, &c, "c", 1, &err);
	TAP_OK(mc_cand_view_bytes(&v) == UINT64_MAX, "view bytes: saturates instead of wrapping");
	mc_cand_view_free(&v);
}

int
main(void)
{
	test_view();
	test_view_bytes();
	test_round_trip(false);
	test_round_trip(true);
	test_bad_msgpack();
	test_bad_json();
	test_big_integers();
	test_sequences(false);
	test_sequences(true);
	test_sequences_hand_made();
	test_pipe(false);
	test_pipe(true);
	test_speed();
	return tap_done();
}
