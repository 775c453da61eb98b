/*
 * The commands: each is one call to the master (softpin_show, _list,
 * _stats, _expire; see mc/proto.h) and its printing. Text output is one
 * record per line so that it greps and sorts; --json prints the master's
 * own fields, so fields it adds later appear without a change here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc/addr.h"
#include "mc/clock.h"
#include "mc/json.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/proto.h"
#include "mc/rpcc.h"
#include "mc/tool.h"
#include "mc/wire.h"
#include "softpin.h"

/* ---- shared printing ---- */

/* A key or tenant field: str or bin, not NUL-terminated. */
static bool
field_bytes(const msgpack_object *map, const char *name, const char **p, size_t *n)
{
	const msgpack_object *o = mc_map_get(map, name);

	if (o != NULL && o->type == MSGPACK_OBJECT_STR) {
		*p = o->via.str.ptr;
		*n = o->via.str.size;
		return true;
	}
	if (o != NULL && o->type == MSGPACK_OBJECT_BIN) {
		*p = o->via.bin.ptr;
		*n = o->via.bin.size;
		return true;
	}
	*p = "-";
	*n = 1;
	return false;
}

static void
put_bytes(const char *p, size_t n)
{
	fwrite(p, 1, n, stdout);
}

/* The fields of a map, without its braces, after a leading comma. */
static void
json_fields(const msgpack_object *map)
{
	uint32_t i;

	if (map == NULL || map->type != MSGPACK_OBJECT_MAP)
		return;
	for (i = 0; i < map->via.map.size; i++) {
		putchar(',');
		mc_json_write(stdout, &map->via.map.ptr[i].key);
		putchar(':');
		mc_json_write(stdout, &map->via.map.ptr[i].val);
	}
}

static uint64_t
remaining_at(uint64_t deadline, uint64_t now)
{
	return deadline > now ? deadline - now : 0;
}

/* ---- show ---- */

int
cmd_show(int argc, char **argv)
{
	const char *key = argv[0], *state, *act;
	struct mc_rpcc *r = mc_tool_master();
	struct mc_err err = { 0 };
	msgpack_packer *pk;
	uint64_t deadline = 0, remaining = 0, ttl = 0;
	size_t klen = strlen(key), slen, alen;
	char when[32], left[48], ttlbuf[48];
	struct mc_msg m;

	(void)argc;
	if (klen == 0 || klen > MC_KEY_MAX)
		mc_die(MC_EXIT_USAGE, "invalid key '%.64s': must be 1..%d bytes", key, MC_KEY_MAX);
	pk = mc_rpcc_begin(r, "softpin_show");
	msgpack_pack_map(pk, 1);
	mc_pack_kv_strn(pk, "key", key, klen);
	if (mc_rpcc_call(r, &m, &err) < 0)
		mc_tool_fail(&err, "show", key);
	if (sp.json) {
		/* who and what first, then the master's record as it is */
		printf("{\"tenant\":");
		mc_json_write_str(stdout, mc_tool_tenant(), strlen(mc_tool_tenant()));
		printf(",\"key\":");
		mc_json_write_str(stdout, key, klen);
		json_fields(m.body);
		printf("}\n");
		mc_msg_release(&m);
		return MC_EXIT_OK;
	}
	if (mc_map_str(m.body, "state", &state, &slen, NULL) != 1) {
		state = "-";
		slen = 1;
	}
	mc_map_u64(m.body, "deadline", &deadline, NULL);
	mc_map_u64(m.body, "remaining_ms", &remaining, NULL);
	printf("key: %s\n", key);
	printf("tenant: %s\n", mc_tool_tenant());
	printf("state: %.*s\n", (int)slen, state);
	if (deadline != 0) {
		printf("deadline: %s (%" PRIu64 ")\n", mc_fmt_time_ms(deadline, when, sizeof(when)),
		       deadline);
		printf("remaining: %s (%" PRIu64 " ms)\n",
		       sp_fmt_remaining(remaining, left, sizeof(left)), remaining);
	} else {
		printf("deadline: -\n");
		printf("remaining: -\n");
	}
	if (mc_map_str(m.body, "pending_action", &act, &alen, NULL) == 1) {
		printf("pending_action: %.*s\n", (int)alen, act);
		if (mc_map_u64(m.body, "pending_ttl_ms", &ttl, NULL) == 1)
			printf("pending_ttl: %s (%" PRIu64 " ms)\n",
			       sp_fmt_remaining(ttl, ttlbuf, sizeof(ttlbuf)), ttl);
	}
	mc_msg_release(&m);
	return MC_EXIT_OK;
}

/* ---- ls ---- */

/* One pin: "DEADLINE  REMAINING  TENANT  KEY", or its JSON object. */
static void
print_pin(const msgpack_object *item, uint64_t now)
{
	const char *t, *k;
	size_t tn, kn;
	uint64_t deadline = 0;
	char when[32], left[48];

	mc_map_u64(item, "deadline", &deadline, NULL);
	if (sp.json) {
		printf("{\"remaining_ms\":");
		mc_json_write_u64(stdout, remaining_at(deadline, now));
		json_fields(item);
		printf("}\n");
		return;
	}
	field_bytes(item, "tenant", &t, &tn);
	field_bytes(item, "key", &k, &kn);
	printf("%s  %-10s  ", mc_fmt_time_ms(deadline, when, sizeof(when)),
	       sp_fmt_remaining(remaining_at(deadline, now), left, sizeof(left)));
	put_bytes(t, tn);
	fputs("  ", stdout);
	put_bytes(k, kn);
	putchar('\n');
}

int
cmd_ls(int argc, char **argv)
{
	struct mc_rpcc *r = mc_tool_master();
	msgpack_packer *pk = mc_rpcc_begin(r, "softpin_list");
	const msgpack_object_array *items;
	struct mc_err err = { 0 };
	struct mc_msg m;
	bool more = false;
	uint64_t now;
	uint32_t i;

	(void)argc;
	(void)argv;
	msgpack_pack_map(pk, (sp.has_due_within ? 1 : 0) + (sp.limit != 0 ? 1 : 0));
	if (sp.has_due_within)
		mc_pack_kv_u64(pk, "due_within_ms", sp.due_within_ms);
	if (sp.limit != 0)
		mc_pack_kv_u64(pk, "limit", (uint64_t)sp.limit);
	if (mc_rpcc_call(r, &m, &err) < 0)
		mc_tool_fail(&err, "list soft pins", NULL);
	/* remaining from the same clock the master decides with */
	now = mc_now_ms();
	items = mc_map_array(m.body, "items");
	for (i = 0; items != NULL && i < items->size; i++)
		print_pin(&items->ptr[i], now);
	mc_map_bool(m.body, "more", &more, NULL);
	if (more)
		mc_complain("more pins than listed; raise --limit (now %d)",
			    sp.limit != 0 ? sp.limit : 1000);
	mc_msg_release(&m);
	return MC_EXIT_OK;
}

/* ---- stats ---- */

static void
print_count(const msgpack_object *body, const char *name, const char *label)
{
	uint64_t v = 0;

	mc_map_u64(body, name, &v, NULL);
	printf("%s: %" PRIu64 "\n", label, v);
}

static void
print_ttl(const msgpack_object *body, const char *name, const char *label)
{
	uint64_t v = 0;
	char buf[48];

	mc_map_u64(body, name, &v, NULL);
	printf("%s: %s (%" PRIu64 " ms)\n", label, sp_fmt_remaining(v, buf, sizeof(buf)), v);
}

int
cmd_stats(int argc, char **argv)
{
	struct mc_err err = { 0 };
	struct mc_msg m;

	(void)argc;
	(void)argv;
	if (mc_rpcc_call0(mc_tool_master(), "softpin_stats", &m, &err) < 0)
		mc_tool_fail(&err, "get soft-pin stats", NULL);
	if (sp.json) {
		mc_json_write(stdout, m.body);
		putchar('\n');
		mc_msg_release(&m);
		return MC_EXIT_OK;
	}
	print_count(m.body, "active", "active");
	print_count(m.body, "heap", "heap");
	print_count(m.body, "live", "live");
	print_count(m.body, "rebuilds", "rebuilds");
	print_count(m.body, "cleanup_runs", "cleanup_runs");
	print_count(m.body, "expired", "expired");
	print_ttl(m.body, "default_ttl_ms", "default_ttl");
	print_ttl(m.body, "max_ttl_ms", "max_ttl");
	mc_msg_release(&m);
	return MC_EXIT_OK;
}

/* ---- expire ---- */

int
cmd_expire(int argc, char **argv)
{
	const msgpack_object_array *items;
	struct mc_err err = { 0 };
	struct mc_msg m;
	uint64_t n = 0;
	uint32_t i;

	(void)argc;
	(void)argv;
	if (mc_rpcc_call0(mc_tool_master(), "softpin_expire", &m, &err) < 0)
		mc_tool_fail(&err, "run a soft-pin cleanup", NULL);
	if (sp.json) {
		mc_json_write(stdout, m.body);
		putchar('\n');
		mc_msg_release(&m);
		return MC_EXIT_OK;
	}
	mc_map_u64(m.body, "expired", &n, NULL);
	printf("expired: %" PRIu64 "\n", n);
	items = mc_map_array(m.body, "items");
	for (i = 0; items != NULL && i < items->size; i++) {
		const char *t, *k;
		size_t tn, kn;
		uint64_t deadline = 0;
		char when[32];

		field_bytes(&items->ptr[i], "tenant", &t, &tn);
		field_bytes(&items->ptr[i], "key", &k, &kn);
		mc_map_u64(&items->ptr[i], "deadline", &deadline, NULL);
		printf("%s  ", mc_fmt_time_ms(deadline, when, sizeof(when)));
		put_bytes(t, tn);
		fputs("  ", stdout);
		put_bytes(k, kn);
		putchar('\n');
	}
	mc_msg_release(&m);
	return MC_EXIT_OK;
}
