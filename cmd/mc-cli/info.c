/*
 * The commands that show things: ls, stat, peers; and corrupt, the fault
 * injection hook for tests.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mc/json.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/rpcc.h"
#include "mc/tier.h"

static int
print_key(const void *key, size_t key_len, uint64_t size, uint64_t version, const char *type,
	  void *arg)
{
	(void)arg;
	if (!cli.json) {
		fwrite(key, 1, key_len, stdout);
		putchar('\n');
		return 0;
	}
	printf("{\"key\":");
	mc_json_write_str(stdout, key, key_len);
	printf(",\"size\":");
	mc_json_write_u64(stdout, size);
	printf(",\"version\":");
	mc_json_write_u64(stdout, version);
	printf(",\"type\":");
	mc_json_write_str(stdout, type, strlen(type));
	printf("}\n");
	return 0;
}

int
cli_ls(int argc, char **argv)
{
	const char *prefix = argc > 0 ? argv[0] : "";
	struct mc_err err = { 0 };

	if (mc_list(mc_tool_client(), prefix, strlen(prefix), print_key, NULL, &err) < 0)
		mc_tool_fail(&err, "list", prefix);
	return MC_EXIT_OK;
}

/* ---- stat ---- */

/* A time for people: ISO 8601 UTC, or "-" for none. */
static const char *
when(uint64_t ms, char *buf, size_t cap)
{
	if (ms == 0)
		return "-";
	return mc_fmt_time_ms(ms, buf, cap);
}

static void
stat_text(const struct mc_object_info *in)
{
	char sz[32], t[32];
	size_t i;

	printf("key: ");
	fwrite(in->key.data, 1, in->key.len, stdout);
	printf("\n");
	printf("tenant: %s\n", mc_tool_tenant());
	printf("size: %" PRIu64 " (%s)\n", in->size, mc_fmt_size(in->size, sz, sizeof(sz)));
	printf("version: %" PRIu64 "\n", in->version);
	printf("checksum: %016" PRIx64 "\n", in->checksum);
	printf("type: %s\n", in->type);
	printf("group: %s\n", in->group[0] ? in->group : "-");
	printf("hard_pin: %s\n", in->hard_pin ? "yes" : "no");
	printf("created: %s\n", when(in->created, t, sizeof(t)));
	printf("last_access: %s\n", when(in->last_access, t, sizeof(t)));
	printf("access_count: %" PRIu64 "\n", in->access_count);
	printf("lease_deadline: %s\n", when(in->lease_deadline, t, sizeof(t)));
	printf("replicas: %zu\n", in->nreplicas);
	for (i = 0; i < in->nreplicas; i++)
		printf("  peer %" PRIu32 " %s %s %s\n", in->replicas[i].peer_id,
		       in->replicas[i].addr, in->replicas[i].tier,
		       in->replicas[i].complete ? "complete" : "processing");
}

/*
 * A field's unit, by the convention the master's records follow:
 * "bytes" and NAME_bytes are sizes, NAME_ms durations. *label_len gets
 * the length of the name without its unit, which the value then shows.
 */
enum field_unit { UNIT_NONE, UNIT_BYTES, UNIT_MS };

static bool
has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n > k && memcmp(s + n - k, suffix, k) == 0;
}

static enum field_unit
field_unit(const msgpack_object *key, int *label_len)
{
	const char *k = key->via.str.ptr;
	size_t n = key->via.str.size;

	*label_len = (int)n;
	if (n == 5 && memcmp(k, "bytes", 5) == 0)
		return UNIT_BYTES;
	if (has_suffix(k, n, "_bytes")) {
		*label_len = (int)(n - 6);
		return UNIT_BYTES;
	}
	if (has_suffix(k, n, "_ms")) {
		*label_len = (int)(n - 3);
		return UNIT_MS;
	}
	return UNIT_NONE;
}

static void
print_scalar(const msgpack_object *o, enum field_unit unit)
{
	char buf[48];

	switch (o->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		if (unit == UNIT_BYTES)
			fputs(mc_fmt_size(o->via.u64, buf, sizeof(buf)), stdout);
		else if (unit == UNIT_MS)
			fputs(mc_fmt_duration_ms(o->via.u64, buf, sizeof(buf)), stdout);
		else
			printf("%" PRIu64, o->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		printf("%" PRId64, o->via.i64);
		break;
	case MSGPACK_OBJECT_BOOLEAN:
		printf("%s", o->via.boolean ? "yes" : "no");
		break;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		printf("%g", o->via.f64);
		break;
	case MSGPACK_OBJECT_STR:
		printf("%.*s", (int)o->via.str.size, o->via.str.ptr);
		break;
	case MSGPACK_OBJECT_NIL:
		printf("-");
		break;
	default:
		mc_json_write(stdout, o);
		break;
	}
}

/*
 * "key: value" lines; nested maps indent, an array of maps prints one
 * "- k=v k=v" line per element. Sizes and durations read as people
 * write them (field_unit). Fields the master adds later show up without
 * a change here.
 */
static void
print_text(const msgpack_object *map, int indent)
{
	uint32_t i, j, k;

	if (!map || map->type != MSGPACK_OBJECT_MAP)
		return;
	for (i = 0; i < map->via.map.size; i++) {
		const msgpack_object *key = &map->via.map.ptr[i].key;
		const msgpack_object *v = &map->via.map.ptr[i].val;
		enum field_unit unit;
		int label;

		if (key->type != MSGPACK_OBJECT_STR)
			continue;
		unit = field_unit(key, &label);
		printf("%*s%.*s:", indent, "", label, key->via.str.ptr);
		if (v->type == MSGPACK_OBJECT_MAP) {
			printf("\n");
			print_text(v, indent + 2);
			continue;
		}
		if (v->type != MSGPACK_OBJECT_ARRAY) {
			printf(" ");
			print_scalar(v, unit);
			printf("\n");
			continue;
		}
		printf("\n");
		for (j = 0; j < v->via.array.size; j++) {
			const msgpack_object *e = &v->via.array.ptr[j];

			printf("%*s-", indent + 2, "");
			if (e->type != MSGPACK_OBJECT_MAP) {
				printf(" ");
				print_scalar(e, unit);
			}
			for (k = 0; e->type == MSGPACK_OBJECT_MAP && k < e->via.map.size; k++) {
				const msgpack_object *ek = &e->via.map.ptr[k].key;
				enum field_unit eu;
				int elabel;

				if (ek->type != MSGPACK_OBJECT_STR)
					continue;
				eu = field_unit(ek, &elabel);
				printf(" %.*s=", elabel, ek->via.str.ptr);
				print_scalar(&e->via.map.ptr[k].val, eu);
			}
			printf("\n");
		}
	}
}

/* An admin call on the master connection; exits on failure. */
static void
admin_call(const char *method, struct mc_msg *m)
{
	struct mc_rpcc *r = mc_tool_master();
	struct mc_err err = { 0 };
	char doing[64];

	if (!r)
		mc_die(MC_EXIT_UNAVAILABLE, "cannot reach the master");
	if (mc_rpcc_call0(r, method, m, &err) < 0) {
		snprintf(doing, sizeof(doing), "get %s", method);
		mc_tool_fail(&err, doing, NULL);
	}
}

/*
 * --json prints the master's own record (tenant, soft-pin state, replica
 * ids...), which carries more than struct mc_object_info, and new fields
 * appear without a change here.
 */
static void
stat_json(const char *key)
{
	struct mc_rpcc *r = mc_tool_master();
	struct mc_err err = { 0 };
	msgpack_packer *pk;
	struct mc_msg m;

	if (!r)
		mc_die(MC_EXIT_UNAVAILABLE, "cannot reach the master");
	pk = mc_rpcc_begin(r, "stat");
	msgpack_pack_map(pk, 1);
	mc_pack_kv_str(pk, "key", key);
	if (mc_rpcc_call(r, &m, &err) < 0)
		mc_tool_fail(&err, "stat", key);
	mc_json_write(stdout, m.body);
	printf("\n");
	mc_msg_release(&m);
}

int
cli_stat(int argc, char **argv)
{
	struct mc_object_info *info;
	struct mc_err err = { 0 };
	struct mc_msg m;

	if (argc == 0) {
		admin_call("stats", &m);
		if (cli.json) {
			mc_json_write(stdout, m.body);
			printf("\n");
		} else {
			print_text(m.body, 0);
		}
		mc_msg_release(&m);
		return MC_EXIT_OK;
	}
	if (cli.json) {
		stat_json(argv[0]);
		return MC_EXIT_OK;
	}
	if (!(info = mc_stat(mc_tool_client(), argv[0], strlen(argv[0]), &err)))
		mc_tool_fail(&err, "stat", argv[0]);
	stat_text(info);
	mc_object_info_free(info);
	return MC_EXIT_OK;
}

/* ---- peers ---- */

static int
str_width(const msgpack_object *peer, const char *field)
{
	const char *s;
	size_t n;

	if (mc_map_str(peer, field, &s, &n, NULL) != 1)
		return 1;
	return n > 200 ? 200 : (int)n;
}

static void
print_str_col(const msgpack_object *peer, const char *field, int width)
{
	const char *s = "-";
	size_t n = 1;

	if (mc_map_str(peer, field, &s, &n, NULL) != 1 || n == 0) {
		s = "-";
		n = 1;
	}
	if (n > 200)
		n = 200;
	printf("%.*s%*s  ", (int)n, s, width - (int)n, "");
}

/*
 * A peer's tier as a cell, "USED/CAPACITY (peer: REPORTED)", into buf;
 * "-" when the peer has no such tier. Its length.
 */
static int
fmt_tier(const msgpack_object *peer, int tier, char *buf, size_t cap)
{
	const msgpack_object_array *tiers = mc_map_array(peer, "tiers");
	char used[32], size[32], rep[32];
	uint64_t u = 0, c = 0, r = 0;
	uint32_t i;

	for (i = 0; tiers && i < tiers->size; i++) {
		if (!mc_obj_streq(mc_map_get(&tiers->ptr[i], "tier"), mc_tier_name(tier)))
			continue;
		mc_map_u64(&tiers->ptr[i], "used", &u, NULL);
		mc_map_u64(&tiers->ptr[i], "capacity", &c, NULL);
		/* the master's account first; the peer's own figure lags by a heartbeat */
		if (mc_map_u64(&tiers->ptr[i], "reported", &r, NULL) == 1)
			return snprintf(buf, cap, "%s/%s (peer: %s)",
					mc_fmt_size(u, used, sizeof(used)),
					mc_fmt_size(c, size, sizeof(size)),
					mc_fmt_size(r, rep, sizeof(rep)));
		return snprintf(buf, cap, "%s/%s", mc_fmt_size(u, used, sizeof(used)),
				mc_fmt_size(c, size, sizeof(size)));
	}
	return snprintf(buf, cap, "-");
}

/*
 * A peer's liveness cell: "no" past the master's --peer-ttl, "silent
 * 3.2s" once it has missed a heartbeat (silent for two periods; the
 * master still counts it alive), else "yes". Its length.
 */
static int
fmt_alive(const msgpack_object *peer, char *buf, size_t cap)
{
	uint64_t silent = 0, period = 0;
	bool alive = false;
	char d[32];

	mc_map_bool(peer, "alive", &alive, NULL);
	mc_map_u64(peer, "silent_ms", &silent, NULL);
	mc_map_u64(peer, "heartbeat_ms", &period, NULL);
	if (!alive)
		return snprintf(buf, cap, "no");
	if (period > 0 && silent >= 2 * period)
		return snprintf(buf, cap, "silent %s", mc_fmt_duration_ms(silent, d, sizeof(d)));
	return snprintf(buf, cap, "yes");
}

/* The tiers a listing shows a column for: dram always, any other some peer has. */
static bool
tier_shown(const msgpack_object_array *peers, int tier)
{
	char cell[128];

	if (tier == MC_TIER_DRAM)
		return true;
	for (uint32_t i = 0; peers && i < peers->size; i++) {
		fmt_tier(&peers->ptr[i], tier, cell, sizeof(cell));
		if (strcmp(cell, "-") != 0)
			return true;
	}
	return false;
}

int
cli_peers(int argc, char **argv)
{
	const msgpack_object_array *peers;
	int wa = 4, wh = 4, wd = 6, wl = 5, wt[MC_TIER_COUNT], last = MC_TIER_DRAM, t;
	bool shown[MC_TIER_COUNT];
	char cell[128];
	struct mc_msg m;
	uint32_t i;

	(void)argc;
	(void)argv;
	admin_call("peers", &m);
	peers = mc_map_array(m.body, "peers");
	/* a column per tier some peer has (dram always), fastest first */
	MC_TIER_FASTEST_FIRST(t)
	{
		shown[t] = tier_shown(peers, t);
		wt[t] = (int)strlen(mc_tier_name(t));
		if (shown[t])
			last = t;
	}
	for (i = 0; peers && i < peers->size; i++) {
		const msgpack_object *p = &peers->ptr[i];
		int w;

		if (cli.json) {
			mc_json_write(stdout, p);
			printf("\n");
			continue;
		}
		if ((w = str_width(p, "addr")) > wa)
			wa = w;
		if ((w = str_width(p, "host")) > wh)
			wh = w;
		if ((w = str_width(p, "domain")) > wd)
			wd = w;
		if ((w = fmt_alive(p, cell, sizeof(cell))) > wl)
			wl = w;
		for (int t = 0; t < MC_TIER_COUNT; t++)
			if (shown[t] && (w = fmt_tier(p, t, cell, sizeof(cell))) > wt[t])
				wt[t] = w;
	}
	if (!cli.json) {
		printf("%-4s  %-*s  %-*s  %-*s  %-*s", "ID", wa, "ADDR", wh, "HOST", wd, "DOMAIN",
		       wl, "ALIVE");
		MC_TIER_FASTEST_FIRST(t)
		{
			char name[16];
			size_t k;

			if (!shown[t])
				continue;
			snprintf(name, sizeof(name), "%s", mc_tier_name(t));
			for (k = 0; name[k] != '\0'; k++)
				name[k] = (char)toupper((unsigned char)name[k]);
			/* the last column unpadded: no trailing blanks */
			printf("  %-*s", t == last ? 0 : wt[t], name);
		}
		printf("\n");
		for (i = 0; peers && i < peers->size; i++) {
			const msgpack_object *p = &peers->ptr[i];
			uint64_t id = 0;

			mc_map_u64(p, "peer_id", &id, NULL);
			printf("%-4" PRIu64 "  ", id);
			print_str_col(p, "addr", wa);
			print_str_col(p, "host", wh);
			print_str_col(p, "domain", wd);
			fmt_alive(p, cell, sizeof(cell));
			printf("%-*s", wl, cell);
			MC_TIER_FASTEST_FIRST(t)
			{
				if (!shown[t])
					continue;
				fmt_tier(p, t, cell, sizeof(cell));
				printf("  %-*s", t == last ? 0 : wt[t], cell);
			}
			printf("\n");
		}
	}
	mc_msg_release(&m);
	return MC_EXIT_OK;
}

/* ---- corrupt ---- */

int
cli_corrupt(int argc, char **argv)
{
	struct mc_client_opts o;
	struct mc_err err = { 0 };
	uint64_t offset = 0;
	msgpack_packer *pk;
	struct mc_rpcc *r;
	struct mc_msg m;
	int code;

	if (argc > 2 && mc_parse_u64(argv[2], &offset, &err) < 0) {
		mc_complain("corrupt: invalid OFFSET '%s': %s", argv[2], err.msg);
		return MC_EXIT_USAGE;
	}
	mc_tool_client_opts(&o);
	r = mc_rpcc_connect(argv[0], o.timeout_ms, &err);
	if (!r)
		mc_die(mc_status_exit_code(err.code), "%s", err.msg);
	pk = mc_rpcc_begin(r, "corrupt");
	msgpack_pack_map(pk, 3);
	mc_pack_kv_str(pk, "tenant", mc_tool_tenant());
	mc_pack_kv_str(pk, "key", argv[1]);
	mc_pack_kv_u64(pk, "offset", offset);
	if (mc_rpcc_call(r, &m, &err) < 0) {
		mc_rpcc_close(r);
		code = mc_status_exit_code(err.code);
		if (err.code == MC_ERR_NOT_FOUND)
			mc_die(code, "cannot corrupt '%s' on %s: not found", argv[1], argv[0]);
		if (err.code == MC_ERR_DENIED)
			mc_die(code, "cannot corrupt '%s' on %s: denied (%s)", argv[1], argv[0],
			       err.msg);
		mc_die(code ? code : MC_EXIT_SOFTWARE, "cannot corrupt '%s' on %s: %s", argv[1],
		       argv[0], err.msg);
	}
	mc_msg_release(&m);
	mc_rpcc_close(r);
	return MC_EXIT_OK;
}
