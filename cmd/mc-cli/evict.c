/*
 * The eviction commands. candidates: the first stage of the pipeline
 *   mc-cli candidates | mc-evict-plan -p POLICY | mc-cli evict --plan -
 * writes the master's candidate view to stdout as it came (the msgpack
 * stream of man/mc-candidates.5), or as JSON lines with --json.
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
#include "mc/rpcc.h"

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
	{ "tier", 0, "STR", NULL, "only copies in this tier: dram, ssd", mc_set_str, &cand_o.tier },
	{ "tenant", 0, "STR", NULL, "only this tenant's copies (default: every tenant)", mc_set_str,
	  &cand_o.tenant },
	{ 0 },
};

struct cand_req {
	bool has_peer;
	uint64_t peer;
	const char *tier;
	const char *tenant;
};

static void
pack_cand_req(msgpack_packer *pk, void *arg)
{
	const struct cand_req *q = arg;

	msgpack_pack_map(pk, q->has_peer + (q->tier != NULL) + (q->tenant != NULL));
	if (q->has_peer)
		mc_pack_kv_u64(pk, "peer_id", q->peer);
	if (q->tier != NULL)
		mc_pack_kv_str(pk, "tier", q->tier);
	if (q->tenant != NULL)
		mc_pack_kv_str(pk, "tenant", q->tenant);
}

static void
call_fail(const struct mc_err *err)
{
	int code = mc_status_exit_code(err->code);

	mc_die(code != MC_EXIT_OK ? code : MC_EXIT_SOFTWARE, "cannot list candidates: %s",
	       err->msg);
}

/*
 * The id of the peer --peer names: a number is taken as it is; anything
 * else is an address, looked up among the peers the master lists (the
 * view names peers by address, so that is what people copy from it).
 */
static uint64_t
peer_id_of(struct mc_rpcc *r, const char *peer)
{
	const msgpack_object_array *peers;
	struct mc_err err = { 0 };
	struct mc_msg m;
	uint64_t id = 0;
	bool found = false;

	if (mc_parse_u64(peer, &id, &err) == 0)
		return id;
	if (mc_rpcc_call(r, "peers", NULL, NULL, &m, &err) < 0)
		call_fail(&err);
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
		mc_die(MC_EXIT_FAIL, "cannot list candidates: no peer '%s'", peer);
	return id;
}

/* Pass the bulk through to stdout as it arrives. */
static void
copy_out(struct mc_rpcc *r, uint64_t len)
{
	struct mc_err err = { 0 };
	char *buf = malloc(CHUNK);

	if (buf == NULL)
		mc_die(MC_EXIT_SOFTWARE, "cannot list candidates: out of memory");
	while (len > 0) {
		size_t k = len < CHUNK ? (size_t)len : CHUNK;

		if (mc_rpcc_read_bulk(r, buf, k, &err) < 0)
			call_fail(&err);
		if (fwrite(buf, 1, k, stdout) != k)
			mc_die(MC_EXIT_FAIL, "cannot write candidates: %s", cli_strerror(errno));
		len -= k;
	}
	free(buf);
	if (fflush(stdout) != 0)
		mc_die(MC_EXIT_FAIL, "cannot write candidates: %s", cli_strerror(errno));
}

/*
 * Read the bulk into memory, then decode it and write JSON lines. The
 * buffer grows with the bytes that actually arrived, never to the length
 * the reply merely declared.
 */
static void
convert_out(struct mc_rpcc *r, uint64_t len)
{
	struct mc_err err = { 0 };
	struct mc_cand_view v;
	char *buf = NULL, *nb;
	size_t have = 0, cap = 0;
	FILE *in;

	while (have < len) {
		size_t k = len - have < CHUNK ? (size_t)(len - have) : CHUNK;

		if (cap - have < k) {
			cap = cap == 0 ? CHUNK : cap * 2;
			nb = realloc(buf, cap);
			if (nb == NULL)
				mc_die(MC_EXIT_SOFTWARE, "cannot list candidates: out of memory");
			buf = nb;
		}
		if (mc_rpcc_read_bulk(r, buf + have, k, &err) < 0)
			call_fail(&err);
		have += k;
	}
	if (have == 0)
		mc_die(MC_EXIT_DATAERR, "bad candidate view from %s: empty reply", mc_rpcc_addr(r));
	in = fmemopen(buf, have, "r");
	if (in == NULL)
		mc_die(MC_EXIT_SOFTWARE, "cannot read candidates: %s", cli_strerror(errno));
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
	struct mc_rpcc *r = mc_client_master(cli_client());
	struct cand_req q = { 0 };
	struct mc_err err = { 0 };
	struct mc_msg m;
	uint64_t len;

	(void)argc;
	(void)argv;
	if (!cli.json && isatty(STDOUT_FILENO))
		mc_die(MC_EXIT_USAGE, "refusing to write a candidate view to a terminal; use "
				      "--json or a pipe");
	if (r == NULL)
		mc_die(MC_EXIT_UNAVAILABLE, "cannot reach the master");
	if (cand_o.peer != NULL) {
		q.has_peer = true;
		q.peer = peer_id_of(r, cand_o.peer);
	}
	q.tier = cand_o.tier;
	q.tenant = cand_o.tenant;
	if (mc_rpcc_call(r, "candidates", pack_cand_req, &q, &m, &err) < 0)
		call_fail(&err);
	if (!m.has_bulk)
		mc_die(MC_EXIT_DATAERR, "bad candidate view from %s: no stream in the reply",
		       mc_rpcc_addr(r));
	len = m.bulk_len;
	mc_msg_release(&m);
	if (cli.json)
		convert_out(r, len);
	else
		copy_out(r, len);
	return MC_EXIT_OK;
}
