/*
 * The master's part in this peer's own eviction: with --eviction-mode
 * master_ranked the local worker asks the master which of this peer's
 * keys to free first (evict_candidates), and a master that could not
 * place a put on a tier this peer evicts itself asks it for room.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/log.h"
#include "mc/proto.h"
#include "mc/wire.h"

#include "control.h"
#include "reclaim.h"

static void h_room(struct mc_req *req);

/* What the master may ask of this peer's eviction on the control connection. */
const struct mc_method peer_ranked_methods[] = {
	{ "room", h_room, MC_METHOD_PEER },
	{ NULL, NULL, 0 },
};

static void
on_rank(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *cerr, void *arg)
{
	struct rank_query *q = arg;
	struct control *ctl = q->ctl;
	struct reclaim_ranked *keys = NULL;
	const msgpack_object_array *a;
	struct mc_err err;
	size_t n = 0;

	(void)cerr;
	if (c != ctl->conn || !resp) {
		reclaimer_answer(ctl->p->reclaim, q->tier, NULL, 0);
		return;
	}
	if (mc_msg_error(resp, &err) < 0) {
		/* an older master: it knows no such method */
		if (err.code == MC_ERR_INVALID && strstr(err.msg, "unknown method"))
			reclaimer_no_ranking(ctl->p->reclaim);
		else
			reclaimer_answer(ctl->p->reclaim, q->tier, NULL, 0);
		return;
	}
	a = mc_map_array(resp->body, "keys");
	if (a && a->size > 0 && (keys = calloc(a->size, sizeof(*keys))) != NULL) {
		for (uint32_t i = 0; i < a->size; i++) {
			const msgpack_object *it = &a->ptr[i];
			struct reclaim_ranked *k = &keys[n];

			k->tenant = MC_DEFAULT_TENANT;
			k->tenant_len = strlen(MC_DEFAULT_TENANT);
			if (mc_map_str(it, "tenant", &k->tenant, &k->tenant_len, &err) < 0 ||
			    mc_map_str(it, "key", &k->key, &k->key_len, &err) != 1 ||
			    mc_map_u64(it, "version", &k->version, &err) != 1 ||
			    mc_map_u64(it, "bytes", &k->bytes, &err) < 0)
				continue;
			n++;
		}
	}
	reclaimer_answer(ctl->p->reclaim, q->tier, keys, n);
	free(keys);
}

/* reclaim_ask_fn: evict_candidates {peer_id, tier, bytes, max}, answered in on_rank. */
static int
ask_rank(void *arg, int tier, uint64_t bytes, unsigned max)
{
	struct control *ctl = arg;
	msgpack_packer *pk;

	if (ctl->state != CTL_REGISTERED || !ctl->master_ranks)
		return -1;
	pk = mc_conn_begin(ctl->conn, "evict_candidates");
	msgpack_pack_map(pk, 4);
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
	mc_pack_kv_str(pk, "tier", mc_tier_name(tier));
	mc_pack_kv_u64(pk, "bytes", bytes);
	mc_pack_kv_u64(pk, "max", max);
	ctl->rank_q[tier] = (struct rank_query){ ctl, tier };
	return mc_conn_call(ctl->conn, RECLAIM_ANSWER_TTL_MS, on_rank, &ctl->rank_q[tier]) < 0 ? -1
											       : 0;
}

/*
 * A registration's answer says whether the master ranks (rank: true);
 * master_ranked against one that does not evicts by local order. Every
 * registration says it anew: the master may have been replaced by an
 * older one, or a newer.
 */
void
ranked_start(struct control *ctl, const msgpack_object *answer)
{
	struct reclaimer *r = ctl->p->reclaim;
	struct mc_err err;
	bool ranks = false;

	if (reclaimer_mode(r) != EVICT_MASTER_RANKED)
		return;
	if (mc_map_bool(answer, "rank", &ranks, &err) < 0)
		ranks = false;
	ctl->master_ranks = ranks;
	if (ranks)
		reclaimer_on_ask(r, ask_rank, ctl);
	else
		reclaimer_no_ranking(r);
}

/*
 * The master could not place a put on a tier this peer evicts itself:
 * room {tier, bytes, used} wakes the local eviction worker for its room.
 */
static void
h_room(struct mc_req *req)
{
	struct peer *p = req->ctx;
	const char *tier;
	size_t tlen;
	uint64_t bytes = 0, used = 0;
	struct mc_err err;
	int t;

	if (mc_map_str(req->params, "tier", &tier, &tlen, &err) != 1 ||
	    mc_map_u64(req->params, "bytes", &bytes, &err) < 0 ||
	    mc_map_u64(req->params, "used", &used, &err) < 0 ||
	    (t = mc_tier_parse(tier, tlen, &err)) < 0) {
		mc_warn("malformed room request from master %s", p->ctl->master.text);
		if (!req->notify)
			mc_reply_err(req, MC_ERR_INVALID, "room needs tier and bytes");
		return;
	}
	reclaimer_room(p->reclaim, t, bytes, used);
	if (!req->notify)
		mc_reply_ok_empty(req);
}
