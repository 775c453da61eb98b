/*
 * The commands: each is one call to the master (replication_status,
 * _mode, _heat, _leases, _propose, _warmup; see mc-wire(5)) and its
 * printing. Text is one field or
 * record per line, so that it greps; --json prints the master's own
 * fields, so fields it adds later appear without a change here.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/checksum.h"
#include "mc/hash.h"
#include "mc/heat.h"
#include "mc/json.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/proto.h"
#include "mc/rpcc.h"
#include "mc/tool.h"
#include "mc/wire.h"
#include "replicate.h"

static void
print_json(const struct mc_msg *m)
{
	mc_json_write(stdout, m->body);
	putchar('\n');
}

/* A str or bin field, as it is ("-" when absent or empty). */
static void
put_field(const msgpack_object *map, const char *name)
{
	const msgpack_object *o = mc_map_get(map, name);

	if (o != NULL && o->type == MSGPACK_OBJECT_STR && o->via.str.size > 0)
		fwrite(o->via.str.ptr, 1, o->via.str.size, stdout);
	else if (o != NULL && o->type == MSGPACK_OBJECT_BIN && o->via.bin.size > 0)
		fwrite(o->via.bin.ptr, 1, o->via.bin.size, stdout);
	else
		putchar('-');
}

/* Each unsigned field of map as "PREFIX NAME: N", and of a map in it as "PREFIX NAME SUB: N". */
static void
put_counts(const char *prefix, const msgpack_object *map)
{
	for (uint32_t i = 0;
	     map != NULL && map->type == MSGPACK_OBJECT_MAP && i < map->via.map.size; i++) {
		const msgpack_object_kv *kv = &map->via.map.ptr[i];
		char sub[96];

		if (kv->key.type != MSGPACK_OBJECT_STR)
			continue;
		if (kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			printf("%s %.*s: %" PRIu64 "\n", prefix, (int)kv->key.via.str.size,
			       kv->key.via.str.ptr, kv->val.via.u64);
		else if (kv->val.type == MSGPACK_OBJECT_MAP) {
			snprintf(sub, sizeof(sub), "%s %.*s", prefix,
				 (int)(kv->key.via.str.size > 64 ? 64 : kv->key.via.str.size),
				 kv->key.via.str.ptr);
			put_counts(sub, &kv->val);
		}
	}
}

/* ---- status ---- */

int
cmd_status(int argc, char **argv)
{
	static const char *const counts[] = {
		"threshold", "max_replicas",	 "heat_capacity", "heat_entries",  "reads",
		"triggers",  "triggers_dropped", "judged",	  "would_propose",
	};
	const msgpack_object *rejected;
	struct mc_err err = { 0 };
	struct mc_msg m;
	uint64_t v;
	double qps = 0;

	(void)argc;
	(void)argv;
	if (mc_rpcc_call0(mc_tool_master(), "replication_status", &m, &err) < 0)
		mc_tool_fail(&err, "get the replication status", NULL);
	if (rp.json) {
		print_json(&m);
		mc_msg_release(&m);
		return MC_EXIT_OK;
	}
	fputs("mode: ", stdout);
	put_field(m.body, "mode");
	putchar('\n');
	v = 0;
	mc_map_u64(m.body, "window_ms", &v, NULL);
	printf("window_ms: %" PRIu64 "\n", v);
	mc_map_double(m.body, "qps", &qps, NULL);
	printf("qps: %g\n", qps);
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		v = 0;
		mc_map_u64(m.body, counts[i], &v, NULL);
		printf("%s: %" PRIu64 "\n", counts[i], v);
	}
	v = 0;
	mc_map_u64(m.body, "proposed", &v, NULL);
	printf("proposed: %" PRIu64 "\n", v);
	put_counts("copies", mc_map_get(m.body, "copies"));
	rejected = mc_map_get(m.body, "rejected");
	for (uint32_t i = 0;
	     rejected != NULL && rejected->type == MSGPACK_OBJECT_MAP && i < rejected->via.map.size;
	     i++) {
		const msgpack_object_kv *kv = &rejected->via.map.ptr[i];

		if (kv->key.type != MSGPACK_OBJECT_STR ||
		    kv->val.type != MSGPACK_OBJECT_POSITIVE_INTEGER)
			continue;
		printf("rejected %.*s: %" PRIu64 "\n", (int)kv->key.via.str.size,
		       kv->key.via.str.ptr, kv->val.via.u64);
	}
	mc_msg_release(&m);
	return MC_EXIT_OK;
}

/* ---- mode ---- */

int
cmd_mode(int argc, char **argv)
{
	struct mc_rpcc *r = mc_tool_master();
	msgpack_packer *pk = mc_rpcc_begin(r, "replication_mode");
	struct mc_err err = { 0 };
	struct mc_msg m;

	(void)argc;
	msgpack_pack_map(pk, 1);
	mc_pack_kv_str(pk, "mode", argv[0]);
	if (mc_rpcc_call(r, &m, &err) < 0)
		mc_tool_fail(&err, "set the replication mode", argv[0]);
	if (rp.json) {
		print_json(&m);
	} else {
		fputs("mode: ", stdout);
		put_field(m.body, "mode");
		fputs(" (was ", stdout);
		put_field(m.body, "was");
		puts(")");
	}
	mc_msg_release(&m);
	return MC_EXIT_OK;
}

/* ---- heat ---- */

int
cmd_heat(int argc, char **argv)
{
	struct mc_rpcc *r = mc_tool_master();
	msgpack_packer *pk = mc_rpcc_begin(r, "replication_heat");
	const msgpack_object_array *items;
	struct mc_err err = { 0 };
	struct mc_msg m;

	(void)argc;
	(void)argv;
	msgpack_pack_map(pk, 1);
	mc_pack_kv_u64(pk, "top", (uint64_t)rp.top);
	if (mc_rpcc_call(r, &m, &err) < 0)
		mc_tool_fail(&err, "list the heat window", NULL);
	items = mc_map_array(m.body, "items");
	for (uint32_t i = 0; items != NULL && i < items->size; i++) {
		const msgpack_object *it = &items->ptr[i];
		uint64_t reads = 0;

		if (rp.json) {
			mc_json_write(stdout, it);
			putchar('\n');
			continue;
		}
		/* READS  TENANT  DOMAIN  KEY: the key last, as it may hold spaces */
		mc_map_u64(it, "reads", &reads, NULL);
		printf("%" PRIu64 "  ", reads);
		put_field(it, "tenant");
		fputs("  ", stdout);
		put_field(it, "domain");
		fputs("  ", stdout);
		put_field(it, "key");
		putchar('\n');
	}
	mc_msg_release(&m);
	return MC_EXIT_OK;
}

/* ---- whatif ---- */

/* The proposals made for one key (and domain) in a replay. */
struct proposed {
	uint64_t hash;
	unsigned n;
	size_t len;
	char name[]; /* key, a space, domain */
};

static bool
proposed_eq(const void *entry, const void *key)
{
	const struct proposed *p = entry;
	const struct proposed *k = key;

	return p->len == k->len && memcmp(p->name, k->name, k->len) == 0;
}

/* One access log line, "TIMESTAMP_MS KEY [DOMAIN]", split in place; false when malformed. */
static bool
parse_access(char *line, uint64_t *ts, char **key, size_t *klen, char **dom, size_t *dlen)
{
	char *tok[4];
	size_t len[4], n = 0;

	for (char *p = line; *p != '\0' && n < 4;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (*p == '\0')
			break;
		tok[n] = p;
		while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
			p++;
		len[n] = (size_t)(p - tok[n]);
		n++;
	}
	if (n < 2 || n > 3 || !mc_json_parse_u64(tok[0], len[0], ts) || len[1] > MC_KEY_MAX ||
	    (n == 3 && len[2] > MC_NAME_MAX))
		return false;
	*key = tok[1];
	*klen = len[1];
	*dom = n == 3 ? tok[2] : NULL;
	*dlen = n == 3 ? len[2] : 0;
	return true;
}

int
cmd_whatif(int argc, char **argv)
{
	double t = ceil(rp.qps * (double)rp.window_ms / 1000.0);
	uint32_t threshold = t < 1 ? 1 : t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
	uint64_t reads = 0, judged = 0, proposals = 0, keys = 0, capped = 0, lineno = 0, ts = 0;
	struct mc_htab seen;
	struct mc_err err;
	struct heat h;
	char *line = NULL, *key, *dom;
	size_t cap = 0, klen, dlen;

	(void)argc;
	(void)argv;
	if (heat_init(&h, (size_t)rp.entries, rp.window_ms, threshold, &err) != 0)
		mc_die(MC_EXIT_USAGE, "cannot replay: %s", err.msg);
	mc_htab_init(&seen);
	while (getline(&line, &cap, stdin) > 0) {
		struct heat_entry *e;
		uint32_t slot;

		lineno++;
		if (line[strspn(line, " \t\r\n")] == '\0')
			continue;
		if (!parse_access(line, &ts, &key, &klen, &dom, &dlen))
			mc_die(MC_EXIT_DATAERR,
			       "standard input, line %" PRIu64
			       ": expected TIMESTAMP_MS KEY [DOMAIN]",
			       lineno);
		reads++;
		if (!heat_record(&h, 0, mc_hash64(key, klen, 0), key, klen, dom, dlen, ts))
			continue;
		/* admission at once: the replay has no loop to wait for */
		while ((e = heat_next(&h, &slot)) != NULL) {
			size_t len = (size_t)e->klen + 1 + e->dlen;
			struct proposed *k = malloc(sizeof(*k) + len), *p;

			if (k == NULL)
				mc_die(MC_EXIT_SOFTWARE, "out of memory");
			memcpy(k->name, e->name, e->klen);
			k->name[e->klen] = ' ';
			memcpy(k->name + e->klen + 1, e->name + e->klen, e->dlen);
			k->len = len;
			k->hash = mc_hash64(k->name, len, 1);
			k->n = 0;
			judged++;
			p = mc_htab_find(&seen, k->hash, proposed_eq, k);
			if (p == NULL) {
				if (mc_htab_insert(&seen, k->hash, k) != 0)
					mc_die(MC_EXIT_SOFTWARE, "out of memory");
				p = k;
				keys++;
			} else {
				free(k);
			}
			if (p->n < (unsigned)rp.max_replicas) {
				p->n++;
				proposals++;
			} else {
				capped++;
			}
			heat_judged(&h, slot, ts);
		}
	}
	free(line);
	if (ferror(stdin))
		mc_die(MC_EXIT_FAIL, "cannot read standard input: %s", strerror(errno));
	if (rp.json) {
		printf("{\"reads\":%" PRIu64 ",\"threshold\":%" PRIu32 ",\"window_ms\":%" PRIu64
		       ",\"judged\":%" PRIu64 ",\"proposals\":%" PRIu64 ",\"keys\":%" PRIu64
		       ",\"max_replicas\":%d}\n",
		       reads, threshold, rp.window_ms, judged, proposals, keys, rp.max_replicas);
	} else {
		printf("reads: %" PRIu64 "\n", reads);
		printf("threshold: %" PRIu32 " reads in %" PRIu64 " ms\n", threshold, rp.window_ms);
		printf("judged: %" PRIu64 "\n", judged);
		printf("proposals: %" PRIu64 "\n", proposals);
		printf("keys: %" PRIu64 "\n", keys);
		printf("over max_replicas: %" PRIu64 "\n", capped);
	}
	size_t cursor = 0;
	struct proposed *p;

	while ((p = mc_htab_next(&seen, &cursor)) != NULL)
		free(p);
	mc_htab_free(&seen);
	heat_free(&h);
	return MC_EXIT_OK;
}

/* ---- leases ---- */

/* One lease a line: ID STAGE SOURCE TARGET DOMAIN EXPIRES_IN_MS TENANT KEY (the key last). */
static void
put_lease(const msgpack_object *l)
{
	static const char *const nums[] = { "source", "target" };
	uint64_t v = 0;

	mc_map_u64(l, "id", &v, NULL);
	printf("%" PRIu64 "  ", v);
	put_field(l, "stage");
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		v = 0;
		mc_map_u64(l, nums[i], &v, NULL);
		printf("  %" PRIu64, v);
	}
	fputs("  ", stdout);
	put_field(l, "domain");
	v = 0;
	mc_map_u64(l, "expires_in_ms", &v, NULL);
	printf("  %" PRIu64 "  ", v);
	put_field(l, "tenant");
	fputs("  ", stdout);
	put_field(l, "key");
	putchar('\n');
}

int
cmd_leases(int argc, char **argv)
{
	const msgpack_object_array *items;
	struct mc_err err = { 0 };
	struct mc_msg m;

	(void)argc;
	(void)argv;
	if (mc_rpcc_call0(mc_tool_master(), "replication_leases", &m, &err) < 0)
		mc_tool_fail(&err, "list the dynamic copies' leases", NULL);
	items = mc_map_array(m.body, "items");
	for (uint32_t i = 0; items != NULL && i < items->size; i++) {
		if (rp.json) {
			mc_json_write(stdout, &items->ptr[i]);
			putchar('\n');
		} else {
			put_lease(&items->ptr[i]);
		}
	}
	mc_msg_release(&m);
	return MC_EXIT_OK;
}

/* ---- propose ---- */

static void
pack_opt_str(msgpack_packer *pk, const char *name, const char *v)
{
	if (v != NULL)
		mc_pack_kv_str(pk, name, v);
}

int
cmd_propose(int argc, char **argv)
{
	struct mc_rpcc *r = mc_tool_master();
	msgpack_packer *pk = mc_rpcc_begin(r, "replication_propose");
	const msgpack_object *lease;
	struct mc_err err = { 0 };
	struct mc_msg m;
	bool accepted = false;
	uint32_t n;

	(void)argc;
	n = 1 + (rp.id != NULL) + (rp.requester_domain != NULL) + (rp.target_domain != NULL) +
	    (rp.preferred_target != 0) + 2 * (rp.version != 0) + rp.within;
	msgpack_pack_map(pk, n);
	mc_pack_kv_str(pk, "key", argv[0]);
	pack_opt_str(pk, "proposal_id", rp.id);
	pack_opt_str(pk, "requester_domain", rp.requester_domain);
	pack_opt_str(pk, "target_domain", rp.target_domain);
	if (rp.preferred_target != 0)
		mc_pack_kv_u64(pk, "preferred_target", rp.preferred_target);
	if (rp.version != 0) {
		mc_pack_kv_u64(pk, "version", rp.version);
		mc_pack_kv_u64(pk, "size", rp.size);
	}
	if (rp.within)
		mc_pack_kv_u64(pk, "within_ms", rp.within_ms);
	if (mc_rpcc_call(r, &m, &err) < 0)
		mc_tool_fail(&err, "propose a dynamic copy of", argv[0]);
	mc_map_bool(m.body, "accepted", &accepted, NULL);
	lease = mc_map_get(m.body, "lease");
	if (rp.json) {
		print_json(&m);
	} else if (accepted && lease != NULL && mc_map_get(lease, "stage") != NULL) {
		fputs("accepted: ", stdout);
		put_lease(lease);
	} else if (accepted && lease != NULL) {
		uint64_t id = 0;

		mc_map_u64(lease, "id", &id, NULL);
		printf("accepted: %" PRIu64 "  ", id);
		put_field(lease, "outcome");
		putchar('\n');
	} else {
		fputs("rejected: ", stdout);
		put_field(m.body, "reason");
		putchar('\n');
	}
	mc_msg_release(&m);
	/* a proposal turned down is an answer, not a failure to ask: its own exit code */
	return accepted ? MC_EXIT_OK : MC_EXIT_FAIL;
}

/* ---- warmup ---- */

int
cmd_warmup(int argc, char **argv)
{
	struct mc_rpcc *r = mc_tool_master();
	msgpack_packer *pk;
	struct mc_err err = { 0 };
	struct mc_msg m;
	uint64_t v;

	(void)argc;
	(void)argv;
	if (rp.domain == NULL || rp.domain[0] == '\0')
		mc_die(MC_EXIT_USAGE, "warmup needs --domain, the domain to warm");
	pk = mc_rpcc_begin(r, "replication_warmup");
	msgpack_pack_map(pk, 2 + (rp.max_bytes != 0));
	mc_pack_kv_str(pk, "domain", rp.domain);
	mc_pack_kv_u64(pk, "top", (uint64_t)rp.warm_top);
	if (rp.max_bytes != 0)
		mc_pack_kv_u64(pk, "max_bytes", rp.max_bytes);
	if (mc_rpcc_call(r, &m, &err) < 0)
		mc_tool_fail(&err, "warm the domain", rp.domain);
	if (rp.json) {
		print_json(&m);
	} else {
		static const char *const counts[] = { "proposed", "bytes", "present" };

		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
			v = 0;
			mc_map_u64(m.body, counts[i], &v, NULL);
			printf("%s: %" PRIu64 "\n", counts[i], v);
		}
		put_counts("rejected", mc_map_get(m.body, "rejected"));
	}
	mc_msg_release(&m);
	return MC_EXIT_OK;
}
