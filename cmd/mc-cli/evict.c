/*
 * The eviction commands, the two ends of the pipeline
 *   mc-cli candidates | mc-evict-plan -p POLICY | mc-cli evict --plan -
 *
 * candidates writes the master's candidate view to stdout as it came (the
 * msgpack stream of man/mc-candidates.5), or as JSON lines with --json.
 *
 * evict hands the master work to execute: --plan sends a plan
 * (man/mc-plan.5) after checking it here, so bad input never reaches the
 * master; --target asks the master for a round of its own, planned with
 * its policy (--dry-run: the plan only). What comes back, a report
 * (man/mc-report.5) or a plan, is printed for people, as JSON lines with
 * --json, or passed through as msgpack with --raw.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "mc/candidates.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/plan.h"
#include "mc/rpcc.h"
#include "mc/tier.h"

/* Bulk bytes read per call, and the step the JSON buffer grows by. */
#define CHUNK (1u << 20)

static struct {
	const char *peer; /* an id, or an address resolved through `peers` */
	const char *tier;
	const char *tenant;
} cand_o;

const struct mc_opt cli_candidates_opts[] = {
	{ "peer", 0, "ID", NULL, "only copies on this peer (its id or address)", mc_set_str,
	  &cand_o.peer },
	{ "tier", 0, MC_ARG_ONE_OF("TIER", MC_TIER_NAMES), NULL,
	  "only copies in this tier: dram, ssd, hbm or cxl", mc_set_str, &cand_o.tier },
	{ "tenant", 0, "STR", NULL, "only this tenant's copies (default: every tenant)", mc_set_str,
	  &cand_o.tenant },
	{ 0 },
};

/*
 * A failed call: one line naming what was being done, and the exit
 * status of the master's code, as every tool maps it (mc/tool.h).
 */
static _Noreturn void
call_fail(const char *doing, const struct mc_err *err)
{
	mc_tool_fail(err, doing, NULL);
}

/*
 * The id of the peer --peer names: a number is taken as it is; anything
 * else is an address, looked up among the peers the master lists (the
 * view names peers by address, so that is what people copy from it).
 */
static uint64_t
peer_id_of(struct mc_rpcc *r, const char *peer, const char *doing)
{
	const msgpack_object_array *peers;
	struct mc_err err = { 0 };
	struct mc_msg m;
	uint64_t id = 0;
	bool found = false;

	if (mc_parse_u64(peer, &id, &err) == 0)
		return id;
	if (mc_rpcc_call0(r, "peers", &m, &err) < 0)
		call_fail(doing, &err);
	peers = mc_map_array(m.body, "peers");
	for (uint32_t i = 0; peers != NULL && i < peers->size && !found; i++) {
		const msgpack_object *p = &peers->ptr[i];
		const char *addr;
		size_t len;

		if (mc_map_str(p, "addr", &addr, &len, NULL) > 0 && len == strlen(peer) &&
		    memcmp(addr, peer, len) == 0)
			found = mc_map_u64(p, "peer_id", &id, NULL) > 0;
	}
	mc_msg_release(&m);
	if (!found)
		mc_die(MC_EXIT_FAIL, "cannot %s: no peer '%s'", doing, peer);
	return id;
}

/* Pass the bulk through to stdout as it arrives; what names it in errors. */
static void
copy_out(struct mc_rpcc *r, uint64_t len, const char *doing, const char *what)
{
	struct mc_err err = { 0 };
	char *buf = malloc(CHUNK);

	if (buf == NULL)
		mc_die(MC_EXIT_SOFTWARE, "cannot %s: out of memory", doing);
	while (len > 0) {
		size_t k = len < CHUNK ? (size_t)len : CHUNK;

		if (mc_rpcc_read_bulk(r, buf, k, &err) < 0)
			call_fail(doing, &err);
		if (fwrite(buf, 1, k, stdout) != k)
			mc_die(MC_EXIT_FAIL, "cannot write %s: %s", what, mc_strerror(errno));
		len -= k;
	}
	free(buf);
	if (fflush(stdout) != 0)
		mc_die(MC_EXIT_FAIL, "cannot write %s: %s", what, mc_strerror(errno));
}

/* Make room for `need` more bytes after `have` in *buf, doubling; exits when out of memory. */
static void
make_room(char **buf, size_t *cap, size_t have, size_t need, const char *doing)
{
	char *nb;

	if (*cap - have >= need)
		return;
	*cap = *cap == 0 ? CHUNK : *cap * 2;
	nb = realloc(*buf, *cap);
	if (nb == NULL)
		mc_die(MC_EXIT_SOFTWARE, "cannot %s: out of memory", doing);
	*buf = nb;
}

/*
 * Read the whole bulk into memory (*have bytes, at least one). The
 * buffer grows with the bytes that actually arrived, never to the
 * length the reply merely declared.
 */
static char *
read_all_bulk(struct mc_rpcc *r, uint64_t len, const char *doing, const char *what, size_t *have)
{
	struct mc_err err = { 0 };
	char *buf = NULL;
	size_t cap = 0;

	*have = 0;
	while (*have < len) {
		size_t k = len - *have < CHUNK ? (size_t)(len - *have) : CHUNK;

		make_room(&buf, &cap, *have, k, doing);
		if (mc_rpcc_read_bulk(r, buf + *have, k, &err) < 0)
			call_fail(doing, &err);
		*have += k;
	}
	if (*have == 0)
		mc_die(MC_EXIT_DATAERR, "bad %s from %s: empty reply", what, mc_rpcc_addr(r));
	return buf;
}

/* Decode the view and write JSON lines. */
static void
convert_out(struct mc_rpcc *r, uint64_t len)
{
	struct mc_err err = { 0 };
	struct mc_cand_view v;
	size_t have;
	char *buf = read_all_bulk(r, len, "list candidates", "candidate view", &have);
	FILE *in = fmemopen(buf, have, "r");

	if (in == NULL)
		mc_die(MC_EXIT_SOFTWARE, "cannot read candidates: %s", mc_strerror(errno));
	mc_cand_view_init(&v);
	if (mc_cand_read(in, &v, false, &err) < 0)
		mc_die(err.code == MC_ERR_PROTO ? MC_EXIT_DATAERR : MC_EXIT_SOFTWARE,
		       "bad candidate view from %s: %s", mc_rpcc_addr(r), err.msg);
	fclose(in);
	free(buf);
	if (mc_cand_write(stdout, &v, true, &err) < 0)
		mc_die(MC_EXIT_FAIL, "%s", err.msg);
	mc_cand_view_free(&v);
}

int
cli_candidates(int argc, char **argv)
{
	struct mc_rpcc *r = mc_tool_master();
	struct mc_err err = { 0 };
	msgpack_packer *pk;
	struct mc_msg m;
	uint64_t len, peer = 0;

	(void)argc;
	(void)argv;
	if (!cli.json && isatty(STDOUT_FILENO))
		mc_die(MC_EXIT_USAGE, "refusing to write a candidate view to a terminal; use "
				      "--json or a pipe");
	if (r == NULL)
		mc_die(MC_EXIT_UNAVAILABLE, "cannot reach the master");
	if (cand_o.peer != NULL)
		peer = peer_id_of(r, cand_o.peer, "list candidates");
	pk = mc_rpcc_begin(r, "candidates");
	msgpack_pack_map(pk,
			 (cand_o.peer != NULL) + (cand_o.tier != NULL) + (cand_o.tenant != NULL));
	if (cand_o.peer != NULL)
		mc_pack_kv_u64(pk, "peer_id", peer);
	if (cand_o.tier != NULL)
		mc_pack_kv_str(pk, "tier", cand_o.tier);
	if (cand_o.tenant != NULL)
		mc_pack_kv_str(pk, "tenant", cand_o.tenant);
	if (mc_rpcc_call(r, &m, &err) < 0)
		call_fail("list candidates", &err);
	if (!m.has_bulk)
		mc_die(MC_EXIT_DATAERR, "bad candidate view from %s: no stream in the reply",
		       mc_rpcc_addr(r));
	len = m.bulk_len;
	mc_msg_release(&m);
	if (cli.json)
		convert_out(r, len);
	else
		copy_out(r, len, "list candidates", "candidates");
	return MC_EXIT_OK;
}

/* ---- evict ---- */

static struct {
	const char *plan; /* a file, or "-" for stdin */
	/* sizes or percentages, as mc-evict-plan takes them; the master applies the latter */
	struct mc_amount target, lowerbound;
	bool has_target, has_lowerbound;
	const char *peer, *tier, *tenant;
	bool dry_run, raw;
} ev_o;

static int
set_target(const char *v, void *target, char *why)
{
	const struct mc_amount *a = target;

	if (mc_set_amount(v, target, why) < 0)
		return -1;
	if ((a->is_pct ? a->pct_micro : a->bytes) == 0) {
		snprintf(why, 200, "a round must free at least one byte");
		return -1;
	}
	ev_o.has_target = true;
	return 0;
}

static int
set_lowerbound(const char *v, void *target, char *why)
{
	if (mc_set_amount(v, target, why) < 0)
		return -1;
	ev_o.has_lowerbound = true;
	return 0;
}

const struct mc_opt cli_evict_opts[] = {
	{ "plan", 0, "FILE", NULL, "execute this plan (msgpack or JSON lines; - for stdin)",
	  mc_set_str, &ev_o.plan },
	{ "target", 0, "SIZE", NULL,
	  "have the master plan and run a round freeing SIZE, or a percentage of the view's "
	  "bytes (\"20%\")",
	  set_target, &ev_o.target },
	{ "lowerbound", 0, "SIZE", NULL,
	  "with --target: the least the round must free, or a percentage of the target "
	  "(default: the policy's)",
	  set_lowerbound, &ev_o.lowerbound },
	{ "tenant", 0, "STR", NULL, "with --target: only this tenant's copies", mc_set_str,
	  &ev_o.tenant },
	{ "peer", 0, "ID", NULL, "with --target: only copies on this peer (its id or address)",
	  mc_set_str, &ev_o.peer },
	{ "tier", 0, MC_ARG_ONE_OF("TIER", MC_TIER_NAMES), NULL,
	  "with --target: only copies in this tier: dram, ssd, hbm or cxl", mc_set_str,
	  &ev_o.tier },
	{ "dry-run", 0, NULL, NULL, "with --target: print the master's plan, evict nothing",
	  mc_set_flag, &ev_o.dry_run },
	{ "raw", 0, NULL, NULL, "write the answer as the msgpack stream it came in", mc_set_flag,
	  &ev_o.raw },
	{ 0 },
};

static _Noreturn void
evict_usage(const char *msg)
{
	mc_complain("evict: %s", msg);
	fprintf(stderr,
		"usage: mc-cli evict --plan FILE|- [OPTIONS]\n"
		"       mc-cli evict --target SIZE|PCT [--lowerbound SIZE|PCT] [--tenant T] "
		"[--peer P] [--tier T] [--dry-run] [OPTIONS]\n");
	exit(MC_EXIT_USAGE);
}

static void
check_evict_args(void)
{
	if (ev_o.plan == NULL && !ev_o.has_target)
		evict_usage("give --plan FILE or --target SIZE|PCT");
	if (ev_o.plan != NULL && ev_o.has_target)
		evict_usage("--plan and --target exclude each other");
	if (ev_o.plan != NULL) {
		const char *only = ev_o.has_lowerbound	 ? "--lowerbound"
				   : ev_o.tenant != NULL ? "--tenant"
				   : ev_o.peer != NULL	 ? "--peer"
				   : ev_o.tier != NULL	 ? "--tier"
				   : ev_o.dry_run	 ? "--dry-run"
							 : NULL;
		char msg[96];

		if (only != NULL) {
			snprintf(msg, sizeof(msg), "%s goes with --target, not --plan", only);
			evict_usage(msg);
		}
	}
	/* a percentage of the target is never over it; a size over a percentage the master checks */
	if (ev_o.has_lowerbound && !ev_o.target.is_pct && !ev_o.lowerbound.is_pct &&
	    ev_o.lowerbound.bytes > ev_o.target.bytes)
		evict_usage("--lowerbound is over --target");
	if (ev_o.raw && cli.json)
		evict_usage("--raw and --json exclude each other");
	if (ev_o.raw && isatty(STDOUT_FILENO))
		evict_usage("refusing to write msgpack to a terminal; use a pipe");
}

/* The whole of path ("-": stdin) in memory; exits on failure. */
static char *
slurp(const char *path, const char *name, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n;

	if (f == NULL)
		mc_die(MC_EXIT_FAIL, "cannot read %s: %s", name, mc_strerror(errno));
	*len = 0;
	for (;;) {
		make_room(&buf, &cap, *len, CHUNK, "read the plan");
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
		if (n == 0)
			break;
	}
	if (ferror(f))
		mc_die(MC_EXIT_FAIL, "cannot read %s: %s", name, mc_strerror(errno));
	if (f != stdin)
		fclose(f);
	return buf;
}

/*
 * Read and check the plan of --plan, then encode it as msgpack for the
 * wire: *out (malloc'd) of *outlen bytes. The form is told by the first
 * byte that is not blank: '{' starts JSON lines, msgpack never does.
 */
static void
load_plan(const char *path, char **out, size_t *outlen)
{
	struct mc_err err = { 0 };
	struct mc_plan p;
	char name[300];
	size_t len, i = 0;
	char *buf;
	bool json;
	FILE *f;

	if (strcmp(path, "-") == 0)
		snprintf(name, sizeof(name), "plan on standard input");
	else
		snprintf(name, sizeof(name), "plan '%.256s'", path);
	buf = slurp(path, name, &len);
	while (i < len && strchr(" \t\r\n", buf[i]) != NULL && buf[i] != '\0')
		i++;
	json = i < len && buf[i] == '{';
	f = fmemopen(buf, len == 0 ? 1 : len, "r");
	if (f == NULL)
		mc_die(MC_EXIT_SOFTWARE, "cannot read %s: %s", name, mc_strerror(errno));
	if (len == 0)
		fgetc(f); /* fmemopen wants a size of one at least: an empty input */
	mc_plan_init(&p);
	if (mc_plan_read(f, &p, json, &err) < 0)
		mc_die(err.code == MC_ERR_PROTO ? MC_EXIT_DATAERR : MC_EXIT_SOFTWARE, "bad %s: %s",
		       name, err.msg);
	fclose(f);
	free(buf);
	*out = NULL;
	f = open_memstream(out, outlen);
	if (f == NULL)
		mc_die(MC_EXIT_SOFTWARE, "cannot encode %s: %s", name, mc_strerror(errno));
	if (mc_plan_write(f, &p, false, &err) < 0)
		mc_die(MC_EXIT_SOFTWARE, "cannot encode %s: %s", name, err.msg);
	if (fclose(f) != 0)
		mc_die(MC_EXIT_SOFTWARE, "cannot encode %s: %s", name, mc_strerror(errno));
	mc_plan_free(&p);
}

/*
 * The master said no. Busy is a state of the master's, not of the plan:
 * say so, and why (another plan running, too many queued).
 */
static _Noreturn void
evict_fail(const char *doing, const struct mc_err *err)
{
	if (err->code == MC_ERR_BUSY)
		mc_die(mc_status_exit_code(err->code), "cannot %s: the master is busy: %s", doing,
		       err->msg);
	call_fail(doing, err);
}

/*
 * The evict request begun on r: send, and wait for the answer. The bulk
 * (the plan of evict_plan) goes out straight from the caller's buffer.
 * *is_plan tells what the answer's bulk holds; *len is its length.
 */
static void
evict_call(struct mc_rpcc *r, const void *bulk, uint64_t bulk_len, const char *doing, bool *is_plan,
	   uint64_t *len)
{
	struct mc_err err = { 0 };
	const char *kind;
	size_t kind_len;
	struct mc_msg m;

	if (mc_rpcc_send(r, bulk, bulk_len, &err) < 0 || mc_rpcc_flush(r, &err) < 0 ||
	    mc_rpcc_recv(r, &m, &err) < 0)
		evict_fail(doing, &err);
	if (mc_msg_error(&m, &err) < 0) {
		/* a bulk announced with an error would desynchronise the stream */
		if (m.has_bulk)
			mc_rpcc_skip_bulk(r, m.bulk_len, NULL);
		mc_msg_release(&m);
		evict_fail(doing, &err);
	}
	if (!m.has_bulk)
		mc_die(MC_EXIT_DATAERR, "bad reply from %s: no stream in the reply",
		       mc_rpcc_addr(r));
	*len = m.bulk_len;
	if (mc_map_str(m.body, "kind", &kind, &kind_len, NULL) > 0) {
		if (mc_obj_streq(mc_map_get(m.body, "kind"), "plan"))
			*is_plan = true;
		else if (mc_obj_streq(mc_map_get(m.body, "kind"), "report"))
			*is_plan = false;
		else
			mc_die(MC_EXIT_DATAERR, "bad reply from %s: unknown kind '%.*s'",
			       mc_rpcc_addr(r), kind_len > 32 ? 32 : (int)kind_len, kind);
	}
	mc_msg_release(&m);
}

/* Bytes of a key or name for a human line: control bytes escaped. */
static void
print_bytes(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static const char *
scope_label(const char *scope)
{
	return scope[0] != '\0' ? scope : "global";
}

static const char *
kind_label(int kind)
{
	return kind == MC_STAGE_FALLBACK ? "fallback" : "evict";
}

static void
print_report(const struct mc_report *r, const struct mc_cand_view *names)
{
	uint64_t objects = 0, bytes = 0;
	char a[32], b[32];

	if (r->has_round)
		printf("round %s%s%s  usage at start %s  target %s\n", r->round.trigger,
		       r->round.scope[0] != '\0' ? " " : "", r->round.scope,
		       mc_fmt_size(r->round.usage_at_start, a, sizeof(a)),
		       mc_fmt_size(r->round.target, b, sizeof(b)));
	for (size_t i = 0; i < r->nstages; i++) {
		const struct mc_stage_report *sr = &r->stages[i];

		printf("stage %" PRIu32 " %s %s  ", sr->id, kind_label(sr->kind),
		       scope_label(sr->scope));
		if (!sr->ran) {
			printf("not run: condition met\n");
		} else {
			printf("planned %" PRIu64 " obj %s  evicted %" PRIu64 " obj %s\n",
			       sr->planned_objects, mc_fmt_size(sr->planned_bytes, a, sizeof(a)),
			       sr->evicted_objects, mc_fmt_size(sr->evicted_bytes, b, sizeof(b)));
		}
		for (size_t j = 0; j < sr->nfailures; j++) {
			const struct mc_cand *c = &names->c[sr->failures[j].victim];

			printf("  failed ");
			print_bytes(names->names[c->tenant], names->name_lens[c->tenant]);
			putchar('/');
			print_bytes(mc_cand_key(names, c), c->key_len);
			printf(": %s\n", mc_fail_reason_name(sr->failures[j].reason));
		}
		objects += sr->evicted_objects;
		bytes += sr->evicted_bytes;
	}
	printf("evicted %" PRIu64 " %s, %s\n", objects, objects == 1 ? "object" : "objects",
	       mc_fmt_size(bytes, a, sizeof(a)));
}

static void
print_plan(const struct mc_plan *p)
{
	uint64_t victims = 0, bytes = 0;
	char a[32], b[32];

	for (size_t i = 0; i < p->nstages; i++) {
		const struct mc_stage *s = &p->stages[i];
		uint64_t sb = 0;

		for (size_t j = 0; j < s->nvictims; j++)
			sb += p->view.c[s->victims[j]].bytes;
		printf("stage %" PRIu32 " %s %s  %zu %s %s", s->id, kind_label(s->kind),
		       scope_label(s->scope), s->nvictims, s->nvictims == 1 ? "victim" : "victims",
		       mc_fmt_size(sb, a, sizeof(a)));
		if (s->kind == MC_STAGE_FALLBACK)
			printf("  while %s < %s", scope_label(s->cond_scope),
			       mc_fmt_size(s->cond_lowerbound, b, sizeof(b)));
		if (s->soft_pinned)
			printf("  soft-pinned pass");
		putchar('\n');
		victims += s->nvictims;
		bytes += sb;
	}
	printf("planned %" PRIu64 " %s, %s", victims, victims == 1 ? "victim" : "victims",
	       mc_fmt_size(bytes, a, sizeof(a)));
	printf(" for a target of %s", mc_fmt_size(p->target, a, sizeof(a)));
	printf(", lowerbound %s\n", mc_fmt_size(p->lowerbound, b, sizeof(b)));
}

/*
 * The victims the report says were gone: named on stderr, so that a
 * plan of keys that no longer exist does not pass for work done. Only
 * gone ones and nothing evicted is a failure (1, as not found is); some
 * gone beside work done is what a plan made a while ago expects.
 */
static int
missing_status(const struct mc_report *r)
{
	uint64_t planned = 0, evicted = 0, failed = 0, gone = 0;

	for (size_t i = 0; i < r->nstages; i++) {
		const struct mc_stage_report *sr = &r->stages[i];

		planned += sr->planned_objects;
		evicted += sr->evicted_objects;
		failed += sr->nfailures;
		for (size_t j = 0; j < sr->nfailures; j++)
			gone += sr->failures[j].reason == MC_FAIL_GONE;
	}
	if (gone == 0)
		return MC_EXIT_OK;
	if (evicted == 0 && gone == failed) {
		mc_complain("nothing evicted: %" PRIu64 " of %" PRIu64
			    " planned entries named missing objects",
			    gone, planned);
		return MC_EXIT_FAIL;
	}
	mc_complain("%" PRIu64 " of %" PRIu64 " planned entries named missing objects", gone,
		    planned);
	return MC_EXIT_OK;
}

/*
 * Decode the answer's bulk and print it as people or --json want it;
 * returns the exit status (missing_status for a report).
 */
static int
show_answer(struct mc_rpcc *r, uint64_t len, bool is_plan, const char *doing)
{
	const char *what = is_plan ? "plan" : "report";
	struct mc_err err = { 0 };
	struct mc_report rep;
	struct mc_plan p; /* the plan, or for a report its failures' names */
	size_t have;
	char *buf = read_all_bulk(r, len, doing, what, &have);
	FILE *in = fmemopen(buf, have, "r");
	int rc;

	if (in == NULL)
		mc_die(MC_EXIT_SOFTWARE, "cannot read the %s: %s", what, mc_strerror(errno));
	mc_plan_init(&p);
	mc_report_init(&rep);
	rc = is_plan ? mc_plan_read(in, &p, false, &err)
		     : mc_report_read(in, &rep, &p.view, false, &err);
	if (rc < 0)
		mc_die(err.code == MC_ERR_PROTO ? MC_EXIT_DATAERR : MC_EXIT_SOFTWARE,
		       "bad %s from %s: %s", what, mc_rpcc_addr(r), err.msg);
	fclose(in);
	free(buf);
	if (cli.json)
		rc = is_plan ? mc_plan_write(stdout, &p, true, &err)
			     : mc_report_write(stdout, &rep, &p, true, &err);
	else if (is_plan)
		print_plan(&p);
	else
		print_report(&rep, &p.view);
	if (rc < 0)
		mc_die(MC_EXIT_FAIL, "%s", err.msg);
	if (fflush(stdout) != 0)
		mc_die(MC_EXIT_FAIL, "cannot write the %s: %s", what, mc_strerror(errno));
	rc = is_plan ? MC_EXIT_OK : missing_status(&rep);
	mc_report_free(&rep);
	mc_plan_free(&p);
	return rc;
}

/* An amount for evict_run: NAME in bytes, or NAME_pct in millionths of a percent. */
static void
pack_amount(msgpack_packer *pk, const char *name, const struct mc_amount *a)
{
	char pct_name[32];

	if (!a->is_pct) {
		mc_pack_kv_u64(pk, name, a->bytes);
		return;
	}
	snprintf(pct_name, sizeof(pct_name), "%s_pct", name);
	mc_pack_kv_u64(pk, pct_name, a->pct_micro);
}

int
cli_evict(int argc, char **argv)
{
	msgpack_packer *pk;
	struct mc_rpcc *r;
	char *plan = NULL;
	size_t plan_len = 0;
	const char *doing;
	bool is_plan = false;
	uint64_t len;

	(void)argc;
	(void)argv;
	check_evict_args();
	/* a bad plan is refused here, before the master is even contacted */
	if (ev_o.plan != NULL)
		load_plan(ev_o.plan, &plan, &plan_len);
	r = mc_tool_master();
	if (r == NULL)
		mc_die(MC_EXIT_UNAVAILABLE, "cannot reach the master");
	if (ev_o.plan != NULL) {
		doing = "execute the plan";
		pk = mc_rpcc_begin(r, "evict_plan");
		msgpack_pack_map(pk, 1);
		mc_pack_kv_u64(pk, "len", plan_len);
		evict_call(r, plan, plan_len, doing, &is_plan, &len);
		free(plan);
	} else {
		uint64_t peer = 0;

		doing = ev_o.dry_run ? "plan an eviction round" : "run an eviction round";
		if (ev_o.peer != NULL)
			peer = peer_id_of(r, ev_o.peer, doing);
		pk = mc_rpcc_begin(r, "evict_run");
		msgpack_pack_map(pk, 1 + ev_o.has_lowerbound + (ev_o.peer != NULL) +
					     (ev_o.tenant != NULL) + (ev_o.tier != NULL) +
					     ev_o.dry_run);
		pack_amount(pk, "target", &ev_o.target);
		if (ev_o.has_lowerbound)
			pack_amount(pk, "lowerbound", &ev_o.lowerbound);
		if (ev_o.tenant != NULL)
			mc_pack_kv_str(pk, "tenant", ev_o.tenant);
		if (ev_o.peer != NULL)
			mc_pack_kv_u64(pk, "peer_id", peer);
		if (ev_o.tier != NULL)
			mc_pack_kv_str(pk, "tier", ev_o.tier);
		if (ev_o.dry_run)
			mc_pack_kv_bool(pk, "dry_run", true);
		/* without a kind in the answer, a dry run answers a plan */
		is_plan = ev_o.dry_run;
		evict_call(r, NULL, 0, doing, &is_plan, &len);
	}
	if (ev_o.raw) {
		copy_out(r, len, doing, is_plan ? "the plan" : "the report");
		return MC_EXIT_OK;
	}
	return show_answer(r, len, is_plan, doing);
}
