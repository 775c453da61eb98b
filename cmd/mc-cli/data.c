/*
 * The data commands: put, get, rm, exist.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "mc/io.h"
#include "mc/json.h"
#include "mc/log.h"
#include "mc/parse.h"
#include "mc/proto.h"
#include "mc/rpcc.h"
#include "mc/tier.h"
#include "mc/wire.h"

static struct {
	uint64_t replicas;
	const char *type;
	const char *group;
	const char *parent;
	bool chain;
	bool hard_pin;
	bool upsert;
	int soft_pin;
	bool has_soft_pin_ttl;
	uint64_t soft_pin_ttl_ms;
	const char *tier;
} put_o;

static struct {
	const char *output;
} get_o;

static struct {
	const char *prefix;
	bool force;
} rm_o;

static int
set_replicas(const char *v, void *target, char *why)
{
	struct mc_err err = { 0 };
	uint64_t n;

	if (mc_parse_u64(v, &n, &err) < 0) {
		snprintf(why, 200, "%.199s", err.msg);
		return -1;
	}
	if (n < 1 || n > MC_REPLICAS_MAX) {
		snprintf(why, 200, "must be 1 to %d", MC_REPLICAS_MAX);
		return -1;
	}
	*(uint64_t *)target = n;
	return 0;
}

/* --tier NAME: a tier mc knows, checked before anything is sent */
static int
set_tier(const char *v, void *target, char *why)
{
	struct mc_err err = { 0 };

	if (mc_tier_parse(v, strlen(v), &err) < 0) {
		snprintf(why, 200, "%.199s", err.msg);
		return -1;
	}
	*(const char **)target = v;
	return 0;
}

/* --soft-pin preserve|enable[:TTL]|disable */
static int
set_soft_pin(const char *v, void *target, char *why)
{
	struct mc_err err = { 0 };
	uint64_t ttl;

	(void)target;
	if (strcmp(v, "preserve") == 0 || strcmp(v, "disable") == 0) {
		put_o.soft_pin = v[0] == 'p' ? MC_SOFT_PIN_PRESERVE : MC_SOFT_PIN_DISABLE;
		put_o.has_soft_pin_ttl = false;
		return 0;
	}
	if (strcmp(v, "enable") == 0) {
		put_o.soft_pin = MC_SOFT_PIN_ENABLE;
		put_o.has_soft_pin_ttl = false;
		return 0;
	}
	if (strncmp(v, "enable:", 7) == 0) {
		if (mc_parse_duration_ms(v + 7, &ttl, &err) < 0) {
			snprintf(why, 200, "bad ttl: %.180s", err.msg);
			return -1;
		}
		put_o.soft_pin = MC_SOFT_PIN_ENABLE;
		put_o.has_soft_pin_ttl = true;
		put_o.soft_pin_ttl_ms = ttl;
		return 0;
	}
	snprintf(why, 200, "must be preserve, enable, enable:TTL or disable");
	return -1;
}

const struct mc_opt cli_put_opts[] = {
	{ "replicas", 0, "N", NULL, "copies on distinct peers (default 1)", set_replicas,
	  &put_o.replicas },
	{ "type", 0, MC_ARG_ONE_OF("STR", "kv|hidden|tensor|general"), NULL,
	  "data type: kv, hidden, tensor, general (default)", mc_set_str, &put_o.type },
	{ "group", 0, "STR", NULL, "group whose members share read leases", mc_set_str,
	  &put_o.group },
	{ "parent", 0, "KEY", NULL, "the block before this one in its chain (a prompt prefix)",
	  mc_set_str, &put_o.parent },
	{ "chain", 0, NULL, NULL, "the parent by the key convention: NAME#N follows NAME#N-1",
	  mc_set_flag, &put_o.chain },
	{ "hard-pin", 0, NULL, NULL, "never evict this object", mc_set_flag, &put_o.hard_pin },
	{ "upsert", 0, NULL, NULL, "replace an existing key with a new version", mc_set_flag,
	  &put_o.upsert },
	{ "soft-pin", 0, MC_ARG_ONE_OF("ACTION", "preserve|enable|disable"), NULL,
	  "soft pin write action: preserve (default), enable[:TTL] or disable", set_soft_pin,
	  NULL },
	{ "tier", 0, MC_ARG_ONE_OF("TIER", MC_TIER_NAMES), NULL,
	  "put the copies on this tier: dram or ssd (hbm, cxl: peers that register them; "
	  "default: the fastest that fits)",
	  set_tier, &put_o.tier },
	{ 0 },
};

const struct mc_opt cli_get_opts[] = {
	{ "output", 'o', "FILE", NULL, "write to FILE (atomically) instead of stdout", mc_set_str,
	  &get_o.output },
	{ 0 },
};

const struct mc_opt cli_rm_opts[] = {
	{ "prefix", 0, "STR", NULL, "remove every key that starts with STR", mc_set_str,
	  &rm_o.prefix },
	{ "force", 0, NULL, NULL, "remove even while a read lease is held", mc_set_flag,
	  &rm_o.force },
	{ 0 },
};

/* Read all of fd into a malloc'd buffer; -1 with errno set. */
static int
read_all(int fd, char **out, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	struct stat st;
	char *buf, *p;

	/* a regular file tells its size: read it in one buffer, no regrowth */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (size_t)st.st_size + 1;
	if (!(buf = malloc(cap)))
		return -1;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			if (cap > SIZE_MAX / 2 || !(p = realloc(buf, cap * 2))) {
				free(buf);
				errno = ENOMEM;
				return -1;
			}
			buf = p;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

static void
put_print_json(const char *key)
{
	struct mc_object_info *info;
	struct mc_err err = { 0 };
	size_t i;

	/* the put API does not hand back the version: ask for it */
	if (!(info = mc_stat(mc_tool_client(), key, strlen(key), &err)))
		mc_tool_fail(&err, "stat", key);
	printf("{\"key\":");
	mc_json_write_str(stdout, key, strlen(key));
	printf(",\"version\":");
	mc_json_write_u64(stdout, info->version);
	printf(",\"replicas\":[");
	for (i = 0; i < info->nreplicas; i++) {
		printf("%s{\"peer_id\":%" PRIu32 ",\"addr\":", i ? "," : "",
		       info->replicas[i].peer_id);
		mc_json_write_str(stdout, info->replicas[i].addr, strlen(info->replicas[i].addr));
		printf(",\"tier\":");
		mc_json_write_str(stdout, info->replicas[i].tier, strlen(info->replicas[i].tier));
		printf("}");
	}
	printf("]}\n");
	mc_object_info_free(info);
}

/*
 * After a put of size bytes: one line on stderr when the object takes
 * more than half of every tier it could be stored on (tier, or any when
 * NULL) on the live peers, whose capacities the master's peers call
 * gives. Quiet when the call is refused (peers is an admin call).
 */
static void
warn_if_large(const char *key, uint64_t size, const char *tier)
{
	const msgpack_object_array *peers;
	struct mc_rpcc *r = mc_tool_master();
	struct mc_err err = { 0 };
	uint64_t largest = 0;
	char sz[32], cap[32];
	struct mc_msg m;

	if (size == 0 || r == NULL || mc_rpcc_call0(r, "peers", &m, &err) < 0)
		return;
	peers = mc_map_array(m.body, "peers");
	for (uint32_t i = 0; peers && i < peers->size; i++) {
		const msgpack_object_array *tiers = mc_map_array(&peers->ptr[i], "tiers");
		bool alive = false;

		mc_map_bool(&peers->ptr[i], "alive", &alive, NULL);
		for (uint32_t t = 0; alive && tiers && t < tiers->size; t++) {
			uint64_t c = 0;

			if (tier != NULL && !mc_obj_streq(mc_map_get(&tiers->ptr[t], "tier"), tier))
				continue;
			if (mc_map_u64(&tiers->ptr[t], "capacity", &c, NULL) == 1 && c > largest)
				largest = c;
		}
	}
	mc_msg_release(&m);
	if (largest == 0 || size <= largest / 2)
		return;
	mc_complain("warning: '%s' (%s) takes more than half of every tier it could be stored on "
		    "(the largest holds %s): eviction may take it to make room for the next "
		    "writes; keep objects under half a tier, or give the peers more room",
		    key, mc_fmt_size(size, sz, sizeof(sz)), mc_fmt_size(largest, cap, sizeof(cap)));
}

/*
 * Say on stderr what the client got past on the way: peers given up
 * after the stall timeout, grants the master renewed. The call's result
 * does not show them, and a peer that hangs is worth knowing of.
 */
static void
warn_failovers(const char *verb, const char *key)
{
	struct mc_client_stats st = MC_CLIENT_STATS_INIT;

	mc_client_stats(mc_tool_client(), &st);
	if (st.stalls == 0 && st.grant_renewals == 0)
		return;
	mc_complain("warning: %s '%s': %llu stalled peer connection(s) given up, %llu grant(s) "
		    "renewed",
		    verb, key, (unsigned long long)st.stalls,
		    (unsigned long long)st.grant_renewals);
}

int
cli_put(int argc, char **argv)
{
	const char *key = argv[0];
	const char *path = argc > 1 ? argv[1] : "-";
	struct mc_put_opts o = MC_PUT_OPTS_INIT;
	char parent[MC_KEY_MAX + 1];
	struct mc_err err = { 0 };
	struct cli_progress pg;
	size_t len;
	char *buf;
	int fd = 0, rc;

	if (strcmp(path, "-") != 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		mc_die(MC_EXIT_FAIL, "cannot read '%s': %s", path, mc_strerror(errno));
	if (read_all(fd, &buf, &len) < 0)
		mc_die(MC_EXIT_FAIL, "cannot read '%s': %s", fd ? path : "stdin",
		       mc_strerror(errno));
	if (fd)
		close(fd);
	o.replicas = (unsigned)put_o.replicas;
	o.type = put_o.type;
	o.group = put_o.group;
	if (put_o.parent != NULL)
		o.parent = (struct mc_key){ put_o.parent, strlen(put_o.parent) };
	if (put_o.chain && put_o.parent != NULL)
		mc_die(MC_EXIT_USAGE, "--chain and --parent: give one");
	if (put_o.chain &&
	    mc_key_chain_parent(key, strlen(key), parent, sizeof(parent), &o.parent.len) > 0)
		o.parent.data = parent;
	o.hard_pin = put_o.hard_pin;
	o.upsert = put_o.upsert;
	o.soft_pin = put_o.soft_pin;
	o.has_soft_pin_ttl = put_o.has_soft_pin_ttl;
	o.soft_pin_ttl_ms = put_o.soft_pin_ttl_ms;
	o.tier = put_o.tier;
	cli_progress_begin(&pg, "put", key, len);
	rc = mc_put(mc_tool_client(), key, strlen(key), buf, len, &o, &err);
	cli_progress_end(&pg);
	warn_failovers("put", key);
	if (rc < 0)
		mc_tool_fail(&err, "put", key);
	free(buf);
	warn_if_large(key, len, put_o.tier);
	if (cli.json)
		put_print_json(key);
	return MC_EXIT_OK;
}

/*
 * Get key into path via a temporary file, so readers never see half: the
 * bytes go from the socket to the file a chunk at a time, never all in
 * memory.
 */
static void
get_to_file(const char *key, const char *path)
{
	size_t n = strlen(path), len;
	char *tmp = malloc(n + 16);
	struct mc_err err = { 0 };
	struct cli_progress pg;
	mode_t mask;
	int fd, rc;

	if (!tmp)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		mc_die(MC_EXIT_FAIL, "cannot write '%s': %s", path, mc_strerror(errno));
	cli_progress_begin(&pg, "get", key, 0);
	rc = mc_get_fd(mc_tool_client(), key, strlen(key), fd, &len, &err);
	cli_progress_end(&pg);
	warn_failovers("get", key);
	if (rc < 0) {
		close(fd);
		unlink(tmp);
		mc_tool_fail(&err, "get", key);
	}
	/* mkstemp makes 0600; give the file the mode a plain create would */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;

		unlink(tmp);
		mc_die(MC_EXIT_FAIL, "cannot write '%s': %s", path, mc_strerror(e));
	}
	free(tmp);
}

int
cli_get(int argc, char **argv)
{
	const char *key = argv[0];
	struct mc_err err = { 0 };
	struct cli_progress pg;
	void *buf;
	size_t len;
	int rc;

	(void)argc;
	if (get_o.output) {
		get_to_file(key, get_o.output);
		return MC_EXIT_OK;
	}
	cli_progress_begin(&pg, "get", key, 0);
	rc = mc_get_alloc(mc_tool_client(), key, strlen(key), &buf, &len, &err);
	cli_progress_end(&pg);
	warn_failovers("get", key);
	if (rc < 0)
		mc_tool_fail(&err, "get", key);
	if (mc_write_all(1, buf, len) < 0)
		mc_die(MC_EXIT_FAIL, "cannot write to stdout: %s", mc_strerror(errno));
	free(buf);
	return MC_EXIT_OK;
}

int
cli_rm(int argc, char **argv)
{
	struct mc_err err = { 0 };
	uint64_t removed = 0;

	if (rm_o.prefix && argc > 0) {
		mc_complain("rm: give a KEY or --prefix, not both");
		return MC_EXIT_USAGE;
	}
	if (!rm_o.prefix && argc == 0) {
		mc_complain("rm: missing KEY");
		fprintf(stderr, "usage: mc-cli rm KEY|--prefix P [--force]\n");
		return MC_EXIT_USAGE;
	}
	if (!rm_o.prefix) {
		if (mc_remove(mc_tool_client(), argv[0], strlen(argv[0]), rm_o.force, &err) < 0)
			mc_tool_fail(&err, "remove", argv[0]);
		return MC_EXIT_OK;
	}
	if (mc_remove_prefix(mc_tool_client(), rm_o.prefix, strlen(rm_o.prefix), rm_o.force,
			     &removed, &err) < 0)
		mc_tool_fail(&err, "remove prefix", rm_o.prefix);
	if (cli.json)
		printf("{\"removed\":%" PRIu64 "}\n", removed);
	else
		printf("removed %" PRIu64 "\n", removed);
	return MC_EXIT_OK;
}

int
cli_exist(int argc, char **argv)
{
	struct mc_err err = { 0 };
	int r;

	(void)argc;
	r = mc_exist(mc_tool_client(), argv[0], strlen(argv[0]), &err);
	if (r < 0)
		mc_tool_fail(&err, "look up", argv[0]);
	return r ? MC_EXIT_OK : MC_EXIT_FAIL;
}
