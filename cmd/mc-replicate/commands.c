/*
 * The commands: each is one call to the master (replication_status,
 * _mode, _heat; see mc-wire(5)) and its printing. Text is one field or
 * record per line, so that it greps; --json prints the master's own
 * fields, so fields it adds later appear without a change here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mc/json.h"
#include "mc/log.h"
#include "mc/parse.h"
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
