/*
 * The candidate view and its two stream forms.
 *
 * Memory: the records are one flat array, every key lives in one arena
 * and every distinct name (tenant, type, group, peer, tier, domain) is
 * stored once and referred to by a 32-bit id. The name index maps a
 * name to its id; its entries are the ids themselves cast to pointers
 * (ids start at 1 in the index, so no entry is ever NULL), which keeps
 * interning free of per-name bookkeeping beyond the copy of the string.
 *
 * Id 0 is the empty name, present from mc_cand_view_init() on. Because
 * init cannot fail, a fresh view points its name arrays at static
 * one-element arrays and only allocates when the first real name is
 * interned (names_cap == 0 tells the two cases apart).
 *
 * Streams: the record stream reader (mc/recstream.h) hands over every
 * record, msgpack or a JSON line, as the same msgpack_object tree; each
 * field becomes one neutral value (struct fval) judged by one set of
 * rules, so both forms accept and refuse exactly the same things.
 * Reading costs no malloc per record: the reader reuses its buffers and
 * zone, and the view's arrays grow by doubling.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "mc/candidates.h"
#include "mc/checksum.h"
#include "mc/hash.h"
#include "mc/json.h"
#include "mc/proto.h"
#include "mc/recstream.h"
#include "mc/wire.h"

#define NAME_SEED 0x6d632d63616e6473ULL /* "mc-cands" */

static char empty_name[1];
static char *empty_names[1] = { empty_name };
static uint32_t empty_name_lens[1];

void
mc_cand_view_init(struct mc_cand_view *v)
{
	memset(v, 0, sizeof(*v));
	v->names = empty_names;
	v->name_lens = empty_name_lens;
	v->nnames = 1;
}

void
mc_cand_view_free(struct mc_cand_view *v)
{
	free(v->c);
	free(v->keys);
	if (v->names_cap != 0) {
		for (uint32_t i = 1; i < v->nnames; i++)
			free(v->names[i]);
		free(v->names);
		free(v->name_lens);
	}
	if (v->name_index != NULL) {
		mc_htab_free(v->name_index);
		free(v->name_index);
	}
	/* leave a valid empty view behind, so a second free is harmless */
	mc_cand_view_init(v);
}

struct name_key {
	const struct mc_cand_view *v;
	const char *s;
	size_t len;
};

static bool
name_eq(const void *entry, const void *key)
{
	const struct name_key *k = key;
	uint32_t id = (uint32_t)(uintptr_t)entry;

	return k->v->name_lens[id] == k->len && memcmp(k->v->names[id], k->s, k->len) == 0;
}

/* Make room for one more name; the first call leaves the static arrays. */
static int
names_grow(struct mc_cand_view *v, struct mc_err *err)
{
	uint32_t ncap;
	char **names;
	uint32_t *lens;

	if (v->nnames < v->names_cap)
		return 0;
	if (v->names_cap >= UINT32_MAX / 2)
		return mc_err_set(err, MC_ERR_TOO_LARGE, "too many distinct names");
	ncap = v->names_cap == 0 ? 16 : v->names_cap * 2;
	if (v->names_cap == 0) {
		names = malloc(ncap * sizeof(*names));
		lens = malloc(ncap * sizeof(*lens));
		if (names == NULL || lens == NULL) {
			free(names);
			free(lens);
			return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for names");
		}
		names[0] = empty_name;
		lens[0] = 0;
		v->names = names;
		v->name_lens = lens;
		v->names_cap = ncap;
		return 0;
	}
	/* grow one array at a time: each realloc keeps the view consistent */
	names = realloc(v->names, ncap * sizeof(*names));
	if (names == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for names");
	v->names = names;
	lens = realloc(v->name_lens, ncap * sizeof(*lens));
	if (lens == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for names");
	v->name_lens = lens;
	v->names_cap = ncap;
	return 0;
}

int64_t
mc_cand_name(struct mc_cand_view *v, const char *s, size_t len, struct mc_err *err)
{
	struct mc_htab *h = v->name_index;
	struct name_key k = { v, s, len };
	uint64_t hash;
	void *found;
	char *copy;

	if (len == 0)
		return MC_CAND_NO_NAME;
	if (len > MC_NAME_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "name of %zu bytes is over %d", len,
				  MC_NAME_MAX);
	hash = mc_hash64(s, len, NAME_SEED);
	if (h != NULL) {
		found = mc_htab_find(h, hash, name_eq, &k);
		if (found != NULL)
			return (int64_t)(uintptr_t)found;
	} else {
		h = malloc(sizeof(*h));
		if (h == NULL)
			return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for names");
		mc_htab_init(h);
		v->name_index = h;
	}
	/* a NUL inside would make mc_cand_name_str() silently cut the name */
	if (memchr(s, '\0', len) != NULL)
		return mc_err_set(err, MC_ERR_INVALID, "name contains a NUL byte");
	if (names_grow(v, err) < 0)
		return -1;
	copy = malloc(len + 1);
	if (copy == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for names");
	memcpy(copy, s, len);
	copy[len] = '\0';
	if (mc_htab_insert(h, hash, (void *)(uintptr_t)v->nnames) < 0) {
		free(copy);
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for names");
	}
	v->names[v->nnames] = copy;
	v->name_lens[v->nnames] = (uint32_t)len;
	return v->nnames++;
}

int
mc_cand_view_reserve(struct mc_cand_view *v, size_t n, struct mc_err *err)
{
	struct mc_cand *c;

	if (n <= v->cap)
		return 0;
	if (n > SIZE_MAX / sizeof(*c))
		return mc_err_set(err, MC_ERR_TOO_LARGE, "too many candidates");
	c = realloc(v->c, n * sizeof(*c));
	if (c == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for %zu candidates", n);
	v->c = c;
	v->cap = n;
	return 0;
}

/* A full array doubles (1024 records first). */
static int
grow_records(struct mc_cand_view *v, struct mc_err *err)
{
	if (v->cap > SIZE_MAX / 2)
		return mc_err_set(err, MC_ERR_TOO_LARGE, "too many candidates");
	return mc_cand_view_reserve(v, v->cap == 0 ? 1024 : v->cap * 2, err);
}

static int
grow_keys(struct mc_cand_view *v, uint64_t need, struct mc_err *err)
{
	uint64_t ncap = v->keys_cap == 0 ? 65536 : v->keys_cap;
	char *keys;

	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return mc_err_set(err, MC_ERR_TOO_LARGE, "key arena too large");
		ncap *= 2;
	}
	keys = realloc(v->keys, (size_t)ncap);
	if (keys == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for keys");
	v->keys = keys;
	v->keys_cap = ncap;
	return 0;
}

uint64_t
mc_cand_view_bytes(const struct mc_cand_view *v)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < v->n; i++) {
		if (UINT64_MAX - sum < v->c[i].bytes)
			return UINT64_MAX;
		sum += v->c[i].bytes;
	}
	return sum;
}

int
mc_cand_add(struct mc_cand_view *v, const struct mc_cand *c, const char *key, size_t key_len,
	    struct mc_err *err)
{
	/*
	 * c or key may point into this very view (copying a candidate), and
	 * growing moves the arrays: take the record by value and the key by
	 * offset before anything is reallocated.
	 */
	struct mc_cand rec = *c;
	bool key_inside = v->keys != NULL && key >= v->keys && key < v->keys + v->keys_len;
	uint64_t key_at = key_inside ? (uint64_t)(key - v->keys) : 0;

	if (key_len == 0 || key_len > MC_KEY_MAX)
		return mc_err_set(err, MC_ERR_INVALID, "key of %zu bytes is not 1..%d", key_len,
				  MC_KEY_MAX);
	if (rec.tenant >= v->nnames || rec.type >= v->nnames || rec.group >= v->nnames ||
	    rec.peer >= v->nnames || rec.tier >= v->nnames || rec.domain >= v->nnames)
		return mc_err_set(err, MC_ERR_INVALID, "candidate names an unknown name id");
	if (v->n == v->cap && grow_records(v, err) < 0)
		return -1;
	if (v->keys_len + key_len > v->keys_cap && grow_keys(v, v->keys_len + key_len, err) < 0)
		return -1;
	if (key_inside)
		key = v->keys + key_at;
	memcpy(v->keys + v->keys_len, key, key_len);
	rec.key_off = v->keys_len;
	rec.key_len = (uint32_t)key_len;
	v->c[v->n++] = rec;
	v->keys_len += key_len;
	return 0;
}

/* ---- writing ---- */

/* A record the writer can put out: name ids in range, cost representable. */
static int
check_record(const struct mc_cand_view *v, size_t i, struct mc_err *err)
{
	const struct mc_cand *c = &v->c[i];

	if (c->tenant >= v->nnames || c->type >= v->nnames || c->group >= v->nnames ||
	    c->peer >= v->nnames || c->tier >= v->nnames || c->domain >= v->nnames)
		return mc_err_set(err, MC_ERR_INTERNAL, "candidate %zu names an unknown name id",
				  i + 1);
	if (c->key_len == 0 || c->key_off + c->key_len > v->keys_len)
		return mc_err_set(err, MC_ERR_INTERNAL, "candidate %zu has no key in the arena",
				  i + 1);
	/* negative (even -inf) means none; NaN and +inf have no JSON form */
	if (isnan(c->cost) || (c->cost > 0 && isinf(c->cost)))
		return mc_err_set(err, MC_ERR_INVALID, "candidate %zu has a non-finite cost",
				  i + 1);
	return 0;
}

static void
pack_name(msgpack_packer *pk, const struct mc_cand_view *v, const char *k, uint32_t id)
{
	mc_pack_kv_strn(pk, k, v->names[id], v->name_lens[id]);
}

static int
write_msgpack(FILE *f, const struct mc_cand_view *v, struct mc_err *err)
{
	/* a view without sequences writes what it did before they existed */
	bool seqs = v->seq != 0;
	struct mc_rs_out *o;
	msgpack_packer pk;

	o = mc_rs_out_new(f, &pk, err);
	if (o == NULL)
		return -1;
	msgpack_pack_map(&pk, 4 + seqs);
	mc_pack_kv_str(&pk, "format", MC_CAND_FORMAT);
	mc_pack_kv_u64(&pk, "version", MC_CAND_VERSION);
	mc_pack_kv_u64(&pk, "created", v->created);
	mc_pack_kv_u64(&pk, "count", v->n);
	if (seqs)
		mc_pack_kv_u64(&pk, "seq", v->seq);
	for (size_t i = 0; i < v->n && !mc_rs_out_failed(o); i++) {
		const struct mc_cand *c = &v->c[i];
		bool has_cost = c->cost >= 0;

		if (check_record(v, i, err) < 0) {
			mc_rs_out_abort(o);
			return -1;
		}
		msgpack_pack_map(&pk, 12 + (c->group != MC_CAND_NO_NAME) +
					      (c->domain != MC_CAND_NO_NAME) + has_cost + 2 * seqs +
					      (c->crf > 0) + (c->depth != 0) + (c->children != 0) +
					      ((c->flags & MC_CAND_ORPHAN) != 0) +
					      ((c->flags & MC_CAND_PROBATION) != 0));
		mc_pack_kv_strn(&pk, "key", v->keys + c->key_off, c->key_len);
		mc_pack_kv_u64(&pk, "version", c->version);
		pack_name(&pk, v, "tenant", c->tenant);
		pack_name(&pk, v, "type", c->type);
		if (c->group != MC_CAND_NO_NAME)
			pack_name(&pk, v, "group", c->group);
		pack_name(&pk, v, "peer", c->peer);
		pack_name(&pk, v, "tier", c->tier);
		if (c->domain != MC_CAND_NO_NAME)
			pack_name(&pk, v, "domain", c->domain);
		mc_pack_kv_u64(&pk, "bytes", c->bytes);
		mc_pack_kv_u64(&pk, "created", c->created);
		mc_pack_kv_u64(&pk, "last_access", c->last_access);
		mc_pack_kv_u64(&pk, "access_count", c->access_count);
		mc_pack_kv_u64(&pk, "lease_expiry", c->lease_expiry);
		mc_pack_kv_u64(&pk, "soft_pin_deadline", c->soft_pin_deadline);
		if (has_cost)
			mc_pack_kv_double(&pk, "cost", c->cost);
		if (seqs) {
			mc_pack_kv_u64(&pk, "access_seq", c->access_seq);
			mc_pack_kv_u64(&pk, "created_seq", c->created_seq);
		}
		/* chain and history fields only when they say something */
		if (c->crf > 0)
			mc_pack_kv_double(&pk, "crf", c->crf);
		if (c->depth != 0)
			mc_pack_kv_u64(&pk, "depth", c->depth);
		if (c->children != 0)
			mc_pack_kv_u64(&pk, "children", c->children);
		if (c->flags & MC_CAND_ORPHAN)
			mc_pack_kv_u64(&pk, "orphan", 1);
		if (c->flags & MC_CAND_PROBATION)
			mc_pack_kv_u64(&pk, "probation", 1);
	}
	return mc_rs_out_done(o, "candidates", err);
}

static void
json_name(FILE *f, const struct mc_cand_view *v, const char *k, uint32_t id)
{
	fprintf(f, ",\"%s\":", k);
	mc_json_write_str(f, v->names[id], v->name_lens[id]);
}

static void
json_u64(FILE *f, const char *k, uint64_t n)
{
	fprintf(f, ",\"%s\":", k);
	mc_json_write_u64(f, n);
}

static int
write_json(FILE *f, const struct mc_cand_view *v, struct mc_err *err)
{
	bool seqs = v->seq != 0; /* as in write_msgpack */
	int rc = 0;

	/* one lock for the whole stream instead of one per call */
	flockfile(f);
	fprintf(f, "{\"format\":\"%s\",\"version\":%d", MC_CAND_FORMAT, MC_CAND_VERSION);
	json_u64(f, "created", v->created);
	json_u64(f, "count", v->n);
	if (seqs)
		json_u64(f, "seq", v->seq);
	fputs("}\n", f);
	for (size_t i = 0; i < v->n && !ferror(f); i++) {
		const struct mc_cand *c = &v->c[i];

		if (check_record(v, i, err) < 0) {
			rc = -1;
			break;
		}
		fputs("{\"key\":", f);
		mc_json_write_str(f, v->keys + c->key_off, c->key_len);
		json_u64(f, "version", c->version);
		json_name(f, v, "tenant", c->tenant);
		json_name(f, v, "type", c->type);
		if (c->group != MC_CAND_NO_NAME)
			json_name(f, v, "group", c->group);
		json_name(f, v, "peer", c->peer);
		json_name(f, v, "tier", c->tier);
		if (c->domain != MC_CAND_NO_NAME)
			json_name(f, v, "domain", c->domain);
		json_u64(f, "bytes", c->bytes);
		json_u64(f, "created", c->created);
		json_u64(f, "last_access", c->last_access);
		json_u64(f, "access_count", c->access_count);
		json_u64(f, "lease_expiry", c->lease_expiry);
		json_u64(f, "soft_pin_deadline", c->soft_pin_deadline);
		/* %.17g gives back the same double when read */
		if (c->cost >= 0)
			fprintf(f, ",\"cost\":%.17g", c->cost);
		if (seqs) {
			json_u64(f, "access_seq", c->access_seq);
			json_u64(f, "created_seq", c->created_seq);
		}
		if (c->crf > 0)
			fprintf(f, ",\"crf\":%.17g", c->crf);
		if (c->depth != 0)
			json_u64(f, "depth", c->depth);
		if (c->children != 0)
			json_u64(f, "children", c->children);
		if (c->flags & MC_CAND_ORPHAN)
			json_u64(f, "orphan", 1);
		if (c->flags & MC_CAND_PROBATION)
			json_u64(f, "probation", 1);
		fputs("}\n", f);
	}
	funlockfile(f);
	if (rc < 0)
		return -1;
	if (ferror(f))
		return mc_err_errno(err, "cannot write candidates");
	return 0;
}

int
mc_cand_write(FILE *f, const struct mc_cand_view *v, bool json, struct mc_err *err)
{
	int rc = json ? write_json(f, v, err) : write_msgpack(f, v, err);

	if (rc < 0)
		return -1;
	/* push the stream to a pipe's reader now, and learn of late errors */
	if (fflush(f) != 0)
		return mc_err_errno(err, "cannot write candidates");
	return 0;
}

/* ---- reading ---- */

#define MAX_RECORD (1u << 20) /* a record (msgpack) or a line (JSON) */

/*
 * A field value as either format presents it, so that one set of rules
 * decides what each field accepts and both readers say the same things.
 */
enum fv_kind { FV_NIL, FV_BOOL, FV_UINT, FV_NEG, FV_FLOAT, FV_STR, FV_BIN, FV_OTHER };

struct fval {
	int kind;
	uint64_t u;
	double d;
	const char *s; /* FV_STR/FV_BIN: not NUL-terminated */
	size_t len;
};

static const char *const kind_names[] = {
	[FV_NIL] = "null",
	[FV_BOOL] = "a boolean",
	[FV_UINT] = "an unsigned integer",
	[FV_NEG] = "a negative integer",
	[FV_FLOAT] = "a float",
	[FV_STR] = "a string",
	[FV_BIN] = "binary data",
	[FV_OTHER] = "a nested value",
};

enum field {
	F_KEY,
	F_VERSION,
	F_TENANT,
	F_TYPE,
	F_GROUP,
	F_PEER,
	F_TIER,
	F_DOMAIN,
	F_BYTES,
	F_CREATED,
	F_LAST_ACCESS,
	F_ACCESS_COUNT,
	F_LEASE_EXPIRY,
	F_SOFT_PIN_DEADLINE,
	F_COST,
	F_ACCESS_SEQ,
	F_CREATED_SEQ,
	F_CRF,
	F_DEPTH,
	F_CHILDREN,
	F_ORPHAN,
	F_PROBATION,
	F_COUNT
};

static const char *const field_names[F_COUNT] = {
	[F_KEY] = "key",
	[F_VERSION] = "version",
	[F_TENANT] = "tenant",
	[F_TYPE] = "type",
	[F_GROUP] = "group",
	[F_PEER] = "peer",
	[F_TIER] = "tier",
	[F_DOMAIN] = "domain",
	[F_BYTES] = "bytes",
	[F_CREATED] = "created",
	[F_LAST_ACCESS] = "last_access",
	[F_ACCESS_COUNT] = "access_count",
	[F_LEASE_EXPIRY] = "lease_expiry",
	[F_SOFT_PIN_DEADLINE] = "soft_pin_deadline",
	[F_COST] = "cost",
	[F_ACCESS_SEQ] = "access_seq",
	[F_CREATED_SEQ] = "created_seq",
	[F_CRF] = "crf",
	[F_DEPTH] = "depth",
	[F_CHILDREN] = "children",
	[F_ORPHAN] = "orphan",
	[F_PROBATION] = "probation",
};

/* the sequences came later than the rest: older streams lack them */
#define OPTIONAL_FIELDS                                                                 \
	((1u << F_GROUP) | (1u << F_DOMAIN) | (1u << F_COST) | (1u << F_ACCESS_SEQ) |   \
	 (1u << F_CREATED_SEQ) | (1u << F_CRF) | (1u << F_DEPTH) | (1u << F_CHILDREN) | \
	 (1u << F_ORPHAN) | (1u << F_PROBATION))
#define REQUIRED_FIELDS (((1u << F_COUNT) - 1) & ~OPTIONAL_FIELDS)

/* Header fields, kept as values until the whole header is seen. */
enum { H_FORMAT, H_VERSION, H_CREATED, H_COUNT, H_SEQ, H_NFIELDS };
static const char *const header_names[H_NFIELDS] = { "format", "version", "created", "count",
						     "seq" };

struct reader {
	struct mc_rs *rs; /* framing, JSON parsing, positions in errors */
	struct mc_cand_view *v;
	bool in_header;
	uint64_t done; /* records read so far */
	/* the record being read; key points into the reader's record */
	struct mc_cand c;
	const char *key;
	size_t key_len;
	uint32_t seen; /* bit per enum field */
	/*
	 * The id each name field had in the previous record: consecutive
	 * records mostly share tenant, type, peer and tier, and comparing
	 * with the last one is cheaper than hashing.
	 */
	uint32_t last_id[F_COUNT];
	struct fval hdr[H_NFIELDS];
	bool hdr_seen[H_NFIELDS];
	bool have_count;
	uint64_t count;
};

typedef int (*field_fn)(struct reader *r, const char *name, size_t len, const struct fval *fv,
			struct mc_err *err);

/* Fail with the position prefixed: "header: ", "record N: " or "line N: ". */
static int __attribute__((format(printf, 3, 4)))
fail(struct reader *r, struct mc_err *err, const char *fmt, ...)
{
	char msg[MC_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mc_rs_fail(r->rs, err, "%s", msg);
}

static int
field_id(const char *s, size_t len)
{
	int id;

	/* one candidate name per length, except where two share a length */
	switch (len) {
	case 3:
		id = s[0] == 'k' ? F_KEY : F_CRF;
		break;
	case 4:
		id = s[0] == 't' ? (s[1] == 'y' ? F_TYPE : F_TIER) : s[0] == 'p' ? F_PEER : F_COST;
		break;
	case 5:
		id = s[0] == 'b' ? F_BYTES : s[0] == 'g' ? F_GROUP : F_DEPTH;
		break;
	case 6:
		id = s[0] == 't' ? F_TENANT : s[0] == 'd' ? F_DOMAIN : F_ORPHAN;
		break;
	case 7:
		id = s[0] == 'v' ? F_VERSION : F_CREATED;
		break;
	case 8:
		id = F_CHILDREN;
		break;
	case 9:
		id = F_PROBATION;
		break;
	case 10:
		id = F_ACCESS_SEQ;
		break;
	case 11:
		id = s[0] == 'l' ? F_LAST_ACCESS : F_CREATED_SEQ;
		break;
	case 12:
		id = s[0] == 'a' ? F_ACCESS_COUNT : F_LEASE_EXPIRY;
		break;
	case 17:
		id = F_SOFT_PIN_DEADLINE;
		break;
	default:
		return -1;
	}
	return memcmp(s, field_names[id], len) == 0 ? id : -1;
}

/*
 * An unsigned field given as the decimal string a JSON writer uses above
 * 2^53 (mc/json.h) becomes the number it spells; anything else stays.
 */
static void
fval_number(struct fval *fv)
{
	uint64_t u;

	if (fv->kind == FV_STR && mc_json_parse_u64(fv->s, fv->len, &u)) {
		fv->kind = FV_UINT;
		fv->u = u;
	}
}

static int
bad_type(struct reader *r, int id, const char *want, const struct fval *fv, struct mc_err *err)
{
	return fail(r, err, "field '%s': expected %s, got %s", field_names[id], want,
		    kind_names[fv->kind]);
}

static int
set_name(struct reader *r, int id, const struct fval *fv, uint32_t *out, struct mc_err *err)
{
	struct mc_cand_view *v = r->v;
	uint32_t last = r->last_id[id];
	struct mc_err e;
	int64_t n;

	if (fv->kind != FV_STR)
		return bad_type(r, id, "a string", fv, err);
	if (fv->len == 0) {
		if (id == F_GROUP || id == F_DOMAIN) {
			*out = MC_CAND_NO_NAME;
			return 0;
		}
		return fail(r, err, "field '%s': empty", field_names[id]);
	}
	if (v->name_lens[last] == fv->len && memcmp(v->names[last], fv->s, fv->len) == 0) {
		*out = last;
		return 0;
	}
	n = mc_cand_name(v, fv->s, fv->len, &e);
	if (n < 0) {
		if (e.code == MC_ERR_NO_SPACE)
			return mc_err_set(err, e.code, "%s", e.msg);
		return fail(r, err, "field '%s': %s", field_names[id], e.msg);
	}
	*out = r->last_id[id] = (uint32_t)n;
	return 0;
}

static uint32_t *
name_slot(struct mc_cand *c, int id)
{
	switch (id) {
	case F_TENANT:
		return &c->tenant;
	case F_TYPE:
		return &c->type;
	case F_GROUP:
		return &c->group;
	case F_PEER:
		return &c->peer;
	case F_TIER:
		return &c->tier;
	default:
		return &c->domain;
	}
}

static int
record_field(struct reader *r, const char *name, size_t len, const struct fval *fv,
	     struct mc_err *err)
{
	uint64_t *num = NULL;
	int id = field_id(name, len);

	if (id < 0)
		return 0; /* a field from a newer writer */
	if (fv->kind == FV_NIL && ((1u << id) & OPTIONAL_FIELDS)) {
		/* null is how a producer may spell "absent" */
		if (id == F_COST)
			r->c.cost = -1;
		else if (id == F_GROUP)
			r->c.group = MC_CAND_NO_NAME;
		else if (id == F_DOMAIN)
			r->c.domain = MC_CAND_NO_NAME;
		else if (id == F_ACCESS_SEQ)
			r->c.access_seq = 0;
		else if (id == F_CREATED_SEQ)
			r->c.created_seq = 0;
		/* the chain and history fields start at 0 in record_begin */
		r->seen |= 1u << id;
		return 0;
	}
	switch (id) {
	case F_KEY:
		if (fv->kind != FV_STR && fv->kind != FV_BIN)
			return bad_type(r, id, "a string", fv, err);
		if (fv->len == 0)
			return fail(r, err, "field 'key': empty");
		if (fv->len > MC_KEY_MAX)
			return fail(r, err, "field 'key': %zu bytes, over the limit of %d", fv->len,
				    MC_KEY_MAX);
		r->key = fv->s;
		r->key_len = fv->len;
		break;
	case F_TENANT:
	case F_TYPE:
	case F_GROUP:
	case F_PEER:
	case F_TIER:
	case F_DOMAIN:
		if (set_name(r, id, fv, name_slot(&r->c, id), err) < 0)
			return -1;
		break;
	case F_COST:
		if (fv->kind == FV_UINT)
			r->c.cost = (double)fv->u;
		else if (fv->kind == FV_FLOAT)
			r->c.cost = fv->d;
		else
			return bad_type(r, id, "a number", fv, err);
		if (!isfinite(r->c.cost) || r->c.cost < 0)
			return fail(r, err, "field 'cost': %g is not a finite number >= 0",
				    r->c.cost);
		break;
	case F_VERSION:
		num = &r->c.version;
		break;
	case F_BYTES:
		num = &r->c.bytes;
		break;
	case F_CREATED:
		num = &r->c.created;
		break;
	case F_LAST_ACCESS:
		num = &r->c.last_access;
		break;
	case F_ACCESS_COUNT:
		num = &r->c.access_count;
		break;
	case F_LEASE_EXPIRY:
		num = &r->c.lease_expiry;
		break;
	case F_SOFT_PIN_DEADLINE:
		num = &r->c.soft_pin_deadline;
		break;
	case F_ACCESS_SEQ:
		num = &r->c.access_seq;
		break;
	case F_CREATED_SEQ:
		num = &r->c.created_seq;
		break;
	case F_CRF:
		if (fv->kind == FV_UINT)
			r->c.crf = (double)fv->u;
		else if (fv->kind == FV_FLOAT)
			r->c.crf = fv->d;
		else
			return bad_type(r, id, "a number", fv, err);
		if (!isfinite(r->c.crf) || r->c.crf < 0)
			return fail(r, err, "field 'crf': %g is not a finite number >= 0",
				    r->c.crf);
		break;
	case F_DEPTH:
	case F_CHILDREN:
	case F_ORPHAN:
	case F_PROBATION:
		if (fv->kind != FV_UINT || fv->u > UINT32_MAX)
			return bad_type(r, id, "an unsigned 32-bit integer", fv, err);
		if (id == F_DEPTH)
			r->c.depth = (uint32_t)fv->u;
		else if (id == F_CHILDREN)
			r->c.children = (uint32_t)fv->u;
		else if (fv->u > 1)
			return fail(r, err, "field '%s': %" PRIu64 " is neither 0 nor 1",
				    field_names[id], fv->u);
		else if (fv->u == 1)
			r->c.flags |= id == F_ORPHAN ? MC_CAND_ORPHAN : MC_CAND_PROBATION;
		break;
	default:
		break;
	}
	if (num != NULL) {
		struct fval n = *fv;

		fval_number(&n);
		if (n.kind != FV_UINT)
			return bad_type(r, id, "an unsigned integer", fv, err);
		*num = n.u;
	}
	r->seen |= 1u << id;
	return 0;
}

static void
record_begin(struct reader *r)
{
	memset(&r->c, 0, sizeof(r->c));
	r->c.cost = -1;
	r->key = NULL;
	r->key_len = 0;
	r->seen = 0;
}

static int
record_end(struct reader *r, struct mc_err *err)
{
	uint32_t missing = REQUIRED_FIELDS & ~r->seen;
	struct mc_err e;

	if (missing != 0)
		return fail(r, err, "field '%s': missing", field_names[__builtin_ctz(missing)]);
	if (r->have_count && r->done >= r->count)
		return fail(r, err, "one record more than the header's count %" PRIu64, r->count);
	if (mc_cand_add(r->v, &r->c, r->key, r->key_len, &e) < 0) {
		if (e.code == MC_ERR_NO_SPACE || e.code == MC_ERR_TOO_LARGE)
			return mc_err_set(err, e.code, "%s", e.msg);
		return fail(r, err, "%s", e.msg);
	}
	r->done++;
	return 0;
}

static int
header_field(struct reader *r, const char *name, size_t len, const struct fval *fv,
	     struct mc_err *err)
{
	(void)err;
	for (int i = 0; i < H_NFIELDS; i++) {
		if (strlen(header_names[i]) == len && memcmp(header_names[i], name, len) == 0) {
			r->hdr[i] = *fv;
			r->hdr_seen[i] = true;
		}
	}
	return 0;
}

/* Judge the header once all of it is in: the format first, then the rest. */
static int
header_end(struct reader *r, struct mc_err *err)
{
	const struct fval *h = r->hdr;

	if (!r->hdr_seen[H_FORMAT] || h[H_FORMAT].kind != FV_STR ||
	    h[H_FORMAT].len != strlen(MC_CAND_FORMAT) ||
	    memcmp(h[H_FORMAT].s, MC_CAND_FORMAT, h[H_FORMAT].len) != 0)
		return mc_err_set(err, MC_ERR_PROTO, "not an %s stream", MC_CAND_FORMAT);
	for (int i = H_VERSION; i < H_NFIELDS; i++) {
		fval_number(&r->hdr[i]);
		if (!r->hdr_seen[i] || h[i].kind == FV_NIL) {
			if (i == H_COUNT || i == H_SEQ)
				continue;
			return fail(r, err, "field '%s': missing", header_names[i]);
		}
		if (h[i].kind != FV_UINT)
			return fail(r, err, "field '%s': expected an unsigned integer, got %s",
				    header_names[i], kind_names[h[i].kind]);
	}
	if (h[H_VERSION].u != MC_CAND_VERSION)
		return mc_err_set(err, MC_ERR_PROTO, "unsupported %s version %" PRIu64,
				  MC_CAND_FORMAT, h[H_VERSION].u);
	r->v->created = h[H_CREATED].u;
	if (r->hdr_seen[H_SEQ] && h[H_SEQ].kind == FV_UINT)
		r->v->seq = h[H_SEQ].u;
	if (r->hdr_seen[H_COUNT] && h[H_COUNT].kind == FV_UINT) {
		r->have_count = true;
		r->count = h[H_COUNT].u;
	}
	r->in_header = false;
	return 0;
}

/* The stream ended cleanly between records: was that all of it? */
static int
stream_end(struct reader *r, struct mc_err *err)
{
	if (r->have_count && r->done < r->count)
		return mc_err_set(err, MC_ERR_PROTO,
				  "record %" PRIu64 ": missing, the stream ends after %" PRIu64
				  " of %" PRIu64 " records",
				  r->done + 1, r->done, r->count);
	return 0;
}

static void
obj_to_fval(const msgpack_object *o, struct fval *fv)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		fv->kind = FV_NIL;
		break;
	case MSGPACK_OBJECT_BOOLEAN:
		fv->kind = FV_BOOL;
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		fv->kind = FV_UINT;
		fv->u = o->via.u64;
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		fv->kind = FV_NEG;
		break;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		fv->kind = FV_FLOAT;
		fv->d = o->via.f64;
		break;
	case MSGPACK_OBJECT_STR:
		fv->kind = FV_STR;
		fv->s = o->via.str.ptr;
		fv->len = o->via.str.size;
		break;
	case MSGPACK_OBJECT_BIN:
		fv->kind = FV_BIN;
		fv->s = o->via.bin.ptr;
		fv->len = o->via.bin.size;
		break;
	default:
		fv->kind = FV_OTHER;
		break;
	}
}

/* Judge one record, from either form, by the field rules above. */
static int
judge(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	field_fn fn = r->in_header ? header_field : record_field;

	if (o->type != MSGPACK_OBJECT_MAP) {
		if (r->in_header)
			return mc_err_set(err, MC_ERR_PROTO, "not an %s stream", MC_CAND_FORMAT);
		return fail(r, err, "not a map");
	}
	if (!r->in_header)
		record_begin(r);
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];
		struct fval fv;

		if (kv->key.type != MSGPACK_OBJECT_STR)
			continue;
		obj_to_fval(&kv->val, &fv);
		if (fn(r, kv->key.via.str.ptr, kv->key.via.str.size, &fv, err) < 0)
			return -1;
	}
	return r->in_header ? header_end(r, err) : record_end(r, err);
}

/*
 * JSON lines are read flat (MC_RS_FLAT): the writer never nests, and a
 * nested value in a line is refused rather than silently skipped.
 */
int
mc_cand_read(FILE *f, struct mc_cand_view *v, bool json, struct mc_err *err)
{
	struct reader *r;
	const msgpack_object *o;
	int rc;

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return mc_err_set(err, MC_ERR_NO_SPACE, "cannot read candidates: out of memory");
	r->v = v;
	r->in_header = true;
	r->rs = mc_rs_open(f, json, MC_CAND_FORMAT, "candidates", MAX_RECORD, json ? MC_RS_FLAT : 0,
			   err);
	if (r->rs == NULL) {
		free(r);
		return -1;
	}
	while ((rc = mc_rs_next(r->rs, &o, err)) == 1) {
		if (judge(r, o, err) < 0) {
			rc = -1;
			break;
		}
	}
	if (rc == 0)
		rc = stream_end(r, err);
	mc_rs_close(r->rs);
	free(r);
	return rc;
}
