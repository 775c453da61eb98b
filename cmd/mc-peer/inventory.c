/*
 * What copies this peer holds, told to the master: the inventory report
 * after every registration, the notices of copies written, moved and
 * dropped, and the commit notice the master sends back, kept with the
 * copy so that a later report can tell a master that lost it.
 *
 * After every registration the peer reports its inventory, so that a
 * master that restarted (from a snapshot, or from nothing) learns which
 * copies exist. The report is a walk over the index sent one chunk at a
 * time, the next only once the master answered the previous: a peer
 * holding millions of objects never queues them all on the link, and
 * the index lock is held for one slice at a time, never while sending.
 * A registration, a lost link or shutdown abandons a report in progress;
 * a new one starts after the next registration.
 *
 * A resumed peer reports only what changed in its index since the
 * change number the master last acknowledged (link.c keeps it): the
 * removals from the index's journal, then the entries linked since, as
 * a delta. When the journal forgot a removal in that range, the whole
 * inventory goes instead, and the master drops what it does not confirm.
 */
#include <stdlib.h>
#include <string.h>

#include "mc/clock.h"
#include "mc/log.h"
#include "mc/proto.h"
#include "mc/wire.h"

#include "control.h"
#include "diskq.h"
#include "mover.h"
#include "reclaim.h"

#define INVENTORY_TIMEOUT_MS 30000
/*
 * Key bytes in one inventory chunk at most: with keys of up to 4 KiB, a
 * full chunk of MC_INVENTORY_CHUNK items could near 5 MiB of msgpack,
 * which is more than one message should make the master buffer.
 */
#define INVENTORY_NAME_BYTES (1u << 20)

static void h_committed(struct mc_req *req);

/* What the master may send about copies on the control connection. */
const struct mc_method peer_inventory_methods[] = {
	{ "committed", h_committed, MC_METHOD_PEER },
	{ NULL, NULL, 0 },
};

/*
 * An answer must reach the report it belongs to: a report abandoned on a
 * link that stays open (re-registration) still has its call in flight.
 */
struct inv_ticket {
	struct control *ctl;
	uint64_t gen;
};

static void inventory_send(struct control *ctl);

void
inventory_abort(struct control *ctl)
{
	ctl->inv_gen++;
	if (!ctl->inv_walk)
		return;
	pindex_walk_end(ctl->inv_walk);
	ctl->inv_walk = NULL;
}

/*
 * Report the changes since the last acknowledged number when delta, else
 * everything; either way what the master has heard of once it answered
 * the last chunk is everything up to the number the report began at.
 */
void
inventory_start(struct control *ctl, bool delta)
{
	struct pindex *ix = &ctl->p->index;
	struct mc_err err;

	inventory_abort(ctl);
	ctl->inv_base = pindex_seq(ix);
	ctl->inv_delta = delta;
	ctl->inv_since = ctl->inv_gone_at = ctl->acked;
	ctl->inv_gone_over = false;
	ctl->inv_walk =
		delta ? pindex_walk_since(ix, ctl->inv_since, &err) : pindex_walk_begin(ix, &err);
	if (!ctl->inv_walk) {
		mc_warn("cannot report the inventory to master %s: %s", ctl->master.text, err.msg);
		return;
	}
	ctl->inv_sent = ctl->inv_kept = ctl->inv_adopted = ctl->inv_dropped = 0;
	ctl->inv_removed = ctl->inv_gone_sent = 0;
	inventory_send(ctl);
}

static void
pack_inventory(msgpack_packer *pk, const struct control *ctl)
{
	size_t i;

	msgpack_pack_map(pk, ctl->inv_delta ? 5 : 3);
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
	if (ctl->inv_delta) {
		mc_pack_kv_bool(pk, "delta", true);
		mc_pack_key(pk, "removed");
		msgpack_pack_array(pk, (uint32_t)ctl->inv_ngone);
		for (i = 0; i < ctl->inv_ngone; i++) {
			const struct pindex_gone *g = &ctl->inv_gone[i];

			msgpack_pack_map(pk, 3);
			mc_pack_kv_strn(pk, "tenant", g->name, g->tenant_len);
			mc_pack_kv_strn(pk, "key", g->name + g->tenant_len, g->key_len);
			mc_pack_kv_u64(pk, "version", g->version);
		}
	}
	mc_pack_key(pk, "items");
	msgpack_pack_array(pk, (uint32_t)ctl->inv_n);
	for (i = 0; i < ctl->inv_n; i++) {
		const struct pobj *o = ctl->inv_items[i];
		const struct pmeta *pm = o->meta;

		msgpack_pack_map(
			pk, 6 + (pm ? 3 + (pm->group_len > 0) + pm->has_receipt + pm->dynamic : 0));
		mc_pack_kv_strn(pk, "tenant", o->name, o->tenant_len);
		mc_pack_kv_strn(pk, "key", pobj_key(o), o->key_len);
		mc_pack_kv_str(pk, "tier", mc_tier_name(o->tier));
		mc_pack_kv_u64(pk, "size", o->size);
		mc_pack_kv_u64(pk, "version", o->version);
		mc_pack_kv_u64(pk, "checksum", o->checksum);
		if (!pm)
			continue;
		mc_pack_kv_strn(pk, "type", pm->names, pm->type_len);
		if (pm->group_len > 0)
			mc_pack_kv_strn(pk, "group", pm->names + pm->type_len, pm->group_len);
		mc_pack_kv_bool(pk, "hard_pin", pm->hard_pin);
		mc_pack_kv_u64(pk, "sp_deadline", pm->sp_deadline);
		if (pm->has_receipt) {
			mc_pack_key(pk, "receipt");
			msgpack_pack_bin(pk, MC_RECEIPT_BYTES);
			msgpack_pack_bin_body(pk, pm->receipt, MC_RECEIPT_BYTES);
		}
		/* a master that lost it knows it for a dynamic replica again */
		if (pm->dynamic)
			mc_pack_kv_bool(pk, "dynamic", true);
	}
	mc_pack_kv_bool(pk, "done", ctl->inv_last);
}

/* The master has heard of every change up to the report's start. */
static void
inventory_synced(struct control *ctl)
{
	ctl->synced = true;
	ctl->acked = ctl->inv_base;
	ctl->have_ack = true;
	pindex_journal_trim(&ctl->p->index, ctl->acked);
}

static void
inventory_refused(struct control *ctl, const struct mc_err *err)
{
	/*
	 * A master that does not reconcile (an older one answers "unknown
	 * method") is not asked again until the next registration, and
	 * said so once: it serves the objects it knows either way.
	 */
	if (!ctl->inv_refusal_logged)
		mc_info("master %s did not take the inventory (%s); not reporting it",
			ctl->master.text, err->msg);
	else
		mc_debug("master %s did not take the inventory (%s)", ctl->master.text, err->msg);
	ctl->inv_refusal_logged = true;
	inventory_abort(ctl);
	/* Nothing more will be told: heartbeats may acknowledge again. */
	inventory_synced(ctl);
}

static void
on_inventory(struct mc_conn *c, const struct mc_msg *resp, const struct mc_err *cerr, void *arg)
{
	struct inv_ticket *t = arg;
	struct control *ctl = t->ctl;
	uint64_t gen = t->gen, kept = 0, adopted = 0, dropped = 0, removed = 0;
	struct mc_err err;

	free(t);
	if (c != ctl->conn || gen != ctl->inv_gen || !ctl->inv_walk)
		return;
	if (!resp) {
		/* A closing link is handled by on_close; a silent master is dropped. */
		if (mc_conn_is_open(c))
			control_drop_link(ctl, cerr ? cerr->msg : "no answer to peer_inventory");
		return;
	}
	if (mc_msg_error(resp, &err) < 0) {
		inventory_refused(ctl, &err);
		return;
	}
	/* Counts are informative: a malformed one is taken as 0, not fatal. */
	if (mc_map_u64(resp->body, "kept", &kept, &err) < 0)
		kept = 0;
	if (mc_map_u64(resp->body, "adopted", &adopted, &err) < 0)
		adopted = 0;
	if (mc_map_u64(resp->body, "dropped", &dropped, &err) < 0)
		dropped = 0;
	if (mc_map_u64(resp->body, "removed", &removed, &err) < 0)
		removed = 0;
	ctl->inv_kept += kept;
	ctl->inv_adopted += adopted;
	ctl->inv_dropped += dropped;
	ctl->inv_removed += removed;
	if (!ctl->inv_last) {
		inventory_send(ctl);
		return;
	}
	if (ctl->inv_delta) {
		mc_info("reported changes to the master: %llu removed (%llu replicas forgotten), "
			"%llu linked (kept %llu, adopted %llu, dropped %llu)",
			(unsigned long long)ctl->inv_gone_sent,
			(unsigned long long)ctl->inv_removed, (unsigned long long)ctl->inv_sent,
			(unsigned long long)ctl->inv_kept, (unsigned long long)ctl->inv_adopted,
			(unsigned long long)ctl->inv_dropped);
	} else {
		ctl->p->st.inventory_reports++;
		mc_info("reported %llu objects to the master (kept %llu, adopted %llu, dropped "
			"%llu)",
			(unsigned long long)ctl->inv_sent, (unsigned long long)ctl->inv_kept,
			(unsigned long long)ctl->inv_adopted, (unsigned long long)ctl->inv_dropped);
	}
	inventory_abort(ctl);
	inventory_synced(ctl);
}

/*
 * The removals of a delta's next chunk, read from the journal. False
 * when the journal forgot some of them: the delta cannot be complete.
 */
static bool
take_removals(struct control *ctl)
{
	bool lost;

	ctl->inv_ngone = 0;
	if (ctl->inv_gone_over)
		return true;
	ctl->inv_ngone =
		pindex_gone_next(&ctl->p->index, &ctl->inv_gone_at, ctl->inv_base, ctl->inv_gone,
				 MC_INVENTORY_CHUNK, ctl->inv_names, INVENTORY_NAME_BYTES, &lost);
	if (lost)
		return false;
	ctl->inv_gone_over = ctl->inv_ngone == 0;
	return true;
}

/*
 * Take the next slice and send it as one peer_inventory call: in a delta
 * the removals go first, in chunks of their own, then the entries.
 */
static void
inventory_send(struct control *ctl)
{
	struct inv_ticket *t;
	int r;

	if (ctl->inv_delta && !take_removals(ctl)) {
		mc_info("the journal of removals does not reach back to change %llu; "
			"reporting the whole inventory",
			(unsigned long long)ctl->inv_since);
		inventory_start(ctl, false);
		return;
	}
	ctl->inv_n = 0;
	if (ctl->inv_ngone == 0)
		ctl->inv_n = pindex_walk_next(ctl->inv_walk, ctl->inv_items, MC_INVENTORY_CHUNK,
					      INVENTORY_NAME_BYTES);
	ctl->inv_last = (!ctl->inv_delta || ctl->inv_gone_over) && pindex_walk_over(ctl->inv_walk);
	t = malloc(sizeof(*t));
	if (!t) {
		pindex_release_many(&ctl->p->index, ctl->inv_items, ctl->inv_n);
		ctl->inv_n = 0;
		mc_warn("cannot report the inventory to master %s: out of memory",
			ctl->master.text);
		inventory_abort(ctl);
		return;
	}
	t->ctl = ctl;
	t->gen = ctl->inv_gen;
	pack_inventory(mc_conn_begin(ctl->conn, "peer_inventory"), ctl);
	r = mc_conn_call(ctl->conn, INVENTORY_TIMEOUT_MS, on_inventory, t);
	/* The call holds packed bytes now; the entries may go. */
	pindex_release_many(&ctl->p->index, ctl->inv_items, ctl->inv_n);
	if (r < 0) {
		free(t);
		ctl->inv_n = ctl->inv_ngone = 0;
		control_drop_link(ctl, "cannot send peer_inventory");
		return;
	}
	ctl->inv_sent += ctl->inv_n;
	ctl->inv_gone_sent += ctl->inv_ngone;
	ctl->inv_n = ctl->inv_ngone = 0;
}

/* A copy's header was written again on the disk queue (err NULL), or not. */
static void
resealed(void *arg, const struct mc_err *err)
{
	struct pobj *o = arg;

	if (err != NULL)
		mc_warn("cannot keep a copy's metadata in its %s header: %s", mc_tier_name(o->tier),
			err->msg);
	pindex_release(o->ix, o);
}

/*
 * The commit notice: what the master knows of a copy once put_end made
 * it readable, kept with the copy (and in its extent header, on a tier
 * that survives a restart) so that the inventory can tell a master that
 * lost it. Its receipt, when it has one, is kept as it came: only the
 * master can check it. dynamic (false when absent) marks a dynamic
 * replica, which this peer's eviction drops instead of demoting. A
 * notice for a copy this peer no longer holds at that version is
 * ignored.
 */
static void
h_committed(struct mc_req *req)
{
	struct peer *p = req->ctx;
	const char *tenant = MC_DEFAULT_TENANT, *key, *type = "", *group = "", *receipt = NULL;
	size_t tlen = strlen(MC_DEFAULT_TENANT), klen, type_len = 0, group_len = 0, rlen = 0;
	uint64_t version = 0, remaining = 0, now;
	bool hard_pin = false, dynamic = false;
	struct medium_meta meta;
	struct pmeta *pm;
	struct mc_err err;
	struct pobj *o;

	if (mc_map_str(req->params, "tenant", &tenant, &tlen, &err) < 0 ||
	    mc_map_str(req->params, "key", &key, &klen, &err) != 1 ||
	    mc_map_u64(req->params, "version", &version, &err) != 1 ||
	    mc_map_str(req->params, "type", &type, &type_len, &err) < 0 ||
	    mc_map_str(req->params, "group", &group, &group_len, &err) < 0 ||
	    mc_map_bool(req->params, "hard_pin", &hard_pin, &err) < 0 ||
	    mc_map_bool(req->params, "dynamic", &dynamic, &err) < 0 ||
	    mc_map_u64(req->params, "sp_remaining", &remaining, &err) < 0 ||
	    mc_map_str(req->params, "receipt", &receipt, &rlen, &err) < 0 ||
	    type_len > MC_NAME_MAX || group_len > MC_NAME_MAX ||
	    (receipt != NULL && rlen != MC_RECEIPT_BYTES)) {
		mc_warn("malformed commit notice from master %s", p->ctl->master.text);
		return;
	}
	o = pindex_acquire(&p->index, tenant, tlen, key, klen);
	if (!o)
		return;
	if (o->version != version) {
		pindex_release(&p->index, o);
		return;
	}
	now = mc_now_ms();
	pm = pmeta_new(type, type_len, group, group_len, hard_pin,
		       remaining ? mc_add_sat(now, remaining) : 0);
	if (!pm) {
		pindex_release(&p->index, o);
		mc_warn("out of memory for a copy's metadata: a restart forgets its pins");
		return;
	}
	pmeta_set_receipt(pm, (const unsigned char *)receipt);
	pm->dynamic = dynamic;
	pindex_set_meta(&p->index, o, pm, now);
	p->st.commit_notices++;
	reclaimer_candidate(p->reclaim, o->tier);
	pobj_medium_meta(o, &meta);
	/* A header on disk is written again by a worker; o stays held until it is. */
	if (o->size > 0 && medium_blocks(p->media[o->tier]) && p->diskq != NULL) {
		diskq_reseal(p->diskq, p->media[o->tier], o->off, o->size, &meta, resealed, o);
		return;
	}
	if (o->size > 0 && medium_seal(p->media[o->tier], o->off, o->size, &meta, &err) < 0)
		mc_warn("cannot keep a copy's metadata in its %s header: %s", mc_tier_name(o->tier),
			err.msg);
	pindex_release(&p->index, o);
}

/*
 * A notification about one copy to the master, its peer_id, tenant and
 * key packed (the caller packs fields more): NULL when there is no link.
 */
static msgpack_packer *
copy_notice(struct control *ctl, const char *method, const struct pobj *o, uint32_t fields)
{
	msgpack_packer *pk;

	if (ctl->state != CTL_REGISTERED || ctl->conn == NULL)
		return NULL;
	pk = mc_conn_begin(ctl->conn, method);
	msgpack_pack_map(pk, 3 + fields);
	mc_pack_kv_u64(pk, "peer_id", ctl->peer_id);
	mc_pack_kv_strn(pk, "tenant", o->name, o->tenant_len);
	mc_pack_kv_strn(pk, "key", pobj_key(o), o->key_len);
	return pk;
}

static void
copy_notice_send(struct control *ctl, const char *method, const char *lost)
{
	if (mc_conn_notify(ctl->conn) < 0)
		mc_warn("cannot send %s to master %s: %s", method, ctl->master.text, lost);
}

/*
 * Tell the master that o's bytes are committed here (p->committed). Lost
 * with the link: the master then completes nothing it was not told of,
 * and the put fails or is tried again.
 */
static void
write_ack(void *arg, const struct pobj *o)
{
	struct control *ctl = arg;
	msgpack_packer *pk = copy_notice(ctl, "write_ack", o, 3);

	if (!pk)
		return;
	mc_pack_kv_str(pk, "tier", mc_tier_name(o->tier));
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "size", o->size);
	copy_notice_send(ctl, "write_ack", "its put_end will not complete it");
}

/*
 * A copy moved between tiers (the mover's hook), or was dropped for
 * capacity (the pool's): the master routes reads by where copies are.
 * Lost with the link, the next inventory tells it.
 */
static void
copy_moved(void *arg, const struct pobj *o, int from)
{
	struct control *ctl = arg;
	msgpack_packer *pk = copy_notice(ctl, "copy_moved", o, 4);

	if (!pk)
		return;
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_u64(pk, "size", o->size);
	mc_pack_kv_str(pk, "from", mc_tier_name(from));
	mc_pack_kv_str(pk, "to", mc_tier_name(o->tier));
	copy_notice_send(ctl, "copy_moved", "the next inventory tells it");
}

static void
copy_dropped(void *arg, const struct pobj *o, enum pool_drop_why why)
{
	struct control *ctl = arg;
	msgpack_packer *pk = copy_notice(ctl, "copy_dropped", o, 3);

	if (!pk)
		return;
	mc_pack_kv_u64(pk, "version", o->version);
	mc_pack_kv_str(pk, "tier", mc_tier_name(o->tier));
	mc_pack_kv_str(pk, "reason", pool_drop_why_name(why));
	copy_notice_send(ctl, "copy_dropped", "the next inventory tells it");
}

void
inventory_hooks(struct control *ctl, bool on)
{
	struct peer *p = ctl->p;

	p->committed = on ? write_ack : NULL;
	p->committed_arg = on ? ctl : NULL;
	p->pool.on_drop = on ? copy_dropped : NULL;
	p->pool.on_drop_arg = on ? ctl : NULL;
	if (p->mover)
		mover_on_moved(p->mover, on ? copy_moved : NULL, on ? ctl : NULL);
}

int
inventory_init(struct control *ctl, struct mc_err *err)
{
	ctl->inv_items = calloc(MC_INVENTORY_CHUNK, sizeof(*ctl->inv_items));
	ctl->inv_gone = calloc(MC_INVENTORY_CHUNK, sizeof(*ctl->inv_gone));
	ctl->inv_names = malloc(INVENTORY_NAME_BYTES);
	if (!ctl->inv_items || !ctl->inv_gone || !ctl->inv_names)
		return mc_err_errno(err, "cannot allocate the master link");
	return 0;
}

void
inventory_free(struct control *ctl)
{
	/* Before the index goes: the walk's markers sit on its list. */
	inventory_abort(ctl);
	free(ctl->inv_items);
	free(ctl->inv_gone);
	free(ctl->inv_names);
	ctl->inv_items = NULL;
	ctl->inv_gone = NULL;
	ctl->inv_names = NULL;
}
