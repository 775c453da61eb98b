/*
 * mc-fill: writes and checks many objects through the public client API
 * (mc/client.h) in batches, for suites that need thousands of objects
 * (10k mc-cli invocations would take minutes).
 *
 *   mc-fill [OPTIONS] put      store --count objects under --prefix
 *   mc-fill [OPTIONS] check    read them back and compare byte-exact
 *   mc-fill [OPTIONS] absent   succeed only if none of them exists
 *   mc-fill [OPTIONS] verify   read them back: each one is byte-exact or
 *                              cleanly missing (for soaks, where faults
 *                              and kills lose objects but must never
 *                              corrupt one); fails only on wrong bytes
 *   mc-fill [OPTIONS] hotset   a steady put stream past a tier's
 *                              watermark: keys [0, --hot) first, then the
 *                              rest one put at a time, re-reading the
 *                              hot keys after every --every puts; then
 *                              where the hot keys live, and verify
 *   mc-fill [OPTIONS] softpin IN OUT
 *                              copy snapshot IN to OUT, giving every
 *                              object under --prefix an active soft pin
 *                              with --deadline (soft pins have no write
 *                              path yet; a crafted snapshot is the way in)
 *
 * Key i is PREFIX followed by i in six digits. Its size and bytes derive
 * from the key alone, so check needs nothing but the same options that
 * put had. Exit 0 all good, 1 some object wrong, 65 bad snapshot,
 * 69 cluster unreachable.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mc/checksum.h"
#include "mc/client.h"
#include "mc/err.h"
#include "mc/log.h"
#include "mc/opt.h"
#include "mc/proto.h"
#include "mc/snapshot.h"

/* a key of MC_KEY_MAX bytes and its NUL: the longest a master takes */
#define KEY_CAP (MC_KEY_MAX + 1)
/* the digits key_name appends to --prefix */
#define KEY_DIGITS 6
#define SHOW_BAD 5

static struct {
	const char *master, *tenant, *prefix, *type, *group;
	uint64_t count, start, min_size, max_size, replicas, batch;
	uint64_t deadline, ttl;
	uint64_t hot, every;
	const char *tier;
	bool hard_pin;
} fo = {
	.prefix = "fill/",
	.count = 1000,
	.max_size = 4096,
	.replicas = 1,
	.batch = 256,
	.ttl = 60000,
	.hot = 16,
	.every = 64,
	.tier = "dram",
};

static const struct mc_opt opts[] = {
	{ "master", 'm', "ADDR", "MC_MASTER", "master address", mc_set_str, &fo.master },
	{ "tenant", 't', "STR", "MC_TENANT", "tenant to speak for", mc_set_str, &fo.tenant },
	{ "prefix", 0, "STR", NULL, "key prefix (default \"fill/\")", mc_set_str, &fo.prefix },
	{ "count", 'n', "N", NULL, "objects (default 1000)", mc_set_u64, &fo.count },
	{ "start", 0, "N", NULL, "index of the first key (default 0)", mc_set_u64, &fo.start },
	{ "min-size", 0, "SIZE", NULL, "smallest object (default 0)", mc_set_size, &fo.min_size },
	{ "max-size", 0, "SIZE", NULL, "largest object (default 4096)", mc_set_size, &fo.max_size },
	{ "replicas", 0, "N", NULL, "copies of each object (put)", mc_set_u64, &fo.replicas },
	{ "type", 0, "STR", NULL, "data type (put)", mc_set_str, &fo.type },
	{ "group", 0, "STR", NULL, "group of every object (put)", mc_set_str, &fo.group },
	{ "hard-pin", 0, NULL, NULL, "hard-pin every object (put)", mc_set_flag, &fo.hard_pin },
	{ "batch", 0, "N", NULL, "keys per batch call (default 256)", mc_set_u64, &fo.batch },
	{ "deadline", 0, "N", NULL, "soft-pin deadline in ms since the epoch (softpin)", mc_set_u64,
	  &fo.deadline },
	{ "ttl", 0, "DURATION", NULL, "soft-pin ttl (softpin, default 60s)", mc_set_duration,
	  &fo.ttl },
	{ "hot", 0, "N", NULL, "keys re-read throughout (hotset, default 16)", mc_set_u64,
	  &fo.hot },
	{ "every", 0, "N", NULL, "puts between re-reads of the hot keys (hotset, default 64)",
	  mc_set_u64, &fo.every },
	{ "hot-tier", 0, "TIER", NULL, "where the hot keys must stay (hotset, default dram)",
	  mc_set_str, &fo.tier },
	{ 0 },
};

static const struct mc_cmd cmds[] = {
	{ "put", "store --count objects under --prefix" },
	{ "check", "read them back and compare byte-exact" },
	{ "absent", "succeed only if none of them exists" },
	{ "verify", "each one byte-exact or cleanly missing; only wrong bytes fail" },
	{ "hotset", "a put stream re-reading a hot set; where it lives; then verify" },
	{ "softpin", "IN OUT: copy a snapshot, soft-pinning the objects under --prefix" },
	{ 0 },
};

static const struct mc_opt_spec spec = {
	.usage = "mc-fill [OPTIONS] put|check|absent|verify|hotset|softpin IN OUT",
	.summary = "write and check many objects of deterministic content",
	.opts = opts,
	.cmds = cmds,
	.version = "mc-fill " MC_VERSION,
};

/* ---- deterministic objects ---- */

static uint64_t
splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void
key_name(char *buf, uint64_t i)
{
	snprintf(buf, KEY_CAP, "%s%06" PRIu64, fo.prefix, i);
}

static size_t
key_size(const char *key)
{
	uint64_t span = fo.max_size - fo.min_size + 1;

	return (size_t)(fo.min_size + mc_hash64(key, strlen(key), 1) % span);
}

static void
key_bytes(const char *key, unsigned char *buf, size_t n)
{
	uint64_t s = mc_hash64(key, strlen(key), 2), v = 0;

	for (size_t j = 0; j < n; j++) {
		if (j % 8 == 0)
			v = splitmix(&s);
		buf[j] = (unsigned char)(v >> (8 * (j % 8)));
	}
}

/* ---- batches ---- */

struct batch {
	size_t n;
	char (*keys)[KEY_CAP];
	struct mc_key *keyp;
	unsigned char **bufs;
	size_t *lens, *caps;
	int *results, *present;
};

static void
batch_free(struct batch *b)
{
	for (size_t i = 0; b->bufs && i < b->n; i++)
		free(b->bufs[i]);
	free(b->keys);
	free(b->keyp);
	free(b->bufs);
	free(b->lens);
	free(b->caps);
	free(b->results);
	free(b->present);
}

static int
batch_init(struct batch *b, size_t n)
{
	memset(b, 0, sizeof(*b));
	b->n = n;
	b->keys = calloc(n, sizeof(*b->keys));
	b->keyp = calloc(n, sizeof(*b->keyp));
	b->bufs = calloc(n, sizeof(*b->bufs));
	b->lens = calloc(n, sizeof(*b->lens));
	b->caps = calloc(n, sizeof(*b->caps));
	b->results = calloc(n, sizeof(*b->results));
	b->present = calloc(n, sizeof(*b->present));
	if (!b->keys || !b->keyp || !b->bufs || !b->lens || !b->caps || !b->results || !b->present)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		/* +1: malloc(0) may return NULL */
		b->bufs[i] = malloc(fo.max_size + 1);
		if (b->bufs[i] == NULL)
			goto fail;
		b->keyp[i].data = b->keys[i];
		b->caps[i] = fo.max_size + 1;
	}
	return 0;
fail:
	batch_free(b);
	return -1;
}

/* Name keys first..first+n of the batch; with content, fill the buffers. */
static void
batch_keys(struct batch *b, uint64_t first, size_t n, bool content)
{
	for (size_t i = 0; i < n; i++) {
		key_name(b->keys[i], first + i);
		b->keyp[i].len = strlen(b->keys[i]);
		if (content) {
			b->lens[i] = key_size(b->keys[i]);
			key_bytes(b->keys[i], b->bufs[i], b->lens[i]);
		}
	}
}

static int
run_put(struct mc_client *c, struct batch *b)
{
	struct mc_put_opts po = MC_PUT_OPTS_INIT;
	struct mc_err err = { 0 };
	uint64_t bad = 0;

	po.replicas = (unsigned)fo.replicas;
	po.type = fo.type;
	po.group = fo.group;
	po.hard_pin = fo.hard_pin;
	for (uint64_t done = 0; done < fo.count; done += b->n) {
		size_t n = fo.count - done < b->n ? (size_t)(fo.count - done) : b->n;

		batch_keys(b, fo.start + done, n, true);
		if (mc_batch_put(c, n, b->keyp, (const void *const *)b->bufs, b->lens, &po,
				 b->results, &err) < 0)
			mc_die(mc_status_exit_code(err.code), "batch put failed: %s", err.msg);
		for (size_t i = 0; i < n; i++) {
			if (b->results[i] == MC_OK)
				continue;
			if (bad++ < SHOW_BAD)
				mc_complain("cannot put '%s': %s", b->keys[i],
					    mc_status_name(b->results[i]));
		}
	}
	printf("put %" PRIu64 " objects: %" PRIu64 " failed\n", fo.count, bad);
	return bad ? MC_EXIT_FAIL : MC_EXIT_OK;
}

/*
 * What a read of one key found: its status and, when it is MC_OK, why
 * its bytes are not the key's own (NULL: they are, byte-exact).
 */
typedef void (*read_fn)(void *arg, const char *key, int status, const char *wrong);

/* Read count keys from first in batches, telling fn of each. */
static void
read_keys(struct mc_client *c, struct batch *b, uint64_t first, uint64_t count, read_fn fn,
	  void *arg)
{
	unsigned char *want = malloc(fo.max_size + 1);
	struct mc_err err = { 0 };

	if (want == NULL)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	for (uint64_t done = 0; done < count; done += b->n) {
		size_t n = count - done < b->n ? (size_t)(count - done) : b->n;

		batch_keys(b, first + done, n, false);
		if (mc_batch_get(c, n, b->keyp, (void *const *)b->bufs, b->caps, b->lens,
				 b->results, &err) < 0)
			mc_die(mc_status_exit_code(err.code), "batch get failed: %s", err.msg);
		for (size_t i = 0; i < n; i++) {
			size_t len = key_size(b->keys[i]);
			const char *wrong = NULL;

			if (b->results[i] == MC_OK) {
				key_bytes(b->keys[i], want, len);
				if (b->lens[i] != len)
					wrong = "wrong size";
				else if (memcmp(b->bufs[i], want, len) != 0)
					wrong = "bytes differ";
			}
			fn(arg, b->keys[i], b->results[i], wrong);
		}
	}
	free(want);
}

struct check_counts {
	bool verify;
	uint64_t bad, ok, missing, failed;
};

static void
check_one(void *arg, const char *key, int status, const char *wrong)
{
	struct check_counts *cc = arg;
	const char *why = status != MC_OK ? mc_status_name(status) : wrong;

	if (cc->verify && status == MC_ERR_NOT_FOUND) {
		cc->missing++;
		return;
	}
	if (cc->verify && status != MC_OK) {
		cc->failed++;
		return;
	}
	cc->ok += why == NULL;
	if (why != NULL && cc->bad++ < SHOW_BAD)
		mc_complain("%s: %s", key, why);
}

/*
 * check (every object there, byte-exact) or, with verify, every object
 * byte-exact or missing: not_found and failed reads are counted, not
 * failures, and only a wrong size or wrong bytes fail.
 */
static int
run_check(struct mc_client *c, struct batch *b, bool verify)
{
	struct check_counts cc = { .verify = verify };

	read_keys(c, b, fo.start, fo.count, check_one, &cc);
	if (verify)
		printf("verified %" PRIu64 " objects: %" PRIu64 " exact, %" PRIu64
		       " missing, %" PRIu64 " unreadable, %" PRIu64 " wrong\n",
		       fo.count, cc.ok, cc.missing, cc.failed, cc.bad);
	else
		printf("checked %" PRIu64 " objects: %" PRIu64 " bad\n", fo.count, cc.bad);
	return cc.bad ? MC_EXIT_FAIL : MC_EXIT_OK;
}

static int
run_absent(struct mc_client *c, struct batch *b)
{
	struct mc_err err = { 0 };
	uint64_t there = 0;

	for (uint64_t done = 0; done < fo.count; done += b->n) {
		size_t n = fo.count - done < b->n ? (size_t)(fo.count - done) : b->n;

		batch_keys(b, fo.start + done, n, false);
		if (mc_batch_exist(c, n, b->keyp, b->present, &err) < 0)
			mc_die(mc_status_exit_code(err.code), "batch exist failed: %s", err.msg);
		for (size_t i = 0; i < n; i++) {
			if (!b->present[i])
				continue;
			if (there++ < SHOW_BAD)
				mc_complain("%s: still present", b->keys[i]);
		}
	}
	printf("absent %" PRIu64 " objects: %" PRIu64 " present\n", fo.count, there);
	return there ? MC_EXIT_FAIL : MC_EXIT_OK;
}

/* ---- hotset: a put stream past a watermark, a hot set read throughout ---- */

struct hot_counts {
	uint64_t puts, put_failed, no_space, reads, missed, wrong, elsewhere;
};

/* Put key i, one call; false when the put failed (counted). */
static bool
hot_put(struct mc_client *c, uint64_t i, unsigned char *buf, struct hot_counts *hc)
{
	struct mc_put_opts po = MC_PUT_OPTS_INIT;
	struct mc_err err = { 0 };
	char key[KEY_CAP];
	size_t len;

	key_name(key, i);
	len = key_size(key);
	key_bytes(key, buf, len);
	po.replicas = (unsigned)fo.replicas;
	po.type = fo.type;
	hc->puts++;
	if (mc_put(c, key, strlen(key), buf, len, &po, &err) == 0)
		return true;
	hc->put_failed++;
	hc->no_space += err.code == MC_ERR_NO_SPACE;
	if (hc->put_failed <= SHOW_BAD)
		mc_complain("cannot put '%s': %s", key, err.msg);
	return false;
}

static void
hot_one(void *arg, const char *key, int status, const char *wrong)
{
	struct hot_counts *hc = arg;

	hc->reads++;
	if (status != MC_OK) {
		if (hc->missed++ < SHOW_BAD)
			mc_complain("hot key %s: %s", key, mc_status_name(status));
	} else if (wrong != NULL) {
		hc->wrong++;
		mc_complain("hot key %s: %s", key, wrong);
	}
}

/* Hot keys with a copy anywhere but --hot-tier. */
static void
hot_where(struct mc_client *c, struct hot_counts *hc)
{
	char key[KEY_CAP];

	for (uint64_t i = 0; i < fo.hot; i++) {
		struct mc_err err = { 0 };
		struct mc_object_info *info;
		bool there = false;

		key_name(key, fo.start + i);
		if ((info = mc_stat(c, key, strlen(key), &err)) != NULL) {
			for (size_t r = 0; r < info->nreplicas; r++)
				there |= strcmp(info->replicas[r].tier, fo.tier) == 0;
			mc_object_info_free(info);
		}
		if (!there && hc->elsewhere++ < SHOW_BAD)
			mc_complain("hot key %s: no copy in %s", key, fo.tier);
	}
}

static int
run_hotset(struct mc_client *c, struct batch *b)
{
	unsigned char *buf = malloc(fo.max_size + 1);
	struct hot_counts hc = { 0 };
	int rc;

	if (!buf)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	if (fo.hot > fo.count || fo.every == 0)
		mc_die(MC_EXIT_USAGE, "hotset needs --hot <= --count and --every > 0");
	for (uint64_t i = 0; i < fo.count; i++) {
		hot_put(c, fo.start + i, buf, &hc);
		if (i >= fo.hot && (i - fo.hot + 1) % fo.every == 0)
			read_keys(c, b, fo.start, fo.hot, hot_one, &hc);
	}
	read_keys(c, b, fo.start, fo.hot, hot_one, &hc);
	hot_where(c, &hc);
	printf("hotset: %" PRIu64 " puts, %" PRIu64 " failed (%" PRIu64 " no_space); %" PRIu64
	       " hot reads, %" PRIu64 " missed, %" PRIu64 " wrong; %" PRIu64
	       " hot keys outside %s\n",
	       hc.puts, hc.put_failed, hc.no_space, hc.reads, hc.missed, hc.wrong, hc.elsewhere,
	       fo.tier);
	fflush(stdout);
	free(buf);
	rc = run_check(c, b, true);
	if (hc.put_failed || hc.missed || hc.wrong || hc.elsewhere)
		return MC_EXIT_FAIL;
	return rc;
}

/* ---- softpin: rewrite a snapshot ---- */

static bool
key_matches(const msgpack_object *rec)
{
	size_t plen = strlen(fo.prefix);

	for (uint32_t i = 0; i < rec->via.map.size; i++) {
		const msgpack_object *k = &rec->via.map.ptr[i].key;
		const msgpack_object *v = &rec->via.map.ptr[i].val;
		const char *p;
		size_t n;

		if (k->type != MSGPACK_OBJECT_STR || k->via.str.size != 3 ||
		    memcmp(k->via.str.ptr, "key", 3) != 0)
			continue;
		if (v->type == MSGPACK_OBJECT_STR) {
			p = v->via.str.ptr;
			n = v->via.str.size;
		} else if (v->type == MSGPACK_OBJECT_BIN) {
			p = v->via.bin.ptr;
			n = v->via.bin.size;
		} else {
			return false;
		}
		return n >= plen && memcmp(p, fo.prefix, plen) == 0;
	}
	return false;
}

static bool
field_is(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);

	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
	       memcmp(k->via.str.ptr, name, n) == 0;
}

static bool
is_object(const msgpack_object *rec)
{
	for (uint32_t i = 0; i < rec->via.map.size; i++) {
		const msgpack_object *v = &rec->via.map.ptr[i].val;

		if (field_is(&rec->via.map.ptr[i].key, "t"))
			return v->type == MSGPACK_OBJECT_STR && v->via.str.size == 6 &&
			       memcmp(v->via.str.ptr, "object", 6) == 0;
	}
	return false;
}

static bool
is_sp_field(const msgpack_object *k)
{
	return field_is(k, "sp_mode") || field_is(k, "sp_deadline") || field_is(k, "sp_ttl");
}

/* The record with its soft-pin fields replaced by an active pin. */
static void
pack_pinned(msgpack_packer *pk, const msgpack_object *rec)
{
	uint32_t keep = 0;

	for (uint32_t i = 0; i < rec->via.map.size; i++)
		keep += !is_sp_field(&rec->via.map.ptr[i].key);
	msgpack_pack_map(pk, keep + 3);
	for (uint32_t i = 0; i < rec->via.map.size; i++) {
		if (is_sp_field(&rec->via.map.ptr[i].key))
			continue;
		msgpack_pack_object(pk, rec->via.map.ptr[i].key);
		msgpack_pack_object(pk, rec->via.map.ptr[i].val);
	}
	msgpack_pack_str_with_body(pk, "sp_mode", 7);
	msgpack_pack_str_with_body(pk, "active", 6);
	msgpack_pack_str_with_body(pk, "sp_deadline", 11);
	msgpack_pack_uint64(pk, fo.deadline);
	msgpack_pack_str_with_body(pk, "sp_ttl", 6);
	msgpack_pack_uint64(pk, fo.ttl);
}

static int
run_softpin(const char *in, const char *out)
{
	struct mc_snap_reader *r = NULL;
	struct mc_snap_writer *w = NULL;
	struct mc_snap_header h;
	struct mc_err err = { 0 };
	const msgpack_object *rec;
	uint64_t pinned = 0;
	int ifd, ofd, rc;

	ifd = open(in, O_RDONLY | O_CLOEXEC);
	if (ifd < 0)
		mc_die(MC_EXIT_FAIL, "cannot open '%s': %s", in, mc_strerror(errno));
	ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (ofd < 0)
		mc_die(MC_EXIT_FAIL, "cannot create '%s': %s", out, mc_strerror(errno));
	r = mc_snap_reader_open(ifd, &h, &err);
	if (r == NULL)
		mc_die(MC_EXIT_DATAERR, "%s: %s", in, err.msg);
	w = mc_snap_writer_open(ofd, &h, 0, &err);
	if (w == NULL)
		mc_die(MC_EXIT_FAIL, "%s: %s", out, err.msg);
	while ((rc = mc_snap_reader_next(r, &rec, &err)) == 1) {
		msgpack_packer *pk = mc_snap_writer_record(w);

		if (rec->type == MSGPACK_OBJECT_MAP && is_object(rec) && key_matches(rec)) {
			pack_pinned(pk, rec);
			pinned++;
		} else {
			msgpack_pack_object(pk, *rec);
		}
		if (mc_snap_writer_end_record(w, &err) < 0)
			mc_die(MC_EXIT_FAIL, "%s: %s", out, err.msg);
	}
	if (rc < 0)
		mc_die(MC_EXIT_DATAERR, "%s: %s", in, err.msg);
	if (mc_snap_writer_finish(w, &err) < 0)
		mc_die(MC_EXIT_FAIL, "%s: %s", out, err.msg);
	mc_snap_reader_close(r);
	if (close(ofd) < 0)
		mc_die(MC_EXIT_FAIL, "cannot write '%s': %s", out, mc_strerror(errno));
	close(ifd);
	printf("soft-pinned %" PRIu64 " objects\n", pinned);
	return MC_EXIT_OK;
}

int
main(int argc, char **argv)
{
	struct mc_client_opts co = MC_CLIENT_OPTS_INIT;
	struct mc_err err = { 0 };
	struct mc_client *c;
	struct batch b;
	const char *cmd;
	int i, rc;

	mc_log_init("mc-fill", 0);
	i = mc_opt_parse(&spec, argc, argv);
	if (i >= argc)
		mc_die(MC_EXIT_USAGE, "missing command; try 'mc-fill --help'");
	cmd = argv[i++];
	if (i < argc) {
		/* options may follow the command too (getopt permutes them) */
		struct mc_opt_spec sub = spec;

		sub.cmds = NULL;
		argv[i - 1] = (char *)"mc-fill";
		i = (i - 1) + mc_opt_parse(&sub, argc - (i - 1), argv + (i - 1));
	}
	if (fo.max_size < fo.min_size)
		mc_die(MC_EXIT_USAGE, "invalid --max-size: below --min-size");
	if (fo.batch == 0 || fo.batch > 65536)
		mc_die(MC_EXIT_USAGE, "invalid --batch '%" PRIu64 "': must be 1..65536", fo.batch);
	if (strlen(fo.prefix) + KEY_DIGITS > MC_KEY_MAX)
		mc_die(MC_EXIT_USAGE, "invalid --prefix: keys would be over %d bytes", MC_KEY_MAX);
	if (strcmp(cmd, "softpin") == 0) {
		if (argc - i != 2)
			mc_die(MC_EXIT_USAGE, "softpin needs IN and OUT");
		return run_softpin(argv[i], argv[i + 1]);
	}
	if (strcmp(cmd, "put") != 0 && strcmp(cmd, "check") != 0 && strcmp(cmd, "absent") != 0 &&
	    strcmp(cmd, "verify") != 0 && strcmp(cmd, "hotset") != 0)
		mc_die(MC_EXIT_USAGE, "unknown command '%s'; try 'mc-fill --help'", cmd);
	co.master = fo.master;
	co.tenant = fo.tenant;
	c = mc_client_new(&co, &err);
	if (c == NULL)
		mc_die(mc_status_exit_code(err.code), "%s", err.msg);
	if (batch_init(&b, (size_t)fo.batch) < 0)
		mc_die(MC_EXIT_SOFTWARE, "out of memory");
	if (strcmp(cmd, "put") == 0)
		rc = run_put(c, &b);
	else if (strcmp(cmd, "check") == 0 || strcmp(cmd, "verify") == 0)
		rc = run_check(c, &b, strcmp(cmd, "verify") == 0);
	else if (strcmp(cmd, "hotset") == 0)
		rc = run_hotset(c, &b);
	else
		rc = run_absent(c, &b);
	batch_free(&b);
	mc_client_free(c);
	return rc;
}
