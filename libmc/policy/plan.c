/*
 * Eviction plans and execution reports: building them and their stream
 * forms (man/mc-plan.5, man/mc-report.5).
 *
 * A stage record carries its victims as a nested array, so one stage of
 * a large plan would outgrow what a reader may safely take in one record
 * (the wire pre-pass caps bytes and elements). The writer therefore puts
 * a stage's victims out in chunks: the stage record carries the first
 * chunk and each further chunk is a record {t: "victims", id, victims}
 * that continues the stage just before it. Readers glue them back.
 *
 * Reading goes through the record stream reader (mc/recstream.h): every
 * msgpack record is checked and unpacked into one reused zone, and a JSON
 * line is parsed into the same msgpack_object tree, so one decoder judges
 * both forms and they accept and refuse the same things.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "mc/json.h"
#include "mc/plan.h"
#include "mc/proto.h"
#include "mc/recstream.h"
#include "mc/wire.h"

#define MAX_RECORD (4u << 20) /* a record (msgpack) or a line (JSON) */
/*
 * Chunk limits: a victim is at most ~27 KiB as JSON (a 4 KiB key fully
 * escaped plus three names), so a chunk cut at 256 KiB of estimate stays
 * far below MAX_RECORD, and 4096 victims far below MC_WIRE_MAX_ELEMS.
 */
#define CHUNK_VICTIMS 4096
#define CHUNK_BYTES (256u << 10)

static const char *const reason_names[MC_FAIL_REASON_COUNT] = {
	[MC_FAIL_GONE] = "gone",
	[MC_FAIL_VERSION] = "version changed",
	[MC_FAIL_LEASED] = "lease renewed",
	[MC_FAIL_PINNED] = "pinned",
	[MC_FAIL_GROUP_LEASED] = "group member leased",
	[MC_FAIL_BUSY] = "replica busy",
	[MC_FAIL_EVICTED] = "already evicted",
};

static const char *const kind_names[] = {
	[MC_STAGE_EVICT] = "evict",
	[MC_STAGE_FALLBACK] = "fallback",
};

const char *
mc_fail_reason_name(int reason)
{
	if (reason < 0 || reason >= MC_FAIL_REASON_COUNT)
		return "unknown";
	return reason_names[reason];
}

int
mc_fail_reason_from_name(const char *s, size_t len)
{
	for (int i = 0; i < MC_FAIL_REASON_COUNT; i++) {
		if (strlen(reason_names[i]) == len && memcmp(reason_names[i], s, len) == 0)
			return i;
	}
	return -1;
}

static const char *
kind_name(int kind)
{
	return kind == MC_STAGE_FALLBACK ? kind_names[MC_STAGE_FALLBACK]
					 : kind_names[MC_STAGE_EVICT];
}

/* ---- building plans ---- */

void
mc_plan_init(struct mc_plan *p)
{
	memset(p, 0, sizeof(*p));
	mc_cand_view_init(&p->view);
}

void
mc_plan_free(struct mc_plan *p)
{
	for (size_t i = 0; i < p->nstages; i++)
		free(p->stages[i].victims);
	free(p->stages);
	mc_cand_view_free(&p->view);
	mc_plan_init(p);
}

struct mc_stage *
mc_plan_add_stage(struct mc_plan *p, int kind, const char *scope, uint64_t target,
		  uint64_t lowerbound, struct mc_err *err)
{
	size_t len = strlen(scope);
	struct mc_stage *s;

	if (kind != MC_STAGE_EVICT && kind != MC_STAGE_FALLBACK) {
		mc_err_set(err, MC_ERR_INVALID, "unknown stage kind %d", kind);
		return NULL;
	}
	if (len >= MC_SCOPE_MAX) {
		mc_err_set(err, MC_ERR_INVALID, "scope of %zu bytes is over %d", len,
			   MC_SCOPE_MAX - 1);
		return NULL;
	}
	if (p->nstages == p->cap) {
		size_t ncap = p->cap == 0 ? 8 : p->cap * 2;

		if (ncap > UINT32_MAX) {
			mc_err_set(err, MC_ERR_TOO_LARGE, "too many stages");
			return NULL;
		}
		s = realloc(p->stages, ncap * sizeof(*s));
		if (s == NULL) {
			mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for stages");
			return NULL;
		}
		p->stages = s;
		p->cap = ncap;
	}
	s = &p->stages[p->nstages];
	memset(s, 0, sizeof(*s));
	/* ids count from 1 in plan order; a planner may renumber */
	s->id = (uint32_t)(p->nstages + 1);
	s->kind = kind;
	memcpy(s->scope, scope, len + 1);
	s->target = target;
	s->lowerbound = lowerbound;
	p->nstages++;
	return s;
}

int
mc_stage_add_victim(struct mc_stage *s, uint32_t i, struct mc_err *err)
{
	if (s->nvictims == s->cap) {
		size_t ncap = s->cap == 0 ? 64 : s->cap * 2;
		uint32_t *v;

		if (ncap > SIZE_MAX / sizeof(*v))
			return mc_err_set(err, MC_ERR_TOO_LARGE, "too many victims");
		v = realloc(s->victims, ncap * sizeof(*v));
		if (v == NULL)
			return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for victims");
		s->victims = v;
		s->cap = ncap;
	}
	s->victims[s->nvictims++] = i;
	return 0;
}

/* ---- building reports ---- */

void
mc_report_init(struct mc_report *r)
{
	memset(r, 0, sizeof(*r));
}

void
mc_report_free(struct mc_report *r)
{
	for (size_t i = 0; i < r->nstages; i++)
		free(r->stages[i].failures);
	free(r->stages);
	mc_report_init(r);
}

struct mc_stage_report *
mc_report_add_stage(struct mc_report *r, const struct mc_stage *s, struct mc_err *err)
{
	struct mc_stage_report *sr;

	if (r->nstages == r->cap) {
		size_t ncap = r->cap == 0 ? 8 : r->cap * 2;

		sr = realloc(r->stages, ncap * sizeof(*sr));
		if (sr == NULL) {
			mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for report stages");
			return NULL;
		}
		r->stages = sr;
		r->cap = ncap;
	}
	sr = &r->stages[r->nstages++];
	memset(sr, 0, sizeof(*sr));
	sr->id = s->id;
	sr->kind = s->kind;
	memcpy(sr->scope, s->scope, sizeof(sr->scope));
	sr->scope[MC_SCOPE_MAX - 1] = '\0';
	/* the executor fills the bytes: only it knows what the victims weigh */
	sr->planned_objects = s->nvictims;
	return sr;
}

int
mc_stage_report_fail(struct mc_stage_report *sr, uint32_t victim, int reason, struct mc_err *err)
{
	if (reason < 0 || reason >= MC_FAIL_REASON_COUNT)
		return mc_err_set(err, MC_ERR_INVALID, "unknown failure reason %d", reason);
	if (sr->nfailures == sr->cap) {
		size_t ncap = sr->cap == 0 ? 16 : sr->cap * 2;
		struct mc_stage_failure *f;

		if (ncap > SIZE_MAX / sizeof(*f))
			return mc_err_set(err, MC_ERR_TOO_LARGE, "too many failures");
		f = realloc(sr->failures, ncap * sizeof(*f));
		if (f == NULL)
			return mc_err_set(err, MC_ERR_NO_SPACE, "out of memory for failures");
		sr->failures = f;
		sr->cap = ncap;
	}
	sr->failures[sr->nfailures].victim = victim;
	sr->failures[sr->nfailures].reason = reason;
	sr->nfailures++;
	return 0;
}

/* ---- writing ---- */

/* A view record the writers can name: in range, names known, key there. */
static int
check_victim(const struct mc_cand_view *v, uint32_t i, struct mc_err *err)
{
	const struct mc_cand *c;

	if (i >= v->n)
		return mc_err_set(err, MC_ERR_INTERNAL, "victim %" PRIu32 " is not in the view", i);
	c = &v->c[i];
	if (c->tenant >= v->nnames || c->peer >= v->nnames || c->tier >= v->nnames ||
	    c->key_len == 0 || c->key_off + c->key_len > v->keys_len)
		return mc_err_set(err, MC_ERR_INTERNAL, "victim %" PRIu32 " is not a whole record",
				  i);
	return 0;
}

/* The view record of entry i of a stage's victims or of a report stage's failures. */
typedef uint32_t (*entry_fn)(const void *list, size_t i);

static uint32_t
victim_at(const void *list, size_t i)
{
	return ((const struct mc_stage *)list)->victims[i];
}

static uint32_t
failure_at(const void *list, size_t i)
{
	return ((const struct mc_stage_report *)list)->failures[i].victim;
}

/* Where the chunk of n entries of list starting at from ends (see the top). */
static size_t
chunk_end_of(const struct mc_cand_view *v, entry_fn at, const void *list, size_t n, size_t from)
{
	size_t i = from, est = 0;

	while (i < n && i - from < CHUNK_VICTIMS) {
		const struct mc_cand *c = &v->c[at(list, i)];

		/*
		 * Only what the entry writes counts: a failure names tenant
		 * and key, so a report read back (whose name table has no
		 * peers) cuts its chunks where the original did.
		 */
		est += 96 + 6 * ((size_t)c->key_len + v->name_lens[c->tenant]);
		if (at == victim_at)
			est += 6 * ((size_t)v->name_lens[c->peer] + v->name_lens[c->tier]);
		if (est > CHUNK_BYTES && i > from)
			break;
		i++;
	}
	return i;
}

static size_t
chunk_end(const struct mc_cand_view *v, const struct mc_stage *s, size_t from)
{
	return chunk_end_of(v, victim_at, s, s->nvictims, from);
}

static size_t
failures_end(const struct mc_plan *p, const struct mc_stage_report *sr, size_t from)
{
	return p == NULL ? sr->nfailures
			 : chunk_end_of(&p->view, failure_at, sr, sr->nfailures, from);
}

static int
check_stage(const struct mc_plan *p, const struct mc_stage *s, struct mc_err *err)
{
	if (s->kind != MC_STAGE_EVICT && s->kind != MC_STAGE_FALLBACK)
		return mc_err_set(err, MC_ERR_INTERNAL, "stage %" PRIu32 " has unknown kind %d",
				  s->id, s->kind);
	if (memchr(s->scope, '\0', MC_SCOPE_MAX) == NULL ||
	    memchr(s->cond_scope, '\0', MC_SCOPE_MAX) == NULL)
		return mc_err_set(err, MC_ERR_INTERNAL,
				  "stage %" PRIu32 " has an unterminated scope", s->id);
	for (size_t i = 0; i < s->nvictims; i++) {
		if (check_victim(&p->view, s->victims[i], err) < 0)
			return -1;
	}
	return 0;
}

static void
pack_name(msgpack_packer *pk, const struct mc_cand_view *v, const char *k, uint32_t id)
{
	mc_pack_kv_strn(pk, k, v->names[id], v->name_lens[id]);
}

static void
pack_victims(msgpack_packer *pk, const struct mc_cand_view *v, const struct mc_stage *s,
	     size_t from, size_t to)
{
	mc_pack_key(pk, "victims");
	msgpack_pack_array(pk, to - from);
	for (size_t i = from; i < to; i++) {
		const struct mc_cand *c = &v->c[s->victims[i]];

		msgpack_pack_map(pk, 6);
		pack_name(pk, v, "tenant", c->tenant);
		mc_pack_kv_strn(pk, "key", mc_cand_key(v, c), c->key_len);
		mc_pack_kv_u64(pk, "version", c->version);
		pack_name(pk, v, "peer", c->peer);
		pack_name(pk, v, "tier", c->tier);
		mc_pack_kv_u64(pk, "bytes", c->bytes);
	}
}

static void
pack_stage(msgpack_packer *pk, const struct mc_plan *p, const struct mc_stage *s)
{
	bool fb = s->kind == MC_STAGE_FALLBACK;
	size_t from = 0, to = chunk_end(&p->view, s, 0);

	msgpack_pack_map(pk, 7 + (fb ? 2 : 0) + (s->soft_pinned ? 1 : 0));
	mc_pack_kv_str(pk, "t", "stage");
	mc_pack_kv_u64(pk, "id", s->id);
	mc_pack_kv_str(pk, "scope", s->scope);
	mc_pack_kv_str(pk, "kind", kind_name(s->kind));
	mc_pack_kv_u64(pk, "target", s->target);
	mc_pack_kv_u64(pk, "lowerbound", s->lowerbound);
	if (fb) {
		mc_pack_kv_str(pk, "cond_scope", s->cond_scope);
		mc_pack_kv_u64(pk, "cond_lowerbound", s->cond_lowerbound);
	}
	/* written only when set, so plans without a second pass read as before */
	if (s->soft_pinned)
		mc_pack_kv_bool(pk, "soft_pinned", true);
	pack_victims(pk, &p->view, s, from, to);
	while (to < s->nvictims) {
		from = to;
		to = chunk_end(&p->view, s, from);
		msgpack_pack_map(pk, 3);
		mc_pack_kv_str(pk, "t", "victims");
		mc_pack_kv_u64(pk, "id", s->id);
		pack_victims(pk, &p->view, s, from, to);
	}
}

static void
json_name(FILE *f, const struct mc_cand_view *v, const char *k, uint32_t id)
{
	fprintf(f, ",\"%s\":", k);
	mc_json_write_str(f, v->names[id], v->name_lens[id]);
}

static void
json_victims(FILE *f, const struct mc_cand_view *v, const struct mc_stage *s, size_t from,
	     size_t to)
{
	fputs(",\"victims\":[", f);
	for (size_t i = from; i < to; i++) {
		const struct mc_cand *c = &v->c[s->victims[i]];

		fputs(i == from ? "{\"tenant\":" : ",{\"tenant\":", f);
		mc_json_write_str(f, v->names[c->tenant], v->name_lens[c->tenant]);
		fputs(",\"key\":", f);
		mc_json_write_str(f, mc_cand_key(v, c), c->key_len);
		fprintf(f, ",\"version\":%" PRIu64, c->version);
		json_name(f, v, "peer", c->peer);
		json_name(f, v, "tier", c->tier);
		fprintf(f, ",\"bytes\":%" PRIu64 "}", c->bytes);
	}
	fputs("]}\n", f);
}

static void
json_stage(FILE *f, const struct mc_plan *p, const struct mc_stage *s)
{
	size_t from = 0, to = chunk_end(&p->view, s, 0);

	fprintf(f, "{\"t\":\"stage\",\"id\":%" PRIu32 ",\"scope\":", s->id);
	mc_json_write_str(f, s->scope, strlen(s->scope));
	fprintf(f, ",\"kind\":\"%s\",\"target\":%" PRIu64 ",\"lowerbound\":%" PRIu64,
		kind_name(s->kind), s->target, s->lowerbound);
	if (s->kind == MC_STAGE_FALLBACK) {
		fputs(",\"cond_scope\":", f);
		mc_json_write_str(f, s->cond_scope, strlen(s->cond_scope));
		fprintf(f, ",\"cond_lowerbound\":%" PRIu64, s->cond_lowerbound);
	}
	if (s->soft_pinned)
		fputs(",\"soft_pinned\":true", f);
	json_victims(f, &p->view, s, from, to);
	while (to < s->nvictims) {
		from = to;
		to = chunk_end(&p->view, s, from);
		fprintf(f, "{\"t\":\"victims\",\"id\":%" PRIu32, s->id);
		json_victims(f, &p->view, s, from, to);
	}
}

int
mc_plan_write(FILE *f, const struct mc_plan *p, bool json, struct mc_err *err)
{
	size_t plen = strnlen(p->policy, sizeof(p->policy));
	struct mc_rs_out *o;
	msgpack_packer pk;

	if (plen == sizeof(p->policy))
		return mc_err_set(err, MC_ERR_INTERNAL, "plan policy label is unterminated");
	/* check everything first, so a bad plan writes nothing at all */
	for (size_t i = 0; i < p->nstages; i++) {
		if (check_stage(p, &p->stages[i], err) < 0)
			return -1;
	}
	if (json) {
		int failed;

		flockfile(f);
		fprintf(f,
			"{\"format\":\"%s\",\"version\":%d,\"created\":%" PRIu64
			",\"target\":%" PRIu64 ",\"lowerbound\":%" PRIu64,
			MC_PLAN_FORMAT, MC_PLAN_VERSION, p->created, p->target, p->lowerbound);
		if (plen != 0) {
			fputs(",\"policy\":", f);
			mc_json_write_str(f, p->policy, plen);
		}
		fputs("}\n", f);
		for (size_t i = 0; i < p->nstages && !ferror(f); i++)
			json_stage(f, p, &p->stages[i]);
		failed = ferror(f) || fflush(f) != 0;
		funlockfile(f);
		if (failed)
			return mc_err_errno(err, "cannot write the plan");
		return 0;
	}
	o = mc_rs_out_new(f, &pk, err);
	if (o == NULL)
		return -1;
	msgpack_pack_map(&pk, plen != 0 ? 6 : 5);
	mc_pack_kv_str(&pk, "format", MC_PLAN_FORMAT);
	mc_pack_kv_u64(&pk, "version", MC_PLAN_VERSION);
	mc_pack_kv_u64(&pk, "created", p->created);
	mc_pack_kv_u64(&pk, "target", p->target);
	mc_pack_kv_u64(&pk, "lowerbound", p->lowerbound);
	if (plen != 0)
		mc_pack_kv_strn(&pk, "policy", p->policy, plen);
	for (size_t i = 0; i < p->nstages && !mc_rs_out_failed(o); i++)
		pack_stage(&pk, p, &p->stages[i]);
	return mc_rs_out_done(o, "the plan", err);
}

static int
check_report(const struct mc_report *r, const struct mc_plan *p, struct mc_err *err)
{
	for (size_t i = 0; i < r->nstages; i++) {
		const struct mc_stage_report *sr = &r->stages[i];

		if (memchr(sr->scope, '\0', MC_SCOPE_MAX) == NULL)
			return mc_err_set(err, MC_ERR_INTERNAL,
					  "report stage %" PRIu32 " has an unterminated scope",
					  sr->id);
		for (size_t j = 0; j < sr->nfailures; j++) {
			const struct mc_stage_failure *fl = &sr->failures[j];

			if (fl->reason < 0 || fl->reason >= MC_FAIL_REASON_COUNT)
				return mc_err_set(err, MC_ERR_INTERNAL,
						  "report stage %" PRIu32 " has unknown reason %d",
						  sr->id, fl->reason);
			if (p == NULL)
				return mc_err_set(err, MC_ERR_INTERNAL,
						  "report with failures needs the plan");
			if (check_victim(&p->view, fl->victim, err) < 0)
				return -1;
		}
	}
	return 0;
}

static void
json_failures(FILE *f, const struct mc_stage_report *sr, const struct mc_plan *p, size_t from,
	      size_t to)
{
	fputs(",\"failures\":[", f);
	for (size_t j = from; j < to; j++) {
		const struct mc_cand_view *v = &p->view;
		const struct mc_cand *c = &v->c[sr->failures[j].victim];

		fputs(j == from ? "{\"tenant\":" : ",{\"tenant\":", f);
		mc_json_write_str(f, v->names[c->tenant], v->name_lens[c->tenant]);
		fputs(",\"key\":", f);
		mc_json_write_str(f, mc_cand_key(v, c), c->key_len);
		fprintf(f, ",\"reason\":\"%s\"}", reason_names[sr->failures[j].reason]);
	}
	fputs("]}\n", f);
}

static void
json_report_stage(FILE *f, const struct mc_stage_report *sr, const struct mc_plan *p)
{
	size_t from = 0, to = failures_end(p, sr, 0);

	fprintf(f, "{\"t\":\"stage\",\"id\":%" PRIu32 ",\"scope\":", sr->id);
	mc_json_write_str(f, sr->scope, strlen(sr->scope));
	fprintf(f,
		",\"kind\":\"%s\",\"ran\":%s,\"planned_bytes\":%" PRIu64
		",\"planned_objects\":%" PRIu64 ",\"evicted_bytes\":%" PRIu64
		",\"evicted_objects\":%" PRIu64,
		kind_name(sr->kind), sr->ran ? "true" : "false", sr->planned_bytes,
		sr->planned_objects, sr->evicted_bytes, sr->evicted_objects);
	json_failures(f, sr, p, from, to);
	while (to < sr->nfailures) {
		from = to;
		to = failures_end(p, sr, from);
		fprintf(f, "{\"t\":\"failures\",\"id\":%" PRIu32, sr->id);
		json_failures(f, sr, p, from, to);
	}
}

static void
pack_failures(msgpack_packer *pk, const struct mc_stage_report *sr, const struct mc_plan *p,
	      size_t from, size_t to)
{
	mc_pack_key(pk, "failures");
	msgpack_pack_array(pk, to - from);
	for (size_t j = from; j < to; j++) {
		const struct mc_cand_view *v = &p->view;
		const struct mc_cand *c = &v->c[sr->failures[j].victim];

		msgpack_pack_map(pk, 3);
		pack_name(pk, v, "tenant", c->tenant);
		mc_pack_kv_strn(pk, "key", mc_cand_key(v, c), c->key_len);
		mc_pack_kv_str(pk, "reason", reason_names[sr->failures[j].reason]);
	}
}

static void
pack_report_stage(msgpack_packer *pk, const struct mc_stage_report *sr, const struct mc_plan *p)
{
	size_t from = 0, to = failures_end(p, sr, 0);

	msgpack_pack_map(pk, 10);
	mc_pack_kv_str(pk, "t", "stage");
	mc_pack_kv_u64(pk, "id", sr->id);
	mc_pack_kv_str(pk, "scope", sr->scope);
	mc_pack_kv_str(pk, "kind", kind_name(sr->kind));
	mc_pack_kv_bool(pk, "ran", sr->ran);
	mc_pack_kv_u64(pk, "planned_bytes", sr->planned_bytes);
	mc_pack_kv_u64(pk, "planned_objects", sr->planned_objects);
	mc_pack_kv_u64(pk, "evicted_bytes", sr->evicted_bytes);
	mc_pack_kv_u64(pk, "evicted_objects", sr->evicted_objects);
	pack_failures(pk, sr, p, from, to);
	while (to < sr->nfailures) {
		from = to;
		to = failures_end(p, sr, from);
		msgpack_pack_map(pk, 3);
		mc_pack_kv_str(pk, "t", "failures");
		mc_pack_kv_u64(pk, "id", sr->id);
		pack_failures(pk, sr, p, from, to);
	}
}

/* The header's "round" field. */
static void
json_round(FILE *f, const struct mc_round *rd)
{
	fputs(",\"round\":{\"trigger\":", f);
	mc_json_write_str(f, rd->trigger, strlen(rd->trigger));
	fputs(",\"scope\":", f);
	mc_json_write_str(f, rd->scope, strlen(rd->scope));
	fprintf(f,
		",\"queued_at\":%" PRIu64 ",\"started_at\":%" PRIu64 ",\"usage_at_start\":%" PRIu64
		",\"low\":%" PRIu64 ",\"waiting\":%" PRIu64 ",\"target\":%" PRIu64 "}",
		rd->queued_at, rd->started_at, rd->usage_at_start, rd->low, rd->waiting,
		rd->target);
}

static void
pack_round(msgpack_packer *pk, const struct mc_round *rd)
{
	mc_pack_key(pk, "round");
	msgpack_pack_map(pk, 8);
	mc_pack_kv_str(pk, "trigger", rd->trigger);
	mc_pack_kv_str(pk, "scope", rd->scope);
	mc_pack_kv_u64(pk, "queued_at", rd->queued_at);
	mc_pack_kv_u64(pk, "started_at", rd->started_at);
	mc_pack_kv_u64(pk, "usage_at_start", rd->usage_at_start);
	mc_pack_kv_u64(pk, "low", rd->low);
	mc_pack_kv_u64(pk, "waiting", rd->waiting);
	mc_pack_kv_u64(pk, "target", rd->target);
}

int
mc_report_write(FILE *f, const struct mc_report *r, const struct mc_plan *p, bool json,
		struct mc_err *err)
{
	struct mc_rs_out *o;
	msgpack_packer pk;

	if (check_report(r, p, err) < 0)
		return -1;
	if (json) {
		int failed;

		flockfile(f);
		fprintf(f, "{\"format\":\"%s\",\"version\":%d,\"created\":%" PRIu64,
			MC_REPORT_FORMAT, MC_PLAN_VERSION, r->created);
		if (r->has_round)
			json_round(f, &r->round);
		fputs("}\n", f);
		for (size_t i = 0; i < r->nstages && !ferror(f); i++)
			json_report_stage(f, &r->stages[i], p);
		failed = ferror(f) || fflush(f) != 0;
		funlockfile(f);
		if (failed)
			return mc_err_errno(err, "cannot write the report");
		return 0;
	}
	o = mc_rs_out_new(f, &pk, err);
	if (o == NULL)
		return -1;
	msgpack_pack_map(&pk, 3 + r->has_round);
	mc_pack_kv_str(&pk, "format", MC_REPORT_FORMAT);
	mc_pack_kv_u64(&pk, "version", MC_PLAN_VERSION);
	mc_pack_kv_u64(&pk, "created", r->created);
	if (r->has_round)
		pack_round(&pk, &r->round);
	for (size_t i = 0; i < r->nstages && !mc_rs_out_failed(o); i++)
		pack_report_stage(&pk, &r->stages[i], p);
	return mc_rs_out_done(o, "the report", err);
}

/* ---- reading ---- */

/*
 * The record framing, JSON parsing and positions in errors come from the
 * record stream reader; this file only judges the records. One reader
 * serves both formats: p is set for a plan, rep for a report, and view
 * is where the names and keys go (the plan's view, or the report's
 * name table).
 */
struct reader {
	struct mc_rs *rs;
	struct mc_plan *p;
	struct mc_report *rep;
	struct mc_cand_view *view;
	const char *item; /* what the entries of a record's array are: "victim" */
};

/* Fail at the current record, naming its item vi (from 1) when vi > 0. */
static int __attribute__((format(printf, 4, 5)))
vfail(struct reader *r, struct mc_err *err, size_t vi, const char *fmt, ...)
{
	char msg[MC_ERR_MSG_MAX], at[48] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (vi > 0)
		snprintf(at, sizeof(at), "%s %zu: ", r->item, vi);
	return mc_rs_fail(r->rs, err, "%s%s", at, msg);
}

static const char *
obj_kind(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return "null";
	case MSGPACK_OBJECT_BOOLEAN:
		return "a boolean";
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return "an unsigned integer";
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return "a negative integer";
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return "a float";
	case MSGPACK_OBJECT_STR:
		return "a string";
	case MSGPACK_OBJECT_BIN:
		return "binary data";
	case MSGPACK_OBJECT_ARRAY:
		return "an array";
	case MSGPACK_OBJECT_MAP:
		return "an object";
	default:
		return "an extension";
	}
}

/* A field of map m, or NULL when absent; nil counts as absent. */
static const msgpack_object *
field(const msgpack_object *m, const char *k)
{
	size_t n = strlen(k);

	for (uint32_t i = 0; i < m->via.map.size; i++) {
		const msgpack_object_kv *kv = &m->via.map.ptr[i];

		if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == n &&
		    memcmp(kv->key.via.str.ptr, k, n) == 0)
			return kv->val.type == MSGPACK_OBJECT_NIL ? NULL : &kv->val;
	}
	return NULL;
}

static int
get_u64(struct reader *r, const msgpack_object *m, const char *k, size_t vi, uint64_t *out,
	struct mc_err *err)
{
	const msgpack_object *o = field(m, k);

	if (o == NULL)
		return vfail(r, err, vi, "field '%s': missing", k);
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return vfail(r, err, vi, "field '%s': expected an unsigned integer, got %s", k,
			     obj_kind(o));
	*out = o->via.u64;
	return 0;
}

/* A string field of at most max bytes without NUL, copied into buf. */
static int
get_cstr(struct reader *r, const msgpack_object *m, const char *k, char *buf, size_t max,
	 struct mc_err *err)
{
	const msgpack_object *o = field(m, k);

	if (o == NULL)
		return vfail(r, err, 0, "field '%s': missing", k);
	if (o->type != MSGPACK_OBJECT_STR)
		return vfail(r, err, 0, "field '%s': expected a string, got %s", k, obj_kind(o));
	if (o->via.str.size >= max)
		return vfail(r, err, 0, "field '%s': %" PRIu32 " bytes, over the limit of %zu", k,
			     o->via.str.size, max - 1);
	if (memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL)
		return vfail(r, err, 0, "field '%s': contains a NUL byte", k);
	memcpy(buf, o->via.str.ptr, o->via.str.size);
	buf[o->via.str.size] = '\0';
	return 0;
}

static int
get_name(struct reader *r, const msgpack_object *m, const char *k, size_t vi, uint32_t *out,
	 struct mc_err *err)
{
	const msgpack_object *o = field(m, k);
	struct mc_err e;
	int64_t id;

	if (o == NULL)
		return vfail(r, err, vi, "field '%s': missing", k);
	if (o->type != MSGPACK_OBJECT_STR)
		return vfail(r, err, vi, "field '%s': expected a string, got %s", k, obj_kind(o));
	if (o->via.str.size == 0)
		return vfail(r, err, vi, "field '%s': empty", k);
	id = mc_cand_name(r->view, o->via.str.ptr, o->via.str.size, &e);
	if (id < 0) {
		if (e.code == MC_ERR_NO_SPACE || e.code == MC_ERR_TOO_LARGE)
			return mc_err_set(err, e.code, "%s", e.msg);
		return vfail(r, err, vi, "field '%s': %s", k, e.msg);
	}
	*out = (uint32_t)id;
	return 0;
}

/* An optional boolean field: absent (or nil) is false. */
static int
get_flag(struct reader *r, const msgpack_object *m, const char *k, bool *out, struct mc_err *err)
{
	const msgpack_object *o = field(m, k);

	*out = false;
	if (o == NULL)
		return 0;
	if (o->type != MSGPACK_OBJECT_BOOLEAN)
		return vfail(r, err, 0, "field '%s': expected a boolean, got %s", k, obj_kind(o));
	*out = o->via.boolean;
	return 0;
}

/* The stage kind of record o: "evict" or "fallback". */
static int
get_kind(struct reader *r, const msgpack_object *o, int *out, struct mc_err *err)
{
	const msgpack_object *kind = field(o, "kind");
	int n;

	if (kind == NULL)
		return vfail(r, err, 0, "field 'kind': missing");
	if (kind->type != MSGPACK_OBJECT_STR)
		return vfail(r, err, 0, "field 'kind': expected a string, got %s", obj_kind(kind));
	if (mc_obj_streq(kind, "evict")) {
		*out = MC_STAGE_EVICT;
		return 0;
	}
	if (mc_obj_streq(kind, "fallback")) {
		*out = MC_STAGE_FALLBACK;
		return 0;
	}
	n = kind->via.str.size > 32 ? 32 : (int)kind->via.str.size;
	return vfail(r, err, 0, "field 'kind': unknown stage kind '%.*s'", n, kind->via.str.ptr);
}

/* A stage's id: an unsigned integer that fits 32 bits. */
static int
get_stage_id(struct reader *r, const msgpack_object *o, uint32_t *out, struct mc_err *err)
{
	uint64_t id = 0;

	if (get_u64(r, o, "id", 0, &id, err) < 0)
		return -1;
	if (id > UINT32_MAX)
		return vfail(r, err, 0, "field 'id': %" PRIu64 " is over %" PRIu32, id, UINT32_MAX);
	*out = (uint32_t)id;
	return 0;
}

/* The format and version fields every header starts with. */
static int
check_format(struct reader *r, const msgpack_object *o, const char *format, struct mc_err *err)
{
	const msgpack_object *fmt = o->type == MSGPACK_OBJECT_MAP ? field(o, "format") : NULL;
	uint64_t version;

	if (fmt == NULL || fmt->type != MSGPACK_OBJECT_STR || !mc_obj_streq(fmt, format))
		return mc_err_set(err, MC_ERR_PROTO, "not an %s stream", format);
	if (get_u64(r, o, "version", 0, &version, err) < 0)
		return -1;
	if (version != MC_PLAN_VERSION)
		return mc_err_set(err, MC_ERR_PROTO, "unsupported %s version %" PRIu64, format,
				  version);
	return 0;
}

static int
read_header(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	struct mc_plan *p = r->p;

	if (check_format(r, o, MC_PLAN_FORMAT, err) < 0)
		return -1;
	if (get_u64(r, o, "created", 0, &p->created, err) < 0 ||
	    get_u64(r, o, "target", 0, &p->target, err) < 0 ||
	    get_u64(r, o, "lowerbound", 0, &p->lowerbound, err) < 0)
		return -1;
	p->policy[0] = '\0';
	if (field(o, "policy") != NULL &&
	    get_cstr(r, o, "policy", p->policy, sizeof(p->policy), err) < 0)
		return -1;
	return 0;
}

/* The key of item vi: a str or bin of 1..MC_KEY_MAX bytes; NULL on error. */
static const msgpack_object *
get_key(struct reader *r, const msgpack_object *o, size_t vi, struct mc_err *err)
{
	const msgpack_object *k = field(o, "key");

	if (k == NULL) {
		vfail(r, err, vi, "field 'key': missing");
		return NULL;
	}
	if (k->type != MSGPACK_OBJECT_STR && k->type != MSGPACK_OBJECT_BIN) {
		vfail(r, err, vi, "field 'key': expected a string, got %s", obj_kind(k));
		return NULL;
	}
	/* str and bin share their layout in msgpack_object */
	if (k->via.str.size == 0 || k->via.str.size > MC_KEY_MAX) {
		vfail(r, err, vi, "field 'key': %" PRIu32 " bytes, not 1..%d", k->via.str.size,
		      MC_KEY_MAX);
		return NULL;
	}
	return k;
}

/* Append c with key k to r->view; a bad record names item vi. */
static int
add_record(struct reader *r, const struct mc_cand *c, const msgpack_object *k, size_t vi,
	   struct mc_err *err)
{
	struct mc_err e;

	if (r->view->n >= UINT32_MAX)
		return mc_err_set(err, MC_ERR_TOO_LARGE, "too many %ss", r->item);
	if (mc_cand_add(r->view, c, k->via.str.ptr, k->via.str.size, &e) < 0) {
		if (e.code == MC_ERR_NO_SPACE || e.code == MC_ERR_TOO_LARGE)
			return mc_err_set(err, e.code, "%s", e.msg);
		return vfail(r, err, vi, "%s", e.msg);
	}
	return 0;
}

static int
read_victim(struct reader *r, const msgpack_object *o, size_t vi, struct mc_stage *s,
	    struct mc_err *err)
{
	const msgpack_object *k;
	struct mc_cand c;

	if (o->type != MSGPACK_OBJECT_MAP)
		return vfail(r, err, vi, "expected an object, got %s", obj_kind(o));
	memset(&c, 0, sizeof(c));
	c.cost = -1;
	if ((k = get_key(r, o, vi, err)) == NULL)
		return -1;
	if (get_name(r, o, "tenant", vi, &c.tenant, err) < 0 ||
	    get_u64(r, o, "version", vi, &c.version, err) < 0 ||
	    get_name(r, o, "peer", vi, &c.peer, err) < 0 ||
	    get_name(r, o, "tier", vi, &c.tier, err) < 0 ||
	    get_u64(r, o, "bytes", vi, &c.bytes, err) < 0)
		return -1;
	if (add_record(r, &c, k, vi, err) < 0)
		return -1;
	return mc_stage_add_victim(s, (uint32_t)(r->view->n - 1), err);
}

static int
read_victims(struct reader *r, const msgpack_object *o, struct mc_stage *s, struct mc_err *err)
{
	const msgpack_object *a = field(o, "victims");

	if (a == NULL)
		return vfail(r, err, 0, "field 'victims': missing");
	if (a->type != MSGPACK_OBJECT_ARRAY)
		return vfail(r, err, 0, "field 'victims': expected an array, got %s", obj_kind(a));
	for (uint32_t i = 0; i < a->via.array.size; i++) {
		if (read_victim(r, &a->via.array.ptr[i], (size_t)i + 1, s, err) < 0)
			return -1;
	}
	return 0;
}

static int
read_stage(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	struct mc_plan *p = r->p;
	char scope[MC_SCOPE_MAX];
	uint64_t target, lowerbound;
	struct mc_stage *s;
	struct mc_err e;
	uint32_t id;
	bool soft_pinned;
	int k;

	if (get_stage_id(r, o, &id, err) < 0 ||
	    get_cstr(r, o, "scope", scope, sizeof(scope), err) < 0 || get_kind(r, o, &k, err) < 0)
		return -1;
	if (get_u64(r, o, "target", 0, &target, err) < 0 ||
	    get_u64(r, o, "lowerbound", 0, &lowerbound, err) < 0 ||
	    get_flag(r, o, "soft_pinned", &soft_pinned, err) < 0)
		return -1;
	if (k == MC_STAGE_EVICT) {
		if (field(o, "cond_scope") != NULL)
			return vfail(r, err, 0,
				     "field 'cond_scope': only fallback stages have one");
		if (field(o, "cond_lowerbound") != NULL)
			return vfail(r, err, 0,
				     "field 'cond_lowerbound': only fallback stages have one");
	}
	s = mc_plan_add_stage(p, k, scope, target, lowerbound, &e);
	if (s == NULL)
		return mc_err_set(err, e.code, "%s", e.msg);
	s->id = id;
	s->soft_pinned = soft_pinned;
	if (k == MC_STAGE_FALLBACK &&
	    (get_cstr(r, o, "cond_scope", s->cond_scope, sizeof(s->cond_scope), err) < 0 ||
	     get_u64(r, o, "cond_lowerbound", 0, &s->cond_lowerbound, err) < 0))
		return -1;
	return read_victims(r, o, s, err);
}

/* {t: "victims", id, victims}: more victims for the stage just before. */
static int
read_more_victims(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	struct mc_plan *p = r->p;
	uint64_t id;

	if (get_u64(r, o, "id", 0, &id, err) < 0)
		return -1;
	if (p->nstages == 0 || p->stages[p->nstages - 1].id != id)
		return vfail(r, err, 0, "victims of stage %" PRIu64 " do not follow that stage",
			     id);
	return read_victims(r, o, &p->stages[p->nstages - 1], err);
}

/*
 * The record kind t of a record after the header: -1 when the record is
 * not a map or t is missing or not a string.
 */
static const msgpack_object *
record_kind(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	const msgpack_object *t;

	if (o->type != MSGPACK_OBJECT_MAP) {
		vfail(r, err, 0, "not a map");
		return NULL;
	}
	t = field(o, "t");
	if (t == NULL) {
		vfail(r, err, 0, "field 't': missing");
		return NULL;
	}
	if (t->type != MSGPACK_OBJECT_STR) {
		vfail(r, err, 0, "field 't': expected a string, got %s", obj_kind(t));
		return NULL;
	}
	return t;
}

/* One decoded record of a plan, from either form. */
static int
read_plan_object(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	const msgpack_object *t;

	if (mc_rs_in_header(r->rs))
		return read_header(r, o, err);
	if ((t = record_kind(r, o, err)) == NULL)
		return -1;
	if (mc_obj_streq(t, "stage"))
		return read_stage(r, o, err);
	if (mc_obj_streq(t, "victims"))
		return read_more_victims(r, o, err);
	return 0; /* a record kind from a newer writer */
}

typedef int (*judge_fn)(struct reader *r, const msgpack_object *o, struct mc_err *err);

/* Feed every record of f to judge, stopping at the first it refuses. */
static int
read_stream(FILE *f, bool json, const char *format, const char *what, struct reader *r,
	    judge_fn judge, struct mc_err *err)
{
	const msgpack_object *o;
	int rc;

	r->rs = mc_rs_open(f, json, format, what, MAX_RECORD, 0, err);
	if (r->rs == NULL)
		return -1;
	while ((rc = mc_rs_next(r->rs, &o, err)) == 1) {
		if (judge(r, o, err) < 0) {
			rc = -1;
			break;
		}
	}
	mc_rs_close(r->rs);
	r->rs = NULL;
	return rc;
}

int
mc_plan_read(FILE *f, struct mc_plan *p, bool json, struct mc_err *err)
{
	struct reader r = { .p = p, .view = &p->view, .item = "victim" };

	return read_stream(f, json, MC_PLAN_FORMAT, "the plan", &r, read_plan_object, err);
}

/* ---- reading reports ---- */

/* The header's optional "round" map (a report of an evict_plan has none). */
static int
read_round(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	const msgpack_object *m = field(o, "round");
	struct mc_round *rd = &r->rep->round;

	if (m == NULL)
		return 0;
	if (m->type != MSGPACK_OBJECT_MAP)
		return vfail(r, err, 0, "field 'round': expected a map, got %s", obj_kind(m));
	if (get_cstr(r, m, "trigger", rd->trigger, sizeof(rd->trigger), err) < 0 ||
	    get_cstr(r, m, "scope", rd->scope, sizeof(rd->scope), err) < 0 ||
	    get_u64(r, m, "queued_at", 0, &rd->queued_at, err) < 0 ||
	    get_u64(r, m, "started_at", 0, &rd->started_at, err) < 0 ||
	    get_u64(r, m, "usage_at_start", 0, &rd->usage_at_start, err) < 0 ||
	    get_u64(r, m, "low", 0, &rd->low, err) < 0 ||
	    get_u64(r, m, "waiting", 0, &rd->waiting, err) < 0 ||
	    get_u64(r, m, "target", 0, &rd->target, err) < 0)
		return -1;
	r->rep->has_round = true;
	return 0;
}

static int
read_report_header(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	if (check_format(r, o, MC_REPORT_FORMAT, err) < 0 ||
	    get_u64(r, o, "created", 0, &r->rep->created, err) < 0)
		return -1;
	return read_round(r, o, err);
}

/* {tenant, key, reason}: the tenant and key become a record of r->view. */
static int
read_failure(struct reader *r, const msgpack_object *o, size_t fi, struct mc_stage_report *sr,
	     struct mc_err *err)
{
	const msgpack_object *k, *why;
	struct mc_cand c;
	int reason;

	if (o->type != MSGPACK_OBJECT_MAP)
		return vfail(r, err, fi, "expected an object, got %s", obj_kind(o));
	/* peer and tier stay the empty name: a report does not carry them */
	memset(&c, 0, sizeof(c));
	c.cost = -1;
	if ((k = get_key(r, o, fi, err)) == NULL ||
	    get_name(r, o, "tenant", fi, &c.tenant, err) < 0)
		return -1;
	why = field(o, "reason");
	if (why == NULL)
		return vfail(r, err, fi, "field 'reason': missing");
	if (why->type != MSGPACK_OBJECT_STR)
		return vfail(r, err, fi, "field 'reason': expected a string, got %s",
			     obj_kind(why));
	reason = mc_fail_reason_from_name(why->via.str.ptr, why->via.str.size);
	if (reason < 0) {
		int n = why->via.str.size > 32 ? 32 : (int)why->via.str.size;

		return vfail(r, err, fi, "field 'reason': unknown reason '%.*s'", n,
			     why->via.str.ptr);
	}
	if (add_record(r, &c, k, fi, err) < 0)
		return -1;
	return mc_stage_report_fail(sr, (uint32_t)(r->view->n - 1), reason, err);
}

/* The failures array of o, appended to sr. */
static int
read_failures(struct reader *r, const msgpack_object *o, struct mc_stage_report *sr,
	      struct mc_err *err)
{
	const msgpack_object *a = field(o, "failures");

	if (a == NULL)
		return vfail(r, err, 0, "field 'failures': missing");
	if (a->type != MSGPACK_OBJECT_ARRAY)
		return vfail(r, err, 0, "field 'failures': expected an array, got %s", obj_kind(a));
	for (uint32_t i = 0; i < a->via.array.size; i++) {
		if (read_failure(r, &a->via.array.ptr[i], sr->nfailures + 1, sr, err) < 0)
			return -1;
	}
	return 0;
}

static int
read_report_stage(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	const msgpack_object *ran;
	struct mc_stage_report *sr;
	struct mc_stage s;
	struct mc_err e;

	memset(&s, 0, sizeof(s));
	if (get_stage_id(r, o, &s.id, err) < 0 ||
	    get_cstr(r, o, "scope", s.scope, sizeof(s.scope), err) < 0 ||
	    get_kind(r, o, &s.kind, err) < 0)
		return -1;
	ran = field(o, "ran");
	if (ran == NULL)
		return vfail(r, err, 0, "field 'ran': missing");
	if (ran->type != MSGPACK_OBJECT_BOOLEAN)
		return vfail(r, err, 0, "field 'ran': expected a boolean, got %s", obj_kind(ran));
	sr = mc_report_add_stage(r->rep, &s, &e);
	if (sr == NULL)
		return mc_err_set(err, e.code, "%s", e.msg);
	sr->ran = ran->via.boolean;
	if (get_u64(r, o, "planned_bytes", 0, &sr->planned_bytes, err) < 0 ||
	    get_u64(r, o, "planned_objects", 0, &sr->planned_objects, err) < 0 ||
	    get_u64(r, o, "evicted_bytes", 0, &sr->evicted_bytes, err) < 0 ||
	    get_u64(r, o, "evicted_objects", 0, &sr->evicted_objects, err) < 0)
		return -1;
	return read_failures(r, o, sr, err);
}

/* {t: "failures", id, failures}: more failures for the stage just before. */
static int
read_more_failures(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	struct mc_report *rep = r->rep;
	uint32_t id;

	if (get_stage_id(r, o, &id, err) < 0)
		return -1;
	if (rep->nstages == 0 || rep->stages[rep->nstages - 1].id != id)
		return vfail(r, err, 0, "failures of stage %" PRIu32 " do not follow that stage",
			     id);
	return read_failures(r, o, &rep->stages[rep->nstages - 1], err);
}

static int
read_report_object(struct reader *r, const msgpack_object *o, struct mc_err *err)
{
	const msgpack_object *t;

	if (mc_rs_in_header(r->rs))
		return read_report_header(r, o, err);
	if ((t = record_kind(r, o, err)) == NULL)
		return -1;
	if (mc_obj_streq(t, "stage"))
		return read_report_stage(r, o, err);
	if (mc_obj_streq(t, "failures"))
		return read_more_failures(r, o, err);
	return 0; /* a record kind from a newer writer */
}

int
mc_report_read(FILE *f, struct mc_report *r, struct mc_cand_view *names, bool json,
	       struct mc_err *err)
{
	struct reader rd = { .rep = r, .view = names, .item = "failure" };

	mc_report_init(r);
	return read_stream(f, json, MC_REPORT_FORMAT, "the report", &rd, read_report_object, err);
}
