/*
 * Plans and reports: building them, both stream forms of a plan and of
 * a report in a round trip, every way a plan or report stream can be
 * bad, and the soft_pinned flag of a stage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "mc/plan.h"
#include "mc/proto.h"
#include "mc/wire.h"
#include "cand_util.h"
#include "tap.h"

#define NVICTIMS 10000
#define REPORT_HDR "{\"format\":\"mc-report\",\"version\":1,\"created\":1764424801000}\n"

static const char *tenants[] = { "alice", "bob", "carol" };
static const char *peers[] = { "peer-1", "peer-2", "peer-3" };
static const char *tiers[] = { "dram", "ssd" };

/*
 * A plan of three stages over NVICTIMS candidates: an evict stage taking
 * most of them, a fallback serving tenant=bob, and an empty evict stage
 * marked as the soft-pinned second pass. Some keys are binary or long,
 * so chunking and escapes get exercised.
 */
static int
build_plan(struct mc_plan *p, struct mc_err *err)
{
	struct mc_stage *s1, *s2, *s3;

	p->created = 1764424800000ULL;
	p->target = 1ULL << 31;
	p->lowerbound = 1ULL << 30;
	snprintf(p->policy, sizeof(p->policy), "tenant-type.policy");
	s1 = mc_plan_add_stage(p, MC_STAGE_EVICT, "tenant=bob/type=hidden", 1000000, 500000, err);
	if (s1 == NULL)
		return -1;
	s2 = mc_plan_add_stage(p, MC_STAGE_FALLBACK, "tenant=bob", 2000000, 0, err);
	if (s2 == NULL)
		return -1;
	snprintf(s2->cond_scope, sizeof(s2->cond_scope), "tenant=bob");
	s2->cond_lowerbound = 1500000;
	s3 = mc_plan_add_stage(p, MC_STAGE_EVICT, "", 0, 0, err);
	if (s3 == NULL)
		return -1;
	s3->soft_pinned = true;
	for (uint32_t i = 0; i < NVICTIMS; i++) {
		struct mc_cand c;
		char key[MC_KEY_MAX];
		size_t klen;

		memset(&c, 0, sizeof(c));
		c.cost = -1;
		c.version = (uint64_t)i * 7 + 1;
		c.bytes = 4096 + i;
		c.tenant = name(&p->view, tenants[i % 3]);
		c.peer = name(&p->view, peers[i % 3]);
		c.tier = name(&p->view, tiers[i % 2]);
		if (i % 1000 == 5) {
			/* a long binary key: bytes that are not UTF-8, quotes, NUL */
			klen = 3000;
			for (size_t k = 0; k < klen; k++)
				key[k] = (char)(k * 31 + i);
		} else {
			klen = (size_t)snprintf(key, sizeof(key), "sess-%u/blk\"%u\\\xc3\xa9",
						i / 10, i);
		}
		if (mc_cand_add(&p->view, &c, key, klen, err) < 0)
			return -1;
		if (mc_stage_add_victim(i % 10 == 0 ? s2 : s1, i, err) < 0)
			return -1;
	}
	return 0;
}

static bool
same_victim(const struct mc_plan *a, uint32_t ia, const struct mc_plan *b, uint32_t ib)
{
	const struct mc_cand *x = &a->view.c[ia], *y = &b->view.c[ib];

	return x->version == y->version && x->bytes == y->bytes &&
	       same_copy(&a->view, ia, &b->view, ib) && y->cost < 0 && y->created == 0 &&
	       y->access_count == 0;
}

static bool
same_plan(const struct mc_plan *a, const struct mc_plan *b)
{
	if (a->created != b->created || a->target != b->target || a->lowerbound != b->lowerbound ||
	    strcmp(a->policy, b->policy) != 0 || a->nstages != b->nstages)
		return false;
	for (size_t i = 0; i < a->nstages; i++) {
		const struct mc_stage *x = &a->stages[i], *y = &b->stages[i];

		if (x->id != y->id || x->kind != y->kind || strcmp(x->scope, y->scope) != 0 ||
		    x->target != y->target || x->lowerbound != y->lowerbound ||
		    x->soft_pinned != y->soft_pinned || x->nvictims != y->nvictims)
			return false;
		if (x->kind == MC_STAGE_FALLBACK && (strcmp(x->cond_scope, y->cond_scope) != 0 ||
						     x->cond_lowerbound != y->cond_lowerbound))
			return false;
		for (size_t j = 0; j < x->nvictims; j++) {
			if (!same_victim(a, x->victims[j], b, y->victims[j]))
				return false;
		}
	}
	return true;
}

static void
test_round_trip(const struct mc_plan *p, bool json)
{
	const char *form = json ? "JSON lines" : "msgpack";
	struct mc_plan q;
	struct mc_err err;
	FILE *f = tmpfile();
	const char *chunk = json ? "{\"t\":\"victims\",\"id\":1," : "\xa1t\xa7victims\xa2id\x01";
	char *buf;
	int rc;
	long size;

	mc_plan_init(&q);
	rc = mc_plan_write(f, p, json, &err);
	TAP_OK(rc == 0, "plan %s: a plan of %d victims is written (%s)", form, NVICTIMS,
	       rc == 0 ? "" : err.msg);
	size = ftell(f);
	rewind(f);
	rc = mc_plan_read(f, &q, json, &err);
	TAP_OK(rc == 0, "plan %s: the written plan reads back (%s)", form, rc == 0 ? "" : err.msg);
	TAP_OK(same_plan(p, &q),
	       "plan %s: stages, conditions and every victim survive the round trip", form);
	TAP_OK(q.view.n == NVICTIMS, "plan %s: reading adds one candidate record per victim", form);
	buf = malloc((size_t)size);
	rewind(f);
	TAP_OK(buf != NULL && fread(buf, 1, (size_t)size, f) == (size_t)size &&
		       memmem(buf, (size_t)size, chunk, strlen(chunk)) != NULL,
	       "plan %s: a stage of %zu victims goes out in chunks", form, p->stages[0].nvictims);
	free(buf);
	fclose(f);
	mc_plan_free(&q);
	mc_plan_free(&q);
	TAP_OK(q.nstages == 0 && q.view.n == 0, "plan: a second free is harmless");
}

static int
read_text(const char *text, bool json, struct mc_plan *q, struct mc_err *err)
{
	FILE *f = tmpfile();
	int rc;

	fwrite(text, 1, strlen(text), f);
	rewind(f);
	mc_plan_init(q);
	rc = mc_plan_read(f, q, json, err);
	fclose(f);
	return rc;
}

#define HDR "{\"format\":\"mc-plan\",\"version\":1,\"created\":1,\"target\":2,\"lowerbound\":1}\n"
#define VIC                                                                               \
	"{\"tenant\":\"a\",\"key\":\"k\",\"version\":1,\"peer\":\"p\",\"tier\":\"dram\"," \
	"\"bytes\":9}"
#define EVICT                                                                                      \
	"{\"t\":\"stage\",\"id\":1,\"scope\":\"\",\"kind\":\"evict\",\"target\":1,\"lowerbound\":" \
	"0,"

static void
json_bad(const char *text, const char *want, const char *what)
{
	struct mc_plan q;
	struct mc_err err;
	int rc = read_text(text, true, &q, &err);

	TAP_OK(rc < 0 && err.code == MC_ERR_PROTO && strstr(err.msg, want) != NULL,
	       "plan JSON: %s fails with '%s' (got '%s')", what, want, rc < 0 ? err.msg : "ok");
	mc_plan_free(&q);
}

/*
 * A victim's version above 2^53 is written as a decimal string (jq keeps
 * it exactly) and read back; the bare number older writers wrote reads too.
 */
static void
test_big_integers(const struct mc_plan *p)
{
	const uint64_t big = (1ull << 53) + 3;
	struct mc_plan q;
	struct mc_err err;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	uint32_t v0 = p->stages[0].victims[0];
	uint64_t was = p->view.c[v0].version;
	int rc;

	p->view.c[v0].version = big;
	rc = f != NULL ? mc_plan_write(f, p, true, &err) : -1;
	if (f != NULL)
		fclose(f);
	p->view.c[v0].version = was;
	TAP_OK(rc == 0 && strstr(buf, "\"version\":\"9007199254740995\"") != NULL,
	       "plan JSON: a version above 2^53 is written as a decimal string");
	rc = rc == 0 ? read_text(buf, true, &q, &err) : -1;
	TAP_OK(rc == 0 && q.view.c[q.stages[0].victims[0]].version == big,
	       "plan JSON: the decimal string reads back as the exact version (%s)",
	       rc == 0 ? "" : err.msg);
	if (rc == 0)
		mc_plan_free(&q);
	free(buf);
	rc = read_text(HDR EVICT "\"victims\":[{\"tenant\":\"a\",\"key\":\"k\","
				 "\"version\":9007199254740995,\"peer\":\"p\",\"tier\":\"dram\","
				 "\"bytes\":9}]}\n",
		       true, &q, &err);
	TAP_OK(rc == 0 && q.view.c[q.stages[0].victims[0]].version == big,
	       "plan JSON: a bare number above 2^53, the old form, still reads exactly");
	mc_plan_free(&q);
}

static void
test_bad_json(void)
{
	struct mc_plan q;
	struct mc_err err;
	char scope[MC_SCOPE_MAX + 1], longscope[MC_SCOPE_MAX + 256];
	int rc;

	rc = read_text(HDR EVICT "\"victims\":[" VIC "," VIC "]}\n\n", true, &q, &err);
	TAP_OK(rc == 0 && q.nstages == 1 && q.stages[0].nvictims == 2 && q.view.nnames == 4,
	       "plan JSON: a minimal plan reads and interns repeated names once");
	mc_plan_free(&q);
	json_bad("", "not an mc-plan stream: empty input", "empty input");
	json_bad("{\"format\":\"mc-candidates\",\"version\":1}\n", "not an mc-plan stream",
		 "a candidate view");
	json_bad("[1,2]\n", "not an mc-plan stream", "a header that is not an object");
	json_bad("{\"format\":\"mc-plan\",\"version\":2,\"created\":1,\"target\":2,"
		 "\"lowerbound\":1}\n",
		 "unsupported mc-plan version 2", "version 2");
	json_bad("{\"format\":\"mc-plan\",\"version\":1,\"created\":1,\"target\":2}\n",
		 "line 1: field 'lowerbound': missing", "a header without lowerbound");
	json_bad(HDR EVICT "\"victims\":[]}\n{\"t\":\"stage\",\"id\":2,\"scope\":\"\","
			   "\"kind\":\"purge\",\"target\":1,\"lowerbound\":0,\"victims\":[]}\n",
		 "line 3: field 'kind': unknown stage kind 'purge'", "an unknown stage kind");
	json_bad(HDR "{\"t\":\"stage\",\"id\":1,\"scope\":\"\",\"kind\":\"fallback\","
		     "\"target\":1,\"lowerbound\":0,\"cond_lowerbound\":5,\"victims\":[]}\n",
		 "line 2: field 'cond_scope': missing", "a fallback without cond_scope");
	json_bad(HDR "{\"t\":\"stage\",\"id\":1,\"scope\":\"\",\"kind\":\"fallback\","
		     "\"target\":1,\"lowerbound\":0,\"cond_scope\":\"\",\"victims\":[]}\n",
		 "line 2: field 'cond_lowerbound': missing", "a fallback without cond_lowerbound");
	json_bad(HDR EVICT "\"cond_scope\":\"x\",\"victims\":[]}\n",
		 "line 2: field 'cond_scope': only fallback stages have one",
		 "an evict stage with cond_scope");
	json_bad(HDR EVICT "\"cond_lowerbound\":3,\"victims\":[]}\n",
		 "line 2: field 'cond_lowerbound': only fallback stages have one",
		 "an evict stage with cond_lowerbound");
	json_bad(HDR EVICT "\"victims\":[" VIC ",{\"tenant\":\"a\",\"key\":\"k\",\"version\":-1,"
			   "\"peer\":\"p\",\"tier\":\"t\",\"bytes\":1}]}\n",
		 "line 2: victim 2: field 'version': expected an unsigned integer, got a negative",
		 "a negative victim version");
	json_bad(HDR EVICT "\"victims\":[{\"tenant\":\"a\",\"key\":\"\",\"version\":1,"
			   "\"peer\":\"p\",\"tier\":\"t\",\"bytes\":1}]}\n",
		 "line 2: victim 1: field 'key': 0 bytes", "an empty key");
	json_bad(HDR EVICT "\"victims\":[{\"tenant\":\"a\",\"key\":\"k\",\"version\":1,"
			   "\"tier\":\"t\",\"bytes\":1}]}\n",
		 "line 2: victim 1: field 'peer': missing", "a victim without a peer");
	json_bad(HDR EVICT "\"victims\":[" VIC "]\n", "line 2: expected ',' or '}'", "a cut line");
	json_bad(HDR EVICT "\"victims\":[" VIC "]}\n{\"t\":\"victims\",\"id\":7,\"victims\":[]}\n",
		 "line 3: victims of stage 7 do not follow that stage",
		 "victims for a stage not just before");
	json_bad(HDR "{\"id\":1}\n", "line 2: field 't': missing", "a record without t");
	json_bad(HDR EVICT "\"victims\":[]} x\n", "line 2: trailing characters",
		 "trailing characters");
	json_bad(HDR EVICT "\"victims\":[[[[[[[[[[1]]]]]]]]]]}\n", "line 2: nested too deep",
		 "deep nesting");
	json_bad(HDR EVICT "\"victims\":[],\"id\":99999999999999999999}\n",
		 "line 2: integer out of range", "an integer past 64 bits");
	memset(scope, 'x', MC_SCOPE_MAX);
	scope[MC_SCOPE_MAX] = '\0';
	snprintf(longscope, sizeof(longscope),
		 HDR "{\"t\":\"stage\",\"id\":1,\"scope\":\"%s\",\"kind\":\"evict\"}\n", scope);
	json_bad(longscope, "line 2: field 'scope': 512 bytes, over the limit of 511",
		 "a scope of MC_SCOPE_MAX bytes or more");
	rc = read_text(HDR "{\"t\":\"note\",\"text\":\"from a newer writer\"}\n" EVICT
			   "\"victims\":[" VIC "],\"extra\":[1,{\"a\":null}]}\n",
		       true, &q, &err);
	TAP_OK(rc == 0 && q.nstages == 1 && q.stages[0].nvictims == 1,
	       "plan JSON: unknown record kinds and fields are skipped");
	mc_plan_free(&q);
}

/* Pack a header and then records through the given callback. */
static void
pack_header(msgpack_packer *pk, const char *format, uint64_t version)
{
	msgpack_pack_map(pk, 5);
	mc_pack_kv_str(pk, "format", format);
	mc_pack_kv_u64(pk, "version", version);
	mc_pack_kv_u64(pk, "created", 1);
	mc_pack_kv_u64(pk, "target", 2);
	mc_pack_kv_u64(pk, "lowerbound", 1);
}

static void
pack_stage(msgpack_packer *pk, const char *kind, bool cond, int nvictims, const char *bad)
{
	msgpack_pack_map(pk, cond ? 9 : 7);
	mc_pack_kv_str(pk, "t", "stage");
	mc_pack_kv_u64(pk, "id", 1);
	mc_pack_kv_str(pk, "scope", "tenant=a");
	mc_pack_kv_str(pk, "kind", kind);
	mc_pack_kv_u64(pk, "target", 10);
	mc_pack_kv_u64(pk, "lowerbound", 5);
	if (cond) {
		mc_pack_kv_str(pk, "cond_scope", "");
		mc_pack_kv_u64(pk, "cond_lowerbound", 5);
	}
	mc_pack_key(pk, "victims");
	msgpack_pack_array(pk, (size_t)nvictims);
	for (int i = 0; i < nvictims; i++) {
		msgpack_pack_map(pk, 6);
		mc_pack_kv_str(pk, "tenant", "a");
		mc_pack_kv_str(pk, "key", "k");
		if (bad != NULL && i == nvictims - 1)
			mc_pack_kv_str(pk, "version", bad);
		else
			mc_pack_kv_u64(pk, "version", 1);
		mc_pack_kv_str(pk, "peer", "p");
		mc_pack_kv_str(pk, "tier", "dram");
		mc_pack_kv_u64(pk, "bytes", 3);
	}
}

static int
read_buf(const msgpack_sbuffer *sb, size_t len, struct mc_plan *q, struct mc_err *err)
{
	FILE *f = tmpfile();
	int rc;

	fwrite(sb->data, 1, len, f);
	rewind(f);
	mc_plan_init(q);
	rc = mc_plan_read(f, q, false, err);
	fclose(f);
	return rc;
}

static void
mp_check(const msgpack_sbuffer *sb, size_t len, const char *want, const char *what)
{
	struct mc_plan q;
	struct mc_err err;
	int rc = read_buf(sb, len, &q, &err);

	if (want == NULL)
		TAP_OK(rc == 0, "plan msgpack: %s reads (%s)", what, rc == 0 ? "" : err.msg);
	else
		TAP_OK(rc < 0 && strstr(err.msg, want) != NULL,
		       "plan msgpack: %s fails with '%s' (got '%s')", what, want,
		       rc < 0 ? err.msg : "ok");
	mc_plan_free(&q);
}

static void
test_bad_msgpack(void)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t good;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack_header(&pk, "mc-snapshot", 1);
	mp_check(&sb, sb.size, "not an mc-plan stream", "another format's header");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-plan", 3);
	mp_check(&sb, sb.size, "unsupported mc-plan version 3", "version 3");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-plan", 1);
	pack_stage(&pk, "evict", false, 2, NULL);
	pack_stage(&pk, "fallback", true, 1, NULL);
	good = sb.size;
	mp_check(&sb, good, NULL, "an evict and a fallback stage");
	mp_check(&sb, good - 3, "record 2: truncated after", "a cut last record");
	pack_stage(&pk, "evict", true, 0, NULL);
	mp_check(&sb, sb.size, "record 3: field 'cond_scope': only fallback",
		 "an evict stage with a condition");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-plan", 1);
	pack_stage(&pk, "fallback", false, 0, NULL);
	mp_check(&sb, sb.size, "record 1: field 'cond_scope': missing",
		 "a fallback without its condition");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-plan", 1);
	pack_stage(&pk, "evict", false, 1, NULL);
	pack_stage(&pk, "evict", false, 3, "one");
	mp_check(&sb, sb.size,
		 "record 2: victim 3: field 'version': expected an unsigned integer, got a string",
		 "a victim with a string version");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-plan", 1);
	pack_stage(&pk, "evict", false, 0, NULL);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_uint64(&pk, 1);
	mp_check(&sb, sb.size, "record 2: not a map", "an array record");
	msgpack_sbuffer_clear(&sb);
	pack_header(&pk, "mc-plan", 1);
	/* a map declaring far more entries than there are bytes */
	msgpack_sbuffer_write(&sb, "\xdf\x7f\xff\xff\xff", 5);
	mp_check(&sb, sb.size,
		 "record 1: malformed: ", "a map claiming 2^31 entries is refused unread");
	msgpack_sbuffer_destroy(&sb);
}

static void
test_build(void)
{
	struct mc_plan p;
	struct mc_err err;
	char scope[MC_SCOPE_MAX + 1];
	struct mc_stage *s;
	FILE *f;

	mc_plan_init(&p);
	memset(scope, 's', MC_SCOPE_MAX);
	scope[MC_SCOPE_MAX] = '\0';
	s = mc_plan_add_stage(&p, MC_STAGE_EVICT, scope, 1, 1, &err);
	TAP_OK(s == NULL && err.code == MC_ERR_INVALID,
	       "plan: a scope of MC_SCOPE_MAX bytes is refused");
	scope[MC_SCOPE_MAX - 1] = '\0';
	s = mc_plan_add_stage(&p, MC_STAGE_EVICT, scope, 1, 1, &err);
	TAP_OK(s != NULL && s->id == 1 && strlen(s->scope) == MC_SCOPE_MAX - 1,
	       "plan: a scope of MC_SCOPE_MAX - 1 bytes is kept whole, first id 1");
	TAP_OK(mc_plan_add_stage(&p, 7, "", 1, 1, &err) == NULL,
	       "plan: an unknown kind is refused");
	mc_stage_add_victim(&p.stages[0], 3, &err);
	f = tmpfile();
	TAP_OK(mc_plan_write(f, &p, true, &err) < 0 && err.code == MC_ERR_INTERNAL && ftell(f) == 0,
	       "plan: a victim outside the view fails the write before anything is written");
	fclose(f);
	mc_plan_free(&p);
}

static void
test_reasons(void)
{
	bool ok = true;

	for (int i = 0; i < MC_FAIL_REASON_COUNT; i++) {
		const char *n = mc_fail_reason_name(i);

		if (mc_fail_reason_from_name(n, strlen(n)) != i)
			ok = false;
	}
	TAP_OK(ok, "reasons: every reason round-trips through its name");
	TAP_OK(strcmp(mc_fail_reason_name(MC_FAIL_LEASED), "lease renewed") == 0 &&
		       strcmp(mc_fail_reason_name(MC_FAIL_BUSY), "replica busy") == 0,
	       "reasons: names are the documented phrases");
	TAP_OK(mc_fail_reason_from_name("gon", 3) == -1 &&
		       mc_fail_reason_from_name("gone!", 5) == -1,
	       "reasons: an unknown name is -1");
	TAP_OK(strcmp(mc_fail_reason_name(MC_FAIL_REASON_COUNT), "unknown") == 0 &&
		       strcmp(mc_fail_reason_name(-1), "unknown") == 0,
	       "reasons: an out-of-range reason is named unknown");
}

static void
test_report(const struct mc_plan *p)
{
	struct mc_report r;
	struct mc_stage_report *sr;
	struct mc_err err;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f;
	bool all = true;
	int rc;

	mc_report_init(&r);
	r.created = 1764424801000ULL;
	sr = mc_report_add_stage(&r, &p->stages[0], &err);
	TAP_OK(sr != NULL && sr->id == p->stages[0].id &&
		       sr->planned_objects == p->stages[0].nvictims && !sr->ran &&
		       strcmp(sr->scope, p->stages[0].scope) == 0,
	       "report: a stage report copies id, scope and planned objects");
	sr->ran = true;
	sr->planned_bytes = 123456;
	sr->evicted_bytes = 100000;
	sr->evicted_objects = 20;
	for (int i = 0; i < MC_FAIL_REASON_COUNT; i++)
		mc_stage_report_fail(sr, p->stages[0].victims[i], i, &err);
	TAP_OK(mc_stage_report_fail(sr, 0, MC_FAIL_REASON_COUNT, &err) < 0,
	       "report: an unknown reason is refused");
	sr = mc_report_add_stage(&r, &p->stages[1], &err);
	f = open_memstream(&out, &outlen);
	rc = mc_report_write(f, &r, p, true, &err);
	fclose(f);
	if (getenv("TEST_PLAN_DEBUG") != NULL)
		fputs(out, stderr);
	TAP_OK(rc == 0, "report JSON: written");
	for (int i = 0; i < MC_FAIL_REASON_COUNT; i++) {
		char want[64];

		snprintf(want, sizeof(want), "\"reason\":\"%s\"", mc_fail_reason_name(i));
		if (strstr(out, want) == NULL)
			all = false;
	}
	TAP_OK(all, "report JSON: every failure reason appears by name");
	TAP_OK(strncmp(out, REPORT_HDR, strlen(REPORT_HDR)) == 0,
	       "report JSON: the first line is the mc-report header");
	TAP_OK(strstr(out, "\"kind\":\"evict\",\"ran\":true,\"planned_bytes\":123456") != NULL &&
		       strstr(out, "\"kind\":\"fallback\",\"ran\":false") != NULL &&
		       strstr(out, "\"tenant\":\"bob\",\"key\":\"sess-0/blk\\\"1\\\\") != NULL,
	       "report JSON: stages carry kind, ran, bytes and failed victims' names");
	free(out);
	out = NULL;
	f = open_memstream(&out, &outlen);
	rc = mc_report_write(f, &r, p, false, &err);
	fclose(f);
	{
		size_t off = 0, n = 0, ml;
		const char *why;

		while (rc == 0 && off < outlen &&
		       mc_wire_check(out + off, outlen - off, 1 << 20, &ml, &why) ==
			       MC_WIRE_WHOLE) {
			off += ml;
			n++;
		}
		TAP_OK(rc == 0 && off == outlen && n == 3,
		       "report msgpack: a header and one whole record per stage");
	}
	free(out);
	mc_report_free(&r);
	mc_report_free(&r);
	TAP_OK(r.nstages == 0, "report: a second free is harmless");
}

/* ---- the soft_pinned flag ---- */

static void
test_soft_pinned(void)
{
	struct mc_plan p, q;
	struct mc_err err;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f;
	int rc;

	mc_plan_init(&p);
	mc_plan_add_stage(&p, MC_STAGE_EVICT, "tenant=a", 10, 5, &err);
	mc_plan_add_stage(&p, MC_STAGE_FALLBACK, "tenant=a", 10, 5, &err)->soft_pinned = true;
	f = open_memstream(&out, &outlen);
	rc = mc_plan_write(f, &p, true, &err);
	fclose(f);
	TAP_OK(rc == 0 && strstr(out, ",\"cond_lowerbound\":0,\"soft_pinned\":true,") != NULL,
	       "soft_pinned JSON: a stage with the flag says soft_pinned: true");
	TAP_OK(strstr(out, "soft_pinned") != NULL &&
		       strstr(strstr(out, "soft_pinned") + 1, "soft_pinned") == NULL,
	       "soft_pinned JSON: written only for the stage that has it");
	free(out);
	for (int json = 0; json <= 1; json++) {
		out = NULL;
		f = open_memstream(&out, &outlen);
		mc_plan_write(f, &p, json, &err);
		fclose(f);
		f = fmemopen(out, outlen, "r");
		mc_plan_init(&q);
		rc = mc_plan_read(f, &q, json, &err);
		fclose(f);
		TAP_OK(rc == 0 && q.nstages == 2 && !q.stages[0].soft_pinned &&
			       q.stages[1].soft_pinned,
		       "soft_pinned %s: the flag round-trips, absent reads as false",
		       json ? "JSON" : "msgpack");
		mc_plan_free(&q);
		free(out);
	}
	mc_plan_free(&p);
}

static void
json_flag_case(const char *text, bool want_ok, bool want_flag, const char *want_err,
	       const char *what)
{
	struct mc_plan q;
	struct mc_err err;
	int rc = read_text(text, true, &q, &err);

	if (want_ok)
		TAP_OK(rc == 0 && q.nstages == 1 && q.stages[0].soft_pinned == want_flag,
		       "soft_pinned JSON: %s (%s)", what, rc == 0 ? "" : err.msg);
	else
		TAP_OK(rc < 0 && strstr(err.msg, want_err) != NULL,
		       "soft_pinned JSON: %s fails with '%s' (got '%s')", what, want_err,
		       rc < 0 ? err.msg : "ok");
	mc_plan_free(&q);
}

static void
test_soft_pinned_read(void)
{
	json_flag_case(HDR EVICT "\"soft_pinned\":false,\"victims\":[]}\n", true, false, NULL,
		       "an explicit false reads as false");
	json_flag_case(HDR EVICT "\"soft_pinned\":null,\"victims\":[]}\n", true, false, NULL,
		       "null reads as absent");
	json_flag_case(HDR EVICT "\"soft_pinned\":true,\"victims\":[" VIC "]}\n", true, true, NULL,
		       "true on an evict stage reads as true");
	json_flag_case(HDR EVICT "\"soft_pinned\":1,\"victims\":[]}\n", false, false,
		       "line 2: field 'soft_pinned': expected a boolean, got an unsigned integer",
		       "a number");
	json_flag_case(HDR EVICT "\"soft_pinned\":\"yes\",\"victims\":[]}\n", false, false,
		       "line 2: field 'soft_pinned': expected a boolean, got a string", "a string");
}

/* ---- reading reports ---- */

/*
 * A report over plan p: stage 1 ran with NFAILS failures cycling through
 * every reason (some of them binary keys), stage 2 a fallback that did
 * not run, stage 3 ran clean.
 */
#define NFAILS 3000

static int
build_report(struct mc_report *r, const struct mc_plan *p, struct mc_err *err)
{
	struct mc_stage_report *sr;

	mc_report_init(r);
	r->created = 1764424801000ULL;
	r->has_round = true;
	snprintf(r->round.trigger, sizeof(r->round.trigger), "no_space");
	snprintf(r->round.scope, sizeof(r->round.scope), "peer 3 dram");
	r->round.queued_at = 1764424800000ULL;
	r->round.started_at = 1764424800007ULL;
	r->round.usage_at_start = 15000000;
	r->round.low = 10500000;
	r->round.waiting = 8192;
	r->round.target = 15000000 - 10500000 + 8192;
	sr = mc_report_add_stage(r, &p->stages[0], err);
	if (sr == NULL)
		return -1;
	sr->ran = true;
	sr->planned_bytes = 36000000;
	sr->evicted_bytes = 1ULL << 40;
	sr->evicted_objects = 4000;
	for (uint32_t i = 0; i < NFAILS; i++) {
		if (mc_stage_report_fail(sr, p->stages[0].victims[i],
					 (int)(i % MC_FAIL_REASON_COUNT), err) < 0)
			return -1;
	}
	sr = mc_report_add_stage(r, &p->stages[1], err);
	if (sr == NULL)
		return -1;
	sr->planned_bytes = 4100000;
	if (mc_report_add_stage(r, &p->stages[2], err) == NULL)
		return -1;
	r->stages[2].ran = true;
	return 0;
}

static char *
report_bytes(const struct mc_report *r, const struct mc_plan *p, bool json, size_t *len)
{
	struct mc_err err;
	char *out = NULL;
	FILE *f = open_memstream(&out, len);

	if (mc_report_write(f, r, p, json, &err) < 0) {
		fprintf(stderr, "cannot write the report: %s\n", err.msg);
		exit(1);
	}
	fclose(f);
	return out;
}

static bool
same_failures(const struct mc_plan *p, const struct mc_stage_report *x,
	      const struct mc_cand_view *names, const struct mc_stage_report *y)
{
	if (x->nfailures != y->nfailures)
		return false;
	for (size_t j = 0; j < x->nfailures; j++) {
		const struct mc_cand *a = &p->view.c[x->failures[j].victim];
		const struct mc_cand *b;

		if (y->failures[j].victim >= names->n ||
		    x->failures[j].reason != y->failures[j].reason)
			return false;
		b = &names->c[y->failures[j].victim];
		if (a->key_len != b->key_len ||
		    memcmp(mc_cand_key(&p->view, a), mc_cand_key(names, b), a->key_len) != 0 ||
		    strcmp(mc_cand_name_str(&p->view, a->tenant),
			   mc_cand_name_str(names, b->tenant)) != 0)
			return false;
	}
	return true;
}

static bool
same_report(const struct mc_report *a, const struct mc_plan *p, const struct mc_report *b,
	    const struct mc_cand_view *names)
{
	if (a->created != b->created || a->nstages != b->nstages || a->has_round != b->has_round)
		return false;
	if (a->has_round &&
	    (strcmp(a->round.trigger, b->round.trigger) != 0 ||
	     strcmp(a->round.scope, b->round.scope) != 0 ||
	     a->round.queued_at != b->round.queued_at ||
	     a->round.started_at != b->round.started_at ||
	     a->round.usage_at_start != b->round.usage_at_start || a->round.low != b->round.low ||
	     a->round.waiting != b->round.waiting || a->round.target != b->round.target))
		return false;
	for (size_t i = 0; i < a->nstages; i++) {
		const struct mc_stage_report *x = &a->stages[i], *y = &b->stages[i];

		if (x->id != y->id || x->kind != y->kind || strcmp(x->scope, y->scope) != 0 ||
		    x->ran != y->ran || x->planned_bytes != y->planned_bytes ||
		    x->planned_objects != y->planned_objects ||
		    x->evicted_bytes != y->evicted_bytes ||
		    x->evicted_objects != y->evicted_objects || !same_failures(p, x, names, y))
			return false;
	}
	return true;
}

static void
test_report_round_trip(const struct mc_plan *p, bool json)
{
	const char *form = json ? "JSON lines" : "msgpack";
	struct mc_report r, q;
	struct mc_plan names; /* its view is the string table of the report read */
	struct mc_err err;
	char *first, *second;
	size_t len1, len2;
	FILE *f;
	int rc;

	if (build_report(&r, p, &err) < 0) {
		fprintf(stderr, "cannot build the report: %s\n", err.msg);
		exit(1);
	}
	first = report_bytes(&r, p, json, &len1);
	mc_plan_init(&names);
	/* q starts as garbage: the reader initialises it */
	memset(&q, 0xa5, sizeof(q));
	f = fmemopen(first, len1, "r");
	rc = mc_report_read(f, &q, &names.view, json, &err);
	fclose(f);
	TAP_OK(rc == 0, "report %s: the written report reads back (%s)", form,
	       rc == 0 ? "" : err.msg);
	TAP_OK(rc == 0 && same_report(&r, p, &q, &names.view),
	       "report %s: the round, stages, counts, ran and every failure survive the round trip",
	       form);
	TAP_OK(names.view.n == NFAILS, "report %s: one name-table record per failure, in order",
	       form);
	if (json)
		TAP_OK(strstr(first, "{\"t\":\"failures\",\"id\":1,") != NULL,
		       "report %s: a long failure list continues in failures records", form);
	second = report_bytes(&q, &names, json, &len2);
	TAP_OK(len1 == len2 && memcmp(first, second, len1) == 0,
	       "report %s: writing what was read gives the same bytes", form);
	free(first);
	free(second);
	mc_report_free(&q);
	mc_plan_free(&names);
	mc_report_free(&r);
}

static int
report_text(const char *text, size_t len, bool json, struct mc_report *q,
	    struct mc_cand_view *names, struct mc_err *err)
{
	FILE *f = tmpfile();
	int rc;

	fwrite(text, 1, len, f);
	rewind(f);
	mc_cand_view_init(names);
	rc = mc_report_read(f, q, names, json, err);
	fclose(f);
	return rc;
}

#define RHDR "{\"format\":\"mc-report\",\"version\":1,\"created\":5}\n"
#define RSTAGE "{\"t\":\"stage\",\"id\":1,\"scope\":\"tenant=a\",\"kind\":\"evict\","
#define RCOUNTS                                                                         \
	"\"ran\":true,\"planned_bytes\":30,\"planned_objects\":3,\"evicted_bytes\":10," \
	"\"evicted_objects\":1,"
#define FAIL1 "{\"tenant\":\"a\",\"key\":\"k1\",\"reason\":\"lease renewed\"}"

static void
report_json_bad(const char *text, const char *want, const char *what)
{
	struct mc_cand_view names;
	struct mc_report q;
	struct mc_err err;
	int rc = report_text(text, strlen(text), true, &q, &names, &err);

	TAP_OK(rc < 0 && err.code == MC_ERR_PROTO && strstr(err.msg, want) != NULL,
	       "report JSON: %s fails with '%s' (got '%s')", what, want, rc < 0 ? err.msg : "ok");
	mc_report_free(&q);
	mc_cand_view_free(&names);
}

static void
test_report_bad_json(void)
{
	struct mc_cand_view names;
	struct mc_report q;
	struct mc_err err;
	char text[2048], scope[MC_SCOPE_MAX + 1], tenant[MC_NAME_MAX + 2];
	int rc;

	snprintf(text, sizeof(text), "%s",
		 RHDR "\n" RSTAGE RCOUNTS "\"failures\":[" FAIL1 ",{\"tenant\":\"b\",\"key\":"
		      "{\"b64\":\"a/8=\"},\"reason\":\"gone\",\"extra\":[1]}]}\n"
		      "{\"t\":\"note\"}\n{\"t\":\"victims\",\"id\":1,\"victims\":[]}\n");
	rc = report_text(text, strlen(text), true, &q, &names, &err);
	TAP_OK(rc == 0 && q.created == 5 && q.nstages == 1 && q.stages[0].ran &&
		       q.stages[0].nfailures == 2 && names.n == 2 &&
		       q.stages[0].failures[1].victim == 1 &&
		       q.stages[0].failures[1].reason == MC_FAIL_GONE && names.c[1].key_len == 2 &&
		       (unsigned char)names.keys[names.c[1].key_off + 1] == 0xff,
	       "report JSON: a minimal report reads; blank lines, unknown fields and record "
	       "kinds are skipped (%s)",
	       rc == 0 ? "" : err.msg);
	TAP_OK(rc == 0 && !q.has_round, "report JSON: a header without a round reads as none");
	mc_report_free(&q);
	mc_cand_view_free(&names);

	report_json_bad("{\"format\":\"mc-report\",\"version\":1,\"created\":5,\"round\":7}\n",
			"line 1: field 'round': expected a map", "a round that is not a map");
	report_json_bad("{\"format\":\"mc-report\",\"version\":1,\"created\":5,"
			"\"round\":{\"trigger\":\"manual\",\"scope\":\"\"}}\n",
			"line 1: field 'queued_at': missing", "a round without its times");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[]}\n"
					    "{\"t\":\"failures\",\"id\":2,\"failures\":[" FAIL1
					    "]}\n",
			"line 3: failures of stage 2 do not follow that stage",
			"failures continuing another stage");
	report_json_bad("", "not an mc-report stream", "empty input");
	report_json_bad(HDR, "not an mc-report stream", "a plan header");
	report_json_bad("{\"format\":\"mc-report\",\"version\":2,\"created\":5}\n",
			"unsupported mc-report version 2", "version 2");
	report_json_bad("{\"format\":\"mc-report\",\"version\":1}\n",
			"line 1: field 'created': missing", "a header without created");
	report_json_bad(RHDR "[1]\n", "line 2: expected an object", "a record that is an array");
	report_json_bad(RHDR "{\"id\":1}\n", "line 2: field 't': missing", "a record without t");
	report_json_bad(RHDR RSTAGE "\"planned_bytes\":30,\"planned_objects\":3,"
				    "\"evicted_bytes\":10,\"evicted_objects\":1,\"failures\":[]}\n",
			"line 2: field 'ran': missing", "a stage without ran");
	report_json_bad(RHDR RSTAGE "\"ran\":1,\"planned_bytes\":30,\"planned_objects\":3,"
				    "\"evicted_bytes\":10,\"evicted_objects\":1,\"failures\":[]}\n",
			"line 2: field 'ran': expected a boolean, got an unsigned integer",
			"ran as a number");
	report_json_bad(RHDR RSTAGE "\"ran\":true,\"planned_bytes\":30,\"planned_objects\":3,"
				    "\"evicted_objects\":1,\"failures\":[]}\n",
			"line 2: field 'evicted_bytes': missing", "a stage without evicted_bytes");
	report_json_bad(RHDR RSTAGE "\"ran\":true,\"planned_bytes\":-30,\"planned_objects\":3,"
				    "\"evicted_bytes\":1,\"evicted_objects\":1,\"failures\":[]}\n",
			"line 2: field 'planned_bytes': expected an unsigned integer, got a "
			"negative integer",
			"negative planned bytes");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[]}\n" RSTAGE RCOUNTS "\"x\":1}\n",
			"line 3: field 'failures': missing", "a stage without failures");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":{}}\n",
			"line 2: field 'failures': expected an array, got an object",
			"failures as an object");
	report_json_bad(RHDR "{\"t\":\"stage\",\"id\":1,\"scope\":\"\",\"kind\":\"purge\"," RCOUNTS
			     "\"failures\":[]}\n",
			"line 2: field 'kind': unknown stage kind 'purge'", "an unknown kind");
	report_json_bad(RHDR "{\"t\":\"stage\",\"id\":4294967296,\"scope\":\"\",\"kind\":"
			     "\"evict\"," RCOUNTS "\"failures\":[]}\n",
			"line 2: field 'id': 4294967296 is over 4294967295", "an id over 32 bits");
	report_json_bad(RHDR "{\"t\":\"stage\",\"id\":1,\"kind\":\"evict\"," RCOUNTS
			     "\"failures\":[]}\n",
			"line 2: field 'scope': missing", "a stage without scope");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[" FAIL1 ",\"k2\"]}\n",
			"line 2: failure 2: expected an object, got a string",
			"a failure that is a string");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[" FAIL1 ",{\"tenant\":\"a\","
					    "\"reason\":\"gone\"}]}\n",
			"line 2: failure 2: field 'key': missing", "a failure without a key");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[{\"tenant\":\"a\",\"key\":\"\","
					    "\"reason\":\"gone\"}]}\n",
			"line 2: failure 1: field 'key': 0 bytes", "an empty key");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[{\"key\":\"k\","
					    "\"reason\":\"gone\"}]}\n",
			"line 2: failure 1: field 'tenant': missing", "a failure without a tenant");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[{\"tenant\":\"\",\"key\":\"k\","
					    "\"reason\":\"gone\"}]}\n",
			"line 2: failure 1: field 'tenant': empty", "an empty tenant");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[{\"tenant\":\"a\",\"key\":\"k\"}]}\n",
			"line 2: failure 1: field 'reason': missing", "a failure without a reason");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[{\"tenant\":\"a\",\"key\":\"k\","
					    "\"reason\":7}]}\n",
			"line 2: failure 1: field 'reason': expected a string, got an unsigned",
			"a numeric reason");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[{\"tenant\":\"a\",\"key\":\"k\","
					    "\"reason\":\"bored\"}]}\n",
			"line 2: failure 1: field 'reason': unknown reason 'bored'",
			"an unknown reason");
	memset(tenant, 't', MC_NAME_MAX + 1);
	tenant[MC_NAME_MAX + 1] = '\0';
	snprintf(text, sizeof(text),
		 RHDR RSTAGE RCOUNTS "\"failures\":[{\"tenant\":\"%s\",\"key\":\"k\","
				     "\"reason\":\"gone\"}]}\n",
		 tenant);
	report_json_bad(text, "line 2: failure 1: field 'tenant': name of 129 bytes",
			"a tenant over the name limit");
	memset(scope, 's', MC_SCOPE_MAX);
	scope[MC_SCOPE_MAX] = '\0';
	snprintf(text, sizeof(text),
		 RHDR "{\"t\":\"stage\",\"id\":1,\"scope\":\"%s\",\"kind\":\"evict\"}\n", scope);
	report_json_bad(text, "line 2: field 'scope': 512 bytes, over the limit of 511",
			"a scope of MC_SCOPE_MAX bytes");
	report_json_bad(RHDR RSTAGE RCOUNTS "\"failures\":[]\n", "line 2: expected ',' or '}'",
			"a cut line");
}

static void
pack_report_header(msgpack_packer *pk, const char *format)
{
	msgpack_pack_map(pk, 3);
	mc_pack_kv_str(pk, "format", format);
	mc_pack_kv_u64(pk, "version", 1);
	mc_pack_kv_u64(pk, "created", 9);
}

/* A stage with nfail failures, the last one's reason bad_reason when given. */
static void
pack_report_stage(msgpack_packer *pk, int nfail, bool bin_key, const char *bad_reason)
{
	msgpack_pack_map(pk, 10);
	mc_pack_kv_str(pk, "t", "stage");
	mc_pack_kv_u64(pk, "id", 3);
	mc_pack_kv_str(pk, "scope", "");
	mc_pack_kv_str(pk, "kind", "fallback");
	mc_pack_kv_bool(pk, "ran", true);
	mc_pack_kv_u64(pk, "planned_bytes", 1);
	mc_pack_kv_u64(pk, "planned_objects", 1);
	mc_pack_kv_u64(pk, "evicted_bytes", 0);
	mc_pack_kv_u64(pk, "evicted_objects", 0);
	mc_pack_key(pk, "failures");
	msgpack_pack_array(pk, (size_t)nfail);
	for (int i = 0; i < nfail; i++) {
		msgpack_pack_map(pk, 3);
		mc_pack_kv_str(pk, "tenant", "a");
		mc_pack_key(pk, "key");
		if (bin_key) {
			msgpack_pack_bin(pk, 2);
			msgpack_pack_bin_body(pk, "\x00\x01", 2);
		} else {
			mc_pack_strn(pk, "k", 1);
		}
		mc_pack_kv_str(pk, "reason",
			       bad_reason != NULL && i == nfail - 1 ? bad_reason : "pinned");
	}
}

static void
report_mp_check(const msgpack_sbuffer *sb, size_t len, const char *want, const char *what)
{
	struct mc_cand_view names;
	struct mc_report q;
	struct mc_err err;
	int rc = report_text(sb->data, len, false, &q, &names, &err);

	if (want == NULL)
		TAP_OK(rc == 0, "report msgpack: %s reads (%s)", what, rc == 0 ? "" : err.msg);
	else
		TAP_OK(rc < 0 && strstr(err.msg, want) != NULL,
		       "report msgpack: %s fails with '%s' (got '%s')", what, want,
		       rc < 0 ? err.msg : "ok");
	mc_report_free(&q);
	mc_cand_view_free(&names);
}

static void
test_report_bad_msgpack(void)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t good;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack_header(&pk, "mc-plan", 1);
	report_mp_check(&sb, sb.size, "not an mc-report stream", "a plan's header");
	msgpack_sbuffer_clear(&sb);
	pack_report_header(&pk, "mc-report");
	pack_report_stage(&pk, 2, false, NULL);
	pack_report_stage(&pk, 1, true, NULL);
	good = sb.size;
	report_mp_check(&sb, good, NULL, "two stages, one with a binary key");
	report_mp_check(&sb, good - 2, "record 2: truncated after", "a cut last record");
	pack_report_stage(&pk, 3, false, "tired");
	report_mp_check(&sb, sb.size, "record 3: failure 3: field 'reason': unknown reason 'tired'",
			"an unknown reason in the third failure");
	msgpack_sbuffer_clear(&sb);
	pack_report_header(&pk, "mc-report");
	msgpack_pack_array(&pk, 0);
	report_mp_check(&sb, sb.size, "record 1: not a map", "an array record");
	msgpack_sbuffer_clear(&sb);
	pack_report_header(&pk, "mc-report");
	msgpack_sbuffer_write(&sb, "\xdd\x7f\xff\xff\xff", 5);
	report_mp_check(&sb, sb.size, "record 1: malformed: ",
			"an array claiming 2^31 elements is refused unread");
	msgpack_sbuffer_clear(&sb);
	msgpack_sbuffer_write(&sb, "\xc1", 1);
	report_mp_check(&sb, sb.size, "not an mc-report stream", "a byte that is never msgpack");
	msgpack_sbuffer_destroy(&sb);
}

int
main(void)
{
	struct mc_plan p;
	struct mc_err err;

	mc_plan_init(&p);
	if (build_plan(&p, &err) < 0) {
		fprintf(stderr, "cannot build the plan: %s\n", err.msg);
		return 1;
	}
	test_round_trip(&p, false);
	test_round_trip(&p, true);
	test_big_integers(&p);
	test_bad_json();
	test_bad_msgpack();
	test_build();
	test_reasons();
	test_report(&p);
	test_soft_pinned();
	test_soft_pinned_read();
	test_report_round_trip(&p, false);
	test_report_round_trip(&p, true);
	test_report_bad_json();
	test_report_bad_msgpack();
	mc_plan_free(&p);
	return tap_done();
}
