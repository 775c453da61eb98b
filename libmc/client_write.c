/*
 * Writes of the client API (mc/client.h): put one key or a batch. A
 * chunk of keys is started on the master (pipelined), its replicas are
 * written in waves straight from the caller's buffers, then every
 * started put is ended: put_end for the replicas written, put_revoke for
 * the others.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_impl.h"
#include "mc/parse.h"
#include "mc/proto.h"
#include "mc/wire.h"

/* Pause before a put refused for want of room asks again (once). */
#define PUT_RETRY_NS (20 * 1000 * 1000)

struct put_key;

struct put_rep {
	struct rep r;
	struct put_key *owner;
	int state;
};

struct put_key {
	const char *key;
	size_t klen;
	struct mc_key parent; /* len 0: none */
	const void *buf;
	size_t len;
	uint64_t checksum, version;
	bool started;
	bool skip; /* not in this round of put_starts */
	int status;
	unsigned nrep;
	struct put_rep rep[MC_REPLICAS_MAX];
	struct mc_err err; /* first failure */
};

static void
pack_put_start(msgpack_packer *pk, const struct put_key *k, const struct mc_put_opts *o)
{
	bool ttl = o->soft_pin == MC_SOFT_PIN_ENABLE && o->has_soft_pin_ttl;
	bool pin = o->soft_pin == MC_SOFT_PIN_ENABLE || o->soft_pin == MC_SOFT_PIN_DISABLE;

	msgpack_pack_map(pk, 7 + (o->group != NULL) + (k->parent.len > 0) + pin + ttl +
				     (o->tier != NULL));
	mc_pack_kv_strn(pk, "key", k->key, k->klen);
	mc_pack_kv_u64(pk, "size", k->len);
	mc_pack_kv_u64(pk, "replicas", o->replicas ? o->replicas : 1);
	mc_pack_kv_str(pk, "type", o->type ? o->type : MC_DEFAULT_TYPE);
	if (o->group)
		mc_pack_kv_str(pk, "group", o->group);
	if (k->parent.len > 0)
		mc_pack_kv_strn(pk, "parent", k->parent.data, k->parent.len);
	mc_pack_kv_bool(pk, "hard_pin", o->hard_pin);
	mc_pack_kv_u64(pk, "checksum", k->checksum);
	mc_pack_kv_bool(pk, "upsert", o->upsert);
	/* Preserve is the master's default: an absent field says it. */
	if (pin)
		mc_pack_kv_str(pk, "soft_pin",
			       o->soft_pin == MC_SOFT_PIN_ENABLE ? "enable" : "disable");
	if (ttl)
		mc_pack_kv_u64(pk, "soft_pin_ttl_ms", o->soft_pin_ttl_ms);
	if (o->tier != NULL)
		mc_pack_kv_str(pk, "tier", o->tier);
}

static int
write_send(struct conns *t, struct mc_rpcc *r, void *item, struct mc_err *err)
{
	struct put_rep *pr = item;
	struct put_key *k = pr->owner;
	struct mc_dp_obj o =
		mc_cl_dp_obj(t, k->key, k->klen, k->version, k->len, k->checksum, &pr->r);

	/* the peer ranks its own copies by their chains too */
	o.parent = k->parent.data;
	o.plen = k->parent.len;
	struct mc_bulk_src src = mc_bulk_src_mem(k->buf, k->len);

	return mc_dp_write_send(r, &o, pr->r.tier, &src, err);
}

static void
write_fail(void *item, const char *addr, const struct mc_err *err)
{
	struct put_rep *pr = item;
	struct put_key *k = pr->owner;

	pr->state = ST_FAILED;
	if (k->err.code == 0)
		mc_cl_key_err(&k->err, err->code ? err->code : MC_ERR_INTERNAL, "write", k->key,
			      k->klen, "to", addr, err->msg);
}

static int
write_recv(struct conns *t, struct mc_rpcc *r, const char *addr, void *item, struct mc_err *err)
{
	struct put_rep *pr = item;
	struct mc_err refused;

	(void)t;
	if (mc_dp_write_recv(r, &refused, err) < 0)
		return -1;
	if (refused.code != MC_OK)
		write_fail(pr, addr, &refused);
	else
		pr->state = ST_DONE;
	return 0;
}

static const struct wave_ops write_ops = { write_send, write_recv, write_fail };

static void
put_refused(struct put_key *k, const struct mc_err *remote)
{
	mc_cl_key_err(&k->err, remote->code, "put", k->key, k->klen, NULL, NULL, remote->msg);
}

/* Take in a successful put_start answer for one key. */
static void
put_started(struct put_key *k, const struct mc_msg *m)
{
	struct rep reps[MC_REPLICAS_MAX];
	struct mc_err e = { 0 };
	unsigned i;

	if (mc_map_u64(m->body, "version", &k->version, &e) != 1 ||
	    mc_cl_parse_replicas(m->body, reps, &k->nrep, &e) < 0) {
		mc_err_set(&k->err, MC_ERR_PROTO, "cannot put '%.*s': malformed put_start answer",
			   MC_KSHOWN(k->klen), k->key);
		return;
	}
	/* started: from here on it must end with put_end or put_revoke */
	k->started = true;
	for (i = 0; i < k->nrep; i++) {
		k->rep[i].r = reps[i];
		k->rep[i].owner = k;
		k->rep[i].state = ST_PENDING;
	}
	if (k->nrep == 0)
		mc_err_set(&k->err, MC_ERR_PROTO, "cannot put '%.*s': no replica placed",
			   MC_KSHOWN(k->klen), k->key);
}

/* A key put_start refused for want of room, to be asked once more. */
static bool
retry_no_space(const struct put_key *k)
{
	return !k->started && k->err.code == MC_ERR_NO_SPACE;
}

/*
 * put_start for every key (only those retry_no_space picks when retry),
 * pipelined; -1 when the master failed.
 */
static int
put_start_all(struct conns *t, struct put_key *ks, size_t n, const struct mc_put_opts *o,
	      bool retry, struct mc_err *err)
{
	msgpack_packer *pk;
	struct mc_rpcc *r;
	struct mc_msg m;
	struct mc_err e;
	size_t i;

	for (i = 0; retry && i < n; i++)
		if (retry_no_space(&ks[i]))
			memset(&ks[i].err, 0, sizeof(ks[i].err));
		else
			ks[i].skip = true;
	if (n == 1 && !ks[0].skip) {
		/* a lone put may reconnect to a restarted master */
		if ((pk = mc_cl_master_begin(t, "put_start", err)) != NULL)
			pack_put_start(pk, &ks[0], o);
		if (!pk || mc_cl_master_call(t, &m, err) < 0) {
			if (!pk || mc_cl_is_transport(err->code)) {
				mc_cl_key_err(err, err->code, "put", ks[0].key, ks[0].klen, "at",
					      t->c->master_addr, err->msg);
				return -1;
			}
			put_refused(&ks[0], err);
			return 0;
		}
		put_started(&ks[0], &m);
		mc_msg_release(&m);
		return 0;
	}
	if (!(r = mc_cl_master_get(t, err)))
		return -1;
	for (i = 0; i < n; i++) {
		if (ks[i].skip)
			continue;
		pack_put_start(mc_rpcc_begin(r, "put_start"), &ks[i], o);
		if (mc_rpcc_send(r, NULL, 0, err) < 0)
			goto fail;
	}
	if (mc_rpcc_flush(r, err) < 0)
		goto fail;
	for (i = 0; i < n; i++) {
		if (ks[i].skip)
			continue;
		if (mc_rpcc_recv(r, &m, err) < 0)
			goto fail;
		if (mc_msg_error(&m, &e) < 0)
			put_refused(&ks[i], &e);
		else
			put_started(&ks[i], &m);
		mc_msg_release(&m);
	}
	for (i = 0; i < n; i++)
		ks[i].skip = false;
	return 0;
fail:
	/* keys started before the failure are discarded by the master's put timeout */
	mc_cl_master_drop(t);
	return -1;
}

/* Split a key's replicas into ok and failed ids. */
static void
put_split(const struct put_key *k, uint64_t *ok, size_t *nok, uint64_t *bad, size_t *nbad)
{
	unsigned i;

	*nok = *nbad = 0;
	for (i = 0; i < k->nrep; i++) {
		if (k->rep[i].state == ST_DONE)
			ok[(*nok)++] = k->rep[i].r.id;
		else
			bad[(*nbad)++] = k->rep[i].r.id;
	}
}

/* Queue put_end or put_revoke of a key's version for ids (n 0: all of them). */
static int
send_put_close(struct mc_rpcc *r, const char *method, const struct put_key *k, const uint64_t *ids,
	       size_t n, struct mc_err *err)
{
	msgpack_packer *pk = mc_rpcc_begin(r, method);
	size_t i;

	msgpack_pack_map(pk, 2 + (n > 0));
	mc_pack_kv_strn(pk, "key", k->key, k->klen);
	mc_pack_kv_u64(pk, "version", k->version);
	if (n > 0) {
		mc_pack_key(pk, "replica_ids");
		msgpack_pack_array(pk, n);
		for (i = 0; i < n; i++)
			msgpack_pack_uint64(pk, ids[i]);
	}
	return mc_rpcc_send(r, NULL, 0, err) < 0 ? -1 : 0;
}

/*
 * End every started put: put_end for the written replicas, put_revoke for
 * the rest (all of them when nothing was written). Pipelined.
 */
static int
put_finish(struct conns *t, struct put_key *ks, size_t n, struct mc_err *err)
{
	uint64_t ok[MC_REPLICAS_MAX], bad[MC_REPLICAS_MAX];
	struct mc_rpcc *r = mc_cl_master_get(t, err);
	size_t i, nok, nbad;
	struct mc_err e;
	struct mc_msg m;

	if (!r)
		return -1;
	for (i = 0; i < n; i++) {
		struct put_key *k = &ks[i];

		if (!k->started)
			continue;
		put_split(k, ok, &nok, bad, &nbad);
		if (nok && send_put_close(r, "put_end", k, ok, nok, err) < 0)
			goto fail;
		/* no replica at all (nothing placed): revoke the whole put */
		if ((nbad || !nok) && send_put_close(r, "put_revoke", k, bad, nbad, err) < 0)
			goto fail;
	}
	if (mc_rpcc_flush(r, err) < 0)
		goto fail;
	for (i = 0; i < n; i++) {
		struct put_key *k = &ks[i];

		if (!k->started)
			continue;
		put_split(k, ok, &nok, bad, &nbad);
		if (nok) {
			if (mc_rpcc_recv(r, &m, err) < 0)
				goto fail;
			if (mc_msg_error(&m, &e) < 0)
				mc_cl_key_err(&k->err, e.code, "put", k->key, k->klen, NULL, NULL,
					      e.msg);
			else
				k->status = MC_OK;
			mc_msg_release(&m);
		}
		if (nbad || !nok) {
			/* a failed revoke only delays cleanup to the put timeout */
			if (mc_rpcc_recv(r, &m, err) < 0)
				goto fail;
			mc_msg_release(&m);
		}
		if (!nok && k->err.code == 0)
			mc_err_set(&k->err, MC_ERR_INTERNAL, "cannot put '%.*s'",
				   MC_KSHOWN(k->klen), k->key);
	}
	return 0;
fail:
	mc_cl_master_drop(t);
	return -1;
}

/* One chunk of puts; -1 only when the master failed. */
static int
put_chunk(struct conns *t, struct put_key *ks, size_t n, const struct mc_put_opts *o,
	  struct mc_err *err)
{
	struct wave w;
	size_t i;
	unsigned j;

	for (i = 0; i < n; i++) {
		ks[i].checksum = mc_checksum(ks[i].len ? ks[i].buf : "", ks[i].len);
		ks[i].status = MC_ERR_INTERNAL;
	}
	if (put_start_all(t, ks, n, o, false, err) < 0)
		return -1;
	/*
	 * The master already waited (--put-wait) for eviction to make room;
	 * a key it still refused is asked once more after a short pause, in
	 * case the round that frees its room ended just after.
	 */
	for (i = 0; i < n && !retry_no_space(&ks[i]); i++)
		;
	if (i < n) {
		struct timespec pause = { 0, PUT_RETRY_NS };

		for (; i < n; i++)
			if (retry_no_space(&ks[i]))
				__atomic_add_fetch(&t->c->put_retries, 1, __ATOMIC_RELAXED);
		nanosleep(&pause, NULL);
		if (put_start_all(t, ks, n, o, true, err) < 0)
			return -1;
	}
	if (mc_cl_wave_init(&w, n * MC_REPLICAS_MAX, err) == 0) {
		for (;;) {
			mc_cl_wave_reset(&w);
			for (i = 0; i < n; i++) {
				struct put_key *k = &ks[i];

				for (j = 0; k->started && j < k->nrep; j++)
					if (k->rep[j].state == ST_PENDING)
						mc_cl_wave_add(&w, &k->rep[j], k->rep[j].r.addr,
							       k->len);
			}
			if (w.n == 0)
				break;
			mc_cl_wave_run(t, &write_ops, &w);
		}
		mc_cl_wave_free(&w);
	} else {
		/* nothing written: the replicas still pending get revoked below */
		for (i = 0; i < n; i++)
			if (ks[i].err.code == 0)
				ks[i].err = *err;
	}
	if (put_finish(t, ks, n, err) < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (ks[i].status != MC_OK)
			ks[i].status = ks[i].err.code ? ks[i].err.code : MC_ERR_INTERNAL;
	return 0;
}

static int
take_put_opts(struct mc_put_opts *o, const struct mc_put_opts *given, struct mc_err *err)
{
	return mc_cl_take_opts(o, sizeof(*o), given, "put options", "MC_PUT_OPTS_INIT", err);
}

int
mc_put(struct mc_client *c, const void *key, size_t key_len, const void *buf, size_t len,
       const struct mc_put_opts *opts, struct mc_err *err)
{
	struct mc_put_opts o;
	struct put_key *k;
	struct conns *t;
	int rc = -1;

	if (mc_cl_check_key(key, key_len, err) < 0 || take_put_opts(&o, opts, err) < 0)
		return -1;
	if (o.parent.len > 0 && mc_cl_check_key(o.parent.data, o.parent.len, err) < 0)
		return -1;
	if (!(t = mc_cl_conns_of(c, err)))
		return -1;
	if (!(k = calloc(1, sizeof(*k))))
		return mc_err_errno(err, "cannot allocate");
	k->key = key;
	k->klen = key_len;
	k->parent = o.parent;
	k->buf = buf;
	k->len = len;
	if (put_chunk(t, k, 1, &o, err) == 0) {
		if (k->status == MC_OK)
			rc = 0;
		else
			*err = k->err;
	}
	free(k);
	return rc;
}

/* A key a batch put can send: its own bytes and its parent's are valid. */
static bool
put_key_ok(const struct mc_key *keys, const struct mc_put_opts *o, size_t i)
{
	if (mc_cl_check_key(keys[i].data, keys[i].len, NULL) < 0)
		return false;
	return !o->parents || o->parents[i].len == 0 ||
	       mc_cl_check_key(o->parents[i].data, o->parents[i].len, NULL) == 0;
}

int
mc_batch_put(struct mc_client *c, size_t n, const struct mc_key *keys, const void *const *bufs,
	     const size_t *lens, const struct mc_put_opts *opts, int *results, struct mc_err *err)
{
	size_t slot[CHUNK_KEYS];
	struct mc_put_opts o;
	struct put_key *ks;
	struct conns *t;
	size_t i, j, done;
	bool any = false;

	for (i = 0; i < n; i++)
		results[i] = MC_ERR_INVALID;
	if (take_put_opts(&o, opts, err) < 0 || !(t = mc_cl_conns_of(c, err)))
		return -1;
	if (!(ks = calloc(CHUNK_KEYS, sizeof(*ks))))
		return mc_err_errno(err, "cannot allocate a batch");
	for (done = 0; done < n;) {
		/* gather up to a chunk of valid keys; a bad one keeps MC_ERR_INVALID */
		for (j = 0; done < n && j < CHUNK_KEYS; done++) {
			if (!put_key_ok(keys, &o, done))
				continue;
			memset(&ks[j], 0, sizeof(ks[j]));
			ks[j].key = keys[done].data;
			ks[j].klen = keys[done].len;
			if (o.parents)
				ks[j].parent = o.parents[done];
			ks[j].buf = bufs[done];
			ks[j].len = lens[done];
			slot[j++] = done;
		}
		if (j == 0)
			break;
		if (put_chunk(t, ks, j, &o, err) < 0) {
			for (i = 0; i < j; i++)
				results[slot[i]] = err->code;
			for (; done < n; done++)
				if (put_key_ok(keys, &o, done))
					results[done] = err->code;
			free(ks);
			return any ? 0 : -1;
		}
		for (i = 0; i < j; i++)
			results[slot[i]] = ks[i].status;
		any = true;
	}
	free(ks);
	return 0;
}
